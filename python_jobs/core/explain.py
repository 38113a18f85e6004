"""Why did this number change? A gold row's change between two versions, by cause.

Each restated revenue model has a causes model (:data:`EXPLAINED`) holding,
for each published version of one of its rows, one row per cause of its
change from the version before (a *step*): action, watermark tier, reason,
events, and what they add to each measure, next to the row's values before
and after the step. ``dbt run-operation explain_change`` finds the row's
steps with :func:`row_request`, calls :func:`explain` for two of its versions,
then prints :func:`describe`:

    2024-01-15 web, version 1 -> 3: net_revenue +27.25 = 1 event 30 h late (+20.00),
    1 correction (+10.00), 1 deletion (-2.75)

Between two versions lie one or more steps; their causes add up, and so do
their changes. Whatever the causes leave of the change is the ``remainder``:
zero (the model counts what restore_table took back as a cause,
``table_restore``); anything left would be printed, never hidden.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from python_jobs.core.constants import REVENUE_MEASURES
from python_jobs.core.run_vars import calendar_date

MEASURES = REVENUE_MEASURES
# How each action reads in a sentence: (singular, plural).
NOUNS = {
    "insert": ("event on time", "events on time"),
    "late_merge": ("late event", "late events"),
    "correction": ("correction", "corrections"),
    "deletion": ("deletion", "deletions"),
    "quarantine_release": ("release from quarantine", "releases from quarantine"),
    "backfill": ("event backfilled", "events backfilled"),
    "replay": ("event replayed", "events replayed"),
    "dimension_change": ("event moved by a customer history change", "events moved by customer history changes"),
    "adjustment": ("adjustment booked", "adjustments booked"),
    "unexplained": ("unexplained change", "unexplained changes"),
}


@dataclass(frozen=True)
class ExplainedModel:
    """Where a gold model's steps are: its causes model, and the row's key as
    (argument, causes column, kind) with kind date, hour or text; a rollup's
    rows share one causes model, told apart by ``grain``."""

    causes: str
    keys: tuple[tuple[str, str, str], ...]
    grain: str | None = None


_DATE, _SOURCE = ("event_date", "event_date", "date"), ("source_system", "source_system", "text")
EXPLAINED: dict[str, ExplainedModel] = {
    "gold_daily_revenue": ExplainedModel("gold_daily_revenue_causes", (_DATE, _SOURCE)),
    "gold_hourly_revenue": ExplainedModel(
        "gold_hourly_revenue_causes", (_DATE, ("event_hour", "event_hour", "hour"), _SOURCE)
    ),
    "gold_revenue_by_tier": ExplainedModel(
        "gold_revenue_by_tier_causes", (_DATE, ("tier", "tier", "text"), ("region", "region", "text"))
    ),
    **{
        f"gold_{name}_revenue": ExplainedModel(
            "gold_rollup_revenue_causes", ((f"{grain}_start_date", "period_start_date", "date"), _SOURCE), grain
        )
        for name, grain in (("weekly", "week"), ("monthly", "month"), ("quarterly", "quarter"), ("ytd", "year"))
    },
}


@dataclass(frozen=True)
class RowRequest:
    causes: str  # the causes model to read
    predicate: str  # SQL selecting the row's steps in it
    label: str  # the row as a sentence names it: "2024-01-15 web", "week of 2024-01-15 web"


def _literal(kind: str, argument: str, value: Any) -> tuple[str, str]:
    """(SQL literal, label text) of one key value; ValueError when it is not of its kind."""
    text = str(value)
    if kind == "date":
        # Only YYYY-MM-DD, as the backfill vars: Python's own parser also
        # takes week dates (2024-W03-1), which are no SQL date literal.
        if calendar_date(text) is None:
            raise ValueError(f"{argument} must be a date (YYYY-MM-DD), got {text!r}")
        return f"date'{text}'", text
    if kind == "hour":
        if not text.isdigit() or not 0 <= int(text) <= 23:
            raise ValueError(f"{argument} must be an hour of the day (0 to 23), got {text!r}")
        return str(int(text)), f"{int(text):02d}:00"
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'", text


def row_request(model: str, row: Mapping[str, Any]) -> RowRequest:
    """Where the steps of one row of ``model`` are, from its key values in ``row``.

    Raises ValueError naming the models that can be explained, or the key
    arguments the model's rows need, missing or unknown ones, or a value
    that is not of its kind.
    """
    explained = EXPLAINED.get(model)
    if explained is None:
        raise ValueError(f"model must be one of {', '.join(EXPLAINED)}, got {model!r}")
    arguments = [argument for argument, _, _ in explained.keys]
    given = {name: value for name, value in row.items() if value is not None}
    missing = [name for name in arguments if name not in given]
    unknown = sorted(set(given) - set(arguments))
    if missing or unknown:
        problems = ([f"missing {', '.join(missing)}"] if missing else []) + (
            [f"unknown {', '.join(unknown)}"] if unknown else []
        )
        raise ValueError(f"a row of {model} is given by {', '.join(arguments)} ({'; '.join(problems)})")
    conditions, labels = [], []
    for argument, column, kind in explained.keys:
        literal, label = _literal(kind, argument, given[argument])
        conditions.append(f"{column} = {literal}")
        labels.append(label)
    if explained.grain:
        conditions.insert(0, f"grain = '{explained.grain}'")
        labels.insert(0, f"{explained.grain} of")
    return RowRequest(explained.causes, " and ".join(conditions), " ".join(labels))


@dataclass(frozen=True)
class Cause:
    action: str
    watermark_tier: str | None
    reason: str | None
    events: int
    min_lateness_seconds: int | None
    max_lateness_seconds: int | None
    delta: Mapping[str, Decimal]


@dataclass(frozen=True)
class Explanation:
    row: str  # "2024-01-15 web"
    from_version: int
    to_version: int
    before: Mapping[str, Decimal]
    after: Mapping[str, Decimal]
    causes: tuple[Cause, ...]

    @property
    def change(self) -> dict[str, Decimal]:
        return {m: self.after[m] - self.before[m] for m in MEASURES}

    @property
    def remainder(self) -> dict[str, Decimal]:
        """What the causes leave of the change, per measure (zero but for a restore)."""
        return {m: self.change[m] - sum((c.delta[m] for c in self.causes), Decimal(0)) for m in MEASURES}


def _decimal(value: Any) -> Decimal:
    return Decimal(0) if value is None else Decimal(str(value))


def _int(value: Any) -> int | None:
    return None if value is None else int(value)


def _steps(rows: Iterable[Mapping[str, Any]]) -> list[list[Mapping[str, Any]]]:
    """The row's steps in the order they were explained, each its cause rows."""
    steps: dict[tuple, list[Mapping[str, Any]]] = {}
    for row in rows:
        key = (str(row["explained_run_at"]), int(row["from_version"]), int(row["to_version"]))
        steps.setdefault(key, []).append(row)
    return [steps[key] for key in sorted(steps)]


