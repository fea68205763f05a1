"""``kaudit``: the thin command layer. Each command parses its options and calls one step
function; the work lives in the packages (``kafka/``, ``zookeeper/``, ``spark/``, ...)."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

# isort: off
from pipelines import startup  # first: before typer, numpy and pyarrow are imported (see there)

# isort: on
import typer

from pipelines import steps
from pipelines.argv import hoist_global_options
from pipelines.clusters import check_alias, cluster_warehouse
from pipelines.context import RunContext
from pipelines.errors import KauditError, UsageError
from pipelines.warehouse.runs import LATEST, check_run_id, choose
from pipelines.warehouse.warehouse import DEFAULT_ROOT, Warehouse, check_format, open_warehouse

app = typer.Typer(
    name="kaudit",
    help="Offline audit of Kafka consumer coordination: ZooKeeper + __consumer_offsets.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
extract_app = typer.Typer(help="Read a source into the raw tables of a run.", no_args_is_help=True)
app.add_typer(extract_app, name="extract")


DBT_TARGET_ENV = "KAUDIT_DBT_TARGET"  # a profiles.yml target for every dbt build (the config's dbt.target wins)


def _print_version(value: bool | None) -> None:
    if value:
        from pipelines.version import version

        print(f"kaudit {version()}")
        raise typer.Exit()


@app.callback()
def _global(
    ctx: typer.Context,
    warehouse: Annotated[
        str, typer.Option("--warehouse", help="Warehouse directory, or the tables' object-store or HDFS URI "
                          "(s3a://bucket/prefix, with --warehouse-local).")
    ] = DEFAULT_ROOT,
    run_id: Annotated[
        str | None,
        typer.Option(
            "--run-id",
            help="Run id, or 'latest'. Default: extracts continue the open run of this sitting (else a new one); "
            "build, validate and report the newest run.",
        ),
    ] = None,
    spark_master: Annotated[
        str | None, typer.Option("--spark-master", help="Spark master URL (default local[*] or spark-submit's).")
    ] = None,
    cluster: Annotated[
        str | None,
        typer.Option("--cluster", help="The cluster's alias in a run of several clusters (extracts write its tables "
                     "under <warehouse>/clusters/ALIAS/); default: the run's default cluster."),
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", help="Only errors.")] = False,
    verbose: Annotated[
        bool, typer.Option("--verbose", help="Tracebacks on errors; Spark's own log on stderr.")
    ] = False,
    version: Annotated[
        bool | None,
        typer.Option("--version", help="Print kaudit's version and exit.", is_eager=True, callback=_print_version),
    ] = None,
    warehouse_format: Annotated[
        str, typer.Option("--warehouse-format", hidden=True, help="Deprecated: iceberg, the only format.")
    ] = "iceberg",
    catalog: Annotated[
        str | None, typer.Option("--catalog", help="The Iceberg catalog: sqlite:///PATH, a SQLite file path "
                                 "or postgresql://USER@HOST:PORT/DB (default: <warehouse>.catalog.db beside the "
                                 "warehouse directory).")
    ] = None,
    warehouse_local: Annotated[
        Path | None, typer.Option("--warehouse-local", help="With an object-store --warehouse: the local directory "
                                  "of its run records, locks and documents.")
    ] = None,
) -> None:
    if run_id is not None and run_id != LATEST:
        check_run_id(run_id)  # a usage error before any work, whatever the command
    if cluster is not None:
        check_alias(cluster)
    dbt_target = os.environ.get(DBT_TARGET_ENV) or None
    check_format(warehouse_format)
    store = open_warehouse(warehouse, catalog, warehouse_local)
    ctx.obj = _Options(store, run_id, spark_master, quiet, verbose, dbt_target, cluster)


@dataclass(frozen=True)
class _Options:
    """The global options, until a command knows which run it works on (:func:`_run`)."""

    warehouse: Warehouse
    run_id: str | None
    spark_master: str | None
    quiet: bool
    verbose: bool
    dbt_target: str | None
    cluster: str | None = None  # --cluster: an extract writes into that cluster's warehouse

    def context(self, run_id: str) -> RunContext:
        return RunContext(
            cluster_warehouse(self.warehouse, self.cluster),
            run_id,
            spark_master=self.spark_master,
            quiet=self.quiet,
            verbose=self.verbose,
            dbt_target=self.dbt_target,
        )


def _run(ctx: typer.Context, kind: str) -> RunContext:
    """The command's RunContext, its run chosen by the rule of :mod:`pipelines.warehouse.runs`; says which
    run on the command's first line."""
    opts: _Options = ctx.find_object(_Options)
    choice = choose(opts.warehouse.root, opts.run_id, kind)
    run = opts.context(choice.run_id)
    run.say(choice.line(opts.warehouse.runs.info(choice.run_id) if choice.how == "continued" else None))
    return run


