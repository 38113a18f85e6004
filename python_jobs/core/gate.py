"""The publication gate's arithmetic: is a restatement what was expected?

Step 4 of the restated materialization (``macros/materializations/restated.sql``)
runs ``publication_gate`` (``macros/publication/gate.sql``): its SQL reads, per
partition and group (the gate's ``by`` column, e.g. the source), the published
figures and those the rows about to be merged leave (``GroupFigures``), and the
adapter's ``publication_gate_judgement`` passes them here with the
``publication_gate`` var (``GateLimits``).

Every partition is expected to change as long as the watermark tiers admit
events for it: live ones fill in, closed ones (preliminary and final) still
take their sources' late tail, corrections and deletions. What no tier
explains is a breach: a closed partition's events jumping far beyond that
tail (a day sent twice), a fall in events with no deletion or correction
behind it, a value per event far above the group's own history. A breach
does not stop the build: the partitions it names are *held*
(``python_jobs/core/holds.py``): their published rows stay as they are until
their figures return to normal or a steward decides, and everything else
publishes.

Per group of a published partition (``count`` is the gate's event count,
e.g. ``orders``; a limit set to null turns its check off):

    final_change       (off by default: for teams that want final to mean
                       frozen) a partition published as final changes its
                       measure or count by more than ``max_final_change``
                       (relative; 0: any change), unless every reason it was
                       recomputed for is in ``final_change_reasons``;
    unexplained_shrink the count falls and no reason in ``shrink_reasons``
                       (a deletion, a correction, ...) explains it: late
                       arrivals only ever add events;
    shrink             the count falls by more than ``max_shrink`` of what
                       was published, even when explained (a day deleted);
    closed_growth      a closed (preliminary or final) partition's count grows
                       by more than ``max_closed_growth`` and by more than
                       ``min_count`` events: its day has closed, so only its
                       sources' late tail is still to come (live partitions
                       are still filling and may grow freely);
    value_outlier      the measure per event rises above ``max_value_factor``
                       times the group's typical value (the median over its
                       other published partitions, or its own published
                       value when it has fewer than ``min_history`` of them).

Every per-group setting may be given for one source under ``sources`` (e.g.
``sources: {partner: {max_closed_growth: 2}}`` for a source that delivers
most of a day a day late): the group's own value, else the var's.

Groups published with fewer than ``min_count`` events, where one event is a
large share, are left alone by ``shrink`` and ``growth``, and by
``value_outlier`` when it would compare them with their own published value.

Per table, over the partitions published as final (off by default; a breach
holds every final partition the write changes):

    restated_share  final partitions whose measure changes / final partitions,
                    checked once at least ``min_published_partitions`` are final;
    total_change    |change of the measure's total| / |final total|;
    row_change      rows added to final partitions / their rows.

A figure breaches its limit when it is strictly greater than it, so a figure
exactly at its limit passes. A ratio whose denominator is 0 is 0 and passes.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, localcontext
from typing import Any

LIMIT_NAMES = ("max_restated_share", "min_published_partitions", "max_total_change", "max_row_change")
# Per-group settings and their defaults (dbt_project.yml's publication_gate
# lists them too; a test keeps the two equal). None turns a check off.
GROUP_DEFAULTS: Mapping[str, Any] = {
    "max_final_change": None,
    "final_change_reasons": ("backfill", "replay", "quarantine_release"),
    "shrink_reasons": ("deletion", "correction", "dimension_change", "backfill", "replay"),
    "max_shrink": 0.5,
    "max_closed_growth": 0.5,
    "min_count": 5,
    "max_value_factor": 5,
    "min_history": 3,
}
REASON_SETTINGS = ("final_change_reasons", "shrink_reasons")

Number = int | float | Decimal


class GateConfigError(ValueError):
    """The publication_gate var cannot be used."""


@dataclass(frozen=True)
class GroupFigures:
    """One group (the whole partition when the gate has no ``by``) of the gated
    table: as published, and as this write leaves it.

    ``measure_change`` and ``count_change`` are what the rows about to be
    written change: new value minus published value for published rows, the
    value for new rows. A group appears when it is published or has rows to
    write; a group of a partition not yet published is publication, not
    restatement, and nothing judges it.
    """

    partition_value: str | None
    group_value: str | None
    existed: bool  # the group has published rows
    published_status: str | None  # the least settled status of its published rows
    published_rows: int
    published_measure: Number
    measure_change: Number
    published_count: Number
    count_change: Number
    rows_added: int  # rows new to the group
    rows_restated: int  # published rows whose measure changes (null-safe)
    reasons: frozenset[str]  # why its partition was recomputed

    @classmethod
    def from_mapping(cls, row: Mapping[str, Any]) -> GroupFigures:
        def text(name: str) -> str | None:
            value = row.get(name)
            return None if value is None else str(value)

        reasons = row.get("reasons") or ""
        return cls(
            partition_value=text("partition_value"),
            group_value=text("group_value"),
            existed=_boolean(row["existed"]),
            published_status=text("published_status"),
            published_rows=int(row["published_rows"] or 0),
            published_measure=_number(row["published_measure"]),
            measure_change=_number(row["measure_change"]),
            published_count=_number(row.get("published_count")),
            count_change=_number(row.get("count_change")),
            rows_added=int(row["rows_added"] or 0),
            rows_restated=int(row["rows_restated"] or 0),
            reasons=frozenset(reason for reason in str(reasons).split(",") if reason),
        )

    @property
    def new_measure(self) -> Number:
        return self.published_measure + self.measure_change

    @property
    def new_count(self) -> Number:
        return self.published_count + self.count_change

    @property
    def changed(self) -> bool:
        return bool(self.measure_change or self.count_change or self.rows_added or self.rows_restated)

    @property
    def label(self) -> str:
        """``partition 2024-03-02`` or ``partition 2024-03-02 (web)``."""
        group = f" ({self.group_value})" if self.group_value is not None else ""
        return f"partition {self.partition_value}{group}"


def _boolean(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() == "true"
    return bool(value)


def _number(value: Any) -> Number:
    """A figure as the SQL returned it: int and Decimal kept, floats and text as Decimal."""
    if value is None:
        return 0
    if isinstance(value, bool):
        raise TypeError(f"not a number: {value!r}")
    if isinstance(value, int | Decimal):
        return value
    if isinstance(value, float):
        return Decimal(repr(value))
    return Decimal(str(value).strip())


def _is_number(value: Any) -> bool:
    return isinstance(value, Number) and not isinstance(value, bool)


@dataclass(frozen=True)
class GateLimits:
    """The publication_gate var: the table's four limits, the per-group
    settings (defaults from ``GROUP_DEFAULTS``), and the var as given."""

    max_restated_share: float | None
    min_published_partitions: int
    max_total_change: float | None
    max_row_change: float | None
    settings: Mapping[str, Any]
    # A group's (source's) own per-group settings, over ``settings``.
    by_group: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    @classmethod
    def from_mapping(cls, limits: Mapping[str, Any] | None) -> GateLimits:
        limits = dict(limits or {})
        sources = limits.pop("sources", None) or {}
        missing = [name for name in LIMIT_NAMES if name not in limits]
        if missing:
            raise GateConfigError(f"var publication_gate needs {', '.join(LIMIT_NAMES)}; missing {', '.join(missing)}")
        bad = [
            name
            for name in LIMIT_NAMES
            if not _is_number(limits[name]) and not (limits[name] is None and name != "min_published_partitions")
        ]
        unknown = sorted(set(limits) - set(LIMIT_NAMES) - set(GROUP_DEFAULTS))
        if unknown:
            raise GateConfigError(f"var publication_gate: unknown setting {', '.join(unknown)}")
        settings = _group_settings({**GROUP_DEFAULTS, **limits}, "var publication_gate", bad)
        if not isinstance(sources, Mapping) or not all(isinstance(own, Mapping) for own in sources.values()):
            raise GateConfigError("var publication_gate: sources maps a source name to its own settings")
        by_group = {}
        for source, own in sources.items():
            where = f"var publication_gate.sources.{source}"
            unknown = sorted(set(own) - set(GROUP_DEFAULTS))
            if unknown:
                raise GateConfigError(
                    f"{where}: unknown setting {', '.join(unknown)} (per-source settings: {', '.join(GROUP_DEFAULTS)})"
                )
            by_group[str(source).lower()] = _group_settings(dict(own), where, bad)
        if bad:
            raise GateConfigError(f"var publication_gate: {', '.join(bad)} must be numbers (0 or more)")
        # Values keep their type (an int limit prints as an int in messages).
        return cls(**{name: limits[name] for name in LIMIT_NAMES}, settings=settings, by_group=by_group)

    def setting(self, name: str, group: str | None = None) -> Any:
        """A per-group setting: the group's (source's) own where it has one, else the var's."""
        own = self.by_group.get(group.lower(), {}) if group is not None else {}
        return own[name] if name in own else self.settings[name]


