"""Table versions as typed records: time travel, partition history, restore, retention.

The procedures behind the ``adapter/dbt/include/latecomer/macros/versions`` run-operations. The macros run
the SQL (version history, fingerprints, time travel, restore, maintenance
calls) and pass the rows here through the adapter's ``@available`` methods
(``adapter/dbt/adapters/latecomer/versioning.py``); nothing here needs Spark.

Time
    A version's times are UTC strings ``yyyy-MM-dd HH:mm:ss.SSSSSS`` as
    ``table_versions()`` writes them (Iceberg ``made_current_at`` /
    ``snapshots.committed_at``, Delta ``DESCRIBE HISTORY`` timestamps; the
    session time zone is UTC). They are compared as instants: a string (or
    datetime) without an offset is UTC, one with an offset is converted to UTC.
    ``committed_at`` is when the version became the table's state (what
    ``timestamp as of`` resolves against), ``created_at`` when its data was
    written; they differ for an Iceberg snapshot made current again by a
    restore.

Order
    A version list is in the order the versions became current, oldest first.
    An Iceberg snapshot made current again appears again (operation
    ``restore``); "the last entry that ..." means the latest such event.

Boundaries
    - the version current at time ``t`` is the last one with
      ``committed_at <= t``: a version committed exactly at ``t`` is current at
      ``t`` (inclusive), and none is current before the first commit;
    - the retention horizon protects the version current at the cutoff (so one
      committed exactly at the cutoff, inclusive) and every later entry; versions
      *created* strictly before ``expire_before`` may be expired.

The procedures are in four modules: :mod:`~python_jobs.core.versions.records`
(the version records, read from each format's history, and the version a
request names), :mod:`~python_jobs.core.versions.partitions` (one partition's
history), :mod:`~python_jobs.core.versions.restore` (the version a restore
names) and :mod:`~python_jobs.core.versions.retention` (retention and
maintenance). This package names the ones the adapter calls, so the adapter
reaches them all as ``versions.<name>``.
"""

from python_jobs.core.versions.partitions import (
    PartitionLayout,
    changed_versions,
    partition_history,
    partition_history_report,
    partition_layout,
    partition_states,
)
from python_jobs.core.versions.records import (
    TableVersion,
    VersionsError,
    checked_invocation_id,
    delta_versions,
    iceberg_versions,
    table_versions,
    version_current_at,
    version_left_by_invocation,
    version_with_id,
)
from python_jobs.core.versions.restore import (
    RestoreRequest,
    restore_request,
    restore_target_missing,
)
from python_jobs.core.versions.retention import (
    MaintenanceTotals,
    RetentionBoundary,
    maintenance_header,
    maintenance_summary,
    properties_to_set,
    retention_boundary,
    table_maintenance,
    unversioned_table_maintenance,
)

__all__ = [
    "MaintenanceTotals",
    "PartitionLayout",
    "RestoreRequest",
    "RetentionBoundary",
    "TableVersion",
    "VersionsError",
    "changed_versions",
    "checked_invocation_id",
    "delta_versions",
    "iceberg_versions",
    "maintenance_header",
    "maintenance_summary",
    "partition_history",
    "partition_history_report",
    "partition_layout",
    "partition_states",
    "properties_to_set",
    "restore_request",
    "restore_target_missing",
    "retention_boundary",
    "table_maintenance",
    "table_versions",
    "unversioned_table_maintenance",
    "version_current_at",
    "version_left_by_invocation",
    "version_with_id",
]
