"""Transaction logs: real files (valid, partial tail, CRC corruption), hand-encoded txns of
every type, and the replay semantics of DataTree checked against real snapshots: replaying
the real logs from an older real snapshot reproduces the newer real snapshot exactly."""

from __future__ import annotations

import io
import shutil
import struct
import zlib

import numpy as np
import pytest
from rich.console import Console

from pipelines.context import RunContext
from pipelines.errors import InputError
from pipelines.warehouse.reading import read_arrow
from pipelines.zookeeper.errors import ZkFormatError
from pipelines.zookeeper.extract import extract_snapshot, read_offline
from pipelines.zookeeper.txnlog import Damage, LogReader

FIX = "zookeeper/invalidsnap/version-2"


def _str(s):
    b = s.encode()
    return struct.pack(">i", len(b)) + b


def _buf(b):
    return struct.pack(">i", -1) if b is None else struct.pack(">i", len(b)) + b


ACL = struct.pack(">i", 1) + struct.pack(">i", 31) + _str("world") + _str("anyone")


def _txn(zxid, type_, body, session=0x42, time=1000, digest=None):
    t = struct.pack(">qiqqi", session, 1, zxid, time + zxid, type_) + body
    if digest is not None:
        t += struct.pack(">iq", 2, digest)
    return t


def _log(txns, pad=True, tail=b""):
    b = b"ZKLG" + struct.pack(">iq", 2, 0)
    for t in txns:
        b += struct.pack(">qi", zlib.adler32(t), len(t)) + t + b"B"
    return b + tail + (b"\0" * 64 if pad else b"")


def create(path, data=b"", eph=False, pcv=-1, type_=1):
    return _str(path) + _buf(data) + ACL + bytes([eph]) + struct.pack(">i", pcv)


def container(path, pcv):
    return _str(path) + _buf(b"") + ACL + struct.pack(">i", pcv)


def ttl(path, pcv, ms):
    return _str(path) + _buf(b"t") + ACL + struct.pack(">iq", pcv, ms)


def multi(*subs):
    return struct.pack(">i", len(subs)) + b"".join(struct.pack(">i", t) + _buf(b) for t, b in subs)


def _ctx(tmp_path, run_id="r1"):
    from pipelines.warehouse.warehouse import Warehouse

    out = io.StringIO()
    return RunContext(Warehouse(tmp_path / "wh"), run_id, console=Console(file=out, width=300)), out


def test_every_txn_type_decodes(tmp_path):
    txns = [
        _txn(1, -10, struct.pack(">i", 30000)),
        _txn(2, 1, create("/a", b"x", pcv=1)),
        _txn(3, 15, create("/a/e", None, eph=True, pcv=1)),
        _txn(4, 19, container("/c", 2)),
        _txn(5, 21, ttl("/t", 3, 60000)),
        _txn(6, 5, _str("/a") + _buf(b"y") + struct.pack(">i", 1)),
        _txn(7, 7, _str("/a") + ACL + struct.pack(">i", 1)),
        _txn(8, 14, multi((1, create("/m", pcv=5)), (13, _str("/a") + struct.pack(">i", 1)))),
        _txn(9, 2, _str("/t")),
        _txn(10, -11, struct.pack(">i", 1) + _str("/a/e")),
        _txn(11, -1, struct.pack(">i", -101)),
        _txn(12, 1, _str("/old") + _buf(b"v0") + ACL + b"\x00"),  # CreateTxnV0: no parentCVersion
    ]
    f = tmp_path / "log.1"
    f.write_bytes(_log(txns))
    r = LogReader(f)
    got = list(r)
    assert [t.op for t in got] == ["createSession", "create", "create2", "createContainer", "createTTL", "setData",
                                   "setACL", "multi", "delete", "closeSession", "error", "create"]
    assert got[1].body == {"path": "/a", "data": b"x", "acl": [(31, "world", "anyone")], "ephemeral": False,
                           "parent_cversion": 1}
    assert got[2].body["data"] is None and got[2].body["ephemeral"] is True
    assert got[4].body["ttl"] == 60000
    assert got[7].body["txns"][1] == (13, "check", {"path": "/a", "version": 1})
    assert got[9].body == {"paths_to_delete": ["/a/e"]}
    assert got[11].body["parent_cversion"] == -1
    assert r.end.kind == "padding"


