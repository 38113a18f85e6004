"""dbt-tests-adapter's snapshot suites, their raw SQL fixtures in Spark SQL (spark_dialect)."""

from __future__ import annotations

import datetime
from typing import Any

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
from dbt.tests.util import check_relations_equal, run_dbt, run_sql_with_adapter
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
    """dbt's case reads rows by position from a select with no ``order by``
    (Postgres's heap order); a table format's rows come back in file order,
    which a MERGE changes. Here the same checks find each row by its id and
    version instead, and the whole table is compared as dbt's case does."""

    def test_valid_to_current(self, project: Any) -> None:
        current = datetime.datetime(2099, 12, 31, 0, 0)
        project.run_sql(snapshot_fixtures.create_seed_sql)
        project.run_sql(snapshot_fixtures.create_snapshot_expected_sql)
        project.run_sql(snapshot_fixtures.seed_insert_sql)
        project.run_sql(snapshot_fixtures.populate_snapshot_expected_valid_to_current_sql)
        assert len(run_dbt(["snapshot"])) == 1
        assert set(valid_to_by_version(project).values()) == {current}

        project.run_sql(snapshot_fixtures.invalidate_sql)
        project.run_sql(snapshot_fixtures.update_with_current_sql)
        assert len(run_dbt(["snapshot"])) == 1
        valid_to = valid_to_by_version(project)
        assert valid_to[(1, 0)] == current
        # The first version of a changed row ends where the second begins
        # (its updated_at an hour later); the second is current.
        assert valid_to[(10, 0)] == datetime.datetime(2016, 8, 20, 16, 44, 49)
        assert valid_to[(10, 1)] == current
        check_relations_equal(project.adapter, ["snapshot_actual", "snapshot_expected"])


def valid_to_by_version(project: Any) -> dict[tuple[int, int], datetime.datetime]:
    """Each snapshot row's valid_to by (id, version: 0 for the id's first)."""
    rows = run_sql_with_adapter(
        project.adapter,
        "select id, test_valid_to from {schema}.snapshot_actual order by id, test_valid_from",
        "all",
    )
    versions: dict[int, int] = {}
    found = {}
    for row_id, valid_to in rows:
        found[(row_id, versions.get(row_id, 0))] = valid_to
        versions[row_id] = versions.get(row_id, 0) + 1
    return found


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
