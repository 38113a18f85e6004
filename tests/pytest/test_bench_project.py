"""The project copies the benchmark builds (tooling.bench.project): no Spark.

The static lookback is not in the product: the `lookback` variant builds a
copy of the project with tooling/bench/lookback.patch applied. These tests
fail as soon as the product drifts so that the diff no longer applies, without
waiting for the smoke benchmark (tests/pytest/test_bench_smoke.py), which
checks what the lookback build rewrites.
"""

from __future__ import annotations

import difflib
import filecmp
from pathlib import Path

import pytest

from tooling.bench.config import (
    LOOKBACK,
    LOOKBACK_PATCH,
    LOOKBACK_VAR,
    PATCHED,
    REPO_ROOT,
    BenchConfig,
)
from tooling.bench.project import snapshot_project
from tooling.synthetic import Scale

LOOKBACK_MACROS = ("macros/restatement/changed_partitions.sql", "macros/restatement/restate.sql")


def config(results_dir: Path, **more) -> BenchConfig:
    return BenchConfig(scale=Scale(days=5, events_per_day=1_000), schema="t_copies", results_dir=results_dir, **more)


def differing_files(left: Path, right: Path) -> list[str]:
    """Paths (from the copies' roots) that differ between two copies, or exist in one only."""
    compared = filecmp.dircmp(left, right)
    out = [*compared.left_only, *compared.right_only, *compared.diff_files, *compared.funny_files]
    for name in compared.common_dirs:
        out += [f"{name}/{path}" for path in differing_files(left / name, right / name)]
    return sorted(out)


def test_the_product_has_no_lookback_mode():
    dbt_files = [REPO_ROOT / "dbt_project.yml", *(REPO_ROOT / "macros").rglob("*"), *(REPO_ROOT / "models").rglob("*")]
    assert [str(p) for p in dbt_files if p.is_file() and LOOKBACK_VAR in p.read_text()] == []


def test_lookback_copy_is_the_project_built_plus_the_patch(tmp_path):
    cfg = config(tmp_path)
    built = snapshot_project(cfg)
    lookback = snapshot_project(cfg, LOOKBACK)
    assert built == cfg.project_dir != lookback == cfg.project_dir_of(LOOKBACK)
    assert cfg.target_path_of(LOOKBACK) != cfg.target_path_of(None) == cfg.target_path
    assert differing_files(built, lookback) == sorted(LOOKBACK_MACROS)
    for macro in LOOKBACK_MACROS:
        assert f"var('{LOOKBACK_VAR}'" not in (built / macro).read_text()
        assert f"var('{LOOKBACK_VAR}'" in (lookback / macro).read_text()
    assert "or (existed and is_impacted)" in (lookback / "macros/restatement/restate.sql").read_text()


def test_a_lookback_patch_that_no_longer_applies_stops_the_run(tmp_path):
    cfg = config(tmp_path)
    built = snapshot_project(cfg)
    restate = built / "macros/restatement/restate.sql"
    restate.write_text(restate.read_text().replace("'{{ invocation_id }}' as invocation_id", "null as invocation_id"))
    stops = f"(?s)does not apply.*the lookback variant is the project built plus {LOOKBACK_PATCH.name}"
    with pytest.raises(RuntimeError, match=stops):
        snapshot_project(cfg, LOOKBACK)


def test_patched_copy_has_the_candidate_patch_only(tmp_path):
    reasons = "macros/restatement/reasons.sql"
    text = (REPO_ROOT / reasons).read_text()
    candidate = tmp_path / "candidate.patch"
    candidate.write_text(
        "".join(
            difflib.unified_diff(
                text.splitlines(keepends=True),
                (text + "\n{#- candidate -#}\n").splitlines(keepends=True),
                fromfile=f"a/{reasons}",
                tofile=f"b/{reasons}",
            )
        )
    )
    cfg = config(tmp_path / "results", candidate_patches=(candidate,))
    built = snapshot_project(cfg)
    patched = snapshot_project(cfg, PATCHED)
    assert patched == cfg.project_dir_of(PATCHED) == tmp_path / "results" / "project-t_copies-patched"
    assert cfg.target_path_of(PATCHED) == tmp_path / "results" / "target-iceberg-patched"
    assert differing_files(built, patched) == [reasons]
    assert cfg.variant_patches("incremental") == () and cfg.project_dir_of("incremental") == built
