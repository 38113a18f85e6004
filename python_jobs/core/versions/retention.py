"""Retention and maintenance: which versions a cutoff protects and which may be
expired, the table properties to set, and the lines a maintenance run prints
per table and in total.

Times, order and boundaries are as :mod:`python_jobs.core.versions` states them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from python_jobs.core.versions.records import TableVersion, VersionsError, utc_instant


@dataclass(frozen=True)
class RetentionBoundary:
    """Which versions the retention horizon protects."""

    expire_before: str  # versions created strictly before it may be expired (UTC)
    protected: tuple[TableVersion, ...]  # the entry current at the cutoff and every later one


def retention_boundary(versions: Sequence[TableVersion], cutoff: str) -> RetentionBoundary:
    """The protected versions and the expiry time for a horizon that begins at ``cutoff`` (UTC).

    Protected: the last entry committed at or before the cutoff (a version
    committed exactly at the cutoff was current then) and every later entry;
    when none was committed by then, all of them. ``expire_before`` is the
    earliest of the cutoff and the protected versions' creation times, as given,
    so expiring what was created before it never touches a protected version
    (a snapshot made current again by a restore can be older than the cutoff).
    """
    instant = utc_instant(cutoff)
    committed_by_cutoff = [index for index, entry in enumerate(versions) if entry.committed <= instant]
    protected = tuple(versions[committed_by_cutoff[-1] :] if committed_by_cutoff else versions)
    candidates = [(instant, cutoff)] + [(entry.created, entry.created_at) for entry in protected]
    expire_before = min(candidates, key=lambda candidate: candidate[0])[1]
    return RetentionBoundary(expire_before=expire_before, protected=protected)


@dataclass(frozen=True)
class ExpiryOutcome:
    """What an expiry did to a table's versions."""

    expired: tuple[str, ...]  # version ids readable before, not after (first-seen order)
    lost: tuple[TableVersion, ...]  # protected entries whose version is no longer readable


def expiry_outcome(
    before: Sequence[TableVersion], after: Sequence[TableVersion], protected: Sequence[TableVersion]
) -> ExpiryOutcome:
    """Compares the version logs before and after expiry."""
    remaining = {entry.version for entry in after}
    expired = tuple(dict.fromkeys(entry.version for entry in before if entry.version not in remaining))
    lost = tuple(entry for entry in protected if entry.version not in remaining)
    return ExpiryOutcome(expired=expired, lost=lost)


def properties_to_set(wanted: Mapping[str, str], current: Iterable[Sequence[Any]]) -> dict[str, str]:
    """The wanted table properties whose current value differs, in the wanted order.

    ``current`` has ``(key, value)`` rows (``show tblproperties``); values compare as text.
    """
    values = {str(row[0]): str(row[1]) for row in current}
    return {key: value for key, value in wanted.items() if values.get(key) != value}


# ------------------------------------------------------------- maintenance


