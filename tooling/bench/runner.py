"""One benchmark run: generate, land, build, then measure every variant from
the same starting tables (see :mod:`tooling.bench`)."""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict
from datetime import UTC, date, datetime
from typing import Any

import yaml
from pyspark.sql import SparkSession

from tooling.bench import microbatch, sqlmesh_peer, stream_ingest
from tooling.bench.as_users import restore_points
from tooling.bench.checks import (
    dates_written,
    event_arrivals,
    gold_fingerprint,
    lookback_window,
    reference_gold,
    silver_fingerprint,
)
from tooling.bench.config import (
    FLOOR,
    FORMAT_LABELS,
    GOLD_MODEL,
    LOOKBACK,
    LOOKBACK_PATCH,
    LOOKBACK_VAR,
    MICROBATCH,
    NOTHING_NEW,
    OWN_PROJECT,
    PEERS,
    REPO_ROOT,
    SQLMESH,
    BenchConfig,
)
from tooling.bench.floor import run_floor
from tooling.bench.formats import table_format
from tooling.bench.landing import land_late, land_once
from tooling.bench.machine import machine_info, peak_memory
from tooling.bench.metrics import ProcessCounters, ScanMetrics
from tooling.bench.project import git_info, resolve_ref, run_dbt, snapshot_project
from tooling.bench.report import Measurement, summarize
from tooling.bench.sqlmesh_peer import SqlmeshPeer
from tooling.bench.state import TableFormat, TableState, layer_of, rewrite_stats
from tooling.synthetic import History, generate

# Every per-partition check off, the table's limits out of reach.
OPEN_GATE = {
    "max_final_change": None,
    "shrink_reasons": None,
    "max_shrink": None,
    "max_closed_growth": None,
    "max_value_factor": None,
    "max_restated_share": 1.0,
    "max_total_change": 1e9,
    "max_row_change": 1e9,
}


# The reference's gold with the late batch, for every variant but nothing_new.
WITH_LATE_BATCH = "with_late_batch"
# Where the peers' tables are: <schema>_<layer>.
PEER_LAYERS = (microbatch.LAYER, sqlmesh_peer.PHYSICAL_LAYER)
# The runs whose silver the peers start from: they write silver_events in
# place (a full refresh recreates it, and the table it made is purged).
PEER_SILVER = ("incremental", LOOKBACK)


def bench_gate(cfg: BenchConfig) -> dict[str, Any]:
    """The project's publication gate, open.

    The late batch touches days 12 and 22 days before the end, final by then,
    on purpose, and at small scales it is a large share of its days: the gate
    would hold it back for a person to check. The benchmark measures what the
    gate costs (its query and judgement still run), not that decision.
    """
    project = yaml.safe_load((cfg.project_dir / "dbt_project.yml").read_text())
    return {**project["vars"]["publication_gate"], **OPEN_GATE}


