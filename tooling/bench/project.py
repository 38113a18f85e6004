"""The dbt project a run builds: a copy (working tree, another folder or a git
commit, with patches applied), and dbt invoked on it in this process.

The copy is made at the start, so edits made during a long run do not change
what it builds, and results name what they built. The variants in OWN_PROJECT
build a copy of that copy with their own diffs: `lookback` the static lookback
(tooling/bench/lookback.patch), `patched` the --candidate-patch diffs.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import tarfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from python_jobs.core.dbt_runner import DbtRunner
from tooling.bench.config import CORE_MODELS, DBT_PROJECT_FILES, LOOKBACK, OWN_PROJECT, REPO_ROOT, BenchConfig
from tooling.bench.metrics import NodeTagger


@dataclass
class DbtRun:
    seconds: float
    nodes: dict[str, dict[str, Any]]
    failed_nodes: list[str] = field(default_factory=list)


def run_dbt(
    cfg: BenchConfig,
    *args: str,
    vars: dict[str, Any] | None = None,
    spark: SparkSession | None = None,
    variant: str | None = None,
) -> DbtRun:
    """dbt in this process, on the project copy ``variant`` builds (the run's
    copy unless the variant has its own). A core model (CORE_MODELS) that fails
    or is skipped aborts the benchmark; any other failing node (a data test, a
    model outside the late-arrival path) is recorded and reported, and the run
    goes on."""
    runner = DbtRunner(
        project_dir=cfg.project_dir_of(variant),
        target=cfg.target,
        target_path=cfg.target_path_of(variant),
        log_path=cfg.log_path,
        schema=cfg.schema,
    )
    options: list[str] = []
    if not cfg.with_tests and args[0] == "build":
        options += ["--exclude-resource-type", "test", "--exclude-resource-type", "unit_test"]
    if cfg.select:
        options += ["--select", cfg.select]
    started = time.perf_counter()
    result = runner.invoke(
        *args, *options, vars=vars, callbacks=[NodeTagger(spark)] if spark is not None else [], check=False
    )
    seconds = time.perf_counter() - started
    results = getattr(result.result, "results", None)
    if results is None:
        raise RuntimeError(f"dbt {' '.join(args)} failed: {result.exception}")
    status = {r.node.name: str(r.status) for r in results}
    broken = [f"{name}: {status[name]}" for name in CORE_MODELS if status.get(name, "success") != "success"]
    if args[0] == "build" and not set(CORE_MODELS) <= set(status):
        broken.append(f"not built: {sorted(set(CORE_MODELS) - set(status))}")
    if broken:
        messages = [f"{r.node.name}: {r.message}" for r in results if str(r.status) not in ("success", "pass")]
        raise RuntimeError(f"dbt {' '.join(args)}: core model(s) {broken} did not build: {messages}")
    # A failing data test is a wrong answer, not a slow one: the variant fails
    # the benchmark, named with its message (issue 50).
    failing = [f"{r.node.name}: {r.status}: {r.message}" for r in results if str(r.status) in ("fail", "error")]
    if failing:
        raise RuntimeError(f"dbt {' '.join(args)}: {len(failing)} node(s) failed: {failing}")
    # Exposures are reported as no-op: nothing runs for them.
    failed_nodes = [
        f"{r.node.name}: {r.status}"
        for r in results
        if str(r.status) not in ("success", "pass", "warn") and r.node.resource_type != "exposure"
    ]
    if failed_nodes:
        cfg.log(f"bench: warning: {len(failed_nodes)} node(s) were skipped: {failed_nodes}")
    nodes = {
        r.node.name: {
            "type": str(r.node.resource_type),
            "seconds": round(float(r.execution_time or 0.0), 3),
            "status": str(r.status),
        }
        for r in results
    }
    return DbtRun(seconds=seconds, nodes=nodes, failed_nodes=failed_nodes)


def snapshot_project(cfg: BenchConfig, variant: str | None = None) -> Path:
    """Copy the dbt project for this run: from the working tree as it is now,
    from ``cfg.project_source`` or from the git commit ``cfg.git_ref``, with
    ``cfg.patches`` applied. Edits made while a long benchmark runs then do not
    change what it builds, and results name what they built.

    With a ``variant`` in OWN_PROJECT: copy the run's copy (made first) to the
    variant's own folder and apply ``cfg.variant_patches(variant)`` to it."""
    dest = cfg.project_dir_of(variant)
    shutil.rmtree(dest, ignore_errors=True)
    if variant in OWN_PROJECT:
        shutil.copytree(cfg.project_dir, dest)
        for patch in cfg.variant_patches(variant):
            try:
                apply_patch(dest, patch)
            except RuntimeError as exc:
                if variant != LOOKBACK:
                    raise
                raise RuntimeError(
                    f"{exc}\nbench: the lookback variant is the project built plus {patch.name}: bring its "
                    "context lines up to date with macros/restatement, or leave the variant out (--variants)"
                ) from exc
        return dest
    dest.mkdir(parents=True)
    if cfg.git_ref:
        listed = subprocess.run(
            ["git", "ls-tree", "--name-only", cfg.git_ref],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        archive = subprocess.run(
            ["git", "archive", "--format=tar", cfg.git_ref, *[n for n in DBT_PROJECT_FILES if n in listed]],
            cwd=REPO_ROOT,
            capture_output=True,
            check=True,
        ).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(dest, filter="data")
        shutil.rmtree(dest / "tests" / "pytest", ignore_errors=True)
    else:
        ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "pytest", ".pytest_cache")
        for name in DBT_PROJECT_FILES:
            source = (cfg.project_source or REPO_ROOT) / name
            if source.is_dir():
                shutil.copytree(source, dest / name, ignore=ignore)
            elif source.is_file():
                shutil.copy2(source, dest / name)
    for patch in cfg.patches:
        apply_patch(dest, patch)
    return dest


def apply_patch(project: Path, patch: Path) -> None:
    """Apply a diff (paths from the repository root, as `git diff` writes them)
    to the copy in ``project``. git must not see the enclosing repository, or it
    would take the paths relative to that repository's root."""
    env = {**os.environ, "GIT_CEILING_DIRECTORIES": str(project.parent)}
    done = subprocess.run(
        ["git", "apply", "--verbose", str(patch.resolve())], cwd=project, env=env, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise RuntimeError(f"bench: {patch} does not apply to the project built: {done.stderr.strip()}")


def resolve_ref(ref: str) -> str | None:
    done = subprocess.run(["git", "rev-parse", "--short=12", ref], cwd=REPO_ROOT, capture_output=True, text=True)
    return done.stdout.strip() if done.returncode == 0 else None


def git_info() -> dict[str, Any]:
    """HEAD and the uncommitted changes to the dbt project the run builds."""

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(["git", *args], cwd=REPO_ROOT, capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    status = git("status", "--porcelain", "--", *DBT_PROJECT_FILES, "python_jobs")
    return {
        "head": git("rev-parse", "--short=12", "HEAD"),
        "uncommitted": status.splitlines() if status else [],
    }
