"""The pipeline steps after extraction, as the CLI, the demo, ``kaudit run`` and Airflow call
them. Each step reads the run's tables from the warehouse and writes its own partition."""

from __future__ import annotations

from pathlib import Path

from pipelines.context import RunContext
from pipelines.errors import NotBuiltYet, UsageError

ASSIGNORS = ("range", "roundrobin")


def parse_assignors(values: list[str]) -> dict[str, str]:
    """``GROUP=range|roundrobin`` options -> {group: assignor}."""
    out: dict[str, str] = {}
    for value in values:
        group, sep, name = value.rpartition("=")
        if not sep or not group or name not in ASSIGNORS:
            raise UsageError(f"--assignor {value!r}: expected GROUP={'|'.join(ASSIGNORS)}")
        out[group] = name
    return out


def build(ctx: RunContext, assignors: dict[str, str] | None = None, run_dbt: bool = True) -> None:
    raise NotBuiltYet("kaudit build")


def validate(ctx: RunContext, strict: bool = False) -> None:
    raise NotBuiltYet("kaudit validate")


def report(ctx: RunContext) -> None:
    raise NotBuiltYet("kaudit report")


def run_config(ctx: RunContext, config: Path) -> None:
    raise NotBuiltYet("kaudit run --config")
