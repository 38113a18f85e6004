"""The publication gate's checks: each takes the table's figures and the limits
and yields a :class:`Breach` for every figure outside its allowed range, with
a message that says what moved, by how much, and what was expected.

:data:`CHECKS` lists them in the order a judgement reports their breaches;
what each check does is described in :mod:`python_jobs.core.gate`.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from python_jobs.core.gate_figures import GateFigures, GateLimits, GroupFigures, Number, judged_groups


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


def final_change_check(figures: GateFigures, limits: GateLimits) -> Iterable[Breach]:
    for group in judged_groups(figures):
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
    for group in judged_groups(figures):
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
    for group in judged_groups(figures):
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
    for group in judged_groups(figures):
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
    for group in judged_groups(figures):
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
