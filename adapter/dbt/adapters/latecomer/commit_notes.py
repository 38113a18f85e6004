"""Notes on Delta commits: what a restated model's write was evaluated from.

On Iceberg a restated model records its fingerprint (its inputs' versions,
its own version, the status epoch) as a table property after each
evaluation, and a build whose fingerprint equals it skips the model. Setting
a property on Delta is a commit of its own: recorded that way, every
evaluation would add a version to the table, even one that wrote nothing.

So on Delta the fingerprint rides on the write's own commit, in the commit's
user metadata (python_jobs.core.commit_metadata). That is a setting of the
Spark session, which dbt's threads share: the notes of every write in flight
are kept here together with the run's name, and every commit carries them
all. A table's note counts only while the commit that wrote its rows is its
last (commit_metadata.note_of_last_commit).
"""

from __future__ import annotations

import threading
from typing import Any

from python_jobs.core.commit_metadata import USER_METADATA, table_key, user_metadata

_notes: dict[str, str] = {}
_run: list[str] = []
_lock = threading.Lock()


def _apply(spark: Any) -> None:
    value = user_metadata(_run[0] if _run else None, _notes)
    if value is None:
        spark.conf.unset(USER_METADATA)
    else:
        spark.conf.set(USER_METADATA, value)


def set_run(spark: Any, run: str | None) -> None:
    """Name the run every commit belongs to from now on (none: no run)."""
    with _lock:
        _run[:] = [run] if run else []
        _apply(spark)


def add(spark: Any, relation: Any, fingerprint: str) -> None:
    """Carry ``fingerprint`` for ``relation`` on every commit from now until :func:`drop`."""
    with _lock:
        _notes[table_key(relation)] = fingerprint
        _apply(spark)


def drop(spark: Any, relation: Any) -> None:
    """Stop carrying ``relation``'s note."""
    with _lock:
        _notes.pop(table_key(relation), None)
        _apply(spark)


def clear(spark: Any) -> None:
    """Carry no note (a run's start and end: a failed write leaves none behind)."""
    with _lock:
        _notes.clear()
        _apply(spark)
