"""Java's ``String.hashCode`` as Spark column expressions (no UDF).

``s.hashCode() = sum(s[i] * 31^(n-1-i))`` over the UTF-16 code units of ``s``, in int32
arithmetic (wrapping). Spark runs with ANSI mode on, so the fold is done in bigint modulo
2^32 (``h * 31 + c`` stays below 2^37) and only the final value is mapped to a signed int32.
A code point above U+FFFF is two UTF-16 code units (a surrogate pair) in Java: it adds
``31 * high + low`` after multiplying by ``31^2``.

The ZooKeeper-era round-robin assignor (``kafka.consumer.RoundRobinAssignor``) orders
partitions by ``TopicAndPartition.toString.hashCode`` with ``toString = "[topic,partition]"``;
:func:`topic_partition_hash` computes it as the fold of ``"<partition>]"`` seeded with the
hash of ``"[topic,"`` (``hash(a + b) = fold(b, seed=hash(a))``).
"""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

_MOD = 1 << 32
_HALF = 1 << 31


def _step(acc: Column, ch: Column) -> Column:
    cp = F.ascii(ch).cast("bigint")  # the code point of a one-character string
    bmp = F.pmod(acc * 31 + cp, F.lit(_MOD))
    off = cp - 0x10000
    high = F.lit(0xD800) + F.shiftright(off, 10)
    low = F.lit(0xDC00) + off.bitwiseAND(F.lit(0x3FF))
    pair = F.pmod(F.pmod(acc * 961, F.lit(_MOD)) + high * 31 + low, F.lit(_MOD))
    return F.when(cp > 0xFFFF, pair).otherwise(bmp)


def java_string_hash_unsigned(s: Column, seed: Column | int = 0) -> Column:
    """Java ``hashCode`` of ``s`` as an unsigned bigint in [0, 2^32); ``seed`` is the unsigned
    hash of a prefix (the hash of ``prefix + s``)."""
    chars = F.when(F.length(s) == 0, F.array().cast("array<string>")).otherwise(F.split(s, ""))
    seed_col = seed if isinstance(seed, Column) else F.lit(seed).cast("bigint")
    return F.aggregate(chars, seed_col.cast("bigint"), _step)


def to_int32(unsigned: Column) -> Column:
    """An unsigned 32-bit value (bigint) as Java's signed int."""
    return F.when(unsigned >= _HALF, unsigned - _MOD).otherwise(unsigned).cast("int")


def java_string_hash(s: Column) -> Column:
    """Java ``String.hashCode()`` of ``s`` (int)."""
    return to_int32(java_string_hash_unsigned(s))


def topic_partition_hash(topic: Column, partition: Column) -> Column:
    """``("[" + topic + "," + partition + "]").hashCode()`` (``TopicAndPartition.toString``)."""
    prefix = java_string_hash_unsigned(F.concat(F.lit("["), topic, F.lit(",")))
    return to_int32(java_string_hash_unsigned(F.concat(partition.cast("string"), F.lit("]")), prefix))
