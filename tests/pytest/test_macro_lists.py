"""Lists the SQL and the Python both need are written once on each side, and agree.

The project's macros are Jinja; a macro that only returns a value renders
without dbt's runtime or Spark (tests/pytest/macro_render.py).
"""

from __future__ import annotations

from python_jobs.core.constants import REVENUE_MEASURES
from tests.pytest.conftest import ROOT
from tests.pytest.macro_render import load


def test_the_revenue_measures_are_the_same_list_in_sql_and_python() -> None:
    assert load("macros/revenue_measure_names.sql").call("revenue_measure_names") == list(REVENUE_MEASURES)


def test_no_revenue_model_or_macro_writes_the_list_out() -> None:
    spelled = "'orders', 'gross_revenue', 'refunds', 'net_revenue'"
    holders = [
        path.relative_to(ROOT).as_posix()
        for folder in ("models", "macros", "adapter/dbt/include/latecomer/macros")
        for path in (ROOT / folder).rglob("*.sql")
        if spelled in path.read_text()
    ]
    assert holders == ["macros/revenue_measure_names.sql"]
