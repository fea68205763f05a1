"""The typed Kafka registry: ``raw/znodes`` -> ``core/brokers``, ``core/topic_partitions``,
``core/consumer_registrations``, ``core/partition_owners``, ``core/zk_offsets``, ``core/cluster``.

Layouts (``docs/formats.md`` sec. 4; Kafka's ``ZkUtils`` of 0.7 and 0.8+)::

    path                                   0.7 value               0.8+ value
    /brokers/ids/<id>                      [creator:]host:port     {"host","port","endpoints",...}
    /brokers/topics/<t>                    (none)                  {"version":1,"partitions":{"<p>":[replicas]}}
    /brokers/topics/<t>/<broker_id>        nPartitions             -
    /brokers/topics/<t>/partitions/<p>/state   -                   {"leader","leader_epoch","isr",...}
    /consumers/<g>/ids/<consumer_id>       {"<topic>": streams}    {"version":1,"subscription":{...},"pattern":"static"}
    /consumers/<g>/owners/<t>/<p>          p = broker-partition    p = partition; value = thread id
    /consumers/<g>/offsets/<t>/<p>         p = broker-partition    p = partition; value = decimal offset
    /cluster/id                            -                       {"version":"1","id":"..."}
    /controller                            -                       {"version":1,"brokerid":N,...} (or bare N)
    /admin/delete_topics/<t>               -                       (pending deletion)

A 0.7 partition is named ``<broker_id>-<partition_id>``: it becomes (broker_id, partition);
0.8+ rows have a null ``broker_id``.

Which znodes: a run may hold a live walk (``source='live'``) and a snapshot read
(``'snapshot'``). When the run has any live rows, only the live rows are used (the live
tree is the current state; mixing both would resurrect ephemeral owners and registrations
of dead consumers from the snapshot); otherwise the snapshot rows are used
(:func:`pick_source`, decided by the build from the files' statistics, no Spark job).

Bulk and the rest: the owners and offsets znodes (one per group and partition) are most of
a tree. Their parsers read ``path``/``data``/``mtime`` directly, with a byte search and one
regular expression to pick them and ``substring_index`` for the parts; every other parser
works on the small remainder (:func:`is_small`, byte searches only) with the path split into
``seg``/``depth``.
Owner and offset keys are unique per run: a znode path per (group, topic, partition[, broker]),
and names that are not the canonical decimal (``01``) are quarantined, so two znodes never
claim one key.

Malformed values never crash the build: each parser returns its rows with a ``reason``
column (null when good); :func:`quarantine` turns the bad ones into ``raw/quarantine`` rows
(source ``registry``, location = znode path, the raw value). Spark runs with ANSI mode on, so
numbers are read with ``try_cast`` and JSON with ``from_json`` on explicit schemas plus null
checks, never with a throwing cast.

Wildcard consumer subscriptions (0.8+ ``pattern`` ``white_list``/``black_list``, Kafka's
``WildcardTopicCount``: one ``{regex: streams}`` entry) are expanded as the consumer did it:
every topic under ``/brokers/topics`` whose name the regex matches in full (``white_list``) or
does not match (``black_list``) gets the registration's streams; internal topics are left out
(``exclude.internal.topics``, true unless configured otherwise). The regex is first cleaned as
``TopicFilter`` does (trimmed, ``,`` -> ``|``, spaces dropped, surrounding quotes stripped);
one that does not compile is quarantined.
"""

from __future__ import annotations

import functools

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from pipelines.kafka.topics import INTERNAL_TOPICS
from pipelines.warehouse.quarantine import spark_rows

QUARANTINE_SOURCE = "registry"

BROKER_JSON = "host string, port int, endpoints array<string>"
TOPIC_JSON = "partitions map<string, array<int>>"
STATE_JSON = "leader int, leader_epoch int, isr array<int>"
CLUSTER_ID_JSON = "id string"
CONTROLLER_JSON = "brokerid int"
REGISTRATION_JSON = "subscription map<string, int>, pattern string"  # 0.8+ consumer registration

