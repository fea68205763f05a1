"""Sort keys of the report's rows. Every column of the declared tables may be null, and Python
cannot order None against a value: a key built here sorts each null after every value."""

from __future__ import annotations


def nulls_last(*values) -> tuple:
    """A sort key of ``values`` in turn, each null after every non-null value."""
    return tuple(x for v in values for x in (v is None, v))


def negated(value):
    """``-value`` for a descending order of a nullable number (null stays null: last)."""
    return None if value is None else -value
