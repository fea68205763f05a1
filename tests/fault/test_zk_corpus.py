"""The ZooKeeper half of the fault corpus: seeded damage (``zk_damage.py``) to a data dir a
real ZooKeeper wrote, read by ``kaudit extract zk-snapshot``. Per case: no traceback, exit 0
(something readable always remains), bounded time, Parquet that reads back, and the
published tree equal to what the test wrote up to the zxid the metadata claims - or, when
it is not, flagged (never "digest verified") and named in raw/quarantine. A removed txn is
never replayed past as verified. ``KAUDIT_FUZZ_CASES`` cases (default 20; ``make fuzz`` more).
"""

from __future__ import annotations

import os
import shutil
import time

import pytest
from zk_damage import KINDS, PROBLEMS, Case, clean, damage, files, judge, zxid

pytestmark = pytest.mark.integration

CASES = int(os.environ.get("KAUDIT_FUZZ_CASES", "20"))
BOUND = 30.0  # seconds per case (each takes about one)


@pytest.fixture(scope="module")
def corpus(request, tmp_path_factory):
    """The clean data dir, kept in pytest's cache between runs when there is one."""
    cache = getattr(request.config, "cache", None)
    return clean(cache.mkdir("zk-corpus") if cache is not None else tmp_path_factory.mktemp("zk-corpus"))


def _run(data, warehouse, run_id, capsys) -> tuple[int | None, str, float]:
    from pipelines.cli import main

    t0 = time.monotonic()
    try:
        main(["--warehouse", str(warehouse), "--run-id", run_id, "--quiet", "extract", "zk-snapshot", str(data)])
        rc = 0
    except SystemExit as done:
        rc = done.code
    except Exception as err:  # noqa: BLE001 - a traceback is what the corpus looks for
        import traceback

        return 99, "Traceback\n" + "".join(traceback.format_exception(err)), time.monotonic() - t0
    return rc, capsys.readouterr().err, time.monotonic() - t0


def test_clean_data_dir_is_read_whole_and_verified(corpus, tmp_path, capsys):
    rc, err, _ = _run(corpus.data, tmp_path / "wh", "clean", capsys)
    case = Case("clean", 0, corpus.data, "", "", must_name=False, last=corpus.last)
    verdict = judge(corpus, case, rc, err, tmp_path / "wh", "clean")
    assert verdict["equal"] and verdict["verified"] is True and verdict["zxid"] >= corpus.last, str(verdict)
    assert verdict["quarantined"] == [], str(verdict)


@pytest.mark.parametrize("behind", [2, 5])
def test_a_snapshot_finished_past_its_name_is_read_from_its_digest(corpus, tmp_path, capsys, behind):
    """ZooKeeper names a snapshot by the zxid it started at and writes the digest of the zxid
    it ended at; under load txns land in between. The newest snapshot renamed ``behind`` txns
    earlier is such a snapshot: its tree is exactly the digest's, the txns in between are in it
    (two or more: one txn replayed again onto its own result changes nothing)."""
    data = tmp_path / "data"
    shutil.copytree(corpus.data, data)
    newest = files(data / "version-2", "snapshot")[-1]
    newest.rename(newest.with_name(f"snapshot.{zxid(newest) - behind:x}"))
    rc, err, _ = _run(data, tmp_path / "wh", "late", capsys)
    case = Case("late", 0, data, "", "", must_name=False, last=corpus.last)
    verdict = judge(corpus, case, rc, err, tmp_path / "wh", "late")
    assert verdict["equal"] and verdict["verified"] is True and verdict["zxid"] >= corpus.last, str(verdict)
    assert verdict["quarantined"] == [], str(verdict)


@pytest.mark.parametrize("seed", range(CASES))
def test_damaged_data_dir(corpus, tmp_path, capsys, seed):
    case = damage(corpus, tmp_path / "data", seed, KINDS[seed % len(KINDS)])
    rc, err, took = _run(case.data, tmp_path / "wh", f"c{seed}", capsys)
    verdict = judge(corpus, case, rc, err, tmp_path / "wh", f"c{seed}")
    problems = [p for p in PROBLEMS if verdict[p]]
    assert not problems and took < BOUND, (case.kind, case.file, case.detail, problems, verdict, err[-2000:])
    if case.kind == "utf8_path":  # the rest of the tree is kept
        assert verdict["equal"]
