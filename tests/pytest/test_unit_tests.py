"""The dbt unit tests (models/*/_<layer>__unit_tests.yml), run on a built sample.

dbt reads a unit test's fixture column types from the built tables (the
tested model's own table too, for the incremental cases), so they cannot run
before a first build; dbt_project.yml enables them only with
LATECOMER_UNIT_TESTS=true, which ordinary builds leave unset. Here `dbt test
--select test_type:unit` runs every unit test the YAML defines on the sample
that conftest builds once (``built_sample``, whose selection holds every model
a unit test reads from or tests), and each must pass.
"""

from __future__ import annotations

import pytest
import yaml

from tests.pytest.conftest import ROOT, Project


def defined_unit_tests() -> set[str]:
    names = set()
    for path in (ROOT / "models").glob("*/_*__unit_tests.yml"):
        names |= {test["name"] for test in yaml.safe_load(path.read_text())["unit_tests"]}
    return names


def test_unit_tests_are_off_in_builds(built_sample: Project, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LATECOMER_UNIT_TESTS", raising=False)
    result = built_sample.dbt("ls", "--resource-type", "unit_test", "--output", "name")
    assert not [name for name in result.result if name in defined_unit_tests()]  # type: ignore[union-attr]


def test_every_unit_test_passes(built_sample: Project, monkeypatch: pytest.MonkeyPatch) -> None:
    expected = defined_unit_tests()
    assert len(expected) >= 15
    monkeypatch.setenv("LATECOMER_UNIT_TESTS", "true")
    result = built_sample.dbt("test", "--select", "test_type:unit")
    statuses = {
        r.node.name: str(r.status)
        for r in result.result  # type: ignore[union-attr]
        if r.node.resource_type == "unit_test"
    }
    assert statuses == dict.fromkeys(expected, "pass")