def _group_settings(settings: dict[str, Any], where: str, bad: list[str]) -> dict[str, Any]:
    """``settings`` checked: reason lists as tuples, numbers 0 or more (names of bad ones added to ``bad``)."""
    for name, value in settings.items():
        if name not in GROUP_DEFAULTS:
            continue
        if name in REASON_SETTINGS:
            if isinstance(value, str) or not all(isinstance(reason, str) for reason in value or ()):
                raise GateConfigError(f"{where}: {name} must be a list of reasons")
            settings[name] = None if value is None else tuple(value)
        elif value is not None and (not _is_number(value) or value < 0):
            bad.append(name)
    return settings


@dataclass(frozen=True)
class GateFigures:
    """The gated table's figures: its groups, and the table's figures over
    the partitions published as final."""

    measure: str
    count: str | None
    groups: tuple[GroupFigures, ...]
    final_partitions: int
    restated_partitions: int  # final partitions where a published row's measure changes
    restated_share: float
    published_rows: int  # in final partitions
    added_rows: int  # to final partitions
    row_change: float
    published_total: float  # of the measure over final partitions
    total_delta: Number  # exact, as the SQL's type
    total_change: float
    final_values: frozenset[str]  # partitions published as final
    published_values: frozenset[str | None]  # partitions with published rows

    @classmethod
    def of(cls, measure: str, groups: Iterable[GroupFigures], count: str | None = None) -> GateFigures:
        groups = tuple(groups)
        by_partition: dict[str | None, list[GroupFigures]] = defaultdict(list)
        for group in groups:
            by_partition[group.partition_value].append(group)
        final = {
            value: members
            for value, members in by_partition.items()
            if value is not None and any(g.existed and g.published_status == "final" for g in members)
        }
        final_groups = [group for members in final.values() for group in members]
        published_rows = sum(group.published_rows for group in final_groups)
        added_rows = sum(group.rows_added for group in final_groups)
        restated = sum(1 for members in final.values() if any(group.rows_restated > 0 for group in members))
        with localcontext() as context:
            context.prec = 100
            published_total = float(sum(group.published_measure for group in final_groups))
            total_delta = sum((group.measure_change for group in final_groups), 0)
        return cls(
            measure=measure,
            count=count,
            groups=groups,
            final_partitions=len(final),
            restated_partitions=restated,
            restated_share=restated / len(final) if final else 0,
            published_rows=published_rows,
            added_rows=added_rows,
            row_change=added_rows / published_rows if published_rows else 0,
            published_total=published_total,
            total_delta=total_delta,
            total_change=abs(float(total_delta) / published_total) if published_total else 0,
            final_values=frozenset(final),
            published_values=frozenset(group.partition_value for group in groups if group.existed),
        )

    def partition_is_final(self, partition_value: str | None) -> bool:
        return partition_value in self.final_values

    def partition_is_published(self, partition_value: str | None) -> bool:
        return partition_value in self.published_values

    def checks(self, limits: GateLimits) -> dict[str, Any]:
        """The figures and limits as logged (in this order) and stored in publication_gate_log.checks."""
        return {
            "final_partitions": self.final_partitions,
            "restated_partitions": self.restated_partitions,
            "restated_share": self.restated_share,
            "published_rows": self.published_rows,
            "added_rows": self.added_rows,
            "row_change": self.row_change,
            "measure": self.measure,
            "count": self.count,
            "published_total": self.published_total,
            "total_delta": float(self.total_delta),
            "total_change": self.total_change,
            "changed_groups": sum(1 for group in self.groups if group.existed and group.changed),
            "limits": {
                name: list(value) if name in REASON_SETTINGS and value is not None else value
                for name, value in limits.settings.items()
            },
        }


