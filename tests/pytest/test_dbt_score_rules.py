"""The project's dbt-score rules (tooling/dbt_score_rules.py) on hand-made models; no dbt, no Spark."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

pytest.importorskip("dbt_score")

from dbt_score import Model, RuleViolation  # noqa: E402
from dbt_score.models import Column  # noqa: E402
from dbt_score.models import Test as DataTest  # noqa: E402
from dbt_score.rule import RuleConfig  # noqa: E402

from tooling.dbt_score_rules import (  # noqa: E402
    has_tested_primary_key,
    primary_key,
    primary_key_is_not_null,
    public_model_has_contract,
)


def column(name: str, *tests: str) -> Column:
    return Column(name=name, description=f"{name}.", tests=[DataTest(name=f"{t}_{name}", type=t) for t in tests])


def model(
    columns: list[Column],
    tests: Sequence[DataTest] = (),
    access: str = "protected",
    contract: dict[str, Any] | None = None,
    name: str = "m",
) -> Model:
    return Model(
        unique_id=f"model.p.{name}",
        name=name,
        relation_name=None,
        description="A model.",
        original_file_path=f"models/{name}.sql",
        config={"contract": contract or {"enforced": False}},
        meta={},
        columns=columns,
        package_name="p",
        database="",
        schema="s",
        raw_code="select 1",
        language="sql",
        access=access,
        group=None,
        tests=list(tests),
    )


def model_test(kind: str, *columns: str, argument: str = "columns") -> DataTest:
    return DataTest(name=f"{kind}_m", type=kind, kwargs={argument: list(columns)})


def unique_combination(*columns: str) -> DataTest:
    """dbt-utils' key test: unique only."""
    return model_test("unique_combination_of_columns", *columns, argument="combination_of_columns")


def evaluate(rule_class: type, evaluable: Model, **config: Any) -> RuleViolation | None:
    rule = rule_class(RuleConfig(config=config))
    return rule.evaluate(evaluable, **rule.config)


def test_primary_key_from_a_combination_test_or_a_unique_column() -> None:
    assert primary_key(model([column("a"), column("b")], [unique_combination("a", "b")])) == ["a", "b"]
    assert primary_key(model([column("a"), column("b")], [model_test("primary_key", "b", "a")])) == ["b", "a"]
    assert primary_key(model([column("id", "unique", "not_null"), column("x")])) == ["id"]
    assert primary_key(model([column("id", "not_null")])) is None
    # A combination test without columns is no key.
    assert primary_key(model([column("a")], [unique_combination()])) is None


def test_has_tested_primary_key() -> None:
    assert evaluate(has_tested_primary_key, model([column("a")], [unique_combination("a")])) is None
    violation = evaluate(has_tested_primary_key, model([column("a", "not_null")]))
    assert isinstance(violation, RuleViolation)
    # A waived model passes; others still do not.
    assert evaluate(has_tested_primary_key, model([column("a")], name="gap"), waived=["gap"]) is None
    assert evaluate(has_tested_primary_key, model([column("a")], name="other"), waived=["gap"]) is not None


def test_primary_key_is_not_null() -> None:
    keyed = [unique_combination("a", "b")]
    assert evaluate(primary_key_is_not_null, model([column("a", "not_null"), column("b", "not_null")], keyed)) is None
    violation = evaluate(primary_key_is_not_null, model([column("a", "not_null"), column("b")], keyed))
    assert violation is not None and violation.message is not None and violation.message.endswith(": b.")
    # A key column missing from the YAML counts as untested.
    assert evaluate(primary_key_is_not_null, model([column("a", "not_null")], keyed)) is not None
    # The model's not_null_columns holds them too.
    held = [*keyed, model_test("not_null_columns", "b", "a")]
    assert evaluate(primary_key_is_not_null, model([column("a"), column("b")], held)) is None
    partly = [*keyed, model_test("not_null_columns", "a")]
    violation = evaluate(primary_key_is_not_null, model([column("a"), column("b")], partly))
    assert violation is not None and violation.message is not None and violation.message.endswith(": b.")
    # primary_key is its own not-null test.
    own = [model_test("primary_key", "a", "b")]
    assert evaluate(primary_key_is_not_null, model([column("a"), column("b")], own)) is None
    # No key: nothing to hold not null (has_tested_primary_key reports it).
    assert evaluate(primary_key_is_not_null, model([column("a")])) is None


def test_public_model_has_contract() -> None:
    key = [column("id", "unique", "not_null")]
    assert evaluate(public_model_has_contract, model(key, access="public", contract={"enforced": True})) is None
    assert evaluate(public_model_has_contract, model(key, access="public")) is not None
    assert evaluate(public_model_has_contract, model(key, access="protected")) is None
