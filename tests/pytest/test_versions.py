"""Versioned results: time travel, version history, restore and maintenance.

One deployment, tests in order: run 1 publishes 2024-01-03 and 2024-01-04, a
late order for 2024-01-03 lands, run 2 restates it. Expected numbers are
written out by hand from the landed events; run 1's table is also recorded
right after run 1 (plain Spark reads), so every "as of run 1" read through the
macros is compared with what was actually published then.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from python_jobs.core import catalog_reads, commit_metadata
from tests.pytest.conftest import GATE_OVERRIDE, TEST_FORMAT, Project, iceberg_only, version_log

GOLD = "+gold_daily_revenue"
# Why gold's rows changed, version by version (the model and its data tests).
CAUSES = "gold_daily_revenue_causes"
# Restating a two-partition sample moves totals far beyond the publication
# gate's limits: the runs that restate override the gate (GATE_OVERRIDE).
JAN_3, JAN_4 = date(2024, 1, 3), date(2024, 1, 4)
# Horizon of the default vars: the regulatory tier (720 h) plus the 168 h margin.
HORIZON = timedelta(hours=720 + 168)

# (orders, gross_revenue, refunds, net_revenue) per (event_date, source_system)
RUN_1 = {
    (JAN_3, "web"): (2, Decimal("30.00"), Decimal("0.00"), Decimal("30.00")),
    (JAN_4, "web"): (0, Decimal("0.00"), Decimal("5.00"), Decimal("-5.00")),
}
RUN_2 = {**RUN_1, (JAN_3, "web"): (3, Decimal("60.00"), Decimal("0.00"), Decimal("60.00"))}


def order(event_id: str, amount: int, event_ts: str, event_type: str = "order_placed") -> dict[str, Any]:
    return {"event_id": event_id, "event_type": event_type, "user_id": "u1", "amount": amount, "event_ts": event_ts}


def values(rows: list[Any]) -> dict[tuple[date, str], tuple[int, Decimal, Decimal, Decimal]]:
    return {
        (row.event_date, row.source_system): (row.orders, row.gross_revenue, row.refunds, row.net_revenue)
        for row in rows
    }


def gold(project: Project, version_clause: str = "") -> dict:
    return values(project.sql(f"select * from {{schema}}_gold.gold_daily_revenue {version_clause}"))


@dataclass
class Entry:
    snapshot_id: str
    made_current_at: datetime  # UTC, naive


def history(project: Project) -> list[Entry]:
    """gold_daily_revenue's snapshot log, oldest first (plain Spark, not the macros)."""
    log = version_log(project.spark, f"{project.schema}_gold.gold_daily_revenue")
    return [Entry(version, datetime.fromisoformat(made_current_at)) for version, made_current_at in log]


def dbt(project: Project, *args: str, expect_ok: bool = True, target: str | None = None) -> tuple[Any, list[str]]:
    """Project.dbt that also checks an expected failure, returning dbt's log messages."""
    result = project.dbt(*args, expect_ok=False, target=target)
    assert result.success == expect_ok, "\n".join(project.messages[-15:])
    return result, project.messages


def run_operation(project: Project, macro: str, expect_ok: bool = True, **args: Any) -> list[str]:
    return dbt(project, "run-operation", macro, "--args", json.dumps(args), expect_ok=expect_ok)[1]


def compiled(project: Project, sql: str, target: str | None = None) -> str:
    result, _ = dbt(project, "compile", "--inline", sql, target=target)
    return result.result.results[0].node.compiled_code


@dataclass
class Runs:
    project: Project
    run_1: dict  # gold as read right after run 1
    run_1_invocation: str
    run_1_version: str
    after_run_1: str  # a wall-clock time between run 1 and run 2 (UTC)
    run_2_version: str


@pytest.fixture(scope="module")
def runs(module_project: Project, write_ndjson_module) -> Runs:
    project = module_project
    first = write_ndjson_module(
        "first.ndjson",
        [
            order("w-1", 10, "2024-01-03T09:00:00Z"),
            order("w-2", 20, "2024-01-03T10:00:00Z"),
            order("w-3", 5, "2024-01-04T10:00:00Z", event_type="refund"),
        ],
    )
    assert project.ingest("web", first, arrival_ts="2024-01-04T00:30:00+00:00") == 0
    project.build(as_of="2024-01-04T01:00:00+00:00", select=GOLD)
    run_1_rows = project.sql("select * from {schema}_gold.gold_daily_revenue")
    after_run_1 = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")
    late = write_ndjson_module("late.ndjson", [order("w-4", 30, "2024-01-03T11:00:00Z")])
    assert project.ingest("web", late, arrival_ts="2024-01-06T00:00:00+00:00") == 0
    project.build(as_of="2024-01-06T01:00:00+00:00", select=GOLD, **GATE_OVERRIDE)
    log = history(project)
    assert len(log) == 2, "run 1 created gold, run 2 merged into it: one version each"
    return Runs(
        project=project,
        run_1=values(run_1_rows),
        run_1_invocation=run_1_rows[0].invocation_id,
        run_1_version=log[0].snapshot_id,
        after_run_1=after_run_1,
        run_2_version=log[1].snapshot_id,
    )


