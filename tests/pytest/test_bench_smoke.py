"""`make bench-smoke` as a test: the restatement benchmark at tiny scale.

Runs the benchmark's own functions on the session's Spark (one JVM) in a schema
of its own, once, and checks what it measured: the incremental build restates
exactly the k late dates of gold (and rewrites only their months' files), the
static lookback (a copy of the project with tooling/bench/lookback.patch) its
window plus those, the full refresh every date; the three give the same silver and gold; the floor
(a plain PySpark job) merges the late batch into the same silver_events rows;
a build with nothing new writes no table version, spills nothing and
evaluates no restated model; the incremental build reads
only the late batch from bronze; stock dbt-spark's microbatch peer leaves
wrong exactly the late dates before its lookback; results are written. On the suite's table
format (LATECOMER_TEST_FORMAT: Iceberg, or Delta with its dbt target).

The side-by-side report of both formats (tooling.bench.side_by_side) is
checked without Spark, on two hand-made reports.
"""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.pytest.conftest import TEST_FORMAT, expression_settings
from tooling.bench.config import (
    CORE_MODELS,
    FLOOR,
    GOLD_MODEL,
    MICROBATCH,
    NOTHING_NEW,
    SMOKE,
    SMOKE_SELECT,
    VARIANTS,
    BenchConfig,
)
from tooling.bench.microbatch import MODEL as MICROBATCH_MODEL
from tooling.bench.project import apply_patch
from tooling.bench.report import write_results
from tooling.bench.runner import run_benchmark
from tooling.bench.side_by_side import render_side_by_side, side_by_side
from tooling.bench.state import drop_schemas
from tooling.bench.sweep import growth, render_sweep
from tooling.synthetic import Scale

# Thousands of events: compiled expressions (conftest.compiled_where_many_rows).
pytestmark = pytest.mark.many_rows

SCHEMA = "t_bench_smoke"
SCALE = Scale(days=SMOKE["days"], events_per_day=SMOKE["events_per_day"], k=3)
LOOKBACK_DAYS = SMOKE["lookback_days"]
GOLD = GOLD_MODEL
DBT_LATE = ("incremental", "lookback", "full_refresh")
SNAPSHOT = "customer_history"


@pytest.fixture(scope="module")
def bench_run(spark, tmp_path_factory) -> dict[str, Any]:
    results_dir = tmp_path_factory.mktemp("bench_results")
    cfg = BenchConfig(
        scale=SCALE,
        schema=SCHEMA,
        repeat=1,
        lookback_days=LOOKBACK_DAYS,
        with_tests=False,
        select=SMOKE_SELECT,
        results_dir=results_dir,
        mode="smoke",
        table_format=TEST_FORMAT,
        log=lambda message: None,
    )
    drop_schemas(spark, SCHEMA)
    report = run_benchmark(spark, cfg)
    json_path, md_path = write_results(report, results_dir)
    yield {"report": report, "json": json_path, "md": md_path}
    drop_schemas(spark, SCHEMA)


def run_of(report: dict[str, Any], variant: str) -> dict[str, Any]:
    (run,) = [r for r in report["runs"] if r["variant"] == variant]
    return run


def test_incremental_rewrites_exactly_the_late_partitions(bench_run):
    report = bench_run["report"]
    late_dates = report["late_batch"]["dates"]
    # the k late days and the day the late batch empties
    assert len(late_dates) == SCALE.k + 1
    assert str(SCALE.date_of(SCALE.emptied_day)) in late_dates
    gold = run_of(report, "incremental")["tables"][GOLD]
    # Rows: exactly the late dates are restated, the other dates keep theirs.
    assert gold["date_values"] == late_dates
    assert gold["dates_written"] == len(late_dates)
    assert gold["dates_total"] > SCALE.k
    # Files: gold is partitioned by month on Iceberg (month_partitions; by
    # day on Delta), so the files rewritten are those of the late dates'
    # months (days), and only those.
    late_partitions = sorted({d[:7] for d in late_dates}) if TEST_FORMAT == "iceberg" else late_dates
    assert gold["partition_values"] == late_partitions
    assert gold["partitions_written"] == gold["partitions_rewritten"] == len(late_partitions)
    silver = run_of(report, "incremental")["tables"]["silver_events"]
    assert silver["partition_values"] == late_dates


