"""Restoring a table: which one version a request names (by version, time or
invocation id, exactly one of them), and what to say when the table no longer
retains it.

Times, order and boundaries are as :mod:`python_jobs.core.versions` states them.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from python_jobs.core.versions.records import TableVersion, VersionsError

# How many retained versions an error message lists.
LISTED_VERSIONS = 10
RESTORE_SELECTORS = ("version", "as_of_time", "invocation_id")


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
