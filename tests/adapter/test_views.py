"""The adapter's view materialization: a view whose definition did not change is left as it is.

Each view records a hash of its definition as a property
(adapter/dbt/include/latecomer/macros/views.sql). A build that finds the same
definition runs no statement for the view; one whose SQL, or whose upstream
model, changed makes it again, in the same build.
"""

from __future__ import annotations

from typing import Any

import pytest
from dbt.tests.util import run_dbt, write_file

UPSTREAM = "{{ config(materialized='table') }} select 1 as id, 'a' as name"
WIDER_UPSTREAM = "{{ config(materialized='table') }} select 1 as id, 'a' as name, 10 as score"
VIEW = "select * from {{ ref('upstream') }}"
UPPER_VIEW = "select id, upper(name) as name from {{ ref('upstream') }}"


def messages(results: Any) -> dict[str, str]:
    return {result.node.name: result.message for result in results}


def rows(project: Any, relation: str) -> list[tuple[Any, ...]]:
    return [tuple(row) for row in project.run_sql(f"select * from {project.test_schema}.{relation}", fetch="all")]


class TestViewsLeftAsTheyAre:
    @pytest.fixture(scope="class")
    def models(self) -> dict[str, str]:
        return {"upstream.sql": UPSTREAM, "reader.sql": VIEW}

    def test_an_unchanged_view_is_left_and_a_changed_one_made_again(self, project: Any) -> None:
        first = messages(run_dbt(["run"]))
        assert first["reader"] != "view unchanged"
        assert rows(project, "reader") == [(1, "a")]

        # The same definition: no drop, no create.
        assert messages(run_dbt(["run"]))["reader"] == "view unchanged"
        assert rows(project, "reader") == [(1, "a")]

        # Its own SQL changed: made again, with the new SQL.
        write_file(UPPER_VIEW, project.project_root, "models", "reader.sql")
        assert messages(run_dbt(["run"]))["reader"] != "view unchanged"
        assert rows(project, "reader") == [(1, "A")]

        # --full-refresh makes it again even when nothing changed.
        assert messages(run_dbt(["run", "--full-refresh"]))["reader"] != "view unchanged"

    def test_a_new_upstream_column_reaches_a_select_star_view_in_the_same_build(self, project: Any) -> None:
        write_file(VIEW, project.project_root, "models", "reader.sql")
        run_dbt(["run"])
        assert messages(run_dbt(["run"]))["reader"] == "view unchanged"

        write_file(WIDER_UPSTREAM, project.project_root, "models", "upstream.sql")
        assert messages(run_dbt(["run"]))["reader"] != "view unchanged"
        assert rows(project, "reader") == [(1, "a", 10)]
        assert messages(run_dbt(["run"]))["reader"] == "view unchanged"
