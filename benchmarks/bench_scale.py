"""Benchmark: the whole pipeline at 1M, 10M and 100M offset commits (``--records``), each step
in its own process, with build's I/O floor measured in the same run.

The cluster (``scale_data.py``): 10k Kafka groups over 100k partitions (1,000 topics of 100)
committing ``records / 1M`` rounds, and a ZooKeeper-era data dir of about 1M znodes (4,800
groups, their owners and offsets) with 960k txns of history; generated once per size under
``--data`` (the ZooKeeper dir is shared by the sizes), in a child process.

Per size, a fresh warehouse, and the steps as a user runs them (``python -m pipelines``, one
process each): ``extract zk-snapshot``, ``extract offsets``, ``build`` (core tables and dbt
marts), ``validate``, ``report``. For each: wall seconds, CPU seconds (the step's process and
its children, the Spark JVM among them: ``RUSAGE_CHILDREN`` or, when more, their ticks sampled
from /proc), peak RSS of the process tree
(the sum of the RSS of the step's process and its descendants, sampled from /proc every
0.2 s: a child's ``ru_maxrss`` would start at its parent's), and seconds per million commits.

Build's I/O floor (``--floor``, a child process after the build): a Spark session of the same
settings (``RunContext.spark``) reading every raw table of the run in full and writing one
Parquet table (zstd) per table the build wrote, of the same rows (read and held in memory
first, not timed); its wall includes the JVM's start, as build's does. The ratio build/floor
is the build's overhead over moving its bytes.

    .venv/bin/python benchmarks/bench_scale.py [--records 1M,10M,100M] [--data /tmp/kaudit-scale]
        [--steps extract-zk,extract-offsets,build,validate,report] [--no-floor] [--keep]

``build-core`` (``build --skip-dbt``: the Spark core tables alone) is a step too, with its floor
(the core tables only, the marts not being written).

``--standalone``: the same steps with the warehouse on a real S3 server (S3Proxy on loopback)
and Spark on a standalone cluster of two workers (1 core each, from the pyspark wheel), started
per size and stopped after; the extracts write to S3 from this machine, build spark-submits
to the cluster. No floor there. CPU and RSS count the cluster's daemons and executors too (the
daemons' own share is small and constant).

Prints one line per step as it ends and the table at the end (also as JSON with ``--json``).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
RUN = "scale"
STEPS = {
    "extract-zk": ["extract", "zk-snapshot", "{zk}"],
    "extract-offsets": ["extract", "offsets", "{kafka}"],
    "build-core": ["build", "--skip-dbt"],
    "build": ["build"],
    "validate": ["validate"],
    "report": ["report"],
}
FLOOR = "bench-scale-floor: "  # the prefix of the floor child's line of figures


def records_arg(text: str) -> list[int]:
    """``1M,10M,100M`` -> [1000000, 10000000, 100000000]."""
    out = []
    for part in text.split(","):
        part = part.strip().upper()
        scale = {"K": 1_000, "M": 1_000_000}.get(part[-1:], 1)
        out.append(int(float(part.rstrip("KM")) * scale))
    return out


class TreeRss:
    """Peak of the summed RSS of a process and its descendants, and their CPU seconds, sampled
    from /proc (a descendant that is not waited for, as PySpark's JVM, is missing from the
    ``RUSAGE_CHILDREN`` of its parent)."""

    def __init__(self, pid: int, every: float = 0.2, also: tuple[int, ...] = ()) -> None:
        self.pid, self.every, self.peak = pid, every, 0
        self.roots = {pid, *also}
        self._cpu: dict[int, int] = {}  # pid -> utime + stime ticks, last seen
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._page = os.sysconf("SC_PAGE_SIZE")

    def _sample(self) -> int:
        parent, rss, ticks = {}, {}, {}
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            pid = int(stat.parent.name)
            parent[pid], rss[pid] = int(fields[1]), int(fields[21]) * self._page
            ticks[pid] = int(fields[11]) + int(fields[12])
        total = 0
        for pid, size in rss.items():
            p = pid
            while p > 1 and p not in self.roots:
                p = parent.get(p, 0)
            if p in self.roots:
                total += size
                self._cpu[pid] = ticks[pid]
        return total

    @property
    def cpu(self) -> float:
        return sum(self._cpu.values()) / os.sysconf("SC_CLK_TCK")

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self._sample())
            self._stop.wait(self.every)

    def __enter__(self) -> TreeRss:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def measured(cmd: list[str], log: Path, env: dict | None = None, also: tuple[int, ...] = ()) -> dict:
    """Runs ``cmd``; its wall and CPU seconds (with its children), peak tree RSS, exit code;
    ``also``: more processes whose trees count (a cluster's daemons: their executors)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    with log.open("ab") as out:
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=out, stderr=subprocess.STDOUT, env=env)
        with TreeRss(proc.pid, also=also) as rss:
            code = proc.wait()
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = max((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), rss.cpu)
    return {"wall": wall, "cpu": cpu, "rss_mb": rss.peak / 1e6, "code": code}


