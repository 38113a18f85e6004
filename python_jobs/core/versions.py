"""Table versions as typed records: time travel, partition history, restore, retention.

The procedures behind the ``macros/versions`` run-operations. The macros run
the SQL (version history, fingerprints, time travel, restore, maintenance
calls) and pass the rows here through the adapter's ``@available`` methods
(``adapter/dbt/adapters/latecomer/impl.py``); nothing here needs Spark.

Time
    A version's times are UTC strings ``yyyy-MM-dd HH:mm:ss.SSSSSS`` as
    ``table_versions()`` writes them (Iceberg ``made_current_at`` /
    ``snapshots.committed_at``, Delta ``DESCRIBE HISTORY`` timestamps; the
    session time zone is UTC). They are compared as instants: a string (or
    datetime) without an offset is UTC, one with an offset is converted to UTC.
    ``committed_at`` is when the version became the table's state (what
    ``timestamp as of`` resolves against), ``created_at`` when its data was
    written; they differ for an Iceberg snapshot made current again by a
    restore.

Order
    A version list is in the order the versions became current, oldest first.
    An Iceberg snapshot made current again appears again (operation
    ``restore``); "the last entry that ..." means the latest such event.

Boundaries
    - the version current at time ``t`` is the last one with
      ``committed_at <= t``: a version committed exactly at ``t`` is current at
      ``t`` (inclusive), and none is current before the first commit;
    - the retention horizon protects the version current at the cutoff (so one
      committed exactly at the cutoff, inclusive) and every later entry; versions
      *created* strictly before ``expire_before`` may be expired.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation, localcontext
from typing import Any

VERSION_TIME_FORMAT = "%Y-%m-%d %H:%M:%S.%f"
# Columns shown after the measures in a partition's history, when the table has them.
HISTORY_EXTRAS = ("status", "version", "restatement_reason", "invocation_id")
# Spark types whose columns are measures (compared and diffed between versions).
NUMERIC_TYPE = re.compile(r"^(tinyint|smallint|int|integer|bigint|long|float|double|decimal)")
INVOCATION_ID = re.compile(r"^[A-Za-z0-9_-]+$")
# How many retained versions an error message lists.
LISTED_VERSIONS = 10
RESTORE_SELECTORS = ("version", "as_of_time", "invocation_id")


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


# ------------------------------------------------------- partition history


@dataclass(frozen=True)
class PartitionLayout:
    """Which columns of a table a partition's history shows."""

    keys: tuple[str, ...]  # row key columns besides the partition column
    measures: tuple[str, ...]  # numeric columns other than keys, the partition column and `version`
    extras: tuple[str, ...]  # of HISTORY_EXTRAS, those the table has


def partition_layout(
    relation: str, columns: Iterable[tuple[str, str]], partition_column: str, keys: Sequence[str]
) -> PartitionLayout:
    """The measures and extras of a table from its ``(name, type)`` columns, names lowercased.

    Measures keep the table's column order. Fails when the table has no
    column ``partition_column``.
    """
    columns = [(str(name).lower(), str(dtype).lower()) for name, dtype in columns]
    names = [name for name, _ in columns]
    if partition_column.lower() not in names:
        raise VersionsError(f"{relation} has no column {partition_column}.")
    measures = tuple(
        name
        for name, dtype in columns
        if NUMERIC_TYPE.match(dtype) and name not in keys and name != partition_column.lower() and name != "version"
    )
    extras = tuple(extra for extra in HISTORY_EXTRAS if extra in names)
    return PartitionLayout(keys=tuple(keys), measures=measures, extras=extras)


def changed_versions(versions: Sequence[TableVersion], fingerprints: Iterable[Mapping[str, Any]]) -> list[TableVersion]:
    """The entries at which a partition's rows changed, oldest first.

    ``fingerprints`` has a row per version id: ``version`` and ``fingerprint``
    (a hash of the partition's rows in that version, ``'empty'`` when it has
    none). An entry is kept when its fingerprint differs from the last kept
    one; before the first, the partition is ``'empty'``, so versions before
    the partition had rows are skipped, and a version that emptied it is kept.
    """
    by_version = {str(row["version"]): row["fingerprint"] for row in fingerprints}
    kept: list[TableVersion] = []
    previous: Any = "empty"
    for entry in versions:
        fingerprint = by_version.get(entry.version)
        if fingerprint != previous:
            kept.append(entry)
            previous = fingerprint
    return kept


@dataclass(frozen=True)
class RowChange:
    """One row of a partition in one state, paired with its row in the previous state."""

    key: tuple[str | None, ...]
    values: Mapping[str, str | None]  # measures and extras in this state, as text
    deltas: Mapping[str, str | None]  # measure -> signed change since the previous state, None when same or new
    is_new: bool  # no row with this key in the previous state (every row of the first state)
    is_removed: bool  # in the previous state, not in this one

    def as_dict(self, layout: PartitionLayout) -> dict[str, Any]:
        """``{key..., measure, measure__delta, extra..., is_new, is_removed}`` as partition_versions returns."""
        record: dict[str, Any] = {"is_new": self.is_new, "is_removed": self.is_removed}
        record.update(zip(layout.keys, self.key, strict=True))
        for extra in layout.extras:
            record[extra] = self.values.get(extra)
        for measure in layout.measures:
            record[measure] = self.values.get(measure)
            record[f"{measure}__delta"] = self.deltas.get(measure)
        return record


