"""A ZooKeeper-era Kafka cluster written by the real code, audited end to end: ZooKeeper 3.4.14,
a Kafka 1.1.1 broker, and Kafka 1.1.1's old high-level consumer (``ZookeeperConsumerConnector``,
:mod:`testkit.cluster.kafka_zk`):

- ``zk-range``: offsets in ZooKeeper, range assignment; two consumers that read and commit;
  then an operator's ``ImportZkOffsets`` sets one partition's offset back (the planted fault);
- ``dual-rr``: ``offsets.storage=kafka`` with ``dual.commit.enabled`` (each commit goes to
  ``__consumer_offsets`` and to ZooKeeper), roundrobin; one consumer is killed (``kill -9``):
  its session expires and the other takes its partitions, reads on and commits.

The oracle is the cluster's own answer before it stops: the tree read through ZooKeeper (ids,
owners, offsets), ``ConsumerGroupCommand --describe`` from the same jars (ZooKeeper offsets,
log end and lag per partition), ``OffsetFetch`` and ``ListOffsets`` answered by the broker
(kafka-python), and what the script did (what each consumer read and committed, which one it
killed, the offset it imported). Then ZooKeeper is killed (``kill -9``: the consumers are still
registered in its data dir), the consumers killed, the broker stopped (clean, or ``kill -9``),
and ``kaudit`` runs every step on the data dirs: extract zk-snapshot, offsets, log-end, build,
validate, report.

Two message formats: the broker's default (v2), and ``0.9.0`` (``inter.broker.protocol.version``
and ``log.message.format.version``): records without timestamps (magic 0), group metadata
value v0 and offset commit value v1, as 0.9 brokers wrote them.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections import defaultdict
from pathlib import Path

import pyarrow.dataset as ds
import pytest

from testkit.cluster.kafka import KafkaCluster
from testkit.cluster.kafka_zk import OldConsumer
from testkit.cluster.kraft_driver import tool
from testkit.cluster.zookeeper import start_zookeeper

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
KAUDIT = REPO / ".venv" / "bin" / "kaudit"
RUN = "zk-era"
TOPICS = {"orders": 4, "clicks": 2}
FORMATS = {"v2": {}, "v0": {"inter.broker.protocol.version": "0.9.0", "log.message.format.version": "0.9.0"}}
STEPS = [["extract", "zk-snapshot", "{zk}"], ["extract", "offsets", "{logs}"], ["extract", "log-end", "{logs}"],
         ["build"], ["validate"], ["report"]]


def _produce(bootstrap: str, topic: str, per_partition: int) -> None:
    from kafka import KafkaProducer

    p = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=0)
    for partition in range(TOPICS[topic]):
        for i in range(per_partition):
            p.send(topic, value=f"{topic}-{partition}-{i}".encode(), partition=partition)
    p.flush()
    p.close()


def _tree(hosts: str) -> dict[str, bytes]:
    """path -> data of every node under /consumers, read through the server."""
    from kazoo.client import KazooClient

    zk = KazooClient(hosts=hosts)
    zk.start()
    try:
        out, todo = {}, ["/consumers"]
        while todo:
            path = todo.pop()
            data, _ = zk.get(path)
            out[path] = data
            todo += [f"{path}/{c}" for c in zk.get_children(path)]
        return out
    finally:
        zk.stop()
        zk.close()


def _owners_settle(hosts: str, group: str, topic: str, want: dict[int, str], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    prefix = f"/consumers/{group}/owners/{topic}/"
    while time.monotonic() < deadline:
        got = {int(p[len(prefix):]): v.decode() for p, v in _tree(hosts).items() if p.startswith(prefix)}
        if got == want:
            return
        time.sleep(0.5)
    raise AssertionError(f"{group}'s owners of {topic} never became {want}: {got}")


def _describe(cluster: KafkaCluster, *args: str) -> dict[tuple[str, int], dict]:
    """``ConsumerGroupCommand --describe``'s table: (topic, partition) -> {column: value}."""
    out = tool(cluster, "kafka.admin.ConsumerGroupCommand", *args, "--describe")
    lines = [ln.split() for ln in out.splitlines() if ln.strip()]
    head = next(i for i, ln in enumerate(lines) if ln[:2] == ["TOPIC", "PARTITION"])
    cols = lines[head]
    rows = {}
    for ln in lines[head + 1:]:
        row = dict(zip(cols, ln, strict=False))
        rows[(row["TOPIC"], int(row["PARTITION"]))] = row
    return rows


def _kafka_answers(bootstrap: str, group: str) -> tuple[dict, dict, dict]:
    """(committed offsets of ``group`` in Kafka, log start, log end) as the broker answers."""
    from kafka import KafkaConsumer, TopicPartition
    from kafka.admin import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    committed = {(tp.topic, tp.partition): m.offset for tp, m in admin.list_group_offsets(group)[group].items()}
    admin.close()
    c = KafkaConsumer(bootstrap_servers=bootstrap)
    tps = [TopicPartition(t, p) for t, n in TOPICS.items() for p in range(n)]
    start = {(tp.topic, tp.partition): o for tp, o in c.beginning_offsets(tps).items()}
    end = {(tp.topic, tp.partition): o for tp, o in c.end_offsets(tps).items()}
    c.close()
    return committed, start, end


