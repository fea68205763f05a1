"""Opening the warehouse: ``open_warehouse``, the command line's global options, the retired
``--warehouse-format parquet`` and a directory of the retired Parquet layout."""

from __future__ import annotations

import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipelines.errors import UsageError
from pipelines.warehouse.warehouse import open_warehouse


def _kaudit(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pipelines", *args], capture_output=True, text=True, timeout=120)


def test_a_directory_and_a_uri(tmp_path):
    local = open_warehouse(tmp_path / "wh")
    assert local.catalog_config.uri == f"sqlite:///{tmp_path / 'wh.catalog.db'}"
    assert local.catalog_config.location == (tmp_path / "wh").as_uri()
    s3 = open_warehouse("s3a://bucket/prefix/", str(tmp_path / "c.db"), tmp_path / "state")
    assert s3.root == tmp_path / "state"
    assert s3.catalog_config.location == "s3a://bucket/prefix"
    assert s3.catalog_config.uri == f"sqlite:///{tmp_path / 'c.db'}"


def test_an_object_store_warehouse_needs_a_local_directory():
    with pytest.raises(UsageError, match="--warehouse-local"):
        open_warehouse("s3a://b/p")


def test_warehouse_format_parquet_is_a_usage_error_and_iceberg_is_accepted(tmp_path):
    done = _kaudit("--warehouse", str(tmp_path / "wh"), "--warehouse-format", "parquet", "report")
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == ("kaudit: --warehouse-format parquet: Parquet warehouses are no longer written; "
                                   "every warehouse table is an Apache Iceberg table (drop the option)")
    done = _kaudit("--warehouse", str(tmp_path / "wh"), "--warehouse-format", "iceberg", "--run-id", "r1", "report")
    assert done.returncode == 1 and "not built yet" in done.stderr, done.stderr  # the option passes
    assert "--warehouse-format" not in _kaudit("--help").stdout  # hidden: deprecated


def test_a_directory_of_the_old_parquet_layout_exits_1_naming_it(tmp_path):
    old = tmp_path / "wh"
    part = old / "raw" / "log_end_offsets" / "run_id=r1"
    part.mkdir(parents=True)
    pq.write_table(pa.table({"topic": ["t"]}), part / "part-main.parquet")
    done = _kaudit("--warehouse", str(old), "--run-id", "r1", "report")
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1:] == [
        f"kaudit: {old}: a Parquet warehouse of kaudit before 0.2 (<layer>/<table>/run_id=<id>/ directories, no "
        "Iceberg catalog); kaudit writes Iceberg tables only: use a new --warehouse directory, or copy its runs "
        "in with kaudit migrate-warehouse"]


def test_validate_and_report_on_a_run_not_built_exit_1(tmp_path):
    for step in ("validate", "report"):  # an unbuilt run is an input error
        done = _kaudit("--warehouse", str(tmp_path / "wh"), "--run-id", "r1", step)
        assert done.returncode == 1, (step, done.stdout, done.stderr)
        assert "Traceback" not in done.stderr, done.stderr
        what = "validate" if step == "validate" else "report on"
        assert done.stderr.strip().splitlines()[-1] == (
            f"kaudit: run r1: not built yet (no core/assignment_audit), nothing to {what}; run `kaudit build` first"
        ), done.stderr
