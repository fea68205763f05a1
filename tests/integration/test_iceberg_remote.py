"""The Iceberg warehouse on a real HDFS (Hadoop's MiniDFSCluster from Maven Central, on loopback)
and on a real S3-compatible server (S3Proxy, on loopback): every step (extract, build with dbt,
validate, report) with ``--warehouse hdfs://...`` or ``--warehouse s3a://...`` gives, row for
row, the tables and the report of the same commands on a local warehouse. On HDFS pyiceberg (the
extract, the report) reads and writes over the namenode's WebHDFS, Spark (the build, dbt, the
validation) through Hadoop's HDFS client; on S3 both through their S3 clients.

The oracle of "the same audit" is the local run; the facts of the audit itself come from the
demo cluster's manifest (``pipelines/demo/faults.json``: what its generator planted), and where
the tables' files are from the namenode's own listing or the S3 server's objects. Two whole
pipelines per store (two Spark JVMs and the store's server): a case of the matrix
(``make matrix``), not of the default suite."""

from __future__ import annotations

import json
import subprocess
from contextlib import contextmanager
from pathlib import Path

import pytest
from test_cluster_standalone import standalone  # noqa: F401 - the fixture (tests/integration)
from test_iceberg_stores import DEMO, RUN, _compare, _kaudit, _rows  # (tests/integration)

from pipelines.warehouse.reading import read_arrow
from pipelines.warehouse.warehouse import Warehouse

pytestmark = [pytest.mark.integration, pytest.mark.matrix]

MANIFEST = json.loads((DEMO.parent / "faults.json").read_text())


def _pipeline(options: list[str], env: dict | None = None) -> None:
    for step in (["extract", "zk-snapshot", str(DEMO / "zookeeper")], ["extract", "offsets", str(DEMO / "kafka-logs")],
                 ["extract", "log-end", str(DEMO / "kafka-logs")], ["build"], ["validate"], ["report"]):
        _kaudit([*options, *step], env)


@pytest.fixture(scope="module")
def local_run(tmp_path_factory) -> Warehouse:
    root = tmp_path_factory.mktemp("local") / "wh"
    _pipeline(["--warehouse", str(root)])
    return Warehouse(root)


# dbt's snapshot columns that are the wall clock of the build (dbt-spark's snapshot takes
# current_timestamp; dbt_scd_id hashes it): the runs that opened and closed a version are kaudit's
DBT_CLOCK = ("dbt_scd_id", "dbt_updated_at", "dbt_valid_from", "dbt_valid_to")


def _history(wh: Warehouse, table: str, snapshot_id: int) -> list:
    """Every version of a dbt snapshot (one history across runs) at the ledger's snapshot, but
    its wall-clock columns (each version must have them)."""
    versions = wh.catalog.load_table(wh.ident(table)).scan(snapshot_id=snapshot_id).to_arrow()
    assert versions.column("dbt_valid_from").null_count == versions.column("dbt_scd_id").null_count == 0, table
    return _rows(versions.drop_columns(list(DBT_CLOCK)))


def _report(root: Path) -> tuple[dict, str]:
    page = root / "reports" / f"run_id={RUN}"
    return json.loads((page / "summary.json").read_text()), (page / "findings.csv").read_text()


@contextmanager
def _remote(store: str, root: Path):
    """A real ``store`` (``hdfs`` or ``s3``) on loopback: (the warehouse's location on it, the
    environment its clients need, a check that the tables' files are there)."""
    if store == "hdfs":
        from testkit.hdfs import MiniHdfs

        with MiniHdfs(root).start() as hdfs:
            def on_hdfs() -> None:  # as the namenode lists them
                assert "assignment_audit" in hdfs.list("kaudit/core")
                assert any(n.startswith("run_id=") for n in hdfs.list("kaudit/core/assignment_audit/data"))
                assert any(n.endswith(".metadata.json") for n in hdfs.list("kaudit/marts/consumer_lag/metadata"))

            yield hdfs.uri("kaudit"), hdfs.env(), on_hdfs
    else:
        from testkit.storage import S3Proxy

        with S3Proxy(root).start() as s3:
            s3.create_bucket("kaudit")

            def on_s3() -> None:  # the server's objects
                keys = s3.objects("kaudit")
                assert any(k.startswith("warehouse/core/assignment_audit/data/run_id=") for k in keys), keys[:20]
                assert any(k.startswith("warehouse/marts/consumer_lag/metadata/") and k.endswith(".metadata.json")
                           for k in keys), keys[:20]

            yield "s3a://kaudit/warehouse", s3.env(), on_s3


