"""Data loss: every committed offset below its partition's log start is flagged."""

import great_expectations.expectations as gxe

from pipelines.quality.spec import ERROR, Check, Suite

SUITE = Suite(
    name="data_loss",
    checks=[
        Check(
            name="no_commit_below_log_start_unflagged",
            view="commits_below_log_start",
            level=ERROR,
            expectation=gxe.ExpectColumnValuesToBeInSet(column="flagged", value_set=[True]),
            description="Every current committed offset below its partition's log start (records deleted "
            "before the group read them) is a 'lost' row of marts/data_loss_risk.",
        ),
    ],
)
