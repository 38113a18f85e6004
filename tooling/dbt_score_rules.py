"""The project's own dbt-score rules, for what dbt-score's generic rules leave out.

``make check-project`` parses the project and lints its manifest with
dbt-score, which loads these rules through ``rule_namespaces`` in
``pyproject.toml`` (``[tool.dbt-score]``). Together with the generic rules
kept there they hold:

- every model and every column documented (generic ``has_description``,
  ``columns_have_description``);
- every model with a primary key tested unique, and not null
  (:func:`has_tested_primary_key`, :func:`primary_key_is_not_null`);
- every public model under an enforced contract (:func:`public_model_has_contract`).

The key tests counted are this project's ``primary_key`` (``tests/generic``:
unique and not null in one query), dbt-utils' ``unique_combination_of_columns``
and dbt's column-level ``unique``. A key column is held not null by a
``primary_key`` test, a column's ``not_null`` or the model's
``not_null_columns``.
"""

# No `from __future__ import annotations`: dbt-score reads each rule's
# argument annotation at import to know what the rule applies to.
from dbt_score import Model, RuleViolation, rule

# Model-level generic tests that hold a column combination unique, and the
# argument naming the columns.
KEY_TESTS = {"primary_key": "columns", "unique_combination_of_columns": "combination_of_columns"}
# Of those, the ones that hold the key's columns not null too.
NOT_NULL_KEY_TESTS = ("primary_key",)


def primary_key(model: Model) -> list[str] | None:
    """The columns a uniqueness test holds unique, or None when the model has none.

    A model-level key test wins over a column's ``unique`` test.
    """
    for test in model.tests:
        argument = KEY_TESTS.get(test.type)
        if argument and test.kwargs.get(argument):
            return [str(column) for column in test.kwargs[argument]]
    for column in model.columns:
        if any(test.type == "unique" for test in column.tests):
            return [column.name]
    return None


@rule
def has_tested_primary_key(model: Model, waived: tuple[str, ...] = ()) -> RuleViolation | None:
    """A model has a primary key tested unique (a column's unique or the model's primary_key).

    ``waived`` (rule config in pyproject.toml) names models whose key test is
    still to be written, each with the reason beside it there.
    """
    if model.name not in waived and primary_key(model) is None:
        return RuleViolation("No primary key tested unique (a column's unique or a primary_key test).")
    return None


@rule
def primary_key_is_not_null(model: Model) -> RuleViolation | None:
    """Every column of a model's tested primary key is tested not null.

    By the key test itself (``primary_key``), the column's ``not_null`` or the
    model's ``not_null_columns``.
    """
    key = primary_key(model) or []
    if any(test.type in NOT_NULL_KEY_TESTS and KEY_TESTS[test.type] in test.kwargs for test in model.tests):
        return None
    held = {
        str(name) for test in model.tests if test.type == "not_null_columns" for name in test.kwargs.get("columns", [])
    }
    untested = []
    for name in key:
        column = model.get_column(name)
        if column is None or (name not in held and not any(test.type == "not_null" for test in column.tests)):
            untested.append(name)
    if untested:
        return RuleViolation(f"Primary key column(s) without a not_null test: {', '.join(untested)}.")
    return None


@rule
def public_model_has_contract(model: Model) -> RuleViolation | None:
    """A public model enforces its contract: its readers get the columns and types its YAML declares."""
    contract = model.config.get("contract") or {}
    if model.access == "public" and not contract.get("enforced"):
        return RuleViolation("Public model without an enforced contract (config: contract: {enforced: true}).")
    return None
