"""The classic-protocol scenario (``testkit.cluster.kraft_scenarios.classic``: range,
roundrobin, sticky, cooperative-sticky and static members, a reset by ``kafka-consumer-groups``,
records deleted under a group, a topic deleted) on a ZooKeeper-mode cluster: the last 3.x
release (3.9.2) with the ZooKeeper of its client (3.8.4), driven by the release's own Java
clients (``testkit.cluster.kraft_driver.Driver``).

``run(root)`` returns the :class:`~testkit.cluster.kraft_scenarios.Outcome` (the cluster's
answers through its Admin API and ``kafka-consumer-groups --describe``, the planted faults)
and the ZooKeeper data dir; ZooKeeper is killed first (``kill -9``: its data dir holds the
registry the cluster answered with), then the brokers (``kill -9``).
``compare(outcome, zk_data, warehouse, run_id)`` holds kaudit's tables to them: every committed
offset (raw and in the lag mart), lag and log end against the tool's describe, log start and
end against ``ListOffsets``, the owners of every Stable group, the registry ZooKeeper holds
(brokers' endpoints, every partition's replicas, leader and ISR), the planted faults found and
no other finding.
"""

from __future__ import annotations

import time
from pathlib import Path

from testkit.cluster.kafka import KafkaCluster
from testkit.cluster.kraft_driver import GROUP_COMMAND, Driver, tool
from testkit.cluster.kraft_oracle import Comparison, _rows, compare_planted, effective_commits
from testkit.cluster.kraft_scenarios import CHECKPOINTS, Outcome, classic, cli_describe
from testkit.cluster.zookeeper import start_zookeeper

BROKER, ZOOKEEPER = "kafka-3.9.2", "3.8.4"


def run(root: Path, bundle: str = BROKER, zookeeper: str = ZOOKEEPER) -> tuple[Outcome, Path]:
    t0 = time.monotonic()
    zk = start_zookeeper(zookeeper, root / "zk")
    cluster = KafkaCluster(bundle, root, zookeeper=zk.hosts, config=dict(CHECKPOINTS))
    try:
        cluster.start()
        with Driver(cluster) as d:
            groups, planted, _ = classic(cluster, d)
            _reset_took(cluster, d, planted)
            time.sleep(1.5)  # the checkpoints of the last DeleteRecords reach the disk
            oracle = d.do("describe", groups=groups)
            oracle["cli_describe"] = cli_describe(cluster)
            requests = list(d.requests)
            # ZooKeeper first (kill -9), so its data dir holds the registry the cluster answered
            # with (a clean broker shutdown deletes its /brokers/ids node), then the brokers
            zk.stop(kill=True)
            cluster.kill()
    finally:
        cluster.kill()
        cluster.close()
        zk.stop(kill=True)
    outcome = Outcome(cluster.version, "classic-zk", oracle, planted, cluster.log_dirs, None, True, requests,
                      time.monotonic() - t0)
    return outcome, zk.data_dir


def _reset_took(cluster: KafkaCluster, d: Driver, planted) -> None:
    """The scenario's reset, done again until the cluster answers it: a ZooKeeper-mode 3.x
    ``kafka-consumer-groups --reset-offsets`` refuses a group that is not Empty yet (the member
    that just left) with a message and exit code 0, and so it does when its FIND_COORDINATOR
    outlasts the tool's ``--timeout`` (5 s by default: too short on a loaded machine)."""
    for group, tps in planted.resets.items():
        topics = sorted({t for t, _ in tps})
        want = {f"{t}:{p}": 0 for t, p in tps}
        deadline = time.monotonic() + 60
        while d.do("describe", groups=[group])["groups"][group]["offsets"] != want:
            if time.monotonic() > deadline:
                raise AssertionError(f"the reset of {group} never took")
            time.sleep(1)
            for t in topics:
                tool(cluster, GROUP_COMMAND, "--bootstrap-server", cluster.bootstrap, "--group", group,
                     "--reset-offsets", "--to-earliest", "--topic", t, "--execute", "--timeout", "60000")


def _tp(text: str) -> tuple[str, int]:
    topic, part = text.rsplit(":", 1)
    return topic, int(part)


