"""Share groups through the whole pipeline, on data dirs a real Kafka 4.2.2 broker wrote
(``pipelines/demo/real/share-4.2.2``): the demo's run of that data dir (the session's
``demo_run``: ``extract offsets``, ``extract log-end``, the build and its share group marts)
against what the cluster answered before it stopped and what the scenario did
(``testkit.cluster.share_streams_oracle``, the fixture's ``oracle.json``)."""

from __future__ import annotations

import json

import pytest

from pipelines.demo import REAL
from testkit.cluster.share_streams_oracle import compare, planted, share_tables

pytestmark = pytest.mark.integration

FIXTURE = REAL / "share-4.2.2"


def test_real_share_groups_audited(demo_run):
    oracle = json.loads((FIXTURE / "oracle.json").read_text())
    tables = share_tables(demo_run.warehouse, demo_run.estate_run("share"))
    assert compare(tables, oracle) >= 20
    planted(tables, oracle)
