"""Which run a command works on (pipelines.warehouse.runs): the rule of README "Runs", case by case."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from pipelines.errors import InputError, UsageError
from pipelines.warehouse.runs import SITTING, RunLog, check_run_id, choose

T0 = datetime(2026, 11, 23, 9, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize("good", ["20261123T090000Z", "prod-eu_1", "a", "x" * 64])
def test_run_ids_that_are_accepted(good):
    assert check_run_id(good) == good


@pytest.mark.parametrize("bad", ["", "../../x", "a b", "v1.2", "a/b", "x=y", ".hidden", "é", "x" * 65])
def test_run_ids_that_are_usage_errors(bad):
    with pytest.raises(UsageError) as err:
        check_run_id(bad)
    assert str(err.value) == f"--run-id {bad!r}: a run id is letters, digits, '-' and '_' only (at most 64)"


def test_an_empty_warehouse(tmp_path):
    assert choose(tmp_path, None, "extract", T0).run_id == "20261123T090000Z"
    assert choose(tmp_path, None, "extract", T0).how == "new"
    for given in (None, "latest"):
        with pytest.raises(InputError, match="no run in this warehouse yet"):
            choose(tmp_path, given, "step", T0)


def test_extracts_of_one_sitting_share_a_run_until_it_is_built(tmp_path):
    log = RunLog(tmp_path)
    first = choose(tmp_path, None, "extract", T0)
    log.record_step(first.run_id, "extract_zk_snapshot", T0)
    later = T0 + timedelta(minutes=5)
    second = choose(tmp_path, None, "extract", later)
    assert (second.run_id, second.how) == (first.run_id, "continued")
    log.record_step(first.run_id, "offsets", later)
    assert choose(tmp_path, None, "step", later).run_id == first.run_id
    log.record_step(first.run_id, "build_core", later)
    # built: the next extract starts a new run, build/validate/report still see the built one
    third = choose(tmp_path, None, "extract", later + timedelta(minutes=1))
    assert third.how == "new" and third.run_id != first.run_id
    assert choose(tmp_path, None, "step", later).run_id == first.run_id


def test_an_old_unbuilt_run_is_not_continued(tmp_path):
    RunLog(tmp_path).record_step("old", "offsets", T0)
    assert choose(tmp_path, None, "extract", T0 + SITTING - timedelta(seconds=1)).run_id == "old"
    fresh = choose(tmp_path, None, "extract", T0 + SITTING)
    assert fresh.how == "new" and fresh.run_id == "20261123T170000Z"


def test_a_named_run_is_never_redirected(tmp_path):
    RunLog(tmp_path).record_step("open-run", "offsets", T0)
    for kind in ("extract", "step", "new"):
        assert choose(tmp_path, "airflow-1", kind, T0).run_id == "airflow-1"
    with pytest.raises(UsageError):
        choose(tmp_path, "a b", "extract", T0)


def test_latest_is_the_run_started_last_whatever_its_name(tmp_path):
    log = RunLog(tmp_path)
    log.record_step("zzz-first", "offsets", T0)
    log.record_step("aaa-second", "offsets", T0 + timedelta(seconds=1))
    log.record_step("zzz-first", "build_core", T0 + timedelta(minutes=9))  # later steps do not reorder
    assert choose(tmp_path, "latest", "extract", T0).run_id == "aaa-second"
    assert [r.run_id for r in log.all()] == ["zzz-first", "aaa-second"]


def test_a_new_run_in_the_same_second_gets_its_own_id(tmp_path):
    log = RunLog(tmp_path)
    log.record_step("20261123T090000Z", "build_core", T0)
    assert choose(tmp_path, None, "new", T0).run_id == "20261123T090000Z-2"


def test_the_first_step_dates_the_run(tmp_path):
    log = RunLog(tmp_path)
    log.record_step("r", "offsets", T0)
    log.record_step("r", "log-end", T0 + timedelta(hours=1))
    info = log.info("r")
    assert info.started_at == T0 and set(info.steps) == {"offsets", "log-end"} and not info.built
    assert json.loads((tmp_path / "runs" / "run_id=r" / "run.json").read_text())["started_at"] == T0.isoformat()


def test_a_published_transaction_records_its_step(tmp_path):
    import pyarrow as pa

    from pipelines.warehouse.reading import row_count
    from pipelines.warehouse.tables import SCHEMAS
    from pipelines.warehouse.warehouse import Warehouse

    wh = Warehouse(tmp_path)
    wh.write_table("raw/log_end_offsets", "r1", SCHEMAS["raw/log_end_offsets"].empty_table(), step="log-end")
    assert set(wh.runs.info("r1").steps) == {"log-end"}
    assert row_count(wh, "raw/log_end_offsets", "r1") == 0
    with pytest.raises(RuntimeError):
        with wh.transaction("r2", step="offsets") as tx:
            tx.write("raw/log_end_offsets", pa.table({}))
            raise RuntimeError("the step failed")
    assert wh.runs.info("r2") is None  # a failed step leaves no run behind
