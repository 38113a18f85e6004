"""dbt-tests-adapter's model contract and constraint suites (dbt-spark's overrides, on the target's format)."""

from __future__ import annotations

import os
from typing import Any

import pytest
from dbt.tests.adapter.constraints.fixtures import (
    constrained_model_schema_yml,
    foreign_key_model_sql,
    model_fk_constraint_schema_yml,
    model_schema_yml,
    my_incremental_model_sql,
    my_model_incremental_wrong_name_sql,
    my_model_incremental_wrong_order_depends_on_fk_sql,
    my_model_incremental_wrong_order_sql,
    my_model_sql,
    my_model_view_wrong_name_sql,
    my_model_view_wrong_order_sql,
    my_model_wrong_name_sql,
    my_model_wrong_order_depends_on_fk_sql,
    my_model_wrong_order_sql,
)
from dbt.tests.adapter.constraints.test_constraints import (
    BaseConstraintsRollback,
    BaseConstraintsRuntimeDdlEnforcement,
    BaseIncrementalConstraintsColumnsEqual,
    BaseIncrementalConstraintsRollback,
    BaseIncrementalConstraintsRuntimeDdlEnforcement,
    BaseModelConstraintsRuntimeEnforcement,
    BaseTableConstraintsColumnsEqual,
    BaseViewConstraintsColumnsEqual,
)

FORMAT = os.environ.get("ADAPTER_FORMAT", "iceberg").lower()
# Spark has no type named text, and no primary key constraint dbt can add (as dbt-spark's).
constraints_yml = model_schema_yml.replace("text", "string").replace("primary key", "")
fk_constraints_yml = model_fk_constraint_schema_yml.replace("text", "string").replace("primary key", "")
model_constraints_yml = constrained_model_schema_yml.replace("text", "string")

# Constraints are added by `alter table` after the table is created.
EXPECTED_SQL = f"""
create or replace table <model_identifier>
    using {FORMAT}
    as
select
  id,
  color,
  date_day
from

(
    -- depends_on: <foreign_key_model_identifier>
    select
    'blue' as color,
    1 as id,
    '2019-01-01' as date_day ) as model_subq
"""


class SparkTypes:
    """Spark's type names: the contract's YAML types, and the names a contract
    error reports (the session's column types, as Spark writes them)."""

    @pytest.fixture
    def string_type(self) -> str:
        return "string"

    @pytest.fixture
    def int_type(self) -> str:
        return "int"

    @pytest.fixture
    def schema_string_type(self) -> str:
        return "string"

    @pytest.fixture
    def schema_int_type(self) -> str:
        return "int"

    @pytest.fixture
    def data_types(self, int_type: str, schema_int_type: str, string_type: str, schema_string_type: str) -> list:
        # sql_column_value, schema_data_type, error_data_type
        return [
            ["1", schema_int_type, int_type],
            ['"1"', schema_string_type, string_type],
            ["true", "boolean", "boolean"],
            ['array("1","2","3")', "array<string>", "array<string>"],
            ["array(1,2,3)", "array<int>", "array<int>"],
            ["cast('2019-01-01' as date)", "date", "date"],
            ["cast('2019-01-01' as timestamp)", "timestamp", "timestamp"],
            ["cast(1.0 AS DECIMAL(4, 2))", "decimal(4,2)", "decimal"],
        ]


def wrong_order_and_name(wrong_order_sql: str, wrong_name_sql: str) -> dict[str, str]:
    """A columns-equal case's models: one with the contract's columns in another order, one with a wrong name."""
    return {
        "my_model_wrong_order.sql": wrong_order_sql,
        "my_model_wrong_name.sql": wrong_name_sql,
        "constraints_schema.yml": constraints_yml,
    }


class TestTableConstraintsColumnsEqual(SparkTypes, BaseTableConstraintsColumnsEqual):
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return wrong_order_and_name(my_model_wrong_order_sql, my_model_wrong_name_sql)