@pytest.mark.parametrize("store", ["hdfs", "s3"])
def test_the_warehouse_on_a_remote_store_gives_the_local_audit_row_for_row(store, local_run, tmp_path, monkeypatch):
    with _remote(store, tmp_path / store) as (location, env, files_on_store):
        local, catalog = tmp_path / "local", str(tmp_path / "catalog.db")
        _pipeline(["--warehouse", location, "--warehouse-local", str(local),
                   "--catalog", catalog], env)
        # the tables' files are on the store; none on the local disk
        files_on_store()
        for layer in ("raw", "core", "marts", "snapshots", "quality", "meta"):
            assert not list((local / layer).rglob("*.parquet")), f"{layer}: table data on the local disk"
        for var, value in env.items():
            monkeypatch.setenv(var, value)
        remote = Warehouse(local, location=location, catalog=catalog)

        # raw, core and the validation's results: every declared table, row for row
        compared = _compare(local_run, remote)
        # the ledger names the same tables, step by step; the marts and the history row for row
        want_ledger, got_ledger = local_run.snapshots(RUN), remote.snapshots(RUN)
        assert set(got_ledger) == set(want_ledger)
        for (step, table), sid in sorted(want_ledger.items()):
            if table.startswith("marts/"):
                want = read_arrow(local_run, table, RUN)
                assert _rows(read_arrow(remote, table, RUN)) == _rows(want), table
                compared[table] = want.num_rows
            elif table.startswith("snapshots/"):
                want = _history(local_run, table, sid)
                assert _history(remote, table, got_ledger[step, table]) == want, table
                compared[table] = len(want)
        layers = [t.split("/")[0] for t in compared]
        assert layers.count("marts") >= 20 and layers.count("snapshots") == 2, sorted(compared)
        # the report: the same summary and findings
        summary, findings = _report(local)
        assert (summary, findings) == _report(local_run.root)
        print(f"\n{len(compared)} tables, {sum(compared.values())} rows compared row for row")

        # the audit is the one the demo's generator planted (read while the store runs)
        expected = MANIFEST["expected"]
        for source, statuses in expected["assignment"].items():
            assert {s: summary["assignment"][source].get(s, 0) for s in statuses} == statuses, source
        assert summary["offset_regressions"] == expected["offset_regressions"]
        assert summary["inputs"]["znodes"] == MANIFEST["zookeeper"]["znodes_outside_zookeeper_subtree"]
        records = expected["offset_commit_records"] + expected["group_metadata_records"]
        assert summary["inputs"]["offset_records"] == records
        key = ("source", "group_id", "topic", "partition", "broker_id")

        def audit(rows):
            return {tuple(r[k] for k in key): (r["status"], r["expected_owner"], sorted(r["observed_owners"] or []))
                    for r in rows}

        planted = audit(MANIFEST["assignment_audit"])
        assert audit(remote.read_arrow("core/assignment_audit", RUN).to_pylist()) == planted
        q = MANIFEST["quarantine"][0]
        quarantine = remote.read_arrow("raw/quarantine", RUN).to_pylist()
        assert len(quarantine) == 1, quarantine
        assert quarantine[0]["location"].endswith(f"{q['file']}:{q['byte_offset']}"), quarantine
        log_end = {(r["topic"], r["partition"]): r["log_end_offset"]
                   for r in remote.read_arrow("raw/log_end_offsets", RUN).to_pylist()}
        for topic in MANIFEST["kafka"]["data_topics"].values():
            assert log_end[topic["topic"], topic["partition"]] == topic["log_end_offset"], topic


@pytest.mark.cluster
def test_a_standalone_cluster_build_on_hdfs_equals_the_local_build(local_run, standalone, tmp_path, monkeypatch):  # noqa: F811
    """``kaudit --spark-master spark://...`` with the warehouse on HDFS: the build's job on a real
    standalone cluster (its worker sharing no mount with the driver, ``test_cluster_standalone``'s
    fixture) reads the local run's raw rows from HDFS and commits every core table there, equal
    row for row to the local in-process build's."""
    from test_cluster_standalone import KAUDIT, REPO, copy_raw
    from test_cluster_standalone import RUN as CLUSTER_RUN

    from pipelines.warehouse.tables import SCHEMAS
    from testkit.hdfs import MiniHdfs

    with MiniHdfs(tmp_path / "hdfs").start() as hdfs:
        for var, value in hdfs.env().items():
            monkeypatch.setenv(var, value)
        location, local, catalog = hdfs.uri("kaudit"), tmp_path / "local", str(tmp_path / "catalog.db")
        wh = Warehouse(local, location=location, catalog=catalog)
        assert copy_raw(local_run, RUN, wh) > 0
        done = subprocess.run(
            [str(KAUDIT), "--warehouse", location, "--warehouse-local", str(local),
             "--catalog", catalog, "--run-id", CLUSTER_RUN, "--spark-master", standalone["url"], "build", "--skip-dbt"],
            cwd=REPO, capture_output=True, text=True, timeout=1200, check=False)
        assert done.returncode == 0, done.stderr[-4000:]
        assert f"build_core: done on {standalone['url']}" in done.stderr
        executor_logs = list(standalone["worker_dir"].glob("app-*/*/stderr"))
        assert any("Finished task" in f.read_text(errors="replace") for f in executor_logs), executor_logs
        assert any(n.startswith("run_id=") for n in hdfs.list("kaudit/core/assignment_audit/data"))
        compared = {}
        for table in sorted(t for t in SCHEMAS if t.startswith("core/")):
            want = local_run.read_arrow(table, RUN)
            assert _rows(wh.read_arrow(table, CLUSTER_RUN)) == _rows(want), table
            compared[table] = want.num_rows
    assert compared["core/assignment_audit"] == len(MANIFEST["assignment_audit"])
    print(f"\n{len(compared)} core tables, {sum(compared.values())} rows equal row for row (cluster build on HDFS)")
