"""What the publication gate judges: the figures of each group of the gated
table (:class:`GroupFigures`, as published and as this write leaves them),
the table's figures over its final partitions (:class:`GateFigures`), and the
limits read from the ``publication_gate`` var (:class:`GateLimits`), with their
defaults.

The limits and what each check does with them are described in
:mod:`python_jobs.core.gate`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
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


def judged_groups(figures: GateFigures) -> Iterable[GroupFigures]:
    """Groups of published partitions that this write changes."""
    return (
        group
        for group in figures.groups
        if group.partition_value is not None and group.changed and figures.partition_is_published(group.partition_value)
    )
