"""Snapshot parsing against real files (Apache ZooKeeper test data, a 3.6 data dir) and
hand-encoded bytes; corrupt inputs give typed one-line errors, never a traceback."""

from __future__ import annotations

import gzip
import struct
import zlib
from pathlib import Path

import pytest

from pipelines.warehouse.reading import read_arrow
from pipelines.zookeeper.errors import (
    BadMagic,
    DigestMismatch,
    SealMismatch,
    Truncated,
    UnreasonableLength,
    ZkFormatError,
)
from pipelines.zookeeper.snapshot import parse


@pytest.fixture(scope="module")
def zkdir(real_fixtures) -> Path:
    return real_fixtures / "zookeeper"


def _str(s: str | None) -> bytes:
    if s is None:
        return struct.pack(">i", -1)
    b = s.encode()
    return struct.pack(">i", len(b)) + b


def _buf(b: bytes | None) -> bytes:
    return struct.pack(">i", -1) if b is None else struct.pack(">i", len(b)) + b


def _node(path, data, acl=-1, czxid=0, mzxid=0, ctime=0, mtime=0, version=0, cversion=0, aversion=0, owner=0,
          pzxid=0) -> bytes:
    return _str(path) + _buf(data) + struct.pack(">qqqqqiiiqq", acl, czxid, mzxid, ctime, mtime, version,
                                                 cversion, aversion, owner, pzxid)


def _sealed(body: bytes) -> bytes:
    return body + struct.pack(">q", zlib.adler32(body)) + _str("/")


def _snapshot(nodes: list[bytes], sessions=((0x100, 30000),), acls=((1, [(31, "world", "anyone")]),)) -> bytes:
    b = b"ZKSN" + struct.pack(">iq", 2, 0)
    b += struct.pack(">i", len(sessions)) + b"".join(struct.pack(">qi", s, t) for s, t in sessions)
    b += struct.pack(">i", len(acls))
    for acl_id, entries in acls:
        b += struct.pack(">qi", acl_id, len(entries))
        b += b"".join(struct.pack(">i", p) + _str(s) + _str(i) for p, s, i in entries)
    return _sealed(b + b"".join(nodes) + _str("/"))


HAND_NODES = [
    # (path, data, czxid, mzxid, ctime, mtime, version, cversion, aversion, owner, pzxid)
    ("", b"", 0, 0, 0, 0, 0, 2, 0, 0, 7),
    ("/zookeeper", b"", 0, 0, 0, 0, 0, 0, 0, 0, 0),
    ("/a", b"hello", 2, 5, 1_700_000_000_000, 1_700_000_000_500, 3, 1, 0, 0, 6),
    ("/a/eph", None, 6, 6, 1_700_000_001_000, 1_700_000_001_000, 0, 0, 0, 0x100, 6),
    ("/c", b"\x00\xff", 7, 7, 1, 1, 0, 0, 2, -(1 << 63), 7),
]


def test_hand_encoded_snapshot_decodes_field_by_field(tmp_path):
    f = tmp_path / "snapshot.7"
    f.write_bytes(_snapshot([_node(p, d, 1, cz, mz, ct, mt, v, cv, av, o, pz)
                             for p, d, cz, mz, ct, mt, v, cv, av, o, pz in HAND_NODES]))
    snap = parse(f)
    assert snap.zxid == 7 and snap.digest is None
    assert snap.sessions.tolist() == [(0x100, 30000)]
    assert snap.acls == {1: [(31, "world", "anyone")]}
    n = snap.nodes
    assert n.paths().to_pylist() == [p for p, *_ in HAND_NODES]
    assert n.data().to_pylist() == [d for _, d, *_ in HAND_NODES]
    st = n.stats()
    got = list(zip(*(st[k].tolist() for k in ("czxid", "mzxid", "ctime", "mtime", "version", "cversion", "aversion",
                                              "ephemeral_owner", "pzxid")), strict=True))
    assert got == [tuple(r[2:]) for r in HAND_NODES]
    # the digest of one node, computed independently with zlib (DigestCalculator's layout)
    stat = struct.pack(">qqqqqiiiq", 2, 5, 6, 1_700_000_000_000, 1_700_000_000_500, 3, 1, 0, 0)
    assert int(n.digest[2]) == zlib.crc32(b"/a" + b"hello" + stat)


def test_real_snapshot_272_has_628_records(zkdir):
    snap = parse(zkdir / "invalidsnap/version-2/snapshot.272")
    assert len(snap.nodes) == 628
    assert snap.nodes.paths()[0].as_py() == ""  # the root, written as ""


def test_real_36_snapshot_digest_verifies(zkdir):
    snap = parse(zkdir / "digest-3.6/version-2/snapshot.3")
    assert snap.digest.digest == 1446474057 and snap.digest.zxid == 3
    assert snap.computed_digest == 1446474057
    assert snap.digest_verified is True


def test_real_snapshot_83f_unreasonable_length(zkdir):
    with pytest.raises(UnreasonableLength) as err:
        parse(zkdir / "invalidsnap/version-2/snapshot.83f")
    assert "unreasonable length 977468229" in str(err.value)
    assert str(err.value).startswith(str(zkdir / "invalidsnap/version-2/snapshot.83f") + ":")


