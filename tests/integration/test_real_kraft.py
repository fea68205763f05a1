"""Real KRaft clusters (Kafka 3.9 and every 4.x release) as the oracle: a scenario driven by the
release's own Java clients (testkit.cluster.kraft_scenarios), the cluster's own answers taken
through its Admin API before the brokers stop, then kaudit's whole pipeline on the data dirs the
brokers wrote, compared (testkit.cluster.kraft_oracle).

Each (release, scenario) is a case; the cases marked ``matrix`` run under ``make matrix``
(``pytest -m matrix``), the others in the default suite: one 4.1.1 cluster with KIP-848 groups,
transactions and a classic group beside them (the classic-assignor case runs in the suite on its
kept data dir: test_real_kraft_fixtures_audited). With ``KAUDIT_MATRIX_OUT=FILE`` every case appends its
line of the matrix table to FILE.
"""

from __future__ import annotations

import os
import time

import pytest

from testkit.cluster.kraft_oracle import audit, compare
from testkit.cluster.kraft_scenarios import run_scenario

pytestmark = pytest.mark.integration

RELEASES = ("3.9.2", "4.0.2", "4.1.1", "4.2.2", "4.3.1", "4.4.0")
SUBSET = {("4.1.1", "kip848")}


def _cases():
    for version in RELEASES:
        for scenario in ("classic", "kip848", "ops"):
            if scenario == "kip848" and version.startswith("3."):
                continue  # KIP-848 is generally available from 4.0 (3.9: a preview off by default)
            marks = () if (version, scenario) in SUBSET else (pytest.mark.matrix,)
            yield pytest.param(version, scenario, marks=marks, id=f"{version}-{scenario}")


@pytest.mark.parametrize(("version", "scenario"), list(_cases()))
def test_real_cluster_audited(version, scenario, spark, tmp_path):
    outcome = run_scenario(f"kafka-{version}", scenario, tmp_path / "cluster")
    # the cluster answered what the scenario did: its groups are there, and the planted faults
    groups = outcome.oracle["groups"]
    for g in outcome.planted.healthy:
        assert groups[g]["state"] == "STABLE" and groups[g]["members"], (g, groups[g])
    for g, tps in outcome.planted.resets.items():
        assert {k: v for k, v in groups[g]["offsets"].items()} == {f"{t}:{p}": 0 for t, p in tps}
    for topic in outcome.planted.deleted_topics:
        assert (topic in outcome.oracle["topics"]) == (topic in outcome.planted.recreated_topics)
        assert not any(tp.startswith(f"{topic}:") for d in groups.values() for tp in d["offsets"])
    for g, aborted in outcome.planted.aborted_offsets.items():
        for tp, off in aborted.items():
            assert groups[g]["offsets"].get(tp) != off

    started = time.monotonic()
    audit(outcome, tmp_path / "warehouse", "real")
    result = compare(outcome, tmp_path / "warehouse", "real")
    line = (f"| {version} | {scenario} | {'kill -9' if outcome.killed else 'clean'} | {result.row()} | "
            f"cluster {outcome.seconds:.0f} s, kaudit {time.monotonic() - started:.0f} s |")
    if os.environ.get("KAUDIT_MATRIX_OUT"):
        with open(os.environ["KAUDIT_MATRIX_OUT"], "a") as f:
            f.write(line + "\n")
    assert result.compared > 50
    assert not result.mismatches, "\n".join(result.mismatches)
    assert result.found == result.expected > 0 if scenario == "classic" else result.found == result.expected
    assert not result.false, "\n".join(result.false)
