"""The findings table and the heat scale from core rows written here (no Spark, no browser):
owners with their registration, 0.7 broker partitions, the per-status cap with the CSV
holding every row."""

from __future__ import annotations

import csv
from datetime import UTC, datetime

import pyarrow as pa
from markupsafe import escape as html_escape

from pipelines.context import RunContext
from pipelines.report import charts, page
from pipelines.report.rebalances import RebalanceFacts
from pipelines.report.write import write_findings_csv, write_report
from pipelines.warehouse.tables import SCHEMAS

T0 = datetime(2025, 3, 4, 5, 6, tzinfo=UTC)


def _table(warehouse, table, rows, step="main"):
    warehouse.write_table(table, "r", pa.Table.from_pylist(rows, schema=SCHEMAS[table]), step=step)


def _znode(path, data):
    return dict(source="snapshot", path=path, data=data, czxid=1, mzxid=1, pzxid=1, ctime=T0, mtime=T0, version=0,
                cversion=0, aversion=0, ephemeral_owner=7, data_length=len(data), num_children=0)


def _run(warehouse, n_unowned: int):
    owner = "old_host-a.example-1300000000000-0"
    audit = [dict(source="zookeeper", group_id="old", topic="t", partition=0, broker_id=7,
                  expected_owner="old_host-b.example-1300000001000-0", observed_owners=[owner], status="wrong_owner")]
    audit += [dict(source="kafka", group_id="k", topic="t", partition=p, broker_id=None, expected_owner="m1",
                   observed_owners=[], status="unowned") for p in range(n_unowned)]
    _table(warehouse, "core/assignment_audit", audit)
    _table(warehouse, "core/consumer_registrations",
           [dict(group_id="old", consumer_id=c, topic="t", streams=1)
            for c in ("old_host-a.example-1300000000000", "old_host-b.example-1300000001000")])
    _table(warehouse, "raw/znodes", [_znode("/consumers/old/owners/t/7-0", owner.encode())], step="zk-snapshot")


def test_a_finding_names_owners_with_host_and_since_and_the_broker(warehouse):
    _run(warehouse, 1)
    html = write_report(RunContext(warehouse, "r", quiet=True)).read_text()
    assert 'data-partition="7-0"' in html and "broker 7" in html
    assert "host host-a.example · owns it since 2025-03-04 05:06 UTC" in html
    assert "old_host-b.example-1300000001000-0" in html  # the expected owner
    assert '<span class="unknown">nobody</span>' in html  # the unowned Kafka partition


def test_huge_runs_show_the_first_rows_per_status_and_the_csv_has_all(warehouse, monkeypatch):
    monkeypatch.setattr(page, "MAX_FINDINGS_PER_STATUS", 3)
    _run(warehouse, 10)
    out = write_report(RunContext(warehouse, "r", quiet=True))
    html = out.read_text()
    assert html.count('<tr class="finding"') == 1 + 3
    assert "unowned 3 of 10" in html and '<a href="findings.csv">' in html
    with (out.parent / "findings.csv").open(newline="") as f:
        rows = list(csv.DictReader(f))
    (old,) = [r for r in rows if r["group_id"] == "old"]
    assert len(rows) == 11 and old["owner_hosts"] == "host-a.example" and old["broker_id"] == "7"


def test_heat_scale_gives_1_and_6_different_colours_at_any_maximum():
    for top in (6, 7, 8, 50, 10**6):
        bins = charts.heat_bins(top)
        assert bins[0].low == 1 and bins[-1].high == top
        assert all(a.high + 1 == b.low for a, b in zip(bins, bins[1:], strict=False))
        assert charts.heat_color(1, bins) != charts.heat_color(6, bins), top


