"""One benchmark run: generate, land, build, then measure every variant from
the same starting tables (see :mod:`tooling.bench`)."""

from __future__ import annotations

import hashlib
import io
import os
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from tooling.bench.checks import gold_fingerprint, lookback_window
from tooling.bench.config import GOLD_MODEL, PATCHED, BenchConfig
from tooling.bench.machine import machine_info, peak_memory
from tooling.bench.metrics import ScanMetrics
from tooling.bench.project import git_info, resolve_ref, run_dbt, snapshot_project
from tooling.bench.report import Measurement, summarize
from tooling.bench.state import (
    TableState,
    capture,
    drop_schemas,
    iceberg_tables,
    restore,
    rewrite_stats,
    snapshot_summaries,
    table_files,
)
from tooling.synthetic import Batch, History, generate


def land(spark: SparkSession, cfg: BenchConfig, batches: Sequence[Batch]) -> dict[str, Any]:
    """Land ``batches`` through python_jobs.ingest, one call per (arrival, source)."""
    from python_jobs import ingest

    settings = ingest.IngestSettings(schema=cfg.schema, table_format=cfg.table_format)
    groups: dict[tuple[datetime, bool, str, str], list[Path]] = {}
    for batch in batches:
        groups.setdefault((batch.arrival_ts, batch.feed != "events", batch.feed, batch.source), []).append(batch.path)
    totals = {feed: {"calls": 0, "rows": 0, "flagged": 0, "seconds": 0.0} for feed in ingest.FEEDS}
    for (arrival_ts, _, feed, source), paths in sorted(groups.items()):
        started = time.perf_counter()
        results = ingest.ingest(spark, ingest.FEEDS[feed], source, paths, arrival_ts, settings, out=io.StringIO())
        total = totals[feed]
        total["seconds"] += time.perf_counter() - started
        total["calls"] += 1
        for r in results:
            if r.skipped:
                raise RuntimeError(f"{r.path} was already landed: the schema is not fresh")
            total["rows"] += r.accepted + r.flagged
            total["flagged"] += r.flagged
    events = totals["events"]
    return {
        "calls": events["calls"],
        "rows": events["rows"],
        "flagged": events["flagged"],
        "seconds": round(events["seconds"], 3),
        "rows_per_second": round(events["rows"] / events["seconds"], 1) if events["seconds"] else None,
        "other_feeds": {
            feed: {**t, "seconds": round(t["seconds"], 3)}
            for feed, t in totals.items()
            if feed != "events" and t["calls"]
        },
    }



def measure_variant(
    spark: SparkSession, cfg: BenchConfig, history: History, variant: str, baseline: dict[str, TableState]
) -> Measurement:
    scale = history.scale
    restore(spark, baseline, cfg.schema)
    vars: dict[str, Any] = {"as_of": scale.late_as_of.isoformat()}
    args = ["build"]
    if variant == "full_refresh":
        args.append("--full-refresh")
    elif variant == "lookback":
        vars["restate_lookback_days"] = cfg.lookback_days
    scans = ScanMetrics(spark)
    scans.start()
    run = run_dbt(cfg, *args, vars=vars, spark=spark, patched=variant == PATCHED)
    reads = scans.collect()
    if not reads["bronze_events"]["complete"]:
        cfg.log("bench: warning: Spark dropped the metrics of early queries; rows read are short")
    tables = {}
    snapshots = {}
    for table in iceberg_tables(spark, cfg.schema):
        layer = table.split(".")[0].removeprefix(f"{cfg.schema}_")
        if layer not in ("silver", "gold"):
            continue
        name = table.split(".")[1]
        before = baseline.get(table)
        tables[name] = {"layer": layer, **rewrite_stats(before, table_files(spark, table))}
        if layer == "gold":
            snapshots[name] = snapshot_summaries(spark, table, before and before.snapshot_id)
    return Measurement(
        variant=variant,
        repeat=0,
        seconds=round(run.seconds, 3),
        nodes=run.nodes,
        tables=tables,
        bronze_read=reads["bronze_events"],
        reads=reads,
        gold_fingerprint=gold_fingerprint(spark, cfg.schema),
        snapshots=snapshots,
        queries=scans.last_queries,
        lookback_window=(lookback_window(spark, cfg.schema, cfg.lookback_days) if variant == "lookback" else None),
        failed_nodes=run.failed_nodes,
    )



