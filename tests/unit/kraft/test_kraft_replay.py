"""``extract kraft``'s replay on logs and snapshots made by the independent encoder: the state
expected is worked out here from what the test wrote (FORMATS.md section 7's replay rules)."""

from __future__ import annotations

import json

import pytest

from pipelines.context import RunContext
from pipelines.errors import InputError
from pipelines.kraft.extract import Target, extract_kraft
from pipelines.warehouse.reading import read_arrow
from pipelines.warehouse.warehouse import Warehouse
from testkit import kraft as B

T1, T2, T3 = B.topic_uuid(1), B.topic_uuid(2), B.topic_uuid(3)
U = B.uuid_text
STATE = ("raw/kraft_brokers", "raw/kraft_partitions", "raw/kraft_configs")


def _history(log: B.Log) -> dict[str, int]:
    """A small cluster's life; returns the offsets the tests aim at."""
    at = {}
    log.control(B.leader_change(3000, [3000, 3001]))
    log.append(
        B.feature_level("metadata.version", 21), B.register_broker(1, rack="r1"), B.register_broker(2, rack="r2")
    )
    log.append(B.unfence_broker(1), B.unfence_broker(2))
    log.append(B.topic("orders", T1), B.partition(T1, 0, [1, 2]), B.partition(T1, 1, [2, 1]),
               B.config(2, "orders", "retention.ms", "1000"))
    at["checkpoint"] = log.append(B.partition_change(T1, 0, isr=[1]), B.partition_change(T1, 1, leader=1, isr=[1]))
    at["begin"] = log.append(B.begin_transaction("bulk"), B.topic("tmp", T2), B.partition(T2, 0, [1]))
    at["abort"] = log.append(B.abort_transaction("failover"))
    at["remove"] = log.append(B.remove_topic(T1))
    at["recreate"] = log.append(B.topic("orders", T3), B.partition(T3, 0, [2, 1]))
    log.control(B.leader_change(3001, [3000, 3001]))
    at["end"] = log.append(B.fence_broker(2), B.config(4, "1", "num.io.threads", "16"))
    return at


def _checkpoint_image() -> list[bytes]:
    """The image at offset ``checkpoint``, written as a controller would snapshot it."""
    return [
        B.feature_level("metadata.version", 21),
        B.register_broker(1, rack="r1", fenced=False),
        B.register_broker(2, rack="r2", fenced=False),
        B.topic("orders", T1),
        # p0: ISR shrank to [1] (partition epoch +1); p1: leader 2 -> 1 (leader epoch +1) and ISR [1]
        B.partition(T1, 0, [1, 2], isr=[1], leader=1, leader_epoch=0, partition_epoch=1),
        B.partition(T1, 1, [2, 1], isr=[1], leader=1, leader_epoch=1, partition_epoch=1),
        B.config(2, "orders", "retention.ms", "1000"),
    ]


def _extract(tmp_path, paths, target: Target | None = None, run="r1") -> tuple[Warehouse, dict]:
    wh = Warehouse(tmp_path / f"wh-{run}")
    meta = extract_kraft(RunContext(wh, run, quiet=True), paths, target or Target())
    return wh, meta


def _rows(wh: Warehouse, table: str, run="r1") -> list[dict]:
    return read_arrow(wh, table, run).drop_columns(["run_id"]).to_pylist()


@pytest.fixture()
def cluster(tmp_path):
    d = tmp_path / "kraft-logs" / "__cluster_metadata-0"
    log = B.Log()
    at = _history(log)
    log.write(d / B.segment_name(0))
    (d.parent / "meta.properties").write_text("version=1\ncluster.id=Zk8cTQ2TQpe1kPfyM0fZvA\nnode.id=3000\n")
    return d, at, log


