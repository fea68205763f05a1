"""One real run with planted faults of both sources, built once per test session: ``kaudit
demo`` (the demo cluster's ZooKeeper data dir and ``__consumer_offsets`` segments -> extract
-> Spark build -> real ``dbt build`` -> GX validate -> report), run in this process on the
session's Spark. The demo, report and quality tests read it instead of each building a run."""

from __future__ import annotations

import contextlib
import io
import json
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
MANIFEST = REPO / "pipelines" / "demo" / "faults.json"
DEMO_RUN_ID = "demo-test"


@dataclass
class DemoRun:
    warehouse: Path
    run_id: str
    out: Path  # the demo cluster's files
    exit_code: int
    output: str  # what the command printed (stdout + stderr)
    manifest: dict  # the planted faults (pipelines/demo/faults.json)

    @property
    def report_dir(self) -> Path:
        return self.warehouse / "reports" / f"run_id={self.run_id}"

    def estate_run(self, case: str) -> str:
        """The run id of the estate case ``case`` (``pipelines.demo.estate.CASES``), whose data dir
        the demo extracted, built, validated and reported (its report is there)."""
        run_id = f"{self.run_id}-{case}"
        report = self.warehouse / "reports" / f"run_id={run_id}" / "index.html"
        assert report.is_file(), f"the demo made no report of its run {run_id}:\n{self.output[-3000:]}"
        return run_id


@pytest.fixture(scope="session")
def demo_run(spark, tmp_path_factory) -> DemoRun:
    from pipelines.cli import main

    root = tmp_path_factory.mktemp("demo-run")
    warehouse, out = root / "warehouse", root / "cluster"
    args = ["--warehouse", str(warehouse), "--run-id", DEMO_RUN_ID, "--spark-master", "local[2]",
            "demo", "--out", str(out)]
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
        try:
            main(args)
            code = 0
        except SystemExit as done:
            code = done.code if isinstance(done.code, int) else 1
    return DemoRun(warehouse, DEMO_RUN_ID, out, code, printed.getvalue(), json.loads(MANIFEST.read_text()))
