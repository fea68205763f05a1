"""A ZooKeeper-era Kafka cluster written by the real code (ZooKeeper 3.4.14, Kafka 1.1.1 and its
old high-level consumer: :mod:`testkit.cluster.kafka_zk_scenario` plays it and reads the
cluster's answers), audited end to end: ``kaudit`` runs every step on its data dirs (extract
zk-snapshot, offsets, log-end, build, validate, report), and each table is compared with the
cluster's answer: the registry, owners and ZooKeeper offsets with the tree read through
ZooKeeper and with what the script committed; the Kafka offsets of the dual-committing group
with the broker's ``OffsetFetch``; log start and end with ``ListOffsets``; lag per partition
with ``ConsumerGroupCommand --describe``; the planted regression (an ``ImportZkOffsets``) found
and nothing else.

``1.1.1-v0-kept``: the same comparisons, with no broker, on the data dirs such a run wrote and
the answers it read, kept as regression fixtures (``tests/fixtures/zk-real/3.4.14-v0``,
``tests/fixtures/kafka-real/1.1.1-v0``, by ``python -m testkit.cluster.kafka_zk_scenario
kafka-1.1.1 v0 tests/fixtures``): 0.9.0's message format, brokers stopped clean.

The default run: the kept ``1.1.1-v0-kept`` (the 0.9.0 format: records without timestamps,
group metadata value v0, offset commit value v1, as 0.9 brokers wrote them). ``-m matrix`` runs
the live cases: Kafka 1.1.1 in its own message format (v2) and in the 0.9.0 format, and a Kafka
2.8.2 broker (the 1.1.1 old consumer against it), brokers stopped clean or with ``kill -9``:
every step must still finish.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from pipelines.warehouse.reading import read_arrow
from pipelines.warehouse.warehouse import Warehouse
from testkit.cluster.kafka_zk_scenario import TOPICS, kept, run
from testkit.cluster.kraft_oracle import kaudit

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"
RUN = "zk-era"
STEPS = [["extract", "zk-snapshot", "{zk}"], ["extract", "offsets", "{logs}"], ["extract", "log-end", "{logs}"],
         ["build"], ["validate"], ["report"]]


def _kaudit(wh: Path, step: list[str], **paths) -> tuple[int, str]:
    """One step, in this process (on the session's Spark): (exit code, what it printed)."""
    args = [a.format(**{k: str(v) for k, v in paths.items()}) for a in step]
    return kaudit("--warehouse", str(wh), "--run-id", RUN, "--spark-master", "local[2]", *args)


def _read(wh: Path, table: str) -> list[dict]:
    return read_arrow(Warehouse(wh), table, RUN, with_run_id=False).to_pylist()


@pytest.fixture(scope="module", params=[
    pytest.param(("kafka-1.1.1", "v0", "kept"), id="1.1.1-v0-kept"),
    pytest.param(("kafka-1.1.1", "v2", "clean"), id="1.1.1-v2-clean", marks=pytest.mark.matrix),
    pytest.param(("kafka-1.1.1", "v0", "kill -9"), id="1.1.1-v0-kill9", marks=pytest.mark.matrix),
    pytest.param(("kafka-2.8.2", "v0", "clean"), id="2.8.2-v0-clean", marks=pytest.mark.matrix),
    pytest.param(("kafka-2.8.2", "v2", "kill -9"), id="2.8.2-v2-kill9", marks=pytest.mark.matrix),
])
def audited(request, spark, tmp_path_factory):
    broker, fmt, broker_stop = request.param
    root = tmp_path_factory.mktemp(f"zk-era-{fmt}")
    t0 = time.monotonic()
    oracle = kept(FIXTURES, broker, fmt) if broker_stop == "kept" else run(root, fmt, broker_stop, broker)
    print(f"scenario {fmt}: {time.monotonic() - t0:.1f} s")
    wh = root / "warehouse"
    outputs = {}
    for step in STEPS:
        t0 = time.monotonic()
        code, out = _kaudit(wh, step, zk=oracle["zk_data"], logs=oracle["logs"])
        print(f"kaudit {' '.join(step[:2])}: {time.monotonic() - t0:.1f} s")
        outputs[" ".join(step[:2])] = out
        assert code == 0 and "internal error" not in out, f"{' '.join(step)}: exit {code}\n{out[-4000:]}"
    return (broker, fmt), oracle, wh, outputs


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
    assert offsets == {(g, t, p): o for g, by in did.items() if g != "py-range" for (t, p), o in by.items()}
    print(f"compared: {len(want_ids)} registrations, {len(owners)} owners, {len(offsets)} ZooKeeper offsets")


def test_kafka_offsets_log_ends_and_lag(audited):
    _, oracle, wh, _ = audited
    committed, start, end = oracle["kafka"]
    # dual.commit: the last commit of each partition in __consumer_offsets is the broker's answer
    last = {}
    for r in sorted(_read(wh, "raw/offset_commits"), key=lambda r: (r["offsets_partition"], r["log_offset"])):
        last[(r["group_id"], r["topic"], r["partition"])] = r["committed_offset"]
    assert last == committed
    did = oracle["did"]["committed"]
    assert committed == {(g, t, p): o for g in ("dual-rr", "py-range") for (t, p), o in did[g].items()}
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
    for (g, t, p), o in committed.items():
        want[("kafka", g, t, p)] = (o, end[(t, p)], end[(t, p)] - o)
    assert lag == want
    print(f"compared: {len(last)} Kafka offsets, {len(ends)} log start/end, {len(lag)} lags")


def test_planted_regression_found_and_healthy_groups_clean(audited):
    (broker, fmt), oracle, wh, outputs = audited
    group, topic, partition, before, after = oracle["did"]["regression"]
    regressions = [(r["source"], r["group_id"], r["topic"], r["partition"], r["previous_committed_offset"],
                    r["committed_offset"]) for r in _read(wh, "marts/offset_regressions")]
    assert regressions == [("zookeeper", group, topic, partition, before, after)]
    # every partition of both groups has the owner the assignor gives it
    audit = _read(wh, "core/assignment_audit")
    assert audit and {r["status"] for r in audit} == {"ok"}, [r for r in audit if r["status"] != "ok"]
    assert {(r["group_id"], r["topic"], r["partition"]) for r in audit} == {
        (g, t, p) for g, t in (("zk-range", "orders"), ("dual-rr", "clicks")) for p in range(TOPICS[t])}
    # the Kafka group: its generations as the coordinator wrote them, the last one Empty
    meta = sorted((r for r in _read(wh, "raw/group_metadata") if r["group_id"] == "py-range"),
                  key=lambda r: r["log_offset"])
    assert oracle["groups"]["py-range"]["state"] == "Empty" and meta
    assert meta[-1]["protocol"] is None and meta[-2]["protocol"] == "range"
    assert meta[-2]["leader"] == oracle["did"]["py-range"]["member_id"]
    # 0.9.0's format: value v0 (no rebalance timeout, no state timestamp); 1.1: v1; 2.8: v3
    assert {r["value_version"] for r in meta} == ({0} if fmt == "v0" else {1} if broker == "kafka-1.1.1" else {3})
    # dual commit: both stores agree at the end
    drift = [r for r in _read(wh, "marts/offset_storage_drift") if r["drift"] not in (0, None)]
    assert drift == []
    assert _read(wh, "raw/quarantine") == []
    report = wh / "reports" / f"run_id={RUN}" / "index.html"
    assert report.exists() and "internal error" not in outputs["report"]
