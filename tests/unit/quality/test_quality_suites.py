"""The suites of expectations/ as data: the issue's invariants at their levels, every check
on a known view, unique names; a bad suite file is refused."""

from __future__ import annotations

import pytest

from pipelines.errors import StepError
from pipelines.quality.spec import ERROR, WARNING, Check, load_suites
from pipelines.quality.views import VIEWS

# The invariants, each covered by a check of this level.
REQUIRED = {
    "owners_unique_per_partition": ERROR,
    "one_owner_at_every_moment": ERROR,
    "owners_are_registered": ERROR,
    "assignment_status_ok": ERROR,
    "no_offset_regressions": ERROR,
    "lag_non_negative": ERROR,
    "committed_within_log_end": ERROR,
    "kafka_offsets_non_negative": ERROR,
    "zk_offsets_numeric": ERROR,
    "leader_in_isr": ERROR,
    "leader_is_registered_broker": ERROR,
    "broker_ids_unique": ERROR,
    "cluster_id_format": ERROR,
    "no_pending_topic_deletions": WARNING,
    "no_quarantined_inputs": WARNING,
    "no_unknown_record_types": WARNING,
    "partition_records_name_known_topics": WARNING,
    "kraft_partitions_have_a_topic": ERROR,
    "no_commit_below_log_start_unflagged": ERROR,
}


def test_suites_cover_the_invariants_with_their_levels():
    suites = load_suites()
    checks = {c.name: c for s in suites for c in s.checks}
    assert {name: checks[name].level for name in REQUIRED} == REQUIRED
    for check in checks.values():
        assert check.view in VIEWS, check.name
        assert check.description, check.name


REGEX_CASES = {
    "cluster_id_format": {"MkQ0ZjE5NzQ4NTQ0Yzk0Mg": True, "a" * 22: True, "a" * 23: False, "abc\n": False,
                          "ab c": False, "": False},
    "zk_offsets_numeric": {"0": True, "12345678901234": True, "12\n": False, "-1": False, "1 ": False, "": False},
}


@pytest.mark.parametrize("name", sorted(REGEX_CASES))
def test_a_regex_check_reads_alike_in_python_and_in_spark(spark, name):
    """GX judges a small run's views with pandas (Python's re) and a big run's with Spark
    (Java's regex): a regex check matches the same whole values in both, a trailing newline
    included."""
    import re

    from pyspark.sql import functions as F

    regex = next(c for s in load_suites() for c in s.checks if c.name == name).expectation.regex
    cases = REGEX_CASES[name]
    assert {v: re.search(regex, v) is not None for v in cases} == cases
    rows = spark.createDataFrame([(v,) for v in cases], "v string").select("v", F.col("v").rlike(regex).alias("ok"))
    assert {r.v: r.ok for r in rows.collect()} == cases


def test_duplicate_names_and_bad_files_are_refused(tmp_path):
    body = (
        "import great_expectations.expectations as gxe\n"
        "from pipelines.quality.spec import Check, Suite\n"
        "SUITE = Suite(name='{n}', checks=[Check(name='same', view='brokers', "
        "expectation=gxe.ExpectColumnValuesToBeUnique(column='broker_id'))])\n"
    )
    (tmp_path / "a.py").write_text(body.format(n="a"))
    (tmp_path / "b.py").write_text(body.format(n="b"))
    with pytest.raises(ValueError, match="defined in suites a and b"):
        load_suites(tmp_path)
    (tmp_path / "b.py").write_text("X = 1\n")
    with pytest.raises(ValueError, match="defines no SUITE"):
        load_suites(tmp_path)


def test_a_directory_without_suites_is_an_error(tmp_path):
    with pytest.raises(StepError, match="no expectation suites"):
        load_suites(tmp_path)


def test_check_validates_level_and_name():
    with pytest.raises(ValueError, match="level"):
        Check(name="x", view="brokers", expectation=None, level="fatal")
    with pytest.raises(ValueError, match="lower_snake_case"):
        Check(name="Bad Name", view="brokers", expectation=None)