MAX_STREAMS = 100_000  # a registration asking for more threads than this is not a real one
# wildcard subscription patterns: read the topics the regex matches / does not match
TOPIC_FILTERS = ("white_list", "black_list")


def _try_cast(c: Column, to: str) -> Column:
    """ANSI-safe cast: null instead of an error for a value that is not a ``to``."""
    return c.try_cast(to)


def _seg(i: int) -> Column:
    return F.get(F.col("seg"), i)


def _under(*names: str) -> Column:
    """The path starts with ``/<names[0]>/<names[1]>/...`` (the prefix test lets Parquet skip row groups)."""
    cond = F.col("path").startswith("/" + "/".join(names) + "/")
    for i, name in enumerate(names, start=1):
        cond = cond & (_seg(i) == name)
    return cond


def _is_object(text: Column) -> Column:
    return F.json_object_keys(text).isNotNull()


def _reasons(*pairs: tuple[Column, str | Column]) -> Column:
    """The first reason whose condition holds, else null."""
    out = None
    for cond, reason in pairs:
        value = reason if isinstance(reason, Column) else F.lit(reason)
        out = F.when(cond, value) if out is None else out.when(cond, value)
    return out.otherwise(F.lit(None).cast("string"))


def _partition_name(name: Column) -> tuple[Column, Column, Column]:
    """(partition, broker_id, ok) of an owners/offsets child name: ``p`` or 0.7 ``broker-p``,
    canonical decimal only (``01`` would be a second znode for partition 1). Canonical = the
    number printed back is the text: no sign, no leading zero, no blank, within int."""
    is07 = name.contains("-")
    b_text = F.substring_index(name, "-", 1)
    p_text = F.substring_index(name, "-", -1)
    broker = F.when(is07, _try_cast(b_text, "int"))
    part = _try_cast(p_text, "int")
    one_dash = F.length(name) == F.length(b_text) + F.length(p_text) + 1
    ok = (part.cast("string") == p_text) & (~is07 | ((broker.cast("string") == b_text) & one_dash))
    return part, broker, F.coalesce(ok, F.lit(False))


# --- selection --------------------------------------------------------------------------------


def pick_source(sources: set[str]) -> str:
    """The znode source a build uses: ``live`` when the run has live rows, else ``snapshot``."""
    return "live" if "live" in sources else "snapshot"


def select_source(znodes: DataFrame, source: str) -> DataFrame:
    return znodes.where(F.col("source") == source)


# the bulk tables and the znode kind (``/consumers/<g>/<kind>/...``) each is parsed from
BULK_KINDS = {"core/partition_owners": "owners", "core/zk_offsets": "offsets"}


_CHILD = r"^/consumers/[^/]+/{kind}/[^/]+/[^/]+$"


def is_partition_child(kind: str) -> Column:
    """The path is ``/consumers/<g>/<kind>/<topic>/<name>``: the byte search of
    :func:`may_be_partition_child` first, then one ``rlike`` on the candidates (measured on
    10.4M znodes: 4 CPU-s, against 12 for a ``regexp_extract`` and 17 for ``locate`` chains)."""
    return may_be_partition_child(kind) & F.col("path").rlike(_CHILD.format(kind=kind))


def may_be_partition_child(kind: str) -> Column:
    """A superset of :func:`is_partition_child` for ``kind`` by byte searches only (no copy,
    no regular expression): cheap enough to run on every znode of a tree."""
    return F.col("path").startswith("/consumers/") & F.col("path").contains(f"/{kind}/")


def is_small() -> Column:
    """The znodes the small parsers may need: every znode but the owners and offsets, tested
    by :func:`may_be_partition_child`, which also matches some paths of groups named
    ``owners`` or ``offsets``; their registrations (``/ids/``) are kept. A superset: each
    small parser picks its own rows exactly."""
    bulk = functools.reduce(lambda a, b: a | b, [may_be_partition_child(k) for k in BULK_KINDS.values()])
    return ~bulk | F.col("path").contains("/ids/")


