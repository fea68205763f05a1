"""``kaudit run --config`` executes the plan's extract units on the demo cluster (no Spark)."""

from __future__ import annotations

import textwrap

import pyarrow.parquet as pq
import pytest

from pipelines.cli import main


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
    wh = tmp_path / "wh"
    for table in ("raw/znodes", "raw/offset_commits", "raw/group_metadata", "raw/log_end_offsets"):
        part = wh / table / "run_id=from-config"
        rows = sum(pq.ParquetFile(f).metadata.num_rows for f in part.glob("*.parquet"))
        assert rows > 0, table
    assert not (wh / "core").exists()  # only the steps the config names
