"""``kaudit extract zk-snapshot`` on data dirs that real ZooKeeper releases wrote (3.4 to 3.9,
run from their Maven jars by :mod:`testkit.cluster.zookeeper`), compared with ZooKeeper's own
answers:

- the tree: every znode read through the server with kazoo just before it stops (path, data,
  every stat field), against ``raw/znodes``;
- the changes: what the script did (the zxid and mtime the server returned for each write,
  the ephemerals a closed session took with it), and the release's own txn log reader
  (``LogFormatter`` up to 3.6, ``TxnLogToolkit`` after) for each create, setData and delete,
  against ``raw/znode_changes``.

The history (``testkit.zk_history.play``: consumers joining and leaving, owners moved, offsets
written) runs with a small ``snapCount``, so the data dir holds several logs and fuzzy
snapshots; beside it the script writes what the coordination paths do not use (sequential,
container and TTL nodes, a multi, null data, an ACL, a deleted subtree). One server is
stopped clean, the next with ``kill -9``. The default suite runs the oldest and the newest
release; ``-m matrix`` all of them. With ``KAUDIT_ZK_FIXTURES=DIR`` each release's data dir and the
answers it matched are kept in ``DIR/<release>/`` (``tests/fixtures/zk-real/``).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest
from kazoo.security import OPEN_ACL_UNSAFE, make_digest_acl

from pipelines.warehouse.reading import read_arrow
from pipelines.warehouse.warehouse import Warehouse
from testkit.cluster.versions import ZOOKEEPER
from testkit.cluster.zookeeper import run_class, start_zookeeper
from testkit.zk_history import Change, Script, play
from testkit.zk_requests import CreateContainer, CreateTTL, send

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
KAUDIT = REPO / ".venv" / "bin" / "kaudit"
RUN = "zk-real"
DEFAULT = {ZOOKEEPER[0], ZOOKEEPER[-1]}
UTC = dt.UTC


def _releases():
    for i, release in enumerate(ZOOKEEPER):
        stop = "kill -9" if i % 2 else "clean"
        marks = [] if release in DEFAULT else [pytest.mark.matrix]
        yield pytest.param(release, stop, id=f"{release}-{stop.replace(' ', '')}", marks=marks)


class Script34(Script):
    """:class:`Script` without CREATE2 (3.5+): the new node's stat is read after its create,
    which nothing else touches in between."""

    def create(self, name: str, path: str, value: bytes, ephemeral: bool = False) -> None:
        zk = self.client(name)
        zk.ensure_path(path.rsplit("/", 1)[0])
        zk.create(path, value, ephemeral=ephemeral)
        stat = zk.exists(path)
        self.changes.append(Change(stat.czxid, stat.ctime, self.session(name), "create", path, value))
        if ephemeral:
            self.ephemerals[name].append(path)


def _extras(s: Script, release: str) -> None:
    """Nodes outside the coordination paths, of every kind the release has."""
    zk = s.client("admin")
    zk.add_auth("digest", "kaudit:pw")  # reads the ACL'ed node back
    zk.create("/app/seq-", b"s", makepath=True, sequence=True)
    zk.create("/app/seq-", None, sequence=True)  # null data
    zk.create("/app/big", b"\x00\xff" * 4000)
    zk.create("/app/secret", b"x", acl=[make_digest_acl("kaudit", "pw", all=True)])
    zk.create("/app/doomed/a/b", b"1", makepath=True)
    zk.delete("/app/doomed", recursive=True)
    t = zk.transaction()
    t.create("/app/multi", b"m")
    t.set_data("/app/big", b"smaller")
    t.check("/app", 0)
    t.commit()
    if release >= "3.5":
        send(zk, CreateContainer("/app/container", b"", OPEN_ACL_UNSAFE, 4))
        zk.create("/app/container/child", b"c")
        send(zk, CreateTTL("/app/ttl", b"t", OPEN_ACL_UNSAFE, 5, 3_600_000))  # an hour: not reaped here
    eph = s.client("eph-owner")
    eph.create("/app/ephemeral", b"e", ephemeral=True)


def _tree(zk) -> dict[str, tuple]:
    """path -> (data, stat) of every znode but the server's /zookeeper subtree, as the server
    answers a client."""
    out, todo = {}, ["/"]
    while todo:
        path = todo.pop()
        data, stat = zk.get(path)
        out[path] = (data, stat)
        for child in zk.get_children(path):
            full = f"{path.rstrip('/')}/{child}"
            if full != "/zookeeper":
                todo.append(full)
    return out


_TXN = re.compile(r"zxid 0x([0-9a-f]+) (\w+) '?(/[^,\s]*)?")


def _txns(release: str, data_dir: Path) -> dict[int, tuple[str, str | None]]:
    """zxid -> (txn type, path of a create/setData/delete) from the release's own log reader."""
    reader = ("org.apache.zookeeper.server.LogFormatter" if release < "3.8"
              else "org.apache.zookeeper.server.persistence.TxnLogToolkit")
    args = () if release < "3.8" else ("-d",)
    out = {}
    for log in sorted((data_dir / "version-2").glob("log.*")):
        for m in _TXN.finditer(run_class(release, reader, *args, str(log))):
            out[int(m.group(1), 16)] = (m.group(2), m.group(3))
    return out


def _kind(path: str) -> str | None:
    parts = path.split("/")
    if parts[1] == "brokers" and len(parts) == 4:
        return {"ids": "broker_ids", "topics": "broker_topics"}.get(parts[2])
    if parts[1] == "consumers" and len(parts) == 5 and parts[3] == "ids":
        return "consumer_ids"
    if parts[1] == "consumers" and len(parts) == 6:
        return {"owners": "consumer_owners", "offsets": "consumer_offsets"}.get(parts[3])
    return None