def test_full_refresh_rewrites_every_partition(bench_run):
    report = bench_run["report"]
    run = run_of(report, "full_refresh")
    gold = run["tables"][GOLD]
    # Every partition the table holds, and on Delta (by day) also the day the
    # late batch emptied: the refresh removed its files and wrote none there.
    # On Iceberg (by month) that day's month holds other days.
    emptied = 1 if TEST_FORMAT == "delta" else 0
    assert gold["partitions_written"] == gold["partitions_total"] + emptied
    assert gold["dates_written"] == gold["dates_total"] == run["gold_fingerprint"]["partitions"]
    # every day but the one the late batch empties, of which it never saw an event
    assert gold["dates_total"] == SCALE.days - 1


def test_lookback_rewrites_its_whole_window(bench_run):
    report = bench_run["report"]
    run = run_of(report, "lookback")
    assert list(report["git"]["lookback_patch"]) == ["tooling/bench/lookback.patch"]
    start, end = (date.fromisoformat(d) for d in run["lookback_window"])
    assert (end - start).days == LOOKBACK_DAYS - 1
    window = {str(start + timedelta(days=i)) for i in range(LOOKBACK_DAYS)}
    late = set(report["late_batch"]["dates"])
    assert late - window, "the late batch should reach beyond the lookback window"
    rewritten = set(run["tables"][GOLD]["date_values"])
    # Every late date, and besides them only (existing) dates of the window.
    assert late <= rewritten
    assert rewritten - late
    assert rewritten - late <= window
    assert len(rewritten) < run["tables"][GOLD]["dates_total"]


def test_dbt_variants_agree_on_silver_and_gold(bench_run):
    report = bench_run["report"]
    gold = [run_of(report, v)["gold_fingerprint"] for v in DBT_LATE]
    silver = [run_of(report, v)["silver_fingerprint"] for v in DBT_LATE]
    assert gold[0] == gold[1] == gold[2]
    assert silver[0] == silver[1] == silver[2]
    assert report["summary"]["all_variants_same_gold"] is True
    assert report["summary"]["all_variants_same_silver"] is True
    # The late batch changed both: a build without it gives other tables.
    nothing_new = run_of(report, NOTHING_NEW)
    assert nothing_new["gold_fingerprint"] != gold[0]
    assert nothing_new["silver_fingerprint"] != silver[0]


def test_floor_merges_the_late_batch_like_dbt(bench_run):
    report = bench_run["report"]
    floor, incremental = run_of(report, FLOOR), run_of(report, "incremental")
    # The same current row, from the same bronze row, for every key.
    assert floor["silver_fingerprint"] == incremental["silver_fingerprint"]
    assert floor["floor"]["touched_dates"] == report["late_batch"]["dates"]
    assert floor["floor"]["keys_merged"] > 0
    assert floor["floor"]["gold_tables"] == [GOLD]
    # It rewrote only the touched partitions, and its revenue is dbt's.
    assert floor["tables"][GOLD]["date_values"] == report["late_batch"]["dates"]
    assert floor["tables"]["silver_events"]["partition_values"] == report["late_batch"]["dates"]
    assert floor["gold_fingerprint"] == incremental["gold_fingerprint"]
    assert report["summary"]["floor_same_as_incremental"] == {"silver_fingerprint": True, "gold_fingerprint": True}
    # Reads: the late batch from bronze, once; no dbt node.
    assert floor["reads"]["bronze_events"]["rows"] == report["late_batch"]["ingest"]["rows"]
    assert all(node.startswith("floor: ") for node in floor["queries"]["by_node"] if node != "(other)")


