"""The dbt unit tests (models/*/_<layer>__unit_tests.yml), run on a built sample.

dbt reads a unit test's fixture column types from the built tables (the
tested model's own table too, for the incremental cases), so they cannot run
before a first build; dbt_project.yml enables them only with
LATECOMER_UNIT_TESTS=true, which ordinary builds leave unset. Here the sample
is landed and built once, then `dbt test --select test_type:unit` runs every
unit test the YAML defines, and each must pass.
"""

from __future__ import annotations

import csv

import pytest
import yaml

from tests.pytest.conftest import ROOT, Project

LANDING = ROOT / "seeds" / "landing"
AS_OF = "2024-01-21T00:00:00+00:00"
# Every model a unit test reads from or tests, and what they read.
SELECT = "+silver_correction_links +gold_weekly_revenue +gold_revenue_by_tier"


def defined_unit_tests() -> set[str]:
    names = set()
    for path in (ROOT / "models").glob("*/_*__unit_tests.yml"):
        names |= {test["name"] for test in yaml.safe_load(path.read_text())["unit_tests"]}
    return names


@pytest.fixture(scope="module")
def built(module_project: Project) -> Project:
    with (ROOT / "seeds" / "landing_batches.csv").open(newline="") as handle:
        for batch in csv.DictReader(handle):
            path = LANDING / batch["file_name"]
            assert module_project.ingest(batch["source_system"], path, arrival_ts=batch["arrival_ts"]) == 0
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("LATECOMER_UNIT_TESTS", raising=False)
        module_project.build(as_of=AS_OF, select=SELECT)
    return module_project


def test_unit_tests_are_off_in_builds(built: Project, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LATECOMER_UNIT_TESTS", raising=False)
    result = built.dbt("ls", "--resource-type", "unit_test", "--output", "name")
    assert not [name for name in result.result if name in defined_unit_tests()]  # type: ignore[union-attr]


def test_every_unit_test_passes(built: Project, monkeypatch: pytest.MonkeyPatch) -> None:
    expected = defined_unit_tests()
    assert len(expected) >= 15
    monkeypatch.setenv("LATECOMER_UNIT_TESTS", "true")
    result = built.dbt("test", "--select", "test_type:unit")
    statuses = {r.node.name: str(r.status) for r in result.result}  # type: ignore[union-attr]
    assert statuses == dict.fromkeys(expected, "pass")
