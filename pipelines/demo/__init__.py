"""The demo cluster: ``kaudit demo [--out DIR]``.

``data/`` holds a small Kafka cluster's files with known faults (``scripts/make_demo_data.py``
made them once; ``faults.json`` lists every planted fault and expected figure):

- ``data/zookeeper/version-2/``: snapshots and transaction logs written by a real ZooKeeper 3.8
  server that was killed with its sessions open (0.8+ and 0.7 Kafka layouts);
- ``data/kafka-logs/``: ``__consumer_offsets-<N>/`` and data-topic segments.

:func:`run_demo` copies them to a directory of their own and runs the real steps on them:
extract (ZooKeeper snapshot + logs, ``__consumer_offsets``, log ends) -> build -> validate ->
report, then prints where the report is and what it found next to what was planted.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

from pipelines.context import RunContext
from pipelines.errors import UsageError

DATA = Path(__file__).resolve().parent / "data"
MANIFEST = Path(__file__).resolve().parent / "faults.json"
MARKER = ".kaudit-demo"  # written into every demo dir: only such dirs are ever replaced
DEFAULT_DIR = "demo-out"  # next to the warehouse


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
    if not (DATA / "zookeeper").is_dir() or not (DATA / "kafka-logs").is_dir():
        raise UsageError(f"{DATA}: the demo data is missing from this installation")
    staging = out.with_name(f".{out.name}.staging")
    shutil.rmtree(staging, ignore_errors=True)
    shutil.copytree(DATA, staging)
    shutil.copy2(MANIFEST, staging / MANIFEST.name)
    (staging / MARKER).write_text(json.dumps({"kaudit_demo": 1, "source": str(DATA)}) + "\n")
    if out.exists():  # an empty directory the user gave us
        out.rmdir()
    staging.rename(out)
    return out


def run_demo(ctx: RunContext, out: Path | None = None) -> dict:
    """Write the demo cluster to ``out`` and run every step on it; returns what it found."""
    out = write_cluster(out if out is not None else ctx.warehouse.root.parent / DEFAULT_DIR)
    ctx.say(f"demo cluster written to {out} (warehouse {ctx.warehouse.root})")
    from pipelines import steps as pipeline

    zk_dir, kafka_dir = out / "zookeeper", out / "kafka-logs"
    steps = [
        ("extract zk-snapshot", lambda: pipeline.extract_zk_snapshot(ctx, path=zk_dir)),
        ("extract offsets", lambda: pipeline.extract_offsets(ctx, paths=[kafka_dir])),
        ("extract log-end", lambda: pipeline.extract_log_end(ctx, paths=[kafka_dir])),
        ("build", lambda: pipeline.build(ctx)),
        ("validate", lambda: pipeline.validate(ctx, strict=False)),
        ("report", lambda: pipeline.report(ctx)),
    ]
    timings: dict[str, float] = {}
    started = time.monotonic()
    for i, (label, step) in enumerate(steps, 1):
        ctx.say(f"[bold][{i}/{len(steps)}] {label}[/]")
        t = time.monotonic()
        step()
        timings[label] = round(time.monotonic() - t, 2)
        ctx.say(f"      {label}: {timings[label]:.1f} s")
    timings["total"] = round(time.monotonic() - started, 2)

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
    return {
        "out": str(out),
        "report": str(report_dir / "index.html"),
        "summary": summary,
        "timings": timings,
        "mismatches": mismatches,
    }


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
