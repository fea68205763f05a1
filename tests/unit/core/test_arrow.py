"""``pipelines.arrow`` builds the arrays ``pa.array`` would (pyarrow itself is the oracle), and a
process decoding commit records does not import pandas (the start-up it costs)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from pipelines import arrow
from pipelines.warehouse.tables import RAW_OFFSET_COMMITS, RAW_QUARANTINE, TS

REPO = Path(__file__).resolve().parents[3]
rng = np.random.default_rng(22)


@pytest.mark.parametrize("n", [0, 1, 7, 8, 9, 1000])
@pytest.mark.parametrize(
    "values, typ",
    [
        (lambda n: rng.integers(-(2**40), 2**40, n), None),
        (lambda n: rng.integers(-(2**15), 2**15, n).astype(np.int16), pa.int16()),
        (lambda n: rng.integers(-(2**31), 2**31, n).astype(np.int32), None),
        (lambda n: rng.random(n) < 0.5, None),
        (lambda n: rng.integers(0, 2**41, n), TS),
    ],
)
@pytest.mark.parametrize("masked", [None, "none", "some", "all"])
def test_array_is_pa_array(n, values, typ, masked):
    v = values(n)
    mask = {None: None, "none": np.zeros(n, bool), "some": rng.random(n) < 0.3, "all": np.ones(n, bool)}[masked]
    expected = pa.array(v, typ, mask=mask) if typ != TS else pa.array(v, pa.int64(), mask=mask).cast(TS)
    got = arrow.array(v, typ, mask=mask)
    got.validate(full=True)
    assert got.type == expected.type
    assert got.null_count == expected.null_count
    assert got.equals(expected)


def test_array_of_a_strided_view():
    table = rng.integers(0, 100, (50, 4))
    assert arrow.array(table[:, 2]).equals(pa.array(table[:, 2]))


@pytest.mark.parametrize("texts", [[], ["committed"], ["committed", "aborted", "", "pending", "ü"]])
def test_strings(texts):
    got = arrow.strings(texts)
    got.validate(full=True)
    assert got.equals(pa.array(texts, pa.string()))


@pytest.mark.parametrize("schema", [RAW_QUARANTINE, RAW_OFFSET_COMMITS])
def test_empty_and_pylist_tables(schema):
    assert arrow.empty_table(schema).equals(schema.empty_table())
    assert arrow.pylist_table([], schema).equals(schema.empty_table())
    row = {name: None for name in schema.names}
    assert arrow.pylist_table([row], schema).equals(pa.Table.from_pylist([row], schema=schema))


def test_commit_decoding_does_not_import_pandas():
    probe = (
        "import sys\n"
        "from pipelines.kafka.segment import warm_up\n"
        "warm_up()\n"
        "print('pandas' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