def test_replay_to_end(tmp_path, cluster):
    d, at, _ = cluster
    wh, meta = _extract(tmp_path, [d])
    assert _rows(wh, "raw/kraft_brokers") == [
        dict(broker_id=1, host="127.0.0.1", port=9092, endpoints=["PLAINTEXT://127.0.0.1:9092"], rack="r1",
             fenced=False, in_controlled_shutdown=False, broker_epoch=10, incarnation_id=U(B.uuid.UUID(int=2)),
             log_dirs=[]),
        dict(broker_id=2, host="127.0.0.1", port=9092, endpoints=["PLAINTEXT://127.0.0.1:9092"], rack="r2",
             fenced=True, in_controlled_shutdown=False, broker_epoch=10, incarnation_id=U(B.uuid.UUID(int=3)),
             log_dirs=[]),
    ]
    parts = _rows(wh, "raw/kraft_partitions")
    assert [(p["topic"], p["topic_id"], p["partition"], p["replicas"], p["leader"]) for p in parts] == [
        ("orders", U(T3), 0, [2, 1], 2)]
    assert _rows(wh, "raw/kraft_configs") == [
        dict(resource_type="broker", resource_name="1", name="num.io.threads", value="16")]  # the topic's went with it
    cluster_row = _rows(wh, "raw/kraft_cluster")[0]
    assert cluster_row["cluster_id"] == "Zk8cTQ2TQpe1kPfyM0fZvA"
    assert cluster_row["controller_id"] == 3001
    assert cluster_row["metadata_offset"] == at["end"]
    assert cluster_row["features"] == [("metadata.version", 21)]
    assert meta["records"] == at["end"] + 1 and meta["quarantined"] == 0


def test_replay_to_offset_equals_a_later_snapshot(tmp_path, cluster):
    d, at, _ = cluster
    snap = tmp_path / "snap" / B.snapshot_name(at["checkpoint"] + 1, 1)
    snap.parent.mkdir()
    snap.write_bytes(B.snapshot_bytes(_checkpoint_image(), last_contained_ts=1_750_000_005_000))

    log_wh, _ = _extract(tmp_path, [d], Target(offset=at["checkpoint"]), run="log")
    snap_wh, meta = _extract(tmp_path, [snap], run="snap")
    assert meta["snapshot"] == snap.name
    for table in STATE:
        assert _rows(log_wh, table, "log") == _rows(snap_wh, table, "snap"), table
    parts = {p["partition"]: p for p in _rows(snap_wh, "raw/kraft_partitions", "snap")}
    state = ("isr", "leader", "leader_epoch", "partition_epoch")
    assert tuple(parts[0][k] for k in state) == ([1], 1, 0, 1)
    assert tuple(parts[1][k] for k in state) == ([1], 1, 1, 1)
    topics = [(t["topic"], t["topic_id"], t["deleted_offset"]) for t in _rows(log_wh, "raw/kraft_topics", "log")]
    assert topics == [("orders", U(T1), None)]
    assert _rows(log_wh, "raw/kraft_cluster", "log")[0]["metadata_offset"] == at["checkpoint"]


def test_snapshot_plus_log_tail_equals_the_whole_log(tmp_path, cluster):
    d, at, _ = cluster
    (d / B.snapshot_name(at["checkpoint"] + 1, 1)).write_bytes(
        B.snapshot_bytes(_checkpoint_image(), last_contained_ts=1_750_000_005_000))
    # what the replay must skip
    (d / (B.snapshot_name(at["end"] + 1, 2) + ".part")).write_bytes(b"half written")
    (d / B.snapshot_name(0, 0)).write_bytes(b"")
    (d / "00000000000000000000.log.deleted").write_bytes(b"gone")
    (d / "00000000000000000000.index").write_bytes(bytes(8))
    (d / "quorum-state").write_text('{"leaderId":3001}')
    both_wh, meta = _extract(tmp_path, [d], run="both")
    assert meta["snapshot"] == B.snapshot_name(at["checkpoint"] + 1, 1)
    assert meta["history_only"] == at["checkpoint"] + 1  # the log before the snapshot: rows, not applied
    whole = tmp_path / "whole" / "__cluster_metadata-0"
    whole.mkdir(parents=True)
    (whole / B.segment_name(0)).write_bytes((d / B.segment_name(0)).read_bytes())
    log_wh, _ = _extract(tmp_path, [whole], run="log")
    for table in STATE:
        assert _rows(both_wh, table, "both") == _rows(log_wh, table, "log"), table