def test_microbatch_peer_misses_the_late_dates_beyond_its_lookback(bench_run):
    """Stock dbt-spark's microbatch run at the late batch's as-of recomputes
    its lookback's batches only: every late date before them stays wrong; and
    the day the late batch empties keeps its stale rows (its batch returns no
    row, so its dynamic insert overwrite replaces no partition). Nothing else
    is wrong."""
    report = bench_run["report"]
    run = run_of(report, MICROBATCH)
    assert run["nodes"][MICROBATCH_MODEL]["batches"] == LOOKBACK_DAYS + 1
    window_start = run["peer"]["window"][0][:10]
    beyond = sorted(d for d in report["late_batch"]["dates"] if d < window_start)
    assert beyond, "the late batch should reach beyond the microbatch lookback"
    wrong = report["summary"][f"{MICROBATCH}_wrong"]
    assert wrong["reference"] == "tooling/reference.py"
    emptied = [str(SCALE.date_of(SCALE.emptied_day))]
    assert emptied[0] >= window_start
    assert wrong["date_values"] == {"beyond_lookback": beyond, "emptied": emptied, "other": []}
    # It read the silver the dbt builds of the late batch made.
    silver = report["late_batch"]["peer_silver"]
    assert silver["silver_fingerprint"] == run_of(report, "incremental")["silver_fingerprint"]
    # It wrote its own table only.
    assert set(run["versions_written"]) == {MICROBATCH_MODEL}
    assert "## The peers" in Path(bench_run["md"]).read_text()


def test_every_latecomer_variant_publishes_the_reference_gold(bench_run):
    """Each variant's gold daily revenue, row by row, against what the
    plain-Python reference computes from the files landed (nothing_new's
    without the late batch); the peer, checked the same way, is not right
    everywhere, so the comparison can fail."""
    report = bench_run["report"]
    for run in report["runs"]:
        if run["variant"] != MICROBATCH:
            assert (run["variant"], run["wrong"]["dates"], run["wrong"]["rows"]) == (run["variant"], 0, 0)
            assert run["wrong"]["dates_total"] >= SCALE.days - 1
    assert run_of(report, MICROBATCH)["wrong"]["dates"] > 0
    row = "| gold event dates wrong (rows), against tooling/reference.py | 0 (0) |"
    assert row in Path(bench_run["md"]).read_text()


def test_nothing_new_writes_no_table_version(bench_run):
    report = bench_run["report"]
    run = run_of(report, NOTHING_NEW)
    assert run["versions_written"] == {}
    assert all(t["files_added"] == t["files_removed"] == 0 for t in run["tables"].values())
    assert run["reads"]["bronze_events"]["rows"] == 0
    # The late batch's builds did write versions, so the count is not vacuous.
    assert run_of(report, "incremental")["versions_written"][GOLD] >= 1


def test_nothing_new_writes_no_snapshot_version(bench_run):
    report = bench_run["report"]
    assert SNAPSHOT not in run_of(report, NOTHING_NEW)["versions_written"]
    assert report["summary"][NOTHING_NEW]["versions_written"] == 0


def spilling_nodes(run: dict[str, Any]) -> set[str]:
    """The nodes that spilled rows (an evaluated batch, a restated model's rows) in ``run``."""
    return {q["node"] for q in run["queries"]["queries"] if q["head"] == "Execute InsertIntoDataSourceDirCommand"}


def test_nothing_new_spills_nothing_and_evaluates_no_restated_model(bench_run):
    # The build right after the initial one: gold_daily_revenue was first
    # evaluated before the hold tables existed, and finds them empty now. A
    # restated model that evaluates its rows spills them first.
    assert spilling_nodes(run_of(bench_run["report"], NOTHING_NEW)) == set()
    # The late batch's build does, so the check is not vacuous.
    assert GOLD in spilling_nodes(run_of(bench_run["report"], "incremental"))


def test_incremental_reads_only_the_late_batch_from_bronze(bench_run):
    report = bench_run["report"]
    late_rows = report["late_batch"]["ingest"]["rows"]
    all_rows = report["initial_load"]["ingest"]["rows"] + late_rows
    # Every scan of bronze by the arrival ledger reads exactly the new files.
    initial = report["initial_load"]["reads"]["bronze_events"]["by_node"]["silver_event_arrivals"]
    assert initial["rows"] == initial["scans"] * report["initial_load"]["ingest"]["rows"] > 0
    incremental = run_of(report, "incremental")["reads"]["bronze_events"]["by_node"]["silver_event_arrivals"]
    assert incremental["rows"] == incremental["scans"] * late_rows > 0
    full = run_of(report, "full_refresh")["reads"]["bronze_events"]["by_node"]["silver_event_arrivals"]
    assert full["rows"] == full["scans"] * all_rows > 0


