"""Damaged ZooKeeper data dirs for the fault corpus (``test_zk_corpus.py``, ``sweep_zk.py``).

:func:`clean` drives a real ZooKeeper 3.8 (``testkit/zk_server.py``, snapshots every few dozen
txns, so fuzzy snapshots and several logs) with one client and records what each write did
at which zxid (creates and sets from their stats, deletes from the parent's pzxid). Half way
the server is restarted: loading its data dir it writes an exact (not fuzzy) snapshot.
:func:`truth` is the tree after any zxid, from that record alone (never from kaudit's output).

:func:`damage` makes one seeded case from the clean copy: truncations, bit flips, zeroed or
huge entry lengths, a txn removed (a zxid gap), garbage over a log, a txn changed with its
checksum made to match, damaged snapshots, a garbage log file, a path that is not UTF-8.
Log entries are framed here from the file format (``FileTxnLog``: crc long, length int,
txn, 'B'), independently of kaudit. :func:`judge` says what went wrong in one run.
"""

from __future__ import annotations

import json
import random
import shutil
import struct
import time
import zlib
from dataclasses import dataclass
from pathlib import Path

from testkit.zk_server import start_zk

VERSION = 3  # of the script below: a cached clean data dir is rebuilt when it changes
KINDS = ("truncate_log", "flip_log", "zero_length", "huge_length", "drop_txn", "garbage_in_log",
         "flip_snapshot", "truncate_snapshot", "garbage_log_file", "utf8_path", "forged_txn")


@dataclass
class Clean:
    data: Path  # the data dir (holding version-2/)
    ops: list  # [zxid, op, path, data hex | None]
    restart_zxid: int  # of the snapshot the server wrote at its restart (exact, not fuzzy)

    @property
    def last(self) -> int:
        return self.ops[-1][0]


def clean(cache: Path) -> Clean:
    """The clean data dir and its record, built once under ``cache``."""
    root = cache / f"zk-clean-v{VERSION}"
    if not (root / "ops.json").exists():
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        _drive(root)
    ops = json.loads((root / "ops.json").read_text())
    return Clean(root / "server" / "data", ops["ops"], ops["restart_zxid"])


def _drive(root: Path) -> None:
    """Writes, a restart (the server snapshots the tree it loaded), more writes."""
    from kazoo.client import KazooClient

    rnd = random.Random(1)
    server = start_zk(root / "server", extra_conf="snapCount=40\n")
    ops: list = []
    live: list[str] = []
    try:
        for phase, count in enumerate((300, 150)):
            if phase:
                server.start()
                restart = _restart_snapshot(server.data_dir / "version-2", ops[-1][0])
            zk = KazooClient(hosts=server.hosts, timeout=30)
            zk.start(timeout=60)
            for i in range(count):
                _write(zk, rnd, ops, live, f"{phase}-{i}")
            zk.stop()
            zk.close()
            server.stop()
    finally:
        server.stop()
    (root / "ops.json").write_text(json.dumps({"ops": ops, "restart_zxid": restart}))


