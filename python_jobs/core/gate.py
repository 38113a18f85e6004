"""The publication gate's arithmetic: is a restatement what was expected?

Step 4 of the restated materialization (``adapter/dbt/include/latecomer/macros/materializations/restated.sql``)
runs ``publication_gate`` (``adapter/dbt/include/latecomer/macros/publication/gate.sql``): its SQL reads, per
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

The figures and limits are :mod:`python_jobs.core.gate_figures`, the checks
:mod:`python_jobs.core.gate_checks`; this module runs the checks and holds
their judgement.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from python_jobs.core.gate_checks import CHECKS, Breach, Check
from python_jobs.core.gate_figures import GateConfigError, GateFigures, GateLimits, GroupFigures, judged_groups


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
                for group in judged_groups(self.figures)
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


# What the adapter calls as gate.<name> (GateConfigError is raised by GateLimits).
__all__ = ["GateConfigError", "GateJudgement", "GateLimits", "GroupFigures", "judge"]
