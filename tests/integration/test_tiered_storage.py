"""Tiered storage (KIP-405) audited against a real broker: kaudit on the data dirs a Kafka 4.1.1
broker with remote storage on wrote (Kafka's own ``LocalTieredStorage`` test plugin, the
topic-based remote log metadata manager; ``testkit.cluster.tiered``), compared with what the
scenario did and the broker's listOffsets answers (``testkit.cluster.tiered_oracle``): the log
start from the checkpoint and the live remote segments (not the oldest local segment), the
remote segments' coverage, committed offsets and lag, one commit lost below the remote log
start, commits inside the oldest remote segment at risk from remote retention, none of the
commits older than the local log start reported lost.

In the suite: the kept fixture (``pipelines/demo/real/tiered-4.1.1``) as the demo's run of it
(the session's ``demo_run``: its extracts, build and the marts the comparison reads). Under
``make matrix``: a live broker through every step, and the fixture without its log-start
checkpoint (the log start from the remote segments alone) and without ``__remote_log_metadata``
(a tiered topic: the log start from the checkpoint alone).
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from testkit.cluster.tiered import FIXTURE, run_tiered_scenario
from testkit.cluster.tiered_oracle import audit, compare, extract_and_marts, kept_answer

pytestmark = pytest.mark.integration


def _check(answer: dict, warehouse: Path, label: str, started: float, expected: int = 3, run_id: str = "real",
           **kw) -> None:
    result = compare(answer, warehouse, run_id, **kw)
    print(f"| {label} | {result.row()} | kaudit {time.monotonic() - started:.0f} s |")
    assert answer["did"]["settled"], "the broker never reached the state the scenario waits for"
    assert result.compared > 30
    assert not result.mismatches, "\n".join(result.mismatches)
    assert result.expected == expected
    assert result.found == result.expected
    assert not result.false, "\n".join(result.false)


def test_kept_tiered_broker_audited(demo_run):
    started = time.monotonic()
    # 1 loss below the remote log start, 2 commits in the oldest remote segment
    _check(kept_answer(FIXTURE), demo_run.warehouse, "4.1.1-tiered (kept, the demo's run)", started,
           run_id=demo_run.estate_run("tiered"))


@pytest.mark.matrix
@pytest.mark.parametrize("without", ["log-start-offset-checkpoint", "__remote_log_metadata"])
def test_kept_tiered_broker_without(without, spark, tmp_path):
    case = tmp_path / "case"
    shutil.copytree(FIXTURE, case)
    for p in (case / "logs").glob(f"{without}*"):
        shutil.rmtree(p) if p.is_dir() else p.unlink()
    started = time.monotonic()
    extract_and_marts(case, tmp_path / "warehouse", "real")
    remote = without != "__remote_log_metadata"
    _check(kept_answer(FIXTURE), tmp_path / "warehouse", f"4.1.1-tiered (kept, without {without})", started,
           expected=3 if remote else 1, checkpoint=without != "log-start-offset-checkpoint", remote=remote)


@pytest.mark.matrix
def test_real_tiered_broker_audited(spark, tmp_path):
    outcome = run_tiered_scenario(tmp_path / "cluster")
    case = tmp_path / "case"
    case.mkdir()
    (case / "logs").symlink_to(outcome.log_dir)
    (case / "metadata").symlink_to(outcome.cluster.metadata_dir.parent)
    started = time.monotonic()
    audit(case, tmp_path / "warehouse", "real")
    _check(outcome.answer, tmp_path / "warehouse", "4.1.1-tiered (live)", started)
