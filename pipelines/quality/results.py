"""The validation's results as the warehouse table ``quality/validation_results`` (declared in
``pipelines/warehouse/tables.py``): one row per check of the run. ``kaudit validate`` writes it
through the warehouse's writer in the same step as results.json, so it is the run's Parquet
partition, or a snapshot of the Iceberg table ``quality.validation_results`` recorded in the
step's ledger row.

The counts and the observed value are Great Expectations' own, as it returned them (a key its
result did not have is null): a table-level expectation (a row count) has an observed value and
no element or unexpected count. ``success`` is results.json's: GX's, and false when the
expectation raised; null for a check not evaluated (``no_data`` says why)."""

from __future__ import annotations

import json
import numbers

import pyarrow as pa

from pipelines.warehouse.tables import SCHEMAS

TABLE = "quality/validation_results"
COLUMN_KWARGS = ("column", "column_A", "column_B")  # a GX expectation's column arguments, in this order


def check_columns(expectation) -> list[str]:
    """The columns a GX expectation names (``column``, ``column_A``/``column_B``,
    ``column_list``); none for a table-level expectation."""
    names = [getattr(expectation, k, None) for k in COLUMN_KWARGS]
    names += list(getattr(expectation, "column_list", None) or [])
    return [str(n) for n in names if n is not None]


def result_row(res) -> dict:
    """The row of one evaluated check (a :class:`~pipelines.quality.gx_runner.CheckResult`)."""
    gx = res.gx
    observed = gx.get("observed_value")
    return {
        **_check(res.suite, res.check),
        "success": res.success,
        "element_count": _int(gx.get("element_count")),
        "unexpected_count": _int(gx.get("unexpected_count")),
        "unexpected_percent": _float(gx.get("unexpected_percent")),
        "observed_value": _float(observed),
        "observed_json": None if observed is None else json.dumps(observed, default=_plain, sort_keys=True),
        "error": res.error,
        "evaluated_at": res.evaluated_at,
    }


def no_data_row(suite: str, check, why: str) -> dict:
    """The row of a check not evaluated because its view has no data."""
    return {**_check(suite, check), "success": None, "no_data": why}


def results_table(rows: list[dict]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=SCHEMAS[TABLE])


def _check(suite: str, check) -> dict:
    return {
        "suite": suite,
        "expectation": check.name,
        "gx_expectation": check.expectation.expectation_type,
        "view": check.view,
        "columns": check_columns(check.expectation),
        "level": check.level,
        "description": check.description,
    }


def _int(value) -> int | None:
    return int(value) if isinstance(value, numbers.Integral) and not isinstance(value, bool) else None


def _float(value) -> float | None:
    return float(value) if isinstance(value, numbers.Real) and not isinstance(value, bool) else None


def _plain(value):
    """A numpy scalar (GX's pandas engine) as its Python value, anything else as its text."""
    item = getattr(value, "item", None)
    return item() if callable(item) else str(value)