@dataclass(frozen=True)
class MaintenanceTotals:
    """maintain_tables' running totals over the tables it went through."""

    properties: int = 0  # tables whose retention properties were (or would be) set
    rewritten: int = 0  # data files rewritten by compaction
    expired: int = 0  # versions expired (dry run: candidates)
    deleted: int = 0  # files deleted by expiry
    orphans: int = 0  # orphan files removed (dry run: found)

    @classmethod
    def from_mapping(cls, totals: Mapping[str, Any] | None) -> MaintenanceTotals:
        totals = totals or {}
        return cls(**{name: int(totals.get(name) or 0) for name in cls.__dataclass_fields__})

    def as_dict(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


@dataclass(frozen=True)
class TableMaintenance:
    """One table's maintenance: the line to print and the totals after it."""

    line: str
    totals: MaintenanceTotals


def _or(value: Any, fallback: str) -> Any:
    return fallback if value is None else value


def maintenance_header(
    dry_run: bool, table_count: int, table_format: str, hours: int, cutoff: str, now: Any = None
) -> str:
    return (
        f"maintain_tables{' (dry run)' if dry_run else ''}: {table_count} table(s), {table_format}, horizon {hours} h:"
        f" versions current at or after {cutoff} UTC stay readable{'' if now is None else f' (now = {now})'}"
    )


def unversioned_table_maintenance(totals: MaintenanceTotals, changed_properties: Sequence[str]) -> TableMaintenance:
    """A table without a version yet: only its properties are set."""
    set_text = f"set {', '.join(changed_properties)}; " if changed_properties else ""
    return TableMaintenance(
        line=f"    {set_text}no version yet, nothing else to do",
        totals=MaintenanceTotals(**{**totals.as_dict(), "properties": totals.properties + bool(changed_properties)}),
    )


def table_maintenance(
    totals: MaintenanceTotals,
    relation: str,
    dry_run: bool,
    changed_properties: Sequence[str],
    compaction: Mapping[str, Any],
    versions: Sequence[TableVersion],
    boundary: RetentionBoundary,
    expiry: Mapping[str, Any],
    orphans: Mapping[str, Any],
    versions_after: Sequence[TableVersion] | None = None,
) -> TableMaintenance:
    """Judges one table's maintenance and words it.

    ``compaction`` is ``{rewritten_files}``, ``expiry`` ``{candidates,
    deleted_files}``, ``orphans`` ``{orphan_files}``; None where the format
    does not say. Outside a dry run, ``versions_after`` is the version log after
    expiry: a protected version missing from it fails (the first such, in log
    order), and the versions it lost are counted as expired. A dry run counts
    the expiry's candidates instead.
    """
    outcome = expiry_outcome(versions, versions_after or [], boundary.protected) if not dry_run else None
    if outcome is not None and outcome.lost:
        entry = outcome.lost[0]
        raise VersionsError(
            f"maintain_tables: version {entry.version} of {relation} (current from {entry.committed_at})"
            " is inside the horizon and is no longer readable."
        )
    expired = len(outcome.expired) if outcome is not None else (expiry.get("candidates") or 0)
    totals = MaintenanceTotals(
        properties=totals.properties + bool(changed_properties),
        rewritten=totals.rewritten + (compaction.get("rewritten_files") or 0),
        expired=totals.expired + expired,
        deleted=totals.deleted + (expiry.get("deleted_files") or 0),
        orphans=totals.orphans + (orphans.get("orphan_files") or 0),
    )
    if dry_run:
        line = (
            f"    would set {', '.join(changed_properties) or 'no properties'}; would compact;"
            f" would expire {_or(expiry.get('candidates'), 'unreferenced')} version(s) created before"
            f" {boundary.expire_before}; {_or(orphans.get('orphan_files'), 'no separate')} orphan file(s);"
            f" {len(boundary.protected)} of {len(versions)} version(s) protected"
        )
    else:
        set_text = f"set {', '.join(changed_properties)}; " if changed_properties else ""
        line = (
            f"    {set_text}compaction rewrote {_or(compaction.get('rewritten_files'), 'some')} file(s);"
            f" expired {expired} version(s) created before {boundary.expire_before}"
            f" ({_or(expiry.get('deleted_files'), 'unreported')} file(s) deleted);"
            f" {_or(orphans.get('orphan_files'), 'vacuum covered')} orphan file(s);"
            f" {len(boundary.protected)} version(s) inside the horizon kept"
        )
    return TableMaintenance(line=line, totals=totals)


def maintenance_summary(totals: MaintenanceTotals, dry_run: bool, table_count: int, cutoff: str) -> str:
    return (
        f"maintain_tables summary{' (dry run, nothing changed)' if dry_run else ''}: {table_count} table(s);"
        f" retention properties {'to set on' if dry_run else 'set on'} {totals.properties};"
        f" {totals.rewritten} data file(s) rewritten; {totals.expired} version(s)"
        f" {'to expire' if dry_run else 'expired'}, {totals.deleted} file(s) deleted; {totals.orphans} orphan file(s)"
        f" {'found' if dry_run else 'removed'}; nothing current at or after {cutoff} UTC was expired."
    )
