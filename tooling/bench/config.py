"""What a benchmark run measures and where it keeps its files."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tooling.synthetic import Scale

REPO_ROOT = Path(__file__).resolve().parents[2]
# The table formats a run measures (--format both: each in a process of its
# own, tooling.bench.side_by_side), the dbt target (profiles/profiles.yml)
# that builds each, and their names in reports.
FORMATS = ("iceberg", "delta")
DBT_TARGETS = {"iceberg": "local", "delta": "delta"}
FORMAT_LABELS = {"iceberg": "Iceberg", "delta": "Delta"}
RESULTS_DIR = REPO_ROOT / "bench_results"
# floor: the late batch applied by a plain PySpark job (tooling.bench.floor);
# nothing_new: a build with nothing landed since the initial one.
FLOOR = "floor"
NOTHING_NEW = "nothing_new"
# A static lookback (what microbatch `lookback` or "re-run the last N days"
# does), to compare with. The product has no such mode: the variant builds a
# copy of the project with LOOKBACK_PATCH applied and var LOOKBACK_VAR set to
# the window's days.
LOOKBACK = "lookback"
LOOKBACK_PATCH = Path(__file__).resolve().with_name("lookback.patch")
LOOKBACK_VAR = "restate_lookback_days"
# The peers (issue 50): what a user on Spark would run instead of latecomer.
# microbatch: gold daily revenue as a stock dbt-spark microbatch model
# (tooling.bench.microbatch), its own table, read from the late batch's silver.
# sqlmesh: the same as a SQLMesh INCREMENTAL_BY_TIME_RANGE model on its Spark
# engine (tooling.bench.sqlmesh_peer), from SQLMesh in a venv of its own
# (tooling/bench/requirements-peers.txt, which `make bench` installs).
MICROBATCH = "microbatch"
SQLMESH = "sqlmesh"
PEERS = (MICROBATCH, SQLMESH)
VARIANTS = ("incremental", LOOKBACK, "full_refresh", FLOOR, NOTHING_NEW, MICROBATCH)
# Every variant `make bench` runs: those above, and the peers whose packages
# live in .venv-peers, which `make bench` installs (a BenchConfig's default,
# the smoke run's included, needs only the product's venv).
ALL_VARIANTS = (*VARIANTS, SQLMESH)
# How the as-users phase runs its builds (tooling.bench.as_users): each a new
# process (a cold JVM), a new dbt process through a Thrift server (a warm one),
# or a new dbt process attached to a warm driver (python_jobs/core/warm_driver.py).
AS_USERS_MODES = ("cold", "server", "driver")
# The incremental build of the project with --candidate-patch applied, from the
# same starting tables: what a proposed change saves, and that gold is unchanged.
PATCHED = "patched"
# Variants that build a project copy of their own: the run's copy with their
# diffs applied (BenchConfig.variant_patches).
OWN_PROJECT = (LOOKBACK, PATCHED)
# The dbt builds of the late batch: their gold and silver must come out the same.
SAME_RESULT = ("incremental", LOOKBACK, "full_refresh", PATCHED)
DEFAULT: dict[str, Any] = {
    "days": 60,
    "events_per_day": 100_000,
    "lookback_days": 15,
    "repeat": 3,
    "variants": ALL_VARIANTS,
    # Kafka to bronze (tooling.bench.stream_ingest): messages for the
    # throughput run, and the latency run's rate and length; 0: not measured.
    "stream_events": 200_000,
    "stream_rate": 2_000,
    "stream_seconds": 20.0,
    # The late batch and nothing new again, each dbt build a new process
    # (tooling.bench.as_users): builds of each; 0: not measured.
    "as_users": 3,
}
SMOKE: dict[str, Any] = {
    **DEFAULT,
    # Six days: the k=3 late days, the day the late batch empties (two days
    # before the last) and one day no variant need touch.
    "days": 6,
    "events_per_day": 1_000,
    # Reaches the emptied day, not the two oldest late days.
    "lookback_days": 4,
    "repeat": 1,
    "stream_events": 0,
    "as_users": 0,
}
# python -m tooling.bench sweep: the same late batch at each history length.
SWEEP: dict[str, Any] = {
    **DEFAULT,
    "days": (30, 60, 120),
    "events_per_day": 20_000,
    "variants": ("incremental", "full_refresh", FLOOR),
    "stream_events": 0,
}
# What --smoke builds: the late-arrival path only (the other gold models add time, not checks).
SMOKE_SELECT = "+gold_daily_revenue +late_arrival_audit"
GOLD_MODEL = "gold_daily_revenue"
# The late-arrival path the benchmark is about: these must build, every run.
CORE_MODELS = (
    "silver_event_arrivals",
    "silver_quarantine",
    "silver_events",
    "silver_event_changes",
    GOLD_MODEL,
    "late_arrival_audit",
)
# What dbt reads; copied per run (see tooling.bench.project).
DBT_PROJECT_FILES = (
    "dbt_project.yml",
    "packages.yml",
    "dependencies.yml",
    "profiles",
    "models",
    "macros",
    "seeds",
    "snapshots",
    "analyses",
    "tests",
)


@dataclass
class BenchConfig:
    scale: Scale
    schema: str = "bench"
    repeat: int = 3
    lookback_days: int = 15
    variants: tuple[str, ...] = VARIANTS
    with_tests: bool = True
    git_ref: str | None = None  # build the dbt project of this commit, not the working tree
    patches: tuple[Path, ...] = ()  # diffs applied to the project copy (measure a proposed change)
    project_source: Path | None = None  # copy the dbt project from here, not from the working tree
    candidate_patches: tuple[Path, ...] = ()  # variant "patched": incremental build with these applied
    select: str | None = None  # dbt --select for every build (default: the whole project)
    target: str | None = None  # dbt target; default: the format's (DBT_TARGETS)
    table_format: str = "iceberg"
    results_dir: Path = RESULTS_DIR
    mode: str = "default"
    fresh: bool = False  # land again even when this scale's landing can be reused
    stream_events: int = 0  # Kafka to bronze, measured with this many messages (0: not)
    stream_rate: int = 2_000
    stream_seconds: float = 20.0
    as_users_modes: tuple[str, ...] = ()  # of AS_USERS_MODES
    as_users: int = 0  # new-process builds of the late batch and of nothing new (tooling.bench.as_users)
    log: Callable[[str], None] = print

    def __post_init__(self) -> None:
        if self.table_format not in FORMATS:
            raise ValueError(f"table format {self.table_format!r}: choose one of {', '.join(FORMATS)}")
        self.target = self.target or DBT_TARGETS[self.table_format]

    @property
    def data_dir(self) -> Path:
        return self.results_dir / "data"

    @property
    def project_dir(self) -> Path:
        """The run's copy of the dbt project (tooling.bench.project)."""
        return self.results_dir / f"project-{self.schema}"

    def project_dir_of(self, variant: str | None) -> Path:
        """The copy ``variant`` builds: its own for a variant in OWN_PROJECT, else the run's."""
        return self.results_dir / f"project-{self.schema}-{variant}" if variant in OWN_PROJECT else self.project_dir

    def variant_patches(self, variant: str) -> tuple[Path, ...]:
        """The diffs applied to ``variant``'s own copy, over ``patches``."""
        return {LOOKBACK: (LOOKBACK_PATCH,), PATCHED: self.candidate_patches}.get(variant, ())

    @property
    def target_path(self) -> Path:
        return self.results_dir / f"target-{self.table_format}"

    def target_path_of(self, variant: str | None) -> Path:
        """dbt's target folder for ``variant``: one per project copy (and format)."""
        if variant in OWN_PROJECT:
            return self.results_dir / f"target-{self.table_format}-{variant}"
        return self.target_path

    @property
    def log_path(self) -> Path:
        return self.results_dir / "logs"


def schema_for(scale: Scale, prefix: str = "bench") -> str:
    """The schema a scale lands and builds in by default: one per scale, so
    that its landing can be reused (tooling.bench.landing)."""
    return f"{prefix}_d{scale.days}_e{scale.events_per_day}"


def state_dir_for(results_dir: Path, table_format: str) -> Path:
    """Metastore and warehouse of the runs of ``table_format`` that write to
    ``results_dir``: one per format, as a Spark session serves one catalog."""
    return results_dir / f"state-{table_format}"
