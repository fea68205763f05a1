"""Input path forms and the header-only log-end scan."""

from __future__ import annotations

import pytest

from pipelines.errors import InputError
from pipelines.kafka.log_end import read_offsets_file, read_topic_configs, scan_partition
from pipelines.kafka.paths import (
    UNKNOWN_PARTITION,
    data_partition_dirs,
    offsets_segments,
)
from testkit.segments import batch, control_batch, segment_name, write_segment


def _seg(path, base=0, n=1):
    write_segment(path, [batch([(b"k", b"v")] * n, base_offset=base, timestamp_ms=1)])


def test_offsets_path_forms(tmp_path):
    logdir = tmp_path / "kafka-logs"
    for p in (0, 12):
        _seg(logdir / f"__consumer_offsets-{p}" / segment_name(100), 100)
        _seg(logdir / f"__consumer_offsets-{p}" / segment_name(0), 0)
    _seg(logdir / "orders-0" / segment_name(0))
    (logdir / "__consumer_offsets-0" / "00000000000000000000.index").write_bytes(b"\0" * 8)
    (logdir / "__consumer_offsets-3.abc-delete").mkdir()
    segs = offsets_segments([logdir])
    assert [(s.partition, s.base_offset) for s in segs] == [(0, 0), (0, 100), (12, 0), (12, 100)]
    # a partition dir, and a single file: the partition comes from the parent dir
    assert [s.partition for s in offsets_segments([logdir / "__consumer_offsets-12"])] == [12, 12]
    one = offsets_segments([logdir / "__consumer_offsets-12" / segment_name(100)])
    assert [(s.partition, s.base_offset) for s in one] == [(12, 100)]
    # a file outside a __consumer_offsets-N dir: partition unknown, its own scope
    stray = tmp_path / "copy.log"
    stray.write_bytes(b"")
    (s,) = offsets_segments([stray])
    assert (s.partition, s.scope) == (UNKNOWN_PARTITION, str(stray.resolve()))
    # the same file twice is read once
    assert len(offsets_segments([logdir, logdir / "__consumer_offsets-0"])) == 4


def test_offsets_replicas_of_one_partition_are_read_once(tmp_path):
    # the data dirs of three brokers, each with a replica of __consumer_offsets-7: the one
    # that got furthest is read, so no commit is counted once per broker
    for broker, last in (("b1", 100), ("b2", 200), ("b3", 0)):
        d = tmp_path / broker / "__consumer_offsets-7"
        _seg(d / segment_name(0), 0)
        if last:
            _seg(d / segment_name(last), last)
    segs = offsets_segments([tmp_path / "b1", tmp_path / "b2", tmp_path / "b3"])
    assert [(s.partition, s.base_offset) for s in segs] == [(7, 0), (7, 200)]
    assert {s.path.parent.parent.name for s in segs} == {"b2"}


def test_offsets_unreadable_paths(tmp_path):
    with pytest.raises(InputError, match="no such file or directory"):
        offsets_segments([tmp_path / "missing"])
    other = tmp_path / "x.index"
    other.write_bytes(b"")
    with pytest.raises(InputError, match=r"x.index: not a Kafka log segment"):
        offsets_segments([other])
    # a path that holds no segment is an error naming it: empty, data topics only, a dir x.log
    (tmp_path / "x.log").mkdir()
    (tmp_path / "orders-0").mkdir()
    for p in (tmp_path, tmp_path / "x.log", tmp_path / "orders-0"):
        with pytest.raises(InputError, match=rf"^{p}: no __consumer_offsets segments \(expected a Kafka log dir"):
            offsets_segments([p])
    (tmp_path / "__consumer_offsets-1").mkdir()
    with pytest.raises(InputError, match="no __consumer_offsets segments"):
        offsets_segments([tmp_path / "__consumer_offsets-1"])


def test_data_partition_dirs_none_found(tmp_path):
    (tmp_path / "__consumer_offsets-0").mkdir()
    with pytest.raises(InputError, match=rf"^{tmp_path}: no topic-partition dirs of data topics"):
        data_partition_dirs([tmp_path])


def test_data_partition_dirs_a_broker_hosting_no_data_topic(tmp_path):
    # a broker of a cluster whose data replicas were all reassigned away (as a real 3.9.2 broker
    # of the ops matrix case left it): its log dir beside the others is no error
    for name in ("b1/__consumer_offsets-0", "b1/orders-0.ca852d5497104621ada1fb4f1c542adc-delete", "b2/orders-0",
                 "b2/__consumer_offsets-0"):
        (tmp_path / name).mkdir(parents=True)
    assert [(t, p) for t, p, _ in data_partition_dirs([tmp_path / "b1", tmp_path / "b2"])] == [("orders", 0)]
    with pytest.raises(InputError, match=rf"^{tmp_path / 'b1'}: no topic-partition dirs of data topics"):
        data_partition_dirs([tmp_path / "b1"])


