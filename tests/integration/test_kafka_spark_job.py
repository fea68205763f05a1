"""The Spark job spreads partitions over executors and writes what the local extract writes."""

from __future__ import annotations

import pytest

from pipelines.context import RunContext
from pipelines.jobs.extract_offsets import run
from pipelines.kafka.extract import extract_offsets
from pipelines.warehouse import Warehouse
from testkit.segments import (
    batch,
    control_batch,
    group_metadata_key,
    group_metadata_value,
    offset_commit_key,
    offset_commit_value,
    segment_name,
    write_segment,
)

pytestmark = pytest.mark.integration


def test_spark_job_matches_local_extract(spark, tmp_path):
    from pyspark.testing import assertDataFrameEqual

    logs = tmp_path / "logs"
    for p in range(3):
        k = offset_commit_key(f"g{p}", "t", p)
        write_segment(logs / f"__consumer_offsets-{p}" / segment_name(0), [
            batch([(k, offset_commit_value(i, commit_ts=i)) for i in range(5)], base_offset=0, timestamp_ms=1, codec="gzip"),
            batch([(k, offset_commit_value(9, commit_ts=9))], base_offset=5, timestamp_ms=1,
                  producer_id=p + 1, producer_epoch=0, base_sequence=0, transactional=True),
            batch([(group_metadata_key(f"g{p}"), group_metadata_value(generation=p, protocol=None, leader=None))], base_offset=6, timestamp_ms=1),
        ])
        write_segment(logs / f"__consumer_offsets-{p}" / segment_name(7), [
            control_batch(base_offset=7, producer_id=p + 1, producer_epoch=0, commit=p != 1, timestamp_ms=2), b"\x00" * 20])

    wh = Warehouse(tmp_path / "wh")
    counts = run(spark, wh, "spark", [logs])
    assert counts["offset_commits"] == 18 and counts["partitions"] == 3 and counts["quarantine"] == 3
    extract_offsets(RunContext(wh, "local", quiet=True), [logs], workers=1)

    for table in ("raw/offset_commits", "raw/group_metadata", "raw/quarantine", "raw/group_members"):
        a = spark.read.parquet(str(wh.partition_dir(table, "spark")))
        b = spark.read.parquet(str(wh.partition_dir(table, "local")))
        assertDataFrameEqual(a, b)
    states = spark.read.parquet(str(wh.partition_dir("raw/offset_commits", "spark"))).where("is_transactional")
    assert sorted(r.txn_state for r in states.collect()) == ["aborted", "committed", "committed"]
