"""``kaudit``: the thin command layer. Each command parses its options and calls one step
function; the work lives in the packages (``kafka/``, ``zookeeper/``, ``spark/``, ...)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from pipelines.context import RunContext
from pipelines.errors import KauditError
from pipelines.warehouse import DEFAULT_ROOT, Warehouse, new_run_id

app = typer.Typer(
    name="kaudit",
    help="Offline audit of Kafka consumer coordination: ZooKeeper + __consumer_offsets.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
extract_app = typer.Typer(help="Read a source into the raw tables of a run.", no_args_is_help=True)
app.add_typer(extract_app, name="extract")


@app.callback()
def _global(
    ctx: typer.Context,
    warehouse: Annotated[Path, typer.Option("--warehouse", help="Warehouse directory.")] = Path(DEFAULT_ROOT),
    run_id: Annotated[Optional[str], typer.Option("--run-id", help="Run id (default: UTC YYYYMMDDTHHMMSSZ).")] = None,
    spark_master: Annotated[
        Optional[str], typer.Option("--spark-master", help="Spark master URL (default local[*] or spark-submit's).")
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", help="Only errors.")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", help="Tracebacks on errors.")] = False,
) -> None:
    ctx.obj = RunContext(
        warehouse=Warehouse(warehouse),
        run_id=run_id or new_run_id(),
        spark_master=spark_master,
        quiet=quiet,
        verbose=verbose,
    )


# --- extract ---------------------------------------------------------------------------------


@extract_app.command("zk")
def extract_zk(
    ctx: typer.Context,
    hosts: Annotated[str, typer.Option("--hosts", help="H:P[,H:P] of the ensemble.")],
    chroot: Annotated[Optional[str], typer.Option("--chroot", help="Walk below this path.")] = None,
    auth: Annotated[Optional[str], typer.Option("--auth", help="SCHEME:CRED, e.g. digest:user:pass.")] = None,
    tls: Annotated[bool, typer.Option("--tls", help="Connect with TLS.")] = False,
    ca: Annotated[Optional[Path], typer.Option("--ca", help="CA bundle for --tls.")] = None,
    cert: Annotated[Optional[Path], typer.Option("--cert", help="Client certificate for --tls.")] = None,
    key: Annotated[Optional[Path], typer.Option("--key", help="Client key for --tls.")] = None,
    timeout: Annotated[
        Optional[float], typer.Option("--timeout", help="Seconds to wait for a server that does not answer.")
    ] = None,
) -> None:
    """Walk a live ZooKeeper, read-only, into raw/znodes."""
    from pipelines.zookeeper.extract import extract_live

    extract_live(ctx.obj, hosts=hosts, chroot=chroot, auth=auth, tls=tls, ca=ca, cert=cert, key=key, timeout=timeout)


@extract_app.command("zk-snapshot")
def extract_zk_snapshot(
    ctx: typer.Context,
    path: Annotated[Path, typer.Argument(help="Data dir, its version-2/, or one snapshot file.")],
    at_zxid: Annotated[Optional[str], typer.Option("--at-zxid", help="Target zxid (decimal or 0x-hex).")] = None,
    chroot: Annotated[Optional[str], typer.Option("--chroot", help="Only below this path, re-rooted at /.")] = None,
) -> None:
    """Read a ZooKeeper data dir (or one snapshot) offline into raw/znodes."""
    from pipelines.zookeeper.extract import extract_snapshot

    extract_snapshot(ctx.obj, path=path, at_zxid=_parse_int(at_zxid, "--at-zxid"), chroot=chroot)


@extract_app.command("offsets")
def extract_offsets(
    ctx: typer.Context,
    paths: Annotated[list[Path], typer.Argument(help="Kafka log dirs, __consumer_offsets-N dirs or .log files.")],
    workers: Annotated[Optional[int], typer.Option("--workers", help="Processes (default: cores).")] = None,
) -> None:
    """Decode __consumer_offsets segments into the raw offsets and group tables."""
    from pipelines.kafka.extract import extract_offsets as run

    run(ctx.obj, paths=paths, workers=workers)


@extract_app.command("log-end")
def extract_log_end(
    ctx: typer.Context,
    paths: Annotated[Optional[list[Path]], typer.Argument(help="Kafka log dirs or topic-partition dirs.")] = None,
    offsets_file: Annotated[
        Optional[Path], typer.Option("--offsets-file", help="topic:partition:offset lines (GetOffsetShell).")
    ] = None,
) -> None:
    """Log start/end offsets of data-topic partitions into raw/log_end_offsets."""
    from pipelines.kafka.extract import extract_log_end as run

    run(ctx.obj, paths=paths or [], offsets_file=offsets_file)


# --- build / validate / report ---------------------------------------------------------------


@app.command()
def build(
    ctx: typer.Context,
    assignor: Annotated[
        Optional[list[str]], typer.Option("--assignor", help="GROUP=range|roundrobin for a ZooKeeper group.")
    ] = None,
    skip_dbt: Annotated[bool, typer.Option("--skip-dbt", help="Only the Spark core tables.")] = False,
) -> None:
    """Spark registry, expected assignment and audit; then dbt build of the marts."""
    from pipelines import steps

    steps.build(ctx.obj, assignors=steps.parse_assignors(assignor or []), run_dbt=not skip_dbt)


@app.command()
def validate(
    ctx: typer.Context,
    strict: Annotated[bool, typer.Option("--strict", help="Exit 3 when an error-level expectation fails.")] = False,
) -> None:
    """Run the Great Expectations suites on the run's tables."""
    from pipelines import steps

    steps.validate(ctx.obj, strict=strict)