def test_replay_semantics(tmp_path):
    """Expected values follow DataTree: parent cversion/pzxid on create, pzxid on delete,
    closeSession removes the session's ephemerals, a multi with an error changes nothing."""
    s1, s2 = 0x111, 0x222
    txns = [
        _txn(1, 1, create("/a", b"x")),  # parent cversion -1: root +1
        _txn(2, 1, create("/a/e1", b"", eph=True), session=s1),
        _txn(3, 1, create("/a/e2", b"", eph=True), session=s2),
        _txn(4, 19, container("/c", 2)),
        _txn(5, 21, ttl("/t", 3, 60000)),
        _txn(6, 5, _str("/a") + _buf(b"y") + struct.pack(">i", 1)),
        _txn(7, 14, multi((1, create("/never")), (-1, struct.pack(">i", -110)))),
        _txn(8, 14, multi((1, create("/m", pcv=4)), (5, _str("/m") + _buf(b"mm") + struct.pack(">i", 1)))),
        _txn(9, -11, b"", session=s1),  # pre-3.6 closeSession: no path list
        _txn(10, 2, _str("/t")),
        _txn(11, 1, create("/a/b", None)),
    ]
    d = tmp_path / "data" / "version-2"
    d.mkdir(parents=True)
    (d / "log.1").write_bytes(_log(txns))
    rows, res = read_offline(d.parent)
    assert res.txns_applied == 11 and res.zxid == 11 and res.snapshot is None
    by = {r["path"]: r for r in rows.to_pylist()}
    assert sorted(by) == ["/", "/a", "/a/b", "/a/e2", "/c", "/m"]
    # root: creates /a (cv 1), /c (2), /t (3), /m (4); children zookeeper, a, c, m -> 2*4 - 4
    assert by["/"]["cversion"] == 2 * 4 - 4 and by["/"]["num_children"] == 4 and by["/"]["pzxid"] == 10
    # /a: creates e1, e2, b (cv 3), e1 deleted by closeSession (zxid 9), then b created at 11
    assert by["/a"]["cversion"] == 2 * 3 - 2 and by["/a"]["pzxid"] == 11 and by["/a"]["version"] == 1
    assert by["/a"]["data"] == b"y" and by["/a"]["mzxid"] == 6 and by["/a"]["czxid"] == 1
    assert by["/a/e2"]["ephemeral_owner"] == s2
    assert by["/c"]["ephemeral_owner"] == 0  # container: client sees 0
    assert by["/m"]["data"] == b"mm" and by["/m"]["version"] == 1
    assert by["/a/b"]["data"] is None and by["/a/b"]["data_length"] == 0
    assert rows["ctime"].cast("int64").to_pylist()[rows["path"].to_pylist().index("/a/b")] == 1000 + 11


def test_real_logs_end_kinds_and_log42_crc(real_fixtures):
    d = real_fixtures / FIX
    r = LogReader(d / "log.274")
    assert len(list(r)) == 967 and r.end.kind == "padding"
    r = LogReader(d / "log.42")
    first, damage, third = list(r)  # the first entry is sound, the second is not, the third is
    assert first.op == "closeSession" and third.op == "setData" and third.zxid == first.zxid + 2
    assert isinstance(damage, Damage) and (damage.offset, damage.resume) == (61, 110)
    assert "CRC mismatch" in damage.reason and damage.raw[:8] == bytes.fromhex("00000000ef6a0d2d")
    assert r.end.kind == "eof"