def explain(
    rows: Iterable[Mapping[str, Any]],
    from_version: int | None = None,
    to_version: int | None = None,
    label: str | None = None,
) -> Explanation:
    """The change of one gold row from ``from_version`` to ``to_version``, by cause.

    ``rows`` are the row's rows in its causes model; ``label`` names the row
    (by default its event date and source). ``to_version``
    defaults to the latest version, ``from_version`` to the one before it.
    The steps taken are the latest one reaching ``to_version`` and those
    before it, back to one starting at ``from_version``. Raises ValueError,
    naming the versions there are, when no such steps exist.
    """
    steps = _steps(rows)
    if not steps:
        raise ValueError("no explained version of this row: is it in the model, and was it built since?")
    versions = sorted({int(step[0]["to_version"]) for step in steps})
    last = len(steps) - 1
    if to_version is not None:
        last = max((i for i, step in enumerate(steps) if int(step[0]["to_version"]) == to_version), default=-1)
        if last < 0:
            raise ValueError(f"version {to_version} of this row was never published; its versions: {versions}")
    first = last
    if from_version is not None:
        while first >= 0 and int(steps[first][0]["from_version"]) != from_version:
            first -= 1
        if first < 0:
            starts = sorted({int(step[0]["from_version"]) for step in steps[: last + 1]})
            raise ValueError(
                f"no published version {from_version} before version {int(steps[last][0]['to_version'])}; "
                f"the row's changes start from versions {starts} (versions published in one run are one step)"
            )
    chosen = steps[first : last + 1]
    head, tail = chosen[0][0], chosen[-1][0]
    merged: dict[tuple, dict[str, Any]] = {}
    for step in chosen:
        for row in step:
            key = (row["action"], row.get("watermark_tier"), row.get("change_reason"))
            cause = merged.setdefault(key, {"events": 0, "min": None, "max": None, **{m: Decimal(0) for m in MEASURES}})
            cause["events"] += int(row.get("events") or 0)
            for bound, pick in (("min", min), ("max", max)):
                value = _int(row.get(f"{bound}_lateness_seconds"))
                if value is not None:
                    cause[bound] = value if cause[bound] is None else pick(cause[bound], value)
            for m in MEASURES:
                cause[m] += _decimal(row.get(m))
    causes = tuple(
        Cause(
            action=action,
            watermark_tier=tier,
            reason=reason,
            events=value["events"],
            min_lateness_seconds=value["min"],
            max_lateness_seconds=value["max"],
            delta={m: value[m] for m in MEASURES},
        )
        for (action, tier, reason), value in merged.items()
        if value["events"] or action == "table_restore" or any(value[m] for m in MEASURES)
    )
    return Explanation(
        row=label or f"{head['event_date']} {head['source_system']}",
        from_version=int(head["from_version"]),
        to_version=int(tail["to_version"]),
        before={m: _decimal(head[f"{m}_before"]) for m in MEASURES},
        after={m: _decimal(tail[f"{m}_after"]) for m in MEASURES},
        causes=tuple(sorted(causes, key=lambda c: (-abs(c.delta["net_revenue"]), c.action, c.watermark_tier or ""))),
    )


