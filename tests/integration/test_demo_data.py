"""The committed demo cluster is what its manifest (``pipelines/demo/faults.json``) says.

Checked with readers that share nothing with kaudit's decoders: ZooKeeper's own
``SnapshotFormatter``, a real ZooKeeper server restoring the data dir (snapshot + logs) and
walked with kazoo, and kafka-python's record batch readers for the segments.
"""

from __future__ import annotations

import io
import json
import re
import shutil
import struct
import subprocess
from collections import defaultdict
from pathlib import Path

import pytest

from testkit.oracle import counts, zk_audit

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "pipelines" / "demo"
ZK_DIR = DEMO / "data" / "zookeeper" / "version-2"
LOGS = DEMO / "data" / "kafka-logs"


@pytest.fixture(scope="module")
def manifest() -> dict:
    return json.loads((DEMO / "faults.json").read_text())


def _zxid(name: str) -> int:
    return int(name.split(".")[1], 16)


# --- ZooKeeper ------------------------------------------------------------------------------


def test_zookeeper_files_are_small_and_have_logs_after_the_newest_snapshot(manifest):
    zk = manifest["zookeeper"]
    files = {f.name: f.stat().st_size for f in ZK_DIR.iterdir()}
    assert files == zk["files"]
    logs = [n for n in files if n.startswith("log.")]
    snaps = sorted((n for n in files if n.startswith("snapshot.")), key=_zxid)
    assert logs and len(snaps) >= 2
    assert all(files[n] < 1 << 20 for n in logs), "txn logs padded to 64 MiB: preAllocSize not applied"
    assert snaps[-1] == zk["latest_snapshot"]
    assert _zxid(snaps[-1]) < zk["last_zxid"]
    assert max(_zxid(n) for n in logs) > _zxid(snaps[-1])  # a log started after the newest snapshot
    assert zk["ephemeral_znodes_created_after_latest_snapshot"] > 0


