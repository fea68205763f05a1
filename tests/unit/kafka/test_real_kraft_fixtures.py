"""The bytes real KRaft clusters wrote (tests/fixtures/kafka-real/<release>-<scenario>/, kept by
``python -m testkit.cluster.kraft_fixtures``), decoded by kaudit's extractors without a broker
and compared with what the same cluster answered through its Admin API before it stopped
(``oracle.json`` beside them): committed offsets, log start and end, the KRaft registry's topics,
partitions, brokers and cluster id, and each KIP-848 member's current and target assignment."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipelines.warehouse.reading import read_arrow
from pipelines.warehouse.warehouse import Warehouse
from testkit.cluster.kraft_oracle import effective_commits, kaudit
from testkit.cluster.kraft_oracle import tp_key as _tp

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "kafka-real"
CASES = sorted(p.parent.parent for p in FIXTURES.glob("*/metadata/__cluster_metadata-0"))  # the KRaft ones


@pytest.fixture(params=CASES, ids=[p.name for p in CASES])
def extracted(request, tmp_path):
    case = request.param
    wh = tmp_path / "wh"
    base = ["--warehouse", str(wh), "--run-id", "r"]
    for args in (["extract", "kraft", str(case / "metadata" / "__cluster_metadata-0")],
                 ["extract", "offsets", str(case / "logs")],
                 ["extract", "log-end", str(case / "logs")]):
        code, out = kaudit(*base, *args)
        assert code == 0, out
    oracle = json.loads((case / "oracle.json").read_text())
    return Warehouse(wh), oracle


def _rows(wh, table):
    return read_arrow(wh, table, "r").to_pylist()


def test_fixtures_are_there():
    assert {p.name for p in CASES} >= {"4.1.1-classic", "4.1.1-kip848", "4.4.0-classic"}


def test_nothing_quarantined(extracted):
    wh, _ = extracted
    assert _rows(wh, "raw/quarantine") == []


def test_every_metadata_record_decoded(extracted):
    """No record kept raw as of an unknown apiKey or version (4.3+ brokers write RegisterBrokerRecord
    v4 and BrokerRegistrationChangeRecord v3)."""
    wh, _ = extracted
    rows = _rows(wh, "raw/metadata_records")
    assert rows and [(r["offset"], r["record_type"], r["version"]) for r in rows if r["raw"] is not None] == []


def test_committed_offsets_as_the_cluster_lists_them(extracted):
    wh, o = extracted
    theirs = {(g, *_tp(tp)): off for g, d in o["oracle"]["groups"].items() for tp, off in d["offsets"].items()}
    ours = {k: v for k, v in effective_commits(_rows(wh, "raw/offset_commits")).items()
            if k[0] in o["oracle"]["groups"]}
    assert ours == theirs and len(theirs) >= 10
    # the offsets sent to an aborted transaction are in the log, marked aborted
    for g, aborted in o["planted"]["aborted_offsets"].items():
        rows = {(r["topic"], r["partition"], r["committed_offset"]): r["txn_state"]
                for r in _rows(wh, "raw/offset_commits") if r["group_id"] == g}
        for tp, off in aborted.items():
            assert rows[(*_tp(tp), off)] == "aborted"


def test_log_start_and_end(extracted):
    wh, o = extracted
    ends = {(r["topic"], r["partition"]): r for r in _rows(wh, "raw/log_end_offsets")}
    checkpoints = {(r["topic"], r["partition"]): r["log_start_offset"] for r in _rows(wh, "raw/log_start_checkpoints")}
    for tp, offs in o["oracle"]["log_offsets"].items():
        key = _tp(tp)
        assert ends[key]["log_end_offset"] == offs["latest"], tp
        assert max(ends[key]["log_start_offset"], checkpoints.get(key, 0)) == offs["earliest"], tp


def test_kraft_registry(extracted):
    wh, o = extracted
    topics = o["oracle"]["topics"]
    live = {r["topic"]: r["topic_id"] for r in _rows(wh, "raw/kraft_topics") if r["deleted_offset"] is None}
    internal = {t for t in live if t.startswith("__")}
    assert {t: i for t, i in live.items() if t not in internal} == {t: d["topic_id"] for t, d in topics.items()}
    gone = {r["topic"] for r in _rows(wh, "raw/kraft_topics") if r["deleted_offset"] is not None}
    assert gone == set(o["planted"]["deleted_topics"])
    parts = {(r["topic"], r["partition"]): r for r in _rows(wh, "raw/kraft_partitions")}
    for t, d in topics.items():
        for p in d["partitions"]:
            assert parts[(t, p["partition"])]["replicas"] == p["replicas"]
            assert parts[(t, p["partition"])]["topic_id"] == d["topic_id"]
    brokers = {r["broker_id"]: r for r in _rows(wh, "raw/kraft_brokers")}
    assert {b: (r["host"], r["port"]) for b, r in brokers.items()} == {
        b["id"]: (b["host"], b["port"]) for b in o["oracle"]["cluster"]["brokers"]}
    (cluster,) = _rows(wh, "raw/kraft_cluster")
    assert cluster["cluster_id"] == o["oracle"]["cluster"]["cluster_id"]


def _latest(rows, *key):
    out = {}
    for r in sorted(rows, key=lambda r: (r["log_offset"], r["offsets_partition"])):
        out[tuple(r[k] for k in key)] = r
    return {k: r for k, r in out.items() if not r["is_tombstone"]}


def _named(topic_partitions, names):
    return sorted(f"{names[tp['topic_id']]}:{p}" for tp in topic_partitions or [] for p in tp["partitions"])


def test_kip848_members_current_and_target(extracted):
    wh, o = extracted
    groups = {g: d for g, d in o["oracle"]["groups"].items() if d.get("type") == "Consumer"}
    if not groups:
        pytest.skip("no KIP-848 group in this scenario")
    names = {d["topic_id"]: t for t, d in o["oracle"]["topics"].items()}
    current = _latest(_rows(wh, "raw/consumer_group_current_assignments"), "group_id", "member_id")
    target = _latest(_rows(wh, "raw/consumer_group_target_assignments"), "group_id", "member_id")
    epochs = _latest(_rows(wh, "raw/consumer_group_metadata"), "group_id")
    members = _latest(_rows(wh, "raw/consumer_group_members"), "group_id", "member_id")
    for g, d in groups.items():
        assert {m for (gg, m) in members if gg == g} == {m["member_id"] for m in d["members"]}, g
        assert epochs[(g,)]["group_epoch"] == d["group_epoch"], g
        for m in d["members"]:
            cur = current[(g, m["member_id"])]
            assert _named(cur["assigned_partitions"], names) == m["assignment"], (g, m)
            assert cur["member_epoch"] == m["member_epoch"] and cur["state"] == "STABLE", (g, m)
            assert _named(target[(g, m["member_id"])]["topic_partitions"], names) == m["target_assignment"], (g, m)