# --- extract ---------------------------------------------------------------------------------


@extract_app.command("zk")
def extract_zk(
    ctx: typer.Context,
    hosts: Annotated[str, typer.Option("--hosts", help="H:P[,H:P] of the ensemble.")],
    chroot: Annotated[str | None, typer.Option("--chroot", help="Walk below this path.")] = None,
    auth: Annotated[str | None, typer.Option("--auth", help="SCHEME:CRED, e.g. digest:user:pass.")] = None,
    tls: Annotated[bool, typer.Option("--tls", help="Connect with TLS.")] = False,
    ca: Annotated[Path | None, typer.Option("--ca", help="CA bundle for --tls.")] = None,
    cert: Annotated[Path | None, typer.Option("--cert", help="Client certificate for --tls.")] = None,
    key: Annotated[Path | None, typer.Option("--key", help="Client key for --tls.")] = None,
    timeout: Annotated[
        float | None, typer.Option("--timeout", help="Seconds to wait for a server that does not answer.")
    ] = None,
) -> None:
    """Walk a live ZooKeeper, read-only, into raw/znodes."""
    from pipelines.zookeeper.hosts import check_hosts

    try:
        hosts = check_hosts(hosts)
    except ValueError as err:
        raise UsageError(f"--hosts: {err}") from None
    if timeout is not None and timeout <= 0:
        raise UsageError(f"--timeout {timeout:g}: expected a number of seconds above 0")
    steps.extract_zk(
        _run(ctx, "extract"), hosts=hosts, chroot=chroot, auth=auth, tls=tls, ca=ca, cert=cert, key=key, timeout=timeout
    )


@extract_app.command("zk-snapshot")
def extract_zk_snapshot(
    ctx: typer.Context,
    path: Annotated[Path, typer.Argument(help="Data dir, its version-2/, or one snapshot file.")],
    at_zxid: Annotated[str | None, typer.Option("--at-zxid", help="Target zxid (decimal or 0x-hex).")] = None,
    chroot: Annotated[str | None, typer.Option("--chroot", help="Only below this path, re-rooted at /.")] = None,
) -> None:
    """Read a ZooKeeper data dir (or one snapshot) offline into raw/znodes."""
    zxid = _parse_int(at_zxid, "--at-zxid")
    steps.extract_zk_snapshot(_run(ctx, "extract"), path=path, at_zxid=zxid, chroot=chroot)


@extract_app.command("offsets")
def extract_offsets(
    ctx: typer.Context,
    paths: Annotated[list[Path], typer.Argument(help="Kafka log dirs, __consumer_offsets-N dirs or .log files.")],
    workers: Annotated[int | None, typer.Option("--workers", help="Processes (default: cores).")] = None,
) -> None:
    """Decode __consumer_offsets segments into the raw offsets and group tables."""
    if workers is not None and workers < 1:
        raise UsageError(f"--workers {workers}: expected 1 or more")
    steps.extract_offsets(_run(ctx, "extract"), paths=paths, workers=workers)


@extract_app.command("mm2")
def extract_mm2(
    ctx: typer.Context,
    paths: Annotated[list[Path], typer.Argument(help="Kafka log dirs (or partition dirs) holding MirrorMaker 2's "
                                                     "mm2-offset-syncs.*.internal / *.checkpoints.internal topics.")],
) -> None:
    """Decode MirrorMaker 2's offset syncs and checkpoints into raw/mm2_offset_syncs and raw/mm2_checkpoints
    (name the cluster they were read from with --cluster ALIAS, MirrorMaker's alias for it)."""
    steps.extract_mm2(_run(ctx, "extract"), paths=paths)