def test_a_zookeeper_group_whose_offsets_stopped_while_the_log_moved_is_unhealthy(warehouse):
    """The ZooKeeper side of Burrow's STOP: lag, and the last commit more than 10 minutes older
    than the partition's newest message (a consumer still registered, so that is not the reason)."""
    from datetime import timedelta

    from pipelines.report.facts import _health

    newest = T0 + timedelta(hours=3)
    _table(warehouse, "raw/log_end_offsets", [
        dict(topic="t", partition=p, log_start_offset=0, log_end_offset=100, max_timestamp=newest) for p in range(3)
    ], step="log-end")
    _table(warehouse, "core/consumer_registrations",
           [dict(group_id=g, consumer_id="c1", topic="t", streams=1) for g in ("zk", "ok")])
    lag = pa.Table.from_pylist([
        dict(source="zookeeper", group_id="zk", topic="t", partition=0, lag=40, committed_at=T0),  # 3 h behind
        dict(source="zookeeper", group_id="zk", topic="t", partition=1, lag=5,
             committed_at=newest - timedelta(minutes=9)),
        dict(source="zookeeper", group_id="zk", topic="t", partition=2, lag=0, committed_at=T0),  # caught up
        dict(source="zookeeper", group_id="ok", topic="t", partition=0, lag=7,
             committed_at=newest - timedelta(minutes=1)),
    ])
    health = {h.group_id: h for h in _health(warehouse, "r", lag, None, {})}
    assert health["zk"].reasons == [
        "offsets stopped while the log end moved on 1 partition(s): last commit up to 3 h before the newest message"
    ]
    assert health["ok"].reasons == []


def test_kip848_group_findings_are_named_on_the_page_and_in_the_csv(warehouse):
    from pipelines.report.facts import GROUP_FINDINGS
    from pipelines.warehouse.tables import CONSUMER_GROUP_FINDINGS

    assert tuple(GROUP_FINDINGS) == CONSUMER_GROUP_FINDINGS  # every name has its meaning on the page
    findings = [
        dict(source="kafka", group_id="g848", member_id="m-0", topic="orders", partition=6,
             finding="range_target_differs", detail="range assigns m-a, target has m-0"),
        dict(source="kafka", group_id="g848", member_id=None, topic="orders", partition=5,
             finding="partition_held_twice", detail="held by u1, u2"),
        dict(source="kafka", group_id="g848", member_id="u2", topic=None, partition=None,
             finding="epoch_order_violated", detail="member epoch 5 > assignment epoch 4"),
    ]
    _table(warehouse, "core/consumer_group_findings", findings)
    out = write_report(RunContext(warehouse, "r", quiet=True))
    html = out.read_text()
    assert 'id="group-findings"' in html
    for f in findings:
        assert f'data-group="g848" data-finding="{f["finding"]}"' in html
        assert html_escape(f["detail"]) in html  # autoescaped: ">" is "&gt;"
    with (out.parent / "findings.csv").open(newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["group_id"] == "g848"]
    # the order of core/consumer_group_findings' named findings: range, epochs, held twice
    assert [(r["status"], r["observed_owners"], r["topic"], r["partition"], r["detail"]) for r in rows] == [
        ("range_target_differs", "m-0", "orders", "6", "range assigns m-a, target has m-0"),
        ("epoch_order_violated", "u2", "", "", "member epoch 5 > assignment epoch 4"),
        ("partition_held_twice", "", "orders", "5", "held by u1, u2"),
    ]


def test_past_not_ok_owners_of_both_eras_are_named_by_their_state_in_the_csv(tmp_path):
    """A ZooKeeper state is named by its zxid, a Kafka generation by its number and record."""
    base = dict(topic="t", partition=0, broker_id=None, expected_owner="a", observed_owner="b", status="wrong_owner",
                held_from=T0, held_until=T0)
    zk = dict(base, source="zookeeper", group_id="z", state_zxid=0x1F, generation=None, offsets_partition=None,
              log_offset=None)
    kafka = dict(base, source="kafka", group_id="k", state_zxid=None, generation=4, offsets_partition=12,
                 log_offset=305)
    facts = RebalanceFacts(timeline={}, totals={}, storms=[], past_wrong=[zk, kafka])
    path = tmp_path / "findings.csv"
    write_findings_csv([], path, rebalances=facts)
    rows = {r["group_id"]: r for r in csv.DictReader(path.open(encoding="utf-8"))}
    assert (rows["z"]["source"], rows["z"]["status"]) == ("zookeeper", "past_wrong_owner")
    assert rows["z"]["detail"] == "state at zxid 0x1f until 2025-03-04T05:06:00.000Z"
    assert (rows["k"]["source"], rows["k"]["status"]) == ("kafka", "past_wrong_owner")
    assert rows["k"]["detail"] == "generation 4 (__consumer_offsets-12 offset 305) until 2025-03-04T05:06:00.000Z"