@dataclass(frozen=True)
class AllowedRange:
    """Where a figure passes: ``low <= observed <= high``; None is unbounded."""

    low: Number | None
    high: Number | None


@dataclass(frozen=True)
class Breach:
    """A figure outside its allowed range."""

    figure: str  # restated_share, total_change, row_change, final_change, ...
    partition: str | None  # None: the table as a whole
    observed: Number
    allowed: AllowedRange
    message: str
    group: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "figure": self.figure,
            "partition": self.partition,
            "group": self.group,
            "observed": self.observed,
            "allowed": [self.allowed.low, self.allowed.high],
            "message": self.message,
        }


def _percent(share: Number) -> Number:
    return round(share * 100, 1)


def _signed_percent(share: Number) -> str:
    return f"{'+' if share >= 0 else ''}{_percent(share)}%"


def _table_share_breach(figure: str, observed: Number, limit: Number, what: str) -> list[Breach]:
    """A whole-table share above its limit, as a breach: ``what (x% > y%)``."""
    if observed <= limit:
        return []
    return [
        Breach(
            figure=figure,
            partition=None,
            observed=observed,
            allowed=AllowedRange(None, limit),
            message=f"{what} ({_percent(observed)}% > {_percent(limit)}%)",
        )
    ]


def restated_share_check(figures: GateFigures, limits: GateLimits) -> Iterable[Breach]:
    if limits.max_restated_share is None or figures.final_partitions < limits.min_published_partitions:
        return []
    return _table_share_breach(
        "restated_share",
        figures.restated_share,
        limits.max_restated_share,
        f"{figures.restated_partitions} of {figures.final_partitions} final partitions restated",
    )


