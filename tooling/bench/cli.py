"""``python -m tooling.bench``: the command line.

python -m tooling.bench [options]                         one scale, every variant, on both table formats
python -m tooling.bench --smoke                           the tiny scale CI runs
python -m tooling.bench --format delta [options]          one table format (iceberg or delta)
python -m tooling.bench sweep --days 30,60,120 [options]  the same late batch at several history lengths
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import tooling.bench
from tooling.bench import sqlmesh_peer
from tooling.bench.config import (
    ALL_VARIANTS,
    AS_USERS_MODES,
    DBT_TARGETS,
    DEFAULT,
    FORMATS,
    LOOKBACK_PATCH,
    LOOKBACK_VAR,
    NOTHING_NEW,
    PATCHED,
    REPO_ROOT,
    RESULTS_DIR,
    SMOKE,
    SMOKE_SELECT,
    SQLMESH,
    SWEEP,
    BenchConfig,
    schema_for,
    state_dir_for,
)
from tooling.bench.report import render_markdown, write_results
from tooling.synthetic import Scale

EPILOG = """\
scaling up:
  --days and --events-per-day set the history (default 60 x 100,000 = 6M events,
  ~0.8 GB of NDJSON, run on 2 cores and the default 4g driver). Give Spark more
  with LATECOMER_DRIVER_MEMORY (e.g. 12g). To run on a cluster, export
  LATECOMER_SPARK_MASTER (spark://host:7077, yarn, k8s://...), LATECOMER_WAREHOUSE
  (shared storage) and LATECOMER_METASTORE_URI, and put --results-dir on a file
  system the executors can read (the landing files are read by Spark).
  Generated data (<results>/data) and each scale's landing in bronze
  (<results>/state-<format>, schema bench_d<days>_e<events>, on Delta
  bench_d<days>_e<events>_delta) are kept and reused by later runs of the
  same scale; --fresh lands again.
  Results of different versions or machines compare through the JSON files.
"""


def build_parser(sweep: bool = False) -> argparse.ArgumentParser:
    preset = SWEEP if sweep else DEFAULT
    parser = argparse.ArgumentParser(
        prog="python -m tooling.bench" + (" sweep" if sweep else ""),
        description=(
            "The same late batch at several history lengths, side by side, with the growth from the shortest "
            "to the longest."
            if sweep
            else (tooling.bench.__doc__ or "").split("\n\n")[0]
        ),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    if sweep:
        parser.add_argument(
            "--days",
            default=",".join(map(str, SWEEP["days"])),
            help=f"comma-separated history lengths in event days (default {','.join(map(str, SWEEP['days']))})",
        )
    else:
        parser.add_argument(
            "--smoke",
            action="store_true",
            help=f"tiny scale for CI: {SMOKE['days']} days x {SMOKE['events_per_day']:,} events, "
            f"lookback {SMOKE['lookback_days']}, 1 repeat, no data tests, the late-arrival path only "
            "(explicit flags still win)",
        )
        parser.add_argument("--days", type=int, help=f"event days of history (default {DEFAULT['days']})")
    parser.add_argument(
        "--events-per-day",
        type=int,
        help=f"original events per day (default {preset['events_per_day']:,})",
    )
    parser.add_argument("--k", type=int, default=3, help="partitions the late batch touches")
    parser.add_argument(
        "--late-events", type=int, help="new late events per touched partition (default 0.5%% of a day)"
    )
    parser.add_argument(
        "--lookback-days",
        type=int,
        help="days of the lookback variant's static lookback, not in the product: "
        f"{LOOKBACK_PATCH.relative_to(REPO_ROOT)} with var {LOOKBACK_VAR} (default {preset['lookback_days']})",
    )
    parser.add_argument(
        "--landing-days",
        type=int,
        default=Scale.landing_days,
        help="arrival days of history landed together, one file and ingest call per source (1-7, default %(default)s)",
    )
    parser.add_argument("--repeat", type=int, help=f"runs per variant; medians reported (default {preset['repeat']})")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--variants",
        default=",".join(preset["variants"]),
        help="comma-separated subset of "
        + ",".join(ALL_VARIANTS)
        + " (default %(default)s; sqlmesh needs SQLMesh from tooling/bench/requirements-peers.txt, which make bench"
        " installs in .venv-peers)",
    )
    parser.add_argument(
        "--stream-events",
        type=int,
        help="messages in the Kafka-to-bronze throughput run, 0 for none "
        f"(tooling.bench.stream_ingest; default {preset.get('stream_events', 0):,}, --smoke none)",
    )
    if not sweep:
        parser.add_argument(
            "--as-users",
            type=int,
            help="after the in-process runs, this many builds of the late batch and of nothing new, each "
            "`dbt build` a new process as a schedule runs it, 0 for none "
            f"(tooling.bench.as_users; default {DEFAULT['as_users']}, --smoke none)",
        )
        parser.add_argument(
            "--as-users-modes",
            default=",".join(AS_USERS_MODES),
            help="how those builds run: cold (a new process each), server (through a Thrift server, "
            "Iceberg only) and driver (attached to a warm driver, Iceberg only) (default %(default)s)",
        )
    parser.add_argument(
        "--no-tests",
        action="store_true",
        help="dbt build without data tests (models, seeds and snapshots only); by default builds run them too",
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
    parser.add_argument(
        "--schema",
        help="dbt target schema (default: bench_d<days>_e<events per day>; bench_smoke with --smoke)"
        if not sweep
        else "prefix of the schemas, one per length (default bench: bench_d<days>_e<events per day>)",
    )
    parser.add_argument(
        "--format",
        choices=(*FORMATS, "both") if not sweep else FORMATS,
        help="table format: "
        + (
            "iceberg or delta (default: LATECOMER_TABLE_FORMAT, else iceberg)"
            if sweep
            else "iceberg, delta, or both, each in a process of its own, side by side "
            "(default: LATECOMER_TABLE_FORMAT, else both)"
        ),
    )
    parser.add_argument(
        "--target",
        help="dbt target (profiles/profiles.yml; default: the format's, "
        + ", ".join(f"{f}: {t}" for f, t in DBT_TARGETS.items())
        + ")",
    )
    parser.add_argument("--results-dir", type=Path, default=RESULTS_DIR, help="where data, state and results go")
    parser.add_argument(
        "--fresh", action="store_true", help="land the data again even when this scale's landing can be reused"
    )
    return parser


def format_of(args: argparse.Namespace, sweep: bool = False) -> str:
    """--format, else LATECOMER_TABLE_FORMAT, else both (a sweep: iceberg)."""
    chosen = (args.format or os.environ.get("LATECOMER_TABLE_FORMAT") or ("iceberg" if sweep else "both")).lower()
    if chosen not in (FORMATS if sweep else (*FORMATS, "both")):
        raise ValueError(f"table format {chosen!r} (LATECOMER_TABLE_FORMAT): choose one of {', '.join(FORMATS)}")
    return chosen


def default_schema(scale: Scale, smoke: bool, table_format: str) -> str:
    """bench_d<days>_e<events> (bench_smoke with --smoke); a Delta run's ends in _delta."""
    schema = "bench_smoke" if smoke else schema_for(scale)
    return f"{schema}_delta" if table_format == "delta" else schema


def config_from_args(args: argparse.Namespace, sweep: bool = False, table_format: str = "iceberg") -> BenchConfig:
    smoke = getattr(args, "smoke", False)
    preset = SWEEP if sweep else SMOKE if smoke else DEFAULT
    if args.git_ref and args.project_source:
        raise SystemExit("bench: --git-ref and --project-source are exclusive")
    variants = tuple(v.strip() for v in args.variants.split(",") if v.strip())
    unknown = [v for v in variants if v not in ALL_VARIANTS]
    if unknown:
        raise SystemExit(f"bench: unknown variant(s) {unknown}; choose from {ALL_VARIANTS}")
    if SQLMESH in variants:
        # Before the history is generated and built, not after.
        try:
            sqlmesh_peer.import_sqlmesh()
        except RuntimeError as missing:
            others = ",".join(v for v in variants if v != SQLMESH)
            hint = f"make bench installs it; or leave the peer out: --variants {others}"
            raise SystemExit(f"{missing}\n({hint})") from None
    if args.candidate_patch:
        variants += (PATCHED,)
    scale = Scale(
        days=min(sweep_days(args.days)) if sweep else args.days or preset["days"],
        events_per_day=args.events_per_day or preset["events_per_day"],
        k=args.k,
        late_events_per_partition=args.late_events,
        seed=args.seed,
        landing_days=args.landing_days,
    )
    return BenchConfig(
        scale=scale,
        # A sweep names a schema per length (tooling.bench.sweep).
        schema=args.schema or default_schema(scale, smoke, table_format),
        repeat=args.repeat or preset["repeat"],
        lookback_days=args.lookback_days or preset["lookback_days"],
        variants=variants,
        with_tests=not (args.no_tests or smoke),
        git_ref=args.git_ref,
        patches=tuple(args.patch),
        candidate_patches=tuple(args.candidate_patch),
        project_source=args.project_source.resolve() if args.project_source else None,
        select=args.select or (SMOKE_SELECT if smoke else None),
        target=args.target,
        table_format=table_format,
        results_dir=args.results_dir.resolve(),
        mode="sweep" if sweep else "smoke" if smoke else "default",
        fresh=args.fresh,
        stream_events=preset.get("stream_events", 0) if args.stream_events is None else args.stream_events,
        stream_rate=preset.get("stream_rate", 2_000),
        stream_seconds=preset.get("stream_seconds", 20.0),
        as_users=preset.get("as_users", 0) if getattr(args, "as_users", None) is None else args.as_users,
        as_users_modes=as_users_modes(getattr(args, "as_users_modes", "")),
    )


def as_users_modes(text: str) -> tuple[str, ...]:
    """``--as-users-modes``: a comma-separated subset of AS_USERS_MODES."""
    modes = tuple(mode.strip() for mode in text.split(",") if mode.strip())
    unknown = sorted(set(modes) - set(AS_USERS_MODES))
    if unknown:
        raise ValueError(f"--as-users-modes {', '.join(unknown)}: choose among {', '.join(AS_USERS_MODES)}")
    return modes


def sweep_days(text: str) -> list[int]:
    try:
        days = sorted({int(d) for d in text.split(",") if d.strip()})
    except ValueError:
        raise ValueError(f"--days {text!r}: comma-separated numbers of days, e.g. 30,60,120") from None
    if len(days) < 2:
        raise ValueError(f"--days {text!r}: a sweep needs at least two history lengths")
    return days


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
    argv = list(sys.argv[1:] if argv is None else argv)
    sweep = bool(argv) and argv[0] == "sweep"
    args = build_parser(sweep).parse_args(argv[1:] if sweep else argv)
    try:
        table_format = format_of(args, sweep)
        cfg = config_from_args(args, sweep, "iceberg" if table_format == "both" else table_format)
        days = sweep_days(args.days) if sweep else []
    except ValueError as exc:
        print(f"bench: error: {exc}", file=sys.stderr)
        return 2
    if table_format == "both":
        from tooling.bench.side_by_side import run_formats

        return run_formats(argv, cfg.mode, cfg.results_dir)
    if cfg.stream_events and not sweep:
        # The Kafka stage runs last: its broker's jars are fetched (or found
        # missing, with the way to fetch them) before the runs, not after them.
        from python_jobs.operations import kafka_broker

        try:
            kafka_broker.fetch(sys.stdout)
        except kafka_broker.KafkaBrokerError as error:
            print(f"bench: error: {error}", file=sys.stderr)
            return 2
    # Before Spark starts: the results dir's own metastore and warehouse, one per format.
    os.environ["LATECOMER_STATE_DIR"] = str(state_dir_for(cfg.results_dir, cfg.table_format))
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    # A full build runs several hundred queries; keep the metrics of all of them.
    submit_args = os.environ.get("PYSPARK_SUBMIT_ARGS", "pyspark-shell")
    os.environ["PYSPARK_SUBMIT_ARGS"] = f"--conf spark.sql.ui.retainedExecutions=5000 {submit_args}"

    from python_jobs.core.spark_config import get_spark  # after the environment above is set

    # The store's size at start-up would choose the JVM profile
    # (spark_config.command_profile): a first run at a large scale starts on
    # a store of a few MB and would run on `short`, a later one on `job`.
    # The scale decides instead; LATECOMER_JVM_PROFILE still wins.
    spark = get_spark(cfg.table_format, jvm_profile="short" if cfg.mode == "smoke" else "job")
    try:
        if sweep:
            from tooling.bench.sweep import render_sweep, run_sweep, write_sweep

            result = run_sweep(
                spark,
                cfg,
                days,
                schema_prefix=args.schema or ("bench_delta" if cfg.table_format == "delta" else "bench"),
                on_progress=lambda s: write_sweep(s, cfg.results_dir),
            )
            paths = write_sweep(result, cfg.results_dir)
            print()
            print(render_sweep(result))
            for path in paths:
                print(f"bench: wrote {path}")
        else:
            from tooling.bench.runner import run_benchmark

            report = run_benchmark(spark, cfg, on_progress=lambda r: write_results(r, cfg.results_dir))
            if cfg.as_users:
                report["as_users"] = measure_as_users(spark, cfg, report)
            print_summary(report, write_results(report, cfg.results_dir))
    finally:
        from pyspark import SparkContext

        if SparkContext._gateway is not None:  # the as-users phase ends the JVM itself
            spark.stop()
    return 0


def measure_as_users(spark: Any, cfg: BenchConfig, report: dict[str, Any]) -> dict[str, Any]:
    """The as-users phase (tooling.bench.as_users), once this process's JVM,
    and with it the embedded metastore, is gone."""
    from tooling.bench import as_users
    from tooling.bench.runner import bench_gate

    as_users.stop_jvm(spark)
    scale = cfg.scale

    def vars_of(kind: str) -> tuple[str, dict[str, Any]]:
        as_of = scale.initial_as_of if kind == NOTHING_NEW else scale.late_as_of
        return as_of.isoformat(), {"publication_gate": bench_gate(cfg)}

    return as_users.measure(cfg, report, vars_of, cfg.as_users, cfg.as_users_modes)
