"""Real bytes, no server: the files a ZooKeeper-era cluster wrote (ZooKeeper 3.4.14 and Kafka
1.1.1 with its old high-level consumer, ``testkit.cluster.kafka_zk_scenario``; message format
0.9.0: records without timestamps, group metadata value v0, offset commit value v1), kept under
``tests/fixtures/zk-real/`` and ``tests/fixtures/kafka-real/`` with the cluster's own answers
(``oracle.json``), decoded by the extractors and compared with those answers."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from pipelines.context import RunContext
from pipelines.kafka.extract import extract_offsets
from pipelines.warehouse.reading import read_arrow
from pipelines.warehouse.warehouse import Warehouse
from pipelines.zookeeper.extract import extract_snapshot

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
CASES = sorted(p.name.split("-", 1)[1] for p in (FIXTURES / "kafka-real").glob("1.1.1-*"))


def _read(wh: Warehouse, table: str) -> list[dict]:
    return read_arrow(wh, table, "r", with_run_id=False).to_pylist()


@pytest.fixture(scope="module", params=CASES)
def extracted(request, tmp_path_factory):
    fmt = request.param
    zk, kafka = FIXTURES / "zk-real" / f"3.4.14-{fmt}", FIXTURES / "kafka-real" / f"1.1.1-{fmt}"
    wh = Warehouse(tmp_path_factory.mktemp(f"real-{fmt}") / "wh")
    ctx = RunContext(wh, "r", console=Console(file=io.StringIO()))
    extract_snapshot(ctx, path=zk / "data")
    extract_offsets(ctx, [kafka], workers=1)
    return fmt, json.loads((kafka / "oracle.json").read_text()), wh


def test_consumer_registry_as_zookeeper_served_it(extracted):
    _, oracle, wh = extracted
    rows = {r["path"]: r["data"] for r in _read(wh, "raw/znodes") if r["path"].startswith("/consumers")}
    assert rows == {p: None if v is None else v.encode() for p, v in oracle["tree"].items()}
    assert _read(wh, "raw/quarantine") == []


def test_commits_as_the_broker_answers_offset_fetch(extracted):
    fmt, oracle, wh = extracted
    commits = sorted(_read(wh, "raw/offset_commits"), key=lambda r: (r["offsets_partition"], r["log_offset"]))
    last = {f"{r['group_id']}/{r['topic']}/{r['partition']}": r["committed_offset"] for r in commits}
    assert last == oracle["kafka_committed"]
    # offset commit value v1 (commit and expire timestamps) in every format 1.1 writes for them
    assert {r["value_version"] for r in commits} == {1}
    assert all(r["commit_timestamp"] is not None for r in commits)


def test_group_metadata_generations(extracted):
    fmt, oracle, wh = extracted
    meta = sorted((r for r in _read(wh, "raw/group_metadata") if r["group_id"] == "py-range"),
                  key=lambda r: r["log_offset"])
    assert oracle["groups"]["py-range"]["state"] == "Empty"
    # the member's generation (range, its leader), then Empty when it left
    assert [(r["protocol"], r["leader"]) for r in meta[-2:]] == [("range", oracle["py_member"]), (None, None)]
    assert meta[-1]["generation"] == meta[-2]["generation"] + 1
    # value v0 (0.9.0's format) has no state timestamp
    assert {r["value_version"] for r in meta} == ({0} if fmt == "v0" else {1})
    if fmt == "v0":
        assert {r["state_timestamp"] for r in meta} == {None}
