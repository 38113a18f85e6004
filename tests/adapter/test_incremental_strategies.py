"""Every incremental strategy the adapter accepts, on the target's table format.

dbt-spark's own cases (its tests/functional/adapter/incremental_strategies),
which it runs on Delta only: each model's file format is left to the target
here, except insert_overwrite on Parquet, a plain Hive table.
"""

from __future__ import annotations

import pytest
from dbt.tests.adapter.simple_seed.test_seed import SeedConfigBase
from dbt.tests.util import check_relations_equal, run_dbt

# A first run writes ids 1 and 2, the second ids 2 and 3.
ROWS = """
{% if not is_incremental() %}
select cast(1 as bigint) as id, 'hello' as msg
union all
select cast(2 as bigint) as id, 'goodbye' as msg
{% else %}
select cast(2 as bigint) as id, 'yo' as msg
union all
select cast(3 as bigint) as id, 'anyway' as msg
{% endif %}
"""
ROWS_WITH_COLOR = """
{% if not is_incremental() %}
select cast(1 as bigint) as id, 'hello' as msg, 'blue' as color
union all
select cast(2 as bigint) as id, 'goodbye' as msg, 'red' as color
{% else %}
-- msg will be updated, color will be ignored
select cast(2 as bigint) as id, 'yo' as msg, 'green' as color
union all
select cast(3 as bigint) as id, 'anyway' as msg, 'purple' as color
{% endif %}
"""


def model(config: str, rows: str = ROWS) -> str:
    return "{{ config(materialized='incremental', " + config + ") }}\n" + rows


EXPECTED_APPEND = "id,msg\n1,hello\n2,goodbye\n2,yo\n3,anyway\n"
EXPECTED_OVERWRITE = "id,msg\n2,yo\n3,anyway\n"
EXPECTED_UPSERT = "id,msg\n1,hello\n2,yo\n3,anyway\n"
EXPECTED_PARTIAL_UPSERT = "id,msg,color\n1,hello,blue\n2,yo,red\n3,anyway,purple\n"


class BaseIncrementalStrategies(SeedConfigBase):
    @pytest.fixture(scope="class")
    def seeds(self) -> dict[str, str]:
        return {
            "expected_append.csv": EXPECTED_APPEND,
            "expected_overwrite.csv": EXPECTED_OVERWRITE,
            "expected_upsert.csv": EXPECTED_UPSERT,
            "expected_partial_upsert.csv": EXPECTED_PARTIAL_UPSERT,
        }

    @staticmethod
    def seed_and_run_twice() -> None:
        run_dbt(["seed"])
        run_dbt(["run"])
        run_dbt(["run"])


class TestTableFormatStrategies(BaseIncrementalStrategies):
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {
            "default_append.sql": model("unique_key=none"),
            "append.sql": model("incremental_strategy='append'"),
            "merge_no_key.sql": model("incremental_strategy='merge'"),
            "merge_unique_key.sql": model("incremental_strategy='merge', unique_key='id'"),
            "merge_update_columns.sql": model(
                "incremental_strategy='merge', unique_key='id', merge_update_columns=['msg']", ROWS_WITH_COLOR
            ),
            "insert_overwrite_no_partitions.sql": model("incremental_strategy='insert_overwrite'"),
            "insert_overwrite_partitions.sql": model("incremental_strategy='insert_overwrite', partition_by='id'"),
        }

    def test_strategies(self, project) -> None:
        self.seed_and_run_twice()
        check_relations_equal(project.adapter, ["default_append", "expected_append"])
        check_relations_equal(project.adapter, ["append", "expected_append"])
        check_relations_equal(project.adapter, ["merge_no_key", "expected_append"])
        check_relations_equal(project.adapter, ["merge_unique_key", "expected_upsert"])
        check_relations_equal(project.adapter, ["merge_update_columns", "expected_partial_upsert"])
        check_relations_equal(project.adapter, ["insert_overwrite_no_partitions", "expected_overwrite"])
        check_relations_equal(project.adapter, ["insert_overwrite_partitions", "expected_upsert"])


class TestParquetInsertOverwrite(BaseIncrementalStrategies):
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {
            "insert_overwrite_no_partitions.sql": model(
                "incremental_strategy='insert_overwrite', file_format='parquet'"
            ),
            "insert_overwrite_partitions.sql": model(
                "incremental_strategy='insert_overwrite', partition_by='id', file_format='parquet'"
            ),
        }

    def test_insert_overwrite(self, project) -> None:
        self.seed_and_run_twice()
        check_relations_equal(project.adapter, ["insert_overwrite_no_partitions", "expected_overwrite"])
        check_relations_equal(project.adapter, ["insert_overwrite_partitions", "expected_upsert"])


class TestBadStrategies(BaseIncrementalStrategies):
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {
            "bad_file_format.sql": model("file_format='something_else'"),
            "bad_merge_not_table_format.sql": model("incremental_strategy='merge', file_format='parquet'"),
            "bad_strategy.sql": model("incremental_strategy='something_else'"),
        }

    def test_bad_strategies(self, project) -> None:
        results = run_dbt(["run"], expect_pass=False)
        assert len(results) == 3
        for result in results:
            assert result.status == "error"
            assert "Compilation Error in model" in result.message
