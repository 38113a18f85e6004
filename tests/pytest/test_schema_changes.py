"""A model with nothing new is still checked against its table's schema.

Silver's models say while rendering when they have no row to write
(latecomer__skip_write). With `on_schema_change: fail` they used to create a
staging view of their query anyway, only for dbt to describe it and compare.
Now Spark plans the query in the session and its columns are compared with
the table's from the relation cache (adapter.query_has_columns_of): the same
columns skip the staging view; a column added, or one whose type changed,
still goes through dbt's check, and the build fails naming the model, its
table left as it was.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.pytest.conftest import ROOT, Project, project_copy
from tests.pytest.event_rows import event

SELECT = "+silver_event_changes"
CHANGES = "models/silver/silver_event_changes.sql"
OUT_OF_SYNC = "The source and target schemas on this incremental model are out of sync"


def land(project: Project, folder: Path, name: str, rows: list[dict], arrival_ts: str) -> None:
    path = folder / name
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    assert project.ingest("web", path, arrival_ts=arrival_ts) == 0


def skipped(project: Project, model: str) -> list[str]:
    """The messages saying ``model`` wrote nothing and kept its table."""
    return [m for m in project.messages if m.startswith(f"{model}: ") and m.endswith(" left unchanged")]


def staged(project: Project, model: str) -> list[str]:
    """The statements that made ``model``'s staging view (dbt-spark's ``<model>__dbt_tmp``)."""
    return [sql for sql in project.statements if f"temporary view {model}__dbt_tmp " in sql.lower()]


@pytest.fixture(scope="module")
def built(module_project: Project, tmp_path_factory: pytest.TempPathFactory) -> Project:
    """One deployment for the module: the builds after the first find nothing new,
    and the failing ones write nothing."""
    rows = [event("k1", "01", 10), event("k2", "02", 20)]
    land(module_project, tmp_path_factory.mktemp("landing"), "first.ndjson", rows, "2024-03-02T12:00:00+00:00")
    module_project.build("2024-03-02T18:00:00+00:00", select=SELECT)
    assert module_project.table("silver", "silver_event_changes").count() == 2
    return module_project


def test_nothing_new_skips_the_staging_view_when_the_columns_are_the_tables(built: Project) -> None:
    built.build("2024-03-03T18:00:00+00:00", select=SELECT)
    assert skipped(built, "silver_events") == [
        f"silver_events: no new arrival or release since the last run, "
        f"{built.schema}_silver.silver_events left unchanged"
    ]
    assert skipped(built, "silver_event_changes") == [
        f"silver_event_changes: no silver row changed since the last run, "
        f"{built.schema}_silver.silver_event_changes left unchanged"
    ]
    assert staged(built, "silver_events") == staged(built, "silver_event_changes") == []
    assert built.table("silver", "silver_event_changes").count() == 2


@pytest.mark.parametrize(
    ("old", "new", "column"),
    [
        ("        invocation_id\n", "        invocation_id,\n        1 as schema_probe\n", "schema_probe"),
        ("        amount,\n", "        cast(amount as double) as amount,\n", "amount"),
    ],
    ids=["a column added", "a type changed"],
)
def test_a_schema_change_fails_the_model_even_with_nothing_new(
    built: Project, tmp_path: Path, old: str, new: str, column: str
) -> None:
    columns = built.table("silver", "silver_event_changes").dtypes
    built.project_dir = project_copy(tmp_path / "changed", [(CHANGES, old, new)])
    try:
        result = built.dbt("build", "--select", SELECT, vars={"as_of": "2024-03-03T18:00:00+00:00"}, expect_ok=False)
    finally:
        built.project_dir = ROOT
    assert not result.success
    failed = {r.node.name: r.message for r in result.result.results if r.status == "error"}
    assert list(failed) == ["silver_event_changes"], failed
    assert OUT_OF_SYNC in failed["silver_event_changes"] and column in failed["silver_event_changes"]
    # silver_events, unchanged, still skipped its staging view; the changed model's table is as it was
    assert len(skipped(built, "silver_events")) == 1 and staged(built, "silver_events") == []
    assert len(staged(built, "silver_event_changes")) == 1
    assert built.table("silver", "silver_event_changes").dtypes == columns
