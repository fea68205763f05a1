"""The report's share-group and Streams-group sections: shown only when the run has such
groups, from the core tables alone when the marts were not built (a Streams task's lag then
"not built"), with the marts' lag when they were; every assignment epoch from
marts/group_epochs (owners, outcome, settle time; transitions counted apart from faults); every
finding in findings.csv; values escaped (autoescape)."""

from __future__ import annotations

import csv

import pyarrow as pa

from pipelines.context import RunContext
from pipelines.quality.marts import MARTS
from pipelines.steps import report
from pipelines.warehouse.tables import SCHEMAS

GROUP = "<b>queue</b>"
ARCHIVED = "1 offsets archived unacknowledged (13; delivery count up to 5)"


def _write(warehouse, table, rows):
    warehouse.write_table(table, "r", pa.Table.from_pylist(rows, schema=SCHEMAS[table]))


def _inputs(warehouse):
    _write(warehouse, "core/assignment_audit", [])
    member = dict(group_id=GROUP, client_id="c", client_host="/127.0.0.1", subscribed_topics=["orders"],
                  member_epoch=3, group_epoch=3, assignment_epoch=3, topic_id="T", topic="orders")
    _write(warehouse, "core/share_group_assignments", [
        {**member, "member_id": "m-a", "partition": 0}, {**member, "member_id": "m-b", "partition": 1}])
    state = dict(group_id=GROUP, topic_id="T", topic="orders", state_known=True, records=4, snapshot_log_offset=0,
                 start_offset=10, state_epoch=0, leader_epoch=0, delivery_complete_count=-1, in_flight=0,
                 log_end_offset=20)
    _write(warehouse, "core/share_partition_state", [
        {**state, "partition": 0, "acknowledged": 7, "archived": 1, "archived_offsets": [13],
         "archived_max_delivery_count": 5, "lag": 2},
        {**state, "partition": 1, "acknowledged": 10, "archived": 0, "archived_offsets": [],
         "archived_max_delivery_count": None, "lag": 0}])
    _write(warehouse, "core/share_group_findings", [
        dict(group_id=GROUP, topic_id="T", partition=0, topic="orders", member_id=None,
             finding="archived_unacknowledged", detail=ARCHIVED)])
    task = dict(group_id="app", process_id="p", client_id="c", topology_epoch=0, group_epoch=6, assignment_epoch=6,
                assignment="current", pending_revocation=False)
    _write(warehouse, "core/streams_group_tasks", [
        {**task, "member_id": "s-1", "member_epoch": 6, "task_kind": "active", "subtopology_id": "0", "partition": 0},
        {**task, "member_id": "s-1", "member_epoch": 6, "task_kind": "active", "subtopology_id": "0", "partition": 1},
        {**task, "member_id": "s-2", "member_epoch": 6, "task_kind": "active", "subtopology_id": "0", "partition": 1},
        {**task, "member_id": "s-2", "member_epoch": 6, "task_kind": "standby", "subtopology_id": "0",
         "partition": 0}])
    _write(warehouse, "core/streams_group_findings", [
        dict(group_id="app", member_id=None, subtopology_id="0", partition=1, finding="active_task_held_twice",
             detail="active on s-1, s-2")])


def _findings_csv(warehouse):
    with (warehouse.partition_dir("reports", "r") / "findings.csv").open() as f:
        return [r for r in csv.DictReader(f) if r["status"] in ("archived_unacknowledged", "active_task_held_twice")]


def test_share_and_streams_sections_from_core_tables(warehouse):
    _inputs(warehouse)
    report(RunContext(warehouse, "r", quiet=True))
    html = (warehouse.partition_dir("reports", "r") / "index.html").read_text()
    assert 'id="share-groups"' in html and 'id="streams-groups"' in html
    assert GROUP not in html and "&lt;b&gt;queue&lt;/b&gt;" in html
    assert html.count('class="share-partition"') == 2 and html.count('class="share-member"') == 2
    assert "orders/0 offset 13 (delivered up to 5 times)" in html
    assert html.count('class="streams-member"') == 2 and "marts/streams_group_lag not built" in html
    rows = [(r["group_id"], r["topic"], r["partition"], r["status"], r["detail"]) for r in _findings_csv(warehouse)]
    assert rows == [
        (GROUP, "orders", "0", "archived_unacknowledged", ARCHIVED),
        ("app", "", "1", "active_task_held_twice", "task 0_1: active on s-1, s-2"),
    ]