def test_partial_last_txn_stops_there(tmp_path):
    txns = [_txn(1, 1, create("/a", pcv=1)), _txn(2, 1, create("/b", pcv=2))]
    full = _log(txns, pad=False)
    f = tmp_path / "log.1"
    f.write_bytes(full[:-3])
    r = LogReader(f)
    assert [t.zxid for t in r] == [1] and r.end.kind == "partial"
    f.write_bytes(full[:-1])  # no 'B'
    r = LogReader(f)
    assert [t.zxid for t in r] == [1] and r.end.kind == "partial"


def test_replaying_real_logs_reproduces_real_snapshots(real_fixtures, tmp_path):
    d = real_fixtures / FIX

    def datadir(*names):
        t = tmp_path / "-".join(names)
        t.mkdir()
        for n in names:
            shutil.copy(d / n, t)
        return t

    direct, _ = read_offline(d / "snapshot.272")
    replayed, res = read_offline(datadir("snapshot.0", "log.1"), at_zxid=0x272)
    assert res.zxid == 0x272 and res.txns_applied == 0x272
    assert direct.num_rows == 626 and replayed.equals(direct)  # 628 records minus /zookeeper, /zookeeper/quota
    direct, _ = read_offline(d / "snapshot.639")
    replayed, res = read_offline(datadir("snapshot.272", "log.1", "log.274"), at_zxid=0x639)
    dd = tmp_path / "snapshot.272-log.1-log.274"
    assert res.snapshot == str(dd / "snapshot.272")
    assert res.logs == [str(dd / "log.1"), str(dd / "log.274")]  # log.1 ends with 0x273
    assert replayed.equals(direct)


def test_data_dir_quarantines_corrupt_snapshot_and_log(real_fixtures, tmp_path):
    d = real_fixtures / FIX
    ctx, out = _ctx(tmp_path)
    meta = extract_snapshot(ctx, path=d.parent, at_zxid=None)
    q = read_arrow(ctx.warehouse, "raw/quarantine", "r1").to_pylist()
    # the corrupt snapshot; and log.42 (a log of epoch 0x88 named 0x42) cuts the history's
    # chain from snapshot.0 and snapshot.272 (both reach it first): the history starts at 639
    assert [(r["source"], r["location"]) for r in q] == [("zk-snapshot", f"{d}/snapshot.83f:4815"),
                                                         ("zk-snapshot", f"{d}/log.42:16"),
                                                         ("zk-snapshot", f"{d}/log.42:16")]
    assert "unreasonable length 977468229" in q[0]["reason"]
    assert ["snapshot.0 go from zxid 0x273 to 0x8800000001" in q[1]["reason"],
            "snapshot.272 go from zxid 0x272 to 0x8800000001" in q[2]["reason"]] == [True, True]
    assert all("starts after it, at snapshot.639" in r["reason"] for r in q[1:])
    assert meta["history"]["snapshot"] == str(d / "snapshot.639") and meta["history"]["start_zxid"] == 0x639
    assert meta["snapshot"] == str(d / "snapshot.639") and meta["zxid"] == 0x83F
    assert meta["logs_replayed"] == [str(d / "log.274"), str(d / "log.63b")]
    assert read_arrow(ctx.warehouse, "raw/znodes", "r1").num_rows == meta["nodes"] == 2111
    assert "snapshot.83f" in out.getvalue()

    # log.42 in the replay chain: the CRC mismatch stops the replay with a quarantine row
    t = tmp_path / "dd"
    t.mkdir()
    shutil.copy(d / "snapshot.0", t)
    shutil.copy(d / "log.42", t)
    ctx, out = _ctx(tmp_path, "r2")
    meta = extract_snapshot(ctx, path=t, at_zxid=None)
    q = read_arrow(ctx.warehouse, "raw/quarantine", "r2").to_pylist()
    # the damaged entry, then the txn after it: not the next zxid, the replay stops there
    assert [r["location"] for r in q] == [f"{t}/log.42:61", f"{t}/log.42:110"] and "CRC mismatch" in q[0]["reason"]
    assert "zxid gap: expected 0x8800000002, found 0x8800000003" in q[1]["reason"]
    assert meta["txns_applied"] == 1 and "CRC mismatch" in out.getvalue()
    assert meta["digest_verified"] is False and "zxid gap" in meta["unverified"]