def _value_text() -> tuple[Column, Column]:
    """``text`` (the value as UTF-8) and ``utf8_ok`` columns."""
    text = F.col("data").cast("string")
    return text.alias("text"), F.coalesce(F.is_valid_utf8(text), F.lit(True)).alias("utf8_ok")


def with_path_parts(znodes: DataFrame) -> DataFrame:
    """Adds ``seg`` (path split on '/'), ``depth``, ``text`` (value as UTF-8) and ``utf8_ok``."""
    return znodes.select(
        "path",
        "data",
        "mtime",
        F.split(F.col("path"), "/").alias("seg"),
        (F.size(F.split(F.col("path"), "/")) - 1).alias("depth"),
        *_value_text(),
    )


# --- parsers: znodes (with_path_parts) -> typed rows + reason -------------------------------------


def parse_brokers(z: DataFrame) -> DataFrame:
    """``/brokers/ids/<id>``: 0.8+ JSON, or 0.7 ``[creator:]host:port``."""
    nodes = z.where(_under("brokers", "ids") & (F.col("depth") == 3))
    text = F.trim(F.col("text"))
    is_json = text.startswith("{")
    js = F.from_json(text, BROKER_JSON)
    endpoint = F.get(js["endpoints"], 0)
    ep_host = F.regexp_extract(endpoint, r"^[A-Za-z0-9_]+://(.*):[0-9]+$", 1)
    ep_port = _try_cast(F.regexp_extract(endpoint, r":([0-9]+)$", 1), "int")
    m07 = r"^(?:.*:)?([^:]+):([0-9]+)$"
    host = F.when(is_json, F.coalesce(js["host"], F.nullif(ep_host, F.lit("")))).otherwise(
        F.nullif(F.regexp_extract(text, m07, 1), F.lit(""))
    )
    json_port = F.when(js["port"] >= 0, js["port"])
    port = F.when(is_json, F.coalesce(json_port, ep_port)).otherwise(_try_cast(F.regexp_extract(text, m07, 2), "int"))
    out = nodes.select(
        "path",
        "data",
        _try_cast(_seg(3), "int").alias("broker_id"),
        host.alias("host"),
        port.alias("port"),
        F.when(is_json, F.coalesce(js["endpoints"], F.array().cast("array<string>")))
        .otherwise(F.array().cast("array<string>"))
        .alias("endpoints"),
        is_json.alias("_json"),
        _is_object(text).alias("_obj"),
        F.col("utf8_ok"),
    )
    return out.withColumn(
        "reason",
        _reasons(
            (~F.col("utf8_ok"), "broker registration is not UTF-8"),
            (F.col("broker_id").isNull(), "non-numeric broker id"),
            (F.col("_json") & ~F.col("_obj"), "broker registration is not valid JSON"),
            (F.col("_json") & F.col("host").isNull() & F.col("port").isNull(),
             "broker JSON without host, port or endpoints"),
            (~F.col("_json") & F.col("port").isNull(), "broker registration is neither JSON nor host:port"),
        ),
    ).drop("_json", "_obj", "utf8_ok")