@pytest.fixture(scope="module")
def write_ndjson_module(tmp_path_factory: pytest.TempPathFactory):
    folder = tmp_path_factory.mktemp("landing")

    def write(name: str, rows: list[dict[str, Any]]):
        path = folder / name
        path.write_text("".join(json.dumps(row) + "\n" for row in rows))
        return path

    return write


def test_runs_published_the_hand_computed_numbers(runs: Runs) -> None:
    assert runs.run_1 == RUN_1
    assert gold(runs.project) == RUN_2


def test_gold_as_of_reproduces_run_1(runs: Runs) -> None:
    selectors = {
        "time": f"as_of_time='{runs.after_run_1}'",
        "time_with_offset": f"as_of_time='{runs.after_run_1.replace(' ', 'T')}+00:00'",
        "version": f"version='{runs.run_1_version}'",
        "run": f"invocation_id='{runs.run_1_invocation}'",
        "current": "",
    }
    sql = compiled(
        runs.project,
        " union all ".join(
            f"select '{name}' as selector, * from {{{{ gold_as_of('gold_daily_revenue'{', ' if arg else ''}{arg}) }}}}"
            for name, arg in selectors.items()
        ),
    )
    rows = runs.project.spark.sql(sql).collect()
    for name in selectors:
        expected = RUN_2 if name == "current" else runs.run_1
        assert values([row for row in rows if row.selector == name]) == expected, name


def test_analysis_reproduces_the_numbers_published_at_a_time(runs: Runs) -> None:
    result, _ = dbt(
        runs.project,
        "compile",
        "--select",
        "gold_published_yesterday",
        "--vars",
        json.dumps({"published_as_of": runs.after_run_1}),
    )
    sql = result.result.results[0].node.compiled_code
    assert values(runs.project.spark.sql(sql).collect()) == runs.run_1


def test_gold_versions_shows_each_version_and_its_delta(runs: Runs) -> None:
    lines = run_operation(runs.project, "gold_versions", model="gold_daily_revenue", event_date="2024-01-03")
    start = next(i for i, line in enumerate(lines) if line.startswith("gold_versions:"))
    report = lines[start:]
    assert "2 published version(s) of its rows among 2 table version(s)" in report[0]
    assert report[1].startswith(f"version {runs.run_1_version} ")
    assert "orders=2  gross_revenue=30.00  refunds=0.00  net_revenue=30.00  status=live  row_version=1" in report[2]
    assert report[3].startswith(f"version {runs.run_2_version} ")
    assert f"changes since version {runs.run_1_version}" in report[3]
    assert (
        "orders=3 (+1)  gross_revenue=60.00 (+30.00)  refunds=0.00  net_revenue=60.00 (+30.00)"
        "  status=preliminary  row_version=2  restatement_reason=late_arrival"
    ) in report[4]
    # 2024-01-04 only changed status in run 2: a new version, no measure deltas
    lines = run_operation(runs.project, "gold_versions", model="gold_daily_revenue", event_date="2024-01-04")
    row_lines = [line for line in lines if line.startswith("    source_system=web")]
    assert len(row_lines) == 2 and "(" not in row_lines[1] and "status=preliminary" in row_lines[1]


def test_restore_table_refuses_without_reason_or_known_version(runs: Runs) -> None:
    project = runs.project
    lines = run_operation(project, "restore_table", expect_ok=False, model="gold_daily_revenue", version="1")
    assert any("needs a reason" in line for line in lines)
    lines = run_operation(
        project, "restore_table", expect_ok=False, model="gold_daily_revenue", version="12345", reason="test"
    )
    assert any("Unknown version 12345" in line and runs.run_2_version in line for line in lines)
    run_operation(project, "restore_table", expect_ok=False, model="no_such_model", version="1", reason="x")
    assert gold(project) == RUN_2 and len(history(project)) == 2


