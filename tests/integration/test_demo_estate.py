"""``kaudit demo``'s Kafka 4.x estate written by real brokers (``pipelines/demo/real``): each
cluster's run (the session's demo_run) reports the findings its scenario planted and no other,
against the oracles of the cluster kit, which read the scenarios' own records and the clusters'
Admin API answers (``oracle.json``), not kaudit: the share group's record archived
unacknowledged, MirrorMaker 2's planted faults and the groups it never checkpointed, the
tiered-storage commit lost below the remote log start and the commits at risk from remote
retention, the migration's offsets lost or moved backwards. The new sections are on the pages,
and headless Chromium shows them at 420 and 1400 px without overflow."""

from __future__ import annotations

import csv
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from pipelines.demo import REAL
from pipelines.demo.estate import CASES
from pipelines.warehouse.reading import read_arrow
from pipelines.warehouse.warehouse import Warehouse
from testkit.chromium import Chromium
from testkit.cluster.mm2_oracle import expected_findings as mm2_findings

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1500)]

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "test-artifacts"


def _oracle(case: str) -> dict:
    return json.loads((REAL / case / "oracle.json").read_text())


def _report(demo_run, case: str) -> Path:
    return demo_run.warehouse / "reports" / f"run_id={demo_run.run_id}-{case}"


def _findings(demo_run, case: str) -> list[dict]:
    with (_report(demo_run, case) / "findings.csv").open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


class _Sections(HTMLParser):
    """The ids of the page's sections and the text of every element with a class, by class."""

    def __init__(self):
        super().__init__()
        self.sections: set[str] = set()
        self.texts: dict[str, list[str]] = {}
        self._open: list[str | None] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "section" and a.get("id"):
            self.sections.add(a["id"])
        if tag in ("br", "img", "meta", "link", "input"):
            return
        cls = (a.get("class") or "").split()
        self._open.append(cls[0] if cls else None)
        if cls:
            self.texts.setdefault(cls[0], []).append("")

    def handle_endtag(self, tag):
        if tag not in ("br", "img", "meta", "link", "input") and self._open:
            self._open.pop()

    def handle_data(self, data):
        for cls in self._open:
            if cls is not None:
                self.texts[cls][-1] += data


def _page(demo_run, case: str) -> _Sections:
    page = _Sections()
    page.feed((_report(demo_run, case) / "index.html").read_text(encoding="utf-8"))
    return page


def test_demo_prints_each_real_cluster_and_its_report(demo_run):
    printed = "".join(demo_run.output.split())
    log = f"exit {demo_run.exit_code}\n--- output\n{demo_run.output[-6000:]}"
    assert demo_run.exit_code == 0, log
    assert "Kafka4.xestatewrittenbyrealbrokers" in printed, log
    assert "differsfromwhatthescenarioplanted" not in printed, log
    for case in CASES:
        assert str(_report(demo_run, case.name) / "index.html") in printed, (case, log)
        assert (demo_run.out / "real" / case.data).is_dir()


def test_share_groups_record_archived_unacknowledged(demo_run):
    oracle = _oracle("share-4.2.2")
    rows = [r for r in _findings(demo_run, "share") if r["source"] == "kafka"]
    # the scenario's poison record (orders-0 offset 10, the value 'poison'), released by
    # share-poison on every delivery until the broker's delivery limit archived it
    assert [(r["group_id"], r["topic"], r["partition"], r["status"]) for r in rows] == [
        ("share-poison", "orders", "0", "archived_unacknowledged")], rows
    assert "10" in rows[0]["detail"]
    assert set(oracle["groups"]) == {"share-healthy", "share-poison"}
    page = _page(demo_run, "share")
    assert "share-groups" in page.sections
    archived = page.texts.get("archived-record", [])
    assert len(archived) == 1 and "orders/0 offset 10" in archived[0], archived


def test_streams_groups_tasks_and_the_killed_member(demo_run):
    oracle = _oracle("streams-4.2.2")
    groups = [oracle["group"], *([oracle["faulty"]["group"]] if "faulty" in oracle else [])]
    # the faulty application's member killed (SIGKILL) while it had active tasks to hand over:
    # each active task it held; the healthy application: nothing
    want = []
    if "faulty" in oracle:
        did = oracle["faulty"]["did"]
        want = [(did["before"]["group_id"], did["killed_member_id"], "member_unresponsive", f"task {t}")
                for t in sorted(did["killed_held_active"])]
    rows = [r for r in _findings(demo_run, "streams") if r["source"] == "kafka"]
    got = sorted((r["group_id"], r["observed_owners"], r["status"], r["detail"].split(":")[0]) for r in rows)
    assert got == want, rows
    page = _page(demo_run, "streams")
    assert "streams-groups" in page.sections
    members = page.texts.get("streams-member", [])
    assert len(members) >= sum(len(g["members"]) for g in groups), members


