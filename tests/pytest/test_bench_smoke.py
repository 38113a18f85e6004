"""`make bench-smoke` as a test: the restatement benchmark at tiny scale.

Runs the benchmark's own functions on the session's Spark (one JVM) in a schema
of its own, once, and checks what it measured: the incremental build rewrites
exactly the k late partitions of gold, the static lookback its window plus
those, the full refresh every partition; the three give the same gold; the
incremental build reads only the late batch from bronze; results are written.
"""

from __future__ import annotations

import json
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pytest

from tooling.bench.config import CORE_MODELS, GOLD_MODEL, SMOKE, SMOKE_SELECT, VARIANTS, BenchConfig
from tooling.bench.project import apply_patch
from tooling.bench.report import write_results
from tooling.bench.runner import run_benchmark
from tooling.bench.state import drop_schemas
from tooling.synthetic import Scale

SCHEMA = "t_bench_smoke"
SCALE = Scale(days=SMOKE["days"], events_per_day=SMOKE["events_per_day"], k=3)
LOOKBACK_DAYS = SMOKE["lookback_days"]
GOLD = GOLD_MODEL


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
    assert len(late_dates) == SCALE.k
    gold = run_of(report, "incremental")["tables"][GOLD]
    assert gold["partition_values"] == late_dates
    assert gold["partitions_written"] == gold["partitions_rewritten"] == SCALE.k
    assert gold["partitions_total"] > SCALE.k
    silver = run_of(report, "incremental")["tables"]["silver_events"]
    assert silver["partition_values"] == late_dates


def test_full_refresh_rewrites_every_partition(bench_run):
    report = bench_run["report"]
    run = run_of(report, "full_refresh")
    gold = run["tables"][GOLD]
    assert gold["partitions_written"] == gold["partitions_total"]
    assert gold["partitions_total"] == run["gold_fingerprint"]["partitions"]
    assert gold["partitions_total"] >= SCALE.days


def test_lookback_rewrites_its_whole_window(bench_run):
    report = bench_run["report"]
    run = run_of(report, "lookback")
    start, end = (date.fromisoformat(d) for d in run["lookback_window"])
    assert (end - start).days == LOOKBACK_DAYS - 1
    window = {str(start + timedelta(days=i)) for i in range(LOOKBACK_DAYS)}
    late = set(report["late_batch"]["dates"])
    assert late - window, "the late batch should reach beyond the lookback window"
    rewritten = set(run["tables"][GOLD]["partition_values"])
    # Every late partition, and besides them only (existing) partitions of the window.
    assert late <= rewritten
    assert rewritten - late
    assert rewritten - late <= window
    assert len(rewritten) < run["tables"][GOLD]["partitions_total"]


def test_variants_agree_on_gold(bench_run):
    report = bench_run["report"]
    prints = {v: run_of(report, v)["gold_fingerprint"] for v in VARIANTS}
    assert prints["incremental"] == prints["lookback"] == prints["full_refresh"]
    assert report["summary"]["all_variants_same_gold"] is True


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
    for variant in VARIANTS:
        by_node = run_of(report, variant)["queries"]["by_node"]
        for model in CORE_MODELS:
            assert by_node[model]["queries"] >= 1, (variant, model)
            assert by_node[model]["spark_seconds"] > 0, (variant, model)
    queries = run_of(report, "incremental")["queries"]["queries"]
    assert any(q["node"] == GOLD and q["head"] == "ReplaceData" for q in queries), "the merge into gold"
    assert report["summary"]["incremental"]["queries"][GOLD]["queries"] >= 1


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
        assert data["summary"][variant]["build_seconds"] > 0
        assert data["summary"][variant]["models"]["silver_events"] > 0
    assert data["initial_load"]["events_per_second"]["ingest"] > 0
    markdown = Path(bench_run["md"]).read_text()
    assert "| dbt build, s |" in markdown
    assert "## Model time per variant" in markdown
    assert f"{GOLD}: partitions written / total" in markdown
    latest = Path(bench_run["json"]).parent / "latest-smoke.json"
    assert json.loads(latest.read_text())["started_at"] == data["started_at"]
