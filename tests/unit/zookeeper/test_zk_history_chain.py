"""Where the history (raw/znode_changes) starts: the oldest snapshot from which the logs reach the
published tree unbroken. Data dirs hand-encoded here (jute, big-endian, as zookeeper.jute and
FileTxnLog/FileSnap write them): the expected rows, cuts and locations are what the test wrote."""

from __future__ import annotations

import io
import struct
import zlib
from pathlib import Path

from rich.console import Console

from pipelines.context import RunContext
from pipelines.warehouse.reading import read_arrow
from pipelines.warehouse.warehouse import Warehouse
from pipelines.zookeeper.extract import extract_snapshot


def jstr(b: bytes | None) -> bytes:
    """A jute buffer/ustring: int length (-1: null), bytes."""
    return struct.pack(">i", -1) if b is None else struct.pack(">i", len(b)) + b


OPEN_ACL = struct.pack(">i", 1) + struct.pack(">i", 31) + jstr(b"world") + jstr(b"anyone")


def txn(zxid: int, kind: str, path: bytes, data: bytes = b"v", session: int = 0x77) -> bytes:
    """TxnHeader (clientId, cxid, zxid, time = 1000 s + zxid, type) + a create or setData body."""
    if kind == "create":
        type_, body = 1, jstr(path) + jstr(data) + OPEN_ACL + b"\x00" + struct.pack(">i", -1)
    else:
        type_, body = 5, jstr(path) + jstr(data) + struct.pack(">i", zxid)
    return struct.pack(">qiqqi", session, 0, zxid, 1_000_000 + zxid, type_) + body


def log_file(txns: list[bytes]) -> tuple[bytes, list[int]]:
    """A txn log (header, entries: Adler32, length, txn, 'B', zero padding) and each entry's offset."""
    out, at = bytearray(b"ZKLG" + struct.pack(">iq", 2, 0)), []
    for t in txns:
        at.append(len(out))
        out += struct.pack(">qi", zlib.adler32(t), len(t)) + t + b"B"
    return bytes(out) + bytes(64), at


def snapshot_file(nodes: list[tuple], data: dict[bytes, bytes] | None = None) -> bytes:
    """A snapshot of (path, zxid[, cversion, pzxid]) nodes, parents first: no sessions, ACL 1 =
    world:anyone, each node created and last written at its zxid, at the time its create txn
    has, with the data the txns write ("v" under /consumers, or ``data[path]``); cversion 0
    and pzxid its zxid unless given; the "/" terminator and the Adler32 seal."""
    out = bytearray(b"ZKSN" + struct.pack(">iq", 2, 0))
    out += struct.pack(">i", 0) + struct.pack(">i", 1) + struct.pack(">q", 1) + OPEN_ACL
    for path, z, *children in nodes:
        cversion, pzxid = children or (0, z)
        out += jstr(path) + jstr((data or {}).get(path, b"v" if path.startswith(b"/consumers") else b""))
        out += struct.pack(">qqqqqiiiqq", 1, z, z, 1_000_000 + z, 1_000_000 + z, 0, cversion, 0, 0, pzxid)
    out += jstr(b"/")
    return bytes(out) + struct.pack(">q", zlib.adler32(bytes(out))) + jstr(b"/")


BASE = [(b"", 0), (b"/zookeeper", 0), (b"/zookeeper/quota", 0)]
PARENTS = [b"/consumers", b"/consumers/g", b"/consumers/g/ids"]


def extract(d: Path, tmp_path: Path, run: str = "r") -> tuple[dict, list[dict], list[dict]]:
    wh = Warehouse(tmp_path / "wh")
    meta = extract_snapshot(RunContext(wh, run, console=Console(file=io.StringIO())), path=d)
    return meta, read_arrow(wh, "raw/znode_changes", run).to_pylist(), read_arrow(wh, "raw/quarantine", run).to_pylist()


