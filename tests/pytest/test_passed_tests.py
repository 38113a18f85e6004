"""A data test that passed on the same inputs passes again without a query.

The inputs of a test are its SQL and the versions of the tables behind it
(adapter/dbt/include/latecomer/macros/data_tests/passed_inputs.sql). The
test here is stg_bronze_events' primary key, read through the view over the
landing table. The answers are known from what the test does to the table:

- the first build runs it: nothing is recorded yet;
- a build with nothing landed answers it without a query;
- a row copied into the landing table outside dbt (a duplicate key) moves
  the table's version: the test runs, and fails;
- a build after the failure, the table unchanged, runs it again, and it
  fails again: only a pass is recorded, and a failed run records nothing;
- `dbt test` answers it too (the same SQL: the build's test read the whole
  landing table, which no model has read yet);
- a view made again with another definition (another value of a project
  var) has its test run once more, though its SQL and table are the same.
"""

from __future__ import annotations

from typing import Any

from tests.pytest import sample_build
from tests.pytest.conftest import Project

AS_OF = sample_build.AS_OF
SELECTED = "stg_bronze_events"
ANSWERED = "passed without a query: passed last on the same SQL and table versions"


def build_results(
    project: Project, *args: str, expect_ok: bool = True, more_vars: dict[str, Any] | None = None
) -> dict[str, dict[str, Any]]:
    """The data tests' results of a `dbt build` (or `args`) of SELECTED: status and adapter message, by test name."""
    result = project.dbt(
        *(args or ("build",)),
        "--select",
        SELECTED,
        # not the singular tests that also read models this build leaves out
        "--indirect-selection",
        "cautious",
        vars={"as_of": AS_OF, **(more_vars or {})},
        expect_ok=expect_ok,
    )
    return {
        r.node.name: {"status": str(r.status), "message": (r.adapter_response or {}).get("_message")}
        for r in result.result.results
        if r.node.resource_type == "test"
    }


def primary_key(results: dict[str, dict[str, Any]]) -> dict[str, Any]:
    (name,) = [name for name in results if name.startswith("primary_key_stg_bronze_events")]
    return results[name]


def recorded(project: Project) -> dict[str, str]:
    rows = project.sql("select test_id, fingerprint from {schema}_audit.data_test_passes")
    return {row[0]: row[1] for row in rows}


def test_a_test_runs_when_its_table_moved_or_it_failed_last(project: Project) -> None:
    source, path, arrival_ts = sample_build.landing_batches()[0]
    assert project.ingest(source, path, arrival_ts=arrival_ts) == 0

    first = primary_key(build_results(project))
    assert first["status"] == "pass" and first["message"] != ANSWERED
    passes = recorded(project)
    assert len(passes) == 1, passes

    again = primary_key(build_results(project))
    assert again == {"status": "pass", "message": ANSWERED}
    assert recorded(project) == passes, "an answered test keeps its record"

    project.sql("insert into {schema}_bronze.bronze_events select * from {schema}_bronze.bronze_events limit 1")
    moved = primary_key(build_results(project, expect_ok=False))
    assert moved["status"] == "fail", moved
    assert recorded(project) == passes, "a failed run records nothing"

    failed_again = primary_key(build_results(project, expect_ok=False))
    assert failed_again["status"] == "fail", "a test that failed last runs again on the same tables"


def test_dbt_test_and_a_view_made_again(project: Project) -> None:
    source, path, arrival_ts = sample_build.landing_batches()[0]
    assert project.ingest(source, path, arrival_ts=arrival_ts) == 0
    assert primary_key(build_results(project))["message"] != ANSWERED

    # `dbt test` answers it as well: with no model reading the landing table
    # yet, a build's test reads all of it too, so the SQL is the same.
    assert primary_key(build_results(project, "test")) == {"status": "pass", "message": ANSWERED}

    # Another value of a project var makes the view again (its definition
    # hashes the project's vars), though the test's SQL and the landing
    # table are the same: the test runs, then is answered once more.
    other = {"volume_baseline_days": 8}
    assert primary_key(build_results(project, "build", more_vars=other))["message"] != ANSWERED
    assert primary_key(build_results(project, "build", more_vars=other)) == {"status": "pass", "message": ANSWERED}