def _restart_snapshot(v2: Path, last: int) -> int:
    """The zxid of the snapshot a restarted server writes of what it loaded (past ``last``,
    the session's close); the server may answer before it is written."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        newest = max(zxid(p) for p in v2.glob("snapshot.*"))
        if newest > last:
            return newest
        time.sleep(0.1)
    raise RuntimeError("the restarted ZooKeeper wrote no snapshot")


def _write(zk, rnd: random.Random, ops: list, live: list[str], tag: str) -> None:
    r = rnd.random()
    if r < 0.5 or len(live) < 10:
        parent = rnd.choice(live) if len(live) > 3 else ""
        name = rnd.choice(["n", "\u00e9t\u00e9-", "x"]) + tag
        path = f"{parent}/{name}"
        data = rnd.randbytes(rnd.randrange(0, 200))
        _, st = zk.create(path, data, include_data=True)
        ops.append([st.czxid, "create", path, data.hex()])
        live.append(path)
    elif r < 0.85:
        path = rnd.choice(live)
        data = rnd.randbytes(rnd.randrange(0, 300))
        st = zk.set(path, data)
        ops.append([st.mzxid, "set", path, data.hex()])
    else:
        path = rnd.choice([p for p in live if not any(q.startswith(p + "/") for q in live)])
        zk.delete(path)
        ops.append([zk.exists(path.rsplit("/", 1)[0] or "/").pzxid, "delete", path, None])  # the parent's pzxid
        live.remove(path)


def truth(clean: Clean, zxid: int) -> dict[str, tuple[bytes, int, int, int]]:
    """path -> (data, czxid, mzxid, version) of every znode but the root after ``zxid``."""
    tree: dict[str, list] = {}
    for z, op, path, data in clean.ops:
        if z > zxid:
            break
        if op == "create":
            tree[path] = [bytes.fromhex(data), z, z, 0]
        elif op == "set":
            node = tree[path]
            node[0], node[2], node[3] = bytes.fromhex(data), z, node[3] + 1
        else:
            del tree[path]
    return {p: tuple(v) for p, v in tree.items()}


# -- the file formats, framed independently of kaudit --------------------------------------

def entries(log: bytes) -> list[tuple[int, int, int]]:
    """(offset, length, zxid) of each entry of a transaction log up to its zero padding."""
    out, pos = [], 16
    while pos + 12 <= len(log):
        length = struct.unpack_from(">i", log, pos + 8)[0]
        if length <= 0 or pos + 13 + length > len(log):
            break
        out.append((pos, length, struct.unpack_from(">q", log, pos + 12 + 12)[0]))
        pos += 13 + length
    return out


def used(log: bytes) -> int:
    e = entries(log)
    return e[-1][0] + 13 + e[-1][1] if e else 16


def zxid(p: Path) -> int:
    return int(p.name.split(".")[1], 16)


def files(v2: Path, prefix: str) -> list[Path]:
    return sorted(v2.glob(prefix + ".*"), key=zxid)


def _seal(snap: bytes) -> tuple[int, int]:
    """(offset, bytes after it) of the seal that ends a snapshot's nodes (``FileSnap``: Adler32
    of every byte before it, then the string "/"); after it, a 3.6+ snapshot has the digest
    section (zxid long, version int, digest long, seal) and 3.9+ the last processed zxid's."""
    seal = struct.pack(">i", 1) + b"/"
    for extra in (33, 0, 54):  # digest, none, digest + last zxid
        at = len(snap) - extra - 13
        if at > 0 and snap[at + 8 : at + 13] == seal:
            return at, extra
    raise ValueError("no seal found")


def _reseal(snap: bytes) -> bytes:
    """A snapshot's nodes re-sealed without the digest section that followed the seal."""
    body = snap[: _seal(snap)[0]]
    return body + struct.pack(">q", zlib.adler32(body)) + struct.pack(">i", 1) + b"/"


def holds_through(snap: Path) -> int:
    """The zxid a snapshot's digest was taken at (ZooKeeper writes it when the snapshot ends, so
    a fuzzy one's is past its name), else its name's: the txns up to it are in the snapshot when
    the digest matches, and a read need not replay them."""
    raw = snap.read_bytes()
    at, extra = _seal(raw)
    return max(zxid(snap), struct.unpack_from(">q", raw, at + 13)[0] if extra else 0)


@dataclass
class Case:
    kind: str
    seed: int
    data: Path
    file: str  # the damaged file (name)
    detail: str
    must_name: bool  # the damage is on the read's path: raw/quarantine must name the file
    gap: bool = False  # a txn the read needs was removed: the read must not go past it verified
    last: int | None = None  # the last zxid the data dir holds (the utf8 case ends at the restart)
    lost_path: str | None = None  # utf8_path: the node (and its subtree) that must be quarantined


