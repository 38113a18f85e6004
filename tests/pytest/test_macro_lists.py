"""Lists the SQL and the Python both need are written once on each side, and agree.

The project's macros are Jinja; a macro that only returns a value renders
without dbt or Spark: ``return`` raises the value out, as dbt's own
``return`` does.
"""

from __future__ import annotations

from typing import Any

import jinja2

from python_jobs.core.constants import REVENUE_MEASURES
from tests.pytest.conftest import ROOT


class Returned(Exception):
    def __init__(self, value: Any) -> None:
        super().__init__(value)
        self.value = value


def raise_return(value: Any) -> None:
    raise Returned(value)


def macro_value(path: str, name: str, *args: Any) -> Any:
    """What macro ``name`` of ``path`` (from the project's root) returns."""
    env = jinja2.Environment(extensions=["jinja2.ext.do"], undefined=jinja2.StrictUndefined)
    env.globals["return"] = raise_return
    module = env.from_string((ROOT / path).read_text()).module
    try:
        getattr(module, name)(*args)
    except Returned as returned:
        return returned.value
    raise AssertionError(f"{path}: {name} returned nothing")


def test_the_revenue_measures_are_the_same_list_in_sql_and_python() -> None:
    assert macro_value("macros/revenue_measure_names.sql", "revenue_measure_names") == list(REVENUE_MEASURES)


def test_no_revenue_model_or_macro_writes_the_list_out() -> None:
    spelled = "'orders', 'gross_revenue', 'refunds', 'net_revenue'"
    holders = [
        path.relative_to(ROOT).as_posix()
        for folder in ("models", "macros")
        for path in (ROOT / folder).rglob("*.sql")
        if spelled in path.read_text()
    ]
    assert holders == ["macros/revenue_measure_names.sql"]
