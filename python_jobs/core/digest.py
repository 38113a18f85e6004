"""The restatement digest of a run: which published periods it changed, by how
much, and why, for the people who read the numbers.

The on-run-end hook ``write_change_manifest`` (adapter/dbt/include/latecomer/macros/publication/change_manifest.sql)
passes the run's change manifest rows (one per gold row written) to the
adapter's ``restatement_digest``, which calls :func:`digest_of`, writes
:func:`as_markdown` and :func:`as_json` under the target path and, when the
``LATECOMER_DIGEST_WEBHOOK`` environment variable names a URL, POSTs the JSON
there (:func:`deliver`; a failed delivery is returned, never raised).

A period is *restated* when the run changed the values of at least one of its
published rows (manifest ``change = 'restated'``). Its before and after are
the sums of each measure over the rows of the period the run wrote (rows it
did not write did not change, so the delta is the period's), and its causes
are the rows' restatement reasons, most frequent first. Rows new to the
period count in after and in the causes; rows whose status alone moved count
nowhere.

The digest also lists the run's publication holds (python_jobs/core/holds.py):
the partitions still held after it, with the checks that fired and the
command that decides them, and the holds it closed (cleared, approved,
rejected, overridden).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from python_jobs.core.constants import REVENUE_MEASURES

MEASURES = REVENUE_MEASURES
WEBHOOK_ENV = "LATECOMER_DIGEST_WEBHOOK"


@dataclass(frozen=True)
class RestatedPeriod:
    model: str
    period: str
    rows: int  # rows of the period the run wrote
    before: Mapping[str, Decimal]
    after: Mapping[str, Decimal]
    causes: tuple[tuple[str, int], ...]  # (reason, rows), most rows first

    @property
    def delta(self) -> dict[str, Decimal]:
        return {measure: self.after[measure] - self.before[measure] for measure in self.after}


@dataclass(frozen=True)
class HoldLine:
    """A publication hold as the digest shows it."""

    hold_id: str
    model: str
    partition: str
    state: str  # open, or how this run closed it
    groups: str
    checks: str
    breaches: str

    @classmethod
    def from_mapping(cls, row: Mapping[str, Any]) -> HoldLine:
        return cls(
            hold_id=str(row["hold_id"]),
            model=str(row["model"]),
            partition=str(row["partition_value"]),
            state=str(row["state"]),
            groups=str(row.get("group_values") or ""),
            checks=str(row.get("checks_fired") or ""),
            breaches=str(row.get("breaches") or row.get("resolution_reason") or ""),
        )


DECIDE_HOLDS = "python -m python_jobs.landing.steward holds"


@dataclass(frozen=True)
class Digest:
    invocation_id: str
    as_of: str | None
    periods: tuple[RestatedPeriod, ...] = field(default_factory=tuple)
    holds: tuple[HoldLine, ...] = field(default_factory=tuple)

    @property
    def open_holds(self) -> tuple[HoldLine, ...]:
        return tuple(hold for hold in self.holds if hold.state == "open")


def _values(text: Any) -> dict[str, Any]:
    if not text:
        return {}
    # Amounts keep their scale: 150.00 stays 150.00, never the float 150.0.
    return json.loads(text, parse_float=Decimal) if isinstance(text, str) else dict(text)


def _decimal(value: Any) -> Decimal:
    return Decimal(0) if value is None else Decimal(str(value))


def digest_of(
    rows: Iterable[Mapping[str, Any]],
    invocation_id: str,
    as_of: str | None,
    measures: Sequence[str] = MEASURES,
    holds: Iterable[Mapping[str, Any]] = (),
) -> Digest:
    """The periods ``rows`` (change manifest rows of one run) restated, by model then period,
    and ``holds`` (publication_holds rows: open, or closed by the run)."""
    by_period: dict[tuple[str, str], list[Mapping[str, Any]]] = defaultdict(list)
    for row in rows:
        by_period[(str(row["model"]), str(row["partition_value"]))].append(row)
    periods = []
    for (model, period), members in sorted(by_period.items()):
        if not any(row["change"] == "restated" for row in members):
            continue
        counted = [row for row in members if row["change"] in ("restated", "published")]
        before: dict[str, Decimal] = {}
        after: dict[str, Decimal] = {}
        for row in counted:
            old, new = _values(row.get("before_values")), _values(row.get("after_values"))
            for measure in measures:
                if measure in new:
                    before[measure] = before.get(measure, Decimal(0)) + _decimal(old.get(measure))
                    after[measure] = after.get(measure, Decimal(0)) + _decimal(new.get(measure))
        causes = Counter(str(row.get("restatement_reason") or "new rows") for row in counted)
        periods.append(
            RestatedPeriod(
                model=model,
                period=period,
                rows=len(counted),
                before=before,
                after=after,
                causes=tuple(sorted(causes.items(), key=lambda item: (-item[1], item[0]))),
            )
        )
    held = tuple(sorted((HoldLine.from_mapping(row) for row in holds), key=lambda h: (h.state != "open", h.partition)))
    return Digest(invocation_id=invocation_id, as_of=as_of, periods=tuple(periods), holds=held)


def _signed(value: Decimal) -> str:
    return f"+{value}" if value > 0 else str(value)


def as_json(digest: Digest) -> dict[str, Any]:
    """The digest as JSON-ready data (amounts as strings, exact)."""
    return {
        "invocation_id": digest.invocation_id,
        "as_of": digest.as_of,
        "restated_periods": len(digest.periods),
        "periods": [
            {
                "model": period.model,
                "period": period.period,
                "rows": period.rows,
                "before": {name: str(value) for name, value in period.before.items()},
                "after": {name: str(value) for name, value in period.after.items()},
                "delta": {name: str(value) for name, value in period.delta.items()},
                "causes": [{"reason": reason, "rows": rows} for reason, rows in period.causes],
            }
            for period in digest.periods
        ],
        "open_holds": len(digest.open_holds),
        "holds": [
            {
                "hold_id": hold.hold_id,
                "model": hold.model,
                "partition": hold.partition,
                "state": hold.state,
                "groups": hold.groups,
                "checks": hold.checks,
                "detail": hold.breaches,
            }
            for hold in digest.holds
        ],
        "decide_holds_with": DECIDE_HOLDS if digest.open_holds else None,
    }


def as_markdown(digest: Digest, measure: str = "net_revenue", top: int = 3) -> str:
    """One table row per restated period: its measure before, after and delta, and its top causes."""
    lines = [f"# Restatement digest: run {digest.invocation_id}, as of {digest.as_of}", ""]
    if not digest.periods:
        return "\n".join([*lines, "No published period was restated.", "", *_holds_markdown(digest)])
    lines += [
        f"{len(digest.periods)} published period(s) restated. Figures are over the rows the run wrote.",
        "",
        f"| model | period | {measure} before | after | delta | top causes (rows) |",
        "|---|---|---:|---:|---:|---|",
    ]
    for period in digest.periods:
        causes = ", ".join(f"{reason} ({rows})" for reason, rows in period.causes[:top])
        before, after = period.before.get(measure, Decimal(0)), period.after.get(measure, Decimal(0))
        lines.append(
            f"| {period.model} | {period.period} | {before} | {after} | {_signed(after - before)} | {causes} |"
        )
    return "\n".join([*lines, "", *_holds_markdown(digest)])


def _holds_markdown(digest: Digest) -> list[str]:
    """The holds section: none when the run neither kept nor closed a hold."""
    if not digest.holds:
        return []
    lines = [
        f"## Publication holds: {len(digest.open_holds)} open",
        "",
        "Held partitions stay as published in every gold model that restates them.",
        "",
        "| hold | model | partition | state | sources | checks | detail |",
        "|---|---|---|---|---|---|---|",
    ]
    for hold in digest.holds:
        detail = hold.breaches.replace("|", "\\|")
        lines.append(
            f"| {hold.hold_id} | {hold.model} | {hold.partition} | {hold.state} | {hold.groups} | {hold.checks} "
            f"| {detail} |"
        )
    if digest.open_holds:
        lines += ["", f"Decide with `{DECIDE_HOLDS}` (approve or reject, with a reason)."]
    return [*lines, ""]


def deliver(url: str, payload: Mapping[str, Any], timeout: float = 10.0) -> str | None:
    """POST ``payload`` as JSON to ``url``; the reason it failed, or None when delivered."""
    try:
        request = urllib.request.Request(
            url,
            data=json.dumps(payload).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 (the operator's URL)
            status = response.status
    except (urllib.error.URLError, OSError, ValueError) as error:
        return f"{type(error).__name__}: {getattr(error, 'reason', error)}"
    return None if 200 <= status < 300 else f"HTTP {status}"