def damage(clean: Clean, out: Path, seed: int, kind: str | None = None) -> Case:
    """One damaged copy of the clean data dir under ``out``."""
    rnd = random.Random(seed)
    kind = kind or KINDS[seed % len(KINDS)]
    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(clean.data, out)
    v2 = out / "version-2"
    snaps, logs = files(v2, "snapshot"), files(v2, "log")
    newest = zxid(snaps[-1])
    if kind in ("truncate_log", "flip_log", "zero_length", "huge_length", "drop_txn", "garbage_in_log", "forged_txn"):
        log = rnd.choice(logs[-3:] if rnd.random() < 0.7 else logs)
        raw = bytearray(log.read_bytes())
        ents = entries(bytes(raw))
        end = used(bytes(raw))
        e_off, e_len, e_zxid = rnd.choice(ents)
        if kind == "truncate_log":
            cut = rnd.randrange(16, end)
            raw = raw[:cut]
            detail = f"cut at {cut} of {end}"
        elif kind == "flip_log":
            at = rnd.randrange(16, end)
            raw[at] ^= 1 << rnd.randrange(8)
            detail = f"bit flip at {at}"
        elif kind == "zero_length":
            raw[e_off + 8 : e_off + 12] = bytes(4)
            detail = f"zero length at {e_off} (zxid {e_zxid:#x})"
        elif kind == "huge_length":
            raw[e_off + 8 : e_off + 12] = struct.pack(
                ">i", rnd.choice([0x7FFFFFFF, 0x00100000 + rnd.randrange(1 << 20)])
            )
            detail = f"huge length at {e_off} (zxid {e_zxid:#x})"
        elif kind == "forged_txn":  # a byte of a txn changed and its Adler32 made to match: only digests tell
            at = e_off + 12 + 32 + rnd.randrange(max(1, e_len - 32 - 12))
            raw[at] ^= 1 << rnd.randrange(8)
            raw[e_off : e_off + 8] = struct.pack(">q", zlib.adler32(bytes(raw[e_off + 12 : e_off + 12 + e_len])))
            detail = f"txn {e_zxid:#x} forged at {at}"
        elif kind == "drop_txn":
            del raw[e_off : e_off + 13 + e_len]
            detail = f"txn {e_zxid:#x} at {e_off} removed"
        else:
            at = rnd.randrange(16, end)
            n = rnd.randrange(1, 2000)
            raw[at : at + n] = rnd.randbytes(len(raw[at : at + n]))
            detail = f"{n} garbage bytes at {at}"
        log.write_bytes(bytes(raw))
        gap = kind == "drop_txn" and holds_through(snaps[-1]) < e_zxid < max(z for _, _, z in ents)
        return Case(kind, seed, out, log.name, detail, gap, gap=gap, last=clean.last)
    if kind in ("flip_snapshot", "truncate_snapshot"):
        snap = snaps[-1] if rnd.random() < 0.7 else rnd.choice(snaps)
        raw = bytearray(snap.read_bytes())
        at = rnd.randrange(len(raw))
        if kind == "flip_snapshot":
            raw[at] ^= 1 << rnd.randrange(8)
            detail = f"bit flip at {at}"
        else:
            raw = raw[:at]
            detail = f"cut at {at}"
        snap.write_bytes(bytes(raw))
        return Case(kind, seed, out, snap.name, detail, snap == snaps[-1], last=clean.last)
    if kind == "garbage_log_file":
        z = rnd.choice([newest + 1, clean.last + 1, rnd.randrange(1, clean.last)])
        f = v2 / f"log.{z:x}"
        f.write_bytes(rnd.randbytes(rnd.choice([10, 5000, 1 << 20])))
        return Case(kind, seed, out, f.name, f"garbage log file {f.name}", z > newest, last=clean.last)
    # utf8_path: the snapshot the server wrote at its restart (exact), the files after it
    # removed, a path byte made 0xff, re-sealed without its digest (as a 3.5 snapshot is)
    for f in snaps + logs:
        if zxid(f) > clean.restart_zxid:
            f.unlink()
    snap = v2 / f"snapshot.{clean.restart_zxid:x}"
    raw = bytearray(snap.read_bytes())
    candidates = [p for p in _paths(bytes(raw)) if "\u00e9" in p[1].rsplit("/", 1)[1]]
    start, path = rnd.choice(candidates)
    at = start + path.encode().rindex("\u00e9".encode()) + 1  # in the node's own name
    raw[at] = 0xFF
    snap.write_bytes(_reseal(bytes(raw)))
    last = max(z for z, *_ in clean.ops if z <= clean.restart_zxid)
    return Case(kind, seed, out, snap.name, f"path {path!r}: byte {at} set to 0xff", True, last=last, lost_path=path)