def total_change_check(figures: GateFigures, limits: GateLimits) -> Iterable[Breach]:
    if limits.max_total_change is None:
        return []
    return _table_share_breach(
        "total_change",
        figures.total_change,
        limits.max_total_change,
        f"{figures.measure} total over final partitions moves by {figures.total_delta} on {figures.published_total}",
    )


def row_change_check(figures: GateFigures, limits: GateLimits) -> Iterable[Breach]:
    if limits.max_row_change is None:
        return []
    return _table_share_breach(
        "row_change",
        figures.row_change,
        limits.max_row_change,
        f"{figures.added_rows} rows added to the {figures.published_rows} of final partitions",
    )


def _group_breach(figure: str, group: GroupFigures, observed: Number, allowed: AllowedRange, message: str) -> Breach:
    return Breach(figure, group.partition_value, observed, allowed, message, group=group.group_value)


def _relative(change: Number, base: Number) -> float:
    """|change| / |base|; a change on nothing is infinite, no change is 0."""
    if not change:
        return 0.0
    return abs(float(change) / float(base)) if base else float("inf")


def _reasons_text(group: GroupFigures) -> str:
    return ", ".join(sorted(group.reasons)) or "none recorded"


def _judged_groups(figures: GateFigures) -> Iterable[GroupFigures]:
    """Groups of published partitions that this write changes."""
    return (
        group
        for group in figures.groups
        if group.partition_value is not None and group.changed and figures.partition_is_published(group.partition_value)
    )


def final_change_check(figures: GateFigures, limits: GateLimits) -> Iterable[Breach]:
    for group in _judged_groups(figures):
        limit = limits.setting("max_final_change", group.group_value)
        allowed_reasons = set(limits.setting("final_change_reasons", group.group_value) or ())
        if limit is None or not figures.partition_is_final(group.partition_value):
            continue
        if group.reasons and group.reasons <= allowed_reasons:
            continue
        observed = max(
            _relative(group.measure_change, group.published_measure),
            _relative(group.count_change, group.published_count) if figures.count else 0.0,
            float("inf") if group.rows_added and not group.existed else 0.0,
        )
        if observed <= limit:
            continue
        low, high = _around(group.published_measure, limit)
        yield _group_breach(
            "final_change",
            group,
            observed=observed,
            allowed=AllowedRange(low, high),
            message=(
                f"{group.label} is final and its {figures.measure} moves from {group.published_measure} to "
                f"{group.new_measure}{_count_text(figures, group)}; expected {_range_text(low, high)} "
                f"(a final partition may change by {_percent(limit)}%; reasons: {_reasons_text(group)})"
            ),
        )


