"""The report's KRaft section and findings on a metadata log made by the independent encoder
(``testkit.kraft``) and read by ``kaudit extract kraft``, with offset commits written here:
partitions whose ISR is below min.insync.replicas (topic config, leader broker config, cluster
default, Kafka's 1) and commits to a topic between its deletion and its re-creation."""

from __future__ import annotations

import csv
from datetime import UTC, datetime, timedelta

import pyarrow as pa

from pipelines.context import RunContext
from pipelines.kraft.extract import extract_kraft
from pipelines.report.metadata import min_insync_replicas
from pipelines.report.write import write_report
from pipelines.warehouse.tables import SCHEMAS
from testkit import kraft as B

A, BT, OLD, C, OLD2 = (B.topic_uuid(i) for i in (1, 2, 3, 4, 6))


def _at(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=UTC)


def _commit(group, topic, partition, offset, when, tombstone=False):
    return dict(group_id=group, topic=topic, partition=partition, committed_offset=None if tombstone else offset,
                leader_epoch=None, metadata="", commit_timestamp=when, expire_timestamp=None, is_tombstone=tombstone,
                key_version=1, value_version=3, offsets_partition=0, log_offset=offset, producer_id=-1,
                is_transactional=False, txn_state=None, segment_file="__consumer_offsets-0/00000000000000000000.log")


def _run(tmp_path, warehouse):
    d = tmp_path / "__cluster_metadata-0"
    log = B.Log()
    log.append(*[B.register_broker(b, fenced=False) for b in (1, 2, 3)])
    log.append(B.topic("a", A), B.partition(A, 0, [1, 2, 3]), B.partition(A, 1, [1, 2, 3]),
               B.config(2, "a", "min.insync.replicas", "2"))
    log.append(B.topic("b", BT), B.partition(BT, 0, [2, 3]), B.config(4, "", "min.insync.replicas", "3"))
    log.append(B.topic("c", C), B.partition(C, 0, [3, 1], isr=[3]), B.config(4, "3", "min.insync.replicas", "1"))
    log.append(B.partition_change(A, 0, isr=[1]))
    log.append(B.topic("old", OLD), B.partition(OLD, 0, [1, 2], isr=[1, 2]))
    log.append(B.remove_topic(OLD))
    deleted = _at(log.now)
    log.append(B.topic("old", OLD2), B.partition(OLD2, 0, [1, 2, 3]))
    recreated = _at(log.now)
    log.write(d / B.segment_name(0))
    ctx = RunContext(warehouse, "r", quiet=True)
    extract_kraft(ctx, [d])
    s = timedelta(milliseconds=100)
    commits = [_commit("g", "old", 0, 10, deleted - s), _commit("g", "old", 0, 11, deleted + s),
               _commit("g", "old", 0, 12, deleted + 2 * s, tombstone=True),
               _commit("g", "old", 0, 13, deleted + 3 * s),
               _commit("g", "old", 0, 14, recreated + s), _commit("h", "a", 0, 5, recreated + s)]
    table = pa.Table.from_pylist(commits, schema=SCHEMAS["raw/offset_commits"])
    warehouse.write_table("raw/offset_commits", "r", table, step="offsets")
    return ctx, deleted, recreated


def test_kraft_findings_in_the_page_and_the_csv(tmp_path, warehouse):
    ctx, deleted, recreated = _run(tmp_path, warehouse)
    out = write_report(ctx)
    html = out.read_text()
    assert 'id="kraft"' in html
    assert html.count('<tr class="kraft-isr">') == 2  # a-0 (ISR 1 < topic's 2), b-0 (ISR 2 < cluster default 3)
    assert "topic config" in html and "cluster broker default" in html
    assert html.count('<tr class="kraft-deleted">') == 1
    assert "marts/metadata_history not built" in html
    with (out.parent / "findings.csv").open(newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["source"] == "kraft"]
    assert [(r["status"], r["group_id"], r["topic"], r["partition"], r["committed_offset"]) for r in rows] == [
        ("isr_below_min_insync", "", "a", "0", ""),
        ("isr_below_min_insync", "", "b", "0", ""),
        # 11 and 13 came after the deletion and before the re-creation; 12 is a tombstone
        ("deleted_topic_commits", "g", "old", "0", "13"),
    ]


def test_min_insync_replicas_resolution_order():
    configs = [dict(resource_type="topic", resource_name="t", name="min.insync.replicas", value="3"),
               dict(resource_type="broker", resource_name="2", name="min.insync.replicas", value="2"),
               dict(resource_type="broker", resource_name="", name="min.insync.replicas", value="4"),
               dict(resource_type="topic", resource_name="u", name="retention.ms", value="1")]
    resolve = min_insync_replicas(configs)
    assert resolve("t", 2) == (3, "topic config")
    assert resolve("u", 2) == (2, "broker 2 config")
    assert resolve("u", 1) == (4, "cluster broker default")
    assert min_insync_replicas(configs[:1])("u", 1) == (1, "Kafka default")


def test_no_kraft_section_without_metadata(warehouse):
    html = write_report(RunContext(warehouse, "r", quiet=True)).read_text()
    assert 'id="kraft"' not in html


def test_timeline_counts_events_and_lists_the_latest_notable_ones():
    from pipelines.quality.marts import MARTS
    from pipelines.report.metadata import _timeline

    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    rows = [dict(metadata_offset=o, event_at=t0 + timedelta(minutes=o), event=e, topic="t" if "topic" in e else None,
                 topic_id="A" if "topic" in e else None, broker_id=1 if "broker" in e else None)
            for o, e in ((1, "broker_registered"), (2, "topic_created"), (3, "isr_changed"), (4, "isr_changed"),
                         (5, "topic_deleted"))]
    history = pa.Table.from_pylist(rows, schema=MARTS["metadata_history"])
    timeline, notable, total = _timeline(history)
    assert [(t["event"], t["count"], t["first_at"], t["last_at"]) for t in timeline] == [
        ("topic_created", 1, t0 + timedelta(minutes=2), t0 + timedelta(minutes=2)),
        ("topic_deleted", 1, t0 + timedelta(minutes=5), t0 + timedelta(minutes=5)),
        ("broker_registered", 1, t0 + timedelta(minutes=1), t0 + timedelta(minutes=1)),
        ("isr_changed", 2, t0 + timedelta(minutes=3), t0 + timedelta(minutes=4)),
    ]
    assert [(e["metadata_offset"], e["event"]) for e in notable] == [(5, "topic_deleted"), (2, "topic_created"),
                                                                     (1, "broker_registered")]
    assert total == 3