def test_queries_are_counted_per_model(bench_run):
    report = bench_run["report"]
    for variant in DBT_LATE:
        run = run_of(report, variant)
        by_node = run["queries"]["by_node"]
        for model in CORE_MODELS:
            assert by_node[model]["queries"] >= 1, (variant, model)
            assert by_node[model]["spark_seconds"] > 0, (variant, model)
        assert run["spark_seconds"] == pytest.approx(sum(n["spark_seconds"] for n in by_node.values()), abs=0.01)
        assert run["spark_seconds"] > 0
    queries = run_of(report, "incremental")["queries"]["queries"]
    merge = {"iceberg": "ReplaceData", "delta": "Execute MergeIntoCommand"}[TEST_FORMAT]
    assert any(q["node"] == GOLD and q["head"] == merge for q in queries), "the merge into gold"
    assert report["summary"]["incremental"]["queries"][GOLD]["queries"] >= 1


def test_the_session_compiles_expressions_here(spark):
    # The suite's sessions run interpreted; a many_rows file's compile.
    assert expression_settings(spark) == ("FALLBACK", "true")


def test_patch_is_applied_to_the_project_copy(tmp_path):
    project = tmp_path / "project"
    (project / "macros").mkdir(parents=True)
    (project / "macros" / "m.sql").write_text("select 1\n")
    patch = tmp_path / "change.patch"
    patch.write_text(
        "--- a/macros/m.sql\n+++ b/macros/m.sql\n@@ -1 +1 @@\n-select 1\n+select 2\n",
    )
    apply_patch(project, patch)
    assert (project / "macros" / "m.sql").read_text() == "select 2\n"
    with pytest.raises(RuntimeError, match="does not apply"):
        apply_patch(project, patch)


def test_results_are_written(bench_run):
    data = json.loads(Path(bench_run["json"]).read_text())
    assert data["machine"]["cpu_count"] >= 1
    assert data["machine"]["memory_gib"] > 0
    assert set(data["summary"]) >= set(VARIANTS)
    for variant in VARIANTS:
        stats = data["summary"][variant]
        assert 0 < stats["build_seconds_min"] <= stats["build_seconds"] <= stats["build_seconds_max"]
        assert stats["spark_seconds"] > 0
    assert data["summary"]["incremental"]["models"]["silver_events"] > 0
    ratios = data["summary"]["ratios"]
    assert set(ratios) == {"incremental/full_refresh", "incremental/lookback", "incremental/floor"}
    incremental = data["summary"]["incremental"]["build_seconds"]
    assert ratios["incremental/floor"]["build_seconds"] == pytest.approx(
        incremental / data["summary"][FLOOR]["build_seconds"], rel=1e-2
    )
    assert data["initial_load"]["events_per_second"]["ingest"] > 0
    markdown = Path(bench_run["md"]).read_text()
    assert "| build, s |" in markdown
    assert "| Spark time, s |" in markdown
    assert "| incremental as a multiple of | build | Spark time |" in markdown
    assert "## Model time per variant" in markdown
    assert f"{GOLD}: partitions written / total" in markdown
    latest = Path(bench_run["json"]).parent / f"latest-smoke-{TEST_FORMAT}.json"
    assert json.loads(latest.read_text())["started_at"] == data["started_at"]


