"""Driver of ``test_cluster_standalone.test_local_checkpoints_survive_an_executor_loss_on_a_cluster``
(its own process: the test's process already has a local SparkContext).

    python executor_loss.py spark://host:port

On a standalone cluster with two 1-core workers: a frame checkpointed by ``io.reused``, an
action over it, one executor killed (SIGKILL, as a crash), the same action again; then the
same with Spark's default local checkpoint (one copy of each block). Prints one JSON line:
``{"kaudit": trial, "one_copy": trial}``, a trial being ``{"before": rows, "after": rows}`` or
``{"before": rows, "error": message}``."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

from pyspark.sql import SparkSession

from pipelines.spark import io

ROWS = 200_000


def main(url: str) -> None:
    spark = (SparkSession.builder.master(url).appName("kaudit-executor-loss")
             .config("spark.executor.cores", "1").config("spark.cores.max", "2")
             .config("spark.executor.memory", "512m").config("spark.ui.enabled", "false").getOrCreate())
    jsc = spark.sparkContext._jsc.sc()

    def executors() -> list[str]:
        ids = jsc.getExecutorIds()
        return [ids.apply(i) for i in range(ids.size())]

    def trial(checkpoint) -> dict:
        _until(lambda: len(executors()) == 2, "two executors")
        frame = checkpoint(spark.range(0, ROWS, numPartitions=8).selectExpr("id", "id % 7 as k").repartition(8, "id"))

        def counts() -> list:
            return sorted(tuple(r) for r in frame.groupBy("k").count().collect())

        before = counts()  # computes the frame and stores its blocks
        victim = executors()[0]
        _kill(victim, spark.sparkContext.applicationId)
        _until(lambda: victim not in executors(), "the executor's loss noticed by the driver")
        try:
            return {"before": before, "after": counts()}
        except Exception as err:  # noqa: BLE001 - what the action failed with is the result
            return {"before": before, "error": str(err)[:2000]}

    result = {"kaudit": trial(io.reused), "one_copy": trial(lambda df: df.localCheckpoint(eager=False))}
    spark.stop()
    print(json.dumps(result))


def _until(test, what: str, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while not test():
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        time.sleep(0.2)


def _kill(executor: str, app: str) -> None:
    """SIGKILL to the JVM of ``executor`` of application ``app``."""
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            args = cmdline.read_bytes().split(b"\0")
        except OSError:
            continue
        if b"--executor-id" in args and args[args.index(b"--executor-id") + 1].decode() == executor \
                and app.encode() in args:
            os.kill(int(cmdline.parent.name), signal.SIGKILL)
            return
    raise LookupError(f"no process of executor {executor} of {app}")


if __name__ == "__main__":
    main(sys.argv[1])
