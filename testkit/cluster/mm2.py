"""MirrorMaker 2 between two real KRaft clusters, and the failover scenario the MM2 audit is
tested on.

``MirrorMaker`` runs the release's own dedicated-mode driver
(``org.apache.kafka.connect.mirror.MirrorMaker``, from the ``connect-mirror`` jars of Maven
Central) with an ``mm2.properties`` replicating ``source`` -> ``target`` on loopback, with
``sync.group.offsets.enabled``.

``run_mm2_scenario(root)`` (what the scenario does, in order; the oracle is what it did and the
clusters' own answers):

1. two one-node KRaft clusters (aliases ``source``, ``target``); topic ``orders`` (3 partitions)
   on the source; MirrorMaker started; 50 records per partition produced;
2. groups commit on the source through the Admin API: ``g-healthy``, ``g-ahead``, ``g-lagging``
   and ``x-orphan`` (left out by ``groups.exclude``: never checkpointed); the scenario waits until
   the target topic holds every record and MirrorMaker has written the translated offsets of
   the three ``g-`` groups into the target's ``__consumer_offsets``;
3. replication falls behind: MirrorMaker stopped; 30 more records per partition; ``g-lagging``
   commits 80 on every partition;
4. planted faults: ``g-ahead``'s offset of ``source.orders`` partition 0 set ahead on the target
   (Admin API), and a checkpoint of ``g-healthy``, partition 2, whose downstream offset no sync
   gives, written into ``source.checkpoints.internal`` (bytes of kafka-python's encoder);
5. the clusters' answers (``listConsumerGroupOffsets`` and log end offsets on both) and every
   record of the offset-sync and checkpoint topics (dumped by the Java clients, decoded here
   with kafka-python's protocol types) are kept; both clusters stopped cleanly.
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from kafka.protocol.old.types import Int16, Int32, Int64, Schema, String

from testkit.cluster.kafka import JVM_OPTS, KafkaCluster, compiled
from testkit.cluster.kraft_driver import Driver, DriverError, _client_logging
from testkit.cluster.maven import classpath
from testkit.cluster.versions import BUNDLES

KAFKA = "kafka-4.3.1"
MM2 = "connect-mirror-4.3.1"
MAIN = "org.apache.kafka.connect.mirror.MirrorMaker"
RECORDS = Path(__file__).with_name("java") / "Mm2Records.java"
TOPIC, PARTITIONS = "orders", 3
SYNCS_TOPIC = "mm2-offset-syncs.target.internal"
CHECKPOINTS_TOPIC = "source.checkpoints.internal"

# kafka-python's encoders of MirrorMaker's structs (OffsetSync, Checkpoint): the independent reader
SYNC_KEY = Schema(("topic", String("utf-8")), ("partition", Int32))
SYNC_VALUE = Schema(("upstreamOffset", Int64), ("offset", Int64))
CP_KEY = Schema(("group", String("utf-8")), ("topic", String("utf-8")), ("partition", Int32))
CP_VALUE_V0 = Schema(("version", Int16), ("upstreamOffset", Int64), ("offset", Int64), ("metadata", String("utf-8")))

PROPERTIES = {
    "clusters": "source,target",
    "source->target.enabled": "true",
    "target->source.enabled": "false",
    "topics": TOPIC,
    "groups": ".*",
    "groups.exclude": "x-.*,connect-.*,__.*",
    "sync.group.offsets.enabled": "true",
    "sync.group.offsets.interval.seconds": "1",
    "emit.checkpoints.interval.seconds": "1",
    "emit.heartbeats.interval.seconds": "1",
    "refresh.topics.interval.seconds": "1",
    "refresh.groups.interval.seconds": "1",
    "offset.lag.max": "7",
    "offset.flush.interval.ms": "1000",
    "tasks.max": "1",
    "plugin.discovery": "service_load",  # the jars' service manifests: no reflection scan of the classpath
    "offset.storage.partitions": "1",
    "status.storage.partitions": "1",
    **{f"{k}.replication.factor": "1" for k in ("checkpoints.topic", "heartbeats.topic", "offset-syncs.topic",
                                                "offset.storage", "status.storage", "config.storage")},
    "replication.factor": "1",
}


class MirrorMaker:
    """The release's dedicated MirrorMaker 2 (one JVM) replicating ``source`` -> ``target``."""

    def __init__(self, source: KafkaCluster, target: KafkaCluster, home: Path):
        self.home = Path(home)
        self.home.mkdir(parents=True, exist_ok=True)
        props = {**PROPERTIES, "source.bootstrap.servers": source.bootstrap,
                 "target.bootstrap.servers": target.bootstrap}
        self.config = self.home / "mm2.properties"
        self.config.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        self.classpath = classpath(MM2, BUNDLES[MM2])
        self.java = source.java
        self.proc: subprocess.Popen | None = None

    def start(self) -> MirrorMaker:
        log = self.home / "mm2.log"
        cmd = [self.java, *JVM_OPTS, *_log(self.home, log), "-cp", self.classpath, MAIN, str(self.config),
               "--clusters", "target"]
        self.out = open(self.home / "mm2.stdout", "ab")  # noqa: SIM115
        self.proc = subprocess.Popen(cmd, stdout=self.out, stderr=subprocess.STDOUT, start_new_session=True)
        return self

    def stop(self, timeout: float = 60) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.out.close()
        self.proc = None

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None


