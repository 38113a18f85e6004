"""The data the report is made of: the shapes of its datasets, and the grid and
limits that fix how many rows they hold.

:class:`ReportData` is the contract between the loader
(:mod:`python_jobs.operations.report_queries`, which fills it from the built
tables) and the page (:mod:`python_jobs.operations.report_page`, which renders
it); tests fill it by hand.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

Row = Mapping[str, Any]

HOUR = 3600
# Thresholds of the lateness CDF, in seconds; anything later is "beyond" the last.
LATENESS_THRESHOLDS_SECONDS: tuple[int, ...] = (
    0,
    5 * 60,
    15 * 60,
    30 * 60,
    1 * HOUR,
    2 * HOUR,
    4 * HOUR,
    8 * HOUR,
    12 * HOUR,
    24 * HOUR,
    48 * HOUR,
    72 * HOUR,
    168 * HOUR,
    336 * HOUR,
    720 * HOUR,
)
# Most recent restated rows shown on the timeline.
RESTATEMENT_LIMIT = 500


@dataclass
class ReportData:
    """The five datasets, as lists of dicts (any mapping works; extra keys are ignored).

    ``lateness``: one row per source and threshold, every threshold of the grid
        for each source: ``source_system`` (str), ``threshold_seconds`` (int),
        ``arrived_within`` (int: parsed events whose lateness is at most the
        threshold) and ``events`` (int: parsed events of the source, the same on
        all its rows).
    ``backtest``: one row per source, metric and horizon: ``source_system``,
        ``metric`` (str), ``horizon_hours`` (number), ``partitions`` (int),
        ``mean_estimated_completeness``, ``mean_actual_completeness`` and
        ``mean_absolute_relative_error`` (numbers, fractions: 0.9 is 90 %).
    ``restatements``: one row per restated gold row: ``run_started_at``
        (datetime), ``partition_value`` (the event date, str or date),
        ``source_system``, ``restatement_reason`` (str or None),
        ``net_revenue_before`` and ``net_revenue_after`` (numbers or Decimal).
    ``live_vs_final``: one row per event date: ``event_date`` (str or date),
        ``first_published_at`` (datetime or None), ``first_net_revenue`` and
        ``current_net_revenue`` (numbers or Decimal; None when the date is
        missing on that side).
    ``quarantine``: one row per source, reason and status: ``source_system``,
        ``quarantine_reason``, ``status`` (str) and ``row_count`` (int).
    ``holds``: one row per publication hold (the model publication_holds):
        ``hold_id``, ``partition_value``, ``group_values``, ``state``,
        ``checks_fired``, ``breaches`` (str or None), ``first_held_at``,
        ``last_judged_at`` (datetime) and ``resolution_reason`` (str or None).
    ``as_of``: the as-of time of the newest gold build (None if unknown).
    """

    lateness: list[Row] = field(default_factory=list)
    backtest: list[Row] = field(default_factory=list)
    restatements: list[Row] = field(default_factory=list)
    live_vs_final: list[Row] = field(default_factory=list)
    quarantine: list[Row] = field(default_factory=list)
    holds: list[Row] = field(default_factory=list)
    as_of: datetime | None = None