@extract_app.command("log-end")
def extract_log_end(
    ctx: typer.Context,
    paths: Annotated[list[Path] | None, typer.Argument(help="Kafka log dirs or topic-partition dirs.")] = None,
    offsets_file: Annotated[
        Path | None, typer.Option("--offsets-file", help="topic:partition:offset lines (GetOffsetShell).")
    ] = None,
    topic_configs: Annotated[
        Path | None,
        typer.Option("--topic-configs", help="topic:config=value lines (retention.ms, retention.bytes, ...)."),
    ] = None,
) -> None:
    """Log start/end offsets of data-topic partitions into raw/log_end_offsets (topic configs
    into raw/topic_configs)."""
    if not paths and offsets_file is None and topic_configs is None:
        raise UsageError("extract log-end: give Kafka log dirs (PATH...), --offsets-file FILE or --topic-configs FILE")
    steps.extract_log_end(_run(ctx, "extract"), paths=paths or [], offsets_file=offsets_file,
                          topic_configs=topic_configs)


@extract_app.command("kraft")
def extract_kraft(
    ctx: typer.Context,
    paths: Annotated[
        list[Path],
        typer.Argument(help="__cluster_metadata-0 dirs (or log dirs holding one), .log or .checkpoint files."),
    ],
    at_offset: Annotated[str | None, typer.Option("--at-offset", help="State after this log offset.")] = None,
    at_time: Annotated[
        str | None, typer.Option("--at-time", help="State at this time (ISO 8601, UTC unless it says; or epoch ms).")
    ] = None,
) -> None:
    """Read a KRaft metadata log into raw/metadata_records and the replayed registry."""
    if at_offset is not None and at_time is not None:
        raise UsageError("extract kraft: give --at-offset or --at-time, not both")
    offset = _parse_int(at_offset, "--at-offset")
    if offset is not None and offset < 0:
        raise UsageError(f"--at-offset {offset}: expected 0 or more")
    time_ms = None
    if at_time is not None:
        from pipelines.kraft.extract import parse_time_ms

        try:
            time_ms = parse_time_ms(at_time)
        except ValueError as err:
            raise typer.BadParameter(str(err), param_hint="--at-time") from None
    steps.extract_kraft(_run(ctx, "extract"), paths=paths, at_offset=offset, at_time_ms=time_ms)


# --- build / validate / report ---------------------------------------------------------------


@app.command()
def build(
    ctx: typer.Context,
    assignor: Annotated[
        list[str] | None, typer.Option("--assignor", help="GROUP=range|roundrobin for a ZooKeeper group.")
    ] = None,
    skip_dbt: Annotated[bool, typer.Option("--skip-dbt", help="Only the Spark core tables.")] = False,
    settle_window_ms: Annotated[
        str | None,
        typer.Option("--settle-window-ms", help="A group's state is settled when nothing changes it for this long "
                     "(default 8000: rebalance.backoff.ms x rebalance.max.retries of the 0.8 consumer)."),
    ] = None,
    stuck_limit_ms: Annotated[
        str | None,
        typer.Option("--stuck-limit-ms", help="A rebalance not settled this long after it began is stuck_rebalance "
                     "(default 60000)."),
    ] = None,
) -> None:
    """Spark registry, expected assignment and audit; then dbt build of the marts."""
    from pipelines.settle import parse

    assignors = steps.parse_assignors(assignor or [])
    settle = parse(settle_window_ms, stuck_limit_ms)
    steps.build(_run(ctx, "step"), assignors=assignors, run_dbt=not skip_dbt, settle=settle)


@app.command()
def validate(
    ctx: typer.Context,
    strict: Annotated[bool, typer.Option("--strict", help="Exit 3 when an error-level expectation fails.")] = False,
) -> None:
    """Run the Great Expectations suites on the run's tables."""
    steps.validate(_run(ctx, "step"), strict=strict)


