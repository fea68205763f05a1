"""The report's migration and tiered-storage facts on hand-built rows: the findings.csv rows of
the migration audit (the mart's findings, metadata with each side's value, offsets with the
value after and before), and each remote segment's last state in the order ``__remote_log_metadata``
wrote the events, a segment deleted remotely leaving the remote tier's range."""

from __future__ import annotations

from pipelines.report.migration import MigrationFacts, finding_rows
from pipelines.report.tiered import LIVE, _last_states


def _named(finding, kind, group=None, topic=None, partition=None, name=None, zk=None, kraft=None, before=None,
           after=None):
    """A ``marts/migration_findings`` row."""
    return {"finding": finding, "kind": kind, "group_id": group, "topic": topic, "partition": partition,
            "config_name": name, "zookeeper": zk, "kraft": kraft, "before_offset": before, "after_offset": after}


def test_migration_finding_rows_name_kind_status_and_both_offsets():
    facts = MigrationFacts(states=[], compared=[], differences=[], offsets=[], named=[
        _named("migration_topic_id_differs", "topic_id", topic="t", zk="a", kraft="b"),
        _named("migration_config_differs", "config", topic="t", name="retention.ms", zk="1000", kraft="2000"),
        _named("migration_offsets_moved_backwards", "committed_offset", "g-moved", "orders", 0, before=20, after=4),
        _named("migration_offsets_lost", "committed_offset", "g-lost", "orders", 1, before=7),
    ])
    rows = finding_rows(facts)
    assert [(r["status"], r["group_id"], r["topic"], r["partition"], r["committed_offset"]) for r in rows] == [
        ("migration_topic_id_differs", None, "t", None, None),
        ("migration_config_differs", None, "t", None, None),
        ("migration_offsets_moved_backwards", "g-moved", "orders", 0, 4),
        ("migration_offsets_lost", "g-lost", "orders", 1, None),
    ]
    assert [r["detail"] for r in rows] == ["topic_id: ZooKeeper a, KRaft b",
                                           "config retention.ms: ZooKeeper 1000, KRaft 2000",
                                           "before the migration 20, after 4", "before the migration 7, after none"]
    assert finding_rows(None) == []


def _event(sid, record_type, state, log_offset, metadata_partition=0, start=None, end=None):
    return {"remote_segment_id": sid, "record_type": record_type, "state": state, "log_offset": log_offset,
            "metadata_partition": metadata_partition, "start_offset": start, "end_offset": end, "topic": "t",
            "topic_id": "id", "partition": 0, "segment_size_bytes": 100}


def test_each_remote_segment_keeps_its_creation_with_its_last_state():
    create, update = "RemoteLogSegmentMetadataRecord", "RemoteLogSegmentMetadataUpdateRecord"
    events = [  # out of log order on purpose
        _event("b", update, LIVE, 3),
        _event("a", update, "DELETE_SEGMENT_FINISHED", 5),
        _event("a", create, "COPY_SEGMENT_STARTED", 0, start=0, end=9),
        _event("a", update, LIVE, 1),
        _event("b", create, "COPY_SEGMENT_STARTED", 2, start=10, end=19),
        _event("c", create, "COPY_SEGMENT_STARTED", 0, metadata_partition=1, start=20, end=29),
        _event(None, "RemotePartitionDeleteMetadataRecord", "DELETE_PARTITION_MARKED", 9),
    ]
    last = _last_states(events)
    assert {sid: (s["state"], s["start_offset"], s["end_offset"]) for sid, s in last.items()} == {
        "a": ("DELETE_SEGMENT_FINISHED", 0, 9), "b": (LIVE, 10, 19), "c": ("COPY_SEGMENT_STARTED", 20, 29)}
