"""Scenarios on real KRaft clusters (Kafka 3.9 and 4.x), and what each expects of the audit.

A scenario drives the cluster through ``testkit.cluster.kraft_driver.Driver`` (real clients of
the same release), asks the cluster for its own answers (``describe``: Admin API) while it
still runs, and records in ``Planted`` the faults it made on purpose (which group it reset, how
many records it deleted under which group, ...): those two are the oracle. ``run_scenario``
then stops the brokers (SIGTERM, or ``kill -9`` when the scenario says so) and hands back the
data dirs for kaudit.

Scenarios:

- ``classic``: classic-protocol groups with every client assignor (range, roundrobin, sticky,
  cooperative-sticky after a member left, static members), alive when the brokers stop; a
  group reset to the earliest offsets by ``kafka-consumer-groups --reset-offsets``; a group
  whose committed offset falls below the log start after ``DeleteRecords``; a group that
  committed to a topic that was then deleted; lag behind producers. Clean shutdown.
- ``kip848`` (4.x): KIP-848 groups (``group.protocol=consumer``) on the server assignors
  uniform and range, a regex subscription, a member that left, a classic group beside them;
  offsets committed in transactions (one committed, one aborted); lag. The brokers are killed
  (``kill -9``).
- ``ops``: three brokers (node 1 also the controller): a reassignment, a broker fenced and
  unfenced, one left stopped (fenced), a topic deleted and re-created with fewer partitions, a
  group through it all. The brokers are killed (``kill -9``: the metadata log ends as the
  cluster's last answer saw it).
"""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from testkit.cluster.kafka import KafkaCluster
from testkit.cluster.kraft_driver import GROUP_COMMAND, Driver, tool

# brokers write their log-start checkpoints often, so DeleteRecords reaches the disk before a kill
CHECKPOINTS = {
    "log.flush.start.offset.checkpoint.interval.ms": "1000",
    "log.flush.offset.checkpoint.interval.ms": "1000",
}


@dataclass
class Planted:
    """The faults a scenario made, as it made them."""

    resets: dict[str, set[tuple[str, int]]] = field(default_factory=dict)  # group -> partitions reset to earliest
    lost: dict[tuple[str, str, int], int] = field(default_factory=dict)  # (group, topic, partition) -> records lost
    deleted_topics: list[str] = field(default_factory=list)
    recreated_topics: list[str] = field(default_factory=list)  # deleted, then created again (a new id)
    aborted_offsets: dict[str, dict[str, int]] = field(default_factory=dict)  # group -> "t:p" -> aborted offset
    healthy: list[str] = field(default_factory=list)  # groups that must have no finding at all


@dataclass
class Outcome:
    version: str
    scenario: str
    oracle: dict  # the cluster's answers just before the brokers stopped (Driver "describe")
    planted: Planted
    log_dirs: list[Path]
    metadata_dir: Path
    killed: bool
    requests: list[dict]  # what the scenario told the clients to do, in order
    seconds: float


def _group(d: Driver, group: str, members: list[str], **join) -> None:
    for m in members:
        d.do("join", group=group, member=m, **join)
    d.do("wait_stable", group=group, members=len(members))


def _commit_all(d: Driver, group: str, members: list[str]) -> None:
    for m in members:
        d.do("commit", group=group, member=m)


