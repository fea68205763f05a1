"""Expected results computed from what a test wrote, by rules transcribed from CONTRACT.md
(``assignment_audit`` status, the marts) and FORMATS.md sec. 5 (the range assignor), sharing
no code with ``pipelines``.

- :func:`zk_audit`: the audit rows of a ZooKeeper ``{path: data}`` tree (0.8+ and 0.7 layouts).
- :func:`kafka_audit`: the audit rows of Kafka groups from their latest generation's members
  (objects with ``member_id``, ``instance_id``, ``topics`` and ``assigned``).
- :func:`expected_marts`: offset regressions, consumer lag and offset-storage drift from the
  commits a test wrote (objects with ``group``, ``topic``, ``partition``, ``offset``,
  ``commit_ts``, ``log_offset``, ``txn`` and ``corrupt``).
- :func:`zk_states`: every state of the ZooKeeper groups a recorded history of registration
  and owner changes touches, with the audit of the owners each ended with.
- :func:`kafka_rebalances`: every generation of Kafka groups as a rebalance, with its trigger.
- :func:`storms`: the rebalances with more than N of their group in the hour up to them.
"""

from __future__ import annotations

import json
from collections import defaultdict

STATUSES = ("duplicate_owner", "unexpected_partition", "unknown_owner", "unowned", "wrong_owner", "ok")


def range_assign(partitions: list, consumers: list[str]) -> dict:
    """partition -> consumer; both lists already in the assignor's order."""
    out = {}
    if not consumers:
        return out
    per, extra = divmod(len(partitions), len(consumers))
    for i, c in enumerate(consumers):
        start = per * i + min(i, extra)
        for part in partitions[start : start + per + (1 if i < extra else 0)]:
            out[part] = c
    return out


def audit_status(expected: str | None, observed: list[str], in_metadata: bool, registered: set[str]) -> str:
    owners = set(observed)
    if len(owners) > 1:
        return "duplicate_owner"
    if owners and not in_metadata:
        return "unexpected_partition"
    if owners and not owners <= registered:
        return "unknown_owner"
    if expected is not None and not owners:
        return "unowned"
    if owners and owners != {expected}:
        return "wrong_owner"
    return "ok"


def audit_row(source: str, group_id: str, topic: str, partition: int, broker_id: int | None,
              expected: str | None, observed: list[str], in_metadata: bool, registered: set[str]) -> dict:
    """One ``assignment_audit`` row: the expected and observed owners and their :func:`audit_status`."""
    return dict(source=source, group_id=group_id, topic=topic, partition=partition, broker_id=broker_id,
                expected_owner=expected, observed_owners=observed,
                status=audit_status(expected, observed, in_metadata, registered))


def kafka_group_rows(group_id: str, expected: dict, observed: dict, partitions: set, subscribed: set,
                     registered: set[str]) -> list[dict]:
    """The audit rows of one Kafka group, one per (topic, partition) expected or observed, sorted;
    ``expected``: (topic, partition) -> member, ``observed``: (topic, partition) -> members; a
    partition is in the metadata when it is one of ``partitions`` and its topic is ``subscribed``."""
    return [audit_row("kafka", group_id, t, p, None, expected.get((t, p)), sorted(observed.get((t, p), [])),
                      (t, p) in partitions and t in subscribed, registered)
            for t, p in sorted(set(expected) | set(observed))]


