"""``__remote_log_metadata`` (tiered storage) decoding on the segments a real Kafka 4.1.1 broker
wrote (``pipelines/demo/real/tiered-4.1.1``, ``testkit.cluster.tiered``), against what the
scenario did and the broker answered (``oracle.json``); values that do not decode are
quarantined with file, byte and reason."""

from __future__ import annotations

import json

import pytest

from pipelines.kafka import kernel_tables as K
from pipelines.kafka import remote_log
from pipelines.kafka.batches import walk_segment
from pipelines.kafka.errors import UndecodableValue
from pipelines.kafka.segment import read_bytes
from testkit.cluster.tiered import FIXTURE
from testkit.segments import batch, write_segment

ORACLE = json.loads((FIXTURE / "oracle.json").read_text())
N = ORACLE["did"]["records_per_batch"]


@pytest.fixture(scope="module")
def decoded():
    table, bad, files = remote_log.decode_paths([FIXTURE / "logs"])
    return table.to_pylist(), bad, files


def test_every_record_of_the_real_topic_decodes(decoded):
    rows, bad, files = decoded
    assert files == 2 and bad == []
    assert {r["topic"] for r in rows} == {ORACLE["topic"]}
    assert {r["topic_id"] for r in rows} == {ORACLE["topic_id"]}
    assert {r["record_type"] for r in rows} == {"RemoteLogSegmentMetadataRecord",
                                                "RemoteLogSegmentMetadataUpdateRecord"}
    assert {r["broker_id"] for r in rows} == {1}


def test_segments_are_the_scenarios_batches(decoded):
    """Batch i of the scenario is segment i: offsets i*n .. i*n+n-1, copied to remote storage
    when rolled; on partition 0 the expired ones deleted, the others live."""
    rows, _, _ = decoded
    last = {}
    for r in rows:
        last[r["remote_segment_id"]] = r["state"]
    for text, o in ORACLE["partitions"].items():
        p = int(text.rsplit("/", 1)[1])
        created = [r for r in rows if r["partition"] == p and r["record_type"] == "RemoteLogSegmentMetadataRecord"]
        assert sorted((r["start_offset"], r["end_offset"]) for r in created) == \
            [(b * N, b * N + N - 1) for b in range(o["earliest_local"] // N)]
        for r in created:
            want = "COPY_SEGMENT_FINISHED" if r["start_offset"] >= o["earliest"] else "DELETE_SEGMENT_FINISHED"
            assert last[r["remote_segment_id"]] == want
            assert r["state"] == "COPY_SEGMENT_STARTED" and r["segment_size_bytes"] > 0
            assert [e["start_offset"] for e in r["segment_leader_epochs"]] == [r["start_offset"]]
            # record timestamps the scenario set: two days old (expired) or within the last half hour
            age = ORACLE["did"]["produced_at"] - int(r["max_timestamp"].timestamp() * 1000)
            assert (age > ORACLE["did"]["retention_ms"]) == (r["start_offset"] < o["earliest"])


def test_values_that_do_not_decode_are_quarantined(decoded, tmp_path):
    seg = sorted((FIXTURE / "logs" / "__remote_log_metadata-0").glob("*.log"))[0]
    good = remote_log.decode_segment(seg, 0)
    assert good[1] == []
    # a real value (the first record: RemoteLogSegmentMetadataRecord v0), then broken copies of it
    walk = walk_segment(read_bytes(seg))
    r = walk.records[0]
    real = walk.buf.tobytes()[r[K.C_VAL_POS] : r[K.C_VAL_POS] + r[K.C_VAL_LEN]]
    assert real[:3] == bytes([1, 0, 0])  # frame version 1, apiKey 0, version 0
    cases = [
        (bytes([0]) + real[1:], "frame version 0"),
        (bytes([1, 3, 0]) + real[3:], "apiKey 3 version 0"),
        (bytes([1, 0, 1]) + real[3:], "apiKey 0 version 1"),
        (real[:-4], "runs past"),
        (real + b"\x00", "left over"),
        (bytes([1, 0]), "ends inside its header"),
    ]
    for value, why in cases:
        with pytest.raises(UndecodableValue, match=why):
            remote_log.decode_value(value)
    path = tmp_path / "__remote_log_metadata-0" / f"{0:020d}.log"
    write_segment(path, [batch([(None, v)], base_offset=i, timestamp_ms=1) for i, (v, _) in enumerate(cases)]
                  + [batch([(None, real), (None, None)], base_offset=len(cases), timestamp_ms=1)])
    table, bad, files = remote_log.decode_paths([tmp_path])
    assert files == 1 and table.num_rows == 1  # the real value kept; nothing else made up
    assert len(bad) == len(cases) + 1  # and the null value
    assert all(b["location"].startswith(f"{path}:") for b in bad)
    assert [b["reason"].split(":")[0] for b in bad] == ["UndecodableValue"] * len(bad)
    assert table.to_pylist()[0]["start_offset"] == 0