def test_a_gap_cuts_the_history_which_starts_at_the_snapshot_after_it(tmp_path):
    d = tmp_path / "gap" / "version-2"
    d.mkdir(parents=True)
    (d / "snapshot.0").write_bytes(snapshot_file(BASE))
    first = [txn(z, "create", p) for z, p in enumerate([*PARENTS, b"/consumers/g/ids/a"], 1)]
    (d / "log.1").write_bytes(log_file(first)[0])  # zxids 1-4; 5 and 6 are in no log
    (d / "snapshot.6").write_bytes(snapshot_file(
        BASE + [(p, z) for z, p in enumerate([*PARENTS, b"/consumers/g/ids/a", b"/consumers/g/ids/b"], 1)]))
    later, at = log_file([txn(7, "create", b"/consumers/g/ids/c"), txn(8, "set", b"/consumers/g/ids/a", b"w")])
    (d / "log.7").write_bytes(later)
    meta, changes, q = extract(d.parent, tmp_path)
    assert meta["zxid"] == 8 and meta["snapshot"] == str(d / "snapshot.6")
    h = meta["history"]
    assert (h["snapshot"], h["start_zxid"], h["end_zxid"], h["txns"], h["snapshots"]) == (str(d / "snapshot.6"), 6, 8,
                                                                                          2, 1)
    assert (h["first_txn_ms"], h["last_txn_ms"]) == (1_000_007, 1_000_008)
    # the snapshot's consumer ids, then the two txns after it; nothing from log.1
    assert [(r["op"], r["path"], r["zxid"]) for r in changes] == [
        ("snapshot", "/consumers/g/ids/a", 6), ("snapshot", "/consumers/g/ids/b", 6),
        ("create", "/consumers/g/ids/c", 7), ("set", "/consumers/g/ids/a", 8)]
    # the gap: where the chain from snapshot.0 broke, and where the history starts instead
    assert [r["location"] for r in q] == [f"{d / 'log.7'}:{at[0]}"]
    assert "zxid gap: expected 0x5, found 0x7" in q[0]["reason"] and "starts after it, at snapshot.6" in q[0]["reason"]
    assert h["cuts"] == [f"{q[0]['location']}: {q[0]['reason']}"]


def test_an_unbroken_chain_starts_at_the_oldest_snapshot(tmp_path):
    d = tmp_path / "whole" / "version-2"
    d.mkdir(parents=True)
    (d / "snapshot.0").write_bytes(snapshot_file(BASE))
    paths = [*PARENTS, b"/consumers/g/ids/a", b"/consumers/g/ids/b"]
    (d / "log.1").write_bytes(log_file([txn(z, "create", p) for z, p in enumerate(paths, 1)])[0])
    later = [txn(6, "create", b"/consumers/g/ids/c"), txn(7, "set", b"/consumers/g/ids/a", b"w")]
    (d / "log.6").write_bytes(log_file(later)[0])
    # a snapshot at 5 that is not the logs' tree at 5 (b holds other data): the replay from
    # snapshot.0 leads to another tree than the one published from it, so it starts at 5
    (d / "snapshot.5").write_bytes(snapshot_file(BASE + [(p, z) for z, p in enumerate(paths, 1)],
                                                 {b"/consumers/g/ids/b": b"x"}))
    meta, changes, q = extract(d.parent, tmp_path, "bad")
    assert meta["history"]["snapshot"] == str(d / "snapshot.5")
    assert len(q) == 1 and q[0]["location"] == str(d / "snapshot.0") and "another tree" in q[0]["reason"]

    # the same with snapshot.5 as ZooKeeper writes the tree at 5 (each parent's cversion and
    # pzxid as its children's creates left them): the history starts at snapshot.0
    (d / "snapshot.5").write_bytes(snapshot_file([(b"", 0, 1, 1), *BASE[1:], (b"/consumers", 1, 1, 2),
                                                  (b"/consumers/g", 2, 1, 3), (b"/consumers/g/ids", 3, 2, 5),
                                                  (b"/consumers/g/ids/a", 4), (b"/consumers/g/ids/b", 5)]))
    meta, changes, q = extract(d.parent, tmp_path, "good")
    h = meta["history"]
    assert q == []
    assert (h["snapshot"], h["start_zxid"], h["txns"], h["snapshots"], h["cuts"]) == (str(d / "snapshot.0"), 0, 7, 2,
                                                                                      [])
    assert [(r["op"], r["path"], r["zxid"]) for r in changes] == [
        ("create", "/consumers/g/ids/a", 4), ("create", "/consumers/g/ids/b", 5),
        ("create", "/consumers/g/ids/c", 6), ("set", "/consumers/g/ids/a", 7)]


