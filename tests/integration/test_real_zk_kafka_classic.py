"""The last 3.x release in ZooKeeper mode (Kafka 3.9.2 on ZooKeeper 3.8.4) with modern classic
clients of the same release (range, roundrobin, sticky, cooperative-sticky, static members),
a reset, records deleted under a group, a topic deleted (:mod:`testkit.cluster.kafka_zk_classic`),
audited end to end on its ZooKeeper data dir and log dir and compared with the cluster's own
answers. A ``matrix`` case (``make matrix``)."""

from __future__ import annotations

import os

import pytest

from testkit.cluster.kafka_zk_classic import compare, run
from testkit.cluster.kraft_oracle import kaudit

pytestmark = [pytest.mark.integration, pytest.mark.matrix]


def test_zookeeper_mode_classic_groups_audited(spark, tmp_path):
    outcome, zk_data = run(tmp_path / "cluster")
    # the cluster answered what the scenario did: the reset took, the healthy groups are Stable
    groups = outcome.oracle["groups"]
    for g, tps in outcome.planted.resets.items():
        assert groups[g]["offsets"] == {f"{t}:{p}": 0 for t, p in tps}
    for g in outcome.planted.healthy:
        assert groups[g]["state"] == "STABLE" and groups[g]["members"], (g, groups[g])
    wh = tmp_path / "warehouse"
    base = ["--warehouse", str(wh), "--run-id", "real", "--spark-master", "local[2]"]
    logs = [str(p) for p in outcome.log_dirs]
    for args in (["extract", "zk-snapshot", str(zk_data)], ["extract", "offsets", *logs],
                 ["extract", "log-end", *logs], ["build"], ["validate"], ["report"]):
        code, out = kaudit(*base, *args)
        assert code == 0 and "internal error" not in out, f"kaudit {' '.join(args)}: {code}\n{out[-3000:]}"
    result = compare(outcome, wh, "real")
    line = f"| {outcome.version} (ZooKeeper) | classic | kill -9 | {result.row()} |"
    if os.environ.get("KAUDIT_MATRIX_OUT"):
        with open(os.environ["KAUDIT_MATRIX_OUT"], "a") as f:
            f.write(line + "\n")
    print(line)
    assert result.compared > 50
    assert not result.mismatches, "\n".join(result.mismatches)
    assert result.found == result.expected > 0
    assert not result.false, "\n".join(result.false)
