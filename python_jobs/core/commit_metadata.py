"""The user metadata latecomer puts on Delta commits, and what it reads back from it.

A commit's user metadata (``spark.databricks.delta.commitInfo.userMetadata``,
shown by DESCRIBE HISTORY) names the run the commit belongs to (staged
publication on Delta, :mod:`python_jobs.core.publication`) and, while a
restated model's write is in flight, that model's fingerprint, its note
(dbt.adapters.latecomer.commit_notes, which keeps them on the Spark session).
Without notes it is the run's name alone; with notes, JSON:
``{"run": <run or null>, "notes": {<table>: <fingerprint>}}``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from py4j.protocol import Py4JError
from pyspark.errors import PySparkException

from python_jobs.core.catalog_reads import java_class, java_static

USER_METADATA = "spark.databricks.delta.commitInfo.userMetadata"
# DESCRIBE HISTORY's operation of the commits a restated model's write makes
# (a MERGE, or the create or replace of a first build or --full-refresh).
WRITE_OPERATIONS = frozenset(
    {"MERGE", "CREATE TABLE AS SELECT", "CREATE OR REPLACE TABLE AS SELECT", "REPLACE TABLE AS SELECT"}
)


def table_key(relation: Any) -> str:
    """A table's name as notes key it: unquoted, lowercase."""
    return str(relation).replace("`", "").lower()


def user_metadata(run: str | None, notes: Mapping[str, str]) -> str | None:
    """What a commit carries: the run's name alone without notes, else both as JSON."""
    if not notes:
        return run
    return json.dumps({"run": run, "notes": dict(notes)}, sort_keys=True)


def note_of_last_commit(history_rows: Iterable[Mapping[str, Any]], relation: Any) -> str | None:
    """``relation``'s note on its last commit (DESCRIBE HISTORY ... LIMIT 1), if that commit wrote its rows.

    None when the table has no commit, when the last commit is not a write
    (WRITE_OPERATIONS), or when its user metadata is not a note naming the
    table (unset, or written by someone else).
    """
    rows = list(history_rows)
    if not rows or str(rows[0]["operation"]).upper() not in WRITE_OPERATIONS:
        return None
    notes = _parsed(rows[0]["userMetadata"]).get("notes")
    note = notes.get(table_key(relation)) if isinstance(notes, dict) else None
    return note if isinstance(note, str) else None


def last_commit(spark: Any, table: str) -> dict[str, Any] | None:
    """The last commit of the Delta table ``table``, read from its log by the
    driver: ``version``, ``operation`` and ``userMetadata``, as DESCRIBE
    HISTORY ... LIMIT 1 gives them.

    DESCRIBE HISTORY plans and runs a query for the same answer: on a local
    master it took several times as long as the table's log listing and one
    small file read here (docs/table-formats.md). None when the log cannot be
    read this way (a table not in the session's catalog, not a Delta table,
    a commit file elsewhere): the caller then asks DESCRIBE HISTORY, whose
    error, if any, names the problem.
    """
    session = spark._jsparkSession
    try:
        identifier = session.sessionState().sqlParser().parseTableIdentifier(table)
        catalog_table = session.sessionState().catalog().getTableMetadata(identifier)
        log = java_static(spark, "org.apache.spark.sql.delta.DeltaLog", "forTable")(session, catalog_table)
        unset = java_static(spark, "scala.Option", "empty")()
        version = log.update(False, unset, unset).version()
        if version < 0:
            return None
        commit_file = java_class(spark, "org.apache.hadoop.fs.Path")(log.logPath(), f"{version:020d}.json")
        lines = log.store().read(commit_file, log.newDeltaHadoopConf())
        # One line per action, each fetched from the JVM: stop at the commit's
        # info (Delta writes it first), not after a large write's file actions.
        actions = (json.loads(lines.apply(index)) for index in range(lines.size()))
        info = next((action["commitInfo"] for action in actions if "commitInfo" in action), {})
    except (Py4JError, PySparkException):
        # PySpark turns the JVM's errors into its own (AnalysisException: a
        # view has no location); py4j's own are left as they are.
        return None
    return {"version": version, "operation": info.get("operation"), "userMetadata": info.get("userMetadata")}


def run_of_commit(metadata: str | None) -> str | None:
    """The run a commit's user metadata names: the JSON's ``run``, or the text itself."""
    parsed = _parsed(metadata)
    if parsed:
        run = parsed.get("run")
        return run if isinstance(run, str) else None
    return metadata or None


def _parsed(metadata: str | None) -> dict[str, Any]:
    if not metadata or not str(metadata).startswith("{"):
        return {}
    try:
        value = json.loads(metadata)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