def run_benchmark(
    spark: SparkSession, cfg: BenchConfig, on_progress: Callable[[dict], None] | None = None) -> dict[str, Any]:
    """Generate, land, build, then measure every variant ``cfg.repeat`` times.

    ``on_progress`` gets the report so far after the initial load and after
    every measured run (the CLI writes it, so a long run leaves results early).
    """
    log = cfg.log
    scale = cfg.scale
    report: dict[str, Any] = {
        "benchmark": "latecomer restatement",
        "mode": cfg.mode,
        "complete": False,
        "started_at": datetime.now(UTC).isoformat(),
        "git": {
            **git_info(),
            "built": (
                f"{cfg.git_ref} ({resolve_ref(cfg.git_ref)})"
                if cfg.git_ref
                else str(cfg.project_source or "working tree")
            ),
            "patches": {str(p): hashlib.sha1(p.read_bytes()).hexdigest()[:12] for p in cfg.patches},
            "candidate_patches": {str(p): hashlib.sha1(p.read_bytes()).hexdigest()[:12] for p in cfg.candidate_patches},
        },
        "machine": machine_info(spark),
        "config": {
            "schema": cfg.schema,
            "repeat": cfg.repeat,
            "lookback_days": cfg.lookback_days,
            "variants": list(cfg.variants),
            "with_tests": cfg.with_tests,
            "select": cfg.select,
            "target": cfg.target,
            "table_format": cfg.table_format,
            "restore": "before each run, every non-bronze Iceberg table is dropped from the catalog "
            "(with purge when a full refresh recreated it) and its metadata file of the end of the "
            "initial build is registered again (system.register_table)",
        },
    }
    snapshot_project(cfg)
    if PATCHED in cfg.variants:
        snapshot_project(cfg, patched=True)
    log(f"bench: generating {scale.days} days x {scale.events_per_day:,} events ({scale.key()})")
    t0 = time.perf_counter()
    history = generate(scale, cfg.data_dir)
    report["data"] = {**history.as_json(), "generate_seconds": round(time.perf_counter() - t0, 1)}

    drop_schemas(spark, cfg.schema)
    log(f"bench: landing {len(history.history)} history files in {cfg.schema}_bronze")
    ingest_history = land(spark, cfg, history.history)
    log(f"bench: landed {ingest_history['rows']:,} rows in {ingest_history['seconds']:.0f} s; initial dbt build")
    scans = ScanMetrics(spark)
    scans.start()
    initial = run_dbt(cfg, "build", vars={"as_of": scale.initial_as_of.isoformat()}, spark=spark)
    initial_reads = scans.collect()
    baseline = capture(spark, iceberg_tables(spark, cfg.schema))
    events = ingest_history["rows"]
    report["initial_load"] = {
        "ingest": ingest_history,
        "dbt_build_seconds": round(initial.seconds, 3),
        "nodes": initial.nodes,
        "failed_nodes": initial.failed_nodes,
        "bronze_read": initial_reads["bronze_events"],
        "reads": initial_reads,
        "queries": scans.last_queries,
        "tables": {
            table.split(".")[1]: {
                "files": len(state.files),
                "bytes": sum(v[1] for v in state.files.values()),
                "records": sum(v[2] for v in state.files.values()),
                "partitions": len({v[0] for v in state.files.values()}),
            }
            for table, state in baseline.items()
        },
        "events_per_second": {
            "ingest": ingest_history["rows_per_second"],
            "dbt_build": _rate(events, initial.seconds),
            **{
                model: _rate(events, initial.nodes.get(model, {}).get("seconds"))
                for model in ("silver_event_arrivals", "silver_events")
            },
        },
    }
    log(f"bench: initial build {initial.seconds:.0f} s; landing the late batch")
    report["late_batch"] = {"ingest": land(spark, cfg, history.late), "dates": history.late_dates, "k": scale.k}

    measurements: list[Measurement] = []

    def progress() -> None:
        report["runs"] = [m.as_json() for m in measurements]
        report["summary"] = summarize(measurements, cfg.variants)
        report["memory"] = peak_memory(spark)
        report["machine"]["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
        report["finished_at"] = datetime.now(UTC).isoformat()
        if on_progress:
            on_progress(report)

    progress()
    for repeat in range(cfg.repeat):
        # Rotate the order so no variant always runs first (or right after another).
        shift = repeat % len(cfg.variants)
        for variant in list(cfg.variants[shift:]) + list(cfg.variants[:shift]):
            log(f"bench: repeat {repeat + 1}/{cfg.repeat}: {variant}")
            m = measure_variant(spark, cfg, history, variant, baseline)
            m.repeat = repeat + 1
            gold = m.tables.get(GOLD_MODEL, {})
            log(
                f"bench:   {m.seconds:.1f} s, {GOLD_MODEL} partitions written "
                f"{gold.get('partitions_written')}, bronze rows read {m.bronze_read['rows']:,}"
            )
            measurements.append(m)
            progress()
    restore(spark, baseline, cfg.schema)
    report["complete"] = True
    progress()
    return report


def _rate(events: int, seconds: float | None) -> float | None:
    return round(events / seconds, 1) if seconds else None

