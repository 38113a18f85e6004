"""A few rows from the driver as a DataFrame, without a Python worker.

``SparkSession.createDataFrame(rows, schema)`` ships the rows through a Python
worker: a job whose task starts (or forks) a worker and unpickles them, about
0.4 s on two cores whatever the number of rows. Ingest writes two such frames
per call (the files it lands and their log rows), the steward one.

:func:`local_rows` binds each value as a named parameter of an inline table
instead. Spark evaluates the table when it analyses the query, into a
LocalRelation, so the rows travel in the plan: no job, no worker, and no
literal in generated code (a LocalRelation is scanned, not compiled), so a
query joining it compiles once for every call. Values are parameters, never
SQL text, so a file name with quotes or backslashes is taken as written.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from pyspark.sql import DataFrame, SparkSession

# "name type" pairs of a flat DDL: no nested, quoted or commented columns.
_COLUMN = re.compile(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s+([A-Za-z]+(?:\(\d+(?:,\s*\d+)?\))?)\s*")


def flat_columns(ddl: str) -> list[tuple[str, str]]:
    """``[(name, type), ...]`` of ``ddl``, a comma-separated list of ``name type``."""
    columns = []
    for part in re.split(r",(?![^()]*\))", ddl):
        match = _COLUMN.fullmatch(part)
        if match is None:
            raise ValueError(f"local_rows takes flat 'name type' columns, not {part.strip()!r}")
        columns.append((match.group(1), match.group(2)))
    return columns


def local_rows(spark: SparkSession, rows: Sequence[Sequence[Any]], ddl: str) -> DataFrame:
    """``rows`` as a DataFrame of ``ddl``'s columns (flat ``name type`` pairs).

    Each value is cast to its column's type: a Python int becomes a bigint
    column, a datetime with a time zone the same instant in a timestamp
    column, None a null of the column's type. Unlike createDataFrame's, the
    columns of a value that is never None come out non-nullable, which an
    append into a nullable column accepts.
    """
    columns = flat_columns(ddl)
    if not rows:  # an inline table cannot be empty; this plans to an empty LocalRelation
        nulls = ", ".join(f"cast(null as {kind}) as {name}" for name, kind in columns)
        return spark.sql(f"select {nulls} limit 0")
    args: dict[str, Any] = {}
    tuples = []
    for r, row in enumerate(rows):
        if len(row) != len(columns):
            raise ValueError(f"row {r} has {len(row)} values for {len(columns)} columns")
        cells = []
        for c, ((_, kind), value) in enumerate(zip(columns, row, strict=True)):
            args[f"v{r}_{c}"] = value
            cells.append(f"cast(:v{r}_{c} as {kind})")
        tuples.append(f"({', '.join(cells)})")
    names = ", ".join(name for name, _ in columns)
    return spark.sql(f"select * from values {', '.join(tuples)} as rows ({names})", args=args)
