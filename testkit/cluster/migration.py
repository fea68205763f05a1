"""A ZooKeeper-mode Kafka 3.9 cluster migrated to KRaft with the documented procedure (KIP-866;
Kafka's "ZooKeeper to KRaft Migration" operations guide), for the migration audit.

``run_migration_scenario(root)``:

1. starts ZooKeeper (3.8.4, the client release of Kafka 3.9) and one ZooKeeper-mode broker
   (``broker.id=1``, ``inter.broker.protocol.version=3.9``), runs ``MigrationScenario before``
   (topics with configs, records, the groups' commits) and keeps its answer;
2. formats and starts a KRaft controller (``node.id=3000``, ``process.roles=controller``) with
   ``zookeeper.metadata.migration.enable=true`` and the cluster id the broker wrote in its
   ``meta.properties``;
3. restarts the broker with the migration configs (the migration flag, the quorum, the
   controller listener) and waits until the controller logs that it completed the migration of
   the metadata from ZooKeeper;
4. restarts the broker in KRaft mode (``process.roles=broker``, ``node.id=1``, no ZooKeeper);
5. restarts the controller without the migration configs (the migration finalized);
6. runs ``MigrationScenario after`` (forward commits, the planted faults: a group moved
   backwards, a group's offsets deleted; a new topic) and keeps its answer;
7. stops the broker, the controller and ZooKeeper cleanly.

The run's ZooKeeper data dir (``zk/data``) holds the old cluster, the controller's
``metadata/__cluster_metadata-0`` the migrated one, the broker's log dir (``node-1/logs``) the
consumer offsets of both eras.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from testkit.cluster.kafka import _LOG4J1, _LOG4J2, JVM_OPTS, BrokerError, KafkaCluster, Node, compiled, free_port
from testkit.cluster.kraft_driver import DriverError, _client_logging
from testkit.cluster.kraft_fixtures import _copy_log_dir
from testkit.cluster.zookeeper import ZooKeeper, start_zookeeper

BUNDLE = "kafka-3.9.2"
ZOOKEEPER = "3.8.4"
SOURCE = Path(__file__).with_name("java") / "MigrationScenario.java"
CONTROLLER_ID = 3000
MIGRATED = "Completed migration of metadata from ZooKeeper to KRaft"
FIXTURE = Path(__file__).resolve().parents[2] / "pipelines" / "demo" / "real" / "migration-3.9.2"


@dataclass
class MigrationOutcome:
    cluster: KafkaCluster
    controller: Node
    zookeeper: ZooKeeper
    before: dict  # MigrationScenario's answer on the ZooKeeper-mode cluster
    after: dict  # and on the migrated KRaft cluster

    @property
    def log_dir(self) -> Path:
        return self.cluster.log_dirs[0]

    @property
    def metadata_dir(self) -> Path:
        return self.controller.home / "metadata" / "__cluster_metadata-0"

    @property
    def zk_data_dir(self) -> Path:
        return self.zookeeper.data_dir


def _props(path: Path, props: dict[str, str]) -> None:
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))


def _cluster_id(log_dir: Path) -> str:
    for line in (log_dir / "meta.properties").read_text().splitlines():
        if line.startswith("cluster.id="):
            return line.split("=", 1)[1].strip()
    raise BrokerError(f"{log_dir}/meta.properties has no cluster.id")


def _scenario(cluster: KafkaCluster, phase: str) -> dict:
    classes = compiled(cluster, SOURCE, "MigrationScenario")
    cmd = [cluster.java, *JVM_OPTS, *_client_logging(cluster, f"migration-{phase}"), "-cp",
           f"{cluster.classpath}:{classes}", "MigrationScenario", cluster.bootstrap, phase]
    with open(cluster.root / "clients" / f"migration-{phase}.stderr", "ab") as err:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=err, text=True, timeout=300,
                              stdin=subprocess.DEVNULL)
    if proc.returncode != 0 or not proc.stdout.strip():
        raise DriverError(f"MigrationScenario {phase} exited {proc.returncode}: see {err.name}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _wait_for(path: Path, text: str, mark: int, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and text in path.read_text(errors="replace")[mark:]:
            return
        time.sleep(0.5)
    raise BrokerError(f"{path} never logged {text!r} in {timeout:.0f} s")


def run_migration_scenario(root: Path, bundle: str = BUNDLE) -> MigrationOutcome:
    root = Path(root)
    zk = start_zookeeper(ZOOKEEPER, root / "zk")
    cluster = KafkaCluster(bundle, root, zookeeper=zk.hosts, config={"inter.broker.protocol.version": "3.9"},
                           log_level="INFO")
    ctl = Node(CONTROLLER_ID, root / "controller", free_port(), None)
    broker = cluster.node(1)
    quorum = {
        "controller.quorum.voters": f"{CONTROLLER_ID}@127.0.0.1:{ctl.port}",
        "controller.listener.names": "CONTROLLER",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
    }
    try:
        cluster.start()
        before = _scenario(cluster, "before")

        # the controller, in migration mode, formatted with the ZooKeeper cluster's id
        ctl.home.mkdir(parents=True, exist_ok=True)
        ctl_props = {
            "process.roles": "controller", "node.id": str(CONTROLLER_ID), **quorum,
            "listeners": f"CONTROLLER://127.0.0.1:{ctl.port}", "log.dirs": str(ctl.home / "metadata"),
            "zookeeper.metadata.migration.enable": "true", "zookeeper.connect": zk.hosts,
            "inter.broker.listener.name": "PLAINTEXT",
        }
        _props(ctl.properties, ctl_props)
        (ctl.home / "log4j.properties").write_text(_LOG4J1.format(level="INFO", log=ctl.server_log))
        (ctl.home / "log4j2.yaml").write_text(_LOG4J2.format(level="INFO", log=ctl.server_log))
        fmt = subprocess.run(cluster._jvm(ctl, "kafka.tools.StorageTool", "format", "-t", _cluster_id(broker.log_dir),
                                          "-c", str(ctl.properties)), capture_output=True, text=True, timeout=180)
        if fmt.returncode != 0:
            raise BrokerError(f"controller format failed: {fmt.stdout[-2000:]}{fmt.stderr[-2000:]}")
        cluster._spawn(ctl)
        cluster._await(ctl)
        ctl_mark = 0

        # the broker, still in ZooKeeper mode, with the migration configs: the controller migrates
        broker_props = dict(cluster._properties(broker))
        cluster.stop(1)
        _props(broker.properties, {**broker_props, **quorum, "zookeeper.metadata.migration.enable": "true"})
        cluster.restart(1)
        _wait_for(ctl.server_log, MIGRATED, ctl_mark)

        # the broker in KRaft mode
        cluster.stop(1)
        kraft = {k: v for k, v in broker_props.items()
                 if k not in ("broker.id", "zookeeper.connect", "zookeeper.session.timeout.ms",
                              "inter.broker.protocol.version")}
        _props(broker.properties, {**kraft, **quorum, "process.roles": "broker", "node.id": "1"})
        cluster.restart(1)

        # the controller without the migration configs: the migration is finalized
        ctl.proc.terminate()
        ctl.proc.wait(60)
        _props(ctl.properties, {k: v for k, v in ctl_props.items()
                                if k not in ("zookeeper.metadata.migration.enable", "zookeeper.connect")})
        cluster._spawn(ctl)
        cluster._await(ctl)

        after = _scenario(cluster, "after")
        cluster.stop(1)
        ctl.proc.terminate()
        ctl.proc.wait(60)
    finally:
        cluster.close()
        if ctl.proc is not None and ctl.proc.poll() is None:
            ctl.proc.kill()
            ctl.proc.wait()
        zk.stop()
    return MigrationOutcome(cluster, ctl, zk, before, after)


def keep(dest: Path = FIXTURE) -> Path:
    """A run kept as a fixture: ``zk/`` (the ZooKeeper data dir's ``version-2``), ``logs/`` (the
    broker's ``.log`` segments, ``meta.properties``, ``log-start-offset-checkpoint``),
    ``metadata/__cluster_metadata-0/`` and ``oracle.json`` (both answers)."""
    with tempfile.TemporaryDirectory(prefix="migration-fixture-") as tmp:
        outcome = run_migration_scenario(Path(tmp) / "cluster")
        if dest.exists():
            shutil.rmtree(dest)
        shutil.copytree(outcome.zk_data_dir, dest / "zk")
        _copy_log_dir(outcome.log_dir, dest / "logs", (".log",))
        _copy_log_dir(outcome.metadata_dir.parent, dest / "metadata", (".log", ".checkpoint"))
    (dest / "oracle.json").write_text(json.dumps({"before": outcome.before, "after": outcome.after},
                                                 indent=1, sort_keys=True) + "\n")
    return dest


if __name__ == "__main__":
    if len(sys.argv) > 2:
        print("usage: python -m testkit.cluster.migration [DEST]", file=sys.stderr)
        sys.exit(2)
    print(keep(Path(sys.argv[1]) if len(sys.argv) == 2 else FIXTURE))
