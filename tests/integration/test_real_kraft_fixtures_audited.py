"""The whole pipeline on the data dirs real KRaft clusters wrote, without a broker: the kept
fixtures (``tests/fixtures/kafka-real/<release>-<scenario>/``, written by
``python -m testkit.cluster.kraft_fixtures``) go through every kaudit step (extract kraft,
offsets, log-end, build, validate, report) and are compared with the cluster's answers kept
beside them (``oracle.json``) by the same comparison as the live cases of
``test_real_kraft.py`` (``testkit.cluster.kraft_oracle.compare``): committed offsets, lag, the
tool's describe, log start and end, owners and KIP-848 targets, the KRaft registry, the planted
faults found and none on a healthy group.

The suite's case: a classic 4.x cluster (4.1.1, clean shutdown; the suite's live KRaft case,
``test_real_kraft[4.1.1-kip848]``, is the KIP-848 cluster with transactions); the other kept
KRaft fixtures, 4.1.1-kip848 among them, run under ``make matrix``.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from testkit.cluster.kraft_fixtures import outcome as kept_outcome
from testkit.cluster.kraft_oracle import audit, compare

pytestmark = pytest.mark.integration

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "kafka-real"
SUBSET = {"4.1.1-classic"}
CASES = sorted(p.parent.parent.name for p in FIXTURES.glob("*/metadata/__cluster_metadata-0"))


def test_the_suites_cases_are_kept():
    assert set(CASES) >= SUBSET


@pytest.mark.parametrize("case", [pytest.param(c, marks=() if c in SUBSET else (pytest.mark.matrix,), id=c)
                                  for c in CASES])
def test_kept_cluster_audited(case, spark, tmp_path):
    outcome = kept_outcome(FIXTURES / case)
    started = time.monotonic()
    audit(outcome, tmp_path / "warehouse", "real")
    result = compare(outcome, tmp_path / "warehouse", "real")
    print(f"| {case} (kept) | {result.row()} | kaudit {time.monotonic() - started:.0f} s |")
    assert result.compared > 50
    assert not result.mismatches, "\n".join(result.mismatches)
    assert result.found == result.expected
    if outcome.scenario == "classic":
        assert result.expected > 0  # a reset and a loss
    else:
        assert outcome.planted.aborted_offsets  # the aborted transaction's offsets, in the log
    assert not result.false, "\n".join(result.false)
