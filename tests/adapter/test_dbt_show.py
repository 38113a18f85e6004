"""dbt-tests-adapter's `dbt show` suite."""

from __future__ import annotations

from dbt.tests.adapter.dbt_show.test_dbt_show import BaseShowDoesNotHandleDoubleLimit, BaseShowLimit, BaseShowSqlHeader


class TestShowLimit(BaseShowLimit):
    pass


class TestShowSqlHeader(BaseShowSqlHeader):
    pass


class TestShowDoesNotHandleDoubleLimit(BaseShowDoesNotHandleDoubleLimit):
    # Spark's parser names the clause it stopped at.
    DATABASE_ERROR_MESSAGE = "limit"