def _around(value: Number, share: Number) -> tuple[Number, Number]:
    spread = abs(value) * Decimal(str(share)) if isinstance(value, Decimal) else abs(value) * share
    return value - spread, value + spread


def _range_text(low: Number | None, high: Number | None) -> str:
    if low is not None and high is not None and low == high:
        return f"{low}"
    if low is None:
        return f"at most {high}"
    if high is None:
        return f"at least {low}"
    return f"{low} to {high}"


def _count_text(figures: GateFigures, group: GroupFigures) -> str:
    if not figures.count or not group.count_change:
        return ""
    return f", {figures.count} from {group.published_count} to {group.new_count}"


def unexplained_shrink_check(figures: GateFigures, limits: GateLimits) -> Iterable[Breach]:
    if not figures.count:
        return
    for group in _judged_groups(figures):
        reasons = limits.setting("shrink_reasons", group.group_value)
        if reasons is None or group.count_change >= 0 or group.reasons & set(reasons):
            continue
        yield _group_breach(
            "unexplained_shrink",
            group,
            observed=group.new_count,
            allowed=AllowedRange(group.published_count, None),
            message=(
                f"{group.label}: {figures.count} fall from {group.published_count} to {group.new_count} with no "
                f"{' or '.join(reasons)} behind it (reasons: {_reasons_text(group)}); expected at least "
                f"{group.published_count}, as late arrivals only add events"
            ),
        )


def _count_share_beyond(group: GroupFigures, limits: GateLimits, limit: Number, sign: int) -> float | None:
    """The share of its published events a group gained (sign 1) or lost (-1), when above ``limit``.

    None when it moved the other way or not at all, or was published with
    fewer than ``min_count`` events.
    """
    if sign * group.count_change <= 0 or group.published_count < limits.setting("min_count", group.group_value):
        return None
    share = _relative(group.count_change, group.published_count)
    return share if share > limit else None


def shrink_check(figures: GateFigures, limits: GateLimits) -> Iterable[Breach]:
    if not figures.count:
        return
    for group in _judged_groups(figures):
        limit = limits.setting("max_shrink", group.group_value)
        shrink = None if limit is None else _count_share_beyond(group, limits, limit, -1)
        if shrink is None:
            continue
        low = group.published_count * (1 - Decimal(str(limit)))
        yield _group_breach(
            "shrink",
            group,
            observed=-shrink,
            allowed=AllowedRange(-limit, None),
            message=(
                f"{group.label}: {figures.count} fall from {group.published_count} to {group.new_count} "
                f"({_signed_percent(-shrink)}); expected at least {_plain(low)} (at most {_percent(limit)}% fewer; "
                f"reasons: {_reasons_text(group)})"
            ),
        )


def growth_check(figures: GateFigures, limits: GateLimits) -> Iterable[Breach]:
    if not figures.count:
        return
    for group in _judged_groups(figures):
        limit = limits.setting("max_closed_growth", group.group_value)
        slack = limits.setting("min_count", group.group_value)
        if limit is None or group.published_status not in ("preliminary", "final"):
            continue
        growth = _count_share_beyond(group, limits, limit, 1)
        # A few events more are a small source's ordinary late tail, whatever
        # share of it they are: up to min_count more always pass.
        if growth is None or group.count_change <= slack:
            continue
        high = group.published_count + max(group.published_count * Decimal(str(limit)), Decimal(slack))
        yield _group_breach(
            "closed_growth",
            group,
            observed=growth,
            allowed=AllowedRange(None, limit),
            message=(
                f"{group.label} is {group.published_status} and its {figures.count} grow from "
                f"{group.published_count} to {group.new_count} ({_signed_percent(growth)}); expected at most "
                f"{_plain(high)} (its day has closed: at most {_percent(limit)}% or {slack} more; reasons: "
                f"{_reasons_text(group)})"
            ),
        )