def measure_variant(
    spark: SparkSession,
    cfg: BenchConfig,
    fmt: TableFormat,
    history: History,
    variant: str,
    start: dict[str, TableState],
    late_ingest: dict[str, Any],
    reference: Mapping[str, list[Any]],
    sqlmesh: SqlmeshPeer | None = None,
) -> Measurement:
    """Put every table back to ``start`` and run ``variant`` once; its gold
    is compared with ``reference``, what tooling.reference computes from the
    files landed."""
    scale = history.scale
    fmt.restore(start, cfg.schema)
    scans = ScanMetrics(spark, fmt.scan_node)
    scans.start()
    counters = ProcessCounters(spark)
    counters.start()
    floor = None
    peer = None
    if variant == FLOOR:
        run = run_floor(
            spark,
            cfg.schema,
            late_ingest["ingestion_ids"],
            [date.fromisoformat(d) for d in late_ingest["arrival_dates"]],
            scale.late_as_of,
            cfg.project_dir,
        )
        nodes = {step: {"type": FLOOR, "seconds": secs, "status": "success"} for step, secs in run.steps.items()}
        seconds, failed_nodes = run.seconds, []
        floor = asdict(run)
    elif variant == MICROBATCH:
        window = microbatch.batch_window(scale.late_as_of, cfg.lookback_days)
        build = microbatch.run_microbatch(spark, cfg, scale.date_of(scale.first_day), *window)
        seconds, nodes, failed_nodes = build.seconds, build.nodes, build.failed_nodes
        peer = {"table": microbatch.table_of(cfg.schema), "window": [w.isoformat() for w in window]}
    elif variant == SQLMESH:
        assert sqlmesh is not None
        sqlmesh.put_back()
        seconds, done = sqlmesh.run(spark, scale.late_as_of)
        nodes = {sqlmesh_peer.MODEL: {"type": "model", "seconds": round(seconds, 3), "status": done["status"]}}
        failed_nodes = []
        first = sqlmesh_peer.window_start(scale.late_as_of, cfg.lookback_days)
        peer = {"table": sqlmesh.view, "window": [first.isoformat(), done["execution_time"]], "run": done}
    else:
        # nothing_new repeats the initial build: the same data and the same
        # clock (a later as_of is new input: it moves statuses and the
        # completeness estimates).
        as_of = scale.initial_as_of if variant == NOTHING_NEW else scale.late_as_of
        vars: dict[str, Any] = {"as_of": as_of.isoformat(), "publication_gate": bench_gate(cfg)}
        args = ["build"]
        if variant == "full_refresh":
            args.append("--full-refresh")
        elif variant == LOOKBACK:
            # Read by the lookback copy's macros (tooling/bench/lookback.patch).
            vars[LOOKBACK_VAR] = cfg.lookback_days
        build = run_dbt(cfg, *args, vars=vars, spark=spark, variant=variant)
        seconds, nodes, failed_nodes = build.seconds, build.nodes, build.failed_nodes
    cpu = counters.collect()
    reads = scans.collect()
    measures = microbatch.gold_measures(spark, peer["table"] if peer else f"{cfg.schema}_gold.{GOLD_MODEL}")
    if not reads["bronze_events"]["complete"]:
        cfg.log("bench: warning: Spark dropped the metrics of early queries; rows read are short")
    tables = {}
    snapshots = {}
    for table in fmt.tables(cfg.schema):
        layer = layer_of(table, cfg.schema)
        if layer not in ("silver", "gold") and not (variant in PEERS and layer in PEER_LAYERS):
            continue
        name = table.split(".")[1]
        before = start.get(table)
        tables[name] = {"layer": layer, **rewrite_stats(before, fmt.table_files(table))}
        if name == GOLD_MODEL:
            written = dates_written(spark, cfg.schema, fmt, start)
            total = spark.sql(f"select count(distinct event_date) from {table}").collect()[0][0]
            tables[name] |= {"dates_written": len(written), "dates_total": total, "date_values": written}
        if layer == "gold":
            snapshots[name] = fmt.version_summaries(table, before)
    return Measurement(
        variant=variant,
        repeat=0,
        seconds=round(seconds, 3),
        nodes=nodes,
        tables=tables,
        bronze_read=reads["bronze_events"],
        reads=reads,
        gold_fingerprint=gold_fingerprint(spark, cfg.schema, peer["table"] if peer else None),
        silver_fingerprint=silver_fingerprint(spark, cfg.schema),
        spark_seconds=scans.last_queries["spark_seconds"],
        versions_written=fmt.versions_written(start, cfg.schema),
        snapshots=snapshots,
        queries=scans.last_queries,
        lookback_window=(lookback_window(spark, cfg.schema, cfg.lookback_days) if variant == LOOKBACK else None),
        failed_nodes=failed_nodes,
        floor=floor,
        cpu=cpu,
        gold_measures=measures,
        wrong=microbatch.wrong_partitions(measures, reference, peer["window"][0][:10] if peer else ""),
        peer=peer,
    )


