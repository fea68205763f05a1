"""`kaudit report` of a real run (the session's demo_run: the demo cluster's planted faults of
both sources through extract, Spark, a real `dbt build` and GX), read as a person reads it:
the HTML names every planted non-ok partition with its expected and observed owners and every
unhealthy group; headless Chromium shows it at 420 and 1400 px without page overflow (the
screenshots are kept under test-artifacts/), and neither the page nor a page it links
requests anything but local files."""

from __future__ import annotations

import csv
import json
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urljoin, urlparse
from urllib.request import url2pathname

import pytest
import yaml

from pipelines.context import RunContext
from pipelines.quality.marts import MARTS
from pipelines.report.write import write_report
from pipelines.warehouse.reading import read_arrow
from pipelines.warehouse.tables import ASSIGNMENT_STATUSES
from pipelines.warehouse.warehouse import Warehouse
from testkit.chromium import Chromium

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1500)]

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "test-artifacts"


class _Page(HTMLParser):
    """The finding rows (data attributes and owner names per cell), the unhealthy groups, the
    heat cells' colours and counts, and every link of the report."""

    def __init__(self):
        super().__init__()
        self.findings: list[dict] = []
        self.unhealthy: dict[tuple, list[str]] = {}
        self.heat: list[tuple[str, int]] = []
        self.links: list[str] = []
        self._row = self._cell = self._li = None
        self._owner = self._why = False
        self._text = ""

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        classes = (a.get("class") or "").split()
        if tag == "a" and a.get("href"):
            self.links.append(a["href"])
        if tag == "tr" and "finding" in classes:
            self._row = {k[5:]: v for k, v in a.items() if k.startswith("data-")} | {"expected": [], "observed": []}
        elif self._row is not None and tag == "td" and "owner" in classes:
            self._cell = "expected" if "expected" in classes else "observed"
        elif self._cell and tag == "span" and "ownername" in classes:
            self._owner, self._text = True, ""
        elif tag == "li" and a.get("data-group") is not None:
            self._li = (a["data-source"], a["data-group"])
            self.unhealthy[self._li] = []
        elif self._li and tag == "span" and "why" in classes:
            self._why, self._text = True, ""
        elif tag == "td" and "background:" in (a.get("style") or "") and "commit(s)" in (a.get("title") or ""):
            commits = int(a["title"].rsplit(": ", 1)[1].split()[0])
            self.heat.append((a["style"].split("background:")[1].strip(), commits))

    def handle_data(self, data):
        self._text += data

    def handle_endtag(self, tag):
        if tag == "span" and self._owner:
            self._row[self._cell].append(self._text.strip())
            self._owner = False
        elif tag == "span" and self._why:
            self.unhealthy[self._li].append(self._text.strip())
            self._why = False
        elif tag == "td":
            self._cell = None
        elif tag == "tr" and self._row is not None:
            self.findings.append(self._row)
            self._row = None
        elif tag == "li":
            self._li = None


@pytest.fixture(scope="module")
def report(demo_run):
    """The demo run's report, written again by this checkout's report step."""
    assert demo_run.exit_code == 0, demo_run.output[-4000:]
    page = write_report(RunContext(Warehouse(demo_run.warehouse), demo_run.run_id, quiet=True))
    parsed = _Page()
    parsed.feed(page.read_text(encoding="utf-8"))
    return page, parsed


def _planted_findings(manifest) -> dict[tuple, tuple]:
    return {
        (r["source"], r["group_id"], r["topic"],
         f"{r['broker_id']}-{r['partition']}" if r["broker_id"] is not None else str(r["partition"])):
            (r["status"], r["expected_owner"], sorted(r["observed_owners"]))
        for r in manifest["assignment_audit"] if r["status"] != "ok"
    }


def test_every_planted_finding_is_on_the_page_with_its_owners(demo_run, report):
    page, parsed = report
    planted = _planted_findings(demo_run.manifest)
    assert {r["source"] for r in demo_run.manifest["assignment_audit"] if r["status"] != "ok"} == {"zookeeper", "kafka"}
    shown = {
        (r["source"], r["group"], r["topic"], r["partition"]):
            (r["status"], r["expected"][0] if r["expected"] else None, sorted(r["observed"]))
        for r in parsed.findings
    }
    assert len(parsed.findings) == len(planted)
    assert shown == planted

    # the CSV next to the page holds the same rows (the history's findings follow them: test_demo)
    with (page.parent / "findings.csv").open(newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["status"] in ASSIGNMENT_STATUSES]
    assert {(r["source"], r["group_id"], r["topic"], r["partition"]):
            (r["status"], r["expected_owner"] or None, sorted(filter(None, r["observed_owners"].split(";"))))
            for r in rows} == planted


