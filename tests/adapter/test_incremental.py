"""dbt-tests-adapter's incremental suites: unique keys, schema change, predicates, merge exclude columns.

Every strategy the adapter accepts (dbt-spark's: append, merge, insert_overwrite,
microbatch; test_incremental_strategies.py and test_microbatch.py) on the
target's table format.
"""

from __future__ import annotations

from typing import Any

import pytest
from dbt.tests.adapter.incremental.test_incremental_merge_exclude_columns import BaseMergeExcludeColumns
from dbt.tests.adapter.incremental.test_incremental_on_schema_change import BaseIncrementalOnSchemaChange
from dbt.tests.adapter.incremental.test_incremental_predicates import BaseIncrementalPredicates
from dbt.tests.adapter.incremental.test_incremental_unique_id import BaseIncrementalUniqueKey
from spark_dialect import SparkDialect

# dbt-spark's own model for the predicates case: Spark has no delete+insert,
# so the predicate excludes a row from the merge instead.
PREDICATES_MODEL_SQL = """
{{ config(materialized = 'incremental', unique_key = 'id') }}

{% if not is_incremental() %}

select cast(1 as bigint) as id, 'hello' as msg, 'blue' as color
union all
select cast(2 as bigint) as id, 'goodbye' as msg, 'red' as color

{% else %}

-- merge will not happen on the above record where id = 2, so new record will fall to insert
select cast(1 as bigint) as id, 'hey' as msg, 'blue' as color
union all
select cast(2 as bigint) as id, 'yo' as msg, 'green' as color
union all
select cast(3 as bigint) as id, 'anyway' as msg, 'purple' as color

{% endif %}
"""


class TestIncrementalUniqueKeyMerge(SparkDialect, BaseIncrementalUniqueKey):
    @pytest.fixture(scope="class")
    def project_config_update(self) -> dict[str, Any]:
        return {"models": {"+incremental_strategy": "merge"}}


class TestIncrementalOnSchemaChangeAppend(BaseIncrementalOnSchemaChange):
    @pytest.fixture(scope="class")
    def project_config_update(self) -> dict[str, Any]:
        return {"models": {"+incremental_strategy": "append"}}


class TestIncrementalOnSchemaChangeMerge(BaseIncrementalOnSchemaChange):
    @pytest.fixture(scope="class")
    def project_config_update(self) -> dict[str, Any]:
        return {"models": {"+incremental_strategy": "merge", "+unique_key": "id"}}


class TestIncrementalPredicatesMerge(BaseIncrementalPredicates):
    @pytest.fixture(scope="class")
    def project_config_update(self) -> dict[str, Any]:
        return {
            "models": {
                "+incremental_predicates": ["dbt_internal_dest.id != 2"],
                "+incremental_strategy": "merge",
            }
        }

    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {"delete_insert_incremental_predicates.sql": PREDICATES_MODEL_SQL}


class TestPredicatesMerge(BaseIncrementalPredicates):
    @pytest.fixture(scope="class")
    def project_config_update(self) -> dict[str, Any]:
        return {
            "models": {
                "+predicates": ["dbt_internal_dest.id != 2"],
                "+incremental_strategy": "merge",
            }
        }

    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {"delete_insert_incremental_predicates.sql": PREDICATES_MODEL_SQL}


class TestMergeExcludeColumns(BaseMergeExcludeColumns):
    pass