@app.command()
def report(ctx: typer.Context) -> None:
    """Write the audit report (HTML + summary.json) of the run."""
    from pipelines import steps

    steps.report(ctx.obj)


@app.command()
def run(
    ctx: typer.Context,
    config: Annotated[Path, typer.Option("--config", help="audit.yaml (see examples/audit.yaml).")],
    only: Annotated[
        Optional[list[str]],
        typer.Option("--only", help="Only this unit (extract:offsets, build, ...) or step; repeatable."),
    ] = None,
    show_plan: Annotated[bool, typer.Option("--plan", help="Print the plan as JSON and run nothing.")] = False,
) -> None:
    """Every step the config names, in order (global options given here win over the config)."""
    from pipelines import steps

    sources = {n: ctx.parent.get_parameter_source(n) for n in ("warehouse", "run_id", "spark_master")}
    given = {n for n, src in sources.items() if src is not None and src.name not in ("DEFAULT", "DEFAULT_MAP")}
    steps.run_config(ctx.obj, config, only=only, show_plan=show_plan, explicit=frozenset(given))


@app.command()
def demo(
    ctx: typer.Context,
    out: Annotated[Optional[Path], typer.Option("--out", help="Where to write the demo cluster.")] = None,
) -> None:
    """Write a demo cluster with known faults and run every step on it."""
    from pipelines.demo import run_demo

    run_demo(ctx.obj, out=out)


# --- entry point -----------------------------------------------------------------------------


def _parse_int(value: str | None, option: str) -> int | None:
    if value is None:
        return None
    try:
        return int(value, 0)
    except ValueError:
        raise typer.BadParameter(f"{value!r} is not a number", param_hint=option) from None


def main(argv: list[str] | None = None) -> None:
    try:
        app(args=argv, standalone_mode=False)
    except KauditError as err:
        if "--verbose" in (argv if argv is not None else sys.argv):
            raise
        print(f"kaudit: {err}", file=sys.stderr)
        sys.exit(err.exit_code)
    except typer.Abort:
        print("kaudit: aborted", file=sys.stderr)
        sys.exit(130)
    except typer.Exit as done:
        sys.exit(done.exit_code)
    except Exception as err:
        # click's usage errors (typer vendors click, so match by behaviour, not by class)
        show, code = getattr(err, "show", None), getattr(err, "exit_code", None)
        if callable(show) and isinstance(code, int):
            show()
            sys.exit(code)
        raise
    sys.exit(0)


if __name__ == "__main__":
    main()