def test_every_unhealthy_group_is_named_with_its_reason(demo_run, report):
    """From the planted cluster: a ZooKeeper group with offsets (so lag) but no registered
    consumer and no owner znode, one whose 0.7 partitions have no log end, and every group
    Burrow judges (over the offset writes the generator recorded) stalled, stopped, rewound or
    lagging more and more."""
    _, parsed = report
    paths = demo_run.manifest["zookeeper"]["paths"]
    lag = demo_run.manifest["consumer_lag"]
    zk_groups = {r["group_id"] for r in lag if r["source"] == "zookeeper"}
    orphaned = {
        g for g in zk_groups
        if not any(p.startswith((f"/consumers/{g}/ids/", f"/consumers/{g}/owners/")) for p in paths)
        and sum(r["lag"] or 0 for r in lag if r["group_id"] == g) > 0
    }
    unknown_end = {r["group_id"] for r in lag if r["source"] == "zookeeper" and r["lag"] is None}
    # Burrow over the offset writes the generator recorded (the whole retained history the txn
    # logs replay), each ZooKeeper partition's lag against its log end
    burrow = _zk_burrow(demo_run.manifest)
    troubled = {g for g, statuses in burrow.items() if set(statuses) & set(BURROW_PROBLEMS)}
    assert orphaned and unknown_end
    assert set(parsed.unhealthy) == {("zookeeper", g) for g in orphaned | unknown_end | troubled}
    for g in troubled:
        for st in set(burrow[g]) & set(BURROW_PROBLEMS):
            assert any(why.startswith(f"Burrow {st} on {burrow[g][st]} of ")
                       for why in parsed.unhealthy[("zookeeper", g)])
    for g in orphaned:
        behind = sum(r["lag"] for r in lag if r["group_id"] == g and r["source"] == "zookeeper")
        assert f"{behind:,} messages behind and no live consumer or owner" in parsed.unhealthy[("zookeeper", g)]
    for g in unknown_end:
        n = sum(1 for r in lag if r["group_id"] == g and r["lag"] is None)
        assert any(f"log end unknown for {n} of" in why for why in parsed.unhealthy[("zookeeper", g)])


# Burrow's statuses that name a group unhealthy (FORMATS 6; the report's reasons)
BURROW_PROBLEMS = ("STOP", "REWIND", "STALL", "WARN")


def _zk_burrow(manifest: dict) -> dict[str, dict[str, int]]:
    """group -> {Burrow status: partitions} of the ZooKeeper partitions with a known log end,
    from the offset writes the generator recorded (its last ``lag_window_commits`` writes) and
    the log ends it wrote; the clock is the newest Kafka timestamp the demo wrote."""
    dbt_vars = yaml.safe_load((REPO / "dbt_project.yml").read_text())["vars"]
    window, allowed = dbt_vars["lag_window_commits"], dbt_vars["lag_allowed"]
    writes = manifest["history"]["zookeeper_offset_writes"]
    clock = max([t["max_timestamp"] for t in manifest["kafka"]["data_topics"].values()]
                + [r["committed_at"] for r in manifest["consumer_lag"] if r["source"] == "kafka"])
    out: dict[str, dict[str, int]] = {}
    for r in manifest["consumer_lag"]:
        if r["source"] != "zookeeper" or r["lag"] is None:
            continue
        last = writes[f"{r['group_id']}/{r['topic']}/{r['partition']}"][-window:]
        lags = [r["log_end_offset"] - off for _, _, off in last]
        offsets = [off for _, _, off in last]
        start, end = last[0][1], last[-1][1]
        never_zero = all(v != 0 for v in lags)
        if lags[-1] <= allowed:
            status = "OK"
        elif clock - end > end - start and never_zero:
            status = "STOP"
        elif offsets[-1] < offsets[0]:
            status = "REWIND"
        elif never_zero and len(set(offsets)) == 1:
            status = "STALL"
        elif never_zero and not any(b < a for a, b in zip(lags, lags[1:], strict=False)):
            status = "WARN"
        else:
            status = "OK"
        statuses = out.setdefault(r["group_id"], {})
        statuses[status] = statuses.get(status, 0) + 1
    return out


