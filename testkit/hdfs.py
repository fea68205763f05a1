"""A real HDFS for tests: Hadoop's MiniDFSCluster (``hadoop-hdfs``'s tests jar, Maven Central)
with one namenode and one datanode in one JVM, on 127.0.0.1 and free ports.

The namenode serves ``hdfs://127.0.0.1:<rpc_port>`` (Spark's Hadoop client) and, on its HTTP
port, the WebHDFS REST API (kaudit's pyiceberg side, ``pipelines/warehouse/iceberg/webhdfs.py``).
The program is ``testkit/cluster/java/HdfsMini.java``, run by Java's source launcher against
the jars of the Maven bundle ``hdfs-<version>`` of ``testkit/cluster/versions.py`` (the Hadoop
release whose client jars Spark ships), fetched once into the jar cache
(``python -m testkit.cluster.maven hdfs-<version>``; ``make matrix`` fetches every bundle).
Its blocks and name directory are under the fixture's directory.

    with MiniHdfs(tmp_path / "hdfs").start() as hdfs:
        hdfs.uri("kaudit")      # hdfs://127.0.0.1:PORT/kaudit
        hdfs.env()              # KAUDIT_WEBHDFS (the namenode's HTTP address), HADOOP_USER_NAME
"""

from __future__ import annotations

import getpass
import json
import os
import signal
import subprocess
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from testkit.cluster.maven import classpath
from testkit.cluster.versions import BUNDLES, HADOOP
from testkit.servers import await_server
from testkit.zk_server import free_port

BUNDLE = f"hdfs-{HADOOP}"
PROGRAM = Path(__file__).resolve().parent / "cluster" / "java" / "HdfsMini.java"
LOG4J = Path(__file__).resolve().with_name("hdfs-log4j.properties")  # warnings only, to its log


@dataclass
class MiniHdfs:
    root: Path
    rpc_port: int = 0
    http_port: int = 0
    user: str = field(default_factory=getpass.getuser)
    proc: subprocess.Popen | None = None

    def uri(self, path: str = "") -> str:
        return f"hdfs://127.0.0.1:{self.rpc_port}/{path.lstrip('/')}"

    @property
    def webhdfs(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    def env(self) -> dict[str, str]:
        """What kaudit's WebHDFS client reads: the namenode's HTTP address and the user."""
        return {"KAUDIT_WEBHDFS": self.webhdfs, "HADOOP_USER_NAME": self.user}

    def start(self, timeout: float = 120) -> MiniHdfs:
        self.root.mkdir(parents=True, exist_ok=True)
        self.rpc_port = self.rpc_port or free_port()
        self.http_port = self.http_port or free_port()
        cp = classpath(BUNDLE, BUNDLES[BUNDLE])
        log = self.root / "hdfs.log"
        self.proc = subprocess.Popen(
            ["java", "-Xmx384m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
             # WebHDFS's JSON goes through JAXB (Jersey 1), which defines classes by reflection
             "--add-opens=java.base/java.lang=ALL-UNNAMED",
             f"-Dlog4j.configuration={LOG4J.as_uri()}", "-cp", cp, str(PROGRAM),
             str(self.root / "base"), str(self.rpc_port), str(self.http_port)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log.open("ab"),
            start_new_session=True, text=True,
        )
        try:
            await_server(self.proc, self._answers, f"the HDFS minicluster on {self.webhdfs}", log, timeout, poll=0.5)
        except RuntimeError:
            self.stop()
            raise
        return self

    def _answers(self) -> bool:
        """The namenode answers WebHDFS and a datanode has registered (writes need one)."""
        try:
            url = f"{self.webhdfs}/webhdfs/v1/?op=GETFILESTATUS&user.name={self.user}"
            with urllib.request.urlopen(url, timeout=2):
                pass
            jmx = f"{self.webhdfs}/jmx?qry=Hadoop:service=NameNode,name=FSNamesystemState"
            with urllib.request.urlopen(jmx, timeout=2) as resp:
                beans = json.load(resp).get("beans", [])
        except (OSError, ValueError, urllib.error.HTTPError):
            return False
        return bool(beans) and beans[0].get("NumLiveDataNodes", 0) >= 1

    def list(self, path: str) -> list[str]:
        """The names in directory ``path``, as the namenode lists them (WebHDFS LISTSTATUS)."""
        url = f"{self.webhdfs}/webhdfs/v1/{path.lstrip('/')}?op=LISTSTATUS&user.name={self.user}"
        with urllib.request.urlopen(url, timeout=10) as resp:
            return sorted(s["pathSuffix"] for s in json.load(resp)["FileStatuses"]["FileStatus"])

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            try:
                self.proc.stdin.close()  # the program shuts the cluster down and exits
                self.proc.wait(30)
            except (OSError, subprocess.TimeoutExpired):
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.proc = None

    def __enter__(self) -> MiniHdfs:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

