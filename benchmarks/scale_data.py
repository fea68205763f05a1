"""The generated cluster of ``bench_scale.py``: a Kafka ``__consumer_offsets`` log and a
ZooKeeper data dir, in the formats the brokers and servers write, built with numpy (no Python
object per record: 100M offset commits in minutes).

Kafka (``write_offsets``): ``--groups`` classic consumer groups (``group-NNNNN``), group ``g``
consuming ``topic-(g % topics)`` of ``partitions`` partitions with two members under the range
assignor (member ``m0-...`` owns the first half, ``m1-...`` the second). Each group's
``__consumer_offsets`` partition is Kafka's (``abs(hashCode) % 50``); it starts with the group's
metadata record (``GroupMetadataValue`` v3, its members, subscriptions and assignments, written
by ``testkit.segments``' kafka-python encoder), then ``rounds`` commit rounds: in each, each
member commits its partitions in one batch (``OffsetCommitKey`` v1, ``OffsetCommitValue`` v3).
Round ``r`` commits offset ``(r + 1) * 1000 + partition`` at ``T0 + r`` minutes. Batches are
uncompressed v2 record batches, as a broker writes the offsets topic (its
``offsets.topic.compression.codec`` is none by default), rolled into 100 MiB segments
(``offsets.topic.segment.bytes``).

Batch (``DefaultRecordBatch``, big-endian; Kafka's ``RecordBatch`` docs)::

    batch  := baseOffset i64, batchLength i32, partitionLeaderEpoch i32, magic i8 (2),
              crc u32 (CRC-32C of attributes..end), attributes i16, lastOffsetDelta i32,
              baseTimestamp i64, maxTimestamp i64, producerId i64, producerEpoch i16,
              baseSequence i32, recordCount i32, record*
    record := length varint, attributes i8, timestampDelta varint, offsetDelta varint,
              keyLength varint, key, valueLength varint, value, headerCount varint

Every field of a commit record has a fixed width here (names zero-padded, offset deltas below
64), so a batch is a numpy structured record and a partition's log one array.

ZooKeeper (``write_zookeeper``): a ZooKeeper-era tree of ``zk_groups`` groups
(``/consumers/zg-NNNNN``: four registered consumers subscribed to ``zt-(g % zk_topics)``,
``partitions`` owner and offset znodes each, owners by the range assignor but for every
``WRONG_EVERY``-th owner znode, which names ``ghost-0``), the brokers and every topic of both
eras under ``/brokers/topics``: about 1M znodes with the defaults. Its history: the snapshot
of the created tree, a txn log of ``zk_rounds`` rounds of ``setData`` of every offset znode,
and the snapshot after them (format: ``pipelines.zookeeper.snapshot`` and ``.txnlog``; no
digests, as 3.4/3.5 write them; zxids of epoch 1).
"""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass
from pathlib import Path

import crc32c
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from testkit.segments import (
    assignment,
    batch,
    group_metadata_key,
    group_metadata_value,
    group_partition,
    segment_name,
    subscription,
)

T0_MS = 1_704_067_200_000  # 2024-01-01T00:00:00Z
ROUND_MS = 60_000
OFFSETS_PARTITIONS = 50
SEGMENT_BYTES = 100 << 20
WRONG_EVERY = 1000  # every 1000th ZooKeeper owner znode names a consumer that is not registered
EPOCH = 1 << 32  # zxids of epoch 1