def run_benchmark(
    spark: SparkSession, cfg: BenchConfig, on_progress: Callable[[dict], None] | None = None
) -> dict[str, Any]:
    """Generate, land, build, then measure every variant ``cfg.repeat`` times.

    ``on_progress`` gets the report so far after the initial load and after
    every measured run (the CLI writes it, so a long run leaves results early).
    """
    log = cfg.log
    scale = cfg.scale
    fmt = table_format(spark, cfg.table_format)
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
            # What the lookback variant adds to the project built.
            "lookback_patch": (
                {str(LOOKBACK_PATCH.relative_to(REPO_ROOT)): hashlib.sha1(LOOKBACK_PATCH.read_bytes()).hexdigest()[:12]}
                if LOOKBACK in cfg.variants
                else {}
            ),
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
            "restore": f"before each run, every {FORMAT_LABELS[cfg.table_format]} table is put back to its state "
            "at the start of the variant: after the initial build, with the late batch landed in bronze "
            f"(nothing_new: without it); {fmt.restore_method}",
        },
    }
    snapshot_project(cfg)
    for variant in cfg.variants:
        if variant in OWN_PROJECT:
            snapshot_project(cfg, variant)
    log(f"bench: generating {scale.days} days x {scale.events_per_day:,} events ({scale.key()})")
    t0 = time.perf_counter()
    history = generate(scale, cfg.data_dir)
    report["data"] = {**history.as_json(), "generate_seconds": round(time.perf_counter() - t0, 1)}
    t0 = time.perf_counter()
    # The gold every variant must publish, from the same files: without the
    # late batch (nothing_new) and with it (the others); the history is read once.
    arrivals = event_arrivals(history.history)
    references = {
        NOTHING_NEW: reference_gold(arrivals),
        WITH_LATE_BATCH: reference_gold(arrivals + event_arrivals(history.late)),
    }
    report["data"]["reference_seconds"] = round(time.perf_counter() - t0, 1)
    log(f"bench: the plain-Python reference's gold, {report['data']['reference_seconds']:.0f} s")

    t0 = time.perf_counter()
    landed, reused = land_once(spark, cfg, fmt, history)
    ingest_history = landed.history_ingest
    log(
        f"bench: {'reused the landing of' if reused else 'landed'} {ingest_history['rows']:,} rows "
        f"in {time.perf_counter() - t0:.0f} s; initial dbt build"
    )
    scans = ScanMetrics(spark, fmt.scan_node)
    scans.start()
    # The gate var as every variant passes it: vars are part of what a model's
    # inputs are, so a different one would make nothing_new rebuild.
    initial_vars = {"as_of": scale.initial_as_of.isoformat(), "publication_gate": bench_gate(cfg)}
    initial = run_dbt(cfg, "build", vars=initial_vars, spark=spark)
    initial_reads = scans.collect()
    if MICROBATCH in cfg.variants:
        # The peer's table, every day of the history: part of the starting tables.
        first = scale.date_of(scale.first_day)
        start_of_history = datetime.combine(first, datetime.min.time(), tzinfo=UTC)
        peer_initial = microbatch.run_microbatch(spark, cfg, first, start_of_history, scale.initial_as_of)
        log(f"bench: dbt microbatch peer, every day of the history: {peer_initial.seconds:.0f} s")
    sqlmesh = None
    if SQLMESH in cfg.variants:
        first = scale.date_of(scale.first_day)
        sqlmesh = SqlmeshPeer(
            cfg.results_dir / f"sqlmesh-{cfg.schema}", cfg.schema, first, cfg.lookback_days, cfg.table_format
        )
        sqlmesh_seconds = sqlmesh.build(spark, scale.initial_as_of)
        sqlmesh.capture()
        log(f"bench: SQLMesh peer, every day of the history: {sqlmesh_seconds:.0f} s")
    # Every table, bronze too: nothing_new starts from here.
    baseline = fmt.capture(fmt.tables(cfg.schema, exclude_layers=()))
    events = ingest_history["rows"]
    report["initial_load"] = {
        "ingest": ingest_history,
        "ingest_reused": reused,
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
            if layer_of(table, cfg.schema) != "bronze"
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
    land_late(spark, cfg, fmt, history, landed, reused)
    late_start = {**baseline, **fmt.capture(fmt.bronze_tables(cfg.schema))}
    # What the as-users phase puts back in processes of its own (tooling.bench.as_users).
    report["restore_points"] = restore_points(late_start, baseline)
    report["late_batch"] = {
        "ingest": landed.late_ingest,
        "ingest_reused": reused,
        "dates": history.late_dates,
        "k": scale.k,
    }
    if MICROBATCH in cfg.variants:
        report["initial_load"]["microbatch_seconds"] = round(peer_initial.seconds, 3)
    if sqlmesh is not None:
        report["initial_load"]["sqlmesh_seconds"] = round(sqlmesh_seconds, 3)
    # The peers read silver with the late batch applied: the silver tables of
    # the first incremental (or lookback) run, or, when a peer runs before
    # either, of latecomer's silver models run once for it, untimed.
    peer_start: dict[str, TableState] | None = None

    def capture_peer_start(source: str, silver: dict[str, Any]) -> dict[str, TableState]:
        tables = [t for t in fmt.tables(cfg.schema) if layer_of(t, cfg.schema) == "silver"]
        report["late_batch"]["peer_silver"] = {"from": source, "silver_fingerprint": silver}
        return {**late_start, **fmt.capture(tables)}

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
            if variant in PEERS and peer_start is None:
                fmt.restore(late_start, cfg.schema)
                gate = bench_gate(cfg)
                microbatch.build_late_silver(cfg, {"as_of": scale.late_as_of.isoformat(), "publication_gate": gate})
                peer_start = capture_peer_start("silver models", silver_fingerprint(spark, cfg.schema))
            start = baseline if variant == NOTHING_NEW else peer_start if variant in PEERS else late_start
            reference = references[NOTHING_NEW if variant == NOTHING_NEW else WITH_LATE_BATCH]
            m = measure_variant(
                spark, cfg, fmt, history, variant, start or late_start, landed.late_ingest, reference, sqlmesh
            )
            m.repeat = repeat + 1
            if variant in PEER_SILVER and set(PEERS) & set(cfg.variants) and peer_start is None:
                peer_start = capture_peer_start(variant, m.silver_fingerprint)
            gold = m.tables.get(GOLD_MODEL, {})
            log(
                f"bench:   {m.seconds:.1f} s (Spark {m.spark_seconds:.1f} s), {GOLD_MODEL} partitions written "
                f"{gold.get('partitions_written')}, table versions written {sum(m.versions_written.values())}, "
                f"bronze rows read {m.bronze_read['rows']:,}"
            )
            measurements.append(m)
            progress()
    fmt.restore(late_start, cfg.schema)
    if cfg.stream_events:
        log(f"bench: Kafka to bronze, {cfg.stream_events:,} messages, then {cfg.stream_rate:,} a second")
        files = [batch.path for batch in history.history if batch.feed == "events"]
        report["stream_ingest"] = stream_ingest.measure(
            files, cfg.table_format, cfg.stream_events, cfg.stream_rate, cfg.stream_seconds
        )
        progress()
    report["complete"] = True
    progress()
    return report


def _rate(events: int, seconds: float | None) -> float | None:
    return round(events / seconds, 1) if seconds else None