def _paths(snap: bytes) -> list[tuple[int, str]]:
    """(offset, path) of the znode paths of a snapshot, found by their shape (an int length,
    then "/" and UTF-8): enough to pick one to damage."""
    out = []
    at = snap.find(b"/")
    while at != -1:
        if at >= 4:
            n = struct.unpack_from(">i", snap, at - 4)[0]
            if 1 < n < 300 and at + n <= len(snap):
                try:
                    path = snap[at : at + n].decode()
                except UnicodeDecodeError:
                    path = ""
                if path.startswith("/") and "/" not in path[-1:] and path.isprintable():
                    out.append((at, path))
        at = snap.find(b"/", at + 1)
    return out


# -- judging one run ------------------------------------------------------------------------

def judge(clean: Clean, case: Case, rc: int | None, err: str, warehouse: Path, run_id: str) -> dict:
    """What went wrong in one ``extract zk-snapshot`` run of ``case`` (True = a problem).
    The truth is :func:`truth` at the zxid the run's metadata claims."""
    from pipelines.warehouse.reading import read_arrow
    from pipelines.warehouse.warehouse import Warehouse

    out = {"traceback": "Traceback" in err, "hang": rc is None, "wrong_exit": rc not in (0, None),
           "silent_wrong": False, "unnamed": False, "verified_past_gap": False, "debris": 0, "equal": None,
           "verified": None, "zxid": None}
    out["debris"] = sum(1 for p in warehouse.rglob("*") if p.name.startswith(".staging.") or p.name.endswith(".tmp"))
    if rc != 0:
        out["multi_line_error"] = len([line for line in err.splitlines() if line.strip()]) != 1
        return out
    meta = json.loads((warehouse / "runs" / f"run_id={run_id}" / "extract_zk_snapshot.json").read_text())
    wh = Warehouse(warehouse)
    rows = read_arrow(wh, "raw/znodes", run_id, with_run_id=False).to_pylist()
    quarantine = read_arrow(wh, "raw/quarantine", run_id, with_run_id=False).to_pylist()
    got = {r["path"]: (r["data"] or b"", r["czxid"], r["mzxid"], r["version"]) for r in rows if r["path"] != "/"}
    want = truth(clean, meta["zxid"])
    if case.lost_path:
        want = {p: v for p, v in want.items() if p != case.lost_path and not p.startswith(case.lost_path + "/")}
    equal = got == want
    out["wrong_rows"] = len(set(got.items()) ^ set(want.items()))
    out["quarantined"] = [f"{q['location'].rsplit('/', 1)[-1]}: {q['reason']}" for q in quarantine]
    verified = meta["digest_verified"] is True
    out.update(equal=equal, verified=meta["digest_verified"], zxid=meta["zxid"])
    # wrong rows that nothing flags: claimed verified, or published with no quarantine row
    out["silent_wrong"] = not equal and (verified or not quarantine)
    # a read that did not reach the end, or differs from it, names what stopped it
    short = meta["zxid"] < case.last or not equal
    named = any(("not valid UTF-8" in q["reason"]) if case.lost_path else (case.file in q["location"])
                for q in quarantine)
    out["unnamed"] = (short and not quarantine) or (case.must_name and not named)
    if case.gap:
        out["verified_past_gap"] = verified or not any("zxid gap" in q["reason"] for q in quarantine)
    return out


PROBLEMS = ("traceback", "hang", "wrong_exit", "silent_wrong", "unnamed", "verified_past_gap")
