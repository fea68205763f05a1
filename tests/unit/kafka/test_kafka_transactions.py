"""Transaction states resolved per partition, in log order, across segments."""

from __future__ import annotations

import numpy as np
import pytest

from pipelines.kafka.offsets import decode_scope
from pipelines.kafka.paths import offsets_segments
from pipelines.kafka.transactions import (
    ABORTED,
    COMMITTED,
    NONE,
    PENDING,
    resolve,
    state_array,
)
from testkit.segments import (
    batch,
    control_batch,
    offset_commit_key,
    offset_commit_value,
    segment_name,
    write_segment,
)

# (log offset, producer, transactional) and markers (offset, producer, commit) -> expected
CASES = [
    ([(5, 7, True)], [(6, 7, True)], [COMMITTED]),
    ([(5, 7, True)], [(6, 7, False)], [ABORTED]),
    ([(5, 7, True)], [], [PENDING]),
    ([(5, 7, True)], [(4, 7, True)], [PENDING]),  # a marker BEFORE the commit ends an older txn
    ([(5, 7, True)], [(6, 8, True)], [PENDING]),  # another producer's marker
    ([(5, -1, False)], [(6, 7, True)], [NONE]),
    ([(1, 7, True), (3, 7, True), (5, 9, True)], [(2, 7, False), (4, 7, True), (6, 9, True)],
     [ABORTED, COMMITTED, COMMITTED]),
]


@pytest.mark.parametrize("commits,markers,expected", CASES)
def test_resolve_table(commits, markers, expected):
    c = np.array(commits, dtype=np.int64).reshape(-1, 3)
    m = np.array(markers, dtype=np.int64).reshape(-1, 3)
    got = resolve(c[:, 0], c[:, 1], c[:, 2].astype(bool), m[:, 0], m[:, 1], m[:, 2].astype(bool))
    assert got.tolist() == expected


def test_state_array():
    states = state_array(np.array([NONE, COMMITTED, ABORTED, PENDING], np.int8))
    assert states.to_pylist() == [None, "committed", "aborted", "pending"]


def test_markers_in_later_segment_and_interleaved_producers(tmp_path):
    part = tmp_path / "__consumer_offsets-4"
    k = offset_commit_key("g", "t", 0)

    def txn(off, pid, value):
        return batch([(k, offset_commit_value(value, commit_ts=1))], base_offset=off, timestamp_ms=1,
                     producer_id=pid, producer_epoch=0, base_sequence=0, transactional=True)

    write_segment(part / segment_name(0), [
        txn(0, 11, 100),
        txn(1, 22, 200),
        batch([(k, offset_commit_value(300, commit_ts=1))], base_offset=2, timestamp_ms=1),
        control_batch(base_offset=3, producer_id=22, producer_epoch=0, commit=False, timestamp_ms=2),
    ])
    write_segment(part / segment_name(4), [
        txn(4, 22, 400),
        control_batch(base_offset=5, producer_id=11, producer_epoch=0, commit=True, timestamp_ms=2),
    ])
    tables, _ = decode_scope(offsets_segments([tmp_path]))
    got = [(r["log_offset"], r["committed_offset"], r["txn_state"]) for r in tables["raw/offset_commits"].to_pylist()]
    assert got == [(0, 100, "committed"), (1, 200, "aborted"), (2, 300, None), (4, 400, "pending")]


def test_partitions_are_separate_scopes(tmp_path):
    """A marker in another partition does not resolve a commit."""
    k = offset_commit_key("g", "t", 0)
    write_segment(tmp_path / "__consumer_offsets-0" / segment_name(0), [
        batch([(k, offset_commit_value(1, commit_ts=1))], base_offset=0, timestamp_ms=1,
              producer_id=5, producer_epoch=0, base_sequence=0, transactional=True)])
    write_segment(tmp_path / "__consumer_offsets-1" / segment_name(0), [
        control_batch(base_offset=0, producer_id=5, producer_epoch=0, commit=True, timestamp_ms=2)])
    from itertools import groupby

    segs = offsets_segments([tmp_path])
    states = []
    for _, group in groupby(segs, key=lambda s: s.scope):
        tables, _ = decode_scope(list(group))
        states += tables["raw/offset_commits"]["txn_state"].to_pylist()
    assert states == ["pending"]
