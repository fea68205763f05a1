"""The snapshot file mapped while ``kaudit`` starts (``pipelines.zookeeper.prefetch``, started by
``pipelines.startup``): a parse from the prefetched map equals a parse from the file; damage is
still found; a file changed since it was mapped, or one the command line does not name, is read
as it is now."""

from __future__ import annotations

import gzip
import os
import shutil
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest

from pipelines.zookeeper import prefetch
from pipelines.zookeeper.errors import SealMismatch
from pipelines.zookeeper.snapshot import parse, read_bytes

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture
def snap(real_fixtures, tmp_path) -> Path:
    f = tmp_path / "snapshot.3"
    shutil.copyfile(real_fixtures / "zookeeper/digest-3.6/version-2/snapshot.3", f)
    return f


@pytest.fixture
def fresh(monkeypatch):
    """No prefetch from an earlier test (``prefetch.start`` makes one per process)."""
    monkeypatch.setattr(prefetch, "_current", None)


@pytest.mark.parametrize(("args", "expected"), [
    (["extract", "zk-snapshot", "F"], "F"),
    (["--warehouse", "W", "--quiet", "extract", "zk-snapshot", "F", "--run-id", "R"], "F"),
    (["--warehouse=W", "extract", "zk-snapshot", "--chroot", "/a", "F"], "F"),
    (["extract", "zk-snapshot", "D", "--at-zxid=7"], None),  # a data dir's snapshot: chosen by the target
    (["extract", "zk-snapshot", "--", "-F"], "-F"),
    (["extract", "zk-snapshot", "F", "--help"], None),
    (["extract", "zk-snapshot", "--unknown", "F"], None),
    (["extract", "zk", "--hosts", "h:1"], None),
    (["extract", "zk-snapshot"], None),
    (["extract", "zk-snapshot", "F", "G"], None),
    (["--warehouse", "extract", "zk-snapshot", "F"], None),  # --warehouse took "extract"
])
def test_the_file_is_the_one_the_command_names(args, expected):
    assert prefetch.snapshot_argument(args) == expected


def _same(a, b) -> None:
    assert (a.dbid, a.zxid, a.digest, a.computed_digest, a.digest_verified, a.last_processed_zxid) == \
        (b.dbid, b.zxid, b.digest, b.computed_digest, b.digest_verified, b.last_processed_zxid)
    assert np.array_equal(a.sessions, b.sessions) and a.acls == b.acls
    for name in ("path_off", "path_len", "data_off", "data_len", "stat_off", "digest"):
        assert np.array_equal(getattr(a.nodes, name), getattr(b.nodes, name)), name
    assert np.array_equal(a.nodes.buf, b.nodes.buf)


def test_a_parse_of_the_prefetched_map_equals_one_of_the_file(snap, fresh):
    plain = parse(snap)
    prefetch.start(["--quiet", "extract", "zk-snapshot", str(snap)])
    buf, compression = read_bytes(snap)
    assert buf is prefetch._current.map and compression == "none"
    prefetch._current.join()
    end = len(buf) - 40  # within the last TAIL bytes: from the prefix computed on the thread
    assert prefetch.sealed(buf, end) == zlib.adler32(bytes(buf[:end]))
    assert prefetch.sealed(buf, 10) is None  # before the prefix: computed in full by the parse
    _same(parse(snap), plain)
    assert plain.digest_verified is True


