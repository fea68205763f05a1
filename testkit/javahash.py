"""Java's ``String.hashCode()`` in plain Python: the reference the tests hold kaudit's Spark
version (``pipelines/spark/javahash.py``) and the demo's ``__consumer_offsets`` partitions to."""

from __future__ import annotations


def java_string_hash(s: str) -> int:
    """The JDK's loop over UTF-16 code units, in int32 arithmetic."""
    data = s.encode("utf-16-be")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + int.from_bytes(data[i : i + 2], "big")) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h