def _format_options() -> list[str]:
    """``--warehouse-format iceberg`` while the CLI still has the option (Iceberg is measured)."""
    out = subprocess.run([sys.executable, "-m", "pipelines", "--help"], cwd=REPO, capture_output=True, text=True)
    return ["--warehouse-format", "iceberg"] if "--warehouse-format" in out.stdout else []


def generate(data: Path, records: int, log: Path) -> tuple[Path, Path, dict | None]:
    """The size's ``__consumer_offsets`` and the shared ZooKeeper data dir (built when missing)."""
    kafka, zk = data / f"kafka-{records}", data / "zk"
    gen = None
    todo = [] if (kafka / "READY").exists() else ["--kafka", str(kafka)]
    todo += [] if (zk / "READY").exists() else ["--zk", str(zk)]
    if todo:
        for d in (kafka, zk):
            if str(d) in todo:
                shutil.rmtree(d, ignore_errors=True)
        env = {**os.environ, "PYTHONPATH": str(REPO)}  # testkit's encoders
        gen = measured([sys.executable, str(HERE / "scale_data.py"), "--records", str(records), *todo], log, env)
        if gen["code"]:
            raise SystemExit(f"generating the data failed: see {log}")
    return kafka, zk, gen


def floor_child(warehouse: str, out: Path, core_only: bool) -> None:
    """Build's I/O floor, in this (child) process: prints its figures as one JSON line."""
    t0 = time.perf_counter()
    from pyspark import StorageLevel
    from rich.console import Console

    from pipelines.context import RunContext
    from pipelines.spark.io import read_spark
    from pipelines.warehouse.reading import row_count
    from pipelines.warehouse.tables import CORE, RAW
    from pipelines.warehouse.warehouse import open_warehouse

    fmt = {"warehouse-format": "iceberg"} if _format_options() else {}
    wh = open_warehouse(warehouse, *fmt.values())
    ctx = RunContext(wh, RUN, quiet=True, console=Console(stderr=True))
    spark = ctx.spark()
    started = time.perf_counter() - t0
    marts = [] if core_only else sorted(f"marts/{p.stem}" for p in (REPO / "models" / "marts").glob("*.sql"))
    outputs = {}
    for table in [*CORE, *marts]:
        try:
            df = read_spark(spark, wh, table, RUN)
        except Exception:  # noqa: BLE001 - a table the build did not write is not in the floor
            continue
        df = df.persist(StorageLevel.MEMORY_AND_DISK)
        outputs[table] = (df, df.count())
    inputs = [t for t in RAW if row_count(wh, t, RUN)]
    t = time.perf_counter()
    read_rows = 0
    for table in inputs:
        read_spark(spark, wh, table, RUN).write.format("noop").mode("overwrite").save()
        read_rows += row_count(wh, table, RUN) or 0
    read = time.perf_counter() - t
    t = time.perf_counter()
    for table, (df, _) in outputs.items():
        df.write.mode("overwrite").option("compression", "zstd").parquet(str(out / table))
    write = time.perf_counter() - t
    print(FLOOR + json.dumps({"start": started, "read": read, "write": write, "inputs": len(inputs),
                              "read_rows": read_rows, "outputs": len(outputs),
                              "written_rows": sum(n for _, n in outputs.values())}), flush=True)


def floor(warehouse: Path, tmp: Path, log: Path, core_only: bool) -> dict | None:
    """Runs :func:`floor_child` in a child process; its figures and the process's wall/CPU/RSS."""
    out = tmp / "floor"
    cmd = [sys.executable, __file__, "--floor-child", str(warehouse), "--floor-out", str(out),
           *(["--floor-core"] if core_only else [])]
    res = measured(cmd, log, {**os.environ, "PYTHONPATH": str(REPO)})  # this checkout's pipelines
    lines = [x for x in log.read_text(errors="replace").splitlines() if x.startswith(FLOOR)]
    if res["code"] or not lines:
        print(f"  the floor failed: {_tail(log)}", flush=True)
        return None
    res.update(json.loads(lines[-1][len(FLOOR):]))
    res["io"] = res["start"] + res["read"] + res["write"]  # the JVM's start, the reads, the writes
    shutil.rmtree(out, ignore_errors=True)
    return res


