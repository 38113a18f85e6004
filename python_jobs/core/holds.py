"""Publication holds: which partitions a build keeps as published, and why.

The publication gate (``python_jobs/core/gate.py``) judges each partition a
restated gold model is about to change. A partition it finds abnormal is not
written: it is *held*. Its published rows stay exactly as they were, every
other partition publishes, and the build goes on. The models that restate the
same event dates follow the same holds (``adapter/dbt/include/latecomer/macros/publication/holds.sql``), so
the gold tables keep agreeing with each other.

A hold lives in the append-only log ``<schema>_audit.publication_hold_log``,
one row per event of its life, and its current state is the model
``publication_holds``. :func:`decide` turns one build's judgement into those
events:

    held      a partition breaches and has no open hold: a new hold;
    judged    an open hold still breaches (its pending values may have grown);
    cleared   an open hold no longer breaches (the source took back what it
              sent, say): its pending values publish, reason recorded;
    approved  a steward approved it: its pending values publish, whatever the
              gate says of them;
    rejected  a steward rejected it: the arrivals behind it were sent to
              quarantine and their dates replayed, so the hold closes; a
              breach left after that is a new hold;
    overridden
              ``publication_gate_override`` was given: the run publishes every
              partition it would hold, with that reason.

Approved, rejected and overridden holds are closed: the change they decided
is published (or gone) and is never judged again.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from python_jobs.core.gate import GateJudgement
from python_jobs.core.gate_checks import Breach
from python_jobs.core.gate_figures import GroupFigures

OPEN_EVENTS = ("held", "judged")
CLOSING_EVENTS = ("cleared", "approved", "rejected", "overridden")
DECISIONS = ("approve", "reject")


@dataclass(frozen=True)
class OpenHold:
    """A hold that was open when the build started, and any decision on it."""

    hold_id: str
    partition_value: str
    decision: str | None = None  # approve / reject, not applied yet
    decision_reason: str | None = None
    decided_by: str | None = None

    @classmethod
    def from_mapping(cls, row: Mapping[str, Any]) -> OpenHold:
        decision = row.get("decision")
        if decision is not None and decision not in DECISIONS:
            raise ValueError(f"hold {row['hold_id']}: unknown decision {decision!r}")
        return cls(
            hold_id=str(row["hold_id"]),
            partition_value=str(row["partition_value"]),
            decision=decision,
            decision_reason=row.get("decision_reason"),
            decided_by=row.get("decided_by"),
        )


@dataclass(frozen=True)
class HoldEvent:
    """One row of the hold log."""

    hold_id: str
    partition_value: str
    event: str
    groups: tuple[str, ...] = ()
    checks_fired: tuple[str, ...] = ()
    breaches: str | None = None
    published_values: Mapping[str, Any] = field(default_factory=dict)
    pending_values: Mapping[str, Any] = field(default_factory=dict)
    reasons: tuple[str, ...] = ()
    resolution_reason: str | None = None
    actor: str | None = None

    @property
    def holds(self) -> bool:
        """Whether the partition stays as published after this event."""
        return self.event in OPEN_EVENTS

    def as_dict(self) -> dict[str, Any]:
        return {
            "hold_id": self.hold_id,
            "partition_value": self.partition_value,
            "event": self.event,
            "group_values": ",".join(self.groups),
            "checks_fired": ",".join(self.checks_fired),
            "breaches": self.breaches,
            "published_values": json.dumps(self.published_values, sort_keys=True, default=_json_number),
            "pending_values": json.dumps(self.pending_values, sort_keys=True, default=_json_number),
            "reasons": ",".join(self.reasons),
            "resolution_reason": self.resolution_reason,
            "actor": self.actor,
        }


@dataclass(frozen=True)
class HoldDecision:
    """What a build does with holds: the partitions it keeps as published, and the log rows."""

    events: tuple[HoldEvent, ...]

    @property
    def held_partitions(self) -> list[str]:
        return sorted({event.partition_value for event in self.events if event.holds})

    @property
    def summary(self) -> str:
        """One line per event, for the build's log."""
        return "; ".join(
            f"{event.partition_value} {event.event}"
            + (f" ({', '.join(event.checks_fired)})" if event.checks_fired and event.holds else "")
            + (f": {event.resolution_reason}" if event.resolution_reason else "")
            for event in self.events
        )


