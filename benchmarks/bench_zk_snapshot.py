"""Offline snapshot read: kaudit vs ZooKeeper's own ``SnapshotFormatter -json`` on the same
snapshot file (>= 1M znodes written by a real ZooKeeper 3.8, cached under benchmarks/.data/).

    .venv/bin/python benchmarks/bench_zk_snapshot.py [--nodes N] [--repeat R]

Figures: kaudit in-process (parse + seal + digest + client-visible rows sorted by path),
``kaudit extract zk-snapshot FILE`` end to end (new process, Parquet written; also its CPU,
user + sys, which a shared machine's load inflates less than the wall time), and the
SnapshotFormatter JVM run (output to /dev/null); ratios of the formatter time to each.
The two process runs are timed R times each (default 3, alternating): min and median, and
the ratios of the medians (and of the mins for the CLI).
The kernels are the ahead-of-time build when ``make`` installed it (``make bench`` does),
else numba's JIT (+~1.3 s per new process): the first line says which. Time it with
kaudit's modules compiled (``__pycache__``): with ``PYTHONDONTWRITEBYTECODE`` set, a fresh
checkout has none and every CLI run compiles them again.

Target: the CLI >= 6x SnapshotFormatter on 1M znodes (107.8 MB snapshot). Method and figures:
docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

from zk_data import build, newest_snapshot

JAVA_CP = ":".join(
    f"/usr/share/java/{j}.jar"
    for j in ("zookeeper", "zookeeper-jute", "slf4j-api", "slf4j-nop", "snappy-java", "commons-cli", "metrics-core")
)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    root = build(f"zk-snapshot-{args.nodes}", args.nodes)
    snap = newest_snapshot(root)
    size = snap.stat().st_size
    print(f"snapshot {snap} ({size / 1e6:.1f} MB); load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")

    from pipelines.zookeeper import native
    from pipelines.zookeeper.extract import read_offline

    t0 = time.perf_counter()
    read_offline(snap)  # cold: imports, numba cache load, page cache
    t_cold = time.perf_counter() - t0
    print(f"kaudit read (in process, first call): {t_cold:.2f}s (kernels: {native.kernels().__name__})")
    t0 = time.perf_counter()
    rows, res = read_offline(snap)
    t_kaudit = time.perf_counter() - t0
    print(f"kaudit read (in process, warm): {rows.num_rows} rows in {t_kaudit:.2f}s "
          f"({rows.num_rows / t_kaudit:,.0f} znodes/s, digest verified: {res.digest_verified})")

    cli, cpu, java = [], [], []
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory() as wh:
            t0 = time.perf_counter()
            proc = subprocess.Popen([sys.executable, "-m", "pipelines", "--warehouse", wh, "--quiet", "extract",
                                     "zk-snapshot", str(snap)])
            _, status, usage = os.wait4(proc.pid, 0)
            cli.append(time.perf_counter() - t0)
            proc.returncode = os.waitstatus_to_exitcode(status)
            if proc.returncode:
                raise SystemExit(f"kaudit extract zk-snapshot failed (exit {proc.returncode})")
            cpu.append(usage.ru_utime + usage.ru_stime)
        t0 = time.perf_counter()
        subprocess.run(["java", "-cp", JAVA_CP, "org.apache.zookeeper.server.SnapshotFormatter", "-json", str(snap)],
                       check=True, stdout=subprocess.DEVNULL)
        java.append(time.perf_counter() - t0)
    t_cli, t_java = statistics.median(cli), statistics.median(java)
    print(f"kaudit extract zk-snapshot (CLI, Parquet written): median {t_cli:.2f}s, min {min(cli):.2f}s "
          f"({' '.join(f'{t:.2f}' for t in cli)}); CPU (user + sys) median {statistics.median(cpu):.2f}s")
    print(f"SnapshotFormatter -json: median {t_java:.2f}s, min {min(java):.2f}s ({' '.join(f'{t:.2f}' for t in java)})")
    print(f"ratio SnapshotFormatter / kaudit (medians): in process warm {t_java / t_kaudit:.1f}x, "
          f"first call {t_java / t_cold:.1f}x, CLI {t_java / t_cli:.1f}x (mins: {min(java) / min(cli):.1f}x; "
          f"target >= 6x)")


if __name__ == "__main__":
    main()