class TestViewConstraintsColumnsEqual(SparkTypes, BaseViewConstraintsColumnsEqual):
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return wrong_order_and_name(my_model_view_wrong_order_sql, my_model_view_wrong_name_sql)


class TestIncrementalConstraintsColumnsEqual(SparkTypes, BaseIncrementalConstraintsColumnsEqual):
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return wrong_order_and_name(my_model_incremental_wrong_order_sql, my_model_incremental_wrong_name_sql)


class TestTableConstraintsDdlEnforcement(BaseConstraintsRuntimeDdlEnforcement):
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {
            "my_model.sql": my_model_wrong_order_depends_on_fk_sql,
            "foreign_key_model.sql": foreign_key_model_sql,
            "constraints_schema.yml": fk_constraints_yml,
        }

    @pytest.fixture(scope="class")
    def expected_sql(self) -> str:
        return EXPECTED_SQL


class TestIncrementalConstraintsDdlEnforcement(BaseIncrementalConstraintsRuntimeDdlEnforcement):
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {
            "my_model.sql": my_model_incremental_wrong_order_depends_on_fk_sql,
            "foreign_key_model.sql": foreign_key_model_sql,
            "constraints_schema.yml": fk_constraints_yml,
        }

    @pytest.fixture(scope="class")
    def expected_sql(self) -> str:
        return EXPECTED_SQL


# dbt-spark enforces a contract's not_null and check constraints with `alter table
# ... add constraint` and `alter column ... set not null` on Delta Lake tables
# only (spark__persist_constraints); Iceberg's Spark tables take neither, so a
# row that breaks them is written, where these cases expect the build to fail.
ENFORCED_ON_DELTA_ONLY = pytest.mark.skipif(
    FORMAT != "delta",
    reason="dbt model contracts' not_null and check constraints are enforced on Delta Lake only: "
    "Iceberg tables in Spark 3.5 support neither CHECK constraints nor SET NOT NULL",
)


class RollbackSetup:
    @pytest.fixture(scope="class")
    def expected_error_messages(self) -> list[str]:
        return [
            "violate the new CHECK constraint",
            "DELTA_NEW_CHECK_CONSTRAINT_VIOLATION",
            "DELTA_NEW_NOT_NULL_VIOLATION",
            "violate the new NOT NULL constraint",
            "(id > 0) violated by row with values:",
            "DELTA_VIOLATE_CONSTRAINT_WITH_VALUES",
            "NOT NULL constraint violated for col",
            "Cannot write nullable values to non-null column",
            "NOT_NULL_ASSERT_VIOLATION",
        ]

    def assert_expected_error_messages(self, error_message: str, expected_error_messages: list[str]) -> None:
        # The CHECK constraint is added before the NOT NULL one: any of them.
        assert any(msg in error_message for msg in expected_error_messages), error_message


@ENFORCED_ON_DELTA_ONLY
class TestTableConstraintsRollback(RollbackSetup, BaseConstraintsRollback):
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {"my_model.sql": my_model_sql, "constraints_schema.yml": constraints_yml}

    # Constraints are applied after the table is replaced (as on dbt-spark).
    @pytest.fixture(scope="class")
    def expected_color(self) -> str:
        return "red"


@ENFORCED_ON_DELTA_ONLY
class TestIncrementalConstraintsRollback(RollbackSetup, BaseIncrementalConstraintsRollback):
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {"my_model.sql": my_incremental_model_sql, "constraints_schema.yml": constraints_yml}


class TestModelConstraintsRuntimeEnforcement(BaseModelConstraintsRuntimeEnforcement):
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, Any]:
        return {
            "my_model.sql": my_model_wrong_order_depends_on_fk_sql,
            "foreign_key_model.sql": foreign_key_model_sql,
            "constraints_schema.yml": fk_constraints_yml,
        }

    @pytest.fixture(scope="class")
    def expected_sql(self) -> str:
        return EXPECTED_SQL
