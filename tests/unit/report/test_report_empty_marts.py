"""A mart built with no rows is "empty" in the report, "not built" only when the run has no
partition of it. Spark's ``insert overwrite`` of no rows (the dbt build's marts) leaves the
run's directory without a file: that is an empty mart, not a missing one."""

from __future__ import annotations

import pyarrow as pa

from pipelines.context import RunContext
from pipelines.quality.marts import MARTS
from pipelines.steps import report
from pipelines.warehouse.reading import read_built
from pipelines.warehouse.tables import SCHEMAS


def test_an_empty_mart_is_empty_and_a_missing_one_not_built(warehouse):
    audit = pa.Table.from_pylist([], schema=SCHEMAS["core/assignment_audit"])
    warehouse.write_table("core/assignment_audit", "r", audit)
    metadata = dict(group_id="g", generation=1, protocol_type="consumer", protocol="range", leader="m",
                    state_timestamp=None, is_tombstone=False, value_version=1, offsets_partition=0, log_offset=0,
                    segment_file="00000000000000000000.log")
    warehouse.write_table("raw/group_metadata", "r", pa.Table.from_pylist([metadata],
                                                                           schema=SCHEMAS["raw/group_metadata"]))
    for mart in ("consumer_lag", "offset_regressions"):  # built, no rows: an empty partition of the run
        warehouse.write_table(f"marts/{mart}", "r", MARTS[mart].empty_table())

    empty = read_built(warehouse, "marts/consumer_lag", "r")
    assert empty is not None and empty.num_rows == 0 and "lag" in empty.column_names
    assert read_built(warehouse, "marts/commit_frequency", "r") is None

    report(RunContext(warehouse, "r", quiet=True))
    html = (warehouse.partition_dir("reports", "r") / "index.html").read_text()
    assert "marts/consumer_lag is empty" in html and "marts/consumer_lag not built" not in html
    assert "No offset regressions" in html and "marts/offset_regressions not built" not in html
    assert "marts/commit_frequency not built" in html
