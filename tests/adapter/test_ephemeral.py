"""dbt-tests-adapter's ephemeral suite.

The multi and nested cases compare the compiled SQL of the view that reads the
ephemeral models with Postgres's (`create view "dbt"."schema"."x__dbt_tmp" as
(...)`, then a rename); here the same CTEs are compared inside Spark's
statement (`create or replace view schema.x as ...`), once the property the
view records its definition in is taken out.
"""

from __future__ import annotations

import os
import re
from typing import Any

from dbt.tests.adapter.ephemeral.test_ephemeral import (
    BaseEphemeralErrorHandling,
    BaseEphemeralMulti,
    BaseEphemeralNested,
)
from dbt.tests.util import check_relations_equal, run_dbt


def compiled_sql(model: str) -> str:
    """The statement dbt ran for ``model``, digits (the schema's) and whitespace removed,
    without the property the view records its definition in (adapter macros/views.sql)."""
    path = f"./target/run/test/models/{model}.sql"
    assert os.path.exists(path)
    with open(path) as file:
        text, recorded = re.subn(r"tblproperties \('latecomer\.view_definition' = '[0-9a-f]{32}'\)", "", file.read())
    assert recorded == 1
    return "".join(re.sub(r"\d+", "", text).split())


class TestEphemeralMulti(BaseEphemeralMulti):
    def test_ephemeral_multi(self, project: Any) -> None:
        run_dbt(["seed"])
        results = run_dbt(["run"])
        assert len(results) == 3

        check_relations_equal(project.adapter, ["seed", "dependent"])
        check_relations_equal(project.adapter, ["seed", "double_dependent"])
        check_relations_equal(project.adapter, ["seed", "super_dependent"])
        expected_sql = (
            "create or replace view test_test_ephemeral.double_dependent as "
            "with __dbt__cte__base as ("
            "select * from test_test_ephemeral.seed"
            "),  __dbt__cte__base_copy as ("
            "select * from __dbt__cte__base"
            ")-- base_copy just pulls from base. Make sure the listed"
            "-- graph of CTEs all share the same dbt_cte__base cte"
            "select * from __dbt__cte__base where gender = 'Male'"
            "union all"
            "select * from __dbt__cte__base_copy where gender = 'Female'"
        )
        assert compiled_sql("double_dependent") == "".join(expected_sql.split())


class TestEphemeralNested(BaseEphemeralNested):
    def test_ephemeral_nested(self, project: Any) -> None:
        results = run_dbt(["run"])
        assert len(results) == 2
        expected_sql = (
            "create or replace view test_test_ephemeral.root_view as "
            "with __dbt__cte__ephemeral_level_two as ("
            "select * from test_test_ephemeral.source_table"
            "),  __dbt__cte__ephemeral as ("
            "select * from __dbt__cte__ephemeral_level_two"
            ")select * from __dbt__cte__ephemeral"
        )
        assert compiled_sql("root_view") == "".join(expected_sql.split())


class TestEphemeralErrorHandling(BaseEphemeralErrorHandling):
    pass
