"""A tiered-storage scenario (KIP-405) on a real Kafka 4.x broker (``java/TieredScenario.java``).

``run_tiered_scenario(root)`` starts a one-node KRaft cluster of the ``kafka-tiered-4.1.1``
bundle (the release plus the test jars that hold Kafka's own ``LocalTieredStorage`` plugin)
with remote storage on: ``remote.log.storage.system.enable``, the plugin storing under
``root/remote-storage``, the default topic-based remote log metadata manager
(``__remote_log_metadata``, 2 partitions), and the remote log manager's tasks and the
retention checks every half second. It compiles and runs the scenario (a topic whose segments
move remote and, on partition 0, expire from remote storage; groups committed before, inside
and after the remote range), keeps the program's answer (what it did, the broker's listOffsets
earliest / earliest-local / latest, the committed offsets read back), then stops the broker
cleanly (it writes its log-start-offset-checkpoint) and ends the program.

``python -m testkit.cluster.tiered [DEST]`` keeps a run as a fixture (default
``pipelines/demo/real/tiered-4.1.1/``): ``logs/`` (the ``.log`` segments of every
partition holding records, ``__remote_log_metadata`` included, with ``meta.properties`` and the
``log-start-offset-checkpoint``), ``metadata/__cluster_metadata-0/`` and the answer as
``oracle.json``. The remote storage itself (the plugin's copies) is not kept: kaudit reads the
metadata of the remote segments, never their bytes.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from testkit.cluster.kafka import KafkaCluster
from testkit.cluster.kraft_driver import scenario_answer
from testkit.cluster.kraft_fixtures import _copy_log_dir

BUNDLE = "kafka-tiered-4.1.1"
FIXTURE = Path(__file__).resolve().parents[2] / "pipelines" / "demo" / "real" / "tiered-4.1.1"
SOURCE = Path(__file__).with_name("java") / "TieredScenario.java"
PLUGIN = "org.apache.kafka.server.log.remote.storage.LocalTieredStorage"


def tiered_broker(remote_dir: Path) -> dict[str, str]:
    """Broker properties: remote storage on, Kafka's test plugin, fast remote log manager tasks."""
    return {
        "remote.log.storage.system.enable": "true",
        "remote.log.storage.manager.class.name": PLUGIN,
        "rsm.config.dir": str(remote_dir),
        "remote.log.metadata.manager.listener.name": "PLAINTEXT",
        "rlmm.config.remote.log.metadata.topic.num.partitions": "2",
        "rlmm.config.remote.log.metadata.topic.replication.factor": "1",
        "remote.log.manager.task.interval.ms": "500",
        "log.retention.check.interval.ms": "500",
        "log.initial.task.delay.ms": "0",
    }


@dataclass
class TieredOutcome:
    cluster: KafkaCluster
    answer: dict  # the program's JSON: did, topic, topic_id, partitions, committed

    @property
    def log_dir(self) -> Path:
        return self.cluster.log_dirs[0]


def run_tiered_scenario(root: Path, topic: str = "tiered", batches: int = 8, per_batch: int = 10,
                        expired: int = 3, bundle: str = BUNDLE) -> TieredOutcome:
    root = Path(root)
    cluster = KafkaCluster(bundle, root, config=tiered_broker(root / "remote-storage"))
    cluster.start()
    try:
        answer = scenario_answer(cluster, SOURCE, "TieredScenario", [topic, str(batches), str(per_batch),
                                 str(expired)], name="tiered", stop_first=False)
    finally:
        cluster.close()
    return TieredOutcome(cluster, answer)


def keep(dest: Path = FIXTURE) -> Path:
    with tempfile.TemporaryDirectory(prefix="tiered-fixture-") as tmp:
        outcome = run_tiered_scenario(Path(tmp) / "cluster")
        if dest.exists():
            shutil.rmtree(dest)
        _copy_log_dir(outcome.log_dir, dest / "logs", (".log",))
        _copy_log_dir(outcome.cluster.metadata_dir.parent, dest / "metadata", (".log", ".checkpoint"))
    (dest / "oracle.json").write_text(json.dumps(outcome.answer, indent=1, sort_keys=True) + "\n")
    return dest


if __name__ == "__main__":
    if len(sys.argv) > 2:
        print("usage: python -m testkit.cluster.tiered [DEST]", file=sys.stderr)
        sys.exit(2)
    print(keep(Path(sys.argv[1]) if len(sys.argv) == 2 else FIXTURE))
