"""Real Apache Kafka brokers for tests, on 127.0.0.1 and free ports.

``KafkaCluster(bundle, root, brokers=N)`` writes one ``server.properties`` per node under
``root/node-<id>/`` and runs ``java -cp <the bundle's jars> kafka.Kafka server.properties``:

- KRaft (the default): node 1 is broker and controller (a static quorum of one voter), nodes
  2..N are brokers; every node's storage is formatted first with the release's
  ``kafka.tools.StorageTool`` and one cluster id. The metadata log is in
  ``node-1/metadata/__cluster_metadata-0`` (``metadata_dir``), apart from the data logs.
- ZooKeeper mode (``zookeeper="127.0.0.1:PORT"``): ``broker.id``/``zookeeper.connect``, nothing
  to format.

Each node's data logs are ``node-<id>/logs`` (``log_dirs``). The JVM logs into
``node-<id>/server.log`` (Log4j 1 and 2 configs are both written; a release reads the one it
knows), its stdout/stderr into ``node-<id>/console.log``. ``start`` returns once every broker
logged that it started and accepts connections. ``stop(node)`` is SIGTERM and a wait (a clean
shutdown: the broker flushes and writes its checkpoints), ``kill(node)`` is SIGKILL;
``restart(node)`` starts a stopped node again with the same files. ``close`` stops what is still
running; so does an ``atexit`` hook for every process this module started, and the
``kafka_cluster`` context manager.
"""

from __future__ import annotations

import atexit
import base64
import contextlib
import hashlib
import os
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from testkit.cluster.maven import CACHE, classpath
from testkit.cluster.versions import BUNDLES

JVM_OPTS = (
    "-Xms128m", "-Xmx768m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData",
    "-Djava.awt.headless=true", "-Dzookeeper.admin.enableServer=false",
)
# brokers sized for a test: few coordinator partitions, no waiting before a first rebalance
SMALL = {
    "num.partitions": "1",
    "auto.create.topics.enable": "false",
    "offsets.topic.num.partitions": "3",
    "offsets.topic.replication.factor": "1",
    "transaction.state.log.num.partitions": "2",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "group.initial.rebalance.delay.ms": "0",
    "log.segment.bytes": str(8 << 20),
    "num.network.threads": "2",
    "num.io.threads": "2",
    "num.recovery.threads.per.data.dir": "1",
    "background.threads": "2",
    "log.cleaner.threads": "1",
}
_STARTED = ("Kafka Server started", "started (kafka.server.KafkaServer)")

_LOG4J1 = """log4j.rootLogger={level}, file
log4j.appender.file=org.apache.log4j.FileAppender
log4j.appender.file.File={log}
log4j.appender.file.layout=org.apache.log4j.PatternLayout
log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.kafka.server.KafkaServer=INFO
log4j.logger.kafka.server.KafkaRaftServer=INFO
log4j.logger.kafka.Kafka=INFO
"""
_LOG4J2 = """Configuration:
  Appenders:
    File:
      name: file
      fileName: "{log}"
      PatternLayout:
        pattern: "[%d] %p %m (%c)%n"
  Loggers:
    Root:
      level: {level}
      AppenderRef:
        ref: file
    Logger:
      - name: kafka.server.KafkaRaftServer
        level: INFO
      - name: kafka.server.KafkaServer
        level: INFO
      - name: kafka.Kafka
        level: INFO
"""

_LIVE: set[subprocess.Popen] = set()


