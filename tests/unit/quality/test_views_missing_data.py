"""Which views have data to judge: a missing or empty table is "no data", never a pass."""

from __future__ import annotations

import pytest

from pipelines.quality.views import VIEWS, missing_data

FULL = {t: 3 for v in VIEWS.values() for t in (*v.tables, *v.evidence, *v.present)}


def test_every_view_declares_what_it_needs():
    for name, view in VIEWS.items():
        assert view.evidence or view.present, name
        assert set(view.evidence) | set(view.present) <= set(view.tables) | {"raw/offset_commits"}, name
    assert all(missing_data(name, FULL.get) is None for name in VIEWS)


@pytest.mark.parametrize(
    "view,rows,why",
    [
        ("brokers", {}, "the run has no core/brokers"),
        ("brokers", {"core/brokers": 0}, "core/brokers is empty"),
        # an empty quarantine is a finding (nothing quarantined); a missing one is no data
        ("quarantine", {"raw/quarantine": 0}, None),
        ("quarantine", {}, "the run has no raw/quarantine"),
        # no regression among commits passes; no commits, or no mart, is no data
        ("offset_regressions", {"raw/offset_commits": 5, "marts/offset_regressions": 0}, None),
        ("offset_regressions", {"raw/offset_commits": 0, "marts/offset_regressions": 0}, "raw/offset_commits is empty"),
        ("offset_regressions", {"raw/offset_commits": 5}, "the run has no marts/offset_regressions"),
        # Kafka tables absent from a ZooKeeper-only run do not stop the owners check
        ("observed_owners", {"core/assignment_audit": 4}, None),
        # no commit below the log start passes; no log ends, or no data_loss_risk mart, is no data
        ("commits_below_log_start", {"marts/consumer_lag": 3, "raw/log_end_offsets": 2, "marts/data_loss_risk": 0},
         None),
        ("commits_below_log_start", {"marts/consumer_lag": 3, "raw/log_end_offsets": 0, "marts/data_loss_risk": 0},
         "raw/log_end_offsets is empty"),
        ("commits_below_log_start", {"marts/consumer_lag": 3, "raw/log_end_offsets": 2},
         "the run has no marts/data_loss_risk"),
    ],
)
def test_missing_data(view, rows, why):
    assert missing_data(view, rows.get) == why