def test_numbers_units_and_paths_are_honest(demo_run, report):
    page, parsed = report
    html = page.read_text(encoding="utf-8")
    (regression,) = demo_run.manifest["offset_regressions"]
    assert f'data-v="{regression["regressed_by"]}"' in html and f"−{regression['regressed_by']}" not in html
    assert "lag <span class=\"unit\">messages</span>" in html
    assert "…/" not in html and "=…" not in html  # real paths
    assert str(demo_run.warehouse / "validation" / f"run_id={demo_run.run_id}") in html
    assert "http://" not in html and "https://" not in html and "data_docs/index.html\"" not in html
    summary = json.loads((page.parent / "summary.json").read_text())
    assert summary["offset_regressions"] == demo_run.manifest["expected"]["offset_regressions"]

    # one colour per count of commits in an hour, and a different one for each count (<= 7)
    colours: dict[int, set] = {}
    for colour, n in parsed.heat:
        colours.setdefault(n, set()).add(colour)
    assert parsed.heat and all(len(c) == 1 for c in colours.values())
    assert len({c for n, cs in colours.items() if 0 < n <= 7 for c in cs}) == len([n for n in colours if 0 < n <= 7])

    # the marts the page was written from are the real build's, each its declared contract
    for name in MARTS:
        mart = read_arrow(Warehouse(demo_run.warehouse), f"marts/{name}", demo_run.run_id, with_run_id=False)
        assert mart.schema.names == MARTS[name].names
        assert (mart.num_rows == 0) == (name in DEMO_EMPTY_MARTS), name


# The marts the demo's ZooKeeper run leaves empty: a ZooKeeper-mode cluster has no KRaft metadata,
# no share or Streams groups (KRaft-only, Kafka 4) and no migration to KRaft, its run has no
# MirrorMaker 2 pair (the estate's runs do), and the demo plants no stuck partition.
DEMO_EMPTY_MARTS = {"metadata_history", "stuck_partitions", "mm2_failover_readiness", "mm2_findings",
                    "migration_findings", "group_epochs"} | {
    name for name in MARTS if name.startswith(("share_group_", "streams_group_"))}


def _visible_findings(browser, status: str) -> int:
    return browser.evaluate(
        f"(() => {{ const s = document.querySelector('#finding-filters [name=status]'); s.value = {json.dumps(status)};"
        "s.dispatchEvent(new Event('input', {bubbles: true}));"
        "return [...document.querySelectorAll('tr.finding')].filter(r => r.offsetParent !== null).length; })()"
    )


def test_page_fits_420_and_1400_px_in_chromium(demo_run, report, tmp_path):
    page, _ = report
    planted = _planted_findings(demo_run.manifest)
    ARTIFACTS.mkdir(exist_ok=True)
    browser = Chromium(tmp_path / "profile")
    try:
        for width in (420, 1400):
            browser.load(page.as_uri(), width)
            scroll, inner = browser.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
            assert scroll <= inner, f"the page overflows at {width} px: {scroll} > {inner}"
            # every owner is on screen, not clipped or behind a horizontal scroll
            right = browser.evaluate(
                "Math.max(...[...document.querySelectorAll('tr.finding td.owner')]"
                ".map(e => e.getBoundingClientRect().right))"
            )
            assert right <= inner, f"owners cut off at {width} px"
            shot = browser.screenshot(ARTIFACTS / f"report-{width}px.png")
            print(f"screenshot: {shot}")
            assert shot.stat().st_size > 20_000
        wrong = sum(1 for status, _, _ in planted.values() if status == "wrong_owner")
        assert _visible_findings(browser, "wrong_owner") == wrong
        assert _visible_findings(browser, "") == len(planted)
    finally:
        browser.close()


def test_neither_the_page_nor_a_page_it_links_requests_a_non_file_url(report, tmp_path):
    page, parsed = report
    assert parsed.links
    browser = Chromium(tmp_path / "profile")
    try:
        browser.load(page.as_uri(), 1400)
        for href in parsed.links:
            url = urljoin(page.as_uri(), href)
            assert urlparse(url).scheme == "file", href
            target = Path(url2pathname(urlparse(url).path))
            assert target.exists(), f"{href}: links to a missing {target}"
            if target.suffix == ".html":
                browser.load(url, 1400)
        requested = browser.requested_urls()
    finally:
        browser.close()
    assert page.as_uri() in requested
    assert [u for u in requested if urlparse(u).scheme != "file"] == []