def test_restore_table_to_run_1_then_rerun(runs: Runs) -> None:
    project = runs.project
    explain = {"event_date": "2024-01-03", "source_system": "web"}
    project.build(as_of="2024-01-06T01:00:00+00:00", select=CAUSES)
    lines = run_operation(
        project,
        "restore_table",
        model="gold_daily_revenue",
        invocation_id=runs.run_1_invocation,
        reason="re-run after the dedup fix",
    )
    assert any(f"to version {runs.run_1_version}" in line for line in lines)
    assert gold(project) == runs.run_1
    (restore,) = project.sql("select * from {schema}_audit.table_restores")
    assert (restore.model, restore.from_version, restore.to_version) == (
        "gold_daily_revenue",
        runs.run_2_version,
        runs.run_1_version,
    )
    assert restore.relation == f"{project.schema}_gold.gold_daily_revenue"
    assert restore.selector == f"invocation_id={runs.run_1_invocation}"
    assert restore.reason == "re-run after the dedup fix" and restore.actor and restore.invocation_id
    assert restore.restored_at is not None and restore.to_version_committed_at is not None
    # the stateful-merger re-run: gold's own high-water mark is back at run 1,
    # so the next run re-applies run 2's late order
    # why the numbers changed: the restore took back run 2's order (30.00),
    # and the re-run applied it again (its data tests check every step sums)
    project.build(as_of="2024-01-06T01:00:00+00:00", select=CAUSES)
    assert "2024-01-03 web, version 2 -> 1: net_revenue -30.00 = restore_table (-30.00)" in run_operation(
        project, "explain_change", **explain
    )
    project.build(as_of="2024-01-06T01:00:00+00:00", select=GOLD, **GATE_OVERRIDE)
    assert gold(project) == RUN_2
    assert gold(project, f"version as of {runs.run_1_version}") == runs.run_1
    project.build(as_of="2024-01-06T01:00:00+00:00", select=CAUSES)
    [step] = [line for line in run_operation(project, "explain_change", **explain) if line.startswith("2024-01-03 web")]
    assert step.startswith("2024-01-03 web, version 1 -> 2: net_revenue +30.00 = 1 ") and step.endswith(" (+30.00)")


RETENTION = {
    "history.expire.max-snapshot-age-ms": str(int(HORIZON.total_seconds() * 1000)),
    "history.expire.min-snapshots-to-keep": "2",
}
if TEST_FORMAT == "delta":
    RETENTION = {
        "delta.logRetentionDuration": f"interval {int(HORIZON.total_seconds() // 3600)} hours",
        "delta.deletedFileRetentionDuration": f"interval {int(HORIZON.total_seconds() // 3600)} hours",
    }


def retention(project: Project, table: str) -> dict[str, str | None]:
    properties = {row.key: row.value for row in project.sql(f"show tblproperties {table}")}
    return {key: properties.get(key) for key in RETENTION}


def test_retention_properties_are_set_when_tables_are_created(runs: Runs) -> None:
    for table in ("gold.gold_daily_revenue", "silver.silver_events", "audit.table_restores"):
        assert retention(runs.project, f"{{schema}}_{table}") == RETENTION, table


