"""Choosing the warehouse's format: ``open_warehouse`` and the command line's global options."""

from __future__ import annotations

import subprocess
import sys

import pytest

from pipelines.errors import UsageError
from pipelines.warehouse.directory import Warehouse
from pipelines.warehouse.formats import open_warehouse
from pipelines.warehouse.iceberg.warehouse import IcebergWarehouse


def test_parquet_is_the_default(tmp_path):
    wh = open_warehouse(tmp_path / "wh")
    assert type(wh) is Warehouse and wh.format == "parquet"


def test_iceberg_on_a_directory_and_on_a_uri(tmp_path):
    local = open_warehouse(tmp_path / "wh", "iceberg")
    assert isinstance(local, IcebergWarehouse)
    assert local.catalog_config.uri == f"sqlite:///{tmp_path / 'wh.catalog.db'}"
    assert local.catalog_config.location == (tmp_path / "wh").as_uri()
    s3 = open_warehouse("s3a://bucket/prefix/", "iceberg", str(tmp_path / "c.db"), tmp_path / "state")
    assert s3.root == tmp_path / "state"
    assert s3.catalog_config.location == "s3a://bucket/prefix"
    assert s3.catalog_config.uri == f"sqlite:///{tmp_path / 'c.db'}"


@pytest.mark.parametrize(("args", "message"), [
    (("wh", "delta"), "expected one of parquet, iceberg"),
    (("s3a://b/p", "parquet"), "local directory without a catalog"),
    (("wh", "parquet", "cat.db"), "local directory without a catalog"),
    (("s3a://b/p", "iceberg"), "--warehouse-local"),
])
def test_usage_errors(args, message):
    with pytest.raises(UsageError, match=message):
        open_warehouse(*args)


def test_validate_and_report_on_an_iceberg_run_not_built_exit_1(tmp_path):
    for step in ("validate", "report"):  # they read the Iceberg warehouse: an unbuilt run is an input error
        done = subprocess.run([sys.executable, "-m", "pipelines", "--warehouse", str(tmp_path / "wh"),
                               "--warehouse-format", "iceberg", "--run-id", "r1", step],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 1, (step, done.stdout, done.stderr)
        assert "Traceback" not in done.stderr, done.stderr
        what = "validate" if step == "validate" else "report on"
        assert done.stderr.strip().splitlines()[-1] == (
            f"kaudit: run r1: not built yet (no core/assignment_audit), nothing to {what}; run `kaudit build` first"
        ), done.stderr
