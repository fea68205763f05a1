"""The oracle of the table ``quality/validation_results``: what Great Expectations itself returned
for a run's validation, read from GX's own validation results store (the JSON files its file
context keeps under ``validation/gx/``), never from kaudit's results."""

from __future__ import annotations

import json
from datetime import datetime

from pipelines.warehouse.reading import read_arrow
from pipelines.warehouse.tables import SCHEMAS

TABLE = "quality/validation_results"


def gx_answers(warehouse, run_id: str) -> list[dict]:
    """Every expectation result GX stored for ``run_id``'s validation, as the table's row would
    say it: from GX's JSON, not from kaudit."""
    rows = []
    files = sorted((warehouse.root / "validation" / "gx").rglob("validations/**/*.json"))
    for path in files:
        doc = json.loads(path.read_text())
        if doc["meta"]["run_id"]["run_name"] != run_id:
            continue
        suite, view = doc["suite_name"].split(".", 1)
        evaluated = datetime.fromisoformat(doc["meta"]["run_id"]["run_time"])
        for r in doc["results"]:
            config, res = r["expectation_config"], r.get("result") or {}
            kwargs = config["kwargs"]
            raised = bool((r.get("exception_info") or {}).get("raised_exception"))
            observed = res.get("observed_value")
            rows.append({
                "suite": suite, "expectation": config["meta"]["kaudit_check"], "gx_expectation": config["type"],
                "view": view, "level": config["meta"]["level"],
                "columns": [kwargs[k] for k in ("column", "column_A", "column_B") if k in kwargs]
                + list(kwargs.get("column_list") or []),
                "success": r["success"] and not raised,
                "element_count": res.get("element_count"), "unexpected_count": res.get("unexpected_count"),
                "unexpected_percent": res.get("unexpected_percent"),
                "observed_value": None if observed is None else float(observed),
                "observed_json": None if observed is None else json.dumps(observed, sort_keys=True),
                "evaluated_at": evaluated.replace(microsecond=evaluated.microsecond // 1000 * 1000),
            })
    return rows


def table_rows(warehouse, run_id: str) -> list[dict]:
    data = read_arrow(warehouse, TABLE, run_id)
    assert data.schema.remove(data.schema.get_field_index("run_id")) == SCHEMAS[TABLE]
    return data.to_pylist()


def check_results_table(warehouse, run_id: str, planted: dict, no_data: set[str]) -> None:
    """The run's rows of ``quality/validation_results`` are GX's answers; the checks that failed
    are the ``planted`` faults (check -> (column, failing values)), those without data ``no_data``."""
    got = table_rows(warehouse, run_id)
    assert {r["run_id"] for r in got} == {run_id}
    evaluated = [r for r in got if r["success"] is not None]
    keys = ("suite", "expectation", "gx_expectation", "view", "level", "columns", "success", "element_count",
            "unexpected_count", "unexpected_percent", "observed_value", "observed_json", "evaluated_at")
    want = gx_answers(warehouse, run_id)
    assert len(want) == len(planted)
    by_check = {r["expectation"]: r for r in evaluated}
    assert len(by_check) == len(evaluated) == len(want)
    for gx in want:
        row = by_check[gx["expectation"]]
        assert {k: row[k] for k in keys} == {k: gx[k] for k in keys}, gx["expectation"]
    # the script's planted faults: each evaluated check failed with as many rows as planted
    # (the table-level ones report the view's row count as GX's observed value instead)
    assert {r["expectation"] for r in evaluated if r["success"] is False} == set(planted)
    for r in evaluated:
        count = r["unexpected_count"] if r["unexpected_count"] is not None else r["observed_value"]
        assert count == len(planted[r["expectation"]][1]), r["expectation"]
    # the checks without data in this run: a row each, not evaluated, saying why
    assert {r["expectation"] for r in got if r["success"] is None} == no_data
    assert all(r["no_data"] and r["evaluated_at"] is None for r in got if r["success"] is None)
    # results.json (the report reads it) lists the same checks with the same outcome
    results = json.loads((warehouse.partition_dir("validation", run_id) / "results.json").read_text())
    assert sorted((e["expectation"], e["success"]) for e in results) == \
        sorted((r["expectation"], r["success"]) for r in got)