def parse_topics(z: DataFrame) -> DataFrame:
    """Partitions of every topic: 0.8+ ``/brokers/topics/<t>`` JSON (one row per partition, with
    the ``/partitions/<p>/state`` leader and ISR) and 0.7 ``/brokers/topics/<t>/<broker_id>``
    (``nPartitions`` rows for that broker)."""
    topics = z.where(_under("brokers", "topics"))
    text = F.trim(F.col("text"))

    # 0.8+: the topic znode's partition map, one row per partition
    t08 = topics.where((F.col("depth") == 3) & (F.length(text) > 0))
    js = F.from_json(text, TOPIC_JSON)
    t08 = t08.select(
        "path", "data", "utf8_ok", _seg(3).alias("topic"), _is_object(text).alias("_obj"),
        js["partitions"].alias("_parts"),
    )
    head = t08.withColumn(
        "reason",
        _reasons(
            (~F.col("utf8_ok"), "topic metadata is not UTF-8"),
            (~F.col("_obj"), "topic metadata is not valid JSON"),
            (F.col("_parts").isNull(), "topic metadata without a partitions map of replica lists"),
        ),
    )
    good_head = head.where(F.col("reason").isNull()).select(
        "path", "data", "topic", F.explode_outer(F.map_entries("_parts")).alias("_e")
    )
    per_part = good_head.select(
        "path",
        "data",
        "topic",
        _try_cast(F.col("_e.key"), "int").alias("partition"),
        F.col("_e.value").alias("replicas"),
        F.col("_e.key").alias("_key"),
    ).where(F.col("_key").isNotNull())
    per_part = per_part.withColumn(
        "reason",
        F.when(
            F.col("partition").isNull() | (F.col("partition") < 0),
            F.concat(F.lit("non-numeric partition id '"), F.col("_key"), F.lit("' in topic metadata")),
        ),
    )
    bad_head = head.where(F.col("reason").isNotNull()).select(
        "path", "data", "topic", F.lit(None).cast("int").alias("partition"),
        F.lit(None).cast("array<int>").alias("replicas"), "reason",
    )

    # 0.8+: partition state
    st = topics.where((F.col("depth") == 6) & (_seg(4) == "partitions") & (_seg(6) == "state"))
    sjs = F.from_json(F.trim(F.col("text")), STATE_JSON)
    st = st.select(
        "path",
        "data",
        _seg(3).alias("topic"),
        F.when(_seg(5).rlike("^[0-9]+$"), _try_cast(_seg(5), "int")).alias("partition"),
        sjs["leader"].alias("leader"),
        sjs["leader_epoch"].alias("leader_epoch"),
        sjs["isr"].alias("isr"),
        _is_object(F.trim(F.col("text"))).alias("_obj"),
        "utf8_ok",
    ).withColumn(
        "reason",
        _reasons(
            (~F.col("utf8_ok"), "partition state is not UTF-8"),
            (F.col("partition").isNull(), "non-numeric partition id in state path"),
            (~F.col("_obj"), "partition state is not valid JSON"),
            (F.col("leader").isNull(), "partition state without a numeric leader"),
        ),
    )

    # 0.7: /brokers/topics/<t>/<broker_id> -> nPartitions
    t07 = topics.where((F.col("depth") == 4) & (_seg(4) != "partitions"))
    nparts = F.when(F.trim(F.col("text")).rlike("^[0-9]+$"), _try_cast(F.trim(F.col("text")), "int"))
    t07 = t07.select(
        "path",
        "data",
        _seg(3).alias("topic"),
        F.when(_seg(4).rlike("^[0-9]+$"), _try_cast(_seg(4), "int")).alias("broker_id"),
        nparts.alias("_n"),
        "utf8_ok",
    ).withColumn(
        "reason",
        _reasons(
            (F.col("broker_id").isNull(), "non-numeric broker id under a 0.7 topic"),
            (~F.col("utf8_ok") | F.col("_n").isNull(), "0.7 partition count is not a number"),
            (F.col("_n") > 1_000_000, "implausible 0.7 partition count"),
        ),
    )

    good_parts = per_part.where(F.col("reason").isNull()).drop("reason", "_key", "path", "data")
    good_state = st.where(F.col("reason").isNull()).select("topic", "partition", "leader", "leader_epoch", "isr")
    joined08 = good_parts.join(good_state, ["topic", "partition"], "full_outer").select(
        "topic", "partition", F.lit(None).cast("int").alias("broker_id"), "replicas", "leader", "leader_epoch", "isr"
    )
    rows07 = t07.where(F.col("reason").isNull()).select(
        "topic",
        F.explode(F.sequence(F.lit(0), F.col("_n") - 1)).alias("partition"),
        "broker_id",
        F.lit(None).cast("array<int>").alias("replicas"),
        F.lit(None).cast("int").alias("leader"),
        F.lit(None).cast("int").alias("leader_epoch"),
        F.lit(None).cast("array<int>").alias("isr"),
    ).where(F.col("partition") >= 0)
    good = joined08.unionByName(rows07).withColumn("path", F.lit(None).cast("string")).withColumn(
        "data", F.lit(None).cast("binary")
    ).withColumn("reason", F.lit(None).cast("string"))
    cols = ["path", "data", "reason"]
    bad = (
        bad_head.select(*cols)
        .unionByName(per_part.where(F.col("reason").isNotNull()).select(*cols))
        .unionByName(st.where(F.col("reason").isNotNull()).select(*cols))
        .unionByName(t07.where(F.col("reason").isNotNull()).select(*cols))
    )
    typed = ["topic", "partition", "broker_id", "replicas", "leader", "leader_epoch", "isr"]
    types = ["string", "int", "int", "array<int>", "int", "int", "array<int>"]
    nulls = [F.lit(None).cast(t).alias(c) for c, t in zip(typed, types, strict=True)]
    return good.select(*cols, *typed).unionByName(bad.select(*cols, *nulls))


