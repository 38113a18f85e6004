"""A history sweep: the same late batch at several history lengths.

Every history ends on the same day and the late batch is the same bytes for
every length (see :mod:`tooling.synthetic.generator`), so what changes from
one length to the next is only how much history lies behind the batch. Each
length is a full benchmark run in a schema of its own (its data and landing
are kept and reused); the sweep puts their medians side by side with the
growth from the shortest history to the longest.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from tooling.bench.config import FLOOR, BenchConfig, schema_for
from tooling.bench.project import snapshot_project
from tooling.bench.report import fmt_num, fmt_times, write_report, write_results
from tooling.bench.runner import run_benchmark

# What a sweep compares by default.
SWEEP_VARIANTS = ("incremental", "full_refresh", FLOOR)


def run_sweep(
    spark: SparkSession,
    base: BenchConfig,
    days: Sequence[int],
    schema_prefix: str = "bench",
    on_progress: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """One benchmark run per history length in ``days`` (shortest first),
    each written as its own report (mode ``sweep-d<days>``), then the sweep."""
    sweep: dict[str, Any] = {
        "benchmark": "latecomer history sweep",
        "mode": "sweep",
        "started_at": datetime.now(UTC).isoformat(),
        "complete": False,
        "days": sorted(days),
        "variants": list(base.variants),
        "points": [],
    }
    # One copy of the dbt project for every length: edits made during the
    # sweep change none of them.
    source = snapshot_project(replace(base, schema=f"{schema_prefix}_sweep"))
    sweep["built"] = base.git_ref or str(base.project_source or "working tree")
    for length in sorted(days):
        scale = replace(base.scale, days=length)
        cfg = replace(
            base,
            scale=scale,
            schema=schema_for(scale, schema_prefix),
            mode=f"sweep-d{length}",
            project_source=source,
            git_ref=None,
            patches=(),
        )
        base.log(f"bench: sweep: {length} days of history")
        report = run_benchmark(spark, cfg, on_progress=lambda r, c=cfg: write_results(r, c.results_dir))
        paths = write_results(report, cfg.results_dir)
        sweep["points"].append(point_of(report, [str(p) for p in paths]))
        sweep["growth"] = growth(sweep["points"], sweep["variants"])
        if on_progress:
            on_progress(sweep)
    sweep["complete"] = True
    sweep["finished_at"] = datetime.now(UTC).isoformat()
    return sweep


def point_of(report: dict[str, Any], paths: Sequence[str]) -> dict[str, Any]:
    """What the sweep keeps of one length's report."""
    summary = report["summary"]
    variants = [v for v in report["config"]["variants"] if v in summary]
    return {
        "days": report["data"]["scale"]["days"],
        "bronze_rows": report["initial_load"]["ingest"]["rows"],
        "late_batch_rows": report["late_batch"]["ingest"]["rows"],
        "late_dates": report["late_batch"]["dates"],
        "generate_seconds": report["data"].get("generate_seconds"),
        "ingest_seconds": report["initial_load"]["ingest"]["seconds"],
        "ingest_reused": report["initial_load"].get("ingest_reused", False),
        "initial_build_seconds": report["initial_load"]["dbt_build_seconds"],
        "variants": {
            v: {
                key: summary[v][key]
                for key in ("n", "build_seconds", "build_seconds_min", "build_seconds_max", "spark_seconds")
            }
            for v in variants
        },
        "ratios": summary.get("ratios", {}),
        "same_gold": summary.get("all_variants_same_gold"),
        "reports": list(paths),
    }


def growth(points: Sequence[dict[str, Any]], variants: Sequence[str]) -> dict[str, Any]:
    """Longest history's medians as multiples of the shortest's, per variant."""
    if len(points) < 2:
        return {}
    first, last = points[0], points[-1]
    out: dict[str, Any] = {"from_days": first["days"], "to_days": last["days"], "bronze_rows": None}
    if first["bronze_rows"]:
        out["bronze_rows"] = round(last["bronze_rows"] / first["bronze_rows"], 3)
    for variant in variants:
        a, b = first["variants"].get(variant), last["variants"].get(variant)
        if a and b:
            out[variant] = {
                key: round(b[key] / a[key], 3) if a[key] else None for key in ("build_seconds", "spark_seconds")
            }
    return out


def render_sweep(sweep: dict[str, Any]) -> str:
    variants = sweep["variants"]
    points = sweep["points"]
    lines = [
        "# latecomer history sweep",
        "",
        f"dbt project built: {sweep.get('built', '?')}, started {sweep.get('started_at', '?')}.",
        "",
        *([] if sweep.get("complete") else [f"**Incomplete: {len(points)} of {len(sweep['days'])} lengths.**", ""]),
        "The same late batch (same rows, same k event dates before the end of the history) at each history",
        "length; medians per variant. Build: wall time of `dbt build` (floor: of the PySpark job); Spark:",
        "the sum of the Spark SQL executions' durations during it.",
        "",
        "| history days | bronze rows | "
        + " | ".join(f"{v} build, s | {v} Spark, s" for v in variants)
        + " | initial build, s |",
        "|---:|---:|" + "---:|---:|" * len(variants) + "---:|",
    ]
    for point in points:
        cells = []
        for v in variants:
            stats = point["variants"].get(v) or {}
            cells += [fmt_num(stats.get("build_seconds"), 1), fmt_num(stats.get("spark_seconds"), 1)]
        lines.append(
            f"| {point['days']} | {point['bronze_rows']:,} | "
            + " | ".join(cells)
            + f" | {fmt_num(point['initial_build_seconds'], 1)} |"
        )
    grown = sweep.get("growth") or {}
    if grown:
        cells = []
        for v in variants:
            g = grown.get(v) or {}
            cells += [fmt_times(g.get("build_seconds")), fmt_times(g.get("spark_seconds"))]
        lines.append(
            f"| growth {grown['from_days']} -> {grown['to_days']} days | {fmt_times(grown.get('bronze_rows'))} | "
            + " | ".join(cells)
            + " | |"
        )
    ratio_names = sorted({r for p in points for r in p["ratios"]})
    if ratio_names:
        lines += [
            "",
            "| history days | " + " | ".join(f"{r} (build / Spark)" for r in ratio_names) + " |",
            "|---:|" + "---:|" * len(ratio_names),
        ]
        for point in points:
            cells = [
                f"{fmt_times(point['ratios'].get(r, {}).get('build_seconds'))} / "
                f"{fmt_times(point['ratios'].get(r, {}).get('spark_seconds'))}"
                for r in ratio_names
            ]
            lines.append(f"| {point['days']} | " + " | ".join(cells) + " |")
    lines += ["", "Reports per length: " + ", ".join(Path(p["reports"][-1]).name for p in points if p["reports"])]
    return "\n".join(lines) + "\n"


def write_sweep(sweep: dict[str, Any], results_dir: Path) -> tuple[Path, Path]:
    """sweep-<time>.json / .md, and latest-sweep.* once complete."""
    return write_report(sweep, results_dir, "sweep", "latest-sweep", render_sweep)
