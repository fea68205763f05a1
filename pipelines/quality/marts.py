"""The dbt marts as readers outside dbt see them, from the marts' one declaration.

``models/marts/_marts__models.yml`` declares every mart's columns with their ``data_type``; dbt
enforces them as model contracts at build time, and :data:`MARTS` reads the same declaration
into Arrow schemas (``run_id`` left out: it is the hive partition, not stored in the files).
:func:`read_mart` and :func:`check_schema` refuse a mart file whose columns or types differ
from the declaration: a drift between the model and its readers is an error, never nulls."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import yaml

from pipelines.errors import StepError
from pipelines.tables import TS
from pipelines.warehouse import Warehouse

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
    """A mart file whose columns or types are not its declared contract."""


def declaration_path() -> Path:
    from pipelines.transform.dbt_runner import project_dir

    return project_dir() / "models" / "marts" / "_marts__models.yml"


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


def mart_dir(warehouse: Warehouse, name: str, run_id: str) -> Path:
    return warehouse.partition_dir(f"marts/{name}", run_id)


def mart_files(warehouse: Warehouse, name: str, run_id: str) -> list[Path]:
    """The Parquet files of the run's mart (hidden ``_``/``.`` files skipped); [] when not built."""
    part = mart_dir(warehouse, name, run_id)
    if not part.is_dir():
        return []
    return sorted(
        p
        for p in part.rglob("*.parquet")
        if not any(s.startswith(("_", ".")) for s in p.relative_to(part).parts)
    )


def check_schema(name: str, schema: pa.Schema, where: Path | str) -> None:
    """Raise :class:`MartContractError` unless ``schema`` has exactly the contract's columns,
    with its types (nullability aside); ``where`` names the file in the message."""
    contract = MARTS[name]
    got = {f.name: f.type for f in schema if f.name != PARTITION_COLUMN}
    problems = [f"missing column {f.name} ({f.type})" for f in contract if f.name not in got]
    problems += [
        f"column {f.name} is {got[f.name]}, declared {f.type}"
        for f in contract
        if f.name in got and got[f.name] != f.type
    ]
    problems += [f"undeclared column {c}" for c in got if c not in contract.names]
    if problems:
        raise MartContractError(
            f"{where}: mart {name} does not match its contract (models/marts/_marts__models.yml): "
            + "; ".join(problems)
        )


def read_mart(warehouse: Warehouse, name: str, run_id: str) -> pa.Table | None:
    """The run's mart with exactly its contract's columns, or None when the mart was not built
    for the run. Every file is checked against the contract first."""
    files = mart_files(warehouse, name, run_id)
    if not files:
        return None
    for f in files:
        check_schema(name, pq.read_schema(f), f)
    data = ds.dataset([str(f) for f in files], format="parquet", schema=MARTS[name]).to_table()
    return data.select(MARTS[name].names)