def test_deleted_and_recreated_topic_keeps_two_ids(tmp_path, cluster):
    d, at, log = cluster
    wh, _ = _extract(tmp_path, [d])
    topics = sorted(
        (t["topic"], t["topic_id"], t["created_offset"], t["deleted_offset"]) for t in _rows(wh, "raw/kraft_topics")
    )
    assert topics == [("orders", U(T1), at["checkpoint"] - 5, at["remove"]),
                      ("orders", U(T3), at["recreate"] - 1, None)]
    records = [r for r in _rows(wh, "raw/metadata_records") if r["record_type"] == "TopicRecord"]
    assert [json.loads(r["record"]) for r in records] == [
        {"name": "orders", "topicId": U(T1)}, {"name": "tmp", "topicId": U(T2)}, {"name": "orders", "topicId": U(T3)}]


def test_aborted_transaction_is_not_applied(tmp_path, cluster):
    d, at, _ = cluster
    wh, meta = _extract(tmp_path, [d], Target(offset=at["abort"]))
    assert {t["topic"] for t in _rows(wh, "raw/kraft_topics")} == {"orders"}
    assert {p["topic"] for p in _rows(wh, "raw/kraft_partitions")} == {"orders"}
    states = {r["offset"]: r["txn_state"] for r in _rows(wh, "raw/metadata_records")}
    assert [states[o] for o in range(at["begin"] - 2, at["abort"] + 1)] == [None, "aborted", "aborted", None]
    assert meta["aborted"] == 2 and meta["pending"] == 0


def test_unfinished_transaction_is_pending(tmp_path, cluster):
    d, at, _ = cluster
    wh, meta = _extract(tmp_path, [d], Target(offset=at["begin"]))
    assert {t["topic"] for t in _rows(wh, "raw/kraft_topics")} == {"orders"}
    states = [r["txn_state"] for r in _rows(wh, "raw/metadata_records") if r["offset"] > at["begin"] - 2]
    assert states == ["pending", "pending"] and meta["pending"] == 2


def test_at_time(tmp_path, cluster):
    d, at, log = cluster
    # one batch per second from start_ms + 1000: the batch ending at 'checkpoint' is the 5th
    wh, _ = _extract(tmp_path, [d], Target(time_ms=1_750_000_005_000))
    assert _rows(wh, "raw/kraft_cluster")[0]["metadata_offset"] == at["checkpoint"]


def test_unknown_records_are_kept_raw_and_counted(tmp_path):
    d = tmp_path / "__cluster_metadata-0"
    unknown_key, unknown_version = B.frame(99, 0, b"\x07\x00"), B.frame(3, 9, b"\x01\x02")
    log = B.Log()
    log.append(B.topic("a", T1), unknown_key, unknown_version, B.partition(T1, 0, [1]))
    log.write(d / B.segment_name(0))
    wh, meta = _extract(tmp_path, [d])
    rows = _rows(wh, "raw/metadata_records")
    assert [(r["record_type"], r["api_key"], r["version"], r["record"], r["raw"]) for r in rows[1:3]] == [
        (None, 99, 0, None, unknown_key), ("PartitionRecord", 3, 9, None, unknown_version)]
    assert rows[0]["raw"] is None and rows[3]["raw"] is None
    assert meta["unknown"] == {"apiKey 99 v0": 1, "apiKey 3 v9": 1}
    assert meta["quarantined"] == 0 and meta["partitions"] == 1


