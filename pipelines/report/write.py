"""``kaudit report``: ``reports/run_id=<id>/index.html``, ``summary.json`` and ``findings.csv``
(every non-ok partition of the audit; the page shows the first rows of each status), staged
and published atomically as the run's partition of ``reports``."""

from __future__ import annotations

import csv
import json
from datetime import UTC
from pathlib import Path

from pipelines.context import RunContext
from pipelines.report.facts import Finding, GroupFinding, gather
from pipelines.report.lag_time import LagTimeFacts, finding_rows
from pipelines.report.metadata import MetadataFacts
from pipelines.report.migration import MigrationFacts
from pipelines.report.migration import finding_rows as migration_finding_rows
from pipelines.report.mm2 import Mm2Facts
from pipelines.report.page import FINDINGS_CSV, render
from pipelines.report.rebalances import PAST, STORM, STUCK, RebalanceFacts, state_name
from pipelines.report.share_streams import ShareStreamsFacts
from pipelines.report.share_streams import finding_rows as share_finding_rows

REPORTS = "reports"
CSV_COLUMNS = ("source", "group_id", "topic", "partition", "broker_id", "status", "expected_owner", "observed_owners",
               "owner_hosts", "owner_since", "owners_registered", "committed_offset", "log_end_offset", "lag", "detail")

# findings.csv statuses of the KRaft findings
ISR_BELOW_MIN, DELETED_TOPIC_COMMITS = "isr_below_min_insync", "deleted_topic_commits"


def _iso(t) -> str:
    return t.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z") if t else ""


def _blank(v) -> object:
    return "" if v is None else v