def test_single_file_errors_and_digest_36(real_fixtures, tmp_path):
    ctx, _ = _ctx(tmp_path)
    with pytest.raises(InputError, match="snapshot.83f:4815: unreasonable length 977468229"):
        extract_snapshot(ctx, path=real_fixtures / FIX / "snapshot.83f", at_zxid=None)
    assert not ctx.warehouse.exists("raw/znodes", "r1")
    with pytest.raises(InputError, match="no such file"):
        extract_snapshot(ctx, path=tmp_path / "nope", at_zxid=None)
    meta = extract_snapshot(ctx, path=real_fixtures / "zookeeper/digest-3.6", at_zxid=None)
    assert meta["digest_verified"] is True and meta["txn_digests_checked"] == 1
    assert meta["txn_digest_mismatches"] == 0
    # Parquet dictionaries only where values repeat (paths, data and zxids are unique)
    import pyarrow.parquet as pq

    (part,) = (ctx.warehouse.root / "raw" / "znodes" / "data" / "run_id=r1").rglob("*.parquet")
    chunks = pq.ParquetFile(part).metadata.row_group(0)
    dictionary = {chunks.column(i).path_in_schema for i in range(chunks.num_columns)
                  if chunks.column(i).dictionary_page_offset is not None}
    assert dictionary == {"source", "run_id", "step"}  # (the partition columns: one value each)
    # statistics on the source (the core build reads the sources from them), not on paths nor data
    stated = {chunks.column(i).path_in_schema for i in range(chunks.num_columns) if chunks.column(i).is_stats_set}
    assert "source" in stated and not stated & {"path", "data"}


def test_unreadable_data_dirs_are_input_errors(tmp_path, capsys):
    """Nothing readable is exit 1 with one line naming the path, never an 'empty tree'."""
    import random

    from pipelines.cli import main

    empty = tmp_path / "empty"
    (empty / "version-2").mkdir(parents=True)
    junk = tmp_path / "junk"
    junk.mkdir()
    (junk / "notes.txt").write_text("x")
    (junk / "log.1").mkdir()  # a directory named like a log is not a log
    (junk / "snapshot.5").mkdir()
    garbage = tmp_path / "garbage"
    garbage.mkdir()
    (garbage / "log.1").write_bytes(random.Random(7).randbytes(1 << 20))
    (garbage / "snapshot.0").write_bytes(random.Random(8).randbytes(4096))
    header_only = tmp_path / "header-only"
    header_only.mkdir()
    (header_only / "log.1").write_bytes(_log([]) + random.Random(9).randbytes(5000))
    expect = {
        empty: "no ZooKeeper snapshot.* or log.* files (expected a data dir, its version-2/ or a snapshot file)",
        junk: "no ZooKeeper snapshot.* or log.* files",
        tmp_path / "nope": "no such file or directory",
        garbage: "no readable ZooKeeper snapshot nor transaction log",
        header_only: "no readable ZooKeeper snapshot nor transaction log",
    }
    for i, (path, message) in enumerate(expect.items()):
        with pytest.raises(SystemExit) as done:
            main(["--warehouse", str(tmp_path / "wh"), "--run-id", f"r{i}", "extract", "zk-snapshot", str(path)])
        err = capsys.readouterr().err
        assert done.value.code == 1 and "Traceback" not in err, err
        assert str(path) in err and message in " ".join(err.split()), err
        assert not (tmp_path / "wh" / "raw" / "znodes" / f"run_id=r{i}").exists()


def test_cli_exit_codes(real_fixtures, tmp_path, capsys):
    from pipelines.cli import main

    run = ["--warehouse", str(tmp_path / "wh"), "--quiet", "extract", "zk-snapshot"]
    with pytest.raises(SystemExit) as done:
        main(run + [str(real_fixtures / FIX / "snapshot.83f")])
    err = capsys.readouterr().err
    assert done.value.code == 1 and "Traceback" not in err and "unreasonable length 977468229" in err
    with pytest.raises(SystemExit) as done:
        main(run + [str(real_fixtures / "zookeeper/digest-3.6"), "--at-zxid", "0x3"])
    assert done.value.code == 0


