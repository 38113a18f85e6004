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


@pytest.mark.parametrize("spilled", [False, True], ids=["one_query", "spilled_rounds"])
def test_correction_chains_resolve_to_any_depth_up_to_the_limit(built_sample: Project, spilled: bool) -> None:
    """correction_chain_end_ctes (pointer jumping) on hand-made chains, in one
    query and a round at a time (spilled_from, as a build runs it): a chain of
    exactly the limit's length ends at its root, one link more stops one short
    of it, and a cycle never ends (assert_correction_chains_resolve names
    those: their end is itself a correction)."""
    limit = 64
    links = [("a1", "root_a")] + [(f"a{i}", f"a{i - 1}") for i in range(2, limit + 1)]
    links += [("b1", "root_b")] + [(f"b{i}", f"b{i - 1}") for i in range(2, limit + 2)]
    links += [("x", "y"), ("y", "x"), ("single", "root_s")]
    values = ", ".join(f"('web', '{alias}', '{target}')" for alias, target in links)
    links_sql = f"select * from values {values} as t(source_system, alias_event_id, next_event_id)"
    spilled_from = ", spilled_from=links_sql" if spilled else ""
    sql = (
        f"{{% set links_sql %}}{links_sql}{{% endset %}}"
        "with links as ({{ links_sql }}), "
        f"{{{{ correction_chain_end_ctes('links', 'chains'{spilled_from}) }}}} "
        "select alias_event_id, next_event_id, links_followed_at_most from chains_ends"
    )
    result = built_sample.dbt("show", "--inline", sql, "--limit", str(len(links) + 10))
    rows = result.result.results[0].agate_table.rows  # type: ignore[union-attr]
    assert len(rows) == len(links)
    ends = {row[0]: row[1] for row in rows}
    assert {row[2] for row in rows} == {limit}
    assert {alias: end for alias, end in ends.items() if alias.startswith("a")} == dict.fromkeys(
        (f"a{i}" for i in range(1, limit + 1)), "root_a"
    )
    assert ends[f"b{limit}"] == "root_b" and ends[f"b{limit + 1}"] == "b1"
    assert ends["single"] == "root_s"
    aliases = {alias for alias, _ in links}
    assert {alias for alias, end in ends.items() if end in aliases} == {f"b{limit + 1}", "x", "y"}
