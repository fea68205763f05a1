"""A ZooKeeper-era Kafka cluster driven by the real code, and its own answers (the oracle).

``run(root, fmt, broker_stop, broker)`` starts a Kafka broker (1.1.1, or 2.8.2) and the
ZooKeeper of its time (``fmt``: ``"v2"``, the broker's default message format, or ``"v0"``:
0.9.0's, records without timestamps, group metadata value v0, offset commit value v1, as 0.9
brokers wrote them), plays the scenario with Kafka 1.1.1's old high-level consumer (:mod:`testkit.cluster.kafka_zk`):

- ``zk-range``: offsets in ZooKeeper, range assignment; two consumers that read and commit;
  then an operator's ``ImportZkOffsets`` sets one partition's offset back (the planted fault);
- ``dual-rr``: ``offsets.storage=kafka`` with ``dual.commit.enabled`` (each commit goes to
  ``__consumer_offsets`` and to ZooKeeper), roundrobin; one consumer is killed (``kill -9``):
  its session expires and the other takes its partitions, reads on and commits;
- ``py-range``: a group of the broker's coordinator (a kafka-python member, range) that joins,
  reads, commits and leaves: the group metadata records of the format;

then reads the cluster's answers: the tree under ``/consumers`` read through ZooKeeper,
``ConsumerGroupCommand --zookeeper --describe`` from the same jars (ZooKeeper offsets, log end,
lag per partition), ``OffsetFetch`` and ``ListOffsets`` answered by the broker (kafka-python),
and what the script did. ZooKeeper is then killed (``kill -9``: the consumers are still
registered in its data dir), the consumers killed, the broker stopped (``"clean"`` or
``"kill -9"``). The answer holds the ZooKeeper data dir and the broker's log dir.

``python -m testkit.cluster.kafka_zk_scenario BROKER FMT tests/fixtures`` writes a run's files as
regression fixtures (:func:`write_fixtures`).
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from testkit.cluster.kafka import KafkaCluster
from testkit.cluster.kafka_zk import OldConsumer
from testkit.cluster.kraft_driver import tool
from testkit.cluster.zookeeper import start_zookeeper

TOPICS = {"orders": 4, "clicks": 2}
FORMATS = {"v2": {}, "v0": {"inter.broker.protocol.version": "0.9.0", "log.message.format.version": "0.9.0"}}


def produce(bootstrap: str, topic: str, per_partition: int) -> None:
    from kafka import KafkaProducer

    # not idempotent: a 0.9.0-format log (magic 0) refuses producer ids
    p = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=0, enable_idempotence=False)
    sent = [p.send(topic, value=f"{topic}-{partition}-{i}".encode(), partition=partition)
            for partition in range(TOPICS[topic]) for i in range(per_partition)]
    p.flush()
    for f in sent:
        f.get(timeout=30)
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


def _py_group(bootstrap: str, group: str, topic: str) -> dict:
    """One kafka-python member of ``group``: joins, reads ``topic`` to its end, commits, leaves."""
    from kafka import KafkaConsumer

    c = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False,
                      auto_offset_reset="earliest", consumer_timeout_ms=3000, client_id=f"{group}-client")
    read = {}
    for m in c:
        read[(m.topic, m.partition)] = m.offset + 1
    c.commit()
    member = c._coordinator._generation.member_id if c._coordinator._generation else None
    c.close()
    return {"committed": read, "member_id": member}


def _describe_groups(bootstrap: str, *groups: str) -> dict:
    from kafka.admin import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        return {g: {"state": d["group_state"], "protocol": d["protocol_data"], "members": len(d["members"])}
                for g, d in admin.describe_groups(list(groups)).items()}
    finally:
        admin.close()


def _kafka_answers(bootstrap: str, *groups: str) -> tuple[dict, dict, dict]:
    """(committed offsets of ``groups`` in Kafka: {(group, topic, partition): offset}, log
    start, log end) as the broker answers."""
    from kafka import KafkaConsumer, TopicPartition
    from kafka.admin import KafkaAdminClient

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    committed = {(g, tp.topic, tp.partition): m.offset for g in groups
                 for tp, m in admin.list_group_offsets(g)[g].items()}
    admin.close()
    c = KafkaConsumer(bootstrap_servers=bootstrap)
    tps = [TopicPartition(t, p) for t, n in TOPICS.items() for p in range(n)]
    start = {(tp.topic, tp.partition): o for tp, o in c.beginning_offsets(tps).items()}
    end = {(tp.topic, tp.partition): o for tp, o in c.end_offsets(tps).items()}
    c.close()
    return committed, start, end


# the ZooKeeper release beside each broker release (the one its ZooKeeper client came with)
ZOOKEEPER_OF = {"kafka-1.1.1": "3.4.14", "kafka-2.8.2": "3.5.10"}


def run(root: Path, fmt: str, broker_stop: str, broker: str = "kafka-1.1.1") -> dict:
    zk = start_zookeeper(ZOOKEEPER_OF[broker], root / "zk")
    # the old consumer and its tools (ConsumerGroupCommand --zookeeper, ImportZkOffsets) are
    # Kafka 1.1.1's, whatever the broker: 2.0 removed them from the release
    kit = KafkaCluster("kafka-1.1.1", root / "clients-1.1.1", zookeeper=zk.hosts)
    cluster = KafkaCluster(broker, root, zookeeper=zk.hosts,
                           config={"controlled.shutdown.enable": "false", **FORMATS[fmt]})
    consumers: list[OldConsumer] = []
    did: dict = {"committed": defaultdict(dict)}  # (group) -> {(topic, partition): offset}

    def consumer(group, cid, topic, **props):
        c = OldConsumer(kit, zk.hosts, group, cid, topic, **props).start()
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
        produce(cluster.bootstrap, "orders", 10)
        produce(cluster.bootstrap, "clicks", 6)

        # zk-range: c1 alone reads everything, c2 joins (range: c1 0-1, c2 2-3), more is produced,
        # both read some of it and commit
        zk_props = {"offsets_storage": "zookeeper", "partition_assignment_strategy": "range"}
        c1 = consumer("zk-range", "c1", "orders", **zk_props)
        commit(c1, c1.consume(40))
        c2 = consumer("zk-range", "c2", "orders", **zk_props)
        _owners_settle(zk.hosts, "zk-range", "orders",
                       {0: "zk-range_c1-0", 1: "zk-range_c1-0", 2: "zk-range_c2-0", 3: "zk-range_c2-0"})
        produce(cluster.bootstrap, "orders", 4)
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
        produce(cluster.bootstrap, "clicks", 3)
        commit(d1, d1.consume(6))

        # py-range: a group of the Kafka coordinator (kafka-python, range), which writes group
        # metadata: one member joins, reads orders, commits and leaves (the group ends Empty)
        did["py-range"] = _py_group(cluster.bootstrap, "py-range", "orders")
        did["committed"]["py-range"] = did["py-range"]["committed"]

        # the planted fault: an operator imports an offset below the committed one
        back = did["committed"]["zk-range"][("orders", 0)] - 7
        imported = root / "import.txt"
        imported.write_text(f"/consumers/zk-range/offsets/orders/0:{back}\n")
        tool(kit, "kafka.tools.ImportZkOffsets", "--zkconnect", zk.hosts, "--input-file", str(imported))
        did["regression"] = ("zk-range", "orders", 0, did["committed"]["zk-range"][("orders", 0)], back)
        did["committed"]["zk-range"][("orders", 0)] = back

        # the cluster's answers
        oracle = {
            "tree": _tree(zk.hosts),
            "describe_zk": {g: _describe(kit, "--zookeeper", zk.hosts, "--group", g)
                            for g in ("zk-range", "dual-rr")},
            "kafka": _kafka_answers(cluster.bootstrap, "dual-rr", "py-range"),
            "groups": _describe_groups(cluster.bootstrap, "py-range"),
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




def oracle_json(answer: dict) -> dict:
    """The answer in JSON: bytes as text, tuple keys joined with '/'."""
    committed, start, end = answer["kafka"]
    did = answer["did"]
    return {
        "tree": {p: None if v is None else v.decode() for p, v in answer["tree"].items()},
        "describe_zk": {g: {f"{t}/{p}": row for (t, p), row in rows.items()}
                        for g, rows in answer["describe_zk"].items()},
        "kafka_committed": {f"{g}/{t}/{p}": o for (g, t, p), o in committed.items()},
        "groups": answer["groups"],
        "log_start": {f"{t}/{p}": o for (t, p), o in start.items()},
        "log_end": {f"{t}/{p}": o for (t, p), o in end.items()},
        "committed": {f"{g}/{t}/{p}": o for g, by in did["committed"].items() for (t, p), o in by.items()},
        "py_member": did["py-range"]["member_id"],
        "killed": did["killed"],
        "regression": list(did["regression"]),
    }


def _split(key: str) -> tuple:
    *names, part = key.split("/")
    return (*names, int(part))


def oracle_from_json(d: dict, zk_data: Path, logs: Path) -> dict:
    """The answer ``run`` returned, from its JSON (``oracle_json``) and the kept data dirs."""
    committed: dict[str, dict] = defaultdict(dict)
    for key, o in d["committed"].items():
        g, t, p = _split(key)
        committed[g][(t, p)] = o
    return {
        "tree": {p: None if v is None else v.encode() for p, v in d["tree"].items()},
        "describe_zk": {g: {_split(tp): row for tp, row in rows.items()} for g, rows in d["describe_zk"].items()},
        "kafka": ({_split(k): o for k, o in d["kafka_committed"].items()},
                  {_split(k): o for k, o in d["log_start"].items()},
                  {_split(k): o for k, o in d["log_end"].items()}),
        "groups": d["groups"],
        "did": {"committed": committed, "killed": d["killed"], "regression": tuple(d["regression"]),
                "py-range": {"member_id": d["py_member"]}},
        "zk_data": zk_data, "logs": logs,
    }


def kept(fixtures: Path, broker: str, fmt: str) -> dict:
    """A run kept by ``write_fixtures``, as ``run`` returned it."""
    kafka = fixtures / "kafka-real" / f"{broker.split('-', 1)[1]}-{fmt}"
    return oracle_from_json(json.loads((kafka / "oracle.json").read_text()),
                            fixtures / "zk-real" / f"{ZOOKEEPER_OF[broker]}-{fmt}" / "data", kafka)


def write_fixtures(broker: str, fmt: str, fixtures: Path) -> None:
    """A run's ZooKeeper data dir into ``fixtures/zk-real/<zookeeper>-<fmt>/``, the non-empty
    segments of its log dir (``__consumer_offsets`` and the data topics) into
    ``fixtures/kafka-real/<broker version>-<fmt>/``, the oracle's JSON beside each."""
    version = broker.split("-", 1)[1]
    zk_out = fixtures / "zk-real" / f"{ZOOKEEPER_OF[broker]}-{fmt}"
    kafka_out = fixtures / "kafka-real" / f"{version}-{fmt}"
    with tempfile.TemporaryDirectory(prefix="kafka-zk-") as tmp:
        answer = run(Path(tmp), fmt, "clean", broker)
        for out in (zk_out, kafka_out):
            if out.exists():
                shutil.rmtree(out)
        shutil.copytree(answer["zk_data"], zk_out / "data")
        for part in sorted(p for p in answer["logs"].iterdir() if p.is_dir()):
            for seg in part.glob("*.log"):
                if seg.stat().st_size:
                    (kafka_out / part.name).mkdir(parents=True, exist_ok=True)
                    shutil.copy(seg, kafka_out / part.name / seg.name)
        text = json.dumps(oracle_json(answer), indent=1, sort_keys=True) + "\n"
        for out in (zk_out, kafka_out):
            (out / "oracle.json").write_text(text)


if __name__ == "__main__":
    write_fixtures(sys.argv[1], sys.argv[2], Path(sys.argv[3]))