def zk_audit(tree: dict[str, bytes]) -> list[dict]:
    """Audit rows of the ZooKeeper groups from a {path: data} walk of the tree."""

    def children(path: str) -> list[str]:
        prefix = path.rstrip("/") + "/"
        return sorted({p[len(prefix) :].split("/")[0] for p in tree if p.startswith(prefix)})

    # topic metadata: topic -> sorted [(broker_id | None, partition)]
    meta: dict[str, list] = {}
    for topic in children("/brokers/topics"):
        base = f"/brokers/topics/{topic}"
        if tree[base]:
            meta[topic] = sorted((None, int(p)) for p in json.loads(tree[base])["partitions"])
        else:  # 0.7: /brokers/topics/<t>/<broker_id> -> nPartitions
            meta[topic] = sorted((int(b), p) for b in children(base) for p in range(int(tree[f"{base}/{b}"].decode())))

    def part_key(name: str):
        if "-" in name:
            b, p = name.split("-", 1)
            return int(b), int(p)
        return None, int(name)

    rows = []
    for group in children("/consumers"):
        threads_by_topic: dict[str, list[str]] = defaultdict(list)
        for cid in children(f"/consumers/{group}/ids"):
            reg = json.loads(tree[f"/consumers/{group}/ids/{cid}"])
            subs = reg["subscription"] if "subscription" in reg else reg
            for topic, streams in subs.items():
                threads_by_topic[topic] += [f"{cid}-{n}" for n in range(int(streams))]
        registered = {t for ts in threads_by_topic.values() for t in ts}
        expected: dict[tuple, str] = {}
        for topic, threads in threads_by_topic.items():
            for (b, p), owner in range_assign(meta.get(topic, []), sorted(threads)).items():
                expected[(topic, b, p)] = owner
        observed: dict[tuple, list[str]] = {}
        for topic in children(f"/consumers/{group}/owners"):
            for name in children(f"/consumers/{group}/owners/{topic}"):
                b, p = part_key(name)
                observed[(topic, b, p)] = [tree[f"/consumers/{group}/owners/{topic}/{name}"].decode()]
        for key in sorted(set(expected) | set(observed), key=lambda k: (k[0], k[1] or -1, k[2])):
            topic, b, p = key
            in_meta = (b, p) in meta.get(topic, []) and topic in threads_by_topic
            rows.append(audit_row("zookeeper", group, topic, p, b, expected.get(key), observed.get(key, []), in_meta,
                                  registered))
    return rows


def kafka_audit(groups: list, topics: dict[str, int], tombstoned: set[str]) -> list[dict]:
    """Audit rows of the Kafka groups from their latest GroupMetadata (RangeAssignor); ``topics``:
    name -> number of partitions."""
    partitions = {(t, p) for t, n in topics.items() for p in range(n)}
    rows = []
    for g in groups:
        if not g.generations or g.name in tombstoned:
            continue
        members = g.generations[-1].members
        registered = {m.member_id for m in members}
        order = sorted(members, key=lambda m: (m.instance_id is None, m.instance_id or "", m.member_id))
        expected, observed = {}, defaultdict(list)
        for topic in sorted({t for m in members for t in m.topics}):
            subs = [m.member_id for m in order if topic in m.topics]
            for p, owner in range_assign(list(range(topics[topic])), subs).items():
                expected[(topic, p)] = owner
        for m in members:
            for topic, ps in m.assigned.items():
                for p in ps:
                    observed[(topic, p)].append(m.member_id)
        rows += kafka_group_rows(g.name, expected, observed, partitions, {t for m in members for t in m.topics},
                                 registered)
    return rows


def effective(commits: list) -> list:
    """Commits that the decoder sees (not corrupt) and that count: not aborted, not pending."""
    return [c for c in commits if not c.corrupt and c.txn not in ("aborted", "pending")]