def _scenario(root: Path, fmt: str, broker_stop: str) -> dict:
    zk = start_zookeeper("3.4.14", root / "zk")
    cluster = KafkaCluster("kafka-1.1.1", root, zookeeper=zk.hosts,
                           config={"controlled.shutdown.enable": "false", **FORMATS[fmt]})
    consumers: list[OldConsumer] = []
    did: dict = {"committed": defaultdict(dict)}  # (group) -> {(topic, partition): offset}

    def consumer(group, cid, topic, **props):
        c = OldConsumer(cluster, zk.hosts, group, cid, topic, **props).start()
        consumers.append(c)
        return c

    def commit(c, read):
        c.commit()
        for p, o in read.items():
            did["committed"][c.group][(c.topic, p)] = o

    try:
        cluster.start()
        from kafka.admin import KafkaAdminClient, NewTopic

        admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
        admin.create_topics([NewTopic(t, n, 1) for t, n in TOPICS.items()])
        admin.close()
        _produce(cluster.bootstrap, "orders", 10)
        _produce(cluster.bootstrap, "clicks", 6)

        # zk-range: c1 alone reads everything, c2 joins (range: c1 0-1, c2 2-3), more is produced,
        # both read some of it and commit
        zk_props = {"offsets_storage": "zookeeper", "partition_assignment_strategy": "range"}
        c1 = consumer("zk-range", "c1", "orders", **zk_props)
        commit(c1, c1.consume(40))
        c2 = consumer("zk-range", "c2", "orders", **zk_props)
        _owners_settle(zk.hosts, "zk-range", "orders",
                       {0: "zk-range_c1-0", 1: "zk-range_c1-0", 2: "zk-range_c2-0", 3: "zk-range_c2-0"})
        _produce(cluster.bootstrap, "orders", 4)
        commit(c2, c2.consume(8))
        commit(c1, c1.consume(3))

        # dual-rr: d1 and d2 (roundrobin: one partition each) read and commit to both stores;
        # d2 is killed, d1 takes clicks-1 once d2's session expires, reads on and commits
        dual_props = {"offsets_storage": "kafka", "dual_commit_enabled": "true",
                      "partition_assignment_strategy": "roundrobin"}
        d1 = consumer("dual-rr", "d1", "clicks", **dual_props)
        d2 = consumer("dual-rr", "d2", "clicks", **dual_props)
        _owners_settle(zk.hosts, "dual-rr", "clicks", {0: "dual-rr_d1-0", 1: "dual-rr_d2-0"})
        commit(d1, d1.consume(6))
        commit(d2, d2.consume(6))
        d2.kill()
        did["killed"] = d2.registry_id
        _owners_settle(zk.hosts, "dual-rr", "clicks", {0: "dual-rr_d1-0", 1: "dual-rr_d1-0"})
        _produce(cluster.bootstrap, "clicks", 3)
        commit(d1, d1.consume(6))

        # the planted fault: an operator imports an offset below the committed one
        back = did["committed"]["zk-range"][("orders", 0)] - 7
        imported = root / "import.txt"
        imported.write_text(f"/consumers/zk-range/offsets/orders/0:{back}\n")
        tool(cluster, "kafka.tools.ImportZkOffsets", "--zkconnect", zk.hosts, "--input-file", str(imported))
        did["regression"] = ("zk-range", "orders", 0, did["committed"]["zk-range"][("orders", 0)], back)
        did["committed"]["zk-range"][("orders", 0)] = back

        # the cluster's answers
        oracle = {
            "tree": _tree(zk.hosts),
            "describe_zk": {g: _describe(cluster, "--zookeeper", zk.hosts, "--group", g)
                            for g in ("zk-range", "dual-rr")},
            "kafka": _kafka_answers(cluster.bootstrap, "dual-rr"),
            "did": did,
        }
        zk.stop(kill=True)
    finally:
        for c in consumers:
            c.kill()
        if broker_stop == "kill -9":
            cluster.kill()
        cluster.stop()
        zk.stop(kill=True)
    oracle["zk_data"], oracle["logs"] = zk.data_dir, cluster.node(1).log_dir
    return oracle


def _kaudit(wh: Path, step: list[str], **paths) -> subprocess.CompletedProcess:
    args = [a.format(**{k: str(v) for k, v in paths.items()}) for a in step]
    return subprocess.run([str(KAUDIT), "--warehouse", str(wh), "--run-id", RUN, *args],
                          capture_output=True, text=True, timeout=900)


def _read(wh: Path, table: str) -> list[dict]:
    return ds.dataset(wh / table / f"run_id={RUN}", format="parquet").to_table().to_pylist()


