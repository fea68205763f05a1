"""Java String.hashCode as Spark columns, against values the JVM gives (known answers)."""

from pyspark.sql import functions as F

from pipelines.spark.javahash import java_string_hash, topic_partition_hash
from testkit.javahash import java_string_hash as java_hash_reference

# (string, java.lang.String.hashCode())
KNOWN = [
    ("", 0),
    ("a", 97),
    ("hello", 99162322),
    ("Hello World", -862545276),
    ("polygenelubricants", -2147483648),  # Integer.MIN_VALUE
    ("\u00e9", 233),  # one UTF-16 unit
    ("\U0001F600", 0xD83D * 31 + 0xDE00),  # a surrogate pair: two units
    ("[orders,0]", None),  # filled below from the Python reference fold
]


def test_java_string_hash_matches_the_jvm_and_the_reference(spark):
    cases = [(s, v if v is not None else java_hash_reference(s)) for s, v in KNOWN]
    for s, v in cases:
        assert java_hash_reference(s) == v, s
    tps = [("orders", 0), ("orders", 17), ("t\u00e9st-\U0001F600", 123456789), ("x" * 40, 2147483647)]
    df = spark.createDataFrame(cases, "s string, want int")
    got = df.select("s", "want", java_string_hash(F.col("s")).alias("got")).collect()
    assert [(r.s, r.got) for r in got] == [(s, v) for s, v in cases]

    tp = spark.createDataFrame(tps, "topic string, partition int")
    rows = tp.select(
        "topic", "partition", topic_partition_hash(F.col("topic"), F.col("partition")).alias("h")
    ).collect()
    assert [(r.topic, r.partition, r.h) for r in rows] == [
        (t, p, java_hash_reference(f"[{t},{p}]")) for t, p in tps
    ]
