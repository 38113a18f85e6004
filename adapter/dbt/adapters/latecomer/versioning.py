"""Table versions: history, time travel, restore, retention and maintenance, behind the macros.

The procedures of ``macros/versions`` and ``macros/formats/versions.sql``
(python_jobs.core.versions): a table's version log from Iceberg's snapshot
log or Delta's history, the version current at a time or left by a run, a
partition's history across versions, a restore's request checked, the
retention boundary and the maintenance report. Nothing here runs SQL.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from dbt.adapters.base.meta import AdapterMeta, available
from dbt.adapters.latecomer.macro_values import _failed, _records

from python_jobs.core import versions


def _tuples(rows: Any) -> list[tuple[Any, ...]]:
    """Plain tuples from an agate table or its rows, for results read by position."""
    if rows is None:
        return []
    return [tuple(row) for row in getattr(rows, "rows", rows)]


def _versions(entries: Any) -> list[versions.TableVersion]:
    """A version list from Jinja (dicts from table_versions()) as records."""
    return versions.table_versions(_records(entries))


def _version_dict(entry: versions.TableVersion | None) -> dict[str, str] | None:
    return None if entry is None else entry.as_dict()


class VersionsMixin(metaclass=AdapterMeta):
    """Procedures behind the macros (python_jobs.core.versions).

    The macros run the SQL and pass its rows (agate tables, or lists of the
    dicts table_versions() returns); these methods convert them, call the
    core and return plain dicts, lists and strings. A request that cannot be
    answered comes back as {"error": message}: the macro raises it with
    exceptions.raise_compiler_error, so dbt shows the message as written.
    """

    @available
    def iceberg_versions(self, log_rows: Any) -> list[dict[str, str]]:
        """table_versions() of an Iceberg table, from its snapshot log rows (restores marked)."""
        return [entry.as_dict() for entry in versions.iceberg_versions(_records(log_rows))]

    @available
    def delta_versions(self, history_rows: Any) -> list[dict[str, str]]:
        """table_versions() of a Delta table, from DESCRIBE HISTORY rows (newest first)."""
        return [entry.as_dict() for entry in versions.delta_versions(_records(history_rows))]

    @available
    def version_with_id(self, table_versions: Any, version_id: str) -> dict[str, str] | None:
        """The latest entry of ``table_versions`` with that version id, or None."""
        return _version_dict(versions.version_with_id(_versions(table_versions), version_id))

    @available
    def version_current_at(self, table_versions: Any, at: str) -> dict[str, str] | None:
        """The entry current at ``at`` (UTC; a commit exactly at ``at`` counts), or None."""
        try:
            return _version_dict(versions.version_current_at(_versions(table_versions), at))
        except versions.VersionsError as error:
            raise _failed(error) from None

    @available
    def invocation_lookup(self, relation: str, invocation_id: Any, column_names: Iterable[str]) -> dict[str, Any]:
        """``{invocation_id}`` (trimmed) when ``relation``'s versions can be mapped to that run, else ``{error}``."""
        try:
            checked = versions.checked_invocation_id(invocation_id, str(relation), column_names)
        except versions.VersionsError as error:
            return {"error": str(error)}
        return {"invocation_id": checked, "error": None}

    @available
    def version_left_by_invocation(self, table_versions: Any, runs: Any) -> dict[str, str] | None:
        """The entry a run left the table in, from rows ``{version, newest_run_at, run_at}``, or None."""
        return _version_dict(versions.version_left_by_invocation(_versions(table_versions), _records(runs)))

    @available
    def partition_layout(self, relation: str, columns: Any, partition_column: str, keys: Any) -> dict[str, Any]:
        """``{keys, measures, extras}`` of a table's columns (dbt Column objects), or ``{error}``."""
        try:
            layout = versions.partition_layout(
                str(relation), [(column.name, column.dtype) for column in columns], partition_column, list(keys)
            )
        except versions.VersionsError as error:
            return {"error": str(error)}
        return {
            "keys": list(layout.keys),
            "measures": list(layout.measures),
            "extras": list(layout.extras),
            "error": None,
        }

    @available
    def changed_versions(self, table_versions: Any, fingerprints: Any) -> list[dict[str, str]]:
        """The entries at which a partition's rows changed, from rows ``{version, fingerprint}``."""
        kept = versions.changed_versions(_versions(table_versions), _records(fingerprints))
        return [entry.as_dict() for entry in kept]

    @available
    def partition_history(self, layout: Mapping[str, Any], kept: Any, rows: Any, table_versions: int) -> dict[str, Any]:
        """What partition_versions returns, from the kept states' rows (``state_rank``, columns as text)."""
        record = versions.PartitionLayout(
            keys=tuple(layout["keys"]), measures=tuple(layout["measures"]), extras=tuple(layout["extras"])
        )
        states = versions.partition_states(_versions(kept), _records(rows), record)
        return versions.partition_history(record, states, int(table_versions))

    @available
    def partition_history_report(
        self, relation: str, partition_column: str, partition_value: Any, history: Mapping[str, Any]
    ) -> list[str]:
        """The lines gold_versions prints for a partition_versions result."""
        return versions.partition_history_report(str(relation), partition_column, partition_value, history)

    @available
    def restore_request(
        self, model: Any, version: Any, as_of_time: Any, invocation_id: Any, reason: Any, allowed_models: Any
    ) -> dict[str, Any]:
        """restore_table's arguments checked (``model`` among ``allowed_models``):
        ``{model, reason, selector, value, raw_value, text}`` or ``{error}``."""
        try:
            request = versions.restore_request(
                model, version, as_of_time, invocation_id, reason, allowed_models=[str(m) for m in allowed_models]
            )
        except versions.VersionsError as error:
            return {"error": str(error)}
        return {
            "model": request.model,
            "reason": request.reason,
            "selector": request.selector,
            "value": request.value,
            "raw_value": request.raw_value,
            "text": request.text,
            "error": None,
        }

    @available
    def restore_target_missing(self, request: Mapping[str, Any], relation: str, table_versions: Any) -> str:
        """The error for a restore whose version is unknown, not yet existing or expired."""
        checked = versions.RestoreRequest(
            model=request["model"],
            reason=request["reason"],
            selector=request["selector"],
            value=request["value"],
            raw_value=request["raw_value"],
        )
        return versions.restore_target_missing(checked, str(relation), _versions(table_versions))

    @available
    def retention_boundary(self, table_versions: Any, cutoff: str) -> dict[str, Any]:
        """``{expire_before, protected}`` for a horizon beginning at ``cutoff`` (UTC)."""
        try:
            boundary = versions.retention_boundary(_versions(table_versions), cutoff)
        except versions.VersionsError as error:
            raise _failed(error) from None
        return {"expire_before": boundary.expire_before, "protected": [entry.as_dict() for entry in boundary.protected]}

    @available
    def retention_properties_to_set(self, wanted: Mapping[str, str], current: Any) -> dict[str, str]:
        """The wanted properties whose value in ``current`` (``show tblproperties`` rows) differs."""
        return versions.properties_to_set(wanted, _tuples(current))

    @available
    def maintenance_header(
        self, dry_run: bool, table_count: int, table_format: str, hours: int, cutoff: str, now: Any = None
    ) -> str:
        """maintain_tables' first line."""
        return versions.maintenance_header(dry_run, table_count, table_format, hours, cutoff, now)

    @available
    def table_maintenance(
        self,
        totals: Mapping[str, Any],
        relation: str,
        dry_run: bool,
        changed_properties: Any,
        compaction: Mapping[str, Any] | None = None,
        table_versions: Any = None,
        boundary: Mapping[str, Any] | None = None,
        expiry: Mapping[str, Any] | None = None,
        orphans: Mapping[str, Any] | None = None,
        versions_after: Any = None,
    ) -> dict[str, Any]:
        """One table's maintenance line and the totals after it, ``{line, totals}``, or ``{error}``.

        Without ``table_versions`` the table has no version yet (only its
        properties were set). Outside a dry run, ``versions_after`` is the
        version log after expiry; a protected version missing from it is the error.
        """
        totals_before = versions.MaintenanceTotals.from_mapping(totals)
        properties = list(changed_properties or [])
        if table_versions is None:
            done = versions.unversioned_table_maintenance(totals_before, properties)
        else:
            boundary = boundary or {"expire_before": None, "protected": []}
            checked = versions.RetentionBoundary(
                expire_before=boundary["expire_before"], protected=tuple(_versions(boundary["protected"]))
            )
            try:
                done = versions.table_maintenance(
                    totals_before,
                    str(relation),
                    bool(dry_run),
                    properties,
                    compaction or {},
                    _versions(table_versions),
                    checked,
                    expiry or {},
                    orphans or {},
                    None if versions_after is None else _versions(versions_after),
                )
            except versions.VersionsError as error:
                return {"error": str(error)}
        return {"line": done.line, "totals": done.totals.as_dict(), "error": None}

    @available
    def maintenance_summary(self, totals: Mapping[str, Any], dry_run: bool, table_count: int, cutoff: str) -> str:
        """maintain_tables' last line."""
        running = versions.MaintenanceTotals.from_mapping(totals)
        return versions.maintenance_summary(running, dry_run, table_count, cutoff)