def _topic_filter(regex: Column) -> Column:
    """``TopicFilter``'s regex as a full-match pattern for ``regexp_like``."""
    cleaned = F.regexp_replace(F.regexp_replace(F.trim(regex), ",", "|"), " ", "")
    cleaned = F.regexp_replace(F.regexp_replace(cleaned, "^[\"']+", ""), "[\"']+$", "")
    return F.concat(F.lit("^(?:"), cleaned, F.lit(")$"))


def _compiles(pattern: Column) -> Column:
    return F.try_reflect(F.lit("java.util.regex.Pattern"), F.lit("compile"), pattern).isNotNull()


def _bad_streams(streams: Column) -> Column:
    return streams.isNull() | (streams < 0) | (streams > MAX_STREAMS)


def _registration_entries(nodes: DataFrame) -> DataFrame:
    """Each good registration's subscription entries (``_e``: topic, or a wildcard's filter ->
    streams; ``_wild``, ``_pattern``) and each bad registration as one row with its ``reason``."""
    nodes = nodes.withColumn("_text", F.trim(F.col("text")))
    text = F.col("_text")
    v08 = F.from_json(text, REGISTRATION_JSON)
    doc = F.from_json(text, "map<string, string>")
    is08 = text.contains('"subscription"')
    head = nodes.select(
        "path",
        "data",
        "utf8_ok",
        _seg(2).alias("group_id"),
        _seg(4).alias("consumer_id"),
        F.when(is08, v08["subscription"])
        .otherwise(F.transform_values(doc, lambda _, v: v.try_cast("int")))
        .alias("_subs"),
        F.when(is08, F.coalesce(v08["pattern"], F.lit("static"))).otherwise(F.lit("static")).alias("_pattern"),
        "_text",
    )
    wild = F.col("_pattern").isin(*TOPIC_FILTERS)
    head = head.withColumn(
        "reason",
        _reasons(
            (~F.col("utf8_ok"), "consumer registration is not UTF-8"),
            (F.col("_subs").isNull() & doc.isNull(), "consumer registration is not valid JSON"),
            (F.col("_subs").isNull(), "consumer registration without a {topic: streams} subscription"),
            (
                ~F.col("_pattern").isin("static", *TOPIC_FILTERS),
                F.concat(F.lit("unknown subscription pattern '"), F.col("_pattern"), F.lit("'")),
            ),
            (wild & (F.size("_subs") != 1), "wildcard subscription without exactly one topic filter"),
            (wild & ~_compiles(_topic_filter(F.get(F.map_keys("_subs"), 0))),
             "wildcard topic filter is not a valid regex"),
            (wild & _bad_streams(F.get(F.map_values("_subs"), 0)),
             "invalid stream count for the wildcard topic filter"),
        ),
    )
    # one pass: good registrations explode into their entries, a bad one stays one row
    return head.select(
        "path", "data", "group_id", "consumer_id", "reason", wild.alias("_wild"), "_pattern",
        F.explode_outer(F.when(F.col("reason").isNull(), F.map_entries("_subs"))).alias("_e"),
    ).where(F.col("reason").isNotNull() | F.col("_e").isNotNull())


