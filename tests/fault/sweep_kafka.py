"""The Kafka half of the fault sweep: ``kaudit extract offsets`` and ``extract log-end`` run as
subprocesses (the CLI as users run it) on N damaged log dirs (``kafka_damage.py``), plus fixed
cases: inputs that hold nothing readable, usage errors, 2 GiB decompression bombs and kill -9
of ``extract offsets`` 0-1.5 s after its pool's workers are up (each followed by a clean
re-run of the same run id). Prints one
table:

    cases, tracebacks, hangs, max RSS, good records lost, silent wrong rows, wrong exit codes,
    orphans, debris (.staging-* dirs left in the warehouse after the last command of a case)

    python tests/fault/sweep_kafka.py --cases N [--seed S] [--repo DIR] [--timeout 120]

``--repo`` runs another checkout's CLI (e.g. a worktree of an older commit) with this
script's damage and checks.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from kafka_damage import (
    KILL_BATCHES,
    KINDS,
    alive,
    big_offsets_dir,
    bomb_batch,
    clean_logs,
    damage,
    descendants,
    harmless,
    table_rows,
)

from pipelines.warehouse.reading import read_arrow

HERE = Path(__file__).resolve().parent


@dataclass
class Totals:
    cases: int = 0
    tracebacks: int = 0
    hangs: int = 0
    max_rss_mb: int = 0
    lost: int = 0
    wrong: int = 0
    undetectable: int = 0  # wrong rows of the documented blind spot (counted in ``wrong`` too)
    exit_codes: int = 0
    orphans: int = 0
    debris: int = 0
    notes: list[str] = field(default_factory=list)


class Runner:
    def __init__(self, repo: Path, timeout: float, totals: Totals):
        self.repo, self.timeout, self.t = repo, timeout, totals

    def run(self, args: list[str], expect: int, kill_after: float | None = None) -> int | None:
        """One CLI process: counts tracebacks, hangs, RSS, exit codes and orphans. With
        ``kill_after``, kill -9 it that many seconds after its pool's workers are up."""
        with tempfile.TemporaryFile(mode="w+") as log:
            p = subprocess.Popen(
                [sys.executable, "-m", "pipelines", *args], cwd=self.repo, stdout=subprocess.DEVNULL, stderr=log
            )
            family: set[int] = set()
            deadline = time.monotonic() + self.timeout
            status, killing = None, False
            while time.monotonic() < deadline:
                family |= descendants(p.pid)
                if kill_after is not None and len(family) >= 2:
                    deadline, kill_after = time.monotonic() + kill_after, None
                    killing = True
                pid, status, usage = os.wait4(p.pid, os.WNOHANG)
                if pid:
                    break
                time.sleep(0.02)
            else:
                family |= descendants(p.pid)
                os.kill(p.pid, signal.SIGKILL)
                _, _, usage = os.wait4(p.pid, 0)
                if not killing:
                    self.t.hangs += 1
                    self.t.notes.append(f"hang: {' '.join(args[-4:])}")
                status = None
            p.returncode = 0  # reaped above
            log.seek(0)
            err = log.read()
        self.t.max_rss_mb = max(self.t.max_rss_mb, usage.ru_maxrss // 1024)
        if "Traceback" in err:
            self.t.tracebacks += 1
            self.t.notes.append(f"traceback: {err.strip().splitlines()[-1][:160]}")
        time.sleep(2 if killing else 0)
        survivors = [c for c in family if alive(c)]
        self.t.orphans += len(survivors)
        for c in survivors:  # counted; not left to the next case
            os.kill(c, signal.SIGKILL)
        if status is None:
            return None
        code = os.waitstatus_to_exitcode(status)
        if code != expect:
            self.t.exit_codes += 1
            self.t.notes.append(f"exit {code} (expected {expect}): {' '.join(args[-3:])}: {err.strip()[-160:]}")
        return code


def _debris(wh: Path) -> int:
    return sum(1 for _ in wh.rglob(".staging-*")) if wh.exists() else 0


def damaged_case(r: Runner, layout, clean: Path, tmp: Path, seed: int, kind: str) -> None:
    from pipelines.warehouse.warehouse import Warehouse

    logs, wh = tmp / "logs", tmp / "wh"
    case = damage(layout, clean, logs, seed=seed, kind=kind)
    data = (logs / case.file.rel).read_bytes()
    w = Warehouse(wh)
    if r.run(["--warehouse", str(wh), "--run-id", "o", "extract", "offsets", str(logs)], 0) == 0:
        got = table_rows(w, "o")
        wrong = set(got) - layout.rows()
        lost = case.good_rows(layout) - set(got)
        r.t.wrong += len(wrong) + len(got) - len(set(got))
        if case.undetectable:
            r.t.undetectable += len(wrong)
        r.t.lost += len(lost)
        if wrong or lost:
            r.t.notes.append(f"seed {seed} {kind} {case.note}: {len(wrong)} wrong, {len(lost)} lost")
        locations = read_arrow(w, "raw/quarantine", "o")["location"].to_pylist()
        named = f"{logs / case.file.rel}:{case.at}" in locations
        cut = case.kind == "truncate" and case.at == len(data)
        if case.file.topic == "__consumer_offsets" and not (named or cut or case.undetectable or harmless(case, data)):
            r.t.notes.append(
                f"seed {seed} {kind} {case.note}: damage at {case.file.rel}:{case.at} not named in raw/quarantine"
            )
    if r.run(["--warehouse", str(wh), "--run-id", "e", "extract", "log-end", str(logs)], 0) == 0:
        ends = {(x["topic"], x["partition"]): x for x in read_arrow(w, "raw/log_end_offsets", "e").to_pylist()}
        for key, (start, max_start, min_end, end) in case.ends_bounds(layout).items():
            x = ends.get(key)
            ok = x is not None and None not in (x["log_start_offset"], x["log_end_offset"])
            if not ok or not (start <= x["log_start_offset"] <= max_start and min_end <= x["log_end_offset"] <= end):
                r.t.wrong += 1
                if case.undetectable and key == (case.file.topic, case.file.partition):
                    r.t.undetectable += 1
                got = x and (x["log_start_offset"], x["log_end_offset"])
                r.t.notes.append(f"seed {seed} {kind} {case.note}: log-end {key} = {got}, "
                                 f"expected start in [{start}, {max_start}], end in [{min_end}, {end}]")
    r.t.debris += _debris(wh)


def fixed_cases(r: Runner, tmp: Path, rng: random.Random, kills: int) -> int:
    """Unreadable inputs, usage errors, 2 GiB bombs, kill -9. Returns how many."""
    from testkit.segments import (
        batch,
        offset_commit_key,
        offset_commit_value,
        segment_name,
        write_segment,
    )

    wh = str(tmp / "wh")
    (tmp / "empty").mkdir(parents=True)
    (tmp / "dir.log").mkdir()
    garbage = tmp / "garbage" / "__consumer_offsets-0" / segment_name(0)
    garbage.parent.mkdir(parents=True)
    garbage.write_bytes(rng.randbytes(1 << 20))
    (tmp / "only-offsets" / "__consumer_offsets-0").mkdir(parents=True)
    junk_topic = tmp / "junk-logs" / "t-0" / segment_name(0)
    junk_topic.parent.mkdir(parents=True)
    junk_topic.write_bytes(rng.randbytes(1 << 20))
    cases = [
        (["extract", "offsets", str(tmp / "nope")], 1),
        (["extract", "offsets", str(tmp / "empty")], 1),
        (["extract", "offsets", str(tmp / "dir.log")], 1),
        (["extract", "offsets", str(garbage)], 1),
        (["extract", "offsets"], 2),
        (["extract", "log-end"], 2),
        (["extract", "log-end", str(tmp / "only-offsets")], 1),
        (["extract", "log-end", str(tmp / "junk-logs")], 1),
    ]
    for args, expect in cases:
        r.run(["--warehouse", wh, *args], expect)
    n = len(cases)
    for codec in ("zstd", "gzip"):
        def commit(i):
            return batch(
                [(offset_commit_key("g", "t", i), offset_commit_value(i, commit_ts=1))], base_offset=i, timestamp_ms=1
            )

        seg = tmp / f"bomb-{codec}" / "__consumer_offsets-0" / segment_name(0)
        write_segment(seg, [commit(0), bomb_batch(commit(1), codec, 2 << 30), commit(2)])
        r.run(["--warehouse", wh, "--run-id", f"bomb-{codec}", "extract", "offsets", str(seg)], 0)
        n += 1
    big = big_offsets_dir(tmp / "big", batches=KILL_BATCHES)
    for k in range(kills):
        kwh = str(tmp / f"kill-{k}")
        r.run(["--warehouse", kwh, "--run-id", "k", "extract", "offsets", str(big)], 0, kill_after=rng.uniform(0, 1.5))
        r.run(["--warehouse", kwh, "--run-id", "k", "extract", "offsets", str(big)], 0)
        r.t.debris += _debris(Path(kwh))
        n += 1
    return n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=50, help="damaged log dirs (default 50)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--kills", type=int, default=6, help="kill -9 cases (default 6)")
    ap.add_argument("--repo", type=Path, default=HERE.parents[1], help="checkout whose CLI runs (default: this one)")
    ap.add_argument("--timeout", type=float, default=120, help="seconds before a command counts as a hang")
    args = ap.parse_args()
    t = Totals()
    r = Runner(args.repo.resolve(), args.timeout, t)
    rng = random.Random(args.seed)
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        layout = clean_logs(root / "clean", seed=args.seed)
        for n in range(args.cases):
            case_dir = root / f"case-{n}"
            damaged_case(r, layout, root / "clean", case_dir, seed=args.seed * 100_000 + n, kind=KINDS[n % len(KINDS)])
            t.cases += 1
            shutil.rmtree(case_dir)
        t.cases += fixed_cases(r, root / "fixed", rng, args.kills)
    print(f"repo {args.repo} ({time.monotonic() - started:.0f}s)")
    header = ["cases", "tracebacks", "hangs", "max RSS", "good records lost", "silent wrong rows", "wrong exit codes",
              "orphans", "debris"]
    wrong = f"{t.wrong}" + (f" ({t.undetectable} undetectable)" if t.undetectable else "")
    values = [t.cases, t.tracebacks, t.hangs, f"{t.max_rss_mb} MB", t.lost, wrong, t.exit_codes, t.orphans, t.debris]
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" for _ in header) + "|")
    print("| " + " | ".join(map(str, values)) + " |")
    for note in t.notes[:40]:
        print(f"  - {note}")
    if len(t.notes) > 40:
        print(f"  - ... {len(t.notes) - 40} more")


if __name__ == "__main__":
    main()