@pytest.mark.parametrize("name", ["invalidsnap/version-2/snapshot.639", "digest-3.6/version-2/snapshot.3"])
def test_gzip_and_snappy_variants_read_the_same(zkdir, tmp_path, name):
    import snappy

    raw = (zkdir / name).read_bytes()
    plain = parse(zkdir / name)
    gz = tmp_path / (Path(name).name + ".gz")
    gz.write_bytes(gzip.compress(raw))
    # xerial SnappyOutputStream framing: magic, version 1, compatible 1, (int len, block)*
    framed = b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
    for i in range(0, len(raw), 32768):
        block = snappy.compress(raw[i : i + 32768])
        framed += struct.pack(">i", len(block)) + block
    sn = tmp_path / (Path(name).name + ".snappy")
    sn.write_bytes(framed)
    for f, kind in ((gz, "gzip"), (sn, "snappy")):
        other = parse(f)
        assert other.compression == kind
        assert other.nodes.paths().equals(plain.nodes.paths())
        assert other.nodes.data().equals(plain.nodes.data())
        assert (other.nodes.stats()["mzxid"] == plain.nodes.stats()["mzxid"]).all()
        assert other.computed_digest == plain.computed_digest


def test_digest_mismatch_names_the_file(zkdir, tmp_path):
    raw = bytearray((zkdir / "digest-3.6/version-2/snapshot.3").read_bytes())
    at = raw.index(b"Hello World")
    raw[at] = ord("J")
    # re-seal so that only the digest can tell
    tail = 33 + 13  # digest section (33) and the first seal (8 + 5)
    body = bytes(raw[: len(raw) - tail])
    sealed = _sealed(body)
    digest = bytes(raw[len(raw) - 33 : len(raw) - 13])
    f = tmp_path / "snapshot.3"
    f.write_bytes(sealed + digest + struct.pack(">q", zlib.adler32(digest, zlib.adler32(sealed))) + _str("/"))
    with pytest.raises(DigestMismatch) as err:
        parse(f)
    assert str(f) in str(err.value) and "1446474057" in str(err.value)


def _with_digest(snapshot: bytes, zxid: int, digest: int) -> bytes:
    """``snapshot`` (ending in a 3.6+ digest section) with that section replaced, re-sealed."""
    sealed = snapshot[: len(snapshot) - 33]
    section = struct.pack(">qiq", zxid, 2, digest)
    return sealed + section + struct.pack(">q", zlib.adler32(section, zlib.adler32(sealed))) + _str("/")


def _data_dir(tmp_path, zkdir, snapshots: dict[str, bytes]) -> Path:
    d = tmp_path / "version-2"
    d.mkdir()
    for log in ("log.1", "log.4"):
        (d / log).write_bytes((zkdir / "digest-3.6/version-2" / log).read_bytes())
    for name, raw in snapshots.items():
        (d / name).write_bytes(raw)
    return d


def test_a_snapshot_written_while_a_txn_was_applied_is_verified_by_the_logs(zkdir, tmp_path):
    """ZooKeeper applied txn 3 to the tree while writing the snapshot, but its last processed
    zxid and digest were still those of txn 2: the digest does not match at the snapshot's own
    zxid. The log's digest after txn 3 (replayed again) verifies the tree."""
    from pipelines.zookeeper.datadir import read_dir

    raw = (zkdir / "digest-3.6/version-2/snapshot.3").read_bytes()
    racy = _with_digest(raw, 2, 2853959157)  # txn 2's digest, from log.1
    with pytest.raises(DigestMismatch):
        parse(_data_dir(tmp_path, zkdir, {"snapshot.2": racy}) / "snapshot.2")
    res = read_dir(tmp_path / "version-2")
    assert res.snapshot_zxid == 2 and res.zxid == 4
    assert res.digest_verified is True and res.txn_digests_checked == 2 and res.txn_digest_mismatches == 0
    assert any("the logs decide" in w for w in res.warnings)
    assert sorted(res.tree.paths.to_pylist()) == ["", "/top-level-node", "/top-level-node/child-1", "/zookeeper",
                                        "/zookeeper/config", "/zookeeper/quota"]


def test_a_fuzzy_snapshot_ahead_of_its_digest_is_verified_by_the_logs(zkdir, tmp_path):
    """Named at txn 1, written while txns 2 and 3 were applied, and ended while txn 3 was
    applied to the tree but not yet to the last processed zxid and digest (those of txn 2):
    replayed to txn 2 the tree is not the digest's, and the log's digest after txn 3 verifies
    it; the snapshot is used, nothing quarantined."""
    from pipelines.zookeeper.datadir import read_dir

    raw = (zkdir / "digest-3.6/version-2/snapshot.3").read_bytes()
    fuzzy = _with_digest(raw, 2, 2853959157)  # txn 2's digest, from log.1
    d = _data_dir(tmp_path, zkdir, {"snapshot.1": fuzzy})
    res = read_dir(d)
    assert (res.snapshot_zxid, res.zxid, res.digest_verified, res.txn_digest_mismatches) == (1, 4, True, 0)
    assert res.quarantine == [] and res.snapshot_failed is None
    assert sorted(res.tree.paths.to_pylist()) == ["", "/top-level-node", "/top-level-node/child-1", "/zookeeper",
                                                  "/zookeeper/config", "/zookeeper/quota"]