def test_every_epoch_of_the_share_and_streams_groups(demo_run):
    """marts/group_epochs of the share and Streams runs against what each cluster described when
    it stopped: each group's last epoch is the cluster's assignment epoch, targeted to the members
    it named, settled where the group was Stable (the faulty Streams group still reconciling);
    every earlier epoch settled or a transition; no faulty target (the scenarios planted their
    faults in the records and members, not in the coordinator's targets). The page lists them."""
    wh = Warehouse(demo_run.warehouse)
    share, streams = _oracle("share-4.2.2"), _oracle("streams-4.2.2")
    described = {("share", g): {**d, "group_id": g} for g, d in share["groups"].items()}
    described |= {("streams", g["group_id"]): g
                  for g in (streams["group"], *([streams["faulty"]["group"]] if "faulty" in streams else []))}
    rows = {case: read_arrow(wh, "marts/group_epochs", f"{demo_run.run_id}-{case}", with_run_id=False).to_pylist()
            for case in ("share", "streams")}
    assert {(r["group_type"], r["group_id"]) for case in rows.values() for r in case} == set(described)
    for (kind, gid), d in described.items():
        mine = sorted((r for r in rows[kind] if r["group_id"] == gid), key=lambda r: r["log_offset"])
        last = mine[-1]
        assert last["assignment_epoch"] == d["assignment_epoch"], (gid, mine)
        assert last["owners"] == ", ".join(sorted(m["member_id"] for m in d["members"])), (gid, last)
        assert last["outcome"] == ("settled" if d["state"] == "Stable" else "reconciling"), (gid, last, d["state"])
        assert all(r["outcome"] in ("settled", "transition") for r in mine[:-1]), mine
        assert not any(r["is_fault"] for r in mine), mine
    for case in ("share", "streams"):
        shown = _page(demo_run, case).texts.get("group-epoch", [])
        assert len(shown) == len(rows[case]), (case, shown)


def test_mm2_findings_in_findings_csv(demo_run):
    oracle = _oracle("mm2-4.3.1")
    rows = [r for r in _findings(demo_run, "migration") if r["source"] == "mm2"]
    got = {(r["status"], r["group_id"], int(r["partition"])) for r in rows}
    assert got == mm2_findings(oracle) and len(rows) == len(got) == 5, rows
    assert all(r["detail"].startswith("source -> target: ") for r in rows), rows
    assert "mm2" in _page(demo_run, "migration").sections


def test_migration_section_and_its_offset_findings(demo_run):
    oracle = _oracle("migration-3.9.2")
    before, after = oracle["before"]["committed"], oracle["after"]["committed"]
    want = set()
    for g, offsets in before.items():
        for tp, offset in offsets.items():
            now = after.get(g, {}).get(tp)
            topic, p = tp.rsplit(":", 1)
            if now is None:
                want.add(("migration_offsets_lost", g, topic, p))
            elif now < offset:
                want.add(("migration_offsets_moved_backwards", g, topic, p))
    rows = [r for r in _findings(demo_run, "migration") if r["source"] == "migration"]
    assert {(r["status"], r["group_id"], r["topic"], r["partition"]) for r in rows} == want and len(rows) == 4, rows
    mart = read_arrow(Warehouse(demo_run.warehouse), "marts/migration_findings", f"{demo_run.run_id}-migration")
    got = mart.to_pylist()
    assert {(r["finding"], r["group_id"], r["topic"], str(r["partition"])) for r in got} == want and len(got) == 4, got
    for r in got:  # the offsets before and after, as the cluster answered them
        topic_partition = f"{r['topic']}:{r['partition']}"
        assert r["before_offset"] == before[r["group_id"]][topic_partition], r
        assert r["after_offset"] == after.get(r["group_id"], {}).get(topic_partition), r
    page = _page(demo_run, "migration")
    assert "migration" in page.sections
    states = [s.split()[0] for s in page.texts.get("migration-state", [])]
    assert states == ["PRE_MIGRATION", "MIGRATION", "POST_MIGRATION"], states
    assert len(page.texts.get("migration-offset", [])) >= 4


def test_tiered_storage_section_and_data_loss_findings(demo_run):
    oracle = _oracle("tiered-4.1.1")
    n = oracle["did"]["records_per_batch"]
    want = set()
    for g, tps in oracle["committed"].items():
        for tp, committed in tps.items():
            o = oracle["partitions"][tp]
            topic, p = tp.rsplit("/", 1)
            if committed < o["earliest"]:
                want.add(("data_lost", g, topic, p))
            elif committed < o["earliest"] + n and o["earliest"] < o["earliest_local"]:
                want.add(("data_at_risk", g, topic, p))
    rows = [r for r in _findings(demo_run, "tiered") if r["status"] in ("data_lost", "data_at_risk")]
    assert {(r["status"], r["group_id"], r["topic"], r["partition"]) for r in rows} == want and len(rows) == 3, rows
    page = _page(demo_run, "tiered")
    assert "tiered" in page.sections
    html = (_report(demo_run, "tiered") / "index.html").read_text(encoding="utf-8")
    shown = [[re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
             for row in re.findall(r'<tr class="tiered-partition">(.*?)</tr>', html, re.S)]
    assert len(shown) == len(oracle["partitions"]), shown
    for cells in shown:  # the log start the broker answered (earliest), not the local one
        o = oracle["partitions"][f"{cells[0]}/{cells[1]}"]
        assert int(cells[2].replace(",", "")) == o["earliest"], cells
        assert cells[7].replace(",", "").split() == [str(o["earliest_local"]), "–", str(o["latest"])], cells


def test_new_sections_fit_420_and_1400_px_in_chromium(demo_run, tmp_path):
    ARTIFACTS.mkdir(exist_ok=True)
    browser = Chromium(tmp_path / "profile")
    try:
        for case, section in (("migration", "migration"), ("tiered", "tiered"), ("share", "share-groups"),
                              ("streams", "streams-groups")):
            page = _report(demo_run, case) / "index.html"
            for width in (420, 1400):
                browser.load(page.as_uri(), width)
                scroll, inner = browser.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
                assert scroll <= inner, (case, width, scroll, inner)
                visible = browser.evaluate(
                    f"(() => {{ const s = document.getElementById({json.dumps(section)});"
                    " return s !== null && s.offsetParent !== null && s.getBoundingClientRect().height > 0; })()")
                assert visible, (case, width)
                browser.screenshot(ARTIFACTS / f"report-{case}-{width}px.png")
    finally:
        browser.close()
