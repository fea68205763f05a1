"""The scenario driver (``java/Driver.java``) run with the Java clients of the release under test.

``Driver(cluster)`` compiles the driver once per release (javac against the release's jars, into
``<jar cache>/<bundle>/Driver-<source hash>/``), starts it on the cluster's bootstrap servers and
sends it one request at a time: ``driver.do("create", topic="t", partitions=3)`` returns the
answer's ``result`` or raises ``DriverError`` with the client's exception. ``tool(...)`` runs one
of the release's own command-line classes (``ConsumerGroupCommand`` ...) from the same jars.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
from pathlib import Path

from testkit.cluster.kafka import JVM_OPTS, KafkaCluster, compiled

SOURCE = Path(__file__).with_name("java") / "Driver.java"
GROUP_COMMAND = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
_QUIET_LOG4J1 = "log4j.rootLogger=ERROR, file\nlog4j.appender.file=org.apache.log4j.FileAppender\n" \
    "log4j.appender.file.File={log}\nlog4j.appender.file.layout=org.apache.log4j.SimpleLayout\n"
_QUIET_LOG4J2 = "Configuration:\n  Appenders:\n    File:\n      name: file\n      fileName: \"{log}\"\n" \
    "      PatternLayout:\n        pattern: \"%d %p %m (%c)%n\"\n  Loggers:\n    Root:\n      level: ERROR\n" \
    "      AppenderRef:\n        ref: file\n"


class DriverError(RuntimeError):
    """The driver answered a request with an error (the client's exception)."""


def _client_logging(cluster: KafkaCluster, name: str) -> list[str]:
    home = cluster.root / "clients"
    home.mkdir(parents=True, exist_ok=True)
    log = home / f"{name}.log"
    (home / "log4j.properties").write_text(_QUIET_LOG4J1.format(log=log))
    (home / f"{name}-log4j2.yaml").write_text(_QUIET_LOG4J2.format(log=log))
    return [f"-Dlog4j.configuration=file:{home / 'log4j.properties'}",
            f"-Dlog4j2.configurationFile={home / f'{name}-log4j2.yaml'}"]


def scenario_answer(cluster: KafkaCluster, source: Path, main: str, args: list[str], *, name: str,
                    extra_classpath: str = "", stop_first: bool = True) -> dict:
    """Runs the scenario program ``main`` (the one Java file ``source``) on ``cluster`` and
    returns the JSON line it answers once it has done its work. With ``stop_first`` the cluster
    is stopped cleanly while the program still runs (its members stay in their groups), else
    after it; every JVM of the program is killed either way."""
    classes = compiled(cluster, source, main, extra_classpath)
    cp = ":".join(p for p in (cluster.classpath, extra_classpath, str(classes)) if p)
    cmd = [cluster.java, *JVM_OPTS, *_client_logging(cluster, name), "-cp", cp, main, cluster.bootstrap, *args]
    with open(cluster.root / "clients" / f"{name}.stderr", "ab") as err:
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, text=True,
                                start_new_session=True)
        try:
            line = proc.stdout.readline()
            if not line:
                raise DriverError(f"{main} exited {proc.wait()}: see {err.name}")
            answer = json.loads(line)
            if stop_first:
                cluster.stop()
        finally:
            with contextlib.suppress(ProcessLookupError):  # the program and any JVM it started
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    if not stop_first:
        cluster.stop()
    return answer


class Driver:
    def __init__(self, cluster: KafkaCluster):
        self.cluster = cluster
        classes = compiled(cluster, SOURCE, "Driver")
        self.log = cluster.root / "clients" / "driver.log"
        cmd = [cluster.java, *JVM_OPTS, *_client_logging(cluster, "driver"),
               "-cp", f"{cluster.classpath}:{classes}", "Driver", cluster.bootstrap]
        self.stderr = open(cluster.root / "clients" / "driver.stderr", "ab")  # noqa: SIM115
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr,
                                     text=True, start_new_session=True)
        self.requests: list[dict] = []  # what the scenario did, in order (a part of the oracle)

    def do(self, op: str, **request):
        request = {"op": op, **request}
        self.requests.append(request)
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise DriverError(f"the driver exited ({self.proc.wait()}) on {request}")
        reply = json.loads(line)
        if not reply["ok"]:
            raise DriverError(f"{request}: {reply['error']}")
        return reply.get("result")

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.do("exit")
                self.proc.wait(15)
            except (DriverError, OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        self.stderr.close()

    def __enter__(self) -> Driver:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def tool(cluster: KafkaCluster, main: str, *args: str, timeout: float = 120) -> str:
    """Run one of the release's command-line classes; its stdout (raises on a non-zero exit)."""
    cmd = [cluster.java, *JVM_OPTS, *_client_logging(cluster, "tool"), "-cp", cluster.classpath, main, *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise DriverError(
            f"{main} {' '.join(args)} exited {proc.returncode}:\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    return proc.stdout