def expected_marts(commits: list, zk_tree: dict[str, bytes], log_ends: dict) -> dict:
    eff = sorted(effective(commits), key=lambda c: (c.group, c.topic, c.partition, c.log_offset))
    regressions, latest = [], {}
    prev: dict[tuple, object] = {}
    for c in eff:
        key = (c.group, c.topic, c.partition)
        if c.offset is None:  # a tombstone deletes the offset
            latest.pop(key, None)
            prev.pop(key, None)
            continue
        if key in prev and c.offset < prev[key].offset:
            regressions.append(
                dict(
                    group_id=c.group,
                    topic=c.topic,
                    partition=c.partition,
                    log_offset=c.log_offset,
                    previous_committed_offset=prev[key].offset,
                    committed_offset=c.offset,
                    regressed_by=prev[key].offset - c.offset,
                    committed_at=c.commit_ts,
                )
            )
        prev[key] = c
        latest[key] = c

    def end_of(topic, p):
        e = log_ends.get(f"{topic}-{p}")
        return e["log_end_offset"] if e else None

    lag = []
    for (g, t, p), c in sorted(latest.items()):
        e = end_of(t, p)
        lag.append(
            dict(
                source="kafka",
                group_id=g,
                topic=t,
                partition=p,
                committed_offset=c.offset,
                log_end_offset=e,
                lag=None if e is None else e - c.offset,
                committed_at=c.commit_ts,
            )
        )
    zk_offs = {}
    for path, data in zk_tree.items():
        parts = path.split("/")
        if len(parts) == 6 and parts[1] == "consumers" and parts[3] == "offsets":
            g, t, name = parts[2], parts[4], parts[5]
            broker, p = (int(name.split("-")[0]), int(name.split("-")[1])) if "-" in name else (None, int(name))
            zk_offs[(g, t, broker, p)] = int(data)
            e = end_of(t, p) if broker is None else None
            lag.append(
                dict(
                    source="zookeeper",
                    group_id=g,
                    topic=t,
                    partition=p,
                    broker_id=broker,
                    committed_offset=int(data),
                    log_end_offset=e,
                    lag=None if e is None else e - int(data),
                    committed_at=None,
                )
            )
    drift = []
    for (g, t, b, p), zk in sorted(zk_offs.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][3])):
        if (g, t, p) in latest and b is None:
            k = latest[(g, t, p)].offset
            drift.append(dict(group_id=g, topic=t, partition=p, zk_offset=zk, kafka_offset=k, drift=k - zk))
    return dict(offset_regressions=regressions, consumer_lag=lag, offset_storage_drift=drift)


def settled_status(expected: str | None, observed: str | None) -> str:
    """The status of a partition at the end of a past state (``core/settled_audit``)."""
    if expected is None:
        return "ok" if observed is None else "unexpected_partition"
    if observed is None:
        return "unowned"
    return "ok" if observed == expected else "wrong_owner"


