"""Typed errors the CLI turns into one line and an exit code (docs/contract.md: exit codes)."""

from __future__ import annotations


class KauditError(Exception):
    """Base: ``str(err)`` is the one line the user sees."""

    exit_code = 1


class InputError(KauditError):
    """An input that cannot be read at all (names the file and why). Exit 1."""

    exit_code = 1


class StepError(KauditError):
    """A step that failed (dbt, Spark, ...) with a clear reason. Exit 1."""

    exit_code = 1


class UsageError(KauditError):
    """Bad options or config. Exit 2."""

    exit_code = 2


class ExpectationsFailed(KauditError):
    """``--strict`` and an error-level expectation failed. Exit 3."""

    exit_code = 3
