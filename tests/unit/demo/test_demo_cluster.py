"""The demo's own logic: writing the cluster without clobbering user dirs, step calls, and
comparing a summary with the planted faults."""

from __future__ import annotations

import filecmp
import json

import pytest

from pipelines import demo
from pipelines.errors import UsageError


def test_write_cluster_copies_the_committed_data(tmp_path):
    out = demo.write_cluster(tmp_path / "cluster")
    assert (out / demo.MARKER).is_file()
    assert json.loads((out / "faults.json").read_text()) == demo.load_manifest()
    cmp = filecmp.dircmp(demo.DATA / "zookeeper" / "version-2", out / "zookeeper" / "version-2")
    assert cmp.left_list == cmp.right_list and not cmp.diff_files
    # the generated cluster's logs, and under real/ the data dirs real brokers wrote
    names = [p.relative_to(demo.DATA).as_posix() for p in demo.DATA.rglob("*.log")]
    names += [f"real/{p.relative_to(demo.REAL).as_posix()}" for p in demo.REAL.rglob("*.log")]
    assert sorted(names) == sorted(p.relative_to(out).as_posix() for p in out.rglob("*.log"))


def test_write_cluster_replaces_a_previous_demo_only(tmp_path):
    out = demo.write_cluster(tmp_path / "cluster")
    (out / "stale.txt").write_text("from an older demo")
    demo.write_cluster(out)
    assert not (out / "stale.txt").exists() and (out / demo.MARKER).is_file()

    user = tmp_path / "mine"
    user.mkdir()
    (user / "notes.txt").write_text("keep me")
    with pytest.raises(UsageError, match="not a kaudit demo"):
        demo.write_cluster(user)
    assert (user / "notes.txt").read_text() == "keep me" and len(list(user.iterdir())) == 1

    a_file = tmp_path / "file"
    a_file.write_text("x")
    with pytest.raises(UsageError, match="not a directory"):
        demo.write_cluster(a_file)

    empty = tmp_path / "empty"
    empty.mkdir()
    assert (demo.write_cluster(empty) / demo.MARKER).is_file()


def test_compare_a_summary_with_the_planted_faults():
    expected = demo.load_manifest()["expected"]
    summary = {
        "inputs": {"znodes": 1, "offset_records": 1, "quarantined": expected["quarantined"]},
        "assignment": json.loads(json.dumps(expected["assignment"])),
        "offset_regressions": expected["offset_regressions"],
        "expectations": {"evaluated": 3, "failed": 0},
    }
    assert demo.compare(summary, expected) == []
    summary["assignment"]["kafka"]["unowned"] += 1
    summary["offset_regressions"] += 2
    unowned, regressions = expected["assignment"]["kafka"]["unowned"], expected["offset_regressions"]
    assert demo.compare(summary, expected) == [
        f"kafka unowned: {unowned + 1} (planted {unowned})",
        f"offset regressions: {regressions + 2} (planted {regressions})",
    ]
    lines = demo.summary_lines(summary)
    assert lines[0] == f"inputs: 1 znodes, 1 offset records, {expected['quarantined']} quarantined"
    assert any(line.startswith("assignment (zookeeper): ") and "wrong_owner" in line for line in lines)


def test_compare_the_kraft_run_with_the_planted_faults(tmp_path):
    from collections import Counter

    expected = demo.load_manifest()["kraft"]["expected"]
    summary = {
        "assignment": json.loads(json.dumps(expected["assignment"])),
        "offset_regressions": expected["offset_regressions"],
    }
    # findings.csv as the report writes it: one row per finding, source and status columns
    rows = [("kraft", demo.ISR_BELOW_MIN)] * len(expected["isr_below_min_insync"])
    rows += [("kraft", demo.DELETED_TOPIC_COMMITS)] * len(expected["deleted_topic_commits"])
    rows += [("kafka", f["finding"]) for f in expected["group_findings"]] + [("kafka", "duplicate_owner")]
    csv_file = tmp_path / "findings.csv"
    csv_file.write_text("source,group_id,status\n" + "".join(f"{s},g,{st}\n" for s, st in rows))
    found = demo.kraft_findings(csv_file)
    assert found == Counter(rows)
    assert demo.compare_kraft(summary, found, expected) == []
    line = demo.kraft_line(found)
    assert line.startswith(f"kraft: {len(expected['isr_below_min_insync'])} partition(s) with ISR below")
    assert all(f["finding"] in line for f in expected["group_findings"])

    found[("kraft", demo.ISR_BELOW_MIN)] = 0
    assert demo.compare_kraft(summary, found, expected) == [
        f"{demo.ISR_BELOW_MIN}: 0 (planted {len(expected['isr_below_min_insync'])})"
    ]
    assert demo.kraft_findings(tmp_path / "none.csv") == Counter()
    with pytest.raises(UsageError, match="longer than 64"):
        demo.kraft_run_id("x" * 60)
    assert demo.kraft_run_id("20261123T090000Z") == "20261123T090000Z-kraft"
