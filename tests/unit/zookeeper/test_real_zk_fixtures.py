"""Real bytes, no server: data dirs a real ZooKeeper release wrote
(``tests/integration/test_real_zk_releases.py`` with ``KAUDIT_ZK_FIXTURES``: several logs and
fuzzy snapshots, containers, TTL and sequential nodes, a multi, ACLs, closed sessions), kept in
``tests/fixtures/zk-real/<release>/`` beside the server's own answers (``oracle.json``: every
znode as a client read it before the server stopped, and the coordination changes after the
oldest snapshot as the script made them), decoded by ``extract zk-snapshot``."""

from __future__ import annotations

import datetime as dt
import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from pipelines.context import RunContext
from pipelines.warehouse.reading import read_arrow
from pipelines.warehouse.warehouse import Warehouse
from pipelines.zookeeper.extract import extract_snapshot

ROOT = Path(__file__).resolve().parents[2] / "fixtures" / "zk-real"
RELEASES = sorted(p.parent.name for p in ROOT.glob("*/oracle.json") if "changes" in json.loads(p.read_text()))


def _ts(ms: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC)


@pytest.mark.parametrize("release", RELEASES)
def test_release_data_dir_decodes_to_the_servers_answers(release, tmp_path):
    oracle = json.loads((ROOT / release / "oracle.json").read_text())
    wh = Warehouse(tmp_path / "wh")
    extract_snapshot(RunContext(wh, "r", console=Console(file=io.StringIO())), path=ROOT / release / "data")

    def read(table):
        return read_arrow(wh, table, "r", with_run_id=False).to_pylist()

    rows = {r["path"]: r for r in read("raw/znodes")}
    assert set(rows) == set(oracle["tree"])
    for path, n in oracle["tree"].items():
        r = rows[path]
        assert (r["data"], r["czxid"], r["mzxid"], r["pzxid"], r["ctime"], r["mtime"], r["version"], r["cversion"],
                r["aversion"], r["ephemeral_owner"], r["data_length"], r["num_children"]) == (
            None if n["data"] is None else bytes.fromhex(n["data"]), n["czxid"], n["mzxid"], n["pzxid"],
            _ts(n["ctime"]), _ts(n["mtime"]), n["version"], n["cversion"], n["aversion"], n["ephemeralOwner"],
            n["dataLength"], n["numChildren"]), path
    changes = [r for r in read("raw/znode_changes") if r["op"] != "snapshot"]
    assert sorted([r["zxid"], r["op"], r["path"], None if r["value"] is None else r["value"].hex(), r["session"]]
                  for r in changes) == oracle["changes"]
    assert read("raw/quarantine") == []
