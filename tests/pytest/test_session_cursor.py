"""The session target's cursor (adapter connections.SessionCursor), without Spark.

Every statement of a session build goes through it; the scenario tests run
it on the real session. These pin down what it must keep from dbt-spark's
cursor, with a stand-in session that records what it is asked: the
server-side parameters set once per connection, dbt's bindings formatted into
the statement, and Spark's analysis errors turned into dbt's.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest
from dbt.adapters.latecomer.connections import SessionConnection
from dbt.adapters.spark.session import SessionConnectionWrapper
from dbt_common.exceptions import DbtRuntimeError
from pyspark.errors import AnalysisException


class Conf:
    def __init__(self) -> None:
        self.sets: list[tuple[str, str]] = []

    def set(self, key: str, value: str) -> None:
        self.sets.append((key, value))


class Frame:
    def __init__(self, sql: str) -> None:
        self.sql = sql

    def collect(self) -> list[tuple[str]]:
        return [(self.sql,)]


class Session:
    """Records statements; a statement naming ``missing_table`` fails analysis."""

    def __init__(self) -> None:
        self.conf = Conf()
        self.statements: list[str] = []
        self.bound: list[Any] = []

    def sql(self, text: str, args: Any = None) -> Frame:
        self.statements.append(text)
        self.bound.append(args)
        if "missing_table" in text:
            raise AnalysisException("[TABLE_OR_VIEW_NOT_FOUND] The table or view `missing_table` cannot be found.")
        return Frame(text)


@pytest.fixture
def session() -> Session:
    return Session()


def wrapper(session: Any, parameters: dict[str, str] | None = None) -> SessionConnectionWrapper:
    return SessionConnectionWrapper(SessionConnection(session, parameters or {}))


def test_server_side_parameters_are_set_once_per_connection(session: Session) -> None:
    connection = wrapper(session, {"spark.sql.ansi.enabled": "false", "spark.sql.shuffle.partitions": "3"})
    for _ in range(3):
        connection.cursor().execute("select 1")
    assert session.conf.sets == [("spark.sql.ansi.enabled", "false"), ("spark.sql.shuffle.partitions", "3")]
    assert session.statements == ["select 1"] * 3
    # Nothing is bound on Spark's side: dbt's bindings are already in the
    # text (an empty map, which PySpark passes on without a py4j lookup)
    assert session.bound == [{}] * 3


def test_statements_run_on_the_session_and_return_its_rows(session: Session) -> None:
    connection = wrapper(session).cursor()
    # dbt-spark's wrapper strips a trailing semicolon before the cursor sees the statement
    connection.execute("select 'a';")
    assert connection.fetchall() == [("select 'a'",)]


def test_bindings_are_formatted_into_the_statement(session: Session) -> None:
    connection = wrapper(session).cursor()
    connection.execute("select %s, %s, %s", [2, datetime(2024, 1, 2, 3, 4, 5, 678900), "web"])
    # dbt-spark's session wrapper turns numbers into floats, and quotes times
    # (to the millisecond) and everything else
    assert session.statements == ["select 2.0, '2024-01-02 03:04:05.678', 'web'"]


def test_an_analysis_error_becomes_dbts_runtime_error(session: Session) -> None:
    connection = wrapper(session).cursor()
    with pytest.raises(DbtRuntimeError, match="missing_table"):
        connection.execute("select * from missing_table")