def test_streams_lag_from_the_mart(warehouse):
    _inputs(warehouse)
    row = dict(group_id="app", subtopology_id="0", topic="words", role="source", committed_offset=15,
               log_end_offset=20)
    rows = [{**row, "partition": 0, "task_id": "0_0", "active_member_id": "s-1", "lag": 5, "task_lag": 5,
             "member_lag": 5},
            {**row, "partition": 1, "task_id": "0_1", "active_member_id": "s-1, s-2", "lag": 3, "task_lag": 3,
             "member_lag": None}]
    warehouse.write_table("marts/streams_group_lag", "r", pa.Table.from_pylist(rows, schema=MARTS["streams_group_lag"]))
    report(RunContext(warehouse, "r", quiet=True))
    html = (warehouse.partition_dir("reports", "r") / "index.html").read_text()
    assert html.count('class="streams-task"') == 2 and "marts/streams_group_lag not built" not in html
    # s-1 holds 0_0 (lag 5) and 0_1 (lag 3, held twice), s-2 only 0_1
    assert 'data-label="lag">8</td>' in html and 'data-label="lag">3</td>' in html


def test_epochs_of_both_kinds_from_the_mart(warehouse):
    from datetime import UTC, datetime

    _inputs(warehouse)
    at = datetime(2026, 1, 1, tzinfo=UTC)
    base = dict(offsets_partition=0, target_at=at, unassigned=None, standby_with_active=None, targeted_twice=0)
    rows = [
        {**base, "group_type": "share", "group_id": GROUP, "assignment_epoch": 2, "log_offset": 3, "members": 2,
         "members_settled": 1, "owners": "m-a, <m-b>", "outcome": "transition", "settled": False, "settled_at": None,
         "settle_ms": None, "is_transition": True, "targeted": 2, "unassigned": 1, "is_fault": False, "fault": None},
        {**base, "group_type": "share", "group_id": GROUP, "assignment_epoch": 3, "log_offset": 9, "members": 2,
         "members_settled": 2, "owners": "m-a, m-b", "outcome": "settled", "settled": True, "settled_at": at,
         "settle_ms": 1500, "is_transition": False, "targeted": 2, "unassigned": 0, "is_fault": False, "fault": None},
        {**base, "group_type": "streams", "group_id": "app", "assignment_epoch": 6, "log_offset": 4, "members": 2,
         "members_settled": 0, "owners": "s-1, s-2", "outcome": "reconciling", "settled": False, "settled_at": None,
         "settle_ms": None, "is_transition": None, "targeted": 2, "targeted_twice": 1, "is_fault": True,
         "fault": "1 active tasks targeted to two members"},
    ]
    warehouse.write_table("marts/group_epochs", "r", pa.Table.from_pylist(rows, schema=MARTS["group_epochs"]))
    report(RunContext(warehouse, "r", quiet=True))
    html = (warehouse.partition_dir("reports", "r") / "index.html").read_text()
    assert html.count('class="group-epoch"') == 2 and html.count('class="group-epoch fault"') == 1
    assert "2 assignment epochs: 1 settled (median 1.5 s, slowest 1.5 s), 1 transition " in html
    assert "1 assignment epoch: 0 settled, 0 transitions" in html and "<b>1 with a faulty target</b>" in html
    assert "m-a, &lt;m-b&gt;" in html and "1 active tasks targeted to two members" in html
    assert "no epoch history" not in html


def test_no_epoch_history_without_the_mart(warehouse):
    _inputs(warehouse)
    report(RunContext(warehouse, "r", quiet=True))
    html = (warehouse.partition_dir("reports", "r") / "index.html").read_text()
    assert html.count("marts/group_epochs not built: no epoch history") == 2 and "group-epoch" not in html


def test_no_section_without_such_groups(warehouse):
    _write(warehouse, "core/assignment_audit", [])
    metadata = dict(group_id="g", generation=1, protocol_type="consumer", protocol="range", leader="m",
                    state_timestamp=None, is_tombstone=False, value_version=1, offsets_partition=0, log_offset=0,
                    segment_file="00000000000000000000.log")
    _write(warehouse, "raw/group_metadata", [metadata])
    report(RunContext(warehouse, "r", quiet=True))
    html = (warehouse.partition_dir("reports", "r") / "index.html").read_text()
    assert 'id="share-groups"' not in html and 'id="streams-groups"' not in html