def _log(home: Path, log: Path) -> list[str]:
    """Log4j 2 in its properties format (the YAML one needs Jackson's YAML module, which the
    connect-mirror jars leave out)."""
    cfg = home / "log4j2.properties"
    cfg.write_text(f"appender.file.type=File\nappender.file.name=file\nappender.file.fileName={log}\n"
                   "appender.file.layout.type=PatternLayout\nappender.file.layout.pattern=[%d] %p %m (%c)%n\n"
                   "rootLogger.level=INFO\nrootLogger.appenderRef.file.ref=file\n")
    return [f"-Dlog4j2.configurationFile={cfg}"]


def records(cluster: KafkaCluster, topic: str) -> list[dict]:
    """Every record of ``topic`` (partition, offset, key and value bytes), by the Java clients."""
    classes = compiled(cluster, RECORDS, "Mm2Records")
    cmd = [cluster.java, *JVM_OPTS, *_client_logging(cluster, "mm2records"), "-cp",
           f"{cluster.classpath}:{classes}", "Mm2Records", cluster.bootstrap, "dump", topic]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=True).stdout
    rows = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    for r in rows:
        for k in ("key", "value"):
            r[k] = None if r[k] is None else bytes.fromhex(r[k])
    return sorted(rows, key=lambda r: (r["partition"], r["offset"]))


def put(cluster: KafkaCluster, topic: str, partition: int, key: bytes, value: bytes) -> dict:
    classes = compiled(cluster, RECORDS, "Mm2Records")
    cmd = [cluster.java, *JVM_OPTS, *_client_logging(cluster, "mm2records"), "-cp",
           f"{cluster.classpath}:{classes}", "Mm2Records", cluster.bootstrap, "put", topic, str(partition),
           key.hex(), value.hex()]
    return json.loads(subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=True).stdout)


def decoded_syncs(rows: list[dict]) -> list[dict]:
    out = []
    for r in rows:
        topic, partition = SYNC_KEY.decode(io.BytesIO(r["key"]))
        up, down = SYNC_VALUE.decode(io.BytesIO(r["value"]))
        out.append(dict(topic=topic, partition=partition, upstream_offset=up, downstream_offset=down,
                        log_offset=r["offset"], syncs_partition=r["partition"]))
    return out


def decoded_checkpoints(rows: list[dict]) -> list[dict]:
    out = []
    for r in rows:
        group, topic, partition = CP_KEY.decode(io.BytesIO(r["key"]))
        version, up, down, meta = CP_VALUE_V0.decode(io.BytesIO(r["value"]))
        out.append(dict(group_id=group, topic=topic, partition=partition, upstream_offset=up,
                        downstream_offset=down, metadata=meta, value_version=version, log_offset=r["offset"],
                        checkpoints_partition=r["partition"]))
    return out


def _offsets(topic: str, values: dict[int, int]) -> dict[str, int]:
    return {f"{topic}:{p}": o for p, o in values.items()}


def _group_offsets(answer: dict, group: str) -> dict[str, int]:
    g = answer["groups"].get(group) or {}
    return {k: int(v) for k, v in (g.get("offsets") or {}).items()}


@dataclass
class Mm2Outcome:
    source: KafkaCluster
    target: KafkaCluster
    oracle: dict = field(default_factory=dict)


GROUPS = {"g-healthy": {0: 50, 1: 30, 2: 10}, "g-ahead": {0: 20, 1: 20, 2: 20}, "g-lagging": {0: 40, 1: 40, 2: 40},
          "x-orphan": {0: 25, 1: 25, 2: 25}}
LAGGING_LATER = {0: 80, 1: 80, 2: 80}
AHEAD_PLANT = ("g-ahead", 0, 45)  # group, partition, target offset set ahead of the translation
CHECKPOINT_PLANT = ("g-healthy", 2, 10, 999)  # group, partition, upstream, downstream offset


def _wait(what: str, check, timeout: float = 120.0, every: float = 1.0, state: dict | None = None):
    deadline = time.monotonic() + timeout
    while True:
        got = check()
        if got:
            return got
        if time.monotonic() > deadline:
            raise TimeoutError(f"MM2 scenario: {what} not within {timeout:.0f} s (last seen: {state})")
        time.sleep(every)