def test_a_corrupt_snapshot_is_not_excused_by_the_logs_after_it(zkdir, tmp_path):
    from pipelines.zookeeper.datadir import read_dir

    raw = bytearray((zkdir / "digest-3.6/version-2/snapshot.3").read_bytes())
    raw[raw.index(b"Hello World")] = ord("J")
    body = bytes(raw[: len(raw) - 46])
    corrupt = _with_digest(_sealed(body) + bytes(33), 3, 1446474057)
    d = _data_dir(tmp_path, zkdir, {"snapshot.3": corrupt})
    with pytest.raises(DigestMismatch, match="1446474057"):
        read_dir(d)


def test_39_last_processed_zxid_section(tmp_path):
    body = _snapshot([_node("", b""), _node("/x", b"1", czxid=5, mzxid=5, pzxid=5)])
    extra = struct.pack(">q", 9)
    f = tmp_path / "snapshot.5"
    f.write_bytes(body + extra + struct.pack(">q", zlib.adler32(extra, zlib.adler32(body))) + _str("/"))
    assert parse(f).last_processed_zxid == 9


def test_seal_mismatch(zkdir, tmp_path):
    raw = bytearray((zkdir / "invalidsnap/version-2/snapshot.272").read_bytes())
    raw[len(raw) // 2] ^= 0x01  # inside some data or stat bytes
    f = tmp_path / "snapshot.272"
    f.write_bytes(bytes(raw))
    with pytest.raises(ZkFormatError) as err:
        parse(f)
    assert isinstance(err.value, (SealMismatch, UnreasonableLength, Truncated))


def test_bad_magic_and_empty(tmp_path, zkdir):
    f = tmp_path / "snapshot.1"
    f.write_bytes((zkdir / "invalidsnap/version-2/log.1").read_bytes())
    with pytest.raises(BadMagic, match="bad magic b'ZKLG'"):
        parse(f)
    f.write_bytes(b"")
    with pytest.raises(Truncated, match="empty file"):
        parse(f)


def test_every_truncation_is_a_clean_error(zkdir, tmp_path):
    raw = (zkdir / "digest-3.6/version-2/snapshot.3").read_bytes()
    f = tmp_path / "snapshot.3"
    whole_34 = len(raw) - 33  # without the digest section it is a valid 3.4/3.5 snapshot
    for cut in [c for c in range(0, len(raw) - 1, 7) if c != whole_34] + [len(raw) - 1, len(raw) - 20]:
        f.write_bytes(raw[:cut])
        with pytest.raises(ZkFormatError) as err:
            parse(f)
        assert str(f) in str(err.value)


def test_a_path_that_is_not_utf8_is_quarantined_with_its_subtree(tmp_path):
    """Raw bytes in the path column would make every reader of the table fail; the node and
    what is below it go to raw/quarantine, the rest is written and reads back."""
    import io

    from rich.console import Console

    from pipelines.context import RunContext
    from pipelines.warehouse.warehouse import Warehouse
    from pipelines.zookeeper.extract import extract_snapshot

    def node(path: bytes, data=b"d", z=1):
        return struct.pack(">i", len(path)) + path + _buf(data) + struct.pack(
            ">qqqqqiiiqq", -1, z, z, 0, 0, 0, 0, 0, 0, z)

    nodes = [node(b""), node(b"/zookeeper"), node(b"/a"), node(b"/a/caf\xff"), node(b"/a/caf\xff/b"),
             node(b"/a/caf\xc3\xa9"), node(b"/ok")]
    f = tmp_path / "snapshot.1"
    f.write_bytes(_snapshot(nodes))
    ctx = RunContext(Warehouse(tmp_path / "wh"), "r", console=Console(file=io.StringIO()))
    meta = extract_snapshot(ctx, path=f, at_zxid=None)
    znodes = read_arrow(ctx.warehouse, "raw/znodes", "r", with_run_id=False).to_pylist()
    assert [r["path"] for r in znodes] == ["/", "/a", "/a/caf\u00e9", "/ok"] and meta["nodes"] == 4
    by = {r["path"]: r for r in znodes}
    assert by["/a"]["num_children"] == 2  # the tree as ZooKeeper holds it: the bad node is still a child
    q = read_arrow(ctx.warehouse, "raw/quarantine", "r", with_run_id=False).to_pylist()
    # each at the byte its node record starts at in the file (where the test wrote it)
    raw = f.read_bytes()
    bad = [b"/a/caf\xff", b"/a/caf\xff/b"]
    assert [(r["location"], r["raw"]) for r in q] == [(f"{f}:{raw.index(node(b))}", b) for b in bad]
    assert all("/a/caf\\xff" in r["reason"] and "not valid UTF-8" in r["reason"] for r in q)
    assert meta["quarantined"] == 2
