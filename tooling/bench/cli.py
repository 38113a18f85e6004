"""``python -m tooling.bench``: the command line."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import tooling.bench
from tooling.bench.config import (
    DEFAULT,
    PATCHED,
    RESULTS_DIR,
    SMOKE,
    SMOKE_SELECT,
    VARIANTS,
    BenchConfig,
    state_dir_for,
)
from tooling.bench.report import render_markdown, write_results
from tooling.bench.runner import run_benchmark
from tooling.synthetic import Scale

EPILOG = """\
scaling up:
  --days and --events-per-day set the history (default 60 x 100,000 = 6M events,
  ~0.8 GB of NDJSON, run on 2 cores and the default 4g driver). Give Spark more
  with LATECOMER_DRIVER_MEMORY (e.g. 12g). To run on a cluster, export
  LATECOMER_SPARK_MASTER (spark://host:7077, yarn, k8s://...), LATECOMER_WAREHOUSE
  (shared storage) and LATECOMER_METASTORE_URI, and put --results-dir on a file
  system the executors can read (the landing files are read by Spark); the
  state dir is then not wiped, the schemas are dropped instead.
  Results of different versions or machines compare through the JSON files.
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m tooling.bench",
        description=(tooling.bench.__doc__ or "").split("\n\n")[0],
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--smoke",
        action="store_true",
        help=f"tiny scale for CI: {SMOKE['days']} days x {SMOKE['events_per_day']:,} events, "
        f"lookback {SMOKE['lookback_days']}, 1 repeat (explicit flags still win)",
    )
    parser.add_argument("--days", type=int, help=f"event days of history (default {DEFAULT['days']})")
    parser.add_argument(
        "--events-per-day",
        type=int,
        help=f"original events per day (default {DEFAULT['events_per_day']:,})",
    )
    parser.add_argument("--k", type=int, default=3, help="partitions the late batch touches")
    parser.add_argument(
        "--late-events", type=int, help="new late events per touched partition (default 0.5%% of a day)"
    )
    parser.add_argument(
        "--lookback-days",
        type=int,
        help=f"static lookback to compare with (default {DEFAULT['lookback_days']})",
    )
    parser.add_argument("--repeat", type=int, help=f"runs per variant; medians reported (default {DEFAULT['repeat']})")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--variants",
        default=",".join(VARIANTS),
        help="comma-separated subset of " + ",".join(VARIANTS),
    )
    parser.add_argument(
        "--no-tests",
        action="store_true",
        help="dbt build without data tests (models and snapshots only; --smoke implies it)",
    )
    parser.add_argument(
        "--select",
        help=f"dbt --select for every build (default: everything; --smoke: {SMOKE_SELECT!r})",
    )
    parser.add_argument(
        "--git-ref",
        help="build the dbt project as committed at this ref (e.g. HEAD) instead of the working tree",
    )
    parser.add_argument(
        "--project-source",
        type=Path,
        help="build the dbt project found in this folder (a copy, another checkout) instead of the working tree",
    )
    parser.add_argument(
        "--patch",
        type=Path,
        action="append",
        default=[],
        help="apply this diff (git diff format, paths from the repository root) to the copy of the "
        "project the run builds, e.g. to measure a proposed change; repeatable",
    )
    parser.add_argument(
        "--candidate-patch",
        type=Path,
        action="append",
        default=[],
        help=f"adds variant {PATCHED!r}: the incremental build of the project with this diff applied, "
        "from the same starting tables (what a proposed change saves; gold must not change); repeatable",
    )
    parser.add_argument("--schema", help="dbt target schema (default bench, bench_smoke)")
    parser.add_argument("--target", default="local", help="dbt target (profiles/profiles.yml)")
    parser.add_argument("--results-dir", type=Path, default=RESULTS_DIR, help="where data, state and results go")
    return parser


def config_from_args(args: argparse.Namespace) -> BenchConfig:
    preset = SMOKE if args.smoke else DEFAULT
    if args.git_ref and args.project_source:
        raise SystemExit("bench: --git-ref and --project-source are exclusive")
    variants = tuple(v.strip() for v in args.variants.split(",") if v.strip())
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown:
        raise SystemExit(f"bench: unknown variant(s) {unknown}; choose from {VARIANTS}")
    if args.candidate_patch:
        variants += (PATCHED,)
    scale = Scale(
        days=args.days or preset["days"],
        events_per_day=args.events_per_day or preset["events_per_day"],
        k=args.k,
        late_events_per_partition=args.late_events,
        seed=args.seed,
    )
    return BenchConfig(
        scale=scale,
        schema=args.schema or ("bench_smoke" if args.smoke else "bench"),
        repeat=args.repeat or preset["repeat"],
        lookback_days=args.lookback_days or preset["lookback_days"],
        variants=variants,
        with_tests=not (args.no_tests or args.smoke),
        git_ref=args.git_ref,
        patches=tuple(args.patch),
        candidate_patches=tuple(args.candidate_patch),
        project_source=args.project_source.resolve() if args.project_source else None,
        select=args.select or (SMOKE_SELECT if args.smoke else None),
        target=args.target,
        table_format=os.environ.get("LATECOMER_TABLE_FORMAT", "iceberg"),
        results_dir=args.results_dir.resolve(),
        mode="smoke" if args.smoke else "default",
    )


def print_summary(report: dict[str, Any], paths: Sequence[Path]) -> None:
    print()
    print(render_markdown(report))
    for path in paths:
        print(f"bench: wrote {path}")
    print(
        "bench: to scale up: --days N --events-per-day N (more history), LATECOMER_DRIVER_MEMORY=12g, "
        "or a cluster: LATECOMER_SPARK_MASTER=spark://host:7077 with LATECOMER_WAREHOUSE and "
        "LATECOMER_METASTORE_URI on shared storage (python -m tooling.bench --help)"
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        cfg = config_from_args(args)
    except ValueError as exc:
        print(f"bench: error: {exc}", file=sys.stderr)
        return 2
    if cfg.table_format != "iceberg":
        print("bench: error: the benchmark reads Iceberg metadata; use iceberg", file=sys.stderr)
        return 2
    # Before Spark starts: its own state dir and schema.
    state = state_dir_for(cfg.results_dir, cfg.schema)
    os.environ["LATECOMER_STATE_DIR"] = str(state)
    os.environ["LATECOMER_SCHEMA"] = cfg.schema
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    # A full build runs several hundred queries; keep the metrics of all of them.
    submit_args = os.environ.get("PYSPARK_SUBMIT_ARGS", "pyspark-shell")
    os.environ["PYSPARK_SUBMIT_ARGS"] = f"--conf spark.sql.ui.retainedExecutions=5000 {submit_args}"
    shared = os.environ.get("LATECOMER_METASTORE_URI") or os.environ.get("LATECOMER_WAREHOUSE")
    if not shared:
        shutil.rmtree(state, ignore_errors=True)

    from python_jobs.spark_config import get_spark  # after the environment above is set

    spark = get_spark(cfg.table_format)
    try:
        report = run_benchmark(spark, cfg, on_progress=lambda r: write_results(r, cfg.results_dir))
        paths = write_results(report, cfg.results_dir)
        print_summary(report, paths)
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
