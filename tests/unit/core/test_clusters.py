"""Runs with several clusters: ``--cluster ALIAS`` puts an extract's tables under
``<warehouse>/clusters/ALIAS/`` with the same run id; without it they stay where single-cluster
runs always had them."""

from __future__ import annotations

import pytest
from kafka.protocol.old.types import Int32, Int64, Schema, String

from pipelines.clusters import DEFAULT_ALIAS, aliases, check_alias, cluster_warehouse
from pipelines.demo import REAL
from pipelines.errors import UsageError
from pipelines.warehouse.reading import read_arrow
from testkit.cluster.kraft_oracle import kaudit
from testkit.segments import batch, write_segment

SYNC_KEY = Schema(("topic", String("utf-8")), ("partition", Int32))
SYNC_VALUE = Schema(("upstreamOffset", Int64), ("offset", Int64))


def test_aliases_and_their_warehouses(warehouse):
    assert cluster_warehouse(warehouse, None) is warehouse
    assert cluster_warehouse(warehouse, DEFAULT_ALIAS) is warehouse
    assert cluster_warehouse(warehouse, "east").root == warehouse.root / "clusters" / "east"
    for bad in ("a/b", "", "..", "a.b"):
        with pytest.raises(UsageError, match="cluster alias"):
            check_alias(bad)


def test_extract_with_cluster_writes_under_its_alias(tmp_path):
    logs = tmp_path / "logs"
    write_segment(logs / "mm2-offset-syncs.east.internal-0" / "00000000000000000000.log",
                  [batch([(SYNC_KEY.encode(["t", 0]), SYNC_VALUE.encode([5, 5]))], base_offset=0, timestamp_ms=1)])
    wh = tmp_path / "wh"
    code, out = kaudit("--warehouse", str(wh), "--run-id", "r", "--cluster", "west", "extract", "mm2", str(logs))
    assert code == 0, out
    code, out = kaudit("--warehouse", str(wh), "--run-id", "r", "extract", "mm2", str(logs))  # the default cluster
    assert code == 0, out
    from pipelines.warehouse.warehouse import Warehouse

    main = Warehouse(wh)
    assert aliases(main, "r", "raw/mm2_offset_syncs") == [DEFAULT_ALIAS, "west"]
    west = read_arrow(cluster_warehouse(main, "west"), "raw/mm2_offset_syncs", "r").to_pylist()
    assert [(r["target_alias"], r["topic"], r["upstream_offset"]) for r in west] == [("east", "t", 5)]
    assert (wh / "clusters" / "west" / "raw" / "mm2_offset_syncs" / "data" / "run_id=r").is_dir()
    code, out = kaudit("--warehouse", str(wh), "--cluster", "no/such", "extract", "mm2", str(logs))
    assert code == 2 and "cluster alias" in out and "Traceback" not in out


def test_on_iceberg_a_cluster_has_its_namespace_in_the_one_catalog(tmp_path):
    from pipelines.warehouse.warehouse import Warehouse

    logs = tmp_path / "logs"
    write_segment(logs / "mm2-offset-syncs.east.internal-0" / "00000000000000000000.log",
                  [batch([(SYNC_KEY.encode(["t", 0]), SYNC_VALUE.encode([7, 3]))], base_offset=0, timestamp_ms=1)])
    wh = tmp_path / "wh"
    for cluster in (["--cluster", "west"], []):
        code, out = kaudit("--warehouse", str(wh), "--run-id", "r", *cluster,
                           "extract", "mm2", str(logs))
        assert code == 0, out
    main = Warehouse(wh)
    assert aliases(main, "r", "raw/mm2_offset_syncs") == [DEFAULT_ALIAS, "west"]
    west = cluster_warehouse(main, "west")
    assert west.catalog_config == main.catalog_config and west.root == wh / "clusters" / "west"
    assert [(r["target_alias"], r["topic"], r["upstream_offset"], r["downstream_offset"])
            for r in read_arrow(west, "raw/mm2_offset_syncs", "r").to_pylist()] == [("east", "t", 7, 3)]
    # one catalog: the cluster's table and its own ledger under clusters.west, the default's as before
    for ident in (("clusters", "west", "raw", "mm2_offset_syncs"), ("clusters", "west", "meta", "commits"),
                  ("raw", "mm2_offset_syncs"), ("meta", "commits")):
        assert main.catalog.table_exists(ident), ident
    assert west.ident("raw/mm2_offset_syncs") == ("clusters", "west", "raw", "mm2_offset_syncs")
    assert west.spark_identifier("raw/mm2_offset_syncs") == "kaudit.clusters.west.raw.mm2_offset_syncs"


FIXTURE = REAL / "mm2-4.3.1"


def test_config_names_clusters_and_runs_their_extracts(tmp_path):
    from pipelines.config import load_config
    from pipelines.runner import plan
    from pipelines.warehouse.reading import row_count
    from pipelines.warehouse.warehouse import Warehouse

    cfg = tmp_path / "audit.yaml"
    cfg.write_text(f"""warehouse: wh
run_id: two
steps: [extract]
clusters:
  source:
    kafka: {{log_dirs: ["{FIXTURE / 'source' / 'logs'}"]}}
    mirror_maker: ["{FIXTURE / 'source' / 'logs'}"]
  target:
    mirror_maker: ["{FIXTURE / 'target' / 'logs'}"]
""")
    assert plan(load_config(cfg)) == ["extract:source:offsets", "extract:source:mm2", "extract:target:mm2"]
    code, out = kaudit("run", "--config", str(cfg))
    assert code == 0, out
    main = Warehouse(tmp_path / "wh")
    rows = {(a, t): row_count(cluster_warehouse(main, a), t, "two") for a in ("source", "target")
            for t in ("raw/mm2_offset_syncs", "raw/mm2_checkpoints", "raw/offset_commits")}
    assert rows == {("source", "raw/mm2_offset_syncs"): 14, ("source", "raw/mm2_checkpoints"): 0,
                    ("source", "raw/offset_commits"): rows[("source", "raw/offset_commits")],
                    ("target", "raw/mm2_offset_syncs"): 0, ("target", "raw/mm2_checkpoints"): 10,
                    ("target", "raw/offset_commits"): None}
    assert rows[("source", "raw/offset_commits")] >= 12  # four groups' commits on three partitions
    assert aliases(main, "two", "raw/offset_commits") == ["source"]
    bad = tmp_path / "bad.yaml"
    bad.write_text("clusters:\n  default:\n    mirror_maker: [x]\n")
    with pytest.raises(UsageError, match="cluster alias"):
        load_config(bad)
