"""The demo cluster: ``kaudit demo [--out DIR]``.

``data/`` holds a small Kafka cluster's files with known faults (``scripts/make_demo_data.py``
made them once; ``faults.json`` lists every planted fault and expected figure):

- ``data/zookeeper/version-2/``: snapshots and transaction logs written by a real ZooKeeper 3.8
  server that was killed with its sessions open (0.8+ and 0.7 Kafka layouts);
- ``data/kafka-logs/``: ``__consumer_offsets-<N>/`` and data-topic segments;
- ``data/kraft/``: a KRaft (Kafka 4.x) cluster: ``metadata/__cluster_metadata-0/`` (log segments
  and a snapshot) and ``kafka-logs/`` (KIP-848 groups in ``__consumer_offsets``, data topics).

:func:`run_demo` copies them to a directory of their own and runs the real steps on them:
extract (ZooKeeper snapshot + logs, ``__consumer_offsets``, log ends) -> build -> validate ->
report, and beside it the same for the KRaft cluster in a run of its own (``<run id>-kraft``: a
run holds one cluster's evidence), then the Kafka 4.x estate real brokers wrote (``real/``,
:mod:`pipelines.demo.estate`: share and Streams groups, tiered storage, the ZooKeeper-to-KRaft
migration, MirrorMaker 2), and prints where the reports are and what they found next to what
was planted.
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import json
import shutil
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path

from pipelines.context import RunContext, in_background
from pipelines.errors import UsageError
from pipelines.report.write import DELETED_TOPIC_COMMITS, ISR_BELOW_MIN
from pipelines.warehouse.runs import RUN_ID

DATA = Path(__file__).resolve().parent / "data"
MANIFEST = Path(__file__).resolve().parent / "faults.json"
REAL = Path(__file__).resolve().parent / "real"  # data dirs real brokers wrote (real/README.md)
REAL_DIR = "real"  # where the demo's copy of them goes
MARKER = ".kaudit-demo"  # written into every demo dir: only such dirs are ever replaced
DEFAULT_DIR = "demo-out"  # next to the warehouse
KRAFT = "kraft"  # data/kraft: the KRaft cluster
KRAFT_RUN_SUFFIX = "-kraft"
WAITS = "waits for the ZooKeeper build"  # the KRaft run's step between its extracts and its build


def load_manifest() -> dict:
    """The planted faults and expected figures of the demo cluster."""
    return json.loads(MANIFEST.read_text())


def write_cluster(out: Path) -> Path:
    """Copy the demo cluster's files to ``out``; replaces ``out`` only if it is a previous demo."""
    out = Path(out).absolute()
    if out.exists():
        if not out.is_dir():
            raise UsageError(f"--out {out}: exists and is not a directory")
        if (out / MARKER).is_file():
            shutil.rmtree(out)
        elif any(out.iterdir()):
            raise UsageError(f"--out {out}: exists, is not empty and is not a kaudit demo cluster (no {MARKER})")
    from pipelines.demo import estate

    if not all((DATA / d).is_dir() for d in ("zookeeper", "kafka-logs", KRAFT)) or estate.missing():
        raise UsageError(f"{DATA.parent}: the demo data is missing from this installation")
    staging = out.with_name(f".{out.name}.staging")
    shutil.rmtree(staging, ignore_errors=True)
    shutil.copytree(DATA, staging)
    shutil.copytree(REAL, staging / REAL_DIR)
    shutil.copy2(MANIFEST, staging / MANIFEST.name)
    (staging / MARKER).write_text(json.dumps({"kaudit_demo": 1, "source": str(DATA)}) + "\n")
    if out.exists():  # an empty directory the user gave us
        out.rmdir()
    staging.rename(out)
    return out


def kraft_run_id(run_id: str) -> str:
    """The run of the demo's KRaft cluster."""
    kraft = f"{run_id}{KRAFT_RUN_SUFFIX}"
    if not RUN_ID.match(kraft):
        raise UsageError(f"--run-id {run_id}: the demo's KRaft run would be {kraft}, longer than 64 characters")
    return kraft