def run_mm2_scenario(root: Path, per_partition: int = 50, more: int = 30) -> Mm2Outcome:
    """The scenario of the module docstring; the clusters are stopped when it returns."""
    root = Path(root)
    source = KafkaCluster(KAFKA, root / "source", config={"offsets.topic.num.partitions": "3"})
    target = KafkaCluster(KAFKA, root / "target", config={"offsets.topic.num.partitions": "3"})
    mm2 = None
    did: list[dict] = []
    try:
        source.start()
        target.start()
        with Driver(source) as src, Driver(target) as tgt:
            src.do("create", topic=TOPIC, partitions=PARTITIONS)
            mm2 = MirrorMaker(source, target, root / "mm2").start()
            src.do("produce", topic=TOPIC, per_partition=per_partition)
            did.append({"produce": per_partition})
            for g, offs in GROUPS.items():
                src.do("alter_offsets", group=g, offsets=_offsets(TOPIC, offs))
                did.append({"commit": g, "offsets": offs})
            remote = f"source.{TOPIC}"

            state = {}

            def replicated():
                d, groups = _answer(tgt)
                ends = {p: _end(d.get("log_offsets") or {}, f"{remote}:{p}") for p in range(PARTITIONS)}
                before = state.get("groups")
                state.update(ends=ends, groups=groups, mm2=mm2.running())
                done = all(e == per_partition for e in ends.values())
                synced = all(groups[g] for g in GROUPS if g.startswith("g-"))
                # MirrorMaker may not translate every partition (no sync for it yet): settled when
                # its group offsets on the target stay the same over a few sync intervals
                return done and synced and groups == before and mm2.running()

            _wait("replication and group offset sync", replicated, timeout=240, every=3.0, state=state)
            mm2.stop()
            did.append({"mm2": "stopped"})
            src.do("produce", topic=TOPIC, per_partition=more)
            did.append({"produce": more})
            src.do("alter_offsets", group="g-lagging", offsets=_offsets(TOPIC, LAGGING_LATER))
            did.append({"commit": "g-lagging", "offsets": LAGGING_LATER})
            g, p, o = AHEAD_PLANT
            tgt.do("alter_offsets", group=g, offsets={f"{remote}:{p}": o})
            did.append({"plant": "target_ahead", "group": g, "partition": p, "offset": o})
            g, p, up, down = CHECKPOINT_PLANT
            put(target, CHECKPOINTS_TOPIC, 0, CP_KEY.encode([g, remote, p]), CP_VALUE_V0.encode([0, up, down, ""]))
            did.append({"plant": "checkpoint", "group": g, "partition": p, "upstream": up, "downstream": down})
            src_answer, src_groups = _answer(src)
            tgt_answer, tgt_groups = _answer(tgt)
        oracle = {
            "did": did,
            "source_offsets": src_groups,
            "target_offsets": tgt_groups,
            "source_log_offsets": src_answer.get("log_offsets"),
            "target_log_offsets": tgt_answer.get("log_offsets"),
            "offset_syncs": decoded_syncs(records(source, SYNCS_TOPIC)),
            "checkpoints": decoded_checkpoints(records(target, CHECKPOINTS_TOPIC)),
        }
        source.stop()
        target.stop()
        return Mm2Outcome(source, target, oracle)
    finally:
        if mm2 is not None:
            mm2.stop()
        source.close()
        target.close()


def _answer(driver: Driver) -> tuple[dict, dict[str, dict[str, int]]]:
    """The cluster's describe answer (log offsets) and every group's committed offsets
    (``listConsumerGroupOffsets``); a group the cluster does not know has none."""
    answer = driver.do("describe", groups=[])
    groups = {}
    for g in GROUPS:
        try:
            groups[g] = _group_offsets(driver.do("describe", groups=[g]), g)
        except DriverError:
            groups[g] = {}
    return answer, groups


def _end(ends: dict, key: str) -> int | None:
    v = ends.get(key)
    return v.get("latest") if isinstance(v, dict) else None


KEPT = {"source": ("__consumer_offsets-", f"{SYNCS_TOPIC}-"),
        "target": ("__consumer_offsets-", f"{CHECKPOINTS_TOPIC}-")}


def keep(outcome: Mm2Outcome, dest: Path) -> None:
    """The scenario as a small fixture: ``<dest>/{source,target}/logs/`` with the ``.log`` segments
    (indexes left out) of each cluster's ``__consumer_offsets`` partitions and its MirrorMaker
    topic, ``meta.properties``; and ``oracle.json``."""
    import shutil

    dest = Path(dest)
    for alias, cluster in (("source", outcome.source), ("target", outcome.target)):
        logs = cluster.log_dirs[0]
        out = dest / alias / "logs"
        out.mkdir(parents=True, exist_ok=True)
        shutil.copy2(logs / "meta.properties", out / "meta.properties")
        for d in sorted(logs.iterdir()):
            if d.is_dir() and d.name.startswith(KEPT[alias]):
                (out / d.name).mkdir(exist_ok=True)
                for f in d.glob("*.log"):
                    if f.stat().st_size:
                        shutil.copy2(f, out / d.name / f.name)
    (dest / "oracle.json").write_text(json.dumps(outcome.oracle, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    import sys
    import tempfile

    with tempfile.TemporaryDirectory(prefix="kaudit-mm2-") as tmp:
        keep(run_mm2_scenario(Path(tmp)), Path(sys.argv[1]))
