"""Committed offsets: numeric, non-negative, never beyond the log end, never moving back."""

import great_expectations.expectations as gxe

from pipelines.quality.spec import END, ERROR, Check, Suite

SUITE = Suite(
    name="offsets",
    checks=[
        Check(
            name="no_offset_regressions",
            view="offset_regressions",
            level=ERROR,
            expectation=gxe.ExpectColumnPairValuesAToBeGreaterThanB(
                column_A="committed_offset",
                column_B="previous_committed_offset",
                or_equal=True,
                ignore_row_if="either_value_is_missing",
            ),
            description="No effective commit is below the previous effective commit of its partition "
            "(marts/offset_regressions).",
        ),
        Check(
            name="lag_non_negative",
            view="consumer_lag",
            level=ERROR,
            expectation=gxe.ExpectColumnValuesToBeBetween(column="lag", min_value=0),
            description="Consumer lag (log end - committed offset) is >= 0 where the log end is known.",
        ),
        Check(
            name="committed_within_log_end",
            view="consumer_lag",
            level=ERROR,
            expectation=gxe.ExpectColumnPairValuesAToBeGreaterThanB(
                column_A="log_end_offset",
                column_B="committed_offset",
                or_equal=True,
                ignore_row_if="either_value_is_missing",
            ),
            description="The latest committed offset is at most the partition's log end offset.",
        ),
        Check(
            name="kafka_offsets_non_negative",
            view="offset_commits",
            level=ERROR,
            expectation=gxe.ExpectColumnValuesToBeBetween(column="committed_offset", min_value=0),
            description="Offsets committed to __consumer_offsets are >= 0 (tombstones carry none).",
        ),
        Check(
            name="zk_offsets_numeric",
            view="zk_offset_znodes",
            level=ERROR,
            expectation=gxe.ExpectColumnValuesToMatchRegex(column="value", regex=r"^[0-9]+" + END),
            description="Offsets stored in ZooKeeper (/consumers/[group]/offsets/[topic]/[partition]) "
            "are decimal numbers >= 0.",
        ),
    ],
)
