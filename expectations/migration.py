"""The ZooKeeper-to-KRaft migration (KIP-866): what ZooKeeper held is what KRaft holds (the
cluster id, topic ids, replicas, topic configs) and no group's committed offset was lost or
moved backwards in it; statuses named from their sets (CONTRACT: core/migration_audit,
core/migration_offsets). Judged only when the run's metadata log records a migration."""

import great_expectations.expectations as gxe

from pipelines.quality.spec import ERROR, Check, Suite

SUITE = Suite(
    name="migration",
    checks=[
        Check(
            name="migration_carried_everything_over",
            view="migration_audit",
            level=ERROR,
            expectation=gxe.ExpectColumnValuesToBeInSet(column="is_finding", value_set=[False]),
            description="The cluster id, every topic's id, every partition's replicas and every topic config "
            "ZooKeeper held are in KRaft with the same values (core/migration_audit).",
        ),
        Check(
            name="migration_kept_committed_offsets",
            view="migration_offsets",
            level=ERROR,
            expectation=gxe.ExpectColumnValuesToBeInSet(column="is_finding", value_set=[False]),
            description="No group's committed offset of before the migration is gone or behind it now "
            "(core/migration_offsets: lost, moved_backwards).",
        ),
        Check(
            name="migration_audit_statuses_named",
            view="migration_audit",
            level=ERROR,
            expectation=gxe.ExpectColumnValuesToBeInSet(
                column="status", value_set=["match", "differs", "only_zookeeper", "only_kraft"]),
            description="Every comparison row is match, differs, only_zookeeper or only_kraft.",
        ),
        Check(
            name="migration_offsets_statuses_named",
            view="migration_offsets",
            level=ERROR,
            expectation=gxe.ExpectColumnValuesToBeInSet(
                column="status", value_set=["lost", "moved_backwards", "advanced", "unchanged", "new"]),
            description="Every group partition's status is lost, moved_backwards, advanced, unchanged or new.",
        ),
    ],
)