def parse_registrations(z: DataFrame) -> DataFrame:
    """``/consumers/<g>/ids/<consumer_id>``: one row per (consumer, topic) with its stream count.
    A value naming a ``"subscription"`` is read as 0.8+ (one parse, straight into the
    subscription map and pattern); any other value as the 0.7 ``{topic: streams}`` map. Only a
    value that yields no subscription is parsed again, as a map of strings, to tell invalid
    JSON from a document without a usable subscription. A wildcard registration becomes one
    row per topic of the tree its filter lets through (see the module docstring)."""
    nodes = z.where(_under("consumers") & (_seg(3) == "ids") & (F.col("depth") == 4))
    rows = _registration_entries(nodes)
    entries = rows.where(~F.col("_wild") | F.col("reason").isNotNull()).withColumn("_topic", F.col("_e.key"))
    # the wildcard filters, parsed again from the few registrations that name a "..._list"
    # pattern (a byte search), so that broadcasting them does not parse every registration twice
    filters = _registration_entries(nodes.where(F.col("text").contains('_list"')))
    filters = filters.where(F.col("_wild") & F.col("reason").isNull())
    topics = z.where(_under("brokers", "topics") & (F.col("depth") == 3)).select(_seg(3).alias("_topic"))
    allowed = F.regexp_like(F.col("_topic"), _topic_filter(F.col("_e.key"))) == (F.col("_pattern") == "white_list")
    expanded = F.broadcast(filters).join(topics, allowed & ~F.col("_topic").isin(*sorted(INTERNAL_TOPICS)))
    streams = F.col("_e.value")
    return entries.unionByName(expanded).select(
        "path",
        "data",
        "group_id",
        "consumer_id",
        F.col("_topic").alias("topic"),
        streams.alias("streams"),
        F.coalesce(
            F.col("reason"),
            F.when(_bad_streams(streams),
                   F.concat(F.lit("invalid stream count for topic '"), F.col("_topic"), F.lit("'"))),
        ).alias("reason"),
    )


def _parse_partition_children(z: DataFrame, kind: str) -> DataFrame:
    part, broker, ok = _partition_name(F.substring_index("path", "/", -1))
    return z.where(is_partition_child(kind)).select(
        "path",
        "data",
        "mtime",
        *_value_text(),
        F.substring_index(F.substring_index("path", "/", 3), "/", -1).alias("group_id"),
        F.substring_index(F.substring_index("path", "/", -2), "/", 1).alias("topic"),
        part.alias("partition"),
        broker.alias("broker_id"),
        ok.alias("_name_ok"),
    )


def parse_owners(z: DataFrame) -> DataFrame:
    """``/consumers/<g>/owners/<t>/<p>`` -> owner thread id."""
    nodes = _parse_partition_children(z, "owners")
    return nodes.select(
        "path", "data", "group_id", "topic", "partition", "broker_id", F.col("text").alias("owner"),
        _reasons(
            (~F.col("_name_ok"), "owner znode name is not a canonical partition id or broker-partition"),
            (~F.col("utf8_ok"), "owner value is not UTF-8"),
            (F.col("text").isNull(), "owner znode without a value"),
        ).alias("reason"),
    )