def compare(outcome: Outcome, warehouse: Path, run_id: str) -> Comparison:
    from pipelines.warehouse.warehouse import Warehouse

    wh = Warehouse(warehouse)
    cmp = Comparison()
    oracle, planted = outcome.oracle, outcome.planted
    groups = oracle["groups"]

    theirs = {(g, *_tp(tp)): off for g, d in groups.items() for tp, off in d["offsets"].items()}
    raw = {k: v for k, v in effective_commits(_rows(wh, "raw/offset_commits", run_id)).items() if k[0] in groups}
    lag = {(r["group_id"], r["topic"], r["partition"]): r
           for r in _rows(wh, "marts/consumer_lag", run_id) if r["source"] == "kafka" and r["group_id"] in groups}
    for key in sorted(set(theirs) | set(raw)):
        cmp.check(f"raw committed offset {key}", raw.get(key), theirs.get(key))
    for key in sorted(set(theirs) | set(lag)):
        cmp.check(f"consumer_lag committed offset {key}", lag[key]["committed_offset"] if key in lag else None,
                  theirs.get(key))
    for row in oracle["cli_describe"]:
        key = (row["group"], row["topic"], row["partition"])
        r = lag.get(key)
        cmp.check(f"kafka-consumer-groups {key}", r and (r["committed_offset"], r["log_end_offset"], r["lag"]),
                  (row["current_offset"], row["log_end_offset"], row["lag"]))

    ends = {(r["topic"], r["partition"]): r for r in _rows(wh, "raw/log_end_offsets", run_id)}
    checkpoints = {(r["topic"], r["partition"]): r["log_start_offset"]
                   for r in _rows(wh, "raw/log_start_checkpoints", run_id)}
    for tp, o in sorted(oracle["log_offsets"].items()):
        r = ends.get(_tp(tp))
        cmp.check(f"log start {tp}", r and max(r["log_start_offset"], checkpoints.get(_tp(tp), -1)), o["earliest"])
        cmp.check(f"log end {tp}", r and r["log_end_offset"], o["latest"])

    audit_rows = [r for r in _rows(wh, "core/assignment_audit", run_id) if r["source"] == "kafka"]
    by_group: dict[str, dict] = {}
    for r in audit_rows:
        by_group.setdefault(r["group_id"], {})[(r["topic"], r["partition"])] = r
    for g, d in sorted(groups.items()):
        if d["state"] != "STABLE":
            cmp.check(f"audit rows of {d['state']} group {g}", sorted(by_group.get(g, {})), [])
            continue
        held = {_tp(tp): m["member_id"] for m in d["members"] for tp in m["assignment"]}
        ours = by_group.get(g, {})
        cmp.check(f"owned partitions of {g}", sorted(ours), sorted(held))
        for tp, member in sorted(held.items()):
            r = ours.get(tp)
            cmp.check(f"owners of {g} {tp}", r and r["observed_owners"], [member])

    # the registry in ZooKeeper: brokers' endpoints, each partition's replicas, leader and ISR
    brokers = {r["broker_id"]: (r["host"], r["port"]) for r in _rows(wh, "core/brokers", run_id)}
    cmp.check("brokers' endpoints", brokers, {b["id"]: (b["host"], b["port"]) for b in oracle["cluster"]["brokers"]})
    parts = {(r["topic"], r["partition"]): r for r in _rows(wh, "core/topic_partitions", run_id)}
    for t, v in sorted(oracle["topics"].items()):
        for p in v["partitions"]:
            r = parts.get((t, p["partition"]))
            cmp.check(f"replicas/leader/isr of {t}-{p['partition']}",
                      r and (list(r["replicas"]), r["leader"], sorted(r["isr"])),
                      (p["replicas"], p["leader"], sorted(p["isr"])))
    cmp.check("deleted topics in the registry", sorted({t for t, _ in parts} & set(planted.deleted_topics)), [])

    for r in audit_rows:
        if r["status"] != "ok":
            cmp.false.append(f"assignment_audit {r['group_id']} {r['topic']}-{r['partition']}: {r['status']}")
    compare_planted(cmp, wh, planted, run_id)
    return cmp