def test_data_partition_dirs_of_no_path_are_none():
    # extract log-end with only --offsets-file or --topic-configs names no log dir
    assert data_partition_dirs([]) == []


def test_data_partition_dirs_skip_internal_topics(tmp_path):
    for name in ("my-topic-with-dashes-3", "__consumer_offsets-0", "__transaction_state-1", "t-0", "t-0.x-delete",
                 "t-1-future"):
        (tmp_path / name).mkdir()
    assert [(t, p) for t, p, _ in data_partition_dirs([tmp_path])] == [("my-topic-with-dashes", 3), ("t", 0)]


def test_log_end_from_headers(tmp_path):
    d = tmp_path / "orders-2"
    write_segment(d / segment_name(10), [
        batch([(b"k", b"v")] * 3, base_offset=10, timestamp_ms=5, timestamps=[5, 9, 7], codec="zstd"),
        batch([(b"k", b"v")] * 2, base_offset=13, timestamp_ms=6),
    ])
    write_segment(d / segment_name(15), [
        control_batch(base_offset=15, producer_id=1, producer_epoch=0, commit=True, timestamp_ms=8),
        batch([(None, b"v")] * 4, base_offset=16, magic=1, timestamp_ms=4, codec="gzip"),
    ])
    ends = scan_partition("orders", 2, d)
    got = (ends.log_start_offset, ends.log_end_offset, ends.max_timestamp, ends.batches, ends.quarantine)
    assert got == (10, 20, 9, 4, [])


def test_log_end_truncated_tail_and_empty_partition(tmp_path):
    d = tmp_path / "t-0"
    good = batch([(b"k", b"v")] * 2, base_offset=40, timestamp_ms=3)
    write_segment(d / segment_name(40), [good, good[:30]])
    ends = scan_partition("t", 0, d)
    assert (ends.log_start_offset, ends.log_end_offset) == (40, 42)
    assert len(ends.quarantine) == 1 and ends.quarantine[0]["location"].endswith(f"{segment_name(40)}:{len(good)}")
    assert "TruncatedBatch" in ends.quarantine[0]["reason"]
    e = tmp_path / "t-1"
    write_segment(e / segment_name(77), [])
    ends = scan_partition("t", 1, e)
    assert (ends.log_start_offset, ends.log_end_offset, ends.max_timestamp) == (77, 77, None)


def test_legacy_wrapper_opening_a_segment_starts_at_file_base(tmp_path):
    d = tmp_path / "old-0"
    write_segment(
        d / segment_name(500), [batch([(None, b"v")] * 5, base_offset=500, magic=0, codec="snappy", timestamp_ms=1)]
    )
    ends = scan_partition("old", 0, d)
    assert (ends.log_start_offset, ends.log_end_offset, ends.max_timestamp) == (500, 505, None)


def test_offsets_file(tmp_path):
    f = tmp_path / "ends.txt"
    f.write_text("# GetOffsetShell\norders:0:100\nmy:topic:with-dash:3:7\n\n")
    assert read_offsets_file(f) == [("orders", 0, 100), ("my:topic:with-dash", 3, 7)]
    f.write_text("orders:0:100\norders:x:1\n")
    with pytest.raises(InputError, match=r"ends.txt:2: partition and offset must be integers"):
        read_offsets_file(f)
    with pytest.raises(InputError, match="cannot read"):
        read_offsets_file(tmp_path / "nope.txt")


def test_topic_configs_file(tmp_path):
    f = tmp_path / "topics.properties"
    f.write_text("# retention per topic\norders:retention.ms=3600000\n\n my.topic-2 : retention.bytes = -1 \n"
                 "orders:cleanup.policy=compact,delete\n")
    assert read_topic_configs(f) == [
        ("orders", "retention.ms", "3600000", f"{f}:2"),
        ("my.topic-2", "retention.bytes", "-1", f"{f}:4"),
        ("orders", "cleanup.policy", "compact,delete", f"{f}:5"),
    ]
    for bad in ("orders=retention.ms:1", "orders:retention.ms", "or ders:retention.ms=1", ":retention.ms=1"):
        f.write_text(f"orders:retention.ms=1\n{bad}\n")
        with pytest.raises(InputError, match=r"topics.properties:2: expected topic:config=value"):
            read_topic_configs(f)
    f.write_text("# nothing\n\n")
    with pytest.raises(InputError, match=r"topics.properties: no topic:config=value line"):
        read_topic_configs(f)
    with pytest.raises(InputError, match="cannot read"):
        read_topic_configs(tmp_path / "nope.properties")
