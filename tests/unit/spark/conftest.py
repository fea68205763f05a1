"""The ``znodes`` fixture: tiny ``raw/znodes`` DataFrames of ``{path: value}`` trees."""

from __future__ import annotations

import pytest

from testkit.znodes import znode_rows


@pytest.fixture()
def znodes(spark):
    """``znodes({path: value}, source='live')`` -> a raw/znodes DataFrame with run_id."""
    from pipelines.spark.schemas import table_schema

    def make(tree, source="live"):
        table = znode_rows(tree, source)
        rows = [tuple(r.values()) + ("r1",) for r in table.to_pylist()]
        return spark.createDataFrame(rows, table_schema("raw/znodes", with_run_id=True))

    return make