def duration(seconds: int) -> str:
    """A lateness in the unit a reader would use: 45 min, 30 h, 3 d."""
    if seconds < 3600:
        return f"{round(seconds / 60)} min"
    if seconds < 2 * 86400:
        hours = seconds / 3600
        return f"{hours:.0f} h" if hours == round(hours) else f"{hours:.1f} h"
    return f"{seconds / 86400:.1f} d".replace(".0 d", " d")


def _signed(value: Decimal, measure: str) -> str:
    return f"{int(value):+d}" if measure == "orders" else f"{value:+.2f}"


def cause_text(cause: Cause, measure: str = "net_revenue") -> str:
    if cause.action == "table_restore":
        return f"restore_table ({_signed(cause.delta[measure], measure)})"
    singular, plural = NOUNS.get(cause.action, (cause.action, cause.action))
    text = f"{cause.events} {singular if cause.events == 1 else plural}"
    if cause.action == "late_merge" and cause.min_lateness_seconds is not None:
        low, high = duration(cause.min_lateness_seconds), duration(cause.max_lateness_seconds or 0)
        low_number, low_unit = low.split(" ")
        span = low if low == high else f"{low_number if high.endswith(' ' + low_unit) else low} to {high}"
        text = f"{cause.events} {'event' if cause.events == 1 else 'events'} {span} late"
    if cause.watermark_tier and cause.action in ("insert", "late_merge"):
        text += f" (tier {cause.watermark_tier})"
    if cause.reason:
        text += f" '{cause.reason}'"
    return f"{text} ({_signed(cause.delta[measure], measure)})"


def describe(explanation: Explanation, measure: str = "net_revenue") -> str:
    """One line: the change of ``measure`` and its causes, then any remainder."""
    if measure not in MEASURES:
        raise ValueError(f"measure must be one of {', '.join(MEASURES)}, got {measure!r}")
    causes = ", ".join(cause_text(c, measure) for c in explanation.causes) or "no change"
    text = (
        f"{explanation.row}, version {explanation.from_version} -> {explanation.to_version}: "
        f"{measure} {_signed(explanation.change[measure], measure)} = {causes}"
    )
    left = explanation.remainder[measure]
    if left:
        text += f"; not explained by these causes: {_signed(left, measure)}"
    return text