def zk_states(changes: list, topics: dict[str, int | dict[int, int]], end_ms: int, window_ms: int) -> list[dict]:
    """Every state of each group in ``changes`` (objects with ``zxid``, ``mtime``, ``op``, ``path``
    and ``value``; only the creates and deletes of ``/consumers/<g>/ids/*`` and
    ``/owners/<t>/<p>`` are read, offset writes are left out; no broker or topic change among
    them): a state starts at each change of the group's registrations and lasts until the next;
    its expected owners are the range assignment over the threads registered at its start (0.8+
    registrations ``{"subscription": {topic: streams}}``, 0.7 ones ``{topic: streams}``), the
    owners it ended with are those written before the next state; ``audit`` holds the partitions
    either names. ``topics``: topic -> its partition count (0.8+), or {broker_id: partitions}
    (0.7: partitions named ``broker-partition``, ordered by broker then partition, as the
    strings sort). Settled: it ended with every expected partition owned, and its last owner
    change (else its start) is ``window_ms`` or more before the next state (the last state:
    ``end_ms``, the history's last txn time)."""

    def partitions(topic: str) -> list[tuple[int | None, int]]:
        n = topics.get(topic, 0)
        if isinstance(n, dict):
            return sorted((b, p) for b, k in n.items() for p in range(k))
        return [(None, p) for p in range(n)]

    def part_key(name: str) -> tuple[int | None, int]:
        if "-" in name:
            b, p = name.split("-", 1)
            return int(b), int(p)
        return None, int(name)

    def kind(path: str) -> str | None:
        parts = path.split("/")
        if len(parts) == 5 and parts[3] == "ids":
            return "ids"
        if len(parts) == 6 and parts[3] == "owners":
            return "owners"
        return None

    by_group: dict[str, list] = defaultdict(list)
    for c in sorted(changes, key=lambda c: c.zxid):
        if kind(c.path):
            by_group[c.path.split("/")[2]].append(c)
    out = []
    for group, cs in sorted(by_group.items()):
        starts = {c.zxid: c.mtime for c in cs if kind(c.path) == "ids"}
        zxids = sorted(starts)
        for k, start in enumerate(zxids):
            end = zxids[k + 1] if k + 1 < len(zxids) else None
            regs, owners, changed = {}, {}, starts[start]
            for c in cs:
                if kind(c.path) == "ids" and c.zxid <= start:
                    cid = c.path.rsplit("/", 1)[1]
                    if c.op == "delete":
                        regs.pop(cid, None)
                    else:
                        reg = json.loads(c.value)
                        regs[cid] = reg["subscription"] if "subscription" in reg else reg
                elif kind(c.path) == "owners" and (end is None or c.zxid < end):
                    if c.zxid > start:
                        changed = c.mtime  # None for a delete: the server returns no time for it
                    key = (c.path.split("/")[4], *part_key(c.path.split("/")[5]))
                    if c.op == "delete":
                        owners.pop(key, None)
                    else:
                        owners[key] = c.value.decode()
            if changed is None:
                raise ValueError(f"group {group}: the state at zxid {start} ends with a delete, whose time is unknown")
            threads = defaultdict(list)
            for cid, sub in regs.items():
                for topic, streams in sub.items():
                    threads[topic] += [f"{cid}-{n}" for n in range(int(streams))]
            expected = {
                (topic, b, p): owner
                for topic, ts in threads.items()
                for (b, p), owner in range_assign(partitions(topic), sorted(ts)).items()
            }
            audit = [
                dict(
                    topic=t,
                    partition=p,
                    broker_id=b,
                    expected_owner=expected.get((t, b, p)),
                    observed_owner=owners.get((t, b, p)),
                    status=settled_status(expected.get((t, b, p)), owners.get((t, b, p))),
                )
                for t, b, p in sorted(set(expected) | set(owners), key=lambda k: (k[0], k[1] or -1, k[2]))
            ]
            out.append(
                dict(
                    source="zookeeper",
                    group_id=group,
                    state_zxid=start,
                    next_zxid=end,
                    started_at=starts[start],
                    next_at=starts.get(end),
                    settled=all(a["status"] != "unowned" for a in audit)
                    and (end_ms if end is None else starts[end]) - changed >= window_ms,
                    wrong_owner_partitions=sum(a["status"] == "wrong_owner" for a in audit),
                    audit=audit,
                )
            )
    return out


def kafka_rebalances(generations: list[tuple[str, int, int, set[str]]]) -> list[dict]:
    """Each (group, generation, state timestamp ms, member ids) as a rebalance: its trigger from
    the members of the group's generation before (``first``, ``member_joined``, ``member_left``,
    ``members_replaced``, ``same_members``)."""
    out, before = [], {}
    for group, gen, at, members in sorted(generations, key=lambda g: (g[0], g[2])):
        prev = before.get(group)
        joined, left = (members - prev, prev - members) if prev is not None else (set(), set())
        trigger = (
            "first"
            if prev is None
            else "members_replaced"
            if joined and left
            else "member_joined"
            if joined
            else "member_left"
            if left
            else "same_members"
        )
        out.append(dict(source="kafka", group_id=group, generation=gen, started_at=at, trigger=trigger))
        before[group] = members
    return out


def storms(rebalances: list[dict], per_hour: int) -> dict[tuple[str, str], list[int]]:
    """(source, group) -> the number of the group's rebalances in the hour up to each of its
    rebalances (started_at ms), for the groups where one exceeds ``per_hour``."""
    by_group = defaultdict(list)
    for r in rebalances:
        by_group[(r["source"], r["group_id"])].append(r["started_at"])
    out = {}
    for key, starts in by_group.items():
        counts_ = [sum(1 for s in starts if t - 3_600_000 < s <= t) for t in sorted(starts)]
        if max(counts_) > per_hour:
            out[key] = counts_
    return out


def counts(rows: list[dict], source: str) -> dict[str, int]:
    out = {s: 0 for s in STATUSES}
    for r in rows:
        if r["source"] == source:
            out[r["status"]] += 1
    return out