def test_corrupt_parts_are_quarantined(tmp_path):
    d = tmp_path / "__cluster_metadata-0"
    log = B.Log()
    log.append(B.topic("a", T1), B.topic("b", T2) + b"\x00", B.partition(T1, 0, [1]))
    good_end = len(log.batches[0])
    log.append(B.partition(T1, 1, [1]))
    data = bytearray(b"".join(log.batches))
    data[good_end + 70] ^= 0xFF  # a byte of the second batch's records: CRC mismatch
    (d).mkdir()
    (d / B.segment_name(0)).write_bytes(bytes(data))
    wh, meta = _extract(tmp_path, [d])
    q = sorted(_rows(wh, "raw/quarantine"), key=lambda r: int(r["location"].rpartition(":")[2]))
    assert [r["reason"].split(":")[0] for r in q] == ["BadMetadataRecord", "CrcMismatch"]
    assert "1 bytes left over after TopicRecord v0" in q[0]["reason"]
    assert q[1]["location"] == f"{d / B.segment_name(0)}:{good_end}"
    assert all(r["source"] == "kraft" for r in q)
    assert [p["partition"] for p in _rows(wh, "raw/kraft_partitions")] == [0]


def test_incomplete_snapshot_is_not_used(tmp_path, cluster):
    d, at, _ = cluster
    image = B.snapshot_bytes(_checkpoint_image(), last_contained_ts=1_750_000_005_000)
    footer = B.control_batch(
        B.snapshot_footer(), base_offset=len(_checkpoint_image()) + 1, timestamp_ms=1_750_000_005_000
    )
    (d / B.snapshot_name(at["end"] + 1, 1)).write_bytes(image[: -len(footer)])
    wh, meta = _extract(tmp_path, [d])
    assert meta["snapshot"] is None and meta["metadata_offset"] == at["end"]
    assert "SnapshotSkipped: it does not end with a snapshot footer" in _rows(wh, "raw/quarantine")[0]["reason"]