@pytest.fixture(scope="module", params=[
    pytest.param(("v2", "clean"), id="1.1.1-v2-clean"),
    pytest.param(("v0", "kill -9"), id="1.1.1-v0-kill9", marks=pytest.mark.matrix),
])
def audited(request, tmp_path_factory):
    fmt, broker_stop = request.param
    root = tmp_path_factory.mktemp(f"zk-era-{fmt}")
    oracle = _scenario(root, fmt, broker_stop)
    wh = root / "warehouse"
    outputs = {}
    for step in STEPS:
        proc = _kaudit(wh, step, zk=oracle["zk_data"], logs=oracle["logs"])
        outputs[" ".join(step[:2])] = proc
        assert proc.returncode == 0, f"{' '.join(step)}: exit {proc.returncode}\n{proc.stderr[-4000:]}"
    return fmt, oracle, wh, outputs


def test_registry_owners_and_zookeeper_offsets(audited):
    _, oracle, wh, _ = audited
    tree = oracle["tree"]
    want_ids = {(p.split("/")[2], p.split("/")[4]): json.loads(v) for p, v in tree.items()
                if p.count("/") == 4 and p.split("/")[3] == "ids"}
    got_ids = {(r["group_id"], r["consumer_id"]): r for r in _read(wh, "core/consumer_registrations")}
    assert set(got_ids) == set(want_ids)
    for key, reg in want_ids.items():
        assert {(t, n) for t, n in reg["subscription"].items()} == {(got_ids[key]["topic"], got_ids[key]["streams"])}
    # the killed consumer is gone: its session expired before ZooKeeper stopped
    assert ("dual-rr", oracle["did"]["killed"]) not in got_ids

    def leaf(kind):
        return {(p.split("/")[2], p.split("/")[4], int(p.split("/")[5])): v.decode() for p, v in tree.items()
                if p.count("/") == 5 and p.split("/")[3] == kind}

    owners = {(r["group_id"], r["topic"], r["partition"]): r["owner"] for r in _read(wh, "core/partition_owners")}
    assert owners == leaf("owners")
    offsets = {(r["group_id"], r["topic"], r["partition"]): r["committed_offset"] for r in _read(wh, "core/zk_offsets")}
    assert offsets == {k: int(v) for k, v in leaf("offsets").items()}
    # ... which are what the script committed (and imported)
    did = oracle["did"]["committed"]
    assert offsets == {(g, t, p): o for g, by in did.items() for (t, p), o in by.items()}


def test_kafka_offsets_log_ends_and_lag(audited):
    _, oracle, wh, _ = audited
    committed, start, end = oracle["kafka"]
    # dual.commit: the last commit of each partition in __consumer_offsets is the broker's answer
    last = {}
    for r in sorted(_read(wh, "raw/offset_commits"), key=lambda r: (r["offsets_partition"], r["log_offset"])):
        last[(r["group_id"], r["topic"], r["partition"])] = r["committed_offset"]
    assert last == {("dual-rr", t, p): o for (t, p), o in committed.items()}
    assert committed == oracle["did"]["committed"]["dual-rr"]
    ends = {(r["topic"], r["partition"]): (r["log_start_offset"], r["log_end_offset"])
            for r in _read(wh, "raw/log_end_offsets") if r["topic"] in TOPICS}
    assert ends == {tp: (start[tp], end[tp]) for tp in end}
    # lag per partition, both stores, against ConsumerGroupCommand's (ZooKeeper) view
    lag = {(r["source"], r["group_id"], r["topic"], r["partition"]): (r["committed_offset"], r["log_end_offset"],
                                                                      r["lag"])
           for r in _read(wh, "marts/consumer_lag")}
    want = {}
    for group, rows in oracle["describe_zk"].items():
        for (t, p), row in rows.items():
            want[("zookeeper", group, t, p)] = (int(row["CURRENT-OFFSET"]), int(row["LOG-END-OFFSET"]),
                                                int(row["LAG"]))
    for (t, p), o in committed.items():
        want[("kafka", "dual-rr", t, p)] = (o, end[(t, p)], end[(t, p)] - o)
    assert lag == want


def test_planted_regression_found_and_healthy_groups_clean(audited):
    _, oracle, wh, outputs = audited
    group, topic, partition, before, after = oracle["did"]["regression"]
    regressions = [(r["source"], r["group_id"], r["topic"], r["partition"], r["previous_committed_offset"],
                    r["committed_offset"]) for r in _read(wh, "marts/offset_regressions")]
    assert regressions == [("zookeeper", group, topic, partition, before, after)]
    # every partition of both groups has the owner the assignor gives it
    audit = _read(wh, "core/assignment_audit")
    assert audit and {r["status"] for r in audit} == {"ok"}, [r for r in audit if r["status"] != "ok"]
    assert {(r["group_id"], r["topic"], r["partition"]) for r in audit} == {
        (g, t, p) for g, t in (("zk-range", "orders"), ("dual-rr", "clicks")) for p in range(TOPICS[t])}
    # dual commit: both stores agree at the end
    drift = [r for r in _read(wh, "marts/offset_storage_drift") if r["drift"] not in (0, None)]
    assert drift == []
    assert _read(wh, "raw/quarantine") == []
    report = wh / "reports" / f"run_id={RUN}" / "index.html"
    assert report.exists() and "internal error" not in outputs["report"].stderr