def parse_offsets(z: DataFrame) -> DataFrame:
    """``/consumers/<g>/offsets/<t>/<p>`` -> committed offset (decimal string)."""
    nodes = _parse_partition_children(z, "offsets")
    text = F.trim(F.col("text"))
    offset = F.when(text.rlike("^-?[0-9]+$"), _try_cast(text, "bigint"))
    return nodes.select(
        "path", "data", "group_id", "topic", "partition", "broker_id", offset.alias("committed_offset"), "mtime",
        _reasons(
            (~F.col("_name_ok"), "offset znode name is not a canonical partition id or broker-partition"),
            (~F.col("utf8_ok"), "offset value is not UTF-8"),
            (offset.isNull(), "non-numeric offset"),
        ).alias("reason"),
    )


def parse_cluster(z: DataFrame) -> DataFrame:
    """``/cluster/id``, ``/controller`` and ``/admin/delete_topics/*`` -> at most one row (none
    when the run has no znodes at all)."""
    text = F.trim(F.col("text"))
    is_id = F.col("path") == "/cluster/id"
    is_ctrl = F.col("path") == "/controller"
    ctrl = F.when(text.rlike("^[0-9]+$"), _try_cast(text, "int")).otherwise(
        F.from_json(text, CONTROLLER_JSON)["brokerid"]
    )
    cid = F.from_json(text, CLUSTER_ID_JSON)["id"]
    rows = z.select(
        "path",
        "data",
        F.when(is_id, cid).alias("cluster_id"),
        F.when(is_ctrl, ctrl).alias("controller_id"),
        F.when(_under("admin", "delete_topics") & (F.col("depth") == 3), _seg(3)).alias("_deleting"),
        _reasons(
            (is_id & (~F.col("utf8_ok") | cid.isNull()), "cluster id is not {\"id\": ...} JSON"),
            (is_ctrl & (~F.col("utf8_ok") | ctrl.isNull()),
             "controller is neither a broker id nor {\"brokerid\": N} JSON"),
        ).alias("reason"),
    )
    good = rows.where(F.col("reason").isNull()).agg(
        F.count(F.lit(1)).alias("_n"),
        F.max("cluster_id").alias("cluster_id"),
        F.max("controller_id").alias("controller_id"),
        F.sort_array(F.collect_set("_deleting")).alias("pending_topic_deletions"),
    )
    good = good.where(F.col("_n") > 0).select(
        F.lit(None).cast("string").alias("path"),
        F.lit(None).cast("binary").alias("data"),
        "cluster_id",
        "controller_id",
        "pending_topic_deletions",
        F.lit(None).cast("string").alias("reason"),
    )
    bad = rows.where(F.col("reason").isNotNull()).select(
        "path",
        "data",
        F.lit(None).cast("string").alias("cluster_id"),
        F.lit(None).cast("int").alias("controller_id"),
        F.lit(None).cast("array<string>").alias("pending_topic_deletions"),
        "reason",
    )
    return good.unionByName(bad)


# parsers of the small remainder (input: with_path_parts of the is_small znodes)
SMALL_PARSERS = {
    "core/brokers": parse_brokers,
    "core/topic_partitions": parse_topics,
    "core/consumer_registrations": parse_registrations,
    "core/cluster": parse_cluster,
}
# parsers of the bulk (input: any znodes frame with path, data, mtime), by BULK_KINDS
BULK_PARSERS = {
    "core/partition_owners": parse_owners,
    "core/zk_offsets": parse_offsets,
}
PARSERS = {**SMALL_PARSERS, **BULK_PARSERS}


def good(parsed: DataFrame) -> DataFrame:
    return parsed.where(F.col("reason").isNull())


def quarantine(parsed: DataFrame) -> DataFrame:
    """Bad rows of a parser's output as ``raw/quarantine`` rows."""
    return spark_rows(parsed.where(F.col("reason").isNotNull()), QUARANTINE_SOURCE, "path", "reason", "data")
