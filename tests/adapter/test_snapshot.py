"""dbt-tests-adapter's snapshot suites, their raw SQL fixtures in Spark SQL (spark_dialect)."""

from __future__ import annotations

import pytest
from dbt.tests.adapter.simple_snapshot import fixtures as snapshot_fixtures
from dbt.tests.adapter.simple_snapshot import new_record_dbt_valid_to_current as valid_to_current_fixtures
from dbt.tests.adapter.simple_snapshot import new_record_timestamp_mode as new_record_fixtures
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
from spark_dialect import SparkDialect, two_part_names


class SnapshotOfSeed:
    """The snapshot `snapshot_actual` of the seed table, named in Spark's two parts."""

    @pytest.fixture(scope="class")
    def snapshots(self) -> dict[str, str]:
        return {"snapshot.sql": two_part_names(snapshot_fixtures.snapshot_actual_sql)}


class TestSimpleSnapshot(SparkDialect, BaseSimpleSnapshot):
    pass


class TestSnapshotCheck(SparkDialect, BaseSnapshotCheck):
    pass


class TestSnapshotColumnNames(SparkDialect, SnapshotOfSeed, BaseSnapshotColumnNames):
    pass


class TestSnapshotColumnNamesFromDbtProject(SparkDialect, SnapshotOfSeed, BaseSnapshotColumnNamesFromDbtProject):
    pass


class TestSnapshotInvalidColumnNames(SparkDialect, SnapshotOfSeed, BaseSnapshotInvalidColumnNames):
    pass


class TestSnapshotDbtValidToCurrent(SparkDialect, SnapshotOfSeed, BaseSnapshotDbtValidToCurrent):
    pass


class TestSnapshotMultiUniqueKey(SparkDialect, BaseSnapshotMultiUniqueKey):
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {
            "seed.sql": two_part_names(snapshot_fixtures.model_seed_sql),
            "snapshots.yml": snapshot_fixtures.snapshots_multi_key_yml,
            "ref_snapshot.sql": snapshot_fixtures.ref_snapshot_sql,
        }


class TestSnapshotEphemeralHardDeletes(SparkDialect, BaseSnapshotEphemeralHardDeletes):
    @pytest.fixture(scope="class")
    def source_alter_sql(self) -> str:
        # A new source column, without Postgres's `default 'dummy_value'`: the
        # table formats' Spark tables take no column defaults (Spark 3.5).
        return "alter table {schema}.src_customers add column dummy_column string"


class NewRecordSnapshot:
    @pytest.fixture(scope="class")
    def snapshots(self) -> dict[str, str]:
        return {"snapshot.sql": two_part_names(new_record_fixtures._snapshot_actual_sql)}


class TestSnapshotNewRecordTimestampMode(SparkDialect, NewRecordSnapshot, BaseSnapshotNewRecordTimestampMode):
    pass


class TestSnapshotNewRecordCheckMode(SparkDialect, NewRecordSnapshot, BaseSnapshotNewRecordCheckMode):
    pass


class TestSnapshotNewRecordDbtValidToCurrent(SparkDialect, BaseSnapshotNewRecordDbtValidToCurrent):
    @pytest.fixture(scope="class")
    def snapshots(self) -> dict[str, str]:
        return {"snapshot.sql": two_part_names(valid_to_current_fixtures._snapshot_actual_sql)}
