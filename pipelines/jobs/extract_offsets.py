"""Spark job: decode ``__consumer_offsets`` segments on a cluster's executors.

    spark-submit pipelines/jobs/extract_offsets.py --warehouse DIR --run-id ID PATH...

One task per ``__consumer_offsets`` partition (its segments in log order, so transaction
states resolve across segments), each running the same pure-Python/numba reader as
``kaudit extract offsets`` (``pipelines.kafka``, which never imports Spark) and returning its
tables as Arrow IPC bytes; the driver streams them into one warehouse transaction. On a real
cluster the paths must be readable by the executors (shared storage) and the ``pipelines``
package shipped (``--py-files`` or installed on the nodes).
"""

from __future__ import annotations

import argparse
import sys
from itertools import groupby
from pathlib import Path


def _decode_scope_ipc(segments) -> tuple[dict[str, bytes], dict[str, int]]:
    from pipelines.kafka.offsets import decode_scope, to_ipc

    tables, stats = decode_scope(list(segments))
    return {t: to_ipc(data) for t, data in tables.items()}, stats


def run(spark, warehouse, run_id: str, paths: list[Path]) -> dict:
    """Decode ``paths`` on ``spark``'s executors into the raw offsets tables of ``run_id``."""
    from pipelines.kafka.offsets import TABLES, from_ipc
    from pipelines.kafka.paths import offsets_segments

    segments = offsets_segments(paths)
    scopes = [list(g) for _, g in groupby(segments, key=lambda s: s.scope)]
    counts = {t: 0 for t in TABLES}
    stats: dict[str, int] = {}
    with warehouse.transaction(run_id, step="offsets") as tx:
        if scopes:
            rdd = spark.sparkContext.parallelize(scopes, numSlices=len(scopes)).map(_decode_scope_ipc)
            for tables, s in rdd.toLocalIterator():
                for t, data in tables.items():
                    table = from_ipc(data)
                    tx.write(t, table)
                    counts[t] += table.num_rows
                for k, v in s.items():
                    stats[k] = stats.get(k, 0) + v
        for t in TABLES:
            tx.writer(t)
    return {**{t.split("/")[1]: n for t, n in counts.items()}, **stats, "partitions": len(scopes)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warehouse", required=True)
    parser.add_argument("--run-id", required=True)
    parser.add_argument("--spark-master", default=None)
    parser.add_argument("paths", nargs="+", type=Path)
    args = parser.parse_args(argv)

    from pipelines.errors import KauditError
    from pipelines.spark.session import get_spark
    from pipelines.warehouse import Warehouse

    try:
        counts = run(get_spark(args.spark_master, app_name="kaudit-extract-offsets"), Warehouse(args.warehouse), args.run_id, args.paths)
    except KauditError as err:
        print(f"kaudit: {err}", file=sys.stderr)
        return err.exit_code
    print(" ".join(f"{k}={v}" for k, v in counts.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