def test_inputs_without_metadata_are_errors(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(InputError, match="no metadata segments or snapshots"):
        _extract(tmp_path, [empty])
    only_bootstrap = tmp_path / "__cluster_metadata-0"
    only_bootstrap.mkdir()
    (only_bootstrap / B.snapshot_name(0, 0)).write_bytes(b"")
    with pytest.raises(InputError, match="no metadata segments or snapshots"):
        _extract(tmp_path, [only_bootstrap])
    other = tmp_path / "notes.txt"
    other.write_text("x")
    with pytest.raises(InputError, match="not a metadata segment or snapshot"):
        _extract(tmp_path, [other])
    blank = only_bootstrap / B.segment_name(0)
    blank.write_bytes(b"")
    with pytest.raises(InputError, match="no metadata records"):
        _extract(tmp_path, [blank])


def test_control_records_in_the_log(tmp_path):
    d = tmp_path / "__cluster_metadata-0"
    log = B.Log()
    log.control(B.kraft_version(1))
    log.append(B.topic("a", T1))
    log.write(d / B.segment_name(0))
    wh, meta = _extract(tmp_path, [d])
    rows = _rows(wh, "raw/metadata_records")
    assert [(r["record_type"], r["control_type"], json.loads(r["record"])) for r in rows] == [
        ("KRaftVersionRecord", 5, {"version": 0, "kRaftVersion": 1}),
        ("TopicRecord", None, {"name": "a", "topicId": U(T1)}),
    ]
    assert meta["control_records"] == 1


def test_at_time_uses_only_a_snapshot_taken_before_it(tmp_path, cluster):
    d, at, _ = cluster
    snap = d / B.snapshot_name(at["checkpoint"] + 1, 1)
    snap.write_bytes(B.snapshot_bytes(_checkpoint_image(), last_contained_ts=1_750_000_005_000))
    # the batch of 'checkpoint' was appended at +5 s: just before it, the snapshot is too new
    wh, meta = _extract(tmp_path, [d], Target(time_ms=1_750_000_004_999), run="before")
    assert meta["snapshot"] is None and meta["metadata_offset"] == at["checkpoint"] - 2
    wh, meta = _extract(tmp_path, [d], Target(time_ms=1_750_000_007_000), run="after")
    assert meta["snapshot"] == snap.name and meta["metadata_offset"] == at["abort"]
    assert _rows(wh, "raw/quarantine", "after") == []


def test_single_files_read_like_their_dir(tmp_path, cluster):
    d, at, _ = cluster
    snap = d / B.snapshot_name(at["checkpoint"] + 1, 1)
    snap.write_bytes(B.snapshot_bytes(_checkpoint_image(), last_contained_ts=1_750_000_005_000))
    dir_wh, _ = _extract(tmp_path, [d], run="dir")
    files_wh, meta = _extract(tmp_path, [d / B.segment_name(0), snap], run="files")
    assert meta["snapshot"] == snap.name
    for table in (*STATE, "raw/kraft_topics", "raw/kraft_cluster"):
        assert _rows(dir_wh, table, "dir") == _rows(files_wh, table, "files"), table


def test_compressed_batches(tmp_path):
    from testkit.segments import batch

    d = tmp_path / "__cluster_metadata-0"
    d.mkdir()
    values = [B.topic("z", T1), B.partition(T1, 0, [1, 2]), B.partition_change(T1, 0, leader=2)]
    (d / B.segment_name(0)).write_bytes(b"".join(
        batch([(None, v)], base_offset=i, timestamp_ms=1_750_000_000_000, codec=codec)
        for i, (v, codec) in enumerate(zip(values, ("gzip", "zstd", "lz4"), strict=True))))
    wh, meta = _extract(tmp_path, [d])
    (p,) = _rows(wh, "raw/kraft_partitions")
    assert (p["topic"], p["leader"], p["leader_epoch"], p["partition_epoch"]) == ("z", 2, 1, 1)
    assert [r["record_type"] for r in _rows(wh, "raw/metadata_records")] == ["TopicRecord", "PartitionRecord",
                                                                              "PartitionChangeRecord"]
    assert meta["quarantined"] == 0


def test_secrets_are_redacted(tmp_path):
    """SCRAM keys and password-like config values never reach the warehouse; other configs do."""
    d = tmp_path / "__cluster_metadata-0"
    log = B.Log()
    log.append(B.register_broker(1), B.user_scram_credential("alice", 1, b"s4lt", b"stored", b"server", 4096))
    log.append(B.config(4, "1", "listener.name.internal.ssl.keystore.password", "hunter2"),
               B.config(4, "1", "sasl.jaas.config", "org.apache...PlainLoginModule required password=\"x\";"),
               B.config(2, "orders", "retention.ms", "1000"))
    log.write(d / B.segment_name(0))
    wh, _ = _extract(tmp_path, [d])
    records = {(r["record_type"], json.loads(r["record"]).get("name")): json.loads(r["record"])
               for r in _rows(wh, "raw/metadata_records")}
    scram = records[("UserScramCredentialRecord", "alice")]
    assert (scram["salt"], scram["storedKey"], scram["serverKey"], scram["iterations"]) == (
        "[redacted]", "[redacted]", "[redacted]", 4096)
    assert records[("ConfigRecord", "listener.name.internal.ssl.keystore.password")]["value"] == "[redacted]"
    assert records[("ConfigRecord", "sasl.jaas.config")]["value"] == "[redacted]"
    assert records[("ConfigRecord", "retention.ms")]["value"] == "1000"
    configs = {r["name"]: r["value"] for r in _rows(wh, "raw/kraft_configs")}
    assert configs == {"listener.name.internal.ssl.keystore.password": "[redacted]",
                       "sasl.jaas.config": "[redacted]", "retention.ms": "1000"}
    every_text = json.dumps([_rows(wh, t) for t in ("raw/metadata_records", "raw/kraft_configs")], default=str)
    assert "hunter2" not in every_text and "PlainLoginModule" not in every_text
