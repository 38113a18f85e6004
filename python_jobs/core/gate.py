"""The publication gate's arithmetic: is a restatement small enough to publish?

Step 4 of the restated materialization (``macros/materializations/restated.sql``)
runs ``publication_gate`` (``macros/publication/gate.sql``): its SQL reads, per
partition, the published table's figures and those of the rows about to be
merged (``PartitionFigures``), and the adapter's ``publication_gate_judgement``
passes them here with the ``publication_gate`` var (``GateLimits``).

Figures over the partitions already published (new partitions are
publication, not restatement):

    restated_share  partitions whose measure changes / partitions published,
                    checked once at least ``min_published_partitions`` are published;
    total_change    |change of the measure's total| / |published total|;
    row_change      rows added to published partitions / rows published.

A figure breaches its limit when it is strictly greater than it, so a figure
exactly at its limit passes. A ratio whose denominator is 0 (nothing published)
is 0 and passes.

Each check is a function ``(GateFigures, GateLimits) -> Iterable[Breach]``
listed in ``CHECKS``. A check of one partition (its change against an expected
interval, say) reads ``figures.partitions`` and returns a ``Breach`` with its
``partition`` set; extra settings come from ``limits.settings`` (the var as
given).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, localcontext
from typing import Any

LIMIT_NAMES = ("max_restated_share", "min_published_partitions", "max_total_change", "max_row_change")

Number = int | float | Decimal


class GateConfigError(ValueError):
    """The publication_gate var cannot be used."""


@dataclass(frozen=True)
class PartitionFigures:
    """One partition of the gated table: published, and as this write leaves it.

    A partition appears when it is published or has rows about to be written.
    ``new_measure - published_measure`` is the partition's contribution to the
    change of the measure's total: for rows that were published, new value minus
    published value (a row where either is null contributes nothing); for rows
    new to a published partition, their value. For a partition not yet
    published only rows that were published count (in practice none), so
    its new rows are publication, not restatement, and contribute nothing.
    """

    partition_value: str | None
    existed: bool  # the partition is in the published table
    published_rows: int
    published_measure: Number  # the measure's total over the published rows (0 when none)
    new_measure: Number  # published_measure plus this write's change to it
    rows_added: int  # rows new to a published partition
    rows_restated: int  # published rows whose measure changes (null-safe)

    @classmethod
    def from_mapping(cls, row: Mapping[str, Any]) -> PartitionFigures:
        value = row["partition_value"]
        return cls(
            partition_value=None if value is None else str(value),
            existed=_boolean(row["existed"]),
            published_rows=int(row["published_rows"] or 0),
            published_measure=_number(row["published_measure"]),
            new_measure=_number(row["new_measure"]),
            rows_added=int(row["rows_added"] or 0),
            rows_restated=int(row["rows_restated"] or 0),
        )

    @property
    def measure_change(self) -> Number:
        return self.new_measure - self.published_measure


def _boolean(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() == "true"
    return bool(value)


def _number(value: Any) -> Number:
    """A measure figure as the SQL returned it: int and Decimal kept, floats and text as Decimal."""
    if value is None:
        return 0
    if isinstance(value, bool):
        raise TypeError(f"not a number: {value!r}")
    if isinstance(value, int | Decimal):
        return value
    if isinstance(value, float):
        return Decimal(repr(value))
    return Decimal(str(value).strip())


@dataclass(frozen=True)
class GateLimits:
    """The publication_gate var: the four limits, and the var as given."""

    max_restated_share: float
    min_published_partitions: int
    max_total_change: float
    max_row_change: float
    settings: Mapping[str, Any]

    @classmethod
    def from_mapping(cls, limits: Mapping[str, Any] | None) -> GateLimits:
        limits = limits or {}
        missing = [name for name in LIMIT_NAMES if name not in limits]
        if missing:
            raise GateConfigError(f"var publication_gate needs {', '.join(LIMIT_NAMES)}; missing {', '.join(missing)}")
        bad = [name for name in LIMIT_NAMES if isinstance(limits[name], bool) or not isinstance(limits[name], Number)]
        if bad:
            raise GateConfigError(f"var publication_gate: {', '.join(bad)} must be numbers")
        # Values keep their type (an int limit prints as an int in messages).
        return cls(**{name: limits[name] for name in LIMIT_NAMES}, settings=dict(limits))


@dataclass(frozen=True)
class GateFigures:
    """The gated table's figures, from its partitions."""

    measure: str
    partitions: tuple[PartitionFigures, ...]
    published_partitions: int
    restated_partitions: int  # partitions (with a value) where a published row's measure changes
    restated_share: float
    published_rows: int
    added_rows: int
    row_change: float
    published_total: float
    total_delta: Number  # exact, as the SQL's type
    total_change: float

    @classmethod
    def of(cls, measure: str, partitions: Iterable[PartitionFigures]) -> GateFigures:
        partitions = tuple(partitions)
        published = [partition for partition in partitions if partition.existed]
        published_partitions = len(published)
        published_rows = sum(partition.published_rows for partition in published)
        restated_partitions = sum(
            1 for partition in partitions if partition.partition_value is not None and partition.rows_restated > 0
        )
        added_rows = sum(partition.rows_added for partition in partitions)
        with localcontext() as context:
            context.prec = 100
            published_total = float(sum(partition.published_measure for partition in published))
            total_delta = sum((partition.measure_change for partition in partitions), 0)
        return cls(
            measure=measure,
            partitions=partitions,
            published_partitions=published_partitions,
            restated_partitions=restated_partitions,
            restated_share=restated_partitions / published_partitions if published_partitions else 0,
            published_rows=published_rows,
            added_rows=added_rows,
            row_change=added_rows / published_rows if published_rows else 0,
            published_total=published_total,
            total_delta=total_delta,
            total_change=abs(float(total_delta) / published_total) if published_total else 0,
        )

    def checks(self, limits: GateLimits) -> dict[str, Any]:
        """The figures and limits as logged (in this order) and stored in publication_gate_log.checks."""
        return {
            "published_partitions": self.published_partitions,
            "restated_partitions": self.restated_partitions,
            "restated_share": self.restated_share,
            "published_rows": self.published_rows,
            "added_rows": self.added_rows,
            "row_change": self.row_change,
            "measure": self.measure,
            "published_total": self.published_total,
            "total_delta": float(self.total_delta),
            "total_change": self.total_change,
            "limits": dict(limits.settings),
        }


