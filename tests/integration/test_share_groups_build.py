"""Share groups through the whole pipeline, on data dirs a real Kafka 4.2.2 broker wrote
(``pipelines/demo/real/share-4.2.2``): ``kaudit extract offsets``, ``extract log-end`` and
``build`` against what the cluster answered before it stopped and what the scenario did
(``testkit.cluster.share_streams_oracle``)."""

from __future__ import annotations

import json

import pytest

from pipelines.demo import REAL
from testkit.cluster.share_streams_oracle import build, compare, planted

pytestmark = pytest.mark.integration

FIXTURE = REAL / "share-4.2.2"


def test_real_share_groups_audited(spark, tmp_path):
    oracle = json.loads((FIXTURE / "oracle.json").read_text())
    tables = build(FIXTURE / "logs", tmp_path / "warehouse")
    assert compare(tables, oracle) >= 20
    planted(tables, oracle)