def write_findings_csv(findings: list[Finding], path: Path, metadata: MetadataFacts | None = None,
                       lag_time: LagTimeFacts | None = None, group_findings: list[GroupFinding] = (),
                       rebalances: RebalanceFacts | None = None,
                       share_streams: ShareStreamsFacts | None = None, mm2: Mm2Facts | None = None,
                       migration: MigrationFacts | None = None) -> None:
    """One row per finding; several observed owners are joined with ``;`` in each owner column.
    The KRaft findings follow with ``source`` kraft: ``isr_below_min_insync`` (per partition,
    no group) and ``deleted_topic_commits`` (per group and partition: its last offset); then the
    time findings (``lag_time.finding_rows``): ``data_lost``, ``data_at_risk``, ``offset_reset``,
    ``stuck_partition`` (committed offset, and the log end / head with the lag where known); then
    the KIP-848 group findings: ``status`` is the finding's name, ``observed_owners`` its member,
    ``detail`` what it found; then the rebalance history: ``past_<status>`` per partition whose
    owner was not ok at the end of a past settled state (the owner written, since when, and in
    ``detail`` the state, when it ended and how long it lasted), ``stuck_rebalance`` per
    rebalance that did not settle within the stuck limit (``detail``: when it began, settled and
    how long it took), and ``rebalance_storm`` per group (``detail``: how many, the most in one
    hour, from when to when); then the share and Streams group findings
    (``share_streams.finding_rows``): ``status`` the finding's name, ``observed_owners`` its
    member, ``detail`` what it found; then the MirrorMaker 2 findings (``source`` mm2, ``status``
    the finding's name, ``committed_offset`` the source's, ``detail`` the pair of clusters and what
    it found); then the migration's (``source`` migration, ``migration.finding_rows``)."""
    with path.open("w", newline="", encoding="utf-8") as out:
        w = csv.writer(out)
        w.writerow(CSV_COLUMNS)
        for f in findings:
            w.writerow([
                f.source, f.group_id, f.topic, f.partition, "" if f.broker_id is None else f.broker_id, f.status,
                f.expected_owner or "",
                ";".join(o.name for o in f.owners),
                ";".join(o.host or "" for o in f.owners),
                ";".join(_iso(o.since) for o in f.owners),
                ";".join("true" if o.registered else "false" for o in f.owners),
                "" if f.committed_offset is None else f.committed_offset,
                "" if f.log_end_offset is None else f.log_end_offset,
                "" if f.lag is None else f.lag,
                "",
            ])
        for p in metadata.under_min_isr if metadata else ():
            w.writerow(["kraft", "", p["topic"], p["partition"], "", ISR_BELOW_MIN, "", "", "", "", "", "", "", "", ""])
        for d in metadata.deleted_with_commits if metadata else ():
            w.writerow(["kraft", d["group_id"], d["topic"], d["partition"], "", DELETED_TOPIC_COMMITS, "", "", "", "",
                        "", "" if d["last_offset"] is None else d["last_offset"], "", "", ""])
        for r in finding_rows(lag_time):
            w.writerow([r["source"], r["group_id"], r["topic"], r["partition"], "", r["status"], "", "", "", "", "",
                        *("" if r[k] is None else r[k] for k in ("committed_offset", "log_end_offset", "lag")), ""])
        for g in group_findings:
            w.writerow([g.source, g.group_id, g.topic or "", "" if g.partition is None else g.partition, "", g.finding,
                        "", g.member_id or "", "", "", "", "", "", "", g.detail or ""])
        for p in rebalances.past_wrong if rebalances else ():
            w.writerow([p["source"], p["group_id"], p["topic"], p["partition"],
                        "" if p["broker_id"] is None else p["broker_id"], PAST + p["status"], p["expected_owner"] or "",
                        p["observed_owner"] or "", "", _iso(p["held_from"]), "", "", "", "",
                        f"{state_name(p)} until {_iso(p['held_until'])}"
                        + ("" if p.get("lasted_ms") is None else f", lasted {p['lasted_ms']} ms")])
        for s in rebalances.stuck if rebalances else ():
            settled = f"settled {_iso(s['ended_at'])}" if s["settled"] else "not settled"
            took = "" if s["rebalance_ms"] is None else f", {s['rebalance_ms']} ms"
            w.writerow([s["source"], s["group_id"], "", "", "", STUCK, "", "", "", "", "", "", "", "",
                        f"rebalance began {_iso(s['rebalance_started_at'])}, {settled}{took}"])
        for s in rebalances.storms if rebalances else ():
            w.writerow([s["source"], s["group_id"], "", "", "", STORM, "", "", "", "", "", "", "", "",
                        f"{s['rebalances']} rebalance(s) in a storm, up to {s['peak']} in one hour, "
                        f"{_iso(s['first_at'])} to {_iso(s['last_at'])}"])
        for r in share_finding_rows(share_streams):
            w.writerow(["kafka", r["group_id"], r["topic"] or "", "" if r["partition"] is None else r["partition"], "",
                        r["finding"], "", r["member_id"] or "", "", "", "", "", "", "", r["detail"] or ""])
        for p in mm2.pairs if mm2 else ():
            source = {(r["group_id"], r["topic"], r["partition"]): r["source_committed_offset"] for r in p["rows"]}
            for r in p["findings"]:
                offset = source.get((r["group_id"], r["topic"], r["partition"]))
                w.writerow(["mm2", r["group_id"] or "", r["topic"] or "", _blank(r["partition"]), "", r["finding"],
                            "", "", "", "", "", _blank(offset), "", "",
                            f"{p['source_alias']} -> {p['target_alias']}: {r['detail'] or ''}"])
        for r in migration_finding_rows(migration):
            w.writerow(["migration", r["group_id"] or "", r["topic"] or "", _blank(r["partition"]), "", r["status"],
                        "", "", "", "", "", _blank(r["committed_offset"]), "", "", r["detail"]])


def write_report(ctx: RunContext) -> Path:
    facts = gather(ctx.warehouse, ctx.run_id)
    summary = facts.summary()
    with ctx.warehouse.transaction(ctx.run_id, step="report") as tx:
        out = tx.staging_dir(REPORTS)
        out.mkdir(parents=True, exist_ok=True)
        write_findings_csv(facts.findings, out / FINDINGS_CSV, facts.metadata, facts.lag_time, facts.group_findings,
                           facts.rebalances, facts.share_streams, facts.mm2, facts.migration)
        (out / "index.html").write_text(render(facts), encoding="utf-8")
        (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    page = ctx.warehouse.partition_dir(REPORTS, ctx.run_id) / "index.html"
    problems = {s: sum(v for k, v in summary["assignment"][s].items() if k != "ok") for s in summary["assignment"]}
    ctx.say(
        f"report: {summary['inputs']['znodes']:,} znodes, {summary['inputs']['offset_records']:,} offset records, "
        f"{summary['inputs']['quarantined']:,} quarantined; assignment problems "
        + ", ".join(f"{s} {n:,}" for s, n in problems.items())
        + f"; {len(facts.unhealthy):,} unhealthy group(s); {summary['offset_regressions']:,} regressions; expectations "
        f"{summary['expectations']['failed']}/{summary['expectations']['evaluated']} failed"
    )
    ctx.say(f"report: {page}")
    return page
