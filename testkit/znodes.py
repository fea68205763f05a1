"""``raw/znodes`` tables of ``{path: value}`` trees (written here, not captured), for the
Spark tests. Column types are inferred: the warehouse writers cast to kaudit's schema."""

from __future__ import annotations

from datetime import UTC, datetime

import pyarrow as pa

T0 = datetime(2024, 1, 1, tzinfo=UTC)


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
    return pa.Table.from_pylist(rows)