def test_damage_is_found_in_the_prefetched_map(snap, fresh):
    raw = bytearray(snap.read_bytes())
    raw[len(raw) // 2] ^= 0x01  # inside some node's data or stat: only the seal tells
    snap.write_bytes(bytes(raw))
    with pytest.raises(SealMismatch) as plain:
        parse(snap)
    prefetch.start(["extract", "zk-snapshot", str(snap)])
    with pytest.raises(SealMismatch) as mapped:
        parse(snap)
    assert prefetch.mapped(snap) is not None and str(mapped.value) == str(plain.value)


def test_a_file_changed_after_it_was_mapped_is_read_again(snap, real_fixtures, tmp_path, fresh):
    prefetch.start(["extract", "zk-snapshot", str(snap)])
    assert prefetch.mapped(snap) is not None
    other = real_fixtures / "zookeeper/invalidsnap/version-2/snapshot.272"
    moved = tmp_path / "new"
    shutil.copyfile(other, moved)
    os.replace(moved, snap)  # another file (inode) under the same name
    assert prefetch.mapped(snap) is None
    assert len(parse(snap).nodes) == len(parse(other).nodes) == 628


def test_no_prefetch_of_what_is_not_an_uncompressed_snapshot(snap, tmp_path, fresh):
    gz = tmp_path / "snapshot.3.gz"
    gz.write_bytes(gzip.compress(snap.read_bytes()))
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # (opening it would wait for a writer)
    for path in (gz, tmp_path / "missing", fifo):
        prefetch.start(["extract", "zk-snapshot", str(path)])
        assert prefetch.mapped(path) is None
        prefetch._current = None
    _same(parse(gz), parse(snap))


def test_a_kaudit_process_starts_and_ends_as_set_up(snap):
    """In the ``kaudit`` process: BLAS single-threaded, no huge pages asked for numpy's arrays
    (unless the user's environment asks for them) and no garbage collection while the modules
    load, the snapshot prefetched; after ``ready()`` the environment and the collector are as
    they were. A process that only imports the CLI (pytest) is left alone."""
    code = (
        "import gc, os, sys\n"
        "sys.argv = [os.path.join('x', 'pipelines', '__main__.py'), 'extract', 'zk-snapshot', sys.argv[1]]\n"
        "from pipelines import cli, startup\n"
        "from numpy._core.multiarray import _get_madvise_hugepage\n"
        "from pipelines.zookeeper import prefetch\n"
        "assert os.environ['OPENBLAS_NUM_THREADS'] == '1' and not gc.isenabled()\n"
        "assert _get_madvise_hugepage() == (os.environ.get('HUGE') == '1')\n"
        "assert prefetch.mapped(sys.argv[3]) is not None\n"
        "startup.ready()\n"
        "assert os.environ.get('OPENBLAS_NUM_THREADS') == os.environ.get('BEFORE') and gc.isenabled()\n"
        "assert os.environ.get('NUMPY_MADVISE_HUGEPAGE') == os.environ.get('HUGE')\n"
    )
    for before, huge in ((None, None), ("3", "1"), (None, "0")):
        env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "NUMPY_MADVISE_HUGEPAGE")}
        env["PYTHONPATH"] = str(REPO)
        if before is not None:
            env["OPENBLAS_NUM_THREADS"] = env["BEFORE"] = before
        if huge is not None:
            env["NUMPY_MADVISE_HUGEPAGE"] = env["HUGE"] = huge
        done = subprocess.run([sys.executable, "-c", code, str(snap)], env=env, capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0, done.stderr
    import gc

    from pipelines import cli  # noqa: F401 - imported by this (pytest) process: nothing changed

    assert gc.isenabled()


def test_a_data_dir_has_its_newest_snapshot_prefetched(real_fixtures, tmp_path, fresh):
    """The snapshot the data dir's read starts from (the newest) is the one mapped; the read
    equals one without the prefetch. A data dir whose newest snapshot is compressed, or
    without snapshots, has none mapped."""
    from pipelines.zookeeper.extract import read_offline

    data = tmp_path / "data"
    shutil.copytree(real_fixtures / "zookeeper/digest-3.6", data, copy_function=shutil.copyfile)
    older = data / "version-2/snapshot.1"
    shutil.copyfile(real_fixtures / "zookeeper/invalidsnap/version-2/snapshot.0", older)
    plain, plain_res = read_offline(data)
    for arg in (data, data / "version-2"):
        prefetch.start(["extract", "zk-snapshot", str(arg)])
        assert prefetch.mapped(data / "version-2/snapshot.3") is not None
        assert prefetch.mapped(older) is None
        rows, res = read_offline(data)
        assert rows.equals(plain) and res.digest_verified is plain_res.digest_verified is True
        assert (res.snapshot, res.zxid, res.txns_applied) == \
            (plain_res.snapshot, plain_res.zxid, plain_res.txns_applied)
        prefetch._current = None
    (data / "version-2/snapshot.4.gz").write_bytes(gzip.compress((data / "version-2/snapshot.3").read_bytes()))
    empty = tmp_path / "empty"
    empty.mkdir()
    for arg in (data, empty):
        prefetch.start(["extract", "zk-snapshot", str(arg)])
        assert prefetch.mapped(data / "version-2/snapshot.3") is None
        prefetch._current = None
