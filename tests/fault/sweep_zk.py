"""The ZooKeeper fault sweep: ``kaudit extract zk-snapshot`` (a new process per case) over N
seeded damaged copies of a data dir a real ZooKeeper wrote (``zk_damage.py``), judged
against what the test wrote; prints one table.

    python tests/fault/sweep_zk.py --cases 300 [--repo DIR] [--cache DIR] [--timeout S]

``--repo``: the checkout whose ``pipelines`` runs (default: this one), to compare versions.
"""

from __future__ import annotations

import argparse
import collections
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from zk_damage import KINDS, PROBLEMS, clean, damage, judge

REPO = Path(__file__).resolve().parents[2]


def run(repo: Path, data: Path, warehouse: Path, run_id: str, timeout: float) -> tuple[int | None, str, float, int]:
    """(exit code or None on a hang, stderr, seconds, max RSS in KiB) of one CLI run."""
    cmd = [sys.executable, "-m", "pipelines", "--warehouse", str(warehouse), "--run-id", run_id, "--quiet",
           "extract", "zk-snapshot", str(data)]
    env = {**os.environ, "PYTHONPATH": str(repo)}
    t0 = time.monotonic()
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, cwd=repo, env=env, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
        deadline = t0 + timeout
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                rc = os.waitstatus_to_exitcode(status)
                break
            if time.monotonic() > deadline:
                os.killpg(proc.pid, 9)
                _, status, usage = os.wait4(proc.pid, 0)
                rc = None
                break
            time.sleep(0.02)
        proc.returncode = -1  # reaped above
        err.seek(0)
        return rc, err.read().decode("utf-8", "replace"), time.monotonic() - t0, usage.ru_maxrss


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", type=int, default=50)
    ap.add_argument("--repo", type=Path, default=REPO)
    ap.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "kaudit-zk-corpus")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds after which a case is a hang")
    ap.add_argument("--verbose", action="store_true", help="one line per problem case")
    args = ap.parse_args()
    corpus = clean(args.cache)
    totals = collections.Counter()
    by_kind: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    max_rss = max_s = 0.0
    with tempfile.TemporaryDirectory(prefix="sweep-zk-") as tmp:
        tmp = Path(tmp)
        for seed in range(args.cases):
            case = damage(corpus, tmp / "data", seed, KINDS[seed % len(KINDS)])
            wh = tmp / "wh"
            rc, err, took, rss = run(args.repo, case.data, wh, f"c{seed}", args.timeout)
            try:
                verdict = judge(corpus, case, rc, err, wh, f"c{seed}")
            except Exception as exc:  # noqa: BLE001 - e.g. a Parquet file that does not read back
                verdict = {p: False for p in PROBLEMS} | {"unreadable_output": True, "debris": 0, "equal": None,
                                                         "verified": None, "why": repr(exc)[:200]}
            max_rss, max_s = max(max_rss, rss), max(max_s, took)
            counts = by_kind[case.kind]
            counts["cases"] += 1
            totals["cases"] += 1
            bad = [p for p in (*PROBLEMS, "unreadable_output") if verdict.get(p)]
            for p in bad:
                counts[p] += 1
                totals[p] += 1
            totals["debris"] += verdict["debris"]
            totals["wrong_rows"] += verdict.get("wrong_rows", 0) if verdict.get("silent_wrong") else 0
            for key, flag in (("unverified", verdict.get("verified") is False), ("exit_1", rc == 1),
                              ("differs_flagged", verdict.get("equal") is False and not verdict.get("silent_wrong"))):
                counts[key] += flag
                totals[key] += flag
            if args.verbose and bad:
                print(f"  seed {seed} {case.kind} {case.file} ({case.detail}): {bad} rc={rc} "
                      f"{err.strip().splitlines()[-1:] if err.strip() else ''} {verdict.get('why', '')}")
            shutil.rmtree(wh, ignore_errors=True)
    cols = ("cases", "traceback", "hang", "wrong_exit", "silent_wrong", "unnamed", "verified_past_gap",
            "unreadable_output", "unverified", "differs_flagged", "exit_1")
    head = subprocess.run(["git", "-C", str(args.repo), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    print(f"repo {args.repo} ({head.stdout.strip()})")
    print(f"{'kind':<18}" + "".join(f"{c:>18}" for c in cols))
    for kind in KINDS:
        if kind in by_kind:
            print(f"{kind:<18}" + "".join(f"{by_kind[kind][c]:>18}" for c in cols))
    print(f"{'total':<18}" + "".join(f"{totals[c]:>18}" for c in cols))
    print(f"max RSS {max_rss / 1024:.0f} MB, slowest case {max_s:.1f}s, silent wrong rows {totals['wrong_rows']}, "
          f"debris {totals['debris']} (staging dirs / temp files left)")


if __name__ == "__main__":
    main()