@app.command()
def report(ctx: typer.Context) -> None:
    """Write the audit report (HTML + summary.json) of the run."""
    steps.report(_run(ctx, "step"))


@app.command()
def run(
    ctx: typer.Context,
    config: Annotated[Path, typer.Option("--config", help="audit.yaml (see examples/audit.yaml).")],
    only: Annotated[
        list[str] | None,
        typer.Option("--only", help="Only this unit (extract:offsets, build, ...) or step; repeatable."),
    ] = None,
    show_plan: Annotated[bool, typer.Option("--plan", help="Print the plan as JSON and run nothing.")] = False,
) -> None:
    """Every step the config names, in order (global options given here win over the config)."""
    sources = {n: ctx.parent.get_parameter_source(n) for n in ("warehouse", "run_id", "spark_master")}
    given = {n for n, src in sources.items() if src is not None and src.name not in ("DEFAULT", "DEFAULT_MAP")}
    from pipelines.runner import run_config

    opts: _Options = ctx.find_object(_Options)
    run_config(opts, config, only=only, show_plan=show_plan, explicit=frozenset(given))


@app.command()
def demo(
    ctx: typer.Context,
    out: Annotated[Path | None, typer.Option("--out", help="Where to write the demo cluster.")] = None,
) -> None:
    """Write a demo cluster with known faults and run every step on it."""
    from pipelines.demo import run_demo

    run_demo(_run(ctx, "new"), out=out)


@app.command("migrate-warehouse")
def migrate_warehouse(
    ctx: typer.Context,
    old: Annotated[Path, typer.Argument(help="A Parquet warehouse of kaudit before 0.2.")],
) -> None:
    """Commit the runs of an old Parquet warehouse into the Iceberg warehouse --warehouse names."""
    from pipelines.warehouse.migrate import migrate

    opts: _Options = ctx.find_object(_Options)
    migrate(old, opts.warehouse, RunContext(opts.warehouse, "migrate", quiet=opts.quiet).say)


# --- entry point -----------------------------------------------------------------------------


def _parse_int(value: str | None, option: str) -> int | None:
    if value is None:
        return None
    try:
        return int(value, 0)
    except ValueError:
        raise typer.BadParameter(f"{value!r} is not a number", param_hint=option) from None


def _click_error(err: Exception) -> tuple[str, int] | None:
    """(one line, exit code) of a command-line parsing error (typer vendors click: matched by
    behaviour, not by class); None for any other exception."""
    code, message = getattr(err, "exit_code", None), getattr(err, "format_message", None)
    if not isinstance(code, int) or not callable(message):
        return None
    cmd = getattr(err, "ctx", None)
    if code != 2 or cmd is None:
        return message(), code
    path = cmd.command_path
    return f"{path}: {message()} (see '{path} --help')", code


def main(argv: list[str] | None = None) -> None:
    startup.ready()
    argv = hoist_global_options(list(sys.argv[1:] if argv is None else argv))
    verbose = "--verbose" in argv
    try:
        app(args=argv, standalone_mode=False, prog_name="kaudit")
    except KauditError as err:
        if verbose:
            raise
        print(f"kaudit: {err}", file=sys.stderr)
        sys.exit(err.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        print("kaudit: aborted", file=sys.stderr)
        sys.exit(130)
    except typer.Exit as done:
        sys.exit(done.exit_code)
    except Exception as err:  # noqa: BLE001 - a bug still gets one line, the traceback with --verbose
        if type(err).__name__ == "NoArgsIsHelpError":  # `kaudit` or `kaudit extract` alone: the help
            print(err.ctx.get_help())
            sys.exit(2)
        usage = _click_error(err)
        if usage is not None:  # one line, starting with the command it is about
            print(usage[0] if usage[0].startswith("kaudit") else f"kaudit: {usage[0]}", file=sys.stderr)
            sys.exit(usage[1])
        if verbose:
            raise
        print(f"kaudit: internal error: {type(err).__name__}: {err} (run with --verbose for the traceback)",
              file=sys.stderr)
        sys.exit(1)
    sys.exit(0)


if __name__ == "__main__":
    main()