def _ts(ms: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(ms / 1000, UTC)


def _write_fixture(out: Path, data_dir: Path, tree: dict, changes: list[Change]) -> None:
    """The data dir and the answers it was compared with: the tree the server served and the
    script's changes (``tests/unit/zookeeper/test_real_zk_fixtures.py``)."""
    if out.exists():
        shutil.rmtree(out)
    shutil.copytree(data_dir, out / "data")
    fields = ("czxid", "mzxid", "pzxid", "ctime", "mtime", "version", "cversion", "aversion", "ephemeralOwner",
              "dataLength", "numChildren")
    oracle = {
        "tree": {p: {"data": None if d is None else d.hex(), **{f: getattr(st, f) for f in fields}}
                 for p, (d, st) in sorted(tree.items())},
        "changes": sorted([c.zxid, c.op, c.path, None if c.value is None else c.value.hex(), c.session]
                          for c in changes),
    }
    (out / "oracle.json").write_text(json.dumps(oracle, indent=1) + "\n")


@pytest.mark.parametrize(("release", "stop"), _releases())
def test_release_data_dir_matches_the_server(release, stop, tmp_path):
    server = start_zookeeper(release, tmp_path / "zk", snap_count=10)
    script = (Script34 if release < "3.5" else Script)(server.hosts)
    try:
        play(script)
        _extras(script, release)
        tree = _tree(script.client("admin"))
        server.stop(kill=stop == "kill -9")
    finally:
        server.stop(kill=True)
        for zk in script.clients.values():  # their server is gone: no close to send
            zk.stop()
            zk.close()
    files = sorted(p.name for p in (server.data_dir / "version-2").iterdir())
    assert sum(f.startswith("log.") for f in files) >= 3 and sum(f.startswith("snapshot.") for f in files) >= 2, files

    wh = tmp_path / "warehouse"
    proc = subprocess.run([str(KAUDIT), "--warehouse", str(wh), "--run-id", RUN, "extract", "zk-snapshot",
                           str(server.data_dir)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr

    def read(table):
        return read_arrow(Warehouse(wh), table, RUN, with_run_id=False).to_pylist()

    # the tree, node by node and field by field
    rows = {r["path"]: r for r in read("raw/znodes")}
    assert set(rows) == set(tree)
    for path, (data, st) in tree.items():
        r = rows[path]
        want = (data, st.czxid, st.mzxid, st.pzxid, _ts(st.ctime), _ts(st.mtime), st.version, st.cversion,
                st.aversion, st.ephemeralOwner, st.dataLength, st.numChildren)
        got = (r["data"], r["czxid"], r["mzxid"], r["pzxid"], r["ctime"], r["mtime"], r["version"], r["cversion"],
               r["aversion"], r["ephemeral_owner"], r["data_length"], r["num_children"])
        assert got == want, path
    assert {r["source"] for r in rows.values()} == {"snapshot"}
    assert read("raw/quarantine") == []

    # the changes: the history starts at the oldest snapshot (its name is the last zxid in it;
    # 3.5+ write snapshot.0 at their first start, 3.4 its first only after snapCount txns) ...
    base = min(int(f.split(".")[1], 16) for f in files if f.startswith("snapshot."))
    history = read("raw/znode_changes")
    changes = [r for r in history if r["op"] != "snapshot"]
    got = Counter((r["zxid"], r["op"], r["path"], r["value"], r["session"]) for r in changes)
    want = Counter((c.zxid, c.op, c.path, c.value, c.session) for c in script.changes if c.zxid > base)
    assert got == want
    # ... from the coordination nodes alive in that snapshot, each as the script left it then
    alive = {}
    for c in sorted(script.changes, key=lambda c: c.zxid):
        if c.zxid <= base:
            if c.op == "delete":
                alive.pop(c.path, None)
            else:
                alive[c.path] = c.value
    assert {r["path"]: r["value"] for r in history if r["op"] == "snapshot"} == alive
    for r in changes:
        assert r["kind"] == _kind(r["path"])
    mtimes = {(c.zxid, c.path): c.mtime for c in script.changes if c.mtime is not None}
    for r in changes:
        if (r["zxid"], r["path"]) in mtimes:
            assert r["time"] == _ts(mtimes[(r["zxid"], r["path"])])
    # ... and ZooKeeper's own reading of its logs: every create/setData/delete of a coordination
    # path is a row, and every row is a txn of the logs of the right type
    txns = _txns(release, server.data_dir)
    ops = {"create": "create", "create2": "create", "createContainer": "create", "createTTL": "create",
           "setData": "set", "delete": "delete"}
    logged = {(z, ops[t], p) for z, (t, p) in txns.items() if z > base and t in ops and p and _kind(p)}
    assert logged and logged == {(r["zxid"], r["op"], r["path"]) for r in changes if txns[r["zxid"]][0] in ops}
    for r in changes:
        assert txns[r["zxid"]][0] in (*ops, "multi", "closeSession"), r
    if os.environ.get("KAUDIT_ZK_FIXTURES"):  # keep this run as a regression fixture
        _write_fixture(Path(os.environ["KAUDIT_ZK_FIXTURES"]) / release, server.data_dir, tree,
                       [c for c in script.changes if c.zxid > base])
    print(f"ZooKeeper {release} ({stop}): {len(tree)} znodes x 12 fields, {len(changes)} changes "
          f"({len(logged)} also in the release's log reader), {len(alive)} snapshot rows compared")
