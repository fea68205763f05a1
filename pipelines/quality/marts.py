"""The dbt marts as readers outside dbt see them, from the marts' one declaration.

``models/marts/_marts__models.yml`` declares every mart's columns with their ``data_type``; dbt
enforces them as model contracts at build time, and :data:`MARTS` reads the same declaration
into Arrow schemas (``run_id`` left out: it is the hive partition, not stored in the files).
The readers (:mod:`pipelines.warehouse.reading`) refuse a mart file whose columns or types differ from
the declaration: a drift between the model and its readers is an error, never nulls."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import yaml

from pipelines.errors import StepError
from pipelines.transform.project import project_dir
from pipelines.warehouse.tables import TS

DECLARATION = "models/marts/_marts__models.yml"
PARTITION_COLUMN = "run_id"
# Spark SQL data_types of the contract -> the Arrow types of the Parquet files Spark writes
# (kaudit's sessions write timestamps as UTC milliseconds).
ARROW_TYPES = {
    "string": pa.string(),
    "int": pa.int32(),
    "bigint": pa.int64(),
    "boolean": pa.bool_(),
    "double": pa.float64(),
    "timestamp": TS,
}


class MartContractError(StepError):
    """A mart declaration kaudit cannot read into a schema (no enforced contract, unknown type)."""


def declaration_path() -> Path:
    return project_dir() / DECLARATION


def load_contracts(path: Path | None = None) -> dict[str, pa.Schema]:
    """``{mart: Arrow schema}`` of every model with an enforced contract in ``path``."""
    path = path or declaration_path()
    models = yaml.safe_load(path.read_text())["models"]
    out = {}
    for model in models:
        if not (model.get("config") or {}).get("contract", {}).get("enforced"):
            raise MartContractError(f"{path}: mart {model['name']} has no enforced contract")
        fields = []
        for column in model["columns"]:
            data_type = str(column.get("data_type") or "").lower()
            if data_type not in ARROW_TYPES:
                raise MartContractError(f"{path}: {model['name']}.{column['name']}: data_type {data_type!r} unknown")
            if column["name"] != PARTITION_COLUMN:
                fields.append(pa.field(column["name"], ARROW_TYPES[data_type]))
        out[model["name"]] = pa.schema(fields)
    return out


MARTS = load_contracts()
