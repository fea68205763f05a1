"""MirrorMaker 2 failover readiness: one row per replication pair, group and source partition;
MirrorMaker's translation never past the position that re-reads and skips nothing; re-read
counts never negative; no record skipped and every checkpoint explained (warnings); the findings
named from their set (CONTRACT: core/mm2_failover, core/mm2_findings)."""

import great_expectations.expectations as gxe

from pipelines.quality.spec import ERROR, WARNING, Check, Suite
from pipelines.warehouse.tables import MM2_FINDINGS

KEY = ["source_alias", "target_alias", "group_id", "topic", "partition"]

SUITE = Suite(
    name="mm2",
    checks=[
        Check(
            name="mm2_failover_unique",
            view="mm2_failover",
            level=ERROR,
            expectation=gxe.ExpectCompoundColumnsToBeUnique(column_list=KEY),
            description="One failover row per replication pair, group and source partition.",
        ),
        Check(
            name="mm2_translation_within_expected",
            view="mm2_failover",
            level=ERROR,
            expectation=gxe.ExpectColumnPairValuesAToBeGreaterThanB(
                column_A="expected_target_offset", column_B="translated_offset", or_equal=True,
                ignore_row_if="either_value_is_missing"),
            description="MirrorMaker's translation (the newest sync at or below the source offset, +1 unless "
            "exact) is never past the target position that re-reads and skips nothing.",
        ),
        Check(
            name="mm2_reread_non_negative",
            view="mm2_failover",
            level=ERROR,
            expectation=gxe.ExpectColumnValuesToBeBetween(column="records_reread", min_value=0),
            description="A failover re-reads a non-negative number of records.",
        ),
        Check(
            name="mm2_no_records_skipped",
            view="mm2_failover",
            level=WARNING,
            expectation=gxe.ExpectColumnValuesToBeBetween(column="records_skipped", max_value=0),
            description="A failover now skips no record (a group whose offset on the target is past the "
            "source's loses the records between: marts/mm2_failover_readiness).",
        ),
        Check(
            name="mm2_checkpoints_agree",
            view="mm2_failover",
            level=WARNING,
            expectation=gxe.ExpectColumnValuesToBeInSet(column="checkpoint_status", value_set=["exact", "older_sync"]),
            description="Every newest checkpoint is MirrorMaker's translation from one of its offset syncs "
            "(null: never checkpointed, a finding of its own).",
        ),
        Check(
            name="mm2_findings_named",
            view="mm2_findings",
            level=ERROR,
            expectation=gxe.ExpectColumnValuesToBeInSet(column="finding", value_set=list(MM2_FINDINGS)),
            description="Every MirrorMaker 2 finding is one of the audit's named findings.",
        ),
    ],
)
