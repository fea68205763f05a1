"""The Iceberg jars for Spark: pinned coordinates, and a clear error while they are not fetched."""

from __future__ import annotations

import re

import pytest

from pipelines.warehouse.iceberg import jars


def test_coordinates_are_pinned():
    for coord in jars.JARS:
        assert re.fullmatch(r"[\w.]+:[\w.-]+:\d+(\.\d+)+", coord), coord
    assert any(c.startswith("org.apache.iceberg:iceberg-spark-runtime-4.1_2.13:") for c in jars.JARS)


def test_missing_jars_name_the_make_target(tmp_path):
    with pytest.raises(jars.JarsMissing, match=r"make iceberg-jars"):
        jars.paths(tmp_path)
    for coord in jars.JARS:
        (tmp_path / jars.jar_name(coord)).write_bytes(b"PK")
    assert [p.name for p in jars.paths(tmp_path)] == [jars.jar_name(c) for c in jars.JARS]