@iceberg_only("snapshot expiry (expire_snapshots, a rollback's snapshot log, min-snapshots-to-keep)")
def test_maintain_tables_keeps_every_version_inside_the_horizon(runs: Runs) -> None:
    project = runs.project
    log = history(project)  # run 1, run 2, restore to run 1, re-run
    assert [entry.snapshot_id for entry in log[:3]] == [runs.run_1_version, runs.run_2_version, runs.run_1_version]
    snapshots_before = len(project.sql("select * from {schema}_gold.gold_daily_revenue.snapshots"))

    lines = run_operation(project, "maintain_tables", dry_run=True)
    assert any(line.startswith("maintain_tables summary (dry run") for line in lines)
    assert len(project.sql("select * from {schema}_gold.gold_daily_revenue.snapshots")) == snapshots_before

    lines = run_operation(project, "maintain_tables")
    assert any("[1/" in line for line in lines) and any("maintain_tables summary" in line for line in lines)
    # every table of silver, gold and audit now has them, also the logs that
    # macros create there
    for layer in ("silver", "gold", "audit"):
        for row in project.sql(f"show tables in {{schema}}_{layer}"):
            if row.isTemporary:
                continue
            table = f"{row.namespace}.{row.tableName}"
            kind = project.sql(f"describe table extended {table}")
            if not any(entry.col_name == "Type" and entry.data_type == "VIEW" for entry in kind):
                assert retention(project, table) == RETENTION, table
    assert gold(project, f"version as of {runs.run_1_version}") == runs.run_1
    assert gold(project, f"timestamp as of '{runs.after_run_1}'") == runs.run_1

    # Pretend the horizon began between run 2 and the restore: run 2's
    # snapshot was current then, so it stays although it is no longer an
    # ancestor of the table; run 1's was made current again by the restore.
    cutoff = log[1].made_current_at + (log[2].made_current_at - log[1].made_current_at) / 2
    run_operation(project, "maintain_tables", now=(cutoff + HORIZON).isoformat(sep=" "))
    assert gold(project, f"version as of {runs.run_2_version}") == RUN_2
    assert gold(project, f"timestamp as of '{cutoff.isoformat(sep=' ')}'") == RUN_2
    assert gold(project, f"version as of {runs.run_1_version}") == runs.run_1

    # Once the horizon has passed everything, only the current version (and
    # its parent, min-snapshots-to-keep 2) stays; run 2's snapshot goes.
    latest = history(project)[-1].made_current_at
    run_operation(project, "maintain_tables", now=(latest + HORIZON + timedelta(minutes=1)).isoformat(sep=" "))
    kept = {str(row.snapshot_id) for row in project.sql("select * from {schema}_gold.gold_daily_revenue.snapshots")}
    assert runs.run_2_version not in kept and history(project)[-1].snapshot_id in kept
    assert gold(project) == RUN_2


@pytest.mark.skipif(TEST_FORMAT != "delta", reason="Delta only: a commit read from the table's log")
def test_the_last_commit_read_from_the_log_is_describe_historys(runs: Runs) -> None:
    """What the versions and the restated models' notes read from a Delta
    table's log (commit_metadata.last_commit) is DESCRIBE HISTORY's last row:
    gold's last MERGE (the rerun after the restore), with its note, and a
    bronze table's last append."""
    spark = runs.project.spark
    for layer, table in (("gold", "gold_daily_revenue"), ("bronze", "bronze_events")):
        name = f"{runs.project.schema}_{layer}.{table}"
        described = spark.sql(f"describe history {name} limit 1").collect()[0]
        assert commit_metadata.last_commit(spark, name) == {
            "version": described["version"],
            "operation": described["operation"],
            "userMetadata": described["userMetadata"],
        }
    gold = commit_metadata.last_commit(spark, f"{runs.project.schema}_gold.gold_daily_revenue")
    assert gold is not None and gold["operation"] == "MERGE"
    assert commit_metadata.note_of_last_commit([gold], f"{runs.project.schema}_gold.gold_daily_revenue")
    # Not a Delta table, or no table: None, and the macros ask DESCRIBE HISTORY.
    spark.sql(f"create or replace view {runs.project.schema}_gold.a_view as select 1 as one")
    assert commit_metadata.last_commit(spark, f"{runs.project.schema}_gold.a_view") is None
    assert commit_metadata.last_commit(spark, f"{runs.project.schema}_gold.no_such_table") is None


