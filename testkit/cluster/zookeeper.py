"""A real ZooKeeper server of any release, run from its Maven jars (:mod:`.versions`).

``ZooKeeperServerMain`` with a generated ``zoo.cfg`` on 127.0.0.1 and a free port, the data dir
the release itself writes (``<root>/data/version-2/``), its log in ``<root>/server.log``. The
four-letter words (but ``srvr``, which no release lets go) and the admin server are off; the
server is ready once ``srvr`` says it serves. Same interface as
:class:`testkit.zk_server.ZkServer` (a subclass: ``hosts``, ``data_dir``, ``start``, ``stop``), so
a test can use either.

Transaction logs are preallocated in ``pre_alloc_kb`` steps (16 KiB by default, not
ZooKeeper's 64 MiB), as in :mod:`testkit.zk_server`; ``snap_count`` sets how many txns a log
holds before the server rolls it and writes a snapshot (ZooKeeper rolls at a random count
between half of it and it).

``run_class`` runs another class of the same jars (``SnapshotFormatter``, ``LogFormatter``):
ZooKeeper's own reading of its files.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from testkit.cluster.maven import classpath
from testkit.cluster.versions import BUNDLES, ZOOKEEPER
from testkit.zk_server import ZkServer, free_port

JAVA = os.environ.get("KAUDIT_TEST_JAVA", "java")

# log4j 1.2 (3.4-3.7) and logback (3.8+): the server logs to stdout, which goes to server.log
_LOG4J = """log4j.rootLogger=INFO, CONSOLE
log4j.appender.CONSOLE=org.apache.log4j.ConsoleAppender
log4j.appender.CONSOLE.layout=org.apache.log4j.PatternLayout
log4j.appender.CONSOLE.layout.ConversionPattern=%d{ISO8601} %-5p [%t] %c{1}: %m%n
"""
_LOGBACK = """<configuration>
  <appender name="CONSOLE" class="ch.qos.logback.core.ConsoleAppender">
    <encoder><pattern>%d{ISO8601} %-5level [%thread] %logger{0}: %msg%n</pattern></encoder>
  </appender>
  <root level="INFO"><appender-ref ref="CONSOLE"/></root>
</configuration>
"""


def bundle(release: str) -> str:
    """The classpath of ``zookeeper-<release>`` (fetched on first use)."""
    name = f"zookeeper-{release}"
    return classpath(name, BUNDLES[name])


def _log_flags(root: Path) -> list[str]:
    (root / "log4j.properties").write_text(_LOG4J)
    (root / "logback.xml").write_text(_LOGBACK)
    return [f"-Dlog4j.configuration=file:{root / 'log4j.properties'}",
            f"-Dlogback.configurationFile={root / 'logback.xml'}"]


def run_class(release: str, main: str, *args: str, timeout: float = 120) -> str:
    """stdout of ``java -cp <release's jars> main args`` (raises on a non-zero exit)."""
    proc = subprocess.run([JAVA, "-cp", bundle(release), "-Dlog4j.configuration=none", main, *args],
                          capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"{main} {' '.join(args)} exited {proc.returncode}: {proc.stderr[-2000:]}")
    return proc.stdout


def _serving(port: int) -> bool:
    """``srvr`` answers with the server's version once it serves requests."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
            s.sendall(b"srvr")
            return s.recv(64).startswith(b"Zookeeper version")
    except OSError:
        return False


@dataclass
class ZooKeeper(ZkServer):
    release: str = ZOOKEEPER[-1]
    snap_count: int = 100_000
    pre_alloc_kb: int = 16

    @property
    def log_file(self) -> Path:
        return self.root / "server.log"

    def start(self, timeout: float = 60) -> ZooKeeper:
        cp = bundle(self.release)
        self.root.mkdir(parents=True, exist_ok=True)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        cfg = self.root / "zoo.cfg"
        cfg.write_text(
            "tickTime=2000\n"
            f"dataDir={self.data_dir}\n"
            f"clientPort={self.port}\n"
            "clientPortAddress=127.0.0.1\n"
            "admin.enableServer=false\n"
            "4lw.commands.whitelist=srvr\n"
            "autopurge.purgeInterval=0\n" + self.extra_conf
        )
        flags = [f"-Dzookeeper.snapCount={self.snap_count}", f"-Dzookeeper.preAllocSize={self.pre_alloc_kb}",
                 "-Dzookeeper.extendedTypesEnabled=true", "-Dzookeeper.admin.enableServer=false",
                 "-Xmx256m", "-XX:+UseSerialGC", *_log_flags(self.root)]
        with open(self.log_file, "ab") as log:
            self.proc = subprocess.Popen(
                [JAVA, *flags, "-cp", cp, "org.apache.zookeeper.server.ZooKeeperServerMain", str(cfg)],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"ZooKeeper {self.release} exited {self.proc.returncode}: "
                                   f"{self.log_file.read_text(errors='replace')[-3000:]}")
            if _serving(self.port):
                return self
            time.sleep(0.2)
        self.stop(kill=True)
        raise RuntimeError(f"ZooKeeper {self.release} did not accept a session in {timeout} s")

    def stop(self, kill: bool = False) -> None:
        """SIGTERM and wait (SIGKILL after 20 s), or SIGKILL at once with ``kill``."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL if kill else signal.SIGTERM)
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
            except ProcessLookupError:
                self.proc.wait()
        self.proc = None


def start_zookeeper(release: str, root: Path, **kwargs) -> ZooKeeper:
    return ZooKeeper(Path(root), free_port(), release=release, **kwargs).start()
