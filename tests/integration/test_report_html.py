"""`kaudit report` seen as a person sees it: the page rendered by headless Chromium is not
blank and its DOM shows the headline numbers; summary.json is shaped as in CONTRACT."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
from datetime import timedelta

import pytest

from pipelines.cli import main
from test_validate_cli import PLANTED, T0, WARNINGS, _audit, _write, _write_mart, write_run

pytestmark = pytest.mark.integration

HOSTILE = '<script>alert("x")</script>&co'

CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--window-size=1400,2000",
]


def _chromium(tmp_path, *args):
    exe = shutil.which("chromium")
    if exe is None:
        pytest.fail("chromium is not installed: run `make test` (installs Debian's chromium)")
    profile = tmp_path / "chromium-profile"
    done = subprocess.run([exe, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args],
                          capture_output=True, timeout=180)
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
    return done.stdout.decode()


def _richer_run(warehouse, run_id):
    """The faulty validate run plus more groups (one with a hostile name), commit frequency,
    lag status and the validation results a `kaudit validate` of it writes."""
    write_run(warehouse, run_id, faulty=True)
    audit = warehouse.read_table("core/assignment_audit", run_id).drop(["run_id"]).to_pylist()
    for g in range(6):
        for p in range(8):
            status = "ok" if (p + g) % 5 else ("unowned" if g % 2 else "wrong_owner")
            audit.append(_audit("kafka", f"orders-consumer-{g}", p, "m1", [] if status == "unowned" else ["m1"], status))
    audit.append(_audit("kafka", HOSTILE, 0, "m1", ["m1"], "ok"))
    _write(warehouse, run_id, "core/assignment_audit", audit)
    _write_mart(warehouse, run_id, "commit_frequency", [
        dict(group_id=f"orders-consumer-{g}", topic="orders", partition=p, window_start=T0 + timedelta(hours=h),
             commits=(g + 1) * (p + 1) * ((h % 6) + 1), first_commit_at=T0 + timedelta(hours=h),
             last_commit_at=T0 + timedelta(hours=h, minutes=59))
        for g in range(3) for p in range(4) for h in range(24) if (h + p) % 7
    ])
    _write_mart(warehouse, run_id, "consumer_lag_status", [
        dict(source="kafka", group_id="g-k", topic="t", partition=0, status="ok"),
        dict(source="kafka", group_id="g-k", topic="t", partition=1, status="ahead_of_log_end"),
    ])
    results = [
        {"suite": "s", "expectation": name, "success": False, "unexpected_count": len(values),
         "level": "warning" if name in WARNINGS else "error", "description": f"check {name}"}
        for name, (_, values) in PLANTED.items()
    ] + [{"suite": "s", "expectation": "all_good", "success": True, "unexpected_count": 0, "level": "error",
          "description": "passes"}]
    part = warehouse.partition_dir("validation", run_id)
    part.mkdir(parents=True)
    (part / "results.json").write_text(json.dumps(results))
    return results


def test_report_renders_headline_numbers_in_chromium(warehouse, tmp_path):
    from PIL import Image, ImageStat

    results = _richer_run(warehouse, "r1")
    with pytest.raises(SystemExit) as exit_:
        main(["--warehouse", str(warehouse.root), "--run-id", "r1", "report"])
    assert exit_.value.code == 0

    part = warehouse.partition_dir("reports", "r1")
    summary = json.loads((part / "summary.json").read_text())
    audit = warehouse.read_table("core/assignment_audit", "r1").to_pylist()
    expected_assignment = {
        source: {status: sum(1 for r in audit if r["source"] == source and r["status"] == status)
                 for status in ("ok", "wrong_owner", "unowned", "duplicate_owner", "unknown_owner",
                                "unexpected_partition")}
        for source in ("zookeeper", "kafka")
    }
    assert summary == {
        "run_id": "r1",
        "inputs": {"znodes": 3, "offset_records": 5 + 2 + 1, "quarantined": 1},
        "assignment": expected_assignment,
        "offset_regressions": 1,
        "expectations": {"evaluated": len(results), "failed": len(PLANTED)},
    }

    page = part / "index.html"
    html = page.read_text()
    assert "http://" not in html and "https://" not in html and "<script" not in html.replace(
        "&lt;script", "")  # self-contained, and the hostile group name is escaped

    shot = tmp_path / "report.png"
    _chromium(tmp_path, f"--screenshot={shot}", page.as_uri())
    image = Image.open(io.BytesIO(shot.read_bytes())).convert("L")
    assert image.size == (1400, 2000)
    assert ImageStat.Stat(image).var[0] > 200, "the rendered page is blank"

    dom = _chromium(tmp_path, "--dump-dom", page.as_uri())
    problems = sum(v for s in expected_assignment.values() for k, v in s.items() if k != "ok")
    metrics = {
        "Assignment problems": problems,
        "Offset regressions": 1,
        "Expectations failed": len(PLANTED),
        "Quarantined": 1,
        "Znodes read": 3,
        "Offset records": 8,
    }
    for label, value in metrics.items():
        assert f'data-metric="{label}">{value:,}<' in dom, label
    assert "Assignment status per group" in dom and "Commit frequency" in dom
    assert "orders-consumer-0" in dom and "&lt;script&gt;alert" in dom
    assert "../../validation/data_docs/index.html" in dom
