"""The report's MirrorMaker 2 section: shown only when the run has failover rows, one table per
replication pair with every group's partitions, what a failover re-reads or skips, and the
findings; values escaped (autoescape)."""

from __future__ import annotations

import pyarrow as pa

from pipelines.context import RunContext
from pipelines.steps import report
from pipelines.warehouse.tables import SCHEMAS

GROUP = "<b>payments</b>"


def _write(warehouse, table, rows):
    warehouse.write_table(table, "r", pa.Table.from_pylist(rows, schema=SCHEMAS[table]))


def _row(group, partition, source, target, reread, skipped, status="exact"):
    return dict(source_alias="east", target_alias="west", group_id=group, topic="orders", partition=partition,
                target_topic="east.orders", source_committed_offset=source, translated_offset=source,
                expected_target_offset=source, checkpoint_upstream_offset=source, checkpoint_downstream_offset=target,
                checkpoint_recomputed_offset=source, checkpoint_status=status, target_committed_offset=target,
                records_reread=reread, records_skipped=skipped)


def test_mm2_section(warehouse):
    _write(warehouse, "core/assignment_audit", [])
    _write(warehouse, "core/mm2_failover", [_row(GROUP, 0, 80, 17, 63, 0), _row(GROUP, 1, 20, 45, 0, 25),
                                            _row("orphan", 0, 25, None, None, None, None)])
    _write(warehouse, "core/mm2_findings", [
        dict(source_alias="east", target_alias="west", group_id=GROUP, topic="orders", partition=1,
             finding="target_ahead_of_translation", detail="target 45, translated 20: 25 records skipped on failover"),
        dict(source_alias="east", target_alias="west", group_id="orphan", topic="orders", partition=0,
             finding="never_checkpointed", detail="committed 25 on east, no checkpoint")])
    report(RunContext(warehouse, "r", quiet=True))
    html = (warehouse.partition_dir("reports", "r") / "index.html").read_text()
    assert 'id="mm2"' in html and "east &rarr; west" in html
    assert GROUP not in html and "&lt;b&gt;payments&lt;/b&gt;" in html
    assert html.count('class="mm2-row"') == 3 and html.count('class="mm2-finding"') == 2
    assert "63 records re-read · 25 skipped on failover" in html


def test_no_mm2_section_without_rows(warehouse):
    _write(warehouse, "core/assignment_audit", [])
    report(RunContext(warehouse, "r", quiet=True))
    assert 'id="mm2"' not in (warehouse.partition_dir("reports", "r") / "index.html").read_text()