class Standalone:
    """A Spark standalone master and ``workers`` workers (1 core each) from the pyspark wheel and an
    S3 server (S3Proxy, ``testkit.storage``) on 127.0.0.1, for ``--standalone``; stopped on exit."""

    def __init__(self, root: Path, workers: int = 2, memory: str = "2g") -> None:
        self.root, self.workers, self.memory = root, workers, memory
        self.procs: list[subprocess.Popen] = []
        self.s3 = None
        self.url = ""

    def _daemon(self, cls: str, args: list[str], log: Path, ready: str) -> None:
        import pyspark

        home = Path(pyspark.__file__).resolve().parent
        env = {**{k: v for k, v in os.environ.items() if not k.startswith("AWS_")}, "SPARK_HOME": str(home),
               "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_LOG_DIR": str(log.parent),
               "SPARK_WORKER_DIR": str(log.parent / "work"), "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false"}
        log.parent.mkdir(parents=True, exist_ok=True)
        proc = subprocess.Popen([str(home / "bin" / "spark-class"), cls, *args], stdout=log.open("wb"),
                                stderr=subprocess.STDOUT, env=env, start_new_session=True)
        self.procs.append(proc)
        deadline = time.monotonic() + 240
        while ready not in log.read_text(errors="replace"):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"{cls} did not start: {log}")
            time.sleep(0.5)

    def __enter__(self) -> Standalone:
        sys.path.insert(0, str(REPO))  # testkit
        from testkit.storage import S3Proxy
        from testkit.zk_server import free_port

        try:
            self.s3 = S3Proxy(self.root / "s3").start()
            self.s3.create_bucket("kaudit")
            port = free_port()
            self.url = f"spark://127.0.0.1:{port}"
            self._daemon("org.apache.spark.deploy.master.Master",
                         ["--host", "127.0.0.1", "--port", str(port), "--webui-port", "0"],
                         self.root / "master" / "master.log", "New state: ALIVE")
            for w in range(self.workers):
                self._daemon("org.apache.spark.deploy.worker.Worker",
                             [self.url, "--host", "127.0.0.1", "--cores", "1", "--memory", self.memory,
                              "--webui-port", "0"],
                             self.root / f"worker{w}" / "worker.log", "Successfully registered with master")
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc) -> None:
        from testkit.servers import stop_group

        for proc in reversed(self.procs):
            stop_group(proc)
        if self.s3 is not None:
            self.s3.stop()

    def options(self, tmp: Path) -> list[str]:
        """The global options of a step on the cluster, its warehouse on S3."""
        return ["--warehouse", "s3a://kaudit/scale", "--warehouse-local", str(tmp / "local"),
                "--catalog", str(tmp / "catalog.db"), "--spark-master", self.url]


def run_size(records: int, args, fmt: list[str]) -> dict:
    """Every step of one size on a fresh warehouse; the figures per step."""
    tmp = Path(tempfile.mkdtemp(prefix=f"bench-scale-{records}-", dir=args.data))
    log = tmp / "bench.log"
    kafka, zk, gen = generate(args.data, records, log)
    figures: dict[str, dict] = {}
    if gen:
        figures["generate"] = gen
        _say(records, "generate", gen)
    warehouse = tmp / "warehouse"
    cluster = Standalone(tmp / "cluster") if args.standalone else None
    try:
        if cluster is not None:
            cluster.__enter__()
        env = {**os.environ, **cluster.s3.env()} if cluster is not None else None
        place = cluster.options(tmp) if cluster is not None else ["--warehouse", str(warehouse)]
        for step in args.steps:
            words = [w.format(zk=zk, kafka=kafka) for w in STEPS[step]]
            cmd = [sys.executable, "-m", "pipelines", "--quiet", *place, *fmt, "--run-id", RUN, *words]
            load = os.getloadavg()[0]
            res = measured(cmd, log, env, tuple(p.pid for p in cluster.procs) if cluster is not None else ())
            res["load"] = (load, os.getloadavg()[0])
            figures[step] = res
            _say(records, step, res)
            if res["code"]:
                print(f"  {step} exited {res['code']}: {_tail(log)}", flush=True)
            if step.startswith("build") and not args.no_floor and res["code"] == 0 and cluster is None:
                load = os.getloadavg()[0]
                fl = floor(warehouse, tmp, log, core_only=step == "build-core")
                if fl is None:
                    continue
                fl["load"] = (load, os.getloadavg()[0])
                figures[f"{step} floor"] = fl
                _say(records, f"{step} floor", fl, f"(start {fl['start']:.1f} + read {fl['read']:.1f} "
                     f"+ write {fl['write']:.1f} s; {fl['read_rows']:,} rows read, {fl['written_rows']:,} "
                     f"written); build/floor {res['wall'] / fl['io']:.2f}x")
    finally:
        if cluster is not None:
            cluster.__exit__()
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    return figures


