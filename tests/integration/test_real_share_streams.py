"""Share groups on real Kafka 4.x brokers: ``ShareScenario.java`` (a healthy share group and
one that releases a poison record until the broker archives it, real ``KafkaShareConsumer``s)
on a one-node KRaft cluster, the cluster's answers taken while both groups still had their
members, the broker stopped, then kaudit's extract and build on its data dir compared with
them (``testkit.cluster.share_streams_oracle``). Every release under ``make matrix``; the suite
checks the kept 4.2.2 data dir (pipelines/demo/real/share-4.2.2) without a broker."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from testkit.cluster.share_streams import keep_streams, run_share_scenario, run_streams_scenario
from testkit.cluster.share_streams_oracle import build, build_streams, compare, compare_streams, latest_commits, planted

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("version", [
    pytest.param(v, marks=pytest.mark.matrix) for v in ("4.2.2", "4.3.1", "4.4.0")])
def test_real_share_groups_match_the_cluster(version, spark, tmp_path):
    outcome = run_share_scenario(f"kafka-{version}", tmp_path / "cluster")
    oracle = outcome.answer
    # the cluster did what the scenario asked: both groups stable with their member, the poison
    # record delivered up to the limit, every other record accepted
    assert all(g["state"] == "Stable" and len(g["members"]) == 1 for g in oracle["groups"].values())
    did = oracle["did"]
    assert did["poison_deliveries"] == {"share-healthy": 0, "share-poison": 3}
    total = 2 * did["records_per_partition"]
    assert did["accepted"] == {"share-healthy": total, "share-poison": total - 1}
    tables = build(outcome.log_dir, tmp_path / "warehouse")
    compared = compare(tables, oracle)
    assert compared >= 20
    planted(tables, oracle)
    print(f"\nKafka {version} share groups: {compared} values equal to the cluster's answers")


@pytest.mark.parametrize("version", [
    pytest.param(v, marks=pytest.mark.matrix) for v in ("4.2.2", "4.3.1", "4.4.0")])
def test_real_streams_groups_match_the_cluster(version, spark, tmp_path):
    """A healthy Streams application and a faulty one whose member was killed (SIGKILL of its
    JVM) while it had an active task to hand over (``StreamsScenario.java``); the cluster's
    answers just before the broker stopped against kaudit's extract and build. With
    ``KAUDIT_STREAMS_FIXTURE=DIR`` the run is kept there (as ``pipelines/demo/real/streams-4.2.2``
    was)."""
    started = time.monotonic()
    outcome = run_streams_scenario(f"kafka-{version}", tmp_path / "cluster", faulty="faulty-app")
    cluster_s = time.monotonic() - started
    if os.environ.get("KAUDIT_STREAMS_FIXTURE"):
        keep_streams(outcome, Path(os.environ["KAUDIT_STREAMS_FIXTURE"]))
    answer = outcome.answer
    healthy, faulty, did = answer["group"], answer["faulty"]["group"], answer["faulty"]["did"]
    # what the scenario did, as the cluster tells it: the healthy group stable, the killed member
    # still counted (inside the session timeout), behind the assignment epoch, with its tasks
    assert healthy["state"] == "Stable" and did["killed_exit"] == 137
    killed = next(m for m in faulty["members"] if m["member_id"] == did["killed_member_id"])
    assert killed["member_epoch"] < faulty["assignment_epoch"] and killed["active"] == did["killed_held_active"]
    tables = build_streams(outcome.log_dir, tmp_path / "warehouse")
    compared = compare_streams(tables, healthy) + compare_streams(tables, faulty)
    assert latest_commits(tables["raw/offset_commits"]) == {healthy["group_id"]: answer["committed"],
                                                           faulty["group_id"]: answer["faulty"]["committed"]}
    compared += len(answer["committed"]) + len(answer["faulty"]["committed"])
    # the planted fault and nothing else: the dead member's active tasks, in the faulty group only
    found = sorted((f["group_id"], f["member_id"], f["finding"], f"{f['subtopology_id']}_{f['partition']}")
                   for f in tables["core/streams_group_findings"])
    expected = [("faulty-app", did["killed_member_id"], "member_unresponsive", t)
                for t in sorted(did["killed_held_active"])]
    print(f"| {version} | streams (a member killed mid-rebalance) | clean | records compared {compared}, "
          f"findings expected {len(expected)} found {len(set(found) & set(expected))} "
          f"false {len(set(found) - set(expected))} | cluster {cluster_s:.0f} s, "
          f"kaudit {time.monotonic() - started - cluster_s:.0f} s |")
    assert compared > 60
    assert found == expected