def classic(c: KafkaCluster, d: Driver) -> tuple[list[str], Planted, bool]:
    p = Planted()
    d.do("create", topic="orders", partitions=3)
    d.do("create", topic="payments", partitions=2)
    d.do("create", topic="doomed", partitions=1)
    d.do("produce", topic="orders", per_partition=20)
    d.do("produce", topic="payments", per_partition=12)
    d.do("produce", topic="doomed", per_partition=4)
    both = ["orders", "payments"]
    groups = {
        "c-range": (["a", "b"], {"assignor": "range"}),
        "c-roundrobin": (["a", "b", "c"], {"assignor": "roundrobin"}),
        "c-sticky": (["a", "b"], {"assignor": "sticky"}),
        "c-coop": (["a", "b", "c"], {"assignor": "cooperative-sticky"}),
    }
    for g, (members, kw) in groups.items():
        _group(d, g, members, topics=both, **kw)
        _commit_all(d, g, members)
    for m, inst in (("a", "static-1"), ("b", "static-2")):
        d.do("join", group="c-static", member=m, topics=both, assignor="range", instance=inst)
    d.do("wait_stable", group="c-static", members=2)
    _commit_all(d, "c-static", ["a", "b"])
    # a member leaves: cooperative-sticky revokes and reassigns in two rebalances
    d.do("close", group="c-coop", member="c")
    d.do("wait_stable", group="c-coop", members=2)
    _commit_all(d, "c-coop", ["a", "b"])

    # reset to earliest by the release's own tool, on an empty group
    _group(d, "c-reset", ["a"], topics=["orders"], assignor="range")
    _commit_all(d, "c-reset", ["a"])
    d.do("close", group="c-reset", member="a")
    d.do("wait_empty", group="c-reset")
    out = tool(c, GROUP_COMMAND, "--bootstrap-server", c.bootstrap, "--group", "c-reset", "--reset-offsets",
               "--to-earliest", "--topic", "orders", "--execute", "--timeout", "60000")
    if "NEW-OFFSET" not in out:  # the tool says why on stdout and exits 0
        raise RuntimeError(f"kafka-consumer-groups --reset-offsets did not reset: {out}")
    p.resets["c-reset"] = {("orders", i) for i in range(3)}

    # a group at offset 3 of payments-0, then DeleteRecords up to 9: 6 records it never read
    d.do("alter_offsets", group="c-lost", offsets={"payments:0": 3, "payments:1": 12})
    d.do("delete_records", offsets={"payments:0": 9})
    p.lost[("c-lost", "payments", 0)] = 6

    # a group commits to a topic that is then deleted (the coordinator drops its offsets)
    _group(d, "c-doomed", ["a"], topics=["doomed"], assignor="range")
    _commit_all(d, "c-doomed", ["a"])
    d.do("close", group="c-doomed", member="a")
    d.do("delete", topic="doomed")
    p.deleted_topics.append("doomed")

    # the producers move on: every live group lags by 7 on orders
    d.do("produce", topic="orders", per_partition=7)
    p.healthy += [*groups, "c-static"]
    return [*groups, "c-static", "c-reset", "c-lost", "c-doomed"], p, False


def kip848(c: KafkaCluster, d: Driver) -> tuple[list[str], Planted, bool]:
    p = Planted()
    d.do("create", topic="orders", partitions=4)
    d.do("create", topic="orders-eu", partitions=2)
    d.do("create", topic="payments", partitions=2)
    d.do("create", topic="out", partitions=1)
    for t, n in (("orders", 15), ("orders-eu", 6), ("payments", 9)):
        d.do("produce", topic=t, per_partition=n)
    new = {"protocol": "consumer"}
    _group(d, "k-uniform", ["a", "b", "c"], topics=["orders", "payments"], assignor="uniform", **new)
    _commit_all(d, "k-uniform", ["a", "b", "c"])
    _group(d, "k-range", ["a", "b"], topics=["orders", "payments"], assignor="range", **new)
    _commit_all(d, "k-range", ["a", "b"])
    _group(d, "k-regex", ["a", "b"], pattern="orders.*", **new)
    _commit_all(d, "k-regex", ["a", "b"])
    _group(d, "k-leave", ["a", "b", "c"], topics=["orders"], **new)
    d.do("close", group="k-leave", member="b")
    d.do("wait_stable", group="k-leave", members=2)
    _commit_all(d, "k-leave", ["a", "c"])
    _group(d, "k-classic", ["a", "b"], topics=["payments"], assignor="roundrobin")
    _commit_all(d, "k-classic", ["a", "b"])

    # offsets committed in transactions: one committed, then one aborted on another partition
    d.do("produce", topic="out", per_partition=3, transactional_id="tx-1",
         txn_offsets={"group": "k-txn", "offsets": {"orders:0": 5, "orders:1": 6}})
    d.do("produce", topic="out", per_partition=2, transactional_id="tx-1", abort=True,
         txn_offsets={"group": "k-txn", "offsets": {"orders:1": 11, "orders:2": 9}})
    p.aborted_offsets["k-txn"] = {"orders:1": 11, "orders:2": 9}

    d.do("produce", topic="orders", per_partition=4)
    p.healthy += ["k-uniform", "k-range", "k-regex", "k-leave", "k-classic"]
    return [*p.healthy, "k-txn"], p, True


def ops(c: KafkaCluster, d: Driver) -> tuple[list[str], Planted, bool]:
    """Three brokers: a reassignment, a broker fenced and unfenced (stopped and started again),
    one left fenced (stopped), a topic deleted and re-created, a group beside it all."""
    p = Planted()
    d.do("create", topic="orders", partitions=3, replication=2)
    d.do("create", topic="audit-log", partitions=2, replication=3)
    d.do("produce", topic="orders", per_partition=10)
    d.do("produce", topic="audit-log", per_partition=5)
    d.do("reassign", replicas={"orders:0": [3, 1], "orders:1": [1, 3]})
    _group(d, "o-range", ["a", "b"], topics=["orders"], assignor="range")
    _commit_all(d, "o-range", ["a", "b"])
    c.stop(2)  # controlled shutdown: fenced, leaders move away
    c.restart(2)  # registers again: unfenced
    d.do("delete", topic="audit-log")
    p.deleted_topics.append("audit-log")
    d.do("create", topic="audit-log", partitions=1, replication=2)
    p.recreated_topics.append("audit-log")
    d.do("produce", topic="audit-log", per_partition=3)
    d.do("produce", topic="orders", per_partition=2)
    # broker 3 stays down: fenced once its session times out (or at once: controlled shutdown)
    d.do("close", group="o-range", member="b")
    c.stop(3)
    d.do("wait_stable", group="o-range", members=1)
    d.do("commit", group="o-range", member="a")
    p.healthy.append("o-range")
    return ["o-range"], p, True


