"""``kaudit run --config`` executes the plan's extract units on the demo cluster (no Spark)."""

from __future__ import annotations

import textwrap

import pytest

from pipelines.cli import main
from pipelines.warehouse.reading import read_arrow
from pipelines.warehouse.warehouse import Warehouse


def test_run_extract_units_of_config(tmp_path, capsys):
    from pipelines.demo import write_cluster

    demo = write_cluster(tmp_path / "demo")
    config = tmp_path / "audit.yaml"
    config.write_text(
        textwrap.dedent(
            f"""
            warehouse: wh
            run_id: from-config
            steps: [extract]
            sources:
              zookeeper: [{{data_dir: {demo / "zookeeper"}}}]
              kafka: {{log_dirs: [{demo / "kafka-logs"}], workers: 1}}
            """
        )
    )
    with pytest.raises(SystemExit) as done:
        main(["run", "--config", str(config)])
    assert done.value.code == 0
    err = capsys.readouterr().err
    assert "run from-config: extract:zookeeper[0], extract:offsets, extract:log-end" in err
    wh = Warehouse(tmp_path / "wh")
    for table in ("raw/znodes", "raw/offset_commits", "raw/group_metadata", "raw/log_end_offsets"):
        assert wh.row_count(table, "from-config") > 0, table
    assert not wh.exists("core/assignment_audit", "from-config")  # only the steps the config names


def test_the_shipped_example_runs_on_the_demo_cluster(tmp_path, capsys, monkeypatch):
    """examples/audit.yaml as shipped (no variable set but where the demo's files are)."""
    from pathlib import Path

    from pipelines.demo import write_cluster

    example = Path(__file__).resolve().parents[3] / "examples" / "audit.yaml"
    demo = write_cluster(tmp_path / "demo")
    monkeypatch.setenv("KAUDIT_DEMO", str(demo))
    monkeypatch.delenv("ZK_AUDIT_PASSWORD", raising=False)
    with pytest.raises(SystemExit) as done:
        main(["run", "--config", str(example), "--only", "extract", "--warehouse", str(tmp_path / "wh")])
    err = capsys.readouterr().err
    assert done.value.code == 0, err
    first = err.splitlines()[0]
    assert first.startswith("run ") and first.endswith("(new): extract:zookeeper[0], extract:offsets, extract:log-end")
    run_id = first.split()[1]
    for table in ("raw/znodes", "raw/offset_commits", "raw/log_end_offsets"):
        assert Warehouse(tmp_path / "wh").row_count(table, run_id) > 0, table


def test_a_kraft_source_is_an_extract_unit(tmp_path, capsys):
    """sources.kraft: a metadata log (written with the independent test encoder) replayed to an
    offset by `kaudit run`, as `extract kraft --at-offset` does."""
    from testkit import kraft as B

    d = tmp_path / "metadata" / "__cluster_metadata-0"
    log = B.Log()
    log.append(B.register_broker(1), B.register_broker(2))
    stop = log.append(B.unregister_broker(2))
    log.append(B.register_broker(3))
    log.write(d / B.segment_name(0))
    config = tmp_path / "audit.yaml"
    config.write_text(
        f"warehouse: wh\nrun_id: k1\nsteps: [extract]\nsources: {{kraft: {{paths: [metadata], at_offset: {stop}}}}}\n"
    )
    with pytest.raises(SystemExit) as done:
        main(["run", "--config", str(config)])
    assert done.value.code == 0, capsys.readouterr().err
    assert "run k1: extract:kraft" in capsys.readouterr().err
    brokers = read_arrow(Warehouse(tmp_path / "wh"), "raw/kraft_brokers", "k1")
    assert sorted(brokers["broker_id"].to_pylist()) == [1]
