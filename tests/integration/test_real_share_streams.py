"""Share groups on real Kafka 4.x brokers: ``ShareScenario.java`` (a healthy share group and
one that releases a poison record until the broker archives it, real ``KafkaShareConsumer``s)
on a one-node KRaft cluster, the cluster's answers taken while both groups still had their
members, the broker stopped, then kaudit's extract and build on its data dir compared with
them (``testkit.cluster.share_streams_oracle``). Every release under ``make matrix``; the suite
checks the kept 4.2.2 data dir (pipelines/demo/real/share-4.2.2) without a broker."""

from __future__ import annotations

import pytest

from testkit.cluster.share_streams import run_share_scenario
from testkit.cluster.share_streams_oracle import build, compare, planted

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
    assert compare(tables, oracle) >= 20
    planted(tables, oracle)