@atexit.register
def _kill_leftovers() -> None:
    for proc in list(_LIVE):
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    _LIVE.clear()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def new_cluster_id() -> str:
    """A cluster id as ``kafka-storage random-uuid`` prints one (a UUID, URL-safe base64)."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode()[:22]


class BrokerError(RuntimeError):
    """A broker did not start (the message holds the end of its log)."""


@dataclass
class Node:
    node_id: int
    home: Path
    port: int
    controller_port: int | None  # KRaft controller listener (node 1 only)
    proc: subprocess.Popen | None = None
    log_mark: int = 0  # size of server.log when the process started: its "started" line is after

    @property
    def log_dir(self) -> Path:
        return self.home / "logs"

    @property
    def properties(self) -> Path:
        return self.home / "server.properties"

    @property
    def server_log(self) -> Path:
        return self.home / "server.log"

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None


@dataclass
class KafkaCluster:
    bundle: str  # a name of testkit.cluster.versions.BUNDLES, e.g. "kafka-4.1.1"
    root: Path
    brokers: int = 1
    zookeeper: str | None = None  # "host:port[/chroot]": ZooKeeper mode; None: KRaft
    config: dict[str, str] = field(default_factory=dict)  # extra broker properties (every node)
    java: str = "java"  # a JDK's bin/java for releases that need another one
    log_level: str = "WARN"
    start_timeout: float = 90.0
    cluster_id: str = field(default_factory=new_cluster_id)
    nodes: list[Node] = field(init=False, default_factory=list)

    def __post_init__(self) -> None:
        self.root = Path(self.root)
        self.classpath = classpath(self.bundle, BUNDLES[self.bundle])
        for i in range(1, self.brokers + 1):
            ctl = free_port() if self.kraft and i == 1 else None
            self.nodes.append(Node(i, self.root / f"node-{i}", free_port(), ctl))

    # --- what tests read ---------------------------------------------------------------------
    @property
    def kraft(self) -> bool:
        return self.zookeeper is None

    @property
    def version(self) -> str:
        return self.bundle.split("-", 1)[1]

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{n.port}" for n in self.nodes)

    @property
    def log_dirs(self) -> list[Path]:
        return [n.log_dir for n in self.nodes]

    @property
    def metadata_dir(self) -> Path:
        """The KRaft metadata log (``__cluster_metadata-0``) of the controller."""
        if not self.kraft:
            raise ValueError("a ZooKeeper-mode cluster has no metadata log")
        return self.nodes[0].home / "metadata" / "__cluster_metadata-0"

    def node(self, node_id: int) -> Node:
        return self.nodes[node_id - 1]

    # --- files ---------------------------------------------------------------------------------
    def _properties(self, n: Node) -> dict[str, str]:
        props = dict(SMALL)
        props["log.dirs"] = str(n.log_dir)
        if self.kraft:
            ctl = self.nodes[0]
            props.update({
                "node.id": str(n.node_id),
                "process.roles": "broker,controller" if n.controller_port else "broker",
                "controller.quorum.voters": f"{ctl.node_id}@127.0.0.1:{ctl.controller_port}",
                "controller.listener.names": "CONTROLLER",
                "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
                "inter.broker.listener.name": "PLAINTEXT",
                "listeners": f"PLAINTEXT://127.0.0.1:{n.port}"
                + (f",CONTROLLER://127.0.0.1:{n.controller_port}" if n.controller_port else ""),
                "advertised.listeners": f"PLAINTEXT://127.0.0.1:{n.port}",
                "broker.session.timeout.ms": "4000",
                "broker.heartbeat.interval.ms": "500",
            })
            if n.controller_port:
                props["metadata.log.dir"] = str(n.home / "metadata")
        else:
            props.update({
                "broker.id": str(n.node_id),
                "zookeeper.connect": self.zookeeper,
                "listeners": f"PLAINTEXT://127.0.0.1:{n.port}",
                "advertised.listeners": f"PLAINTEXT://127.0.0.1:{n.port}",
                "zookeeper.session.timeout.ms": "6000",
            })
        props.update(self.config)
        return props

    def _write(self, n: Node) -> None:
        n.home.mkdir(parents=True, exist_ok=True)
        text = "".join(f"{k}={v}\n" for k, v in self._properties(n).items())
        n.properties.write_text(text)
        (n.home / "log4j.properties").write_text(_LOG4J1.format(level=self.log_level, log=n.server_log))
        (n.home / "log4j2.yaml").write_text(_LOG4J2.format(level=self.log_level, log=n.server_log))

    def _jvm(self, n: Node, main: str, *args: str) -> list[str]:
        return [
            self.java, *JVM_OPTS,
            f"-Dlog4j.configuration=file:{n.home / 'log4j.properties'}",
            f"-Dlog4j2.configurationFile={n.home / 'log4j2.yaml'}",
            f"-Dkafka.logs.dir={n.home}",
            "-cp", self.classpath, main, *args,
        ]

    def _format(self) -> None:
        """Every node's storage, formatted at once (one StorageTool JVM per node)."""
        procs = [
            (n, subprocess.Popen(
                self._jvm(n, "kafka.tools.StorageTool", "format", "-t", self.cluster_id, "-c", str(n.properties)),
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True))
            for n in self.nodes
        ]
        failed = []
        for n, proc in procs:
            out, _ = proc.communicate(timeout=180)
            if proc.returncode != 0:
                failed.append(f"node {n.node_id} ({proc.returncode}): {out.strip()[-2000:]}")
        if failed:
            raise BrokerError(f"{self.bundle}: StorageTool format failed: " + "\n".join(failed))

    # --- processes -----------------------------------------------------------------------------
    def start(self) -> KafkaCluster:
        for n in self.nodes:
            self._write(n)
        if self.kraft:
            self._format()
        for n in self.nodes:
            self._spawn(n)
        for n in self.nodes:
            self._await(n)
        return self

    def _spawn(self, n: Node) -> None:
        console = open(n.home / "console.log", "ab")  # noqa: SIM115 - the child keeps it
        n.proc = subprocess.Popen(
            self._jvm(n, "kafka.Kafka", str(n.properties)),
            stdout=console, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
        )
        console.close()
        _LIVE.add(n.proc)
        n.log_mark = n.server_log.stat().st_size if n.server_log.exists() else 0

    def _await(self, n: Node) -> None:
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if n.proc.poll() is not None:
                raise BrokerError(f"{self.bundle}: node {n.node_id} exited with {n.proc.returncode}:\n{self.tail(n)}")
            text = n.server_log.read_text(errors="replace")[n.log_mark:] if n.server_log.exists() else ""
            if any(s in text for s in _STARTED) and _accepts(n.port):
                return
            time.sleep(0.2)
        raise BrokerError(
            f"{self.bundle}: node {n.node_id} did not start in {self.start_timeout:.0f} s:\n{self.tail(n)}")

    def tail(self, n: Node, lines: int = 30) -> str:
        out = []
        for f in (n.server_log, n.home / "console.log"):
            if f.exists():
                out += f.read_text(errors="replace").splitlines()[-lines:]
        return "\n".join(out)

    def stop(self, node_id: int | None = None, timeout: float = 60.0) -> None:
        """SIGTERM and wait (a clean shutdown); SIGKILL if it takes longer than ``timeout``."""
        for n in self._targets(node_id):
            if n.running:
                n.proc.send_signal(signal.SIGTERM)
        for n in self._targets(node_id):
            if n.proc is not None:
                try:
                    n.proc.wait(timeout)
                except subprocess.TimeoutExpired:
                    os.killpg(n.proc.pid, signal.SIGKILL)
                    n.proc.wait()
                _LIVE.discard(n.proc)

    def kill(self, node_id: int | None = None) -> None:
        """SIGKILL: the broker writes nothing more (no checkpoints, no clean-shutdown marker)."""
        for n in self._targets(node_id):
            if n.running:
                os.killpg(n.proc.pid, signal.SIGKILL)
            if n.proc is not None:
                n.proc.wait()
                _LIVE.discard(n.proc)

    def restart(self, node_id: int) -> None:
        n = self.node(node_id)
        if n.running:
            raise RuntimeError(f"node {node_id} is running")
        self._spawn(n)
        self._await(n)

    def close(self) -> None:
        # brokers first, the controller last: a broker's controlled shutdown asks the controller
        self.stop(None if len(self.nodes) == 1 else 0)
        self.stop(1)

    def _targets(self, node_id: int | None) -> list[Node]:
        if node_id is None:
            return self.nodes
        if node_id == 0:  # every node but the controller
            return self.nodes[1:]
        return [self.node(node_id)]