def _entries(b: bytes) -> list[int]:
    """Offsets of the entries of a log made by _log (header 16 bytes)."""
    out, pos = [], 16
    while pos + 12 <= len(b) and struct.unpack_from(">i", b, pos + 8)[0] > 0:
        out.append(pos)
        pos += 13 + struct.unpack_from(">i", b, pos + 8)[0]
    return out


def _items(raw: bytes, tmp_path) -> tuple[list, LogReader]:
    f = tmp_path / "log.1"
    f.write_bytes(raw)
    r = LogReader(f)
    return list(r), r


def test_how_a_log_stops_is_told_by_what_follows(tmp_path):
    """Zeros after the last txn are the normal end (ZooKeeper pre-allocates logs with zeros);
    a cut-short last txn followed by nothing but zeros is a partial write; a zeroed or huge
    length, or a missing 'B', with data after it is damage: named, and reading resumes at the
    next valid txn."""
    txns = [_txn(z, 1, create(f"/n{z}", b"v" * 40, pcv=z)) for z in range(1, 400)]
    clean = _log(txns, pad=False) + bytes(1 << 16)
    items, r = _items(clean, tmp_path)
    assert len(items) == 399 and r.end.kind == "padding"
    at = _entries(clean)

    zeroed = bytearray(clean)
    zeroed[at[10] + 8 : at[10] + 12] = bytes(4)  # txn 11's length
    items, r = _items(bytes(zeroed), tmp_path)
    (damage,) = [t for t in items if isinstance(t, Damage)]
    assert damage.offset == at[10] and damage.resume == at[11] and "zero txn length" in damage.reason
    assert [t.zxid for t in items if not isinstance(t, Damage)] == [z for z in range(1, 400) if z != 11]

    huge = bytearray(clean)
    huge[at[-200] + 8 : at[-200] + 12] = struct.pack(">i", 0x7FFFFFFF)  # ~13 KB of txns after it
    items, r = _items(bytes(huge), tmp_path)
    damage = next(t for t in items if isinstance(t, Damage))
    assert damage.offset == at[-200] and "unreasonable txn length 2147483647" in damage.reason
    assert len(items) == 399 and r.end.kind == "padding"

    last = bytearray(clean)
    last[at[-1] + 8 : at[-1] + 12] = struct.pack(">i", 0x7FFFFFFF)  # the last txn: not a partial write
    items, r = _items(bytes(last), tmp_path)
    assert len(items) == 398 and r.end.kind == "corrupt" and "unreasonable" in r.end.reason

    cut = _log(txns, pad=False)[:-30] + bytes(4096)  # the last txn half written, then zeros
    items, r = _items(cut, tmp_path)
    assert len(items) == 398 and r.end.kind == "partial" and r.end.offset == at[-1]

    no_b = bytearray(clean)
    no_b[at[5] - 1] = 0  # txn 5 lacks its 'B', valid txns follow
    items, r = _items(bytes(no_b), tmp_path)
    damage = next(t for t in items if isinstance(t, Damage))
    assert damage.offset == at[4] and "damaged txn: no end-of-record marker" in damage.reason
    assert len([t for t in items if not isinstance(t, Damage)]) == 398


def test_a_missing_txn_stops_the_replay_unverified(tmp_path):
    txns = [_txn(z, 1, create(f"/n{z}", b"x", pcv=z)) for z in range(1, 9)]
    d = tmp_path / "data" / "version-2"
    d.mkdir(parents=True)
    (d / "log.1").write_bytes(_log(txns[:4] + txns[5:]))  # txn 5 removed
    ctx, out = _ctx(tmp_path)
    meta = extract_snapshot(ctx, path=d.parent, at_zxid=None)
    q = read_arrow(ctx.warehouse, "raw/quarantine", "r1").to_pylist()
    assert meta["zxid"] == 4 and meta["txns_applied"] == 4 and meta["digest_verified"] is False
    assert "zxid gap: expected 0x5, found 0x6" in meta["unverified"]
    assert [r["location"] for r in q] == [f"{d}/log.1:{_entries(_log(txns[:4] + txns[5:]))[4]}"]
    assert "zxid gap: expected 0x5, found 0x6" in q[0]["reason"] and "NOT verified" in out.getvalue()
    paths = read_arrow(ctx.warehouse, "raw/znodes", "r1")["path"].to_pylist()
    assert paths == ["/", "/n1", "/n2", "/n3", "/n4"]


