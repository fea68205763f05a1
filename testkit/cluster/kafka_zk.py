"""Kafka's old high-level consumer (``ZookeeperConsumerConnector``, Kafka <= 1.x) run by the release
itself: ``java/zk_consumer.java`` compiled against the release's jars, one JVM per consumer.

``OldConsumer(cluster, zk, group, consumer_id, topic, **props)`` starts one (it registers in
``/consumers/<group>/ids/<group>_<consumer_id>`` and rebalances before ``start`` returns);
``consume(n)`` returns ``{partition: next offset}`` of what it read, ``commit()`` commits (to
ZooKeeper, or to Kafka and ZooKeeper with ``offsets.storage=kafka`` and
``dual.commit.enabled=true``), ``close()`` shuts it down (its session closes: ZooKeeper deletes
its id and owners), ``kill()`` is ``kill -9`` (its nodes stay until the session expires).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

from testkit.cluster.kafka import JVM_OPTS, KafkaCluster, compiled

SOURCE = Path(__file__).with_name("java") / "zk_consumer.java"
_LOG4J = ("log4j.rootLogger=WARN, file\nlog4j.appender.file=org.apache.log4j.FileAppender\n"
          "log4j.appender.file.File={log}\nlog4j.appender.file.layout=org.apache.log4j.PatternLayout\n"
          "log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n\n"
          "log4j.logger.kafka.consumer.ZookeeperConsumerConnector=INFO\n")


class ConsumerError(RuntimeError):
    """The consumer answered a command with an error, or exited."""


class OldConsumer:
    def __init__(self, cluster: KafkaCluster, zk: str, group: str, consumer_id: str, topic: str, **props: str):
        self.group, self.consumer_id, self.topic = group, consumer_id, topic
        home = cluster.root / "clients"
        home.mkdir(parents=True, exist_ok=True)
        log4j = home / f"{group}-{consumer_id}.log4j.properties"
        log4j.write_text(_LOG4J.format(log=home / f"{group}-{consumer_id}.log"))
        classes = compiled(cluster, SOURCE, "zk_consumer")
        cmd = [cluster.java, *JVM_OPTS, "-Xmx192m", f"-Dlog4j.configuration=file:{log4j}",
               "-cp", f"{cluster.classpath}:{classes}", "zk_consumer", zk, group, consumer_id, topic,
               *(f"{k.replace('_', '.')}={v}" for k, v in props.items())]
        self.stderr = open(home / f"{group}-{consumer_id}.stderr", "ab")  # noqa: SIM115 - the child keeps it
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr,
                                     text=True, start_new_session=True)

    @property
    def registry_id(self) -> str:
        """The consumer's id in ZooKeeper (``<group>_<consumer.id>``); its threads own as ``<id>-0``."""
        return f"{self.group}_{self.consumer_id}"

    def start(self) -> OldConsumer:
        line = self.proc.stdout.readline().strip()
        if line != "ready":
            self.kill()
            raise ConsumerError(f"{self.registry_id} did not start: {line!r}")
        return self

    def _ask(self, command: str) -> list[str]:
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline().strip()
        if not line.startswith("ok"):
            raise ConsumerError(f"{self.registry_id} {command}: {line or f'exited {self.proc.wait()}'}")
        return line.split()[1:]

    def consume(self, n: int, timeout: float = 60) -> dict[int, int]:
        """Read ``n`` messages: ``{partition: offset after the last one read}`` (raises if they do
        not all come within ``timeout`` s)."""
        read: dict[int, int] = {}
        got, deadline = 0, time.monotonic() + timeout
        while got < n:
            if time.monotonic() > deadline:
                raise ConsumerError(f"{self.registry_id} read {got} of {n} messages in {timeout} s")
            words = self._ask(f"consume {n - got}")
            got += int(words[0])
            read.update({int(p): int(o) for p, o in (w.split(":") for w in words[1:])})
        return read

    def commit(self) -> None:
        self._ask("commit")

    def close(self) -> None:
        if self.proc.poll() is None:
            self._ask("close")
            self.proc.wait(30)
        self.stderr.close()

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        self.stderr.close()
