"""Every step of a run with the warehouse on a real S3-compatible server (S3Proxy on loopback):
extract, build with dbt's marts, validate and report on ``--warehouse s3a://...``, against the
same commands on a local Parquet warehouse. Every raw, core and quality table, every mart dbt
built and the report's summary must be the same, row for row; nothing but the local working
directory (locks, run records, the report, GX's files) is on the local disk.

The oracle is the local Parquet run (the layout the suite checks against ZooKeeper's and Kafka's
own tools) for "the same audit", and the demo cluster's manifest of planted faults for a few
facts of the report. Two full pipelines (two Spark JVMs, two dbt builds): a case of the matrix
(`make matrix`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipelines.quality.marts import MARTS
from pipelines.warehouse.directory import Warehouse
from pipelines.warehouse.iceberg.warehouse import IcebergWarehouse
from pipelines.warehouse.reading import read_built
from pipelines.warehouse.tables import SCHEMAS
from tests.integration.test_iceberg_matches_parquet import DEMO, RUN, _kaudit, _rows

pytestmark = [pytest.mark.integration, pytest.mark.matrix]

MANIFEST = Path(__file__).resolve().parents[2] / "pipelines" / "demo" / "faults.json"
# when Great Expectations ran a check: the two runs' validations ran at different moments
RUN_MOMENT = {"quality/validation_results": ("evaluated_at",)}


def _every_step(options: list[str], env: dict | None = None) -> None:
    _kaudit([*options, "extract", "zk-snapshot", str(DEMO / "zookeeper")], env)
    _kaudit([*options, "extract", "offsets", str(DEMO / "kafka-logs")], env)
    _kaudit([*options, "extract", "log-end", str(DEMO / "kafka-logs")], env)
    _kaudit([*options, "build"], env)
    _kaudit([*options, "validate"], env)
    _kaudit([*options, "report"], env)


def _same_tables(parquet: Warehouse, iceberg: IcebergWarehouse) -> dict[str, int]:
    """Every declared table and every mart of the run, Parquet vs Iceberg: {table: rows compared}."""
    compared = {}
    for table in [*sorted(SCHEMAS), *(f"marts/{m}" for m in sorted(MARTS))]:
        want, got = read_built(parquet, table, RUN), read_built(iceberg, table, RUN)
        assert (got is None) == (want is None), f"{table}: built in one warehouse only"
        if want is None:
            continue
        drop = RUN_MOMENT.get(table, ())
        want, got = want.drop_columns(list(drop)), got.drop_columns(list(drop))
        assert got.schema == want.schema, table
        assert got.num_rows == want.num_rows, f"{table}: {got.num_rows} rows on S3, {want.num_rows} locally"
        assert _rows(got) == _rows(want), f"{table}: rows differ"
        compared[table] = want.num_rows
    return compared


def test_every_step_on_s3_gives_the_local_runs_tables_and_report(tmp_path, monkeypatch):
    from testkit.storage import S3Proxy

    local_root = tmp_path / "parquet"
    _every_step(["--warehouse", str(local_root)])
    parquet = Warehouse(local_root)

    with S3Proxy(tmp_path / "s3").start() as s3:
        s3.create_bucket("kaudit")
        location, local, catalog = "s3a://kaudit/warehouse", tmp_path / "local", str(tmp_path / "catalog.db")
        _every_step(["--warehouse", location, "--warehouse-local", str(local), "--warehouse-format", "iceberg",
                     "--catalog", catalog], s3.env())
        keys = s3.objects("kaudit")
        for name, value in s3.env().items():  # (pyiceberg's S3 settings, read from the environment)
            monkeypatch.setenv(name, value)
        compared = _same_tables(parquet, IcebergWarehouse(local, location=location, catalog=catalog))

    marts = [t for t in compared if t.startswith("marts/")]
    print(f"\n{len(compared)} tables ({len(marts)} marts), {sum(compared.values())} rows compared row for row")
    for table in ("raw/znodes", "raw/offset_commits", "core/assignment_audit", "quality/validation_results",
                  "marts/consumer_lag", "marts/offset_regressions"):
        assert compared.get(table, 0) > 0, f"{table}: no rows to compare"
    # the marts' and the validation's data files are objects on S3, none on the local disk
    for table in ("marts/consumer_lag", "quality/validation_results"):
        assert any(k.startswith(f"warehouse/{table}/data/") for k in keys), f"{table}: no data object on S3"
    # on the local disk: GX's failing rows (validation/) and dbt's intermediate models, the build's
    # working tables (dbt_project.yml), not tables of the warehouse
    local_files = [p.relative_to(local).parts[0] for p in local.rglob("*.parquet")]
    assert set(local_files) <= {"validation", "dbt"}, f"table data on the local disk: {sorted(set(local_files))}"

    # the report: the same summary, with the assignment statuses and regressions the demo planted
    summaries = [json.loads((w / "reports" / f"run_id={RUN}" / "summary.json").read_text())
                 for w in (local_root, local)]
    assert summaries[0] == summaries[1]
    expected = json.loads(MANIFEST.read_text())["expected"]
    for source, statuses in expected["assignment"].items():
        assert {k: summaries[1]["assignment"][source][k] for k in statuses} == statuses, source
    assert summaries[1]["offset_regressions"] == expected["offset_regressions"]
    assert summaries[1]["expectations"]["evaluated"] > 0