def _tail(log: Path) -> str:
    lines = [x for x in log.read_text(errors="replace").splitlines() if x.strip()]
    return " | ".join(lines[-3:])


def _say(records: int, step: str, res: dict, extra: str = "") -> None:
    wall = res.get("io", res["wall"])
    print(f"{records / 1e6:6.0f}M {step:<16} wall {wall:8.1f} s  cpu {res['cpu']:8.1f} s  "
          f"peak rss {res['rss_mb']:8.0f} MB  {wall / (records / 1e6):7.2f} s/M  "
          f"load {os.getloadavg()[0]:.1f} {extra}", flush=True)


def table(results: dict[int, dict]) -> None:
    """Per step and size: wall, CPU, peak RSS, s per million commits; build/floor."""
    sizes = sorted(results)
    order = ("generate", *STEPS, "build-core floor", "build floor")
    steps = [s for s in order if any(s in results[n] for n in sizes)]
    print(f"\n{'step':<16}" + "".join(f" | {f'{n / 1e6:.0f}M: wall s':>13} {'cpu s':>7} {'RSS MB':>7} {'s/M':>6}"
                                      for n in sizes))
    for step in steps:
        line = f"{step:<16}"
        for n in sizes:
            r = results[n].get(step)
            if r is None:
                line += f" | {'':>13} {'':>7} {'':>7} {'':>6}"
                continue
            wall = r.get("io", r["wall"])
            line += f" | {wall:13.1f} {r['cpu']:7.1f} {r['rss_mb']:7.0f} {wall / (n / 1e6):6.2f}"
        print(line)
    for step in ("build-core", "build"):
        ratios = [f"{n / 1e6:.0f}M {results[n][step]['wall'] / results[n][f'{step} floor']['io']:.2f}x"
                  for n in sizes if step in results[n] and f"{step} floor" in results[n]]
        if ratios:
            print(f"{step} / its I/O floor: " + ", ".join(ratios))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=records_arg, default=records_arg("1M,10M,100M"))
    parser.add_argument("--data", type=Path, default=Path(tempfile.gettempdir()) / "kaudit-scale")
    parser.add_argument("--steps", type=lambda s: s.split(","), default=list(STEPS))
    parser.add_argument("--no-floor", action="store_true", help="skip build's I/O floor")
    parser.add_argument("--keep", action="store_true", help="keep each size's warehouse and log")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--standalone", action="store_true",
                        help="the steps on a Spark standalone cluster of two workers, the warehouse on S3 (S3Proxy)")
    parser.add_argument("--floor-child", help=argparse.SUPPRESS)
    parser.add_argument("--floor-out", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--floor-core", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.floor_child:
        floor_child(args.floor_child, args.floor_out, args.floor_core)
        return
    unknown = [s for s in args.steps if s not in STEPS]
    if unknown:
        parser.error(f"--steps {','.join(unknown)}: expected some of {','.join(STEPS)}")
    args.data.mkdir(parents=True, exist_ok=True)
    fmt = _format_options()
    print(f"kaudit at scale: {', '.join(f'{n:,}' for n in args.records)} offset commits; "
          f"{os.cpu_count()} cores; load {' '.join(f'{x:.1f}' for x in os.getloadavg())}", flush=True)
    results = {}
    for n in args.records:
        results[n] = run_size(n, args, fmt)
        if args.json:
            args.json.write_text(json.dumps({str(k): v for k, v in results.items()}, indent=1))
    table(results)


if __name__ == "__main__":
    main()
