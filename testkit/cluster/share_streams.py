"""Share-group scenarios on real Kafka 4.x brokers (``java/ShareScenario.java``).

``run_share_scenario(bundle, root)`` starts a one-node KRaft cluster of ``bundle`` (share groups
on by default from Kafka 4.2), compiles the scenario against the release's jars (once per
source, in the jar cache), runs it: a topic, a healthy share group and one that releases a
poison record until the broker archives it. It keeps the program's answer (what it did and the
cluster's answers while both groups still had their members: ``describeShareGroups``,
``listShareGroupOffsets`` with the broker's lag, log end offsets, topic ids), stops the broker
cleanly, then ends the program without its members leaving. The data dir then holds what the
answers describe.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from testkit.cluster.kafka import KafkaCluster
from testkit.cluster.kraft_driver import scenario_answer

SHARE_SOURCE = Path(__file__).with_name("java") / "ShareScenario.java"
# small, fast share groups: the poison record is archived after this many deliveries
SHARE_BROKER = {"group.share.delivery.count.limit": "3", "share.coordinator.state.topic.num.partitions": "1",
                "share.coordinator.state.topic.replication.factor": "1",
                "share.coordinator.state.topic.min.isr": "1"}


@dataclass
class ShareOutcome:
    cluster: KafkaCluster
    answer: dict  # the program's JSON: did, groups, log_end_offsets, topic_ids

    @property
    def log_dir(self) -> Path:
        return self.cluster.log_dirs[0]


def run_share_scenario(bundle: str, root: Path, topic: str = "orders", partitions: int = 2,
                       per_partition: int = 20, poison_partition: int = 0) -> ShareOutcome:
    cluster = KafkaCluster(bundle, root, config=dict(SHARE_BROKER))
    cluster.start()
    try:
        answer = scenario_answer(cluster, SHARE_SOURCE, "ShareScenario",
                                 [topic, str(partitions), str(per_partition), str(poison_partition)], name="share")
    finally:
        cluster.close()
    return ShareOutcome(cluster, answer)


STREAMS_SOURCE = Path(__file__).with_name("java") / "StreamsScenario.java"
STREAMS_CLIENT = "org.apache.kafka:kafka-streams:{v}"
# one standby per task: the group coordinator assigns it (a group config of the broker)
STREAMS_BROKER = {"group.streams.num.standby.replicas": "1", "group.streams.initial.rebalance.delay.ms": "0"}


@dataclass
class StreamsOutcome:
    cluster: KafkaCluster
    answer: dict  # the program's JSON: group (describeStreamsGroups), committed, log_end_offsets

    @property
    def log_dir(self) -> Path:
        return self.cluster.log_dirs[0]


def run_streams_scenario(bundle: str, root: Path, app: str = "counts-app", topic: str = "words",
                         partitions: int = 3, records: int = 60, instances: int = 2,
                         faulty: str | None = None) -> StreamsOutcome:
    """A Kafka Streams application of ``instances`` instances (``StreamsScenario.java``, the
    release's kafka-streams jar from Maven Central) on a one-node cluster of ``bundle``; with
    ``faulty``, a second application of that id whose member is killed (SIGKILL of its JVM) while
    it had to hand active tasks over. Its answer, then the broker stopped cleanly with the
    members still in the groups, then every JVM of the program killed."""
    from testkit.cluster.maven import classpath

    version = bundle.split("-", 1)[1]
    streams_cp = classpath(f"kafka-streams-{version}", (STREAMS_CLIENT.format(v=version),
                                                         "org.apache.logging.log4j:log4j-slf4j-impl:2.24.3"))
    cluster = KafkaCluster(bundle, root, config=dict(STREAMS_BROKER))
    cluster.start()
    try:
        answer = scenario_answer(cluster, STREAMS_SOURCE, "StreamsScenario",
                                 [app, topic, str(partitions), str(records), str(instances),
                                  str(cluster.root / "streams-state"), *([faulty] if faulty else [])],
                                 name="streams", extra_classpath=streams_cp)
    finally:
        cluster.close()
    return StreamsOutcome(cluster, answer)


def keep_streams(outcome: StreamsOutcome, dest: Path) -> Path:
    """Keep a Streams run as a fixture: ``dest/logs/`` (the broker's log dir, ``.log`` segments
    of every partition with records, ``meta.properties``) and ``dest/oracle.json`` (the
    program's answer)."""
    import shutil

    from testkit.cluster.kraft_fixtures import _copy_log_dir

    if dest.exists():
        shutil.rmtree(dest)
    _copy_log_dir(outcome.log_dir, dest / "logs", (".log",))
    (dest / "oracle.json").write_text(json.dumps(outcome.answer, indent=1) + "\n")
    return dest
