"""Writers of several processes committing to the same Iceberg tables at once (runs extracted
side by side: the demo's two clusters, parallel Airflow runs): every step's commit lands, on its
own branch, then on ``main``, however the commits interleave.

pyiceberg's SQL catalog applies a commit's updates to the table's metadata as it is when the
commit reaches it; a snapshot staged on an older state of the table then fails (a stale sequence
number) or, through pyiceberg's own retry, loses the step's branch. The expected rows are the
rows each process wrote, read through pyiceberg's plain ``scan()`` of ``main``."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from pipelines.warehouse.iceberg import publish
from pipelines.warehouse.warehouse import open_warehouse

TABLE, STEPS, ROWS = "raw/offset_commits", 4, 3
WRITER = textwrap.dedent("""
    import sys
    import pyarrow as pa
    from pipelines.warehouse.warehouse import open_warehouse
    from pipelines.warehouse.tables import SCHEMAS

    root, table, tag, steps, rows = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
    wh = open_warehouse(root)
    schema = SCHEMAS[table]
    for i in range(steps):
        data = [{c: None for c in schema.names} | {"group_id": f"{tag}{i}-{k}"} for k in range(rows)]
        with wh.transaction(f"{tag}{i}", "extract_offsets") as tx:
            tx.write(table, pa.Table.from_pylist(data, schema=schema))
    """)


@pytest.mark.timeout(240)
def test_three_processes_writing_one_table_each_commit_lands(tmp_path):
    root = tmp_path / "warehouse"
    wh = open_warehouse(root)
    wh.table(TABLE)  # created once: the race is over commits, not over creating the table
    tags = ("a", "b", "c")
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(root), TABLE, tag, str(STEPS), str(ROWS)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for tag in tags]
    for proc in procs:
        _, err = proc.communicate(timeout=200)
        assert proc.returncode == 0, err[-3000:]
    ice = wh.catalog.load_table(wh.ident(TABLE))
    assert set(ice.metadata.refs) == {"main"}  # every step's branch published and removed
    got = sorted(ice.scan(selected_fields=("group_id",)).to_arrow().column("group_id").to_pylist())
    assert got == sorted(f"{t}{i}-{k}" for t in tags for i in range(STEPS) for k in range(ROWS))


def test_a_table_an_older_kaudit_created_gets_pyiceberg_retry_off_once(tmp_path):
    wh = open_warehouse(tmp_path / "warehouse")
    ice = wh.table(TABLE)
    with ice.transaction() as txn:  # as an older kaudit created it: pyiceberg's own retry on
        txn.remove_properties("commit.retry.num-retries")
    assert "commit.retry.num-retries" not in wh.catalog.load_table(wh.ident(TABLE)).properties
    assert wh.table(TABLE).properties["commit.retry.num-retries"] == "0"
    again = wh.catalog.load_table(wh.ident(TABLE))
    assert again.properties.items() >= publish.TABLE_PROPERTIES.items()