def _plain(value: Number) -> Number:
    """A bound for a message: whole numbers without decimals, others to 2 places."""
    value = Decimal(str(value))
    return int(value) if value == value.to_integral_value() else value.quantize(Decimal("0.01"))


def _value_per_event(measure: Number, count: Number) -> Decimal | None:
    return Decimal(str(measure)) / Decimal(str(count)) if count and count > 0 else None


def value_outlier_check(figures: GateFigures, limits: GateLimits) -> Iterable[Breach]:
    if not figures.count:
        return
    history: dict[str | None, list[tuple[str | None, Decimal]]] = defaultdict(list)
    for group in figures.groups:
        value = _value_per_event(group.published_measure, group.published_count) if group.existed else None
        if value is not None:
            history[group.group_value].append((group.partition_value, value))
    for group in _judged_groups(figures):
        factor = limits.setting("max_value_factor", group.group_value)
        if factor is None or not group.measure_change:
            continue
        value = _value_per_event(group.new_measure, group.new_count)
        if value is None or value <= 0:
            continue
        others = [v for partition, v in history[group.group_value] if partition != group.partition_value]
        if len(others) >= limits.setting("min_history", group.group_value):
            typical, source = statistics.median(others), f"the median of its {len(others)} other published partitions"
        elif group.published_count >= limits.setting("min_count", group.group_value):
            typical = _value_per_event(group.published_measure, group.published_count)
            source = "its published value"
        else:
            continue  # one or two events say too little about what is typical
        if typical is None or typical <= 0:
            continue
        high = typical * Decimal(str(factor))
        if value <= high:
            continue
        what = f"{figures.measure} / {figures.count}"
        yield _group_breach(
            "value_outlier",
            group,
            observed=value,
            allowed=AllowedRange(None, high),
            message=(
                f"{group.label}: {what} is {_plain(value)} ({figures.measure} {group.new_measure} over "
                f"{group.new_count}); expected at most {_plain(high)} ({factor} x {_plain(typical)}, {source}; "
                f"reasons: {_reasons_text(group)})"
            ),
        )


Check = Callable[[GateFigures, GateLimits], Iterable[Breach]]
CHECKS: tuple[Check, ...] = (
    final_change_check,
    unexplained_shrink_check,
    shrink_check,
    growth_check,
    value_outlier_check,
    restated_share_check,
    total_change_check,
    row_change_check,
)


@dataclass(frozen=True)
class GateJudgement:
    figures: GateFigures
    limits: GateLimits
    breaches: tuple[Breach, ...]

    @property
    def passed(self) -> bool:
        return not self.breaches

    @property
    def summary(self) -> str:
        """The breaches in words, ``; ``-separated (publication_gate_log.breaches)."""
        return "; ".join(breach.message for breach in self.breaches)

    def breaches_by_partition(self) -> dict[str, list[Breach]]:
        """The partitions the breaches name, each with its breaches: a group's
        breach names its partition; a table-wide one (over final partitions)
        names every final partition this write changes."""
        named: dict[str, list[Breach]] = defaultdict(list)
        changed_final = sorted(
            {
                group.partition_value
                for group in _judged_groups(self.figures)
                if group.partition_value is not None and self.figures.partition_is_final(group.partition_value)
            }
        )
        for breach in self.breaches:
            for partition in [breach.partition] if breach.partition is not None else changed_final:
                named[partition].append(breach)
        return dict(named)


def judge(
    measure: str,
    groups: Iterable[GroupFigures],
    limits: GateLimits,
    checks: Sequence[Check] = CHECKS,
    count: str | None = None,
) -> GateJudgement:
    """Runs every check on the table's figures; breaches come in the order of ``checks``."""
    figures = GateFigures.of(measure, groups, count)
    breaches = tuple(breach for check in checks for breach in check(figures, limits))
    return GateJudgement(figures=figures, limits=limits, breaches=breaches)
