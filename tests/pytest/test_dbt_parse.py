"""The test harness parses the project once for many invocations
(conftest.parsed_project), and hands it only the vars not in
conftest.RUNTIME_VARS: sound only while what dbt parses depends on none of
those. Parsed here, with no Spark, once without vars and once with every
runtime var away from its default."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from python_jobs.core.dbt_runner import DbtRunner
from tests.pytest.conftest import ROOT, RUNTIME_VARS, TEST_TARGET
from tests.pytest.test_scd2 import OPEN_GATE

# Each of RUNTIME_VARS, set away from its default.
TEST_VARS = {
    "actor": "a tester",
    "backfill_releases_quarantine": False,
    "data_tests": "all",
    "live_until_tier": "month_end",
    "version_retention_margin_hours": 24,
    "backfill_start": "2024-03-09",
    "backfill_end": "2024-03-10",
    "backfill_reason": "dedup fix",
    "backfill_mode": "replay",
    "publication_gate": OPEN_GATE,
    "publication_gate_override": "checked by hand",
    "period_close": "adjust",
    "volume_baseline_days": "seven",
    "source_watermarks": {"stopped": {"month_end": {"lateness_hours": 36}}},
}


def parsed(tmp_path: Path, name: str, vars: dict[str, Any]) -> dict[str, Any]:
    """What dbt parsed, node by node: configs, dependencies, file checksums
    and relations."""
    runner = DbtRunner(
        project_dir=ROOT, profiles_dir=ROOT / "profiles", target=TEST_TARGET, target_path=tmp_path / name,
        schema="t_parse",
    )  # fmt: skip
    manifest = runner.invoke("parse", "--no-write-json", vars=vars).result
    nodes = {**manifest.nodes, **manifest.sources, **manifest.unit_tests}
    return {
        unique_id: (
            node.config.to_dict(),
            sorted(getattr(getattr(node, "depends_on", None), "nodes", [])),
            sorted(getattr(getattr(node, "depends_on", None), "macros", [])),
            getattr(getattr(node, "checksum", None), "checksum", None),
            getattr(node, "relation_name", None),
        )
        for unique_id, node in nodes.items()
    } | {f"disabled:{unique_id}": len(found) for unique_id, found in manifest.disabled.items()}


@pytest.fixture(scope="module")
def without_vars(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return parsed(tmp_path_factory.mktemp("parse"), "none", {})


def test_the_tests_vars_change_nothing_dbt_parses(without_vars: dict[str, Any], tmp_path: Path) -> None:
    assert set(TEST_VARS) == set(RUNTIME_VARS)
    with_vars = parsed(tmp_path, "test_vars", TEST_VARS)
    assert with_vars.keys() == without_vars.keys()
    assert {key for key in with_vars if with_vars[key] != without_vars[key]} == set()


def alert_settings() -> dict[str, Any]:
    settings = yaml.safe_load((ROOT / "dbt_project.yml").read_text())["vars"]["lateness_alerts"]
    settings["late_share"]["severity"] = "error"
    return settings


@pytest.mark.parametrize(
    ("name", "value", "node", "parsed_as"),
    [
        # A data test's severity is a config, fixed when dbt parses.
        ("lateness_alerts", alert_settings(), "test.latecomer.alert_late_share", ("severity", "ERROR")),
        # A Python model reads the gap from its meta, rendered when dbt parses.
        ("session_gap_minutes", 5, "model.latecomer.silver_sessions", ("meta", "5")),
        # The completeness window is the meta of the two completeness models.
        ("completeness_window_days", 3, "model.latecomer.gold_completeness", ("meta", "3")),
    ],
)
def test_the_vars_read_while_parsing_are_parse_vars(
    without_vars: dict[str, Any], tmp_path: Path, name: str, value: Any, node: str, parsed_as: tuple[str, Any]
) -> None:
    """Why a var read while parsing is not a runtime var: giving it changes
    a node's config."""
    assert name not in RUNTIME_VARS
    with_vars = parsed(tmp_path, name, {name: value})
    assert node in {key for key in with_vars if with_vars[key] != without_vars[key]}
    key, expected = parsed_as
    config = with_vars[node][0][key]
    assert str(config.get(name) if key == "meta" else config).upper() == expected
