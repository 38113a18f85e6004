"""dbt-tests-adapter's snapshot suites, their raw SQL fixtures in Spark SQL (spark_dialect)."""

from __future__ import annotations

import pytest
from dbt.tests.adapter.simple_snapshot.new_record_check_mode import BaseSnapshotNewRecordCheckMode
from dbt.tests.adapter.simple_snapshot.new_record_dbt_valid_to_current import BaseSnapshotNewRecordDbtValidToCurrent
from dbt.tests.adapter.simple_snapshot.new_record_timestamp_mode import BaseSnapshotNewRecordTimestampMode
from dbt.tests.adapter.simple_snapshot.test_ephemeral_snapshot_hard_deletes import BaseSnapshotEphemeralHardDeletes
from dbt.tests.adapter.simple_snapshot.test_snapshot import BaseSimpleSnapshot, BaseSnapshotCheck
from dbt.tests.adapter.simple_snapshot.test_various_configs import (
    BaseSnapshotColumnNames,
    BaseSnapshotColumnNamesFromDbtProject,
    BaseSnapshotDbtValidToCurrent,
    BaseSnapshotInvalidColumnNames,
    BaseSnapshotMultiUniqueKey,
)
from spark_dialect import SparkDialect


class TestSimpleSnapshot(SparkDialect, BaseSimpleSnapshot):
    pass


class TestSnapshotCheck(SparkDialect, BaseSnapshotCheck):
    pass


class TestSnapshotColumnNames(SparkDialect, BaseSnapshotColumnNames):
    pass


class TestSnapshotColumnNamesFromDbtProject(SparkDialect, BaseSnapshotColumnNamesFromDbtProject):
    pass


class TestSnapshotInvalidColumnNames(SparkDialect, BaseSnapshotInvalidColumnNames):
    pass


class TestSnapshotDbtValidToCurrent(SparkDialect, BaseSnapshotDbtValidToCurrent):
    pass


class TestSnapshotMultiUniqueKey(SparkDialect, BaseSnapshotMultiUniqueKey):
    pass


class TestSnapshotEphemeralHardDeletes(SparkDialect, BaseSnapshotEphemeralHardDeletes):
    @pytest.fixture(scope="class")
    def source_alter_sql(self) -> str:
        # A new source column, without Postgres's `default 'dummy_value'`: the
        # table formats' Spark tables take no column defaults (Spark 3.5).
        return "alter table {schema}.src_customers add column dummy_column string"


class TestSnapshotNewRecordTimestampMode(SparkDialect, BaseSnapshotNewRecordTimestampMode):
    pass


class TestSnapshotNewRecordCheckMode(SparkDialect, BaseSnapshotNewRecordCheckMode):
    pass


class TestSnapshotNewRecordDbtValidToCurrent(SparkDialect, BaseSnapshotNewRecordDbtValidToCurrent):
    pass