@dataclass(frozen=True)
class AllowedRange:
    """Where a figure passes: ``low <= observed <= high``; None is unbounded."""

    low: Number | None
    high: Number | None


@dataclass(frozen=True)
class Breach:
    """A figure outside its allowed range."""

    figure: str  # restated_share, total_change, row_change, ...
    partition: str | None  # None: the table as a whole
    observed: Number
    allowed: AllowedRange
    message: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "figure": self.figure,
            "partition": self.partition,
            "observed": self.observed,
            "allowed": [self.allowed.low, self.allowed.high],
            "message": self.message,
        }


def _percent(share: Number) -> Number:
    return round(share * 100, 1)


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
    if figures.published_partitions < limits.min_published_partitions:
        return []
    return _table_share_breach(
        "restated_share",
        figures.restated_share,
        limits.max_restated_share,
        f"{figures.restated_partitions} of {figures.published_partitions} published partitions restated",
    )


def total_change_check(figures: GateFigures, limits: GateLimits) -> Iterable[Breach]:
    return _table_share_breach(
        "total_change",
        figures.total_change,
        limits.max_total_change,
        f"{figures.measure} total moves by {figures.total_delta} on {figures.published_total}",
    )


def row_change_check(figures: GateFigures, limits: GateLimits) -> Iterable[Breach]:
    return _table_share_breach(
        "row_change",
        figures.row_change,
        limits.max_row_change,
        f"{figures.added_rows} rows added to {figures.published_rows} published",
    )


Check = Callable[[GateFigures, GateLimits], Iterable[Breach]]
CHECKS: tuple[Check, ...] = (restated_share_check, total_change_check, row_change_check)


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

    def blocked_message(self, model: str) -> str:
        """The error that fails a model the gate blocks."""
        return (
            f"Publication gate blocked {model}: {self.summary}. Nothing was written; the previous version stays"
            " visible. If the change is expected, re-run with --vars '{publication_gate_override: \"<why>\"}'"
            " (the override is audited), or adjust var publication_gate."
        )


def judge(
    measure: str,
    partitions: Iterable[PartitionFigures],
    limits: GateLimits,
    checks: Sequence[Check] = CHECKS,
) -> GateJudgement:
    """Runs every check on the table's figures; breaches come in the order of ``checks``."""
    figures = GateFigures.of(measure, partitions)
    breaches = tuple(breach for check in checks for breach in check(figures, limits))
    return GateJudgement(figures=figures, limits=limits, breaches=breaches)