@dataclass(frozen=True)
class Shape:
    """The cluster: Kafka groups and topics, ZooKeeper groups and topics, commit rounds."""

    groups: int = 10_000
    topics: int = 1_000
    partitions: int = 100  # per topic, both eras
    rounds: int = 1  # commit rounds: records = groups * partitions * rounds
    zk_groups: int = 4_800
    zk_topics: int = 480
    zk_consumers: int = 4
    zk_rounds: int = 2

    @property
    def records(self) -> int:
        return self.groups * self.partitions * self.rounds

    @classmethod
    def for_records(cls, records: int, **kw) -> Shape:
        base = cls(**kw)
        per_round = base.groups * base.partitions
        if records % per_round:
            raise ValueError(f"{records} records: a multiple of {per_round} (groups x partitions) expected")
        return cls(**{**kw, "rounds": records // per_round})

    def oracle(self) -> dict:
        """What the generator wrote, for a benchmark to check kaudit's rows against."""
        owners = self.zk_groups * self.partitions
        return {
            "offset_commits": self.records,
            "kafka_groups": self.groups,
            "kafka_expected_rows": self.groups * self.partitions,
            "zk_groups": self.zk_groups,
            "zk_owner_znodes": owners,
            "zk_wrong_owners": len(range(0, owners, WRONG_EVERY)),
            "zk_history_txns": self.zk_rounds * owners,
        }


def _name(prefix: str, ids: np.ndarray, width: int) -> pa.Array:
    """``prefix`` + zero-padded ``ids``, as an Arrow string array."""
    digits = pc.utf8_lpad(pa.array(ids).cast(pa.string()), width, "0")
    return pc.binary_join_element_wise(pa.scalar(prefix), digits, "")


def _group(g: int) -> str:
    return f"group-{g:05d}"


def _topic(t: int) -> str:
    return f"topic-{t:03d}"


# --- Kafka -----------------------------------------------------------------------------------

GROUP_W, TOPIC_W = len(_group(0)), len(_topic(0))
KEY_LEN = 2 + 2 + GROUP_W + 2 + TOPIC_W + 4
VALUE_LEN = 2 + 8 + 4 + 2 + 8
RECORD = np.dtype([
    ("length", "u1"), ("attributes", "u1"), ("ts_delta", "u1"), ("offset_delta", "u1"),
    ("key_length", "u1"), ("key_version", ">i2"), ("group_len", ">i2"), ("group", f"S{GROUP_W}"),
    ("topic_len", ">i2"), ("topic", f"S{TOPIC_W}"), ("partition", ">i4"),
    ("value_length", "u1"), ("value_version", ">i2"), ("offset", ">i8"), ("leader_epoch", ">i4"),
    ("metadata_len", ">i2"), ("commit_ts", ">i8"), ("headers", "u1"),
])
HEADER = np.dtype([
    ("base_offset", ">i8"), ("batch_length", ">i4"), ("leader_epoch", ">i4"), ("magic", "i1"),
    ("crc", ">u4"), ("attributes", ">i2"), ("last_offset_delta", ">i4"), ("base_ts", ">i8"),
    ("max_ts", ">i8"), ("producer_id", ">i8"), ("producer_epoch", ">i2"), ("base_sequence", ">i4"),
    ("count", ">i4"),
])
CRC_FROM = 21  # the CRC covers attributes .. end


def _zigzag(n: int) -> int:
    z = (n << 1) ^ (n >> 63)
    if z >= 128:
        raise ValueError(f"{n} needs a varint of more than one byte")
    return z


def _members(shape: Shape) -> int:
    return 2


def _commit_batches(shape: Shape, groups: np.ndarray, first_offset: int) -> np.ndarray:
    """Every commit batch of ``groups`` (one ``__consumer_offsets`` partition), rounds outer,
    then groups, then members; offsets from ``first_offset``."""
    per = shape.partitions // _members(shape)
    batch_dtype = np.dtype([("h", HEADER), ("r", RECORD, (per,))])
    n = shape.rounds * len(groups) * _members(shape)
    b = np.zeros(n, batch_dtype)
    rnd = np.repeat(np.arange(shape.rounds), len(groups) * _members(shape))
    grp = np.tile(np.repeat(groups, _members(shape)), shape.rounds)
    member = np.tile(np.arange(_members(shape)), shape.rounds * len(groups))
    ts = T0_MS + rnd * ROUND_MS + grp  # one ms apart per group within a round
    h = b["h"]
    h["base_offset"] = first_offset + np.arange(n, dtype=np.int64) * per
    h["batch_length"] = batch_dtype.itemsize - 12
    h["magic"] = 2
    h["last_offset_delta"] = per - 1
    h["base_ts"] = ts
    h["max_ts"] = ts
    h["producer_id"] = -1
    h["producer_epoch"] = -1
    h["base_sequence"] = -1
    h["count"] = per
    r = b["r"]
    r["length"] = _zigzag(RECORD.itemsize - 1)
    r["offset_delta"] = [_zigzag(i) for i in range(per)]
    r["key_length"] = _zigzag(KEY_LEN)
    r["key_version"] = 1
    r["group_len"] = GROUP_W
    names = np.array([_group(g) for g in groups], f"S{GROUP_W}")
    topics = np.array([_topic(g % shape.topics) for g in groups], f"S{TOPIC_W}")
    r["group"] = np.tile(np.repeat(names, _members(shape)), shape.rounds)[:, None]
    r["topic_len"] = TOPIC_W
    r["topic"] = np.tile(np.repeat(topics, _members(shape)), shape.rounds)[:, None]
    part = member[:, None] * per + np.arange(per)[None, :]
    r["partition"] = part
    r["value_length"] = _zigzag(VALUE_LEN)
    r["value_version"] = 3
    r["offset"] = (rnd[:, None] + 1) * 1000 + part
    r["leader_epoch"] = 0
    r["commit_ts"] = ts[:, None]
    raw = b.view(np.uint8).reshape(n, batch_dtype.itemsize)
    h["crc"] = [crc32c.crc32c(row[CRC_FROM:]) for row in raw]
    return b


def _metadata_batch(shape: Shape, g: int, offset: int) -> bytes:
    group, topic = _group(g), _topic(g % shape.topics)
    per = shape.partitions // _members(shape)
    members = [
        {"member_id": f"m{m}-{group}", "client_id": f"client-{m}", "client_host": f"/10.0.0.{m + 1}",
         "subscription": subscription([topic]),
         "assignment": assignment({topic: list(range(m * per, (m + 1) * per))})}
        for m in range(_members(shape))
    ]
    value = group_metadata_value(generation=1, protocol="range", leader=members[0]["member_id"],
                                 state_ts=T0_MS - 1000, members=members)
    return batch([(group_metadata_key(group), value)], base_offset=offset, timestamp_ms=T0_MS - 1000)


def write_offsets(shape: Shape, out: Path) -> int:
    """The ``__consumer_offsets-N`` directories under ``out``; returns the commit records."""
    if shape.partitions % _members(shape) or shape.partitions // _members(shape) > 64:
        raise ValueError("partitions: an even number up to 128")
    owner = np.array([group_partition(_group(g), OFFSETS_PARTITIONS) for g in range(shape.groups)])
    total = 0
    for p in range(OFFSETS_PARTITIONS):
        groups = np.flatnonzero(owner == p)
        part = out / f"__consumer_offsets-{p}"
        part.mkdir(parents=True, exist_ok=True)
        head = b"".join(_metadata_batch(shape, int(g), i) for i, g in enumerate(groups))
        commits = _commit_batches(shape, groups, len(groups))
        _write_rolled(part, head, commits)
        total += len(commits) * (shape.partitions // _members(shape))
    return total


def _write_rolled(part: Path, head: bytes, commits: np.ndarray) -> None:
    """``head`` and the batches ``commits`` in segments of at most ``SEGMENT_BYTES``."""
    per_segment = max(1, (SEGMENT_BYTES - len(head)) // commits.dtype.itemsize)
    first = commits[:per_segment]
    with (part / segment_name(0)).open("wb") as f:
        f.write(head)
        first.tofile(f)
    rest = max(1, SEGMENT_BYTES // commits.dtype.itemsize)
    for i in range(per_segment, len(commits), rest):
        chunk = commits[i:i + rest]
        chunk.tofile(part / segment_name(int(chunk["h"]["base_offset"][0])))


# --- ZooKeeper -------------------------------------------------------------------------------


def _pack(columns: list) -> tuple[np.ndarray, np.ndarray]:
    """Rows of jute fields, concatenated: each column a numpy integer array (written big-endian
    at its width) or an Arrow binary/string array (``int length`` or -1 for null, then the
    bytes). Returns (bytes, row start offsets)."""
    n = len(columns[0])
    widths = []
    for c in columns:
        if isinstance(c, np.ndarray):
            widths.append(np.full(n, c.dtype.itemsize, np.int64))
        else:
            widths.append(4 + pc.fill_null(pc.binary_length(c), 0).to_numpy().astype(np.int64))
    starts = np.zeros(n + 1, np.int64)
    np.cumsum(np.sum(widths, axis=0), out=starts[1:])
    out = np.empty(starts[-1], np.uint8)
    pos = starts[:-1].copy()
    for c in columns:
        if not isinstance(c, np.ndarray):
            lengths = pc.binary_length(c).to_numpy(zero_copy_only=False)
            lengths = np.where(np.isnan(lengths), -1, lengths).astype(np.int32) if c.null_count else lengths
            _fixed(out, pos, np.asarray(lengths, np.int32))
            c = c.cast(pa.large_binary())
            offs = np.frombuffer(c.buffers()[1], np.int64)[c.offset:c.offset + n + 1]
            data = np.frombuffer(c.buffers()[2], np.uint8) if c.buffers()[2] is not None else np.empty(0, np.uint8)
            lens = offs[1:] - offs[:-1]
            inner = np.arange(lens.sum()) - np.repeat(np.cumsum(lens) - lens, lens)
            out[np.repeat(pos, lens) + inner] = data[np.repeat(offs[:-1], lens) + inner]
            pos += lens
        else:
            _fixed(out, pos, c)
    return out, starts


def _fixed(out: np.ndarray, pos: np.ndarray, values: np.ndarray) -> None:
    w = values.dtype.itemsize
    raw = values.astype(values.dtype.newbyteorder(">")).view(np.uint8).reshape(-1, w)
    out[pos[:, None] + np.arange(w)] = raw
    pos += w


@dataclass
class Nodes:
    path: pa.Array
    data: pa.Array
    parent: np.ndarray  # index of the parent node (-1 for the root)


def _tree(shape: Shape) -> Nodes:
    """Every znode of the tree, parents before children."""
    paths: list[pa.Array] = []
    datas: list[pa.Array] = []
    parents: list[np.ndarray] = []
    count = [0]

    def add(path, data, parent) -> np.ndarray:
        path = pa.array(path, pa.string()) if isinstance(path, list) else path
        n = len(path)
        data = pa.array(data, pa.binary()) if isinstance(data, list) else data.cast(pa.binary())
        paths.append(path.cast(pa.string()))
        datas.append(data)
        parents.append(np.broadcast_to(np.asarray(parent, np.int64), (n,)).copy())
        ids = np.arange(count[0], count[0] + n)
        count[0] += n
        return ids

    root, = add([""], [b""], -1)
    add(["/zookeeper"], [b""], root)
    brokers, = add(["/brokers"], [None], root)
    ids, topics = add(["/brokers/ids", "/brokers/topics"], [None, None], brokers)
    add([f"/brokers/ids/{b}" for b in (1, 2, 3)],
        [json.dumps({"host": f"b{b}", "port": 9092, "endpoints": [f"PLAINTEXT://b{b}:9092"], "version": 4}).encode()
         for b in (1, 2, 3)], ids)
    layout = json.dumps({"version": 1, "partitions": {str(p): [p % 3 + 1] for p in range(shape.partitions)}})
    names = pa.concat_arrays([_name("topic-", np.arange(shape.topics), 3), _name("zt-", np.arange(shape.zk_topics), 3)])
    add(pc.binary_join_element_wise("/brokers/topics/", names, ""), pa.array([layout.encode()] * len(names)), topics)
    consumers, = add(["/consumers"], [None], root)
    g = np.arange(shape.zk_groups)
    gname = _name("zg-", g, 5)
    gpath = pc.binary_join_element_wise("/consumers/", gname, "")
    gids = add(gpath, pa.nulls(len(g), pa.binary()), consumers)
    kids = {k: add(pc.binary_join_element_wise(gpath, f"/{k}", ""), pa.nulls(len(g), pa.binary()), gids)
            for k in ("ids", "owners", "offsets")}
    topic = _name("zt-", g % shape.zk_topics, 3)
    c = np.arange(shape.zk_consumers)
    cg = np.repeat(g, len(c))
    consumer = pc.binary_join_element_wise(pc.take(gname, cg), _name("_c", np.tile(c, len(g)), 1), "")
    sub = pc.binary_join_element_wise('{"version":1,"subscription":{"', pc.take(topic, cg),
                                      '":1},"pattern":"static","timestamp":"1704067200000"}', "")
    add(pc.binary_join_element_wise(pc.take(gpath, cg), "/ids/", consumer, ""), sub, kids["ids"][cg])
    for k in ("owners", "offsets"):
        tids = add(pc.binary_join_element_wise(gpath, f"/{k}/", topic, ""), pa.nulls(len(g), pa.binary()), kids[k])
        p = np.arange(shape.partitions)
        pg = np.repeat(g, len(p))
        pp = np.tile(p, len(g))
        path = pc.binary_join_element_wise(pc.take(gpath, pg), f"/{k}/", pc.take(topic, pg), "/",
                                           pa.array(pp).cast(pa.string()), "")
        if k == "owners":
            per = -(-shape.partitions // shape.zk_consumers)
            owner = pc.binary_join_element_wise(pc.take(gname, pg), _name("_c", pp // per, 1), "-0", "")
            wrong = np.zeros(len(pp), bool)
            wrong[::WRONG_EVERY] = True
            data = pc.if_else(pa.array(wrong), "ghost-0", owner)
        else:
            data = pa.array(pp).cast(pa.string())
        add(path, data, tids[pg])
    return Nodes(pa.concat_arrays(paths), pa.concat_arrays(datas), np.concatenate(parents))


def _stat_columns(n: int, czxid, mzxid, ctime, mtime, version, cversion, pzxid) -> list[np.ndarray]:
    return [np.full(n, -1, np.int64), czxid.astype(np.int64), mzxid.astype(np.int64), ctime.astype(np.int64),
            mtime.astype(np.int64), version.astype(np.int32), cversion.astype(np.int32), np.zeros(n, np.int32),
            np.zeros(n, np.int64), pzxid.astype(np.int64)]


def _ustring(s: bytes) -> bytes:
    return len(s).to_bytes(4, "big") + s


def _snapshot(path: Path, nodes: Nodes, stats: list[np.ndarray]) -> None:
    body, _ = _pack([nodes.path, nodes.data, *stats])
    head = b"ZKSN" + (2).to_bytes(4, "big") + (0).to_bytes(8, "big") + (0).to_bytes(4, "big") + (0).to_bytes(4, "big")
    tail = _ustring(b"/")
    adler = zlib.adler32(body, zlib.adler32(head))
    adler = zlib.adler32(tail, adler)
    with path.open("wb") as f:
        f.write(head)
        body.tofile(f)
        f.write(tail + adler.to_bytes(8, "big") + _ustring(b"/"))


def write_zookeeper(shape: Shape, out: Path) -> dict:
    """A data dir (``out/version-2``: two snapshots and the txn log between them)."""
    nodes = _tree(shape)
    n = len(nodes.path)
    v2 = out / "version-2"
    v2.mkdir(parents=True, exist_ok=True)
    # creation: node i by txn i (the root and /zookeeper exist before any txn)
    czxid = np.where(np.arange(n) < 2, 0, EPOCH + np.arange(n) - 1)
    ctime = np.where(czxid > 0, T0_MS - 3_600_000 + (czxid - EPOCH), 0)
    has_parent = nodes.parent >= 0
    children = np.bincount(nodes.parent[has_parent], minlength=n)
    pzxid = czxid.copy()
    np.maximum.at(pzxid, nodes.parent[has_parent], czxid[has_parent])
    created = EPOCH + n - 2
    zero = np.zeros(n, np.int64)
    _snapshot(v2 / f"snapshot.{created:x}", nodes,
              _stat_columns(n, czxid, czxid, ctime, ctime, zero, children, pzxid))

    # history: zk_rounds rounds of setData of every offset znode
    offsets = np.flatnonzero(pc.match_substring(nodes.path, "/offsets/zt-").to_numpy(zero_copy_only=False)
                             & (nodes.parent >= 0))
    offsets = offsets[np.isin(nodes.parent[offsets], offsets)]  # the leaves, not their topic dirs
    rounds = shape.zk_rounds
    k = len(offsets)
    target = np.tile(offsets, rounds)
    rnd = np.repeat(np.arange(rounds), k)
    zxid = created + 1 + np.arange(k * rounds)
    mtime = T0_MS + rnd * ROUND_MS + np.tile(np.arange(k), rounds) // 100
    value = pa.array((rnd + 1) * 1000).cast(pa.string())
    txns, starts = _pack([np.full(k * rounds, 0x1000, np.int64), np.ones(k * rounds, np.int32), zxid.astype(np.int64),
                          mtime.astype(np.int64), np.full(k * rounds, 5, np.int32),
                          pc.take(nodes.path, pa.array(target)), value.cast(pa.binary()),
                          (rnd + 1).astype(np.int32)])
    lens = np.diff(starts)
    crcs = np.fromiter((zlib.adler32(txns[a:b]) for a, b in zip(starts[:-1], starts[1:], strict=True)),
                       np.int64, count=len(lens))
    frames, _ = _pack([crcs, lens.astype(np.int32)])
    # entry := crc, length, txn, 'B': interleave the frames, txns and end bytes
    entry = np.empty(len(txns) + len(frames) + len(lens), np.uint8)
    at = starts[:-1] + np.arange(len(lens)) * 13
    entry[(at[:, None] + np.arange(12)).ravel()] = frames
    txn_pos = np.repeat(at + 12 - starts[:-1], lens) + np.arange(len(txns))
    entry[txn_pos] = txns
    entry[at + 12 + lens] = ord("B")
    with (v2 / f"log.{created + 1:x}").open("wb") as f:
        f.write(b"ZKLG" + (2).to_bytes(4, "big") + (0).to_bytes(8, "big"))
        entry.tofile(f)
        f.write(bytes(64))

    # the tree after the history
    last = zxid[-k:] if rounds else czxid[offsets]
    mzxid, mt, version = czxid.copy(), ctime.copy(), zero.copy()
    data = nodes.data
    if rounds:
        mzxid[offsets], mt[offsets], version[offsets] = last, mtime[-k:], rounds
        is_offset = np.zeros(n, bool)
        is_offset[offsets] = True
        data = pc.if_else(pa.array(is_offset), pa.scalar(str(rounds * 1000).encode()), nodes.data)
    final = Nodes(nodes.path, data, nodes.parent)
    _snapshot(v2 / f"snapshot.{int(zxid[-1]) if rounds else created:x}", final,
              _stat_columns(n, czxid, mzxid, ctime, mt, version, children, pzxid))
    return {"znodes": n, "txns": k * rounds}


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description="Write the scale benchmark's generated cluster.")
    parser.add_argument("--records", type=int, required=True, help="offset commits (a multiple of 1M)")
    parser.add_argument("--kafka", type=Path, help="write the __consumer_offsets-N dirs here")
    parser.add_argument("--zk", type=Path, help="write the ZooKeeper data dir here")
    args = parser.parse_args()
    shape = Shape.for_records(args.records)
    for where, write in ((args.kafka, write_offsets), (args.zk, write_zookeeper)):
        if where is not None:
            result = write(shape, where)
            (where / "READY").write_text(json.dumps({"result": result, "oracle": shape.oracle()}))
            print(f"{where}: {result}", flush=True)


if __name__ == "__main__":
    main()