def run_demo(ctx: RunContext, out: Path | None = None, alongside: bool = True) -> dict:
    """Write the demo cluster to ``out`` and run every step on it; returns what it found.

    The KRaft cluster's run goes on beside the ZooKeeper one (``alongside``; False: after it),
    on a thread, quiet, in the same Spark session; its build waits for the ZooKeeper run's build
    (the step ``waits for the ZooKeeper build``). Each build keeps both cores busy on its own
    chains of jobs: two at once only shared them, and took more CPU in all (figures in
    docs/benchmarks.md, ``benchmarks/bench_demo.py``). The KRaft run's extracts go on during
    the ZooKeeper build, its build during the ZooKeeper validation and report. Their dbt
    builds, and their validations, take turns (``dbt_runner``, ``quality.run``). Both runs are
    small: the session's code generation and planning suit both (``session.size_to_run``)."""
    kraft_ctx = dataclasses.replace(ctx, run_id=kraft_run_id(ctx.run_id), quiet=True)
    from pipelines import cluster, quality  # noqa: F401 - (quality: see below)
    from pipelines import steps as pipeline
    from pipelines.demo import estate

    # the Spark session starts while the cluster is written and the extractors run (a build
    # submitted to a cluster needs none here), and Great Expectations is imported meanwhile
    # (`pipelines.quality`, imported above, set the environment: no thread may while the JVM starts)
    spark = None if cluster.submits(ctx) else ctx.start_spark()
    if spark is not None:
        in_background(import_validation, "import-gx")
    out = write_cluster(out if out is not None else ctx.warehouse.root.parent / DEFAULT_DIR)
    ctx.say(f"demo cluster written to {out} (warehouse {ctx.warehouse.root})")

    def build(run: RunContext, select: list[str] | None = None) -> None:
        """The run's build; ``select``: only those dbt models (not submitted to a cluster)."""
        if spark is not None:
            spark.result()  # (the error that stopped the JVM's start, if any)
        if select is None or spark is None:
            pipeline.build(run)
            return
        from pipelines.transform.dbt_runner import run_dbt

        pipeline.build(run, run_dbt=False)
        run_dbt(run, select=select)

    # the KRaft run starts once the ZooKeeper run's first step is recorded (it stays the newest
    # run), and builds once the ZooKeeper run's build is over (`built`, also set as this run fails)
    recorded, built, stop = threading.Event(), threading.Event(), threading.Event()
    kraft_steps = kraft_plan(kraft_ctx, out, build, turn=built.wait if alongside else None)
    # the real brokers' estate follows the KRaft run on its thread: one build at a time
    estate_steps = estate.plan(ctx, out / REAL_DIR, lambda run, select: build(run, select))

    def kraft_alongside() -> tuple[dict[str, float], dict[str, float]]:
        recorded.wait()
        kraft_timings = timed(kraft_steps, stop)
        return kraft_timings, timed(estate_steps, stop)

    kraft_run = in_background(kraft_alongside, "demo-kraft") if alongside else None
    zk_dir, kafka_dir = out / "zookeeper", out / "kafka-logs"

    def first() -> None:
        try:
            pipeline.extract_zk_snapshot(ctx, path=zk_dir)
        finally:
            recorded.set()

    def zk_build() -> None:
        try:
            build(ctx)
        except BaseException:
            stop.set()  # before the KRaft run wakes: it builds nothing once this one has failed
            raise
        finally:
            built.set()

    steps = [
        ("extract zk-snapshot", first),
        ("extract offsets", lambda: pipeline.extract_offsets(ctx, paths=[kafka_dir])),
        ("extract log-end", lambda: pipeline.extract_log_end(ctx, paths=[kafka_dir])),
        ("build", zk_build),
        ("validate", lambda: pipeline.validate(ctx, strict=False)),
        ("report", lambda: pipeline.report(ctx)),
    ]
    try:
        timings = timed(steps, say=ctx.say)
    except BaseException:
        if kraft_run is not None:  # no Spark work of the other run left running as this one fails
            stop.set()
            built.set()
            wait(kraft_run)
        raise

    report_dir = ctx.warehouse.partition_dir("reports", ctx.run_id)
    summary_path = report_dir / "summary.json"
    summary = json.loads(summary_path.read_text()) if summary_path.is_file() else {}
    expected = load_manifest()["expected"]
    mismatches = compare(summary, expected)
    for line in summary_lines(summary):
        ctx.say(line)
    if mismatches:
        ctx.say(f"[yellow]differs from the planted faults ({MANIFEST.name}):[/] " + "; ".join(mismatches))
    else:
        ctx.say(f"all planted faults found (see {out / MANIFEST.name})")
    ctx.say(f"report: {report_dir / 'index.html'}  ({timings['total']:.0f} s)")
    if kraft_run is not None:
        kraft_timings, estate_timings = kraft_run.result()
    else:
        kraft_timings, estate_timings = timed(kraft_steps, stop), timed(estate_steps, stop)
    kraft = kraft_outcome(ctx, kraft_ctx, kraft_timings, alongside)
    real = estate.outcome(ctx, estate_timings)
    return {
        "out": str(out),
        "report": str(report_dir / "index.html"),
        "summary": summary,
        "timings": timings,
        "mismatches": mismatches,
        "kraft": kraft,
        "real": real,
    }


