"""One partition's history across a table's versions: where its rows are
(:class:`PartitionLayout`), the versions in which its fingerprint changed, its
rows' values and measure deltas in each, and the report printed of them.

Times, order and boundaries are as :mod:`python_jobs.core.versions` states them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation, localcontext
from typing import Any

from python_jobs.core.versions.records import TableVersion, VersionsError

# Columns shown after the measures in a partition's history, when the table has them.
HISTORY_EXTRAS = ("status", "version", "restatement_reason", "invocation_id")
# Spark types whose columns are measures (compared and diffed between versions).
NUMERIC_TYPE = re.compile(r"^(tinyint|smallint|int|integer|bigint|long|float|double|decimal)")


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