@dataclass(frozen=True)
class PartitionState:
    """The partition's rows as one table version left them."""

    version: TableVersion
    rows: tuple[RowChange, ...] = field(default_factory=tuple)


def _numeric(text: str) -> Decimal:
    with localcontext() as context:
        context.traps[InvalidOperation] = False
        return Decimal(text.strip())


def measure_delta(current: str | None, previous: str | None) -> str | None:
    """The signed change of a measure between two states, as text, or None when it did not change.

    Values are the measure cast to a string by Spark. None when both are the
    same (null-safe, as ``<=>``) or when either is null (a new or removed row).
    The change is exact (decimal arithmetic), written without an exponent and
    with the scale of the more precise value, as Spark writes a decimal
    difference; a positive change gets ``+``. Integer and decimal measures come
    out as Spark prints them; double measures are printed in plain decimal
    notation, which can differ from Spark's rendering of a double difference.
    """
    if current is None or previous is None or current == previous:
        return None
    with localcontext() as context:
        context.prec = 100
        context.traps[InvalidOperation] = False
        now, before = _numeric(current), _numeric(previous)
        if now == before:
            return None
        change = now - before
        if change.is_nan():
            return "+NaN"  # Spark orders NaN above every number
        text = format(change, "f")
        return f"+{text}" if change > 0 else text


def _sort_key(key: tuple[str | None, ...]) -> tuple[tuple[bool, str], ...]:
    # Spark's ascending order of the string-cast keys: nulls first.
    return tuple((value is not None, value or "") for value in key)


def partition_states(
    kept: Sequence[TableVersion], rows: Iterable[Mapping[str, Any]], layout: PartitionLayout
) -> list[PartitionState]:
    """The partition's rows in each kept state, each paired with its row in the previous kept state.

    ``rows`` are the partition's rows in the kept versions: ``state_rank`` (the
    index in ``kept``) and the keys, measures and extras cast to strings. Rows
    pair by key (null-safe, as a full outer join on ``<=>``: every pair of rows
    with the same key); a row without a partner in the previous state is new,
    a previous row without a partner is removed (shown with its key only). Rows
    come ordered by key, nulls first.
    """
    by_rank: dict[int, list[tuple[tuple[str | None, ...], dict[str, str | None]]]] = {
        rank: [] for rank in range(len(kept))
    }
    for row in rows:
        key = tuple(None if row[column] is None else str(row[column]) for column in layout.keys)
        values = {
            column: None if row[column] is None else str(row[column]) for column in layout.measures + layout.extras
        }
        by_rank.setdefault(int(row["state_rank"]), []).append((key, values))

    states = []
    for rank, version in enumerate(kept):
        previous_rows = by_rank.get(rank - 1, [])
        changes: list[RowChange] = []
        for key, values in by_rank.get(rank, []):
            partners = [before for previous_key, before in previous_rows if previous_key == key]
            for before in partners or [None]:
                deltas = {
                    measure: None if before is None else measure_delta(values[measure], before[measure])
                    for measure in layout.measures
                }
                changes.append(RowChange(key, values, deltas, is_new=before is None, is_removed=False))
        current_keys = {key for key, _ in by_rank.get(rank, [])}
        if rank > 0:
            for key, _ in previous_rows:
                if key not in current_keys:
                    changes.append(RowChange(key, {}, {}, is_new=False, is_removed=True))
        changes.sort(key=lambda change: _sort_key(change.key))
        states.append(PartitionState(version=version, rows=tuple(changes)))
    return states


def partition_history(layout: PartitionLayout, states: Sequence[PartitionState], table_versions: int) -> dict[str, Any]:
    """What ``partition_versions`` returns: ``{states, keys, measures, extras, table_versions}``.

    Each state is ``{version, committed_at, operation, rows}``; each row as
    ``RowChange.as_dict``.
    """
    return {
        "states": [
            {
                "version": state.version.version,
                "committed_at": state.version.committed_at,
                "operation": state.version.operation,
                "rows": [row.as_dict(layout) for row in state.rows],
            }
            for state in states
        ],
        "keys": list(layout.keys),
        "measures": list(layout.measures),
        "extras": list(layout.extras),
        "table_versions": table_versions,
    }


