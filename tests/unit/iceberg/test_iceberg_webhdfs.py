"""An ``hdfs://`` warehouse on the Python side: where WebHDFS is looked for, the FileIO pyiceberg
is given, and the one line kaudit exits with when the namenode's WebHDFS does not answer or is
not WebHDFS (a real HTTP server on loopback that serves something else). The minicluster cases
(reads and writes through WebHDFS, the whole pipeline) are in
``tests/integration/test_iceberg_remote.py``."""

from __future__ import annotations

import http.server
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from pipelines.errors import InputError
from pipelines.warehouse.iceberg import webhdfs
from pipelines.warehouse.warehouse import open_warehouse
from testkit.zk_server import free_port

REPO = Path(__file__).resolve().parents[3]
DEMO_ZK = REPO / "pipelines" / "demo" / "data" / "zookeeper"


def test_the_address_from_the_environment_or_the_uri():
    env = {"KAUDIT_WEBHDFS": "https://nn.example:50470/", "HADOOP_USER_NAME": "audit"}
    assert webhdfs.settings("hdfs://nn:8020/wh", env) == {
        "py-io-impl": "pipelines.warehouse.iceberg.webhdfs.WebHdfsFileIO",
        "webhdfs.url": "https://nn.example:50470", "webhdfs.user": "audit"}
    derived = webhdfs.settings("hdfs://nn.example:8020/wh", {"KAUDIT_WEBHDFS_PORT": "50070", "HADOOP_USER_NAME": "a"})
    assert derived["webhdfs.url"] == "http://nn.example:50070"
    assert webhdfs.settings("hdfs://nn.example:8020/wh", {"HADOOP_USER_NAME": "a"})["webhdfs.url"] == \
        "http://nn.example:9870"


def test_the_catalog_of_an_hdfs_warehouse_names_the_webhdfs_file_io(tmp_path, monkeypatch):
    monkeypatch.setenv("KAUDIT_WEBHDFS", "http://127.0.0.1:1")
    wh = open_warehouse("hdfs://127.0.0.1:8020/kaudit/", str(tmp_path / "c.db"), tmp_path / "local")
    assert wh.catalog_config.location == "hdfs://127.0.0.1:8020/kaudit"
    props = wh.catalog_config.pyiceberg_properties()
    assert props["py-io-impl"] == webhdfs.IO_IMPL and props["webhdfs.url"] == "http://127.0.0.1:1"
    io = webhdfs.WebHdfsFileIO(props)
    fs = io.get_fs("hdfs")
    assert (fs.url, fs.user) == ("http://127.0.0.1:1/webhdfs/v1", props["webhdfs.user"])
    # Spark: Hadoop's own HDFS client (Iceberg's default HadoopFileIO), no S3 settings
    conf = wh.catalog_config.spark_conf([])
    assert conf["spark.sql.catalog.kaudit.warehouse"] == "hdfs://127.0.0.1:8020/kaudit"
    assert "spark.sql.catalog.kaudit.io-impl" not in conf


class _NotWebHdfs(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 - http.server's name
        self.send_response(404)
        self.end_headers()
        self.wfile.write(b"<html>not here</html>")

    def log_message(self, *args):
        pass


@pytest.fixture
def not_webhdfs():
    server = http.server.HTTPServer(("127.0.0.1", 0), _NotWebHdfs)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_check_names_the_warehouse(not_webhdfs):
    closed = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(InputError, match=r"^--warehouse hdfs://h:1/wh: the namenode's WebHDFS at .* does not answer"):
        webhdfs.check("hdfs://h:1/wh", {webhdfs.URL: closed, webhdfs.USER: "u"})
    with pytest.raises(InputError, match=r"is not WebHDFS \(HTTP 404"):
        webhdfs.check("hdfs://h:1/wh", {webhdfs.URL: not_webhdfs, webhdfs.USER: "u"})


def test_an_unreachable_namenode_exits_1_with_one_line(tmp_path):
    """The command line's answer (``check``'s other answer, not WebHDFS, is the same one line)."""
    location = f"hdfs://127.0.0.1:{free_port()}/kaudit"
    done = subprocess.run(
        [sys.executable, "-m", "pipelines", "--run-id", "h1", "--warehouse", location, "--warehouse-local",
         str(tmp_path / "local"), "--catalog", str(tmp_path / "c.db"),
         "extract", "zk-snapshot", str(DEMO_ZK)],
        capture_output=True, text=True, timeout=120, cwd=REPO,
        env={**os.environ, "KAUDIT_WEBHDFS": f"http://127.0.0.1:{free_port()}"})
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"kaudit: --warehouse {location}: the namenode's WebHDFS at ") and "does not answer" in last
