"""numpy arrays -> Arrow arrays and tables through their buffers.

``pa.array`` (and ``Schema.empty_table``, ``Table.from_pylist``/``from_pydict`` of lists) asks
pyarrow's pandas shim about its argument, which imports pandas: 0.26-0.34 CPU s of a process's
start (``python -X importtime``), a fifth of a short ``kaudit extract offsets``. The decoders'
columns are numpy arrays already; these helpers wrap their memory without that shim.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa


def array(values: np.ndarray, typ: pa.DataType | None = None, mask: np.ndarray | None = None) -> pa.Array:
    """``pa.array(values, typ, mask=mask)`` for a 1-D numpy array of numbers or booleans whose
    item size is ``typ``'s (``typ`` None: the array's own type; a timestamp is an int64)."""
    values = np.ascontiguousarray(values)
    if typ is None:
        typ = pa.from_numpy_dtype(values.dtype)
    n = len(values)
    data = np.packbits(values, bitorder="little") if values.dtype == np.bool_ else values
    validity, nulls = None, 0
    if mask is not None:
        mask = np.asarray(mask, dtype=bool)
        nulls = int(np.count_nonzero(mask))
        if nulls:
            validity = pa.py_buffer(np.packbits(~mask, bitorder="little"))
    return pa.Array.from_buffers(typ, n, [validity, pa.py_buffer(data)], null_count=nulls)


def strings(texts: list[str]) -> pa.Array:
    """A short list of strings as an Arrow string array (``pa.array(texts, pa.string())``)."""
    raw = [t.encode() for t in texts]
    offsets = np.zeros(len(raw) + 1, dtype=np.int32)
    offsets[1:] = np.cumsum([len(b) for b in raw])
    return pa.Array.from_buffers(pa.string(), len(raw), [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(raw))])


def empty_table(schema: pa.Schema) -> pa.Table:
    """``schema.empty_table()``."""
    return pa.Table.from_arrays([pa.nulls(0, f.type) for f in schema], schema=schema)


def pylist_table(rows: list[dict], schema: pa.Schema) -> pa.Table:
    """``pa.Table.from_pylist(rows, schema)``; no pandas when there are no rows."""
    return pa.Table.from_pylist(rows, schema=schema) if rows else empty_table(schema)