def test_sweep_growth_is_longest_over_shortest():
    def point(days: int, incremental: float, full: float) -> dict[str, Any]:
        return {
            "days": days,
            "bronze_rows": days * 1000,
            "initial_build_seconds": 1.0,
            "variants": {
                "incremental": {"build_seconds": incremental, "spark_seconds": incremental / 2},
                "full_refresh": {"build_seconds": full, "spark_seconds": full / 2},
            },
            "ratios": {"incremental/full_refresh": {"build_seconds": incremental / full, "spark_seconds": 0.5}},
            "reports": [f"bench-sweep-d{days}.md"],
        }

    points = [point(30, 10.0, 20.0), point(60, 11.0, 40.0), point(120, 12.0, 80.0)]
    grown = growth(points, ["incremental", "full_refresh"])
    assert grown["from_days"] == 30 and grown["to_days"] == 120
    assert grown["bronze_rows"] == 4.0
    assert grown["incremental"] == {"build_seconds": 1.2, "spark_seconds": 1.2}
    assert grown["full_refresh"] == {"build_seconds": 4.0, "spark_seconds": 4.0}
    sweep = {"days": [30, 60, 120], "variants": ["incremental", "full_refresh"], "points": points, "growth": grown}
    markdown = render_sweep(sweep)
    assert "| growth 30 -> 120 days | 4.00x | 1.20x | 1.20x | 4.00x | 4.00x | |" in markdown
    assert "| 120 | 120,000 | 12.0 | 6.0 | 80.0 | 40.0 | 1.0 |" in markdown


def test_side_by_side_compares_the_formats():
    def report(table_format: str, seconds: float, gold_digest: int) -> dict[str, Any]:
        silver = {"rows": 10, "deleted": 1, "digest": 5}

        def run(variant: str, digest: int) -> dict[str, Any]:
            return {"variant": variant, "gold_fingerprint": {"rows": 4, "digest": digest}, "silver_fingerprint": silver}

        return {
            "mode": "smoke",
            "started_at": "2026-01-01T00:00:00+00:00",
            "config": {"variants": ["incremental", "full_refresh"], "repeat": 1, "target": table_format, "schema": "s"},
            "data": {"scale": {"days": 5, "events_per_day": 1000}},
            "machine": {"cpu_count": 2, "memory_gib": 8.0, "spark": "3.5"},
            "late_batch": {"k": 3, "dates": ["2024-01-02"]},
            "runs": [run("incremental", 1), run("full_refresh", gold_digest)],
            "summary": {
                "incremental": {"build_seconds": seconds, "spark_seconds": seconds / 2},
                "full_refresh": {"build_seconds": 4 * seconds, "spark_seconds": 2 * seconds},
                "all_variants_same_gold": gold_digest == 1,
                "all_variants_same_silver": True,
            },
        }

    reports = {"iceberg": report("iceberg", 10.0, 1), "delta": report("delta", 15.0, 2)}
    combined = side_by_side(reports, "smoke", datetime(2026, 1, 1, tzinfo=UTC))
    variants = combined["comparison"]["variants"]
    # The incremental builds agree across formats; the full refreshes' gold differs.
    assert variants["incremental"]["same_gold"] is True
    assert variants["full_refresh"]["same_gold"] is False
    assert variants["full_refresh"]["same_silver"] is True
    assert variants["incremental"]["delta"]["build_seconds"] == 15.0
    assert variants["incremental"]["build_ratio"] == {"delta/iceberg": 1.5}
    assert combined["same_gold_across_formats"] is False
    assert combined["same_silver_across_formats"] is True
    assert json.loads(json.dumps(combined))["same_gold_across_formats"] is False
    markdown = render_side_by_side(combined)
    assert "| variant | build, s Iceberg | build, s Delta | Spark, s Iceberg | Spark, s Delta |" in markdown
    assert "| incremental | 10.0 | 15.0 | 5.0 | 7.5 | 1.50x | yes | yes |" in markdown
    assert "| full_refresh | 40.0 | 60.0 | 20.0 | 30.0 | 1.50x | **no** | yes |" in markdown
    assert (
        "Gold fingerprint the same on Iceberg and Delta in every variant: false; silver_events too: true." in markdown
    )
    # The same reports, agreeing: every variant the same.
    reports["delta"] = report("delta", 15.0, 1)
    assert side_by_side(reports, "smoke", datetime(2026, 1, 1, tzinfo=UTC))["same_gold_across_formats"] is True
