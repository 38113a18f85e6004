"""Which statements of one process run in turn, and under which lock."""

from __future__ import annotations

import contextlib
import os
import re
import threading
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager
from typing import Any

from dbt.adapters.events.logging import AdapterLogger

logger = AdapterLogger("latecomer")
# A wait for a write lock at least this long is written to dbt's debug log.
LOGGED_WAIT_SECONDS = 0.2

# Leading whitespace and SQL comments, skipped before a statement's first word.
LEADING_COMMENTS = re.compile(r"^(?:\s+|--[^\n]*(?:\n|$)|/\*.*?\*/)*", re.DOTALL)
# Statements that may change a relation's columns (or the relation itself).
SCHEMA_CHANGING_SQL = re.compile(r"^(create|replace|alter|drop)\b", re.IGNORECASE)
# Statements that commit rows to a table, and the table they name. Writing
# files to a directory (spill_rows: `insert overwrite directory`) commits no
# table and takes no lock.
ROW_WRITING_SQL = re.compile(
    r"^(?:insert\s+(?:into|overwrite)(?!\s+(?:local\s+)?directory\b)(?:\s+table)?|merge\s+into|delete\s+from|update)"
    r"\s+([`\w.]+)",
    re.IGNORECASE,
)
# Temporary views live in the Spark session, not the metastore: creating one
# (spill_rows, dbt's __dbt_tmp views) takes no lock, so it never waits for a
# long write in another thread.
TEMPORARY_VIEW_SQL = re.compile(r"^create\s+(?:or\s+replace\s+)?(?:global\s+)?temp(?:orary)?\s+view\b", re.IGNORECASE)
# Other statements that commit to the metastore: table procedures
# (rollback_to_snapshot, expire_snapshots, ...) and truncation.
OTHER_METASTORE_WRITES = re.compile(r"^(call|truncate)\b", re.IGNORECASE)
_table_locks: dict[str, threading.Lock] = {}
_table_locks_guard = threading.Lock()
# One lock for every statement that writes the embedded metastore.
_embedded_metastore_lock = threading.RLock()


def statement_head(sql: str) -> str:
    """``sql`` from its first keyword (leading whitespace and comments dropped)."""
    return sql[LEADING_COMMENTS.match(sql).end() :]


def embedded_metastore() -> bool:
    """Whether this process's Spark session keeps its metastore in-process (no LATECOMER_METASTORE_URI)."""
    return not os.environ.get("LATECOMER_METASTORE_URI")


def table_write_lock(sql: str, embedded: bool | None = None) -> AbstractContextManager[Any]:
    """The lock ``sql`` runs under in this process, or a no-op for a read.

    On the embedded metastore (``embedded``, default: :func:`embedded_metastore`)
    every statement that writes it (DDL, a commit of rows, a table procedure)
    takes one process-wide lock:

    * Its DataNucleus store builds some statements lazily and without a lock
      the first time they are needed, and may build them again later: two
      metastore writes at the same moment failed an Iceberg commit in CI with
      ``CommitStateUnknownException`` (a NullPointerException in
      ``JoinMapStore.getValue``), leaving the commit's outcome unknown.
    * Iceberg's Hive commit lock is off there (it would wait minutes for a
      lock nobody else holds), and the embedded metastore has no atomic swap
      of a table's metadata location: two threads appending to one table at
      the same moment could both commit on the same base, and the second
      commit would drop the first one's rows.

    Reads, and temporary views, run side by side. With a metastore service, Iceberg's commit lock
    and the service guard commits; only writes of rows to one table are kept
    in turn, one lock per table.
    """
    head = statement_head(sql)
    if TEMPORARY_VIEW_SQL.match(head):
        return contextlib.nullcontext()
    rows = ROW_WRITING_SQL.match(head)
    if embedded if embedded is not None else embedded_metastore():
        if rows or SCHEMA_CHANGING_SQL.match(head) or OTHER_METASTORE_WRITES.match(head):
            return _embedded_metastore_lock
        return contextlib.nullcontext()
    if not rows:
        return contextlib.nullcontext()
    table = rows.group(1).replace("`", "").lower()
    with _table_locks_guard:
        return _table_locks.setdefault(table, threading.Lock())


def metastore_write_lock() -> AbstractContextManager[Any]:
    """The lock a write made outside SQL (a Python model's table) runs under:
    the embedded metastore's, else a no-op."""
    return _embedded_metastore_lock if embedded_metastore() else contextlib.nullcontext()


@contextlib.contextmanager
def holding(lock: AbstractContextManager[Any], sql: str) -> Iterator[None]:
    """Hold ``lock`` (from :func:`table_write_lock`) while ``sql`` runs; a long
    wait for it is written to dbt's debug log with the statement's start, the
    figure to read when a build's models seem to run one at a time."""
    if isinstance(lock, contextlib.nullcontext):
        yield
        return
    asked = time.monotonic()
    with lock:
        waited = time.monotonic() - asked
        if waited >= LOGGED_WAIT_SECONDS:
            logger.debug(f"waited {waited:.2f} s for the write lock: {' '.join(statement_head(sql).split())[:100]}")
        yield
