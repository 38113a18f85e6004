"""dbt-tests-adapter's raw SQL fixtures, written for Postgres, in Spark SQL.

Some base classes set up their tables with SQL they send as written through
``project.run_sql``: Postgres types (``VARCHAR(50)``, ``TEXT``, ``TIMESTAMP
WITHOUT TIME ZONE``), ``::`` casts, column defaults, several statements in one
string, and tables created without a format (a Hive table on Spark, which has
no UPDATE or DELETE). The adapters of other engines override those fixtures
with their own SQL, as dbt-spark does for its constraint cases; here one
translation does it for every class that mixes in :class:`SparkDialect`. It
changes the fixtures' SQL only, never what dbt runs.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from typing import Any

import pytest

FORMAT = os.environ.get("ADAPTER_FORMAT", "iceberg").lower()
# Postgres type names -> Spark's.
TYPE_NAMES = {"text": "string", "integer": "int"}
CAST = re.compile(r"(?i)(\bnull\b|'[^']*'|[\w.]+|\([^()]*\))::(\w+)")
VARCHAR = re.compile(r"(?i)\b(?:var)?char(?:acter)?(?:\s+varying)?\s*\(\s*\d+\s*\)")
TEXT_TYPE = re.compile(r"(?i)(?<=\s)text(?=\s*(?:,|\)|\n|$))")
WITHOUT_TIME_ZONE = re.compile(r"(?i)\btimestamp\s+without\s+time\s+zone\b")
COLUMN_DEFAULT_NULL = re.compile(r"(?i)\s+default\s+null\b")
# `create table <name> (<columns>)` and `create table <name> as select`, without a format.
CREATE_WITH_COLUMNS = re.compile(r"(?is)^(\s*create\s+table\s+[^\s(]+\s*\(.*\))(\s*)$")
CREATE_AS_SELECT = re.compile(r"(?is)^(\s*create\s+table\s+[^\s(]+)(\s+as\s)")
STATEMENT_END = re.compile(r";\s*(?:\n|$)")
# A database part the fixture filled in itself: Spark's relations have none.
NO_DATABASE = re.compile(r"\bNone\.(?=[\w`{])")
# Date and time literals of an `insert ... values`: Spark writes a string into
# a date or timestamp column of a table format only when it is typed.
INSERT_VALUES = re.compile(r"(?is)^\s*insert\s+into\s+[^\s(]+\s*(?:\([^)]*\))?\s*values\b")
TIMESTAMP_LITERAL = re.compile(r"'(\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:\.\d+)?)'")
DATE_LITERAL = re.compile(r"'(\d{4}-\d{2}-\d{2})'")
COMMENT_LINE = re.compile(r"(?m)^\s*--.*$")


def two_part_names(model_sql: str) -> str:
    """A model or snapshot fixture naming a relation `{{target.database}}.{{target.schema}}.x`
    in Spark's two parts: dbt-spark's target has no database (it renders as None)."""
    return model_sql.replace("{{target.database}}.", "").replace("{{ target.database }}.", "")


def spark_type(name: str) -> str:
    return TYPE_NAMES.get(name.lower(), name)


def to_spark(sql: str, table_format: str = FORMAT) -> list[str]:
    """The statements of a Postgres fixture ``sql``, as Spark SQL (tables in ``table_format``)."""
    sql = NO_DATABASE.sub("", sql.replace("{database}.", ""))
    sql = WITHOUT_TIME_ZONE.sub("timestamp", sql)
    sql = CAST.sub(lambda match: f"cast({match.group(1)} as {spark_type(match.group(2))})", sql)
    sql = VARCHAR.sub("string", sql)
    sql = TEXT_TYPE.sub("string", sql)
    sql = COLUMN_DEFAULT_NULL.sub("", sql)
    statements = []
    for statement in STATEMENT_END.split(sql):
        if not COMMENT_LINE.sub("", statement).strip():
            continue
        if INSERT_VALUES.match(COMMENT_LINE.sub("", statement)):
            statement = DATE_LITERAL.sub(r"date'\1'", TIMESTAMP_LITERAL.sub(r"timestamp'\1'", statement))
        if not re.search(r"(?i)\busing\s+\w+", statement):
            statement = CREATE_WITH_COLUMNS.sub(rf"\1 using {table_format}\2", statement)
            statement = CREATE_AS_SELECT.sub(rf"\1 using {table_format}\2", statement)
        statements.append(statement)
    return statements


class SparkDialect:
    """Runs the class's raw SQL fixtures (``project.run_sql``) through :func:`to_spark`."""

    @pytest.fixture(scope="class", autouse=True)
    def spark_dialect(self, project: Any) -> Iterator[None]:
        """The fixtures' SQL as Spark SQL, with the test schema as the current one
        (some fixtures name a table alone, as Postgres's ``search_path`` lets them)."""
        send = project.run_sql
        send(f"use {project.test_schema}")

        def run_sql(sql: str, fetch: str | None = None) -> Any:
            result = None
            for statement in to_spark(sql):
                result = send(statement, fetch=fetch)
            return result

        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(project, "run_sql", run_sql)
            yield
        send("use default")