def _json_number(value: Any) -> Any:
    if isinstance(value, Decimal):
        return str(value)
    raise TypeError(f"not JSON: {value!r}")


def new_hold_id(model: str, partition_value: str, invocation_id: str) -> str:
    """A stable id for a hold opened by this run (12 hex characters)."""
    return hashlib.sha1(f"{model}|{partition_value}|{invocation_id}".encode()).hexdigest()[:12]


def partition_values(groups: Iterable[GroupFigures], partition_value: str) -> tuple[dict, dict]:
    """A partition's published and pending figures, per group (``-`` when the gate has no ``by``)."""
    published: dict[str, Any] = {}
    pending: dict[str, Any] = {}
    for group in groups:
        if group.partition_value != partition_value:
            continue
        name = group.group_value if group.group_value is not None else "-"
        if group.existed:
            published[name] = {
                "count": group.published_count,
                "measure": group.published_measure,
                "status": group.published_status,
            }
        pending[name] = {"count": group.new_count, "measure": group.new_measure}
    return published, pending


def decide(
    judgement: GateJudgement,
    open_holds: Sequence[OpenHold],
    model: str,
    invocation_id: str,
    override: str | None = None,
    actor: str | None = None,
) -> HoldDecision:
    """The hold events of one build of ``model``, in partition order."""
    breaches = judgement.breaches_by_partition()
    by_partition = {hold.partition_value: hold for hold in open_holds}
    events: list[HoldEvent] = []
    for partition in sorted(set(breaches) | set(by_partition)):
        hold = by_partition.get(partition)
        found = breaches.get(partition, [])
        figures = partition_values(judgement.figures.groups, partition)
        if hold is not None and hold.decision == "approve":
            events.append(
                _event(
                    hold.hold_id,
                    partition,
                    "approved",
                    found,
                    figures,
                    judgement,
                    resolution=hold.decision_reason,
                    actor=hold.decided_by,
                )
            )
            continue
        if hold is not None and hold.decision == "reject":
            events.append(
                _event(
                    hold.hold_id,
                    partition,
                    "rejected",
                    [],
                    figures,
                    judgement,
                    resolution=hold.decision_reason,
                    actor=hold.decided_by,
                )
            )
            hold = None  # what still breaches after the rejection is a new change
        if not found:
            if hold is not None:
                events.append(
                    _event(
                        hold.hold_id,
                        partition,
                        "cleared",
                        [],
                        figures,
                        judgement,
                        resolution="figures back within the gate's limits",
                        actor=actor,
                    )
                )
            continue
        hold_id = hold.hold_id if hold is not None else new_hold_id(model, partition, invocation_id)
        if override:
            events.append(
                _event(hold_id, partition, "overridden", found, figures, judgement, resolution=override, actor=actor)
            )
        else:
            events.append(_event(hold_id, partition, "judged" if hold else "held", found, figures, judgement))
    return HoldDecision(events=tuple(events))


def _event(
    hold_id: str,
    partition: str,
    kind: str,
    breaches: Sequence[Breach],
    figures: tuple[dict, dict],
    judgement: GateJudgement,
    resolution: str | None = None,
    actor: str | None = None,
) -> HoldEvent:
    published, pending = figures
    reasons = sorted(
        {reason for group in judgement.figures.groups if group.partition_value == partition for reason in group.reasons}
    )
    return HoldEvent(
        hold_id=hold_id,
        partition_value=partition,
        event=kind,
        groups=tuple(dict.fromkeys(breach.group for breach in breaches if breach.group is not None)),
        checks_fired=tuple(dict.fromkeys(breach.figure for breach in breaches)),
        breaches="; ".join(breach.message for breach in breaches) or None,
        published_values=published,
        pending_values=pending,
        reasons=tuple(reasons),
        resolution_reason=resolution,
        actor=actor,
    )