def _replay_damaged_log1(real_fixtures, tmp_path, damage):
    """snapshot.272, log.1 changed by ``damage`` (a bytearray), log.274, read up to 0x639:
    (the read's tree equals snapshot.639's, the read, the data dir)."""
    d = real_fixtures / FIX
    t = tmp_path / "dd"
    t.mkdir()
    for n in ("snapshot.272", "log.274"):
        shutil.copy(d / n, t)
    raw = bytearray((d / "log.1").read_bytes())
    damage(raw)
    (t / "log.1").write_bytes(bytes(raw))
    direct, _ = read_offline(d / "snapshot.639")
    replayed, res = read_offline(t, at_zxid=0x639)
    return replayed.equals(direct), res, t


def test_damage_older_than_the_snapshot_is_skipped(real_fixtures, tmp_path):
    """log.1 holds txns 0x1..0x273; from snapshot.272 only 0x273 is needed: damage to an
    older entry is quarantined, not fatal."""

    def flip(raw):
        raw[len(raw) // 3] ^= 0x10

    equal, res, t = _replay_damaged_log1(real_fixtures, tmp_path, flip)
    assert equal and res.zxid == 0x639 and res.digest_verified is not False
    assert len(res.quarantine) == 1 and res.quarantine[0]["location"].startswith(f"{t}/log.1:")


def _every_type(z0: int) -> list[bytes]:
    """One txn of every type (as in test_every_txn_type_decodes), zxids from z0, the later
    ones with a TxnDigest."""
    bodies = [
        (-10, struct.pack(">i", 30000)), (1, create("/a", b"x", pcv=1)), (15, create("/a/e", None, eph=True, pcv=1)),
        (19, container("/c", 2)), (21, ttl("/t", 3, 60000)), (5, _str("/a") + _buf(b"y") + struct.pack(">i", 1)),
        (7, _str("/a") + ACL + struct.pack(">i", 1)),
        (14, multi((1, create("/m", pcv=5)), (13, _str("/a") + struct.pack(">i", 1)), (2, _str("/m")))),
        (2, _str("/t")), (-11, struct.pack(">i", 1) + _str("/a/e")), (-11, b""), (-1, struct.pack(">i", -101)),
        (1, _str("/old") + _buf(b"v0") + ACL + b"\x00"), (16, _str("/zookeeper/config") + _buf(b"c") + bytes(4)),
    ]
    return [_txn(z0 + i, t, b, digest=(z0 + i) * 7 if i % 2 else None) for i, (t, b) in enumerate(bodies)]


def _forge(rnd, txn: bytes) -> bytes:
    """The txn with its body changed (a byte, a length, a cut or extra bytes); framed by _log
    with an Adler32 that matches: only decoding can tell."""
    t = bytearray(txn)
    how = rnd.randrange(4)
    if how == 0:
        at = rnd.randrange(28, len(t))
        t[at] ^= 1 << rnd.randrange(8)
    elif how == 1:  # an int of the body (a length, a count, a type) set to a small or odd value
        at = rnd.randrange(32, max(33, len(t) - 3))
        t[at : at + 4] = struct.pack(">i", rnd.choice([-2, -1, 0, 1, 3, 7, 12, 40, 1 << 27, 0x7FFFFFFF]))
    elif how == 2:
        del t[rnd.randrange(30, len(t)) :]
    else:
        t += rnd.randbytes(rnd.choice([1, 4, 11, 12, 13]))
    return bytes(t)


def test_skipped_txns_are_not_decoded_but_damage_among_them_is_reported(tmp_path):
    """A reader skipping txns at or below a zxid (as the replay does up to its snapshot) does
    not decode them, yet reports the same damage and end as one decoding everything: CRC-valid
    txns whose bodies do not decode (forged), bit flips, cuts. Expected: the reader without
    skipping, which decodes every txn."""
    import random

    from pipelines.zookeeper.native import kernels
    from pipelines.zookeeper.txnlog import BODY_TABLE, decode_txn

    rnd = random.Random(22)
    base = _every_type(1) + _every_type(15) + _every_type(29)
    f = tmp_path / "log.1"
    decodes = disagree = 0
    for case in range(300):
        txns = list(base)
        for _ in range(rnd.choice([1, 1, 2, 5])):
            i = rnd.randrange(len(txns))
            txns[i] = _forge(rnd, txns[i])
        raw = bytearray(_log(txns, pad=rnd.random() < 0.5))
        if case % 3 == 0:  # frame damage too
            raw[rnd.randrange(16, len(raw))] ^= 1 << rnd.randrange(8)
        if case % 5 == 0:
            raw = raw[: rnd.randrange(16, len(raw))]
        f.write_bytes(bytes(raw))
        everything = list(LogReader(f))
        want_damage = [(d.offset, d.resume, d.reason, d.raw) for d in everything if isinstance(d, Damage)]
        ends = set()
        for skip in (0, 20, 10**6):
            r = LogReader(f, skip_through=skip)
            got = list(r)
            assert [(d.offset, d.resume, d.reason, d.raw) for d in got if isinstance(d, Damage)] == want_damage
            assert [t for t in got if not isinstance(t, Damage)] == [
                t for t in everything if not isinstance(t, Damage) and t.zxid > skip]
            ends.add((r.end.kind, r.end.offset, r.end.reason, r.end.raw))
        assert len(ends) == 1
        # the kernel's check agrees with the decoder on every txn (but a multi inside a multi)
        for t in txns:
            b = np.frombuffer(t, np.uint8)
            try:
                decode_txn(t, "", 0)
                ok = True
            except ZkFormatError:
                ok = False
            decodes += ok
            disagree += kernels().txn_ok(b, 0, len(t), *BODY_TABLE) != ok
    assert disagree == 0 and 0 < decodes


def test_skip_through_may_rise_while_reading(tmp_path):
    """Repeated txns (a log holding zxids already applied) are skipped once the caller has
    raised skip_through past them."""
    txns = [_txn(z, 1, create(f"/n{z}", pcv=z)) for z in (1, 2, 3, 2, 3, 4, 1, 5)]
    f = tmp_path / "log.1"
    f.write_bytes(_log(txns))
    r = LogReader(f, skip_through=0)
    got = []
    for t in r:
        got.append(t.zxid)
        r.skip_through = max(r.skip_through, t.zxid)
    assert got == [1, 2, 3, 4, 5] and r.end.kind == "padding"


def test_an_undecodable_txn_older_than_the_snapshot_is_still_quarantined(real_fixtures, tmp_path):
    """Skipped txns are not decoded, yet one whose checksum holds but whose type is unknown
    (forged here: type 99, Adler32 recomputed) is named as it was when every txn was decoded;
    the replay after the snapshot goes on."""
    forged = []

    def forge(raw):
        at = _entries(bytes(raw))[100]
        length = struct.unpack_from(">i", raw, at + 8)[0]
        raw[at + 12 + 28 : at + 12 + 32] = struct.pack(">i", 99)
        raw[at : at + 8] = struct.pack(">q", zlib.adler32(bytes(raw[at + 12 : at + 12 + length])))
        forged.append(at)

    equal, res, t = _replay_damaged_log1(real_fixtures, tmp_path, forge)
    assert equal and res.zxid == 0x639
    assert [q["location"] for q in res.quarantine] == [f"{t}/log.1:{forged[0]}"]
    assert "undecodable txn: unknown txn type 99" in res.quarantine[0]["reason"]
