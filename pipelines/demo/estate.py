"""The demo's Kafka 4.x estate written by real brokers (``real/``, see its README): share groups
and a Streams group (Kafka 4.2.2), tiered storage (4.1.1), a ZooKeeper cluster migrated to KRaft
(3.9.2) and two clusters with MirrorMaker 2 between them (4.3.1).

A run holds one cluster's evidence for the single-cluster audits, so each data dir is the default
cluster of a run of its own, ``<run id>-<case>``; the MirrorMaker 2 pair joins the migration's
run as the clusters ``source`` and ``target`` (the aliases MirrorMaker gave them), which the
cross-cluster audit reads (docs/clusters.md). The runs' extracts, builds, validations and reports
are the real steps; ``expected.json`` lists what each scenario planted (its README says how),
compared with the runs' ``findings.csv``.
"""

from __future__ import annotations

import dataclasses
import json
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pipelines.context import RunContext
from pipelines.demo import REAL
from pipelines.errors import UsageError
from pipelines.warehouse.runs import RUN_ID

EXPECTED = REAL / "expected.json"
MM2 = "mm2-4.3.1"  # the MirrorMaker 2 pair: its clusters are aliases of the migration's run
MM2_ALIASES = ("source", "target")


@dataclass(frozen=True)
class Case:
    name: str  # the run's suffix
    data: str  # its directory under real/
    about: str
    zookeeper: bool = False  # zk/version-2: the ZooKeeper data dir (the migration's old cluster)
    metadata: bool = False  # metadata/__cluster_metadata-0: the KRaft metadata log
    mm2: bool = False  # the MirrorMaker 2 pair joins this run
    marts: tuple[str, ...] = ()  # the dbt marts its build makes (with what they read): its audits'


CASES = (
    Case("share", "share-4.2.2", "share groups, Kafka 4.2.2",
         marts=("share_group_lag", "share_group_archived_records", "share_group_findings", "group_epochs")),
    Case("streams", "streams-4.2.2", "Streams groups, Kafka 4.2.2",
         marts=("streams_group_tasks", "streams_group_lag", "group_epochs")),
    Case("tiered", "tiered-4.1.1", "tiered storage, Kafka 4.1.1", metadata=True,
         marts=("data_loss_risk", "consumer_lag")),
    Case("migration", "migration-3.9.2", "ZooKeeper-to-KRaft migration, Kafka 3.9.2; MirrorMaker 2 4.3.1",
         zookeeper=True, metadata=True, mm2=True,
         marts=("mm2_failover_readiness", "mm2_findings", "migration_findings", "consumer_lag")),
)


def missing() -> list[str]:
    """The data dirs of the estate missing from this installation."""
    return [d for d in (*(c.data for c in CASES), MM2) if not (REAL / d).is_dir()]


def run_id(base: str, case: Case) -> str:
    out = f"{base}-{case.name}"
    if not RUN_ID.match(out):
        raise UsageError(f"--run-id {base}: the demo's run {out} would be longer than 64 characters")
    return out


def contexts(ctx: RunContext) -> list[tuple[Case, RunContext]]:
    """Each case's run, quiet, in the demo's warehouse."""
    return [(c, dataclasses.replace(ctx, run_id=run_id(ctx.run_id, c), quiet=True)) for c in CASES]


def extract(case: Case, run: RunContext, out: Path) -> None:
    """The extracts of ``case`` from the demo's copy ``out`` (its ``real/``)."""
    from pipelines import steps as pipeline
    from pipelines.clusters import cluster_warehouse

    root = out / case.data
    if case.zookeeper:
        pipeline.extract_zk_snapshot(run, path=root / "zk")
    if case.metadata:
        pipeline.extract_kraft(run, paths=[root / "metadata" / "__cluster_metadata-0"])
    pipeline.extract_offsets(run, paths=[root / "logs"])
    pipeline.extract_log_end(run, paths=[root / "logs"])
    if case.mm2:
        for alias in MM2_ALIASES:
            cluster = dataclasses.replace(run, warehouse=cluster_warehouse(run.warehouse, alias))
            logs = out / MM2 / alias / "logs"
            pipeline.extract_offsets(cluster, paths=[logs])
            pipeline.extract_mm2(cluster, paths=[logs])


def plan(ctx: RunContext, out: Path, build: Callable[[RunContext, list[str]], None]) -> list:
    """Every case's steps, in order: each run's extracts, build, validation and report.
    ``build(run, select)``: the Spark core tables and the dbt models ``select`` names: a case's
    marts and what they read (``+mart``), not the other marts and the history's snapshots, which
    its evidence leaves empty or the ZooKeeper and KRaft runs show (a whole dbt build was most
    of a case's time)."""
    from pipelines import steps as pipeline

    steps = []
    for case, run in contexts(ctx):
        steps += [
            (f"{case.name}: extract", lambda case=case, run=run: extract(case, run, out)),
            (f"{case.name}: build", lambda run=run, case=case: build(run, [f"+{m}" for m in case.marts])),
            (f"{case.name}: validate", lambda run=run: pipeline.validate(run, strict=False)),
            (f"{case.name}: report", lambda run=run: pipeline.report(run)),
        ]
    return steps


def findings(findings_csv: Path) -> Counter:
    """``(source, status)`` counts of a report's ``findings.csv``."""
    import csv

    if not findings_csv.is_file():
        return Counter()
    with findings_csv.open(newline="", encoding="utf-8") as f:
        return Counter((r["source"], r["status"]) for r in csv.DictReader(f))


def outcome(ctx: RunContext, timings: dict[str, float], stop: threading.Event | None = None) -> dict:
    """What each case's run found against ``expected.json``: one line each (on ``ctx``)."""
    expected = json.loads(EXPECTED.read_text())
    ctx.say("[bold]Kafka 4.x estate written by real brokers[/] (pipelines/demo/real/)")
    out = {}
    for case, run in contexts(ctx):
        report_dir = run.warehouse.partition_dir("reports", run.run_id)
        found = findings(report_dir / "findings.csv")
        planted = Counter({tuple(key.split(" ", 1)): n for key, n in expected[case.name]["findings"].items()})
        mismatches = [f"{source} {status}: {found[(source, status)]} (planted {planted[(source, status)]})"
                      for source, status in sorted(set(found) | set(planted))
                      if found[(source, status)] != planted[(source, status)]]
        seconds = sum(s for label, s in timings.items() if label.startswith(f"{case.name}: "))
        listed = ", ".join(f"{n} {status}" for (_, status), n in sorted(found.items())) or "no findings"
        ctx.say(f"  {case.name} ({case.about}): run {run.run_id}: {listed} ({seconds:.1f} s)")
        if mismatches:
            ctx.say(f"  [yellow]differs from what the scenario planted ({EXPECTED.name}):[/] " + "; ".join(mismatches))
        ctx.say(f"  report: {report_dir / 'index.html'}")
        out[case.name] = {"run_id": run.run_id, "report": str(report_dir / "index.html"),
                          "findings": {f"{s} {st}": n for (s, st), n in sorted(found.items())},
                          "mismatches": mismatches}
    return out