def test_a_path_that_is_not_utf8_is_quarantined_at_its_txn(tmp_path):
    d = tmp_path / "bad-path" / "version-2"
    d.mkdir(parents=True)
    bad = b"/consumers/g/ids/caf\xff"
    txns = [txn(z, "create", p) for z, p in enumerate([*PARENTS, bad, b"/consumers/g/ids/ok"], 1)]
    raw, at = log_file(txns)
    (d / "log.1").write_bytes(raw)
    meta, changes, q = extract(d.parent, tmp_path)
    assert [r["path"] for r in changes] == ["/consumers/g/ids/ok"]
    where = f"{d / 'log.1'}:{at[3]}"  # the entry of the create, as the test wrote it
    # left out of raw/znodes and of raw/znode_changes, both at the create's file:byte
    assert sorted((r["location"], r["raw"]) for r in q) == [(where, bad), (where, bad)]
    assert {r["reason"].split(";")[1].strip() for r in q} == {"the node is left out of raw/znodes",
                                                              "its create is left out of raw/znode_changes"}
    assert meta["nodes"] == 5  # /, /consumers, /consumers/g, /consumers/g/ids and .../ok (/zookeeper left out)


def test_a_target_zxid_ends_the_history_there(tmp_path):
    d = tmp_path / "target" / "version-2"
    d.mkdir(parents=True)
    (d / "snapshot.0").write_bytes(snapshot_file(BASE))
    paths = [*PARENTS, b"/consumers/g/ids/a", b"/consumers/g/ids/b", b"/consumers/g/ids/c"]
    (d / "log.1").write_bytes(log_file([txn(z, "create", p) for z, p in enumerate(paths, 1)])[0])
    (d / "snapshot.6").write_bytes(snapshot_file(BASE))  # past the target: neither the tree's start nor the history's
    wh = Warehouse(tmp_path / "wh")
    meta = extract_snapshot(RunContext(wh, "t", console=Console(file=io.StringIO())), path=d.parent, at_zxid=5)
    changes = read_arrow(wh, "raw/znode_changes", "t").to_pylist()
    assert meta["zxid"] == 5 and meta["snapshot"] == str(d / "snapshot.0")
    assert (meta["history"]["snapshot"], meta["history"]["end_zxid"], meta["history"]["txns"]) == (
        str(d / "snapshot.0"), 5, 5)
    assert [(r["op"], r["path"], r["zxid"]) for r in changes] == [("create", "/consumers/g/ids/a", 4),
                                                                  ("create", "/consumers/g/ids/b", 5)]


def test_a_fuzzy_snapshot_holds_the_state_at_its_name_and_the_txns_after_it_are_changes(tmp_path):
    """A 3.4-style snapshot (no digest) named at zxid 5 and written while txns 6-8 went on: it
    already holds c (created at 6) and a's write at 7, and misses b (deleted at 8 before the
    writer reached it). Every txn after its name is a change, as the log has it; c is not in
    the snapshot's rows, as it did not exist at zxid 5."""
    d = tmp_path / "fuzzy" / "version-2"
    d.mkdir(parents=True)
    ids = b"/consumers/g/ids"
    (d / "snapshot.5").write_bytes(snapshot_file(
        [*BASE, (b"/consumers", 1), (b"/consumers/g", 2), (ids, 3, 3, 8), (ids + b"/a", 4), (ids + b"/c", 6)],
        {ids + b"/a": b"w"}))
    delete_b = struct.pack(">qiqqi", 0x77, 0, 8, 1_000_008, 2) + jstr(ids + b"/b")
    (d / "log.6").write_bytes(log_file([txn(6, "create", ids + b"/c"), txn(7, "set", ids + b"/a", b"w"), delete_b,
                                        txn(9, "create", ids + b"/d")])[0])
    meta, changes, q = extract(d.parent, tmp_path)
    assert q == [] and meta["zxid"] == 9
    assert (meta["history"]["start_zxid"], meta["history"]["txns"]) == (5, 4)
    assert [(r["op"], r["path"], r["zxid"], r["value"]) for r in changes] == [
        ("snapshot", "/consumers/g/ids/a", 5, b"w"),
        ("create", "/consumers/g/ids/c", 6, b"v"), ("set", "/consumers/g/ids/a", 7, b"w"),
        ("delete", "/consumers/g/ids/b", 8, None), ("create", "/consumers/g/ids/d", 9, b"v")]
