"""Connections: session targets start Spark from python_jobs.core.spark_config and keep it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dbt.adapters.contracts.connection import Connection
from dbt.adapters.spark import session
from dbt.adapters.spark.connections import (
    PyhiveConnectionWrapper,
    SparkConnectionManager,
    SparkConnectionMethod,
    SparkCredentials,
)
from dbt_common.exceptions import DbtRuntimeError
from pyspark.errors import AnalysisException

# PyHive's error when Spark's Thrift server sends a result with no columns.
NO_COLUMNS = "'NoneType' object is not iterable"


@dataclass
class LatecomerCredentials(SparkCredentials):
    """dbt-spark credentials plus the table format and, for sessions, the master."""

    table_format: str = "iceberg"
    spark_master: str | None = None

    @classmethod
    def __pre_deserialize__(cls, data: Any) -> Any:
        data = super().__pre_deserialize__(data)
        if data.get("method") == "session":
            data.setdefault("host", "localhost")
        return data

    @property
    def type(self) -> str:
        return "latecomer"

    def _connection_keys(self) -> tuple[str, ...]:
        return (*super()._connection_keys(), "method", "table_format", "spark_master")


class LatecomerConnectionManager(SparkConnectionManager):
    TYPE = "latecomer"

    @classmethod
    def open(cls, connection: Connection) -> Connection:
        creds = connection.credentials
        if creds.method != SparkConnectionMethod.SESSION:
            connection = super().open(connection)
            if isinstance(connection.handle, PyhiveConnectionWrapper):
                connection.handle = ThriftConnectionWrapper(connection.handle)
            return connection
        spark = start_session(creds)
        connection = super().open(connection)
        connection.handle = SessionConnectionWrapper(SessionConnection(spark, creds.server_side_parameters))
        return connection


class ThriftConnectionWrapper(PyhiveConnectionWrapper):
    """dbt-spark's Thrift (PyHive) connection wrapper, fetching a statement without rows as no rows.

    Spark's Thrift server answers a fetch after a statement that returns no
    rows (``create view``, ``create schema``) with no columns at all, which
    PyHive zips with the schema and fails on (``TypeError: 'NoneType' object
    is not iterable``): ``run_query`` of such a statement failed on the Thrift
    target, where the session target returns an empty table.
    """

    def __init__(self, wrapper: PyhiveConnectionWrapper) -> None:
        super().__init__(wrapper.handle, wrapper.poll_interval, wrapper.query_timeout, wrapper.query_retries)

    def fetchall(self) -> list[Any]:
        try:
            return super().fetchall()
        except TypeError as error:
            if str(error) != NO_COLUMNS:
                raise
            return []


class SessionConnectionWrapper(session.SessionConnectionWrapper):
    """dbt-spark's session connection wrapper, with bindings written as Spark SQL literals.

    Seeds are loaded as ``insert ... values (cast(%s as type), ...)`` with each
    value bound into the text. dbt-spark's session wrapper puts a string
    between quotes as it is, so a value holding a quote or a backslash broke
    the statement (or changed its meaning), and writes None as the string
    ``'None'``; the Thrift target's driver (PyHive) escapes them.
    """

    @classmethod
    def _fix_binding(cls, value: Any) -> str | float:
        if value is None:
            return "NULL"
        if isinstance(value, str):
            return spark_string_literal(value)
        return super()._fix_binding(value)


def spark_string_literal(value: str) -> str:
    """``value`` as a Spark SQL string literal (backslash escapes, Spark's default parser)."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


class SessionConnection(session.Connection):
    """dbt-spark's session connection, with cursors that hold the session itself.

    dbt-spark's cursor asks ``SparkSession.builder`` for the session at every
    statement, which applies the server-side parameters again and looks up
    JVM classes through py4j, each lookup a scan of every jar on the classpath.
    Here the parameters are applied once, when the connection opens.
    """

    def __init__(self, spark: Any, server_side_parameters: dict[str, str]) -> None:
        super().__init__(server_side_parameters=server_side_parameters)
        self.spark = spark
        for key, value in self.server_side_parameters.items():
            spark.conf.set(key, value)

    def cursor(self) -> session.Cursor:
        return SessionCursor(self.spark)


class SessionCursor(session.Cursor):
    """A cursor running statements on one Spark session."""

    def __init__(self, spark: Any) -> None:
        super().__init__()
        self.spark = spark

    def execute(self, sql: str, *parameters: Any) -> None:
        if parameters:
            sql = sql % parameters
        try:
            # An empty dict of named parameters: PySpark 3.5 sends it as it is,
            # where a missing ``args`` is first converted by ``jvm.PythonUtils``,
            # a py4j name lookup that misses in two packages (two scans of every
            # jar on the class path) before it finds the class. Spark parses
            # the text the same way with no parameters.
            self._df = self.spark.sql(sql, args={})
        except AnalysisException as exc:
            raise DbtRuntimeError(str(exc)) from exc


def start_session(creds: LatecomerCredentials) -> Any:
    """The process's Spark session, created with the project configuration if need be."""
    from python_jobs.core.spark_config import SparkConfigError, get_spark

    try:
        return get_spark(creds.table_format, creds.spark_master)
    except SparkConfigError as exc:
        raise DbtRuntimeError(str(exc)) from None
