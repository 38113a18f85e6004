"""A table's versions as typed records (:class:`TableVersion`), read from each
format's history, and the version a request names: by id, current at a time,
or left by a run (its invocation id).

Times, order and boundaries are as :mod:`python_jobs.core.versions` states them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

VERSION_TIME_FORMAT = "%Y-%m-%d %H:%M:%S.%f"
INVOCATION_ID = re.compile(r"^[A-Za-z0-9_-]+$")


class VersionsError(ValueError):
    """A request that cannot be answered; the message says why and what to do."""


def utc_instant(value: str | datetime) -> datetime:
    """A version time as a naive UTC datetime.

    Strings are ISO-8601 (``2024-01-22 10:00:00.123456``, ``2024-01-22T10:00:00+01:00``,
    ``2024-01-22``); without an offset they are UTC. Aware datetimes are
    converted to UTC; naive ones are taken as UTC.
    """
    if isinstance(value, datetime):
        instant = value
    else:
        try:
            instant = datetime.fromisoformat(str(value).strip())
        except ValueError:
            raise VersionsError(f"Cannot read '{value}' as a point in time.") from None
    if instant.tzinfo is not None:
        instant = instant.astimezone(UTC).replace(tzinfo=None)
    return instant


def format_utc(value: datetime) -> str:
    """A datetime as a version time string: aware ones converted to UTC, naive ones taken as UTC."""
    if value.tzinfo is not None:
        value = value.astimezone(UTC)
    return value.strftime(VERSION_TIME_FORMAT)


@dataclass(frozen=True)
class TableVersion:
    """One entry of a table's version log (``table_versions()``)."""

    version: str  # Iceberg snapshot id or Delta version, digits
    committed_at: str  # UTC: when it became the table's current state
    created_at: str  # UTC: when its data was written
    operation: str  # append, overwrite, replace, delete, restore, ...

    @classmethod
    def from_mapping(cls, entry: Mapping[str, Any]) -> TableVersion:
        committed_at = str(entry["committed_at"])
        return cls(
            version=str(entry["version"]),
            committed_at=committed_at,
            created_at=str(entry.get("created_at") or committed_at),
            operation=str(entry.get("operation")),
        )

    @property
    def committed(self) -> datetime:
        return utc_instant(self.committed_at)

    @property
    def created(self) -> datetime:
        return utc_instant(self.created_at)

    def as_dict(self) -> dict[str, str]:
        return {
            "version": self.version,
            "committed_at": self.committed_at,
            "created_at": self.created_at,
            "operation": self.operation,
        }


def table_versions(entries: Iterable[Mapping[str, Any] | TableVersion]) -> list[TableVersion]:
    """Version log entries (dicts from ``table_versions()``) as records, in their order."""
    return [entry if isinstance(entry, TableVersion) else TableVersion.from_mapping(entry) for entry in entries]


# ------------------------------------------------------------------ history


def iceberg_versions(log_rows: Iterable[Mapping[str, Any]]) -> list[TableVersion]:
    """Iceberg's snapshot log (``history`` joined to ``snapshots``), oldest first, as versions.

    Rows carry ``version``, ``committed_at`` (``made_current_at``), ``created_at``
    (the snapshot's ``committed_at``) and ``operation``, times already
    formatted in UTC. A snapshot that appears again in the log was made current
    again (``set_current_snapshot`` / rollback): that entry's operation is
    ``restore``.
    """
    seen: set[str] = set()
    versions = []
    for row in log_rows:
        version = str(row["version"])
        versions.append(
            TableVersion(
                version=version,
                committed_at=str(row["committed_at"]),
                created_at=str(row["created_at"]),
                operation="restore" if version in seen else str(row["operation"]),
            )
        )
        seen.add(version)
    return versions


def delta_versions(history_rows: Iterable[Mapping[str, Any]]) -> list[TableVersion]:
    """``DESCRIBE HISTORY`` rows (newest first) as versions, oldest first.

    Every commit, a RESTORE included, is a new version, so ``created_at`` is
    ``committed_at``. A session returns ``timestamp`` as a datetime in the
    driver's local time when naive (converted to UTC through the epoch); a
    Thrift server returns a string in its session time zone (UTC), kept as it
    is. Operations are lowercased.
    """
    versions = []
    for row in reversed(list(history_rows)):
        committed = row["timestamp"]
        if not isinstance(committed, str):
            committed = datetime.fromtimestamp(committed.timestamp(), UTC).strftime(VERSION_TIME_FORMAT)
        versions.append(
            TableVersion(
                version=str(int(row["version"])),
                committed_at=committed,
                created_at=committed,
                operation=str(row["operation"]).lower(),
            )
        )
    return versions


def version_with_id(versions: Sequence[TableVersion], version_id: str) -> TableVersion | None:
    """The latest entry of version ``version_id`` (an id may appear again after a restore), or None."""
    matches = [entry for entry in versions if entry.version == str(version_id)]
    return matches[-1] if matches else None


def version_current_at(versions: Sequence[TableVersion], at: str | datetime) -> TableVersion | None:
    """The entry that was the table's state at ``at`` (UTC), or None before the first commit.

    The last entry with ``committed_at <= at``: a version committed exactly at
    ``at`` is current at ``at``.
    """
    instant = utc_instant(at)
    current = [entry for entry in versions if entry.committed <= instant]
    return current[-1] if current else None


def checked_invocation_id(invocation_id: Any, relation: str, column_names: Iterable[str]) -> str:
    """The invocation id, trimmed, once it looks like one and ``relation`` can map versions to runs.

    Mapping a version to a run needs the columns ``invocation_id`` and
    ``changed_run_at`` (the gold models have them).
    """
    value = str(invocation_id).strip()
    if not INVOCATION_ID.match(value):
        raise VersionsError(f"An invocation id looks like a UUID, got '{value}'")
    names = {str(name).lower() for name in column_names}
    if "invocation_id" not in names or "changed_run_at" not in names:
        raise VersionsError(
            f"{relation} has no invocation_id and changed_run_at columns, so its versions cannot be mapped to runs;"
            " use version or as_of_time instead."
        )
    return value


def version_left_by_invocation(
    versions: Sequence[TableVersion], runs: Iterable[Mapping[str, Any]]
) -> TableVersion | None:
    """The version a dbt run left the table in, or None.

    ``runs`` has one row per version id: ``version``, ``newest_run_at`` (the
    newest ``changed_run_at`` of the version's rows) and ``run_at`` (the newest
    ``changed_run_at`` of the rows that carry the run's invocation id, null when
    none does). A version was left by the run when its newest rows are the
    run's (``run_at == newest_run_at``); the answer is the latest such entry of
    ``versions``. Any retained version counts, so it works after the run's rows
    were rewritten.
    """
    left_by_run = {
        str(row["version"]) for row in runs if row["run_at"] is not None and row["run_at"] == row["newest_run_at"]
    }
    found = [entry for entry in versions if entry.version in left_by_run]
    return found[-1] if found else None
