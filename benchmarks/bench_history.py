"""Benchmark: the history through build - ``--groups x --events`` rebalances of
ZooKeeper groups in ``raw/znode_changes`` and ``--commits`` Kafka offset commits in
``raw/offset_commits`` - each part against the I/O floor of the same rows, in one run (the
``bench_assignment`` method: medians of ``--repeat`` interleaved runs in one JVM, ratio printed).

(a) Spark: ``core/rebalance_states`` + ``core/settled_audit`` (``pipelines.spark.rebalances``,
    as ``kaudit build`` writes them, into a transaction's staging dirs) against Spark reading
    the columns the build reads of ``raw/znode_changes`` and writing every row the build wrote
    (held in memory first, written as zstd Parquet files).
(b) dbt: ``dbt run`` of the history marts and their parents (``rebalances``,
    ``ownership_history``, ``offset_drift_history``, ``commit_frequency``,
    ``offset_regressions``, ``commit_lag_history``, ``offset_resets``, ``stuck_partitions``,
    ``data_loss_risk``; the data tests are not run) against Spark reading their inputs (every
    column of the raw tables and ``core/rebalance_states``) and writing every mart row.

    .venv/bin/python benchmarks/bench_history.py                  # dev: 63k txns, 200k commits
    .venv/bin/python benchmarks/bench_history.py --groups 1000 --events 17 --commits 5000000
                                                      # full: 1.06M txns, 5M commits

The ZooKeeper history (generated with numpy/Arrow compute, no per-row Python; zxids
increasing, one change per txn): a snapshot (broker, topics, ``--consumers`` registrations and
a range owner per partition of each group, offsets 0), then for each event of each group a
consumer leaving or coming back (a ``consumer`` trigger), every owner znode deleted and
created for the new range owner (0.5% planted wrong owners) and ``--sets`` offset writes per
partition. Per event and group: 1 + 2P + SP txns (61 with P=10, S=4). The Kafka commits:
``--kafka-groups`` groups of one 10-partition topic each, a commit per partition per minute
advancing 100 records, with a reset to latest and a stuck partition in every 17th and 10th
group; log ends and one batch header per 1,000 records (``raw/log_end_offsets``,
``raw/batch_timestamps``).

Figures: docs/benchmarks.md. A warm run's time is mostly the Spark jobs' fixed costs, not the
rows; caching the parsed registration, topic and owner intervals (read by several jobs)
changed nothing and was not kept.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from clocks import Clock, load, ratio, runs
from pyspark import StorageLevel

from pipelines.context import RunContext
from pipelines.spark.io import read_spark, write_staged
from pipelines.warehouse.tables import (
    RAW_BATCH_TIMESTAMPS,
    RAW_LOG_END_OFFSETS,
    RAW_OFFSET_COMMITS,
    RAW_ZNODE_CHANGES,
)
from pipelines.warehouse.warehouse import Warehouse

RUN = "bench"
T0_MS = int(datetime(2024, 1, 1, tzinfo=UTC).timestamp() * 1000)
TXN_MS = 100  # time between two txns
CORE = ("core/rebalance_states", "core/settled_audit")
MARTS = ("rebalances", "ownership_history", "offset_drift_history", "commit_frequency", "offset_regressions",
         "commit_lag_history", "offset_resets", "stuck_partitions", "data_loss_risk")
DBT_INPUTS = ("raw/znode_changes", "raw/offset_commits", "raw/log_end_offsets", "raw/batch_timestamps",
              "core/rebalance_states")
KAFKA_PARTITIONS = 10
STEP_RECORDS = 100  # records a commit advances
BATCH_RECORDS = 1000  # records per batch header


def _s(values) -> pa.Array:
    return pa.array(values).cast(pa.string())


def _join(*parts) -> pa.Array:
    return pc.binary_join_element_wise(*[_s(p) if isinstance(p, np.ndarray) else p for p in parts], "")


def _ts(ms: np.ndarray) -> pa.Array:
    return pa.array(ms.astype(np.int64)).cast(pa.timestamp("ms", tz="UTC"))


def _range_owner(p: np.ndarray, n: np.ndarray, partitions: int) -> np.ndarray:
    """The range assignor's consumer index of partition ``p`` among ``n`` consumers."""
    per, extra = partitions // n, partitions % n
    cut = extra * (per + 1)
    return np.where(p < cut, p // (per + 1), extra + (p - cut) // np.maximum(per, 1))


def _changes(zxid, op, kind, path, value, version, owner) -> pa.Table:
    n = len(zxid)
    return pa.table({
        "zxid": pa.array(zxid, pa.int64()), "seq": pa.array(np.zeros(n, np.int32)),
        "time": _ts(T0_MS + zxid * TXN_MS), "session": pa.array(np.where(op == "snapshot", 0, 0x1000), pa.int64()),
        "op": pa.array(op, pa.string()), "kind": pa.array(np.full(n, kind), pa.string()), "path": path,
        "value": pc.cast(value, pa.binary()), "version": pa.array(version, pa.int32()),
        "ephemeral_owner": pa.array(owner, pa.int64()),
    }, schema=RAW_ZNODE_CHANGES)


def znode_changes(groups: int, events: int, partitions: int, consumers: int, sets: int) -> pa.Table:
    """The ZooKeeper history (see the module docstring), sorted by zxid."""
    topics = max(1, groups // 10)
    g = np.arange(groups)
    topic_of = np.char.add("t", (g % topics).astype(str))
    reg_value = _join('{"version":1,"pattern":"static","subscription":{"', topic_of, '":1}}')
    parts: list[pa.Table] = []
    # the snapshot: broker, topics, registrations, owners, offsets
    topic_json = '{"version":1,"partitions":{' + ",".join(f'"{p}":[1]' for p in range(partitions)) + "}}"
    t = np.arange(topics)
    snap = [(np.array(["/brokers/ids/1"]), pa.array(['{"host":"b1","port":9092}']), "broker_ids"),
            (_join("/brokers/topics/t", t), pa.array([topic_json] * topics), "broker_topics")]
    gc, c = np.repeat(g, consumers), np.tile(np.arange(consumers), groups)
    snap.append((_join("/consumers/g", gc, "/ids/g", gc, "_c", c), pc.take(reg_value, pa.array(gc)),
                 "consumer_ids"))
    gp, p = np.repeat(g, partitions), np.tile(np.arange(partitions), groups)
    own = _range_owner(p, np.full(len(p), consumers), partitions)
    snap.append((_join("/consumers/g", gp, "/owners/", topic_of[gp], "/", p), _join("g", gp, "_c", own, "-0"),
                 "consumer_owners"))
    snap.append((_join("/consumers/g", gp, "/offsets/", topic_of[gp], "/", p), pa.array(["0"] * len(p)),
                 "consumer_offsets"))
    first = 1
    for path, value, kind in snap:
        n = len(path)
        zxid = np.arange(first, first + n)
        first += n
        parts.append(_changes(zxid, np.full(n, "snapshot"), kind, pa.array(path) if isinstance(path, np.ndarray)
                              else path, value, np.zeros(n, np.int32),
                              np.full(n, 0x1000 if kind in ("consumer_ids", "consumer_owners") else 0)))
    # the events: (k, g) in zxid order, per_event txns each
    per_event = 1 + 2 * partitions + sets * partitions
    k, ge = np.repeat(np.arange(events), groups), np.tile(g, events)
    base = first + (k * groups + ge) * per_event
    leaves = k % 2 == 0  # consumer C-1 leaves at even events, comes back at odd ones
    n_reg = len(k)
    parts.append(_changes(
        base, np.where(leaves, "delete", "create"), "consumer_ids",
        _join("/consumers/g", ge, "/ids/g", ge, "_c", np.full(n_reg, consumers - 1)),
        pa.array(np.where(leaves, None, pc.take(reg_value, pa.array(ge)).to_numpy(zero_copy_only=False))),
        np.where(leaves, None, 0), np.where(leaves, None, 0x1000),
    ))
    # owners: each partition's znode deleted then created for the new range owner
    ko, go, po = np.repeat(k, partitions), np.repeat(ge, partitions), np.tile(np.arange(partitions), n_reg)
    n_own = len(ko)
    live = np.where(ko % 2 == 0, consumers - 1, consumers)
    owner = _range_owner(po, live, partitions)
    rng = np.random.default_rng(7)
    owner = np.where(rng.random(n_own) < 0.005, (owner + 1) % live, owner)
    opath = _join("/consumers/g", go, "/owners/", topic_of[go], "/", po)
    obase = np.repeat(base, partitions) + 1 + 2 * po
    parts.append(_changes(obase, np.full(n_own, "delete"), "consumer_owners", opath, pa.nulls(n_own, pa.string()),
                          np.full(n_own, None), np.full(n_own, None)))
    parts.append(_changes(obase + 1, np.full(n_own, "create"), "consumer_owners", opath,
                          _join("g", go, "_c", owner, "-0"), np.zeros(n_own, np.int32), np.full(n_own, 0x1000)))
    # offsets: sets writes per partition after the owners moved
    s = np.tile(np.arange(sets), n_own)
    ks, gs, ps = np.repeat(ko, sets), np.repeat(go, sets), np.repeat(po, sets)
    version = ks * sets + s + 1
    parts.append(_changes(
        np.repeat(base, partitions * sets) + 1 + 2 * partitions + s * partitions + ps, np.full(len(s), "set"),
        "consumer_offsets", _join("/consumers/g", gs, "/offsets/", topic_of[gs], "/", ps), _s(version * 100),
        version, np.full(len(s), None),
    ))
    table = pa.concat_tables(parts)
    return table.take(pc.sort_indices(table["zxid"]))


def offset_commits(commits: int, groups: int) -> tuple[pa.Table, pa.Table, pa.Table]:
    """``raw/offset_commits``, ``raw/log_end_offsets``, ``raw/batch_timestamps`` of the Kafka groups."""
    tps = groups * KAFKA_PARTITIONS
    per = max(1, commits // tps)
    i = np.arange(per * tps)
    n, tp = i // tps, i % tps  # the n-th commit of topic-partition tp, every partition once a minute
    g, p = tp // KAFKA_PARTITIONS, tp % KAFKA_PARTITIONS
    offset = (n + 1) * STEP_RECORDS
    end = (per + 1) * STEP_RECORDS
    offset = np.where((g % 17 == 0) & (p == 0) & (n >= per // 2), np.maximum(offset, end), offset)  # reset to latest
    offset = np.where((g % 10 == 0) & (p == 1), np.minimum(offset, STEP_RECORDS), offset)  # stuck
    rows = len(i)
    ts = T0_MS + n * 60_000 + tp
    group, topic = _join("kg", g), _join("kt", g)
    zeros32 = pa.array(np.zeros(rows, np.int32))
    commits_t = pa.table({
        "group_id": group, "topic": topic, "partition": pa.array(p.astype(np.int32)),
        "committed_offset": pa.array(offset), "leader_epoch": zeros32, "metadata": pa.array(np.full(rows, "")),
        "commit_timestamp": _ts(ts), "expire_timestamp": pa.nulls(rows, RAW_OFFSET_COMMITS.field(7).type),
        "is_tombstone": pa.array(np.zeros(rows, bool)), "key_version": pa.array(np.ones(rows, np.int16)),
        "value_version": pa.array(np.full(rows, 3, np.int16)),
        "offsets_partition": pa.array((g % 50).astype(np.int32)), "log_offset": pa.array(i),
        "producer_id": pa.array(np.full(rows, -1)), "is_transactional": pa.array(np.zeros(rows, bool)),
        "txn_state": pa.nulls(rows, pa.string()), "segment_file": pa.array(np.full(rows, "00000000000000000000.log")),
        "topic_id": pa.nulls(rows, pa.string()),
    }, schema=RAW_OFFSET_COMMITS)
    # log ends: the Kafka topics and the ZooKeeper groups' topics (t<i>, 10 partitions)
    gt = np.arange(groups)
    names = pa.concat_arrays([_join("kt", np.repeat(gt, KAFKA_PARTITIONS)), _join("t", np.repeat(gt, 10))])
    m = len(names)
    pm = np.tile(np.arange(10), 2 * groups)[:m] % KAFKA_PARTITIONS
    ends = pa.table({
        "topic": names, "partition": pa.array(pm.astype(np.int32)),
        "log_start_offset": pa.array(np.where(np.arange(m) % 23 == 0, 2 * STEP_RECORDS, 0)),  # some commits fell off
        "log_end_offset": pa.array(np.full(m, end)), "max_timestamp": _ts(np.full(m, T0_MS + per * 60_000)),
    }, schema=RAW_LOG_END_OFFSETS)
    # a batch header per BATCH_RECORDS records of every partition, ~ the commits' pace
    nb = max(1, end // BATCH_RECORDS)
    b = np.arange(nb * m)
    row, j = b // nb, b % nb
    first_ts = T0_MS + j * BATCH_RECORDS // STEP_RECORDS * 60_000
    batches = pa.table({
        "topic": pc.take(names, pa.array(row)), "partition": pa.array(pm[row].astype(np.int32)),
        "segment_base_offset": pa.array(np.zeros(len(b), np.int64)), "position": pa.array(j * 16_384),
        "size_bytes": pa.array(np.full(len(b), 16_384)), "magic": pa.array(np.full(len(b), 2, np.int8)),
        "base_offset": pa.array(j * BATCH_RECORDS), "last_offset": pa.array((j + 1) * BATCH_RECORDS - 1),
        "record_count": pa.array(np.full(len(b), BATCH_RECORDS, np.int32)),
        "is_control": pa.array(np.zeros(len(b), bool)), "timestamp_type": pa.array(np.full(len(b), "CreateTime")),
        "first_timestamp": _ts(first_ts), "max_timestamp": _ts(first_ts + 59_000),
    }, schema=RAW_BATCH_TIMESTAMPS)
    return commits_t, ends, batches


def generate(wh: Warehouse, args) -> dict[str, int]:
    changes = znode_changes(args.groups, args.events, args.partitions, args.consumers, args.sets)
    commits, ends, batches = offset_commits(args.commits, args.kafka_groups)
    tables = {"raw/znode_changes": changes, "raw/offset_commits": commits, "raw/log_end_offsets": ends,
              "raw/batch_timestamps": batches}
    with wh.transaction(RUN, step="bench") as tx:
        for name, table in tables.items():
            w = tx.writer(name, dictionary=False)
            for start in range(0, table.num_rows, 1_000_000):
                w.write(table.slice(start, 1_000_000))
    return {name: t.num_rows for name, t in tables.items()}


def spark_build(spark, ctx: RunContext) -> Clock:
    """The build's history part, as ``build_core`` writes it (one transaction)."""
    from pipelines.spark import rebalances

    clock = Clock()
    with clock.timing(), ctx.warehouse.transaction(RUN, step="build_core") as tx:
        states, audit = rebalances.build(spark, ctx, {})
        write_staged(tx, CORE[0], states)
        write_staged(tx, CORE[1], audit)
    return clock


def _write_rows(spark, wh: Warehouse, tables, out: Path, clock: Clock):
    for table in tables:
        if not wh.row_count(table, RUN):  # a mart with no row this run
            continue
        rows = read_spark(spark, wh, table, RUN, with_run_id=False).persist(StorageLevel.MEMORY_AND_DISK)
        rows.count()
        with clock.timing():
            rows.write.mode("overwrite").option("compression", "zstd").parquet(str(out / table))
        rows.unpersist()


def spark_floor(spark, wh: Warehouse, out: Path) -> Clock:
    clock = Clock()
    with clock.timing():
        changes = read_spark(spark, wh, "raw/znode_changes", RUN)
        changes.select("zxid", "seq", "time", "op", "kind", "path", "value").write.format("noop").mode(
            "overwrite").save()
    _write_rows(spark, wh, CORE, out, clock)
    return clock


def dbt_run(ctx: RunContext) -> Clock:
    from dbt.cli.main import dbtRunner

    from pipelines.transform.dbt_runner import dbt_args

    clock = Clock()
    with clock.timing():
        result = dbtRunner().invoke(dbt_args(ctx, "session", "run", ["--select", *[f"+{m}" for m in MARTS]]))
    if not result.success:
        raise SystemExit(f"dbt run failed: {result.exception}; log: {ctx.warehouse.root / 'logs' / 'dbt'}")
    return clock


def dbt_floor(spark, wh: Warehouse, out: Path) -> Clock:
    clock = Clock()
    with clock.timing():
        for table in DBT_INPUTS:
            read_spark(spark, wh, table, RUN).write.format("noop").mode("overwrite").save()
    _write_rows(spark, wh, [f"marts/{m}" for m in MARTS], out, clock)
    return clock


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--groups", type=int, default=100, help="ZooKeeper groups")
    ap.add_argument("--events", type=int, default=10, help="rebalance events per ZooKeeper group")
    ap.add_argument("--partitions", type=int, default=10)
    ap.add_argument("--consumers", type=int, default=4)
    ap.add_argument("--sets", type=int, default=4, help="offset writes per partition per event")
    ap.add_argument("--commits", type=int, default=200_000, help="Kafka offset commits")
    ap.add_argument("--kafka-groups", type=int, default=100)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--driver-memory", default="3g")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-dbt", action="store_true", help="the Spark part alone")
    ap.add_argument("--dir", default=None, help="work dir (default: a temp dir, removed afterwards)")
    args = ap.parse_args()

    work = Path(args.dir or tempfile.mkdtemp(prefix="kaudit-bench-history-"))
    wh = Warehouse(work / "warehouse")
    try:
        t = time.perf_counter()
        rows = generate(wh, args)
        print(f"generated {', '.join(f'{n} {r:,}' for n, r in rows.items())} in {time.perf_counter() - t:.1f}s "
              f"({load()})")

        from pipelines.spark.session import get_spark

        conf = {"spark.driver.memory": args.driver_memory}
        spark = get_spark(args.master, app_name="kaudit-bench-history", conf=conf)
        ctx = RunContext(wh, RUN, spark_master=args.master, quiet=True)
        clocks: dict[str, list[Clock]] = {"spark": [], "spark floor": [], "dbt": [], "dbt floor": []}
        for _ in range(args.repeat):  # interleaved, so drift in the machine's speed hits both
            clocks["spark"].append(spark_build(spark, ctx))
            clocks["spark floor"].append(spark_floor(spark, wh, work / "floor"))
            if not args.no_dbt:
                clocks["dbt"].append(dbt_run(ctx))
                clocks["dbt floor"].append(dbt_floor(spark, wh, work / "floor"))
            times = ", ".join(f"{k} {v[-1].wall:.1f}s" for k, v in clocks.items() if v)
            print(f"  run {len(clocks['spark'])}: {times} ({load()})")
        count = {t: wh.row_count(t, RUN) for t in CORE}
        print(f"(a) rebalance_states + settled_audit ({rows['raw/znode_changes']:,} txns -> "
              f"{count[CORE[0]]:,} states, {count[CORE[1]]:,} audit rows): {runs(clocks['spark'])}")
        print(f"    I/O floor (read the changes, write those rows): {runs(clocks['spark floor'])}")
        print(f"    {ratio(clocks['spark'], clocks['spark floor'])}")
        if clocks["dbt"]:
            marts = {m: wh.row_count(f"marts/{m}", RUN) for m in MARTS}
            print(f"(b) dbt run of the history marts ({rows['raw/offset_commits']:,} commits; "
                  + ", ".join(f"{m} {n:,}" for m, n in marts.items()) + f"): {runs(clocks['dbt'])}")
            print(f"    I/O floor (read their inputs, write those rows): {runs(clocks['dbt floor'])}")
            print(f"    {ratio(clocks['dbt'], clocks['dbt floor'])}")
        print(load())
    finally:
        if args.dir is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
