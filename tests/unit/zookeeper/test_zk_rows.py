"""The client-visible form (what kazoo returns) built from persisted nodes, and the live
walker's option handling (no server needed)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from pipelines.errors import UsageError
from pipelines.zookeeper.live import _hosts_with_chroot, parse_auth
from pipelines.zookeeper.rows import client_rows

CONTAINER = -(1 << 63)
TTL = -(1 << 56) | 60_000
SESSION = 0x1000_0000_0000_0042

NODES = [  # path, data, persisted cversion, ephemeral owner
    ("", b"", 3, 0),
    ("/zookeeper", b"", 0, 0),
    ("/zookeeper/quota", b"", 0, 0),
    ("/kafka", b"k", 5, 0),
    ("/kafka/c", None, 1, CONTAINER),
    ("/kafka/c/x", b"", 0, SESSION),
    ("/kafka/t", b"ttl", 0, TTL),
    ("/other", b"o", 0, 0),
]


def _rows(chroot=None, nodes=NODES):
    n = len(nodes)
    stats = {k: np.arange(n, dtype=np.int64) for k in ("czxid", "mzxid", "pzxid", "ctime", "mtime")}
    stats.update({k: np.zeros(n, np.int32) for k in ("version", "aversion")})
    stats["cversion"] = np.array([c for _, _, c, _ in nodes], np.int32)
    stats["ephemeral_owner"] = np.array([o for *_, o in nodes], np.int64)
    paths = pa.array([p for p, *_ in nodes], pa.large_string())
    data = pa.array([d for _, d, *_ in nodes], pa.large_binary())
    return client_rows(paths, data, stats, source="snapshot", chroot=chroot)


def test_client_view_of_persisted_stats():
    rows, orphans = _rows()
    assert len(orphans) == 0
    by = {r["path"]: r for r in rows.to_pylist()}
    assert list(by) == ["/", "/kafka", "/kafka/c", "/kafka/c/x", "/kafka/t", "/other"]  # sorted, no /zookeeper
    assert by["/"]["num_children"] == 3 and by["/"]["cversion"] == 2 * 3 - 3  # zookeeper, kafka, other
    assert by["/kafka"]["num_children"] == 2 and by["/kafka"]["cversion"] == 2 * 5 - 2
    assert by["/kafka/c"]["ephemeral_owner"] == 0 and by["/kafka/t"]["ephemeral_owner"] == 0
    assert by["/kafka/c/x"]["ephemeral_owner"] == SESSION
    assert by["/kafka/c"]["data"] is None and by["/kafka/c"]["data_length"] == 0
    assert by["/kafka/t"]["data_length"] == 3
    assert rows.schema.field("ctime").type == pa.timestamp("ms", tz="UTC")


def test_chroot_reroots_and_keeps_only_the_subtree():
    rows, _ = _rows("/kafka/")
    assert rows["path"].to_pylist() == ["/", "/c", "/c/x", "/t"]
    assert rows["data"][0].as_py() == b"k" and rows["num_children"][0].as_py() == 2


def test_orphans_are_reported():
    _, orphans = _rows(nodes=NODES + [("/missing/child", b"", 0, 0)])
    assert orphans.tolist() == [len(NODES)]


def test_a_tree_of_only_the_root():
    rows, orphans = _rows(nodes=NODES[:1])
    assert rows["path"].to_pylist() == ["/"] and len(orphans) == 0


def test_snapshot_spans_give_the_rows_of_decoded_columns(real_fixtures):
    """Rows taken straight from the snapshot bytes (path/data spans, stat records decoded per
    batch) equal the rows of the same nodes as Arrow arrays and numpy columns, with and
    without a chroot, batch by batch."""
    from pipelines.zookeeper.rows import client_order
    from pipelines.zookeeper.snapshot import parse

    nodes = parse(real_fixtures / "zookeeper/invalidsnap/version-2/snapshot.272").nodes
    columns = nodes.stats()
    for chroot in (None, "/1"):
        spans, orphans = client_order(nodes.path_spans(), nodes.data_spans(), nodes.stat_records(),
                                      source="snapshot", chroot=chroot)
        plain, _ = client_rows(nodes.paths(), nodes.data(), columns, source="snapshot", chroot=chroot)
        assert len(orphans) == 0 and plain.num_rows > 10
        batches = [spans.take(start, start + 7) for start in range(0, spans.num_rows, 7)]
        assert pa.concat_tables(batches).equals(plain)
        assert plain["path"].to_pylist() == sorted(plain["path"].to_pylist())


def test_path_sort_resumes_batch_by_batch():
    """The path sort stops as soon as the rows asked for are final and resumes from there:
    groups of every size (insertion and radix sorted), long shared prefixes, prefixes of
    other paths, bytes below '/'."""
    from pipelines.zookeeper.rows import PathSort

    rng = np.random.default_rng(11)
    names = [f"/brokers/topics/t{rng.integers(0, 40)}/partitions/{rng.integers(0, 3000)}" for _ in range(3000)]
    names += [f"/c/{'x' * int(rng.integers(0, 20))}{rng.choice(['', '-', '.', '/'])}" for _ in range(500)]
    names += ["".join(rng.choice(list("/ab-.é"), int(rng.integers(1, 12)))) for _ in range(500)]
    paths = pa.array(names, pa.large_string())
    expected = sorted(name.encode() for name in names)
    sort = PathSort(paths)
    done = 0
    for step in rng.integers(1, 400, 100):
        head = sort.head(done + int(step))
        assert [paths[int(i)].as_py().encode() for i in head] == expected[: len(head)]
        done = len(head)
    assert [names[i].encode() for i in sort.head(len(names))] == expected
    assert sorted(sort.order.tolist()) == list(range(len(names)))


def test_live_options():
    assert parse_auth("digest:user:pa:ss") == [("digest", "user:pa:ss")]
    assert parse_auth(None) == []
    with pytest.raises(UsageError) as err:
        parse_auth("digestonly-secret")
    assert "secret" not in str(err.value)
    assert _hosts_with_chroot("h1:2181,h2:2181", "/kafka/") == ("h1:2181,h2:2181/kafka", "/kafka")
    assert _hosts_with_chroot("h1:2181/kafka", None) == ("h1:2181/kafka", "/kafka")
    assert _hosts_with_chroot("h1:2181", "/") == ("h1:2181", "")


def test_path_sort_and_take_match_pyarrow():
    """The numba path sort orders bytes as pyarrow's sort does (shared 8-byte prefixes,
    prefixes of other paths, '-' and '.' below '/', multi-byte UTF-8, equal paths), and the
    gathered string/binary columns keep their nulls."""
    from pipelines.zookeeper.rows import path_order, sort_by_path, take_rows

    rng = np.random.default_rng(7)
    names = ["/", "/a", "/a-b", "/a.b", "/a/b", "/a/b/c", "/a0", "/brokers/topics/t", "/brokers/topics/t-1",
             "/brokers/topics/t/partitions/0", "/brokers/topics/t/partitions/10", "/brokers/topics/t/partitions/2",
             "/é", "/éa", "/z", "/zz" * 20, "/zz" * 20 + "/x", "/brokers/topics/t"]
    names += [f"/bench/g{rng.integers(0, 50):05d}/n{j:04d}" for j in range(300)]
    paths = pa.array(names, pa.large_string())
    data = pa.array([None if i % 7 == 0 else f"v{i}".encode() * (i % 5) for i in range(len(names))], pa.large_binary())
    table = pa.table({"path": paths, "data": data, "n": pa.array(np.arange(len(names)), pa.int64()),
                      "s": pa.array([f"s{i}" for i in range(len(names))], pa.string())})
    shuffled = take_rows(table, rng.permutation(len(names)))
    assert shuffled.sort_by("n").equals(table)
    ours = sort_by_path(shuffled)
    theirs = shuffled.take(pa.compute.sort_indices(shuffled, sort_keys=[("path", "ascending"), ("n", "ascending")]))
    assert ours["path"].equals(theirs["path"])
    # equal paths may come in either order: compare the rows as sets per path
    assert sorted(ours.to_pylist(), key=lambda r: (r["path"], r["n"])) == theirs.to_pylist()
    assert ours["data"].null_count == data.null_count
    sub = path_order(shuffled["path"], np.array([3, 1, 2], np.int64))
    assert sorted(sub.tolist()) == [1, 2, 3]
    assert [shuffled["path"][int(i)].as_py() for i in sub] == sorted(shuffled["path"][i].as_py() for i in (1, 2, 3))
    assert sort_by_path(table.slice(0, 0)).num_rows == 0


def test_path_sort_ahead_on_its_own_thread():
    """Sorting ahead on another thread (what the writer does) hands out the same final
    prefixes, whatever the head asked for while the thread is still sorting."""
    from pipelines.zookeeper.rows import PathSort

    rng = np.random.default_rng(12)
    names = [f"/g{rng.integers(0, 300)}/n{rng.integers(0, 100_000)}/{'x' * int(rng.integers(0, 12))}"
             for _ in range(20_000)]
    paths = pa.array(names, pa.large_string())
    expected = sorted(name.encode() for name in names)
    sort = PathSort(paths)
    sort.ahead(int(rng.integers(50, 500)))
    done = 0
    while done < len(names):
        head = sort.head(done + int(rng.integers(1, 3000)))
        assert [names[int(i)].encode() for i in head[done:]] == expected[done : len(head)]
        done = len(head)
    assert done == len(names) and sorted(sort.order.tolist()) == list(range(len(names)))
