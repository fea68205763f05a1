"""What the report says about a KRaft cluster's metadata (``kaudit extract kraft``): partitions
whose ISR is below ``min.insync.replicas``, topics deleted while groups still committed to them,
and a summary of ``marts/metadata_history``. Plain Python values read with pyarrow.

``min.insync.replicas`` of a partition is the first of: the topic's config, the dynamic config
of the partition's leader broker, the cluster-wide broker default (resource name ``''``), and
Kafka's default, 1 (``raw/kraft_configs``: the state the replay reached). Static
``server.properties`` values are not in the metadata log, so a broker's static setting is not
seen."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc

from pipelines.report.order import nulls_last
from pipelines.warehouse.reading import read_built
from pipelines.warehouse.warehouse import Warehouse

KAFKA_MIN_ISR = 1
MIN_ISR = "min.insync.replicas"
TIMELINE_ROWS = 20
# events worth listing one by one in the timeline (the rest are counted)
NOTABLE_EVENTS = ("topic_created", "topic_recreated", "topic_deleted", "broker_registered", "broker_unregistered",
                  "broker_fenced", "broker_unfenced", "broker_controlled_shutdown")


@dataclass
class MetadataFacts:
    records: int
    partitions: int
    under_min_isr: list[dict]  # topic, topic_id, partition, leader, replicas, isr, min_isr, min_isr_from
    deleted_with_commits: list[dict]  # group_id, topic, topic_id, partition, deleted_at, commits, last_commit_at, ...
    timeline: list[dict] | None  # event, count, first_at, last_at; None: marts/metadata_history not built
    notable: list[dict] = field(default_factory=list)  # the latest NOTABLE_EVENTS rows of the mart
    notable_total: int = 0


def min_insync_replicas(configs: list[dict]):
    """A function (topic, leader) -> (min.insync.replicas, where it comes from), from
    ``raw/kraft_configs`` rows."""
    topic, broker = {}, {}
    for c in configs:
        if c["name"] != MIN_ISR or c["value"] is None:
            continue
        try:
            value = int(c["value"])
        except ValueError:
            continue
        if c["resource_type"] == "topic":
            topic[c["resource_name"]] = value
        elif c["resource_type"] == "broker":
            broker[c["resource_name"]] = value

    def resolve(name: str | None, leader: int | None) -> tuple[int, str]:
        if name in topic:
            return topic[name], "topic config"
        if leader is not None and str(leader) in broker:
            return broker[str(leader)], f"broker {leader} config"
        if "" in broker:
            return broker[""], "cluster broker default"
        return KAFKA_MIN_ISR, "Kafka default"

    return resolve


def _under_min_isr(partitions: list[dict], configs: list[dict]) -> list[dict]:
    resolve = min_insync_replicas(configs)
    out = []
    for p in partitions:
        need, source = resolve(p["topic"], p["leader"])
        isr = p["isr"] or []
        if len(isr) < need:
            out.append({"topic": p["topic"], "topic_id": p["topic_id"], "partition": p["partition"],
                        "leader": p["leader"], "replicas": p["replicas"] or [], "isr": isr, "min_isr": need,
                        "min_isr_from": source})
    out.sort(key=lambda r: nulls_last(len(r["isr"]) - r["min_isr"], r["topic"], r["partition"]))
    return out


def _deleted_with_commits(topics: list[dict], commits: list[dict]) -> list[dict]:
    """Commits to a topic name after its RemoveTopicRecord and before the name was created
    again (a re-created topic is another topic): one row per (group, topic id, partition)."""
    by_name: dict[str, list[dict]] = defaultdict(list)
    for t in topics:
        by_name[t["topic"]].append(t)
    windows = []  # (name, topic id, deleted_at, recreated_at or None)
    for name, ids in by_name.items():
        for t in ids:
            if t["deleted_at"] is None:
                continue
            later = [u["created_at"] for u in ids if u["created_at"] is not None and u["created_at"] >= t["deleted_at"]
                     and u["topic_id"] != t["topic_id"]]
            windows.append((name, t["topic_id"], t["deleted_at"], min(later) if later else None))
    if not windows:
        return []
    hits: dict[tuple, dict] = {}
    by_topic = defaultdict(list)
    for w in windows:
        by_topic[w[0]].append(w)
    for c in commits:
        for name, tid, deleted_at, recreated_at in by_topic.get(c["topic"], ()):
            at = c["commit_timestamp"]
            if at is None or at <= deleted_at or (recreated_at is not None and at >= recreated_at):
                continue
            key = (c["group_id"], name, tid, c["partition"])
            h = hits.setdefault(key, {"group_id": c["group_id"], "topic": name, "topic_id": tid,
                                      "partition": c["partition"], "deleted_at": deleted_at,
                                      "recreated_at": recreated_at, "commits": 0, "last_commit_at": at,
                                      "last_offset": c["committed_offset"]})
            h["commits"] += 1
            if at >= h["last_commit_at"]:
                h["last_commit_at"], h["last_offset"] = at, c["committed_offset"]
    return sorted(hits.values(), key=lambda h: nulls_last(h["group_id"], h["topic"], h["partition"]))


def _timeline(history) -> tuple[list[dict] | None, list[dict], int]:
    if history is None:
        return None, [], 0
    counts = history.group_by("event").aggregate([([], "count_all"), ("event_at", "min"), ("event_at", "max")])
    timeline = [{"event": r["event"], "count": r["count_all"], "first_at": r["event_at_min"],
                 "last_at": r["event_at_max"]} for r in counts.to_pylist()]
    timeline.sort(key=lambda r: nulls_last(NOTABLE_EVENTS.index(r["event"]) if r["event"] in NOTABLE_EVENTS else 99,
                                           r["event"]))
    notable = history.filter(pc.is_in(history["event"], value_set=pa.array(NOTABLE_EVENTS)))
    rows = notable.sort_by([("metadata_offset", "descending")]).slice(0, TIMELINE_ROWS).to_pylist()
    return timeline, rows, notable.num_rows


def gather_metadata(wh: Warehouse, run_id: str, read) -> MetadataFacts | None:
    """The run's KRaft facts, or None when the run has no KRaft metadata. ``read`` is the
    report's reader of raw tables (``facts._read``)."""
    records = read(wh, "raw/metadata_records", run_id, ["offset"]).num_rows
    partitions = read(wh, "raw/kraft_partitions", run_id, ["topic", "topic_id", "partition", "leader", "replicas",
                                                           "isr"]).to_pylist()
    if not records and not partitions:
        return None
    configs = read(wh, "raw/kraft_configs", run_id, ["resource_type", "resource_name", "name", "value"]).to_pylist()
    topics = read(wh, "raw/kraft_topics", run_id, ["topic_id", "topic", "created_at", "deleted_at"]).to_pylist()
    commits = []
    if any(t["deleted_at"] is not None for t in topics):
        deleted = sorted({t["topic"] for t in topics if t["deleted_at"] is not None and t["topic"] is not None})
        table = read(wh, "raw/offset_commits", run_id, ["group_id", "topic", "partition", "committed_offset",
                                                         "commit_timestamp", "is_tombstone", "txn_state"])
        table = table.filter(pc.is_in(table["topic"], value_set=pa.array(deleted, pa.string())))
        commits = [c for c in table.to_pylist()
                   if not c["is_tombstone"] and c["txn_state"] not in ("aborted", "pending")]
    timeline, notable, notable_total = _timeline(read_built(wh, "marts/metadata_history", run_id))
    return MetadataFacts(records, len(partitions), _under_min_isr(partitions, configs),
                         _deleted_with_commits(topics, commits), timeline, notable, notable_total)

