"""What the extractors could not read or did not know: reported, not fatal."""

import great_expectations.expectations as gxe

from pipelines.quality.spec import WARNING, Check, Suite

SUITE = Suite(
    name="inputs",
    checks=[
        Check(
            name="no_quarantined_inputs",
            view="quarantine",
            level=WARNING,
            expectation=gxe.ExpectTableRowCountToEqual(value=0),
            description="No corrupt input part was quarantined (raw/quarantine).",
        ),
        Check(
            name="no_unknown_record_types",
            view="coordinator_records",
            level=WARNING,
            expectation=gxe.ExpectTableRowCountToEqual(value=0),
            description="__consumer_offsets holds no record types kaudit does not decode (raw/coordinator_records).",
        ),
    ],
)
