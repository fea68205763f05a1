"""``kaudit migrate-warehouse``: the runs of a Parquet warehouse of kaudit before 0.2 (a small one,
written here by pyarrow in the old layout) committed into the Iceberg warehouse. The expected
rows are the rows this test wrote."""

from __future__ import annotations

import json
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq

from pipelines.warehouse.reading import read_arrow
from pipelines.warehouse.tables import SCHEMAS
from pipelines.warehouse.warehouse import Warehouse

ENDS = [dict(topic="t", partition=p, log_start_offset=0, log_end_offset=10 + p, max_timestamp=None) for p in range(3)]
BROKER = dict(broker_id=1, host="h", port=9092, endpoints=["PLAINTEXT://h:9092"])  # (no rack, fenced: pre-KRaft)


def _quarantine(location: str) -> pa.Table:
    return pa.Table.from_pylist([dict(source="offsets", location=location, reason="CrcMismatch: x", raw=b"\x01")],
                                schema=SCHEMAS["raw/quarantine"])


def _old_warehouse(root):
    """The old layout: hive partitions of files without run_id, one file per step in a shared table."""
    def part(table, run_id, name, data):
        d = root / table / f"run_id={run_id}"
        d.mkdir(parents=True, exist_ok=True)
        pq.write_table(data, d / name)

    ends = SCHEMAS["raw/log_end_offsets"]
    part("raw/log_end_offsets", "r1", "part-main.parquet", pa.Table.from_pylist(ENDS, schema=ends))
    part("raw/log_end_offsets", "r2", "part-main.parquet", pa.Table.from_pylist(ENDS[:1], schema=ends))
    part("raw/quarantine", "r1", "part-extract_offsets.parquet", _quarantine("a.log:1"))
    part("raw/quarantine", "r1", "part-extract_zk_snapshot.parquet", _quarantine("snapshot.1:7"))
    old_brokers = pa.schema([f for f in SCHEMAS["core/brokers"] if f.name not in ("rack", "fenced")])
    part("core/brokers", "r1", "part-00000.parquet", pa.Table.from_pylist([BROKER], schema=old_brokers))
    part("raw/retired_table", "r1", "part-main.parquet", pa.table({"x": [1]}))
    for run_id in ("r1", "r2"):
        record = root / "runs" / f"run_id={run_id}" / "run.json"
        record.parent.mkdir(parents=True)
        record.write_text(json.dumps({"run_id": run_id, "started_at": f"2026-01-0{run_id[1]}T00:00:00+00:00"}))
    (root / "reports" / "run_id=r1").mkdir(parents=True)
    (root / "reports" / "run_id=r1" / "index.html").write_text("<html>r1</html>")


def _kaudit(*args):
    return subprocess.run([sys.executable, "-m", "pipelines", *args], capture_output=True, text=True, timeout=120)


def test_an_old_parquet_warehouse_is_committed_run_by_run(tmp_path):
    old, new = tmp_path / "old", tmp_path / "new"
    _old_warehouse(old)
    done = _kaudit("--warehouse", str(new), "migrate-warehouse", str(old))
    assert done.returncode == 0, done.stderr
    said = done.stdout + done.stderr
    assert f"migrate-warehouse: skipped {old / 'raw/retired_table'}: not a table kaudit declares" in said
    wh = Warehouse(new)
    assert read_arrow(wh, "raw/log_end_offsets", "r1", with_run_id=False).to_pylist() == ENDS
    assert read_arrow(wh, "raw/log_end_offsets", "r2", with_run_id=False).to_pylist() == ENDS[:1]
    assert read_arrow(wh, "core/brokers", "r1", with_run_id=False).to_pylist() == [{**BROKER, "rack": None,
                                                                                    "fenced": None}]
    assert wh.read_step("raw/quarantine", "r1", "extract_offsets").column("location").to_pylist() == ["a.log:1"]
    assert wh.read_step("raw/quarantine", "r1", "extract_zk_snapshot").column("location").to_pylist() == [
        "snapshot.1:7"]
    ledger = wh.snapshots("r1")  # one ledger row set per run and step
    assert {step for step, _ in ledger} == {"migrate", "extract_offsets", "extract_zk_snapshot"}
    assert {t for _, t in ledger} == {"raw/log_end_offsets", "core/brokers", "raw/quarantine"}
    assert (new / "reports" / "run_id=r1" / "index.html").read_text() == "<html>r1</html>"
    assert json.loads((new / "runs" / "run_id=r2" / "run.json").read_text())["started_at"].startswith("2026-01-02")
    again = _kaudit("--warehouse", str(new), "migrate-warehouse", str(old))  # replaces, never adds
    assert again.returncode == 0, again.stderr
    assert read_arrow(Warehouse(new), "raw/log_end_offsets", "r1").num_rows == 3
    assert (old / "raw/log_end_offsets/run_id=r1/part-main.parquet").exists()  # the old one only read


def test_not_an_old_warehouse_exits_1_with_one_line(tmp_path):
    (tmp_path / "empty").mkdir()
    done = _kaudit("--warehouse", str(tmp_path / "new"), "migrate-warehouse", str(tmp_path / "empty"))
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.strip() == (f"kaudit: {tmp_path / 'empty'}: no <layer>/<table>/run_id=<id>/ Parquet "
                                   "partitions (expected a Parquet warehouse of kaudit before 0.2)")