def partition_history_report(
    relation: str, partition_column: str, partition_value: Any, history: Mapping[str, Any]
) -> list[str]:
    """The lines ``gold_versions`` prints for a ``partition_versions`` result.

    A header, then per state its version, when it became current (UTC), its
    operation and the version it is compared with; then a line per row: keys,
    then ``removed`` or each measure with its change in parentheses, the extras
    (``version`` shown as ``row_version``) and ``(new)`` for a row new since the
    previous state.
    """
    states = history["states"]
    lines = [
        f"gold_versions: {relation} where {partition_column} = {partition_value}: {len(states)} published"
        f" version(s) of its rows among {history['table_versions']} table version(s)"
    ]
    for index, state in enumerate(states):
        since = "" if index == 0 else f"  (changes since version {states[index - 1]['version']})"
        lines.append(
            f"version {state['version']}  current from {state['committed_at']} UTC  {state['operation']}{since}"
        )
        if not state["rows"]:
            lines.append("    no rows")
        for row in state["rows"]:
            parts = [f"{key}={row[key]}" for key in history["keys"]]
            if row["is_removed"]:
                parts.append("removed")
            else:
                for measure in history["measures"]:
                    delta = row[f"{measure}__delta"]
                    parts.append(f"{measure}={row[measure]}" + ("" if delta is None else f" ({delta})"))
                for extra in history["extras"]:
                    parts.append(f"{'row_version' if extra == 'version' else extra}={row[extra]}")
                if row["is_new"] and index > 0:
                    parts.append("(new)")
            lines.append("    " + "  ".join(parts))
    return lines


# ------------------------------------------------------------------ restore


@dataclass(frozen=True)
class RestoreRequest:
    """restore_table's arguments, checked."""

    model: str
    reason: str  # trimmed, not empty
    selector: str  # version, as_of_time or invocation_id
    value: str  # the selector's value, trimmed
    raw_value: str  # the selector's value as given (for messages)

    @property
    def text(self) -> str:
        """``name=value``, as recorded in table_restores.selector."""
        return f"{self.selector}={self.value}"


def _given(value: Any) -> bool:
    return value is not None and str(value).strip() != ""


def restore_request(
    model: Any,
    version: Any = None,
    as_of_time: Any = None,
    invocation_id: Any = None,
    reason: Any = None,
    *,
    allowed_models: Collection[str],
) -> RestoreRequest:
    """Checks restore_table's arguments: a model among ``allowed_models``, a reason, exactly one selector.

    ``allowed_models`` are the restated gold models: their next run re-applies
    what came after the restored version. Silver, the ledger and the audit
    tables are history a restore would cut short (restoring the audit deletes
    audit rows), so they are refused. Blank strings count as not given. The
    checks run in that order, so the first message names the first problem.
    """
    if not _given(model):
        raise VersionsError(
            "restore_table needs a model: --args '{model: gold_daily_revenue, version: ..., reason: ...}'"
        )
    if str(model).strip() not in allowed_models:
        raise VersionsError(
            f"restore_table restores the restated gold models only ({', '.join(sorted(allowed_models))}), "
            f"not {str(model).strip()}: silver, the ledger and the audit tables keep history that a restore "
            "would delete; reprocess them from bronze with a backfill or replay instead"
        )
    reason_text = str(reason).strip() if reason is not None else ""
    if reason_text == "":
        raise VersionsError(
            "restore_table needs a reason (--args '{..., reason: \"why\"}'); it is recorded in table_restores."
        )
    arguments = dict(zip(RESTORE_SELECTORS, (version, as_of_time, invocation_id), strict=True))
    given = [(name, value) for name, value in arguments.items() if _given(value)]
    if len(given) != 1:
        listed = ", ".join(f"{name}={str(value).strip()}" for name, value in given)
        raise VersionsError(
            f"restore_table needs exactly one of version, as_of_time or invocation_id, got {listed or 'none'}"
        )
    name, value = given[0]
    return RestoreRequest(
        model=str(model).strip(), reason=reason_text, selector=name, value=str(value).strip(), raw_value=str(value)
    )


def retained_versions_text(versions: Sequence[TableVersion]) -> str:
    """The retained versions for an error message: the last 10, oldest first."""
    listed = "; ".join(
        f"{entry.version} ({entry.committed_at}, {entry.operation})" for entry in versions[-LISTED_VERSIONS:]
    )
    more = " (last 10)" if len(versions) > LISTED_VERSIONS else ""
    return f"its retained versions, oldest first{more}: {listed or 'none'}"


def restore_target_missing(request: RestoreRequest, relation: str, versions: Sequence[TableVersion]) -> str:
    """Why no version matches the request (unknown, not yet existing or expired), with the retained ones."""
    known = retained_versions_text(versions)
    if request.selector == "version":
        return f"Unknown version {request.value} of {relation} (never existed or expired); {known}"
    if request.selector == "as_of_time":
        return f"{relation} had no version at {request.raw_value} (or it has expired); {known}"
    return (
        f"No retained version of {relation} was written by dbt invocation {request.raw_value}"
        f" (no row of any retained version carries it as its newest run); {known}"
    )


# --------------------------------------------------------------- retention


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