SCENARIOS = {"classic": (classic, 1), "kip848": (kip848, 1), "ops": (ops, 3)}


def cli_describe(cluster: KafkaCluster) -> list[dict]:
    """``kafka-consumer-groups --describe --all-groups``: one row per (group, partition) with a
    committed offset: the release's own tool's offsets, log end and lag."""
    out = tool(cluster, GROUP_COMMAND, "--bootstrap-server", cluster.bootstrap, "--describe", "--all-groups",
               "--timeout", "60000")
    rows, header = [], None
    for line in out.splitlines():
        cells = line.split()
        if cells[:2] == ["GROUP", "TOPIC"]:
            header = cells
        elif header and len(cells) >= 6 and cells[3] != "-" and cells[2].isdigit():
            r = dict(zip(header, cells, strict=False))
            rows.append({"group": r["GROUP"], "topic": r["TOPIC"], "partition": int(r["PARTITION"]),
                         "current_offset": int(r["CURRENT-OFFSET"]), "log_end_offset": int(r["LOG-END-OFFSET"]),
                         "lag": int(r["LAG"])})
    return rows


def run_scenario(bundle: str, scenario: str, root: Path) -> Outcome:
    """Start the cluster, run ``scenario``, dump the oracle, stop (or kill) the brokers."""
    t0 = time.monotonic()
    steps, brokers = SCENARIOS[scenario]
    config = dict(CHECKPOINTS)
    if brokers > 1:
        # a replica of every __consumer_offsets partition on each broker: a group's coordinator
        # moves on when the broker holding its partition stops (with one replica, a group whose
        # partition was on the broker left stopped has no coordinator until it comes back)
        config["offsets.topic.replication.factor"] = str(brokers)
    cluster = KafkaCluster(bundle, root, brokers=brokers, config=config)
    try:
        cluster.start()
        with Driver(cluster) as d:
            groups, planted, kill = steps(cluster, d)
            time.sleep(1.5)  # the checkpoints of the last DeleteRecords reach the disk
            oracle = d.do("describe", groups=groups)
            oracle["cli_describe"] = cli_describe(cluster)
            if kill:
                cluster.kill()
            else:
                cluster.close()
            requests = list(d.requests)
    finally:
        cluster.close()
    outcome = Outcome(cluster.version, scenario, oracle, planted, cluster.log_dirs, cluster.metadata_dir, kill,
                      requests, time.monotonic() - t0)
    (Path(root) / "outcome.json").write_text(json.dumps(as_json(outcome), indent=1, sort_keys=True) + "\n")
    return outcome


def from_json(d: dict, log_dirs: list[Path], metadata_dir: Path) -> Outcome:
    """The outcome ``as_json`` wrote, with the data dirs it was about."""
    p = d["planted"]
    planted = Planted(
        resets={g: {(t, n) for t, n in v} for g, v in p["resets"].items()},
        lost={(g, t, n): k for g, t, n, k in p["lost"]},
        deleted_topics=p["deleted_topics"], recreated_topics=p.get("recreated_topics", []),
        aborted_offsets=p["aborted_offsets"], healthy=p["healthy"],
    )
    return Outcome(d["version"], d["scenario"], d["oracle"], planted, log_dirs, metadata_dir, d["killed"],
                   d["requests"], 0.0)


def load(root: Path) -> Outcome:
    """The outcome ``run_scenario`` left in ``root`` (to compare a kept run again)."""
    d = json.loads((Path(root) / "outcome.json").read_text())
    nodes = sorted(Path(root).glob("node-*"), key=lambda n: int(n.name.split("-")[1]))
    return from_json(d, [n / "logs" for n in nodes], nodes[0] / "metadata" / "__cluster_metadata-0")


def as_json(outcome: Outcome) -> dict:
    """The oracle as kept beside a fixture (paths left out)."""
    d = dataclasses.asdict(outcome.planted)
    d["resets"] = {g: sorted(map(list, v)) for g, v in d["resets"].items()}
    d["lost"] = [[*k, n] for k, n in d["lost"].items()]
    return {"version": outcome.version, "scenario": outcome.scenario, "killed": outcome.killed,
            "oracle": outcome.oracle, "planted": d, "requests": outcome.requests}
