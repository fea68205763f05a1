"""The cases the contract property test (tests/property/) found, kept as regressions: the
report renders every null the declared tables allow, beside values in the same column."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta

import pyarrow as pa

from pipelines.context import RunContext
from pipelines.quality.marts import MARTS
from pipelines.report.facts import gather
from pipelines.report.page import render
from pipelines.steps import report
from pipelines.warehouse.tables import CORE, RAW, SCHEMAS

T0 = datetime(2026, 1, 1, 9, 0, tzinfo=UTC)


def _value(t: pa.DataType, column: str):
    """One plain non-null value of a type (the column's name for strings)."""
    if pa.types.is_string(t):
        return {"source": "kafka", "status": "wrong_owner"}.get(column, "g")
    if pa.types.is_binary(t):
        return b"0"
    if pa.types.is_boolean(t):
        return True
    if pa.types.is_integer(t):
        return 1
    if pa.types.is_floating(t):
        return 1.5
    if pa.types.is_timestamp(t):
        return T0 + timedelta(minutes=7, milliseconds=3)  # not on the hour
    if pa.types.is_list(t):
        return [None, _value(t.value_type, column)]  # a null element beside a value
    if pa.types.is_map(t):
        return [("k", _value(t.item_type, column))]
    if pa.types.is_struct(t):
        return {f.name: _value(f.type, f.name) for f in t}
    raise NotImplementedError(t)


def _mart(wh, name: str, rows: list[dict]) -> None:
    wh.write_table(f"marts/{name}", "r", pa.Table.from_pylist(rows, schema=MARTS[name]))


def test_every_table_with_a_row_of_nulls_beside_a_row_of_values(warehouse):
    """Sorting a null against a value, a null owner in a list, a null status, a null deleted
    topic, a window off the hour, a null size or time: each once stopped the report."""
    for name, schema in {**RAW, **CORE}.items():
        rows = [dict.fromkeys(schema.names), {f.name: _value(f.type, f.name) for f in schema}]
        warehouse.write_table(name, "r", pa.Table.from_pylist(rows, schema=schema))
    for name, schema in MARTS.items():
        _mart(warehouse, name, [dict.fromkeys(schema.names), {f.name: _value(f.type, f.name) for f in schema}])
    report(RunContext(warehouse, "r", quiet=True))
    html = (warehouse.partition_dir("reports", "r") / "index.html").read_text()
    assert "Rebalance history" in html and "not recorded" in html


def _rebalance(group: str, started_at, generation: int, log_offset: int) -> dict:
    row = dict.fromkeys(MARTS["rebalances"].names)
    row.update(source="kafka", group_id=group, group_protocol="classic", generation=generation, offsets_partition=0,
               log_offset=log_offset, trigger="member_joined", started_at=started_at, settled=True,
               unowned_partitions=0, double_claimed_partitions=0, wrong_owner_partitions=0, is_storm=False)
    return row


def test_rebalances_without_start_times_render_through_the_cli(warehouse):
    """Group metadata in message format v0/v1 carries no timestamp: ``started_at`` is null.
    ``kaudit report`` exited 1 with "internal error: TypeError: '<' not supported between
    NoneType and datetime" on them; now each is listed in log order, its start "not recorded"."""
    audit = pa.Table.from_pylist([], schema=SCHEMAS["core/assignment_audit"])
    warehouse.write_table("core/assignment_audit", "r", audit)
    metadata = [dict(group_id="legacy", generation=g, protocol_type="consumer", protocol="range", leader="m",
                     state_timestamp=None, is_tombstone=False, value_version=1, offsets_partition=0, log_offset=o,
                     segment_file="00000000000000000000.log") for g, o in ((1, 10), (2, 40))]
    warehouse.write_table("raw/group_metadata", "r",
                          pa.Table.from_pylist(metadata, schema=SCHEMAS["raw/group_metadata"]))
    _mart(warehouse, "rebalances", [_rebalance("legacy", None, 2, 40), _rebalance("legacy", T0, 3, 50),
                                    _rebalance("legacy", None, 1, 10)])
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    done = subprocess.run([sys.executable, "-m", "pipelines", "--warehouse", str(warehouse.root), "--run-id", "r",
                           "report"], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    html = (warehouse.partition_dir("reports", "r") / "index.html").read_text()
    timeline = gather(warehouse, "r").rebalances.timeline[("kafka", "legacy")]
    assert [r["generation"] for r in timeline] == [3, 1, 2]  # the timed one, then the rest in log order
    assert html.count("not recorded") == 2
    assert "3 rebalance(s)" in render(gather(warehouse, "r"))


def test_null_keys_sort_after_values_in_the_time_and_kraft_findings():
    from pipelines.report.lag_time import _groups
    from pipelines.report.metadata import _deleted_with_commits

    lag = [dict.fromkeys(MARTS["consumer_lag"].names) for _ in range(3)]
    for row, source in zip(lag, ("kafka", None, "zookeeper"), strict=True):
        row.update(source=source, group_id="g", topic="t", partition=0, lag_seconds=5.0, lag_seconds_exact=True)
    groups = _groups(pa.Table.from_pylist(lag, schema=MARTS["consumer_lag"]))
    assert [g["source"] for g in groups] == ["kafka", "zookeeper", None]

    deleted = T0 + timedelta(minutes=1)
    topics = [dict(topic_id="A", topic="t", created_at=T0, deleted_at=deleted)]
    commits = [dict(group_id=g, topic="t", partition=p, committed_offset=1, commit_timestamp=deleted + timedelta(s))
               for s, (g, p) in enumerate([("g", None), ("g", 0), (None, 0)], 1)]
    hits = _deleted_with_commits(topics, commits)
    assert [(h["group_id"], h["partition"]) for h in hits] == [("g", 0), ("g", None), (None, 0)]
