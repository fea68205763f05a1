"""A real run whose ``__consumer_offsets`` hold group metadata and no offset commit, encoded by
the independent encoder (kafka-python's builders in testkit.segments), in GroupMetadataValue
v1 (message format v0/v1 era: no timestamp in the record), through the real ``extract
offsets``, ``build`` (local Spark, dbt) and ``report``: the marts dbt built with no rows are
reported empty, never "not built", and the rebalances without a start time render."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipelines.cli import main
from pipelines.warehouse.reading import row_count
from pipelines.warehouse.warehouse import Warehouse
from testkit.segments import (
    assignment,
    batch,
    group_metadata_key,
    group_metadata_value,
    segment_name,
    subscription,
    write_segment,
)

pytestmark = pytest.mark.integration

RUN = "meta-only"
T0 = 1_750_000_000_000
# (generation, members): three generations of group g on topic t, partitions 0-1
GENERATIONS = [(1, ["a"]), (2, ["a", "b"]), (3, ["b"])]


def _kaudit(*args: str) -> None:
    with pytest.raises(SystemExit) as ex:
        main(list(args))
    assert ex.value.code == 0


def _member(name: str, partitions: list[int]) -> dict:
    return dict(member_id=name, client_id=name, client_host=f"/{name}", subscription=subscription(["t"]),
                assignment=assignment({"t": partitions}))


def test_group_metadata_without_commits_reports_empty_marts(spark, tmp_path: Path):
    records = []
    for generation, members in GENERATIONS:
        share = {m: [p for p in (0, 1) if p % len(members) == i] for i, m in enumerate(members)}
        value = group_metadata_value(generation=generation, protocol="range", leader=members[0], version=1,
                                     members=[_member(m, share[m]) for m in members])
        records.append(batch([(group_metadata_key("g"), value)], base_offset=len(records), magic=1,
                             timestamp_ms=T0 + generation * 60_000))
    write_segment(tmp_path / "logs" / "__consumer_offsets-0" / segment_name(0), records)
    wh = Warehouse(tmp_path / "wh")
    common = ("--warehouse", str(wh.root), "--run-id", RUN, "--quiet")
    _kaudit(*common, "extract", "offsets", str(tmp_path / "logs"))
    assert row_count(wh, "raw/group_metadata", RUN) == len(GENERATIONS)
    assert row_count(wh, "raw/offset_commits", RUN) == 0
    _kaudit(*common, "build")
    # dbt built the commit marts, with no rows: their run directories exist, without a file
    assert row_count(wh, "marts/consumer_lag", RUN) == 0
    assert row_count(wh, "marts/rebalances", RUN) == len(GENERATIONS)
    _kaudit(*common, "report")
    html = (wh.partition_dir("reports", RUN) / "index.html").read_text()
    assert "marts/consumer_lag is empty" in html and "marts/consumer_lag not built" not in html
    assert "not built" not in html.replace("marts/metadata_history not built", "")
    assert html.count("not recorded") == len(GENERATIONS)  # v1 group metadata holds no time