def test_snapshot_formatter_reads_every_snapshot(manifest):
    """ZooKeeper's own reader parses every snapshot; the newest holds fewer nodes than the
    final tree (the rest is only in the transaction log)."""
    counts = {}
    for snap in sorted(ZK_DIR.glob("snapshot.*"), key=lambda f: _zxid(f.name)):
        out = subprocess.run(
            ["java", "-cp", "/usr/share/java/*", "org.apache.zookeeper.server.SnapshotFormatter", str(snap)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert out.returncode == 0, out.stderr[-2000:]
        nodes, _, sessions = out.stdout.partition("Session Details")
        assert sessions, out.stdout[-2000:]
        counts[snap.name] = sum(1 for line in nodes.splitlines() if line.startswith("/"))
    newest = counts[manifest["zookeeper"]["latest_snapshot"]]
    zk = manifest["zookeeper"]
    assert newest == zk["znodes"] - zk["znodes_created_after_latest_snapshot"]


def test_server_restores_the_tree_of_the_manifest(tmp_path, manifest):
    """A real server restores snapshot + logs; its tree (read before the crashed sessions
    expire) has the manifest's znodes, ephemeral owners and audit statuses."""
    from kazoo.client import KazooClient

    from testkit.zk_server import start_zk

    shutil.copytree(ZK_DIR, tmp_path / "data" / "version-2")
    server = start_zk(tmp_path, extra_conf="maxSessionTimeout=180000\n")
    client = KazooClient(hosts=server.hosts, timeout=30)
    try:
        client.start(timeout=60)
        tree, ephemeral = {}, set()

        def walk(path: str) -> None:
            data, stat = client.get(path)
            tree[path] = data or b""
            if stat.ephemeralOwner:
                ephemeral.add(path)
            for child in client.get_children(path):
                walk(("" if path == "/" else path) + "/" + child)

        walk("/")
    finally:
        client.stop()
        client.close()
        server.stop()
    zk = manifest["zookeeper"]
    assert len(tree) == zk["znodes"]
    assert len(ephemeral) == zk["ephemeral_znodes"]
    for path, node in zk["paths"].items():
        assert tree[path].decode() == node["data"], path
        assert (path in ephemeral) == node["ephemeral"], path
    rows = zk_audit(tree)
    assert rows == [r for r in manifest["assignment_audit"] if r["source"] == "zookeeper"]
    assert counts(rows, "zookeeper") == manifest["expected"]["assignment"]["zookeeper"]
    # every planted ZooKeeper fault is there
    statuses = {r["status"] for r in rows}
    assert {"wrong_owner", "unowned", "unknown_owner", "unexpected_partition", "ok"} <= statuses
    assert any(r["broker_id"] is not None for r in rows)  # the 0.7 layout
    analytics = [r for r in rows if r["group_id"] == "analytics" and r["topic"] == "clicks"]
    # "-10" sorts before "-2": the third thread in string order owns partition 4
    p4 = next(r for r in analytics if r["partition"] == 4)
    assert p4["observed_owners"][0].endswith("-10") and p4["status"] == "ok"


def test_txn_logs_hold_the_history_of_the_manifest(manifest):
    """ZooKeeper's own TxnLogToolkit lists the txns of the whole retained history (every log
    after the oldest snapshot, the server's empty tree): a registration at every state the
    generator recorded, the owner writes leave each past state with the owners the manifest
    says it ended with (the wrong owners included), and every offset write is there."""
    zk, h = manifest["zookeeper"], manifest["history"]
    line = re.compile(r"zxid (0x[0-9a-f]+) (create2?|delete) '?(/consumers/([^/]+)/(ids|owners)/[^,\s]+)(?:,(\S*?),)?")
    offset = re.compile(r"zxid (0x[0-9a-f]+) (?:create2?|setData) /consumers/([^/,]+)/offsets/([^/,]+)/([^/,]+),(\d+),")
    ops, offsets = [], {}
    for log in ZK_DIR.glob("log.*"):
        out = subprocess.run(
            ["java", "-cp", "/usr/share/java/*", "org.apache.zookeeper.server.persistence.TxnLogToolkit", str(log)],
            capture_output=True, text=True, timeout=120,
        )
        assert out.returncode == 0, out.stderr[-2000:]
        for m in line.finditer(out.stdout):
            depth = 4 if m[5] == "ids" else 5  # a registration, an owner (not their parents)
            if int(m[1], 16) > _zxid(zk["first_snapshot"]) and m[3].count("/") == depth:
                ops.append((int(m[1], 16), m[2], m[3], m[4], m[5], m[6]))
        for m in offset.finditer(out.stdout):
            offsets.setdefault(f"{m[2]}/{m[3]}/{m[4]}", []).append((int(m[1], 16), int(m[5])))
    ops.sort()
    assert {k: sorted(v) for k, v in offsets.items()} == {
        k: [(z, off) for z, _, off in v] for k, v in h["zookeeper_offset_writes"].items()}
    assert sorted((g, z) for z, _, _, g, kind, _ in ops if kind == "ids") == sorted(
        (s["group_id"], s["state_zxid"]) for s in h["zookeeper_states"])
    for s in h["zookeeper_states"]:
        if s["next_zxid"] is None:
            continue
        owners = {}
        for z, op, path, g, kind, value in ops:
            if g == s["group_id"] and kind == "owners" and z < s["next_zxid"]:
                key = (path.split("/")[4], path.split("/")[5])
                owners[key] = None if op == "delete" else value
        for p in h["past_not_ok"]:
            if (p["group_id"], p["state_zxid"]) == (s["group_id"], s["state_zxid"]):
                name = str(p["partition"]) if p.get("broker_id") is None else f"{p['broker_id']}-{p['partition']}"
                assert owners.get((p["topic"], name)) == p["observed_owner"], p
    assert any(p["status"] == "wrong_owner" for p in h["past_not_ok"])


# --- Kafka segments -------------------------------------------------------------------------


def _batches(path: Path):
    """(byte position, batch) of a segment, with kafka-python's batch readers."""
    from kafka.record.default_records import DefaultRecordBatch
    from kafka.record.legacy_records import LegacyRecordBatch

    buf = path.read_bytes()
    pos = 0
    while pos < len(buf):
        (length,) = struct.unpack_from(">i", buf, pos + 8)
        piece = buf[pos : pos + 12 + length]
        magic = piece[16]
        yield pos, (DefaultRecordBatch(piece) if magic == 2 else LegacyRecordBatch(piece, magic))
        pos += 12 + length
    assert pos == len(buf)


def _decode_offsets_partition(files: list[Path]):
    """Offset commits, group records, control records and CRC failures of one partition."""
    from kafka.protocol.old.types import Int16

    from testkit.segments import (
        GROUP_METADATA_KEY,
        OFFSET_COMMIT_KEY,
        OFFSET_COMMIT_VALUE,
    )

    commits, groups, controls, bad = [], [], 0, []
    open_txn: dict[int, list[dict]] = defaultdict(list)
    for f in files:
        for pos, b in _batches(f):
            if not b.validate_crc():
                bad.append((f, pos))
                continue
            if b.magic == 2 and b.is_control_batch:
                for rec in b:
                    controls += 1
                    for c in open_txn.pop(b.producer_id, []):
                        c["txn"] = "committed" if rec.commit else "aborted"
                continue
            txn = b.magic == 2 and b.is_transactional
            for rec in b:
                key = io.BytesIO(rec.key)
                kind = Int16.decode(key)
                if kind in (0, 1):
                    group, topic, partition = OFFSET_COMMIT_KEY.decode(key)
                    offset = None
                    if rec.value is not None:
                        value = io.BytesIO(rec.value)
                        offset = OFFSET_COMMIT_VALUE[Int16.decode(value)].decode(value)[0]
                    c = dict(
                        group=group,
                        topic=topic,
                        partition=partition,
                        offset=offset,
                        log_offset=rec.offset,
                        txn="pending" if txn else None,
                    )
                    commits.append(c)
                    if txn:
                        open_txn[b.producer_id].append(c)
                elif kind == 2:
                    groups.append(GROUP_METADATA_KEY.decode(key)[0])
    return commits, groups, controls, bad


def test_consumer_offsets_segments_hold_the_manifest_figures(manifest):
    expected = manifest["expected"]
    by_partition = defaultdict(list)
    for name in manifest["kafka"]["offsets_files"]:
        by_partition[name.split("/")[0]].append(LOGS / name)
    assert sorted(p.name for p in LOGS.glob("__consumer_offsets-*")) == sorted(by_partition)
    commits, group_records, controls, bad = [], 0, 0, []
    for part, files in by_partition.items():
        c, g, n, b = _decode_offsets_partition(sorted(files))
        commits += c
        group_records += len(g)
        controls += n
        bad += b
        for group in set(g) | {x["group"] for x in c}:  # every group sits in its hash partition
            assert f"__consumer_offsets-{manifest['kafka']['offsets_partition_of_group'][group]}" == part
    assert len(commits) == expected["offset_commit_records"]
    assert sum(c["offset"] is None for c in commits) == expected["offset_commit_tombstones"]
    assert {s: sum(c["txn"] == s for c in commits) for s in ("committed", "aborted", "pending")} == expected[
        "transactional_commits"
    ]
    assert group_records == expected["group_metadata_records"]
    assert controls == expected["control_records"]
    q = manifest["quarantine"]
    assert [(f.relative_to(LOGS).as_posix(), pos) for f, pos in bad] == [(q[0]["file"], q[0]["byte_offset"])]
    assert expected["quarantined"] == len(bad) == 1

    # regressions: effective commits (no aborted/pending) lower than the previous one in log order
    prev, regressions = {}, []
    for c in sorted(commits, key=lambda c: (c["group"], c["topic"], c["partition"], c["log_offset"])):
        if c["txn"] in ("aborted", "pending"):
            continue
        key = (c["group"], c["topic"], c["partition"])
        if c["offset"] is None:
            prev.pop(key, None)
            continue
        if key in prev and c["offset"] < prev[key]:
            regressions.append((*key, c["log_offset"], prev[key], c["offset"]))
        prev[key] = c["offset"]
    assert regressions == [
        (
            r["group_id"],
            r["topic"],
            r["partition"],
            r["log_offset"],
            r["previous_committed_offset"],
            r["committed_offset"],
        )
        for r in manifest["offset_regressions"]
    ]
    assert len(regressions) == expected["offset_regressions"] == 1
    # the aborted commit is lower than the commit before it: it must not count
    aborted = [c for c in commits if c["txn"] == "aborted"]
    assert aborted and all(
        c["offset"]
        < max(
            x["offset"]
            for x in commits
            if x["group"] == c["group"]
            and x["topic"] == c["topic"]
            and x["partition"] == c["partition"]
            and x["log_offset"] < c["log_offset"]
        )
        for c in aborted
    )


def test_data_topic_segments_give_the_manifest_log_ends(manifest):
    topics = manifest["kafka"]["data_topics"]
    dirs = {p.name for p in LOGS.iterdir() if p.is_dir() and not p.name.startswith("__consumer_offsets-")}
    assert dirs == set(topics)
    for name, t in topics.items():
        files = sorted((LOGS / name).glob("*.log"))
        assert [f.name for f in files] == t["segments"]
        batches = [b for f in files for _, b in _batches(f)]
        assert all(b.validate_crc() for b in batches)
        assert int(files[0].stem) == batches[0].base_offset == t["log_start_offset"]
        for f in files:  # a segment is named by its first offset
            assert int(f.stem) == next(_batches(f))[1].base_offset
        assert batches[-1].base_offset + batches[-1].last_offset_delta + 1 == t["log_end_offset"]
        assert max(b.max_timestamp for b in batches) == t["max_timestamp"]
        assert sum(len(list(b)) for b in batches) == t["records"]
    # the log dir's log-start-offset-checkpoint (Kafka's CheckpointFile text: version, count,
    # "topic partition offset"): only partitions whose log start is past their first segment
    lines = (LOGS / "log-start-offset-checkpoint").read_text().splitlines()
    assert lines[:2] == ["0", str(len(lines) - 2)]
    moved = {f"{t}-{p}": int(o) for t, p, o in (x.split() for x in lines[2:])}
    key = "checkpoint_log_start_offset"
    assert moved == {n: t[key] for n, t in topics.items() if key in t}
    assert moved and all(o > topics[n]["log_start_offset"] for n, o in moved.items())


# --- the KRaft cluster ----------------------------------------------------------------------


def test_kraft_cluster_files_hold_the_manifest_figures(manifest):
    """The metadata log and snapshot, and the KIP-848 ``__consumer_offsets`` segments, read with
    kafka-python: the files, the snapshot's header/footer control records, the record counts."""
    kraft = manifest["kraft"]
    meta = DEMO / "data" / kraft["metadata_dir"]
    d = meta / "__cluster_metadata-0"
    assert {f"{d.name}/{f.name}": f.stat().st_size for f in d.iterdir()} == kraft["metadata"]["files"]
    assert f"cluster.id={kraft['cluster_id']}" in (meta / "meta.properties").read_text().splitlines()
    snapshot = d / kraft["metadata"]["snapshot"]
    end = int(snapshot.name.split("-")[0])
    batches = [b for _, b in _batches(snapshot)]
    assert all(b.validate_crc() for b in batches)
    control_types = [struct.unpack(">hh", r.key)[1] for b in batches if b.is_control_batch for r in b]
    assert control_types == [3, 4]  # header, footer
    assert batches[0].is_control_batch and batches[-1].is_control_batch
    assert sum(len(list(b)) for b in batches[1:-1]) == kraft["metadata"]["snapshot_records"]
    segments = sorted(d.glob("*.log"))
    assert [int(f.stem) for f in segments] == [0, end]  # the log continues where the snapshot ends
    last = [b for _, b in _batches(segments[-1])][-1]
    assert last.base_offset + last.last_offset_delta == kraft["metadata"]["end_offset"]

    logs = DEMO / "data" / kraft["log_dir"]
    commits = group_records = 0
    for name in kraft["offsets_files"]:
        for _, b in _batches(logs / name):
            assert b.validate_crc()
            for rec in b:
                kind = struct.unpack_from(">h", rec.key)[0]
                commits += kind in (0, 1)
                group_records += kind in (3, 4, 5, 6, 7, 8)
    assert commits == kraft["expected"]["offset_commit_records"]
    assert group_records == kraft["expected"]["kip848_group_records"]
    assert sorted(p.name for p in logs.iterdir() if not p.name.startswith("__")) == sorted(
        f"{t}-{p}" for t, v in kraft["topics"].items() for p in range(v["partitions"])
    )
