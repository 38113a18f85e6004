"""Connections: session targets start Spark from python_jobs.core.spark_config."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dbt.adapters.contracts.connection import Connection
from dbt.adapters.spark.connections import (
    SparkConnectionManager,
    SparkConnectionMethod,
    SparkCredentials,
)
from dbt_common.exceptions import DbtRuntimeError


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
        if creds.method == SparkConnectionMethod.SESSION:
            start_session(creds)
        return super().open(connection)


def start_session(creds: LatecomerCredentials) -> None:
    """Create the process's Spark session with the project configuration.

    dbt-spark's session cursor calls ``SparkSession.builder.getOrCreate()``
    and so picks up the session made here.
    """
    from python_jobs.core.spark_config import SparkConfigError, get_spark

    try:
        get_spark(creds.table_format, creds.spark_master)
    except SparkConfigError as exc:
        raise DbtRuntimeError(str(exc)) from None