@iceberg_only("a table's head read from Iceberg's catalog")
def test_the_head_read_from_the_catalog_is_what_sql_reads(runs: Runs) -> None:
    """The snapshot the versions and the tests' fingerprints read from the
    session's catalog (catalog_reads.iceberg_current_snapshot) is the one SHOW
    TBLPROPERTIES names for main and the refs table names for a branch, also
    on a thread of its own (dbt's), which has no active Spark session; a new
    commit moves it; a table without a snapshot, a branch the table lacks, a
    view or a missing table are told apart."""
    spark = runs.project.spark
    schema = runs.project.schema

    def shown(name: str) -> str:
        rows = spark.sql(f"show tblproperties {name} ('current-snapshot-id')").collect()
        return str(rows[0]["value"])

    answers: dict[str, str | None] = {}
    names = [f"{schema}_gold.gold_daily_revenue", f"{schema}_bronze.bronze_events"]
    active: list[bool] = []

    def ask() -> None:
        sessions = catalog_reads.java_class(spark, "org.apache.spark.sql.SparkSession")
        active.append(sessions.getActiveSession().isDefined())
        answers.update({name: catalog_reads.iceberg_current_snapshot(spark, name) for name in names})
        active.append(sessions.getActiveSession().isDefined())

    thread = threading.Thread(target=ask)
    thread.start()
    thread.join()
    for name in names:
        assert answers[name] == shown(name) == catalog_reads.iceberg_current_snapshot(spark, name)
    # the thread had no active session, and has none after the reads
    assert active == [False, False]

    scratch = f"{schema}_gold.head_scratch"
    spark.sql(f"create table {scratch} (n int) using iceberg")
    assert catalog_reads.iceberg_current_snapshot(spark, scratch) == ""
    spark.sql(f"insert into {scratch} values (1)")
    first = catalog_reads.iceberg_current_snapshot(spark, scratch)
    assert first == shown(scratch) and first.isdigit()
    spark.sql(f"alter table {scratch} create branch audit")
    spark.sql(f"insert into {scratch}.branch_audit values (2)")
    head = catalog_reads.iceberg_current_snapshot(spark, scratch, "audit")
    refs = spark.sql(f"select cast(snapshot_id as string) as id from {scratch}.refs where name = 'audit'").collect()
    assert head == refs[0]["id"] != first
    assert catalog_reads.iceberg_current_snapshot(spark, scratch) == first == shown(scratch)
    assert catalog_reads.iceberg_current_snapshot(spark, scratch, "no_such_branch") == ""
    spark.sql(f"drop table {scratch}")

    spark.sql(f"create or replace view {schema}_gold.a_head_view as select 1 as one")
    assert catalog_reads.iceberg_current_snapshot(spark, f"{schema}_gold.a_head_view") is None
    assert catalog_reads.iceberg_current_snapshot(spark, f"{schema}_gold.no_such_table") is None
    spark.sql(f"drop view {schema}_gold.a_head_view")


def test_the_properties_read_from_the_catalog_are_show_tblproperties(runs: Runs) -> None:
    """The properties the models' decisions read from the session's catalog
    (catalog_reads.table_properties) are SHOW TBLPROPERTIES' rows, on a
    thread of dbt's too; a view, a missing table or a name the catalog read
    does not take are left to the statement."""
    spark = runs.project.spark
    schema = runs.project.schema
    names = [f"{schema}_gold.gold_daily_revenue", f"{schema}_bronze.bronze_events"]
    answers: dict[str, dict[str, str] | None] = {}
    thread = threading.Thread(
        target=lambda: answers.update({name: catalog_reads.table_properties(spark, name) for name in names})
    )
    thread.start()
    thread.join()
    for name in names:
        shown = {row["key"]: row["value"] for row in spark.sql(f"show tblproperties {name}").collect()}
        assert answers[name] == shown == catalog_reads.table_properties(spark, name)
    # gold keeps its versions: the retention properties the models set are among them
    retention_key = "delta.logRetentionDuration" if TEST_FORMAT == "delta" else "history.expire.max-snapshot-age-ms"
    assert retention_key in (answers[names[0]] or {})
    spark.sql(f"create or replace view {schema}_gold.a_properties_view as select 1 as one")
    assert catalog_reads.table_properties(spark, f"{schema}_gold.a_properties_view") is None
    spark.sql(f"drop view {schema}_gold.a_properties_view")
    assert catalog_reads.table_properties(spark, f"{schema}_gold.no_such_table") is None
    assert catalog_reads.table_properties(spark, f"spark_catalog.{schema}_gold.gold_daily_revenue") is None


def test_delta_rendering(runs: Runs) -> None:
    """The delta target renders the macros that run no query, whatever the
    session's format: time travel fragments and retention properties."""
    sql = compiled(
        runs.project,
        "{{ latecomer__relation_at_version(ref('gold_daily_revenue'), 7) }}"
        " | {{ latecomer__relation_at_time(ref('gold_daily_revenue'), '2024-01-22T00:00:00+00:00') }}"
        " | {{ latecomer__retention_tblproperties() | tojson }}",
        target="delta",
    )
    at_version, at_time, properties = sql.split(" | ")
    # (the delta target's schema is the deployment's, LATECOMER_SCHEMA, as the other targets')
    gold_table = f"{runs.project.schema}_gold.gold_daily_revenue"
    assert at_version == f"{gold_table} version as of 7"
    assert at_time == f"{gold_table} timestamp as of cast('2024-01-22T00:00:00+00:00' as timestamp)"
    hours = int(HORIZON.total_seconds() // 3600)
    assert json.loads(properties) == {
        "delta.logRetentionDuration": f"interval {hours} hours",
        "delta.deletedFileRetentionDuration": f"interval {hours} hours",
    }