def import_validation() -> None:
    """Great Expectations' import (scipy's with it: 2.4 s of the GIL), on a thread as the demo
    starts, beside the JVM's start and the extracts, rather than in the first validation, where
    it held the GIL against the other run's dbt build: the KRaft run's validation takes about
    half as long. (Imported after dbt's parse instead, while the core builds ran, it made the
    demo slower.)"""
    import pipelines.quality.gx_runner  # noqa: F401


def timed(steps: list[tuple[str, Callable[[], None]]], stop: threading.Event | None = None,
          say: Callable[[str], None] | None = None) -> dict[str, float]:
    """Runs ``steps`` in order (each announced and timed on ``say``; none left once ``stop`` is
    set); returns each one's seconds and their ``total``."""
    timings: dict[str, float] = {}
    started = time.monotonic()
    for i, (label, step) in enumerate(steps, 1):
        if stop is not None and stop.is_set():
            break
        if say is not None:
            say(f"[bold][{i}/{len(steps)}] {label}[/]")
        t = time.monotonic()
        step()
        timings[label] = round(time.monotonic() - t, 2)
        if say is not None:
            say(f"      {label}: {timings[label]:.1f} s")
    timings["total"] = round(time.monotonic() - started, 2)
    return timings


def wait(future: Future) -> None:
    """Until ``future`` is done, whatever its outcome."""
    with contextlib.suppress(BaseException):
        future.result()


def kraft_plan(kraft: RunContext, out: Path, build: Callable[[RunContext], None],
               turn: Callable[[], object] | None = None) -> list:
    """The KRaft cluster's steps: extract kraft + offsets + log-end -> (``turn``: waits for the
    ZooKeeper build) -> build -> validate -> report."""
    from pipelines import steps as pipeline

    meta, logs = out / KRAFT / "metadata", out / KRAFT / "kafka-logs"
    return [
        ("extract kraft", lambda: pipeline.extract_kraft(kraft, paths=[meta])),
        ("extract offsets", lambda: pipeline.extract_offsets(kraft, paths=[logs])),
        ("extract log-end", lambda: pipeline.extract_log_end(kraft, paths=[logs])),
        *([(WAITS, turn)] if turn is not None else []),
        ("build", lambda: build(kraft)),
        ("validate", lambda: pipeline.validate(kraft, strict=False)),
        ("report", lambda: pipeline.report(kraft)),
    ]


def kraft_outcome(ctx: RunContext, kraft: RunContext, timings: dict[str, float], alongside: bool) -> dict:
    """What the KRaft cluster's run found: one line of its step times, one of findings, the
    report (on ``ctx``); compared with the manifest."""
    when = "alongside the ZooKeeper one" if alongside else "after the ZooKeeper one"
    ctx.say(f"[bold]KRaft cluster[/] (metadata log + snapshot, KIP-848 groups): run {kraft.run_id}, {when}")
    ctx.say("      " + ", ".join(f"{label} {s:.1f} s" for label, s in timings.items() if label != "total"))

    report_dir = kraft.warehouse.partition_dir("reports", kraft.run_id)
    summary_path = report_dir / "summary.json"
    summary = json.loads(summary_path.read_text()) if summary_path.is_file() else {}
    found = kraft_findings(report_dir / "findings.csv")
    mismatches = compare_kraft(summary, found, load_manifest()["kraft"]["expected"])
    ctx.say(kraft_line(found))
    if mismatches:
        ctx.say(f"[yellow]differs from the planted KRaft faults ({MANIFEST.name}):[/] " + "; ".join(mismatches))
    ctx.say(f"report: {report_dir / 'index.html'}  ({timings['total']:.0f} s)")
    return {
        "run_id": kraft.run_id,
        "report": str(report_dir / "index.html"),
        "summary": summary,
        "findings": found,
        "timings": timings,
        "mismatches": mismatches,
    }


