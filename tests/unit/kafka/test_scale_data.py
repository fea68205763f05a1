"""The scale benchmark's generated ``__consumer_offsets`` (benchmarks/scale_data.py) read back by
kafka-python's record reader and protocol structs (an independent decoder): every batch's CRC,
every record's key and value, against what the generator was asked to write."""

from __future__ import annotations

import importlib.util
import sys
from io import BytesIO
from pathlib import Path

from kafka.protocol.old.types import Int16
from kafka.record.memory_records import MemoryRecords

from testkit.segments import GROUP_METADATA_KEY, OFFSET_COMMIT_KEY, OFFSET_COMMIT_VALUE

BENCHMARKS = Path(__file__).resolve().parents[3] / "benchmarks"


def _scale_data():
    spec = importlib.util.spec_from_file_location("scale_data", BENCHMARKS / "scale_data.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("scale_data", module)
    spec.loader.exec_module(module)
    return module


def test_generated_offsets_read_back_with_kafka_python(tmp_path):
    sd = _scale_data()
    shape = sd.Shape(groups=30, topics=4, partitions=10, rounds=3)
    assert sd.write_offsets(shape, tmp_path) == shape.records == 900

    commits, groups = {}, set()
    for part in sorted(tmp_path.glob("__consumer_offsets-*")):
        p = int(part.name.rsplit("-", 1)[1])
        expected_next = 0
        for seg in sorted(part.glob("*.log")):
            assert int(seg.stem) == expected_next  # a segment is named by its first offset
            records = MemoryRecords(seg.read_bytes())
            while records.has_next():
                batch = records.next_batch()
                assert batch.validate_crc() and batch.magic == 2 and batch.compression_type == 0
                for r in batch:
                    assert r.offset == expected_next
                    expected_next += 1
                    key = BytesIO(r.key)
                    version = Int16.decode(key)
                    if version == 2:
                        (group,) = GROUP_METADATA_KEY.decode(key)
                        assert sd.group_partition(group, sd.OFFSETS_PARTITIONS) == p
                        groups.add(group)
                        continue
                    assert version == 1
                    group, topic, partition = OFFSET_COMMIT_KEY.decode(key)
                    value = BytesIO(r.value)
                    assert Int16.decode(value) == 3
                    offset, epoch, metadata, ts = OFFSET_COMMIT_VALUE[3].decode(value)
                    assert group in groups  # the group's metadata comes before its commits
                    assert (epoch, metadata, r.timestamp) == (0, "", ts)
                    commits.setdefault((group, topic, partition), []).append((offset, ts))

    assert groups == {f"group-{g:05d}" for g in range(30)}
    assert len(commits) == 30 * 10
    for (group, topic, partition), seen in commits.items():
        g = int(group.split("-")[1])
        assert topic == f"topic-{g % 4:03d}"
        assert [o for o, _ in seen] == [(r + 1) * 1000 + partition for r in range(3)]
        assert [t for _, t in seen] == [sd.T0_MS + r * sd.ROUND_MS + g for r in range(3)]