def _accepts(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


@contextlib.contextmanager
def kafka_cluster(bundle: str, root: Path, **kw) -> Iterator[KafkaCluster]:
    """A started cluster, stopped (SIGTERM, then SIGKILL) when the block ends, however it ends."""
    cluster = KafkaCluster(bundle, root, **kw)
    try:
        yield cluster.start()
    finally:
        cluster.close()


class JavacError(RuntimeError):
    """javac could not compile a scenario program against a release's jars."""


def compiled(cluster: KafkaCluster, source: Path, main: str, extra_classpath: str = "") -> Path:
    """The directory of ``<main>.class`` compiled from the one Java file ``source`` against
    ``cluster``'s release (and ``extra_classpath``), kept in the jar cache
    (``<bundle>/<main>-<source hash>/``): compiled once per release and source. A concurrent
    compile of the same source is harmless."""
    out = CACHE / cluster.bundle / f"{main}-{hashlib.sha256(source.read_bytes()).hexdigest()[:12]}"
    if (out / f"{main}.class").exists():
        return out
    tmp = out.with_name(f"{out.name}.{os.getpid()}.tmp")
    tmp.mkdir(parents=True, exist_ok=True)
    javac = str(Path(cluster.java).with_name("javac")) if "/" in cluster.java else "javac"
    cp = f"{cluster.classpath}:{extra_classpath}" if extra_classpath else cluster.classpath
    proc = subprocess.run([javac, "-nowarn", "-encoding", "UTF-8", "-cp", cp, "-d", str(tmp), str(source)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise JavacError(f"javac {source.name} against {cluster.bundle}:\n{proc.stderr[-3000:]}")
    try:
        tmp.rename(out)
    except OSError:  # another process compiled it first
        pass
    return out
