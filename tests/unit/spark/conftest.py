"""Builders of tiny raw tables for the Spark unit tests (written here, not captured)."""

from __future__ import annotations

from datetime import datetime, timezone

import pyarrow as pa
import pytest

from pipelines.tables import RAW_ZNODES

T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)


def znode_rows(tree: dict[str, bytes | str | None], source: str = "live") -> pa.Table:
    """A ``raw/znodes`` table of ``{path: value}`` (str values are UTF-8 encoded)."""
    rows = []
    for i, (path, value) in enumerate(sorted(tree.items())):
        data = value.encode() if isinstance(value, str) else value
        rows.append(
            {
                "source": source,
                "path": path,
                "data": data,
                "czxid": i + 1,
                "mzxid": i + 1,
                "pzxid": i + 1,
                "ctime": T0,
                "mtime": T0,
                "version": 0,
                "cversion": 0,
                "aversion": 0,
                "ephemeral_owner": 0,
                "data_length": len(data or b""),
                "num_children": 0,
            }
        )
    return pa.Table.from_pylist(rows, schema=RAW_ZNODES)


@pytest.fixture()
def znodes(spark):
    """``znodes({path: value}, source='live')`` -> a raw/znodes DataFrame with run_id."""
    from pipelines.spark.schemas import table_schema

    def make(tree, source="live"):
        table = znode_rows(tree, source)
        rows = [tuple(r.values()) + ("r1",) for r in table.to_pylist()]
        return spark.createDataFrame(rows, table_schema("raw/znodes", with_run_id=True))

    return make
