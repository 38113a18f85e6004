"""What a benchmark run measures and where it keeps its files."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tooling.synthetic import Scale

REPO_ROOT = Path(__file__).resolve().parents[2]
RESULTS_DIR = REPO_ROOT / "bench_results"
VARIANTS = ("incremental", "lookback", "full_refresh")
# The incremental build of the project with --candidate-patch applied, from the
# same starting tables: what a proposed change saves, and that gold is unchanged.
PATCHED = "patched"
DEFAULT = {"days": 60, "events_per_day": 100_000, "lookback_days": 15, "repeat": 3}
SMOKE = {"days": 5, "events_per_day": 1_000, "lookback_days": 2, "repeat": 1}
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
    target: str = "local"
    table_format: str = "iceberg"
    results_dir: Path = RESULTS_DIR
    mode: str = "default"
    log: Callable[[str], None] = print

    @property
    def data_dir(self) -> Path:
        return self.results_dir / "data"

    @property
    def project_dir(self) -> Path:
        return self.results_dir / f"project-{self.schema}"

    @property
    def patched_project_dir(self) -> Path:
        return self.results_dir / f"project-{self.schema}-patched"

    @property
    def target_path(self) -> Path:
        return self.results_dir / "target"

    @property
    def log_path(self) -> Path:
        return self.results_dir / "logs"


def state_dir_for(results_dir: Path, schema: str) -> Path:
    return results_dir / f"state-{schema}"