def kraft_findings(findings_csv: Path) -> Counter:
    """``(source, status)`` counts of the report's ``findings.csv``."""
    if not findings_csv.is_file():
        return Counter()
    with findings_csv.open(newline="", encoding="utf-8") as f:
        return Counter((r["source"], r["status"]) for r in csv.DictReader(f))


def kraft_line(found: Counter) -> str:
    """One line of the KRaft run's findings."""
    groups = {status: n for (source, status), n in sorted(found.items()) if source == "kafka"}
    return (
        f"kraft: {found[('kraft', ISR_BELOW_MIN)]} partition(s) with ISR below min.insync.replicas, "
        f"{found[('kraft', DELETED_TOPIC_COMMITS)]} partition(s) committed while their topic was deleted; KIP-848: "
        + (", ".join(f"{n} {s}" for s, n in groups.items()) or "no findings")
    )


def compare_kraft(summary: dict, found: Counter, expected: dict) -> list[str]:
    """Where the KRaft run's report differs from the manifest's planted faults."""
    out = []
    got = summary.get("assignment", {}).get("kafka", {})
    for status, n in expected["assignment"]["kafka"].items():
        if got.get(status, 0) != n:
            out.append(f"kafka {status}: {got.get(status, 0)} (planted {n})")
    planted = Counter(f["finding"] for f in expected["group_findings"])
    planted[ISR_BELOW_MIN] = len(expected["isr_below_min_insync"])
    planted[DELETED_TOPIC_COMMITS] = len(expected["deleted_topic_commits"])
    for status, n in sorted(planted.items()):
        source = "kraft" if status in (ISR_BELOW_MIN, DELETED_TOPIC_COMMITS) else "kafka"
        if found[(source, status)] != n:
            out.append(f"{status}: {found[(source, status)]} (planted {n})")
    if summary.get("offset_regressions", 0) != expected["offset_regressions"]:
        got_regressions = summary.get("offset_regressions", 0)
        out.append(f"offset regressions: {got_regressions} (planted {expected['offset_regressions']})")
    return out


def summary_lines(summary: dict) -> list[str]:
    """A few lines of ``summary.json`` for the terminal."""
    if not summary:
        return ["no summary.json was written"]
    inputs = summary.get("inputs", {})
    lines = [
        f"inputs: {inputs.get('znodes', 0)} znodes, {inputs.get('offset_records', 0)} offset records, "
        f"{inputs.get('quarantined', 0)} quarantined"
    ]
    for source, statuses in summary.get("assignment", {}).items():
        found = ", ".join(f"{n} {s}" for s, n in statuses.items() if n)
        lines.append(f"assignment ({source}): {found or 'nothing audited'}")
    lines.append(f"offset regressions: {summary.get('offset_regressions', 0)}")
    exp = summary.get("expectations", {})
    lines.append(f"expectations: {exp.get('evaluated', 0)} evaluated, {exp.get('failed', 0)} failed")
    return lines


def compare(summary: dict, expected: dict) -> list[str]:
    """Where ``summary.json`` differs from the manifest's planted faults (empty: all found)."""
    out = []
    for source, statuses in expected["assignment"].items():
        got = summary.get("assignment", {}).get(source, {})
        for status, n in statuses.items():
            if got.get(status, 0) != n:
                out.append(f"{source} {status}: {got.get(status, 0)} (planted {n})")
    if summary.get("offset_regressions", 0) != expected["offset_regressions"]:
        out.append(
            f"offset regressions: {summary.get('offset_regressions', 0)} (planted {expected['offset_regressions']})"
        )
    quarantined = summary.get("inputs", {}).get("quarantined", 0)
    if quarantined != expected["quarantined"]:
        out.append(f"quarantined: {quarantined} (planted {expected['quarantined']})")
    return out
