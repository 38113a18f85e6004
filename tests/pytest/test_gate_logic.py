"""The publication gate's arithmetic without Spark: python_jobs.core.gate.

Figures are per partition, as the gate's SQL returns them; expected figures,
breaches and messages are worked out by hand. The limits are the project's
defaults (dbt_project.yml). The gate inside a build (blocking, the log
table, the override) is exercised with Spark by tests/pytest/test_backfill.py.
"""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from dbt.adapters.latecomer.impl import LatecomerAdapter
from dbt_common.clients.agate_helper import table_from_data_flat

from python_jobs.core import gate
from python_jobs.core.gate import AllowedRange, Breach, GateConfigError, GateLimits, PartitionFigures

DEFAULTS = {
    "max_restated_share": 0.5,
    "min_published_partitions": 7,
    "max_total_change": 0.25,
    "max_row_change": 0.5,
}
LIMITS = GateLimits.from_mapping(DEFAULTS)


def partition(
    value: str | None,
    published: str = "100.00",
    new: str | None = None,
    rows: int = 1,
    added: int = 0,
    restated: int = 0,
    existed: bool = True,
) -> PartitionFigures:
    return PartitionFigures(
        partition_value=value,
        existed=existed,
        published_rows=rows if existed else 0,
        published_measure=Decimal(published) if existed else 0,
        new_measure=Decimal(new if new is not None else published),
        rows_added=added,
        rows_restated=restated,
    )


def days(count: int, restated: int = 0) -> list[PartitionFigures]:
    """`count` published partitions of 100.00 each; the first `restated` restated by +1.00."""
    return [
        partition(f"2024-03-{day:02d}", new="101.00" if day <= restated else None, restated=int(day <= restated))
        for day in range(1, count + 1)
    ]


def judge(partitions: list[PartitionFigures], limits: GateLimits = LIMITS) -> gate.GateJudgement:
    return gate.judge("net_revenue", partitions, limits)


# ------------------------------------------------------------ restated_share


def test_restated_share_exactly_at_the_limit_passes() -> None:
    judgement = judge(days(8, restated=4))  # 4 / 8 = 0.5, total +4.00 on 800.00
    assert judgement.passed
    assert judgement.figures.restated_share == 0.5


def test_restated_share_above_the_limit_breaches() -> None:
    judgement = judge(days(8, restated=5))  # 5 / 8 = 0.625
    assert judgement.breaches == (
        Breach(
            figure="restated_share",
            partition=None,
            observed=0.625,
            allowed=AllowedRange(None, 0.5),
            message="5 of 8 published partitions restated (62.5% > 50.0%)",
        ),
    )


def test_restated_share_is_not_judged_below_min_published_partitions() -> None:
    assert judge(days(6, restated=6)).passed  # 6 published < 7: every one may change
    assert not judge(days(7, restated=7)).passed  # exactly 7: judged


def test_partitions_without_a_value_are_not_counted_as_restated() -> None:
    figures = judge([*days(7), partition(None, restated=1, existed=False)]).figures
    assert figures.restated_partitions == 0 and figures.published_partitions == 7


# -------------------------------------------------------------- total_change


def test_total_change_exactly_at_the_limit_passes() -> None:
    # 400.00 published; one row +100.00: 100 / 400 = 0.25
    judgement = judge([partition("2024-03-01", "400.00", new="500.00", restated=1)])
    assert judgement.passed and judgement.figures.total_change == 0.25


def test_total_change_above_the_limit_breaches() -> None:
    judgement = judge([partition("2024-03-01", "400.00", new="500.01", restated=1)])
    (breach,) = judgement.breaches
    assert breach.figure == "total_change" and breach.allowed == AllowedRange(None, 0.25)
    assert breach.observed == pytest.approx(0.250025)
    # the change keeps the measure's scale; the published total is a float; 25.0025 % rounds to 25.0
    assert breach.message == "net_revenue total moves by 100.01 on 400.0 (25.0% > 25.0%)"


def test_total_change_counts_decreases_and_rows_added_to_published_partitions() -> None:
    judgement = judge(
        [
            partition("2024-03-01", "100.00", new="40.00", restated=1),  # -60.00
            partition("2024-03-02", "100.00", new="130.00", added=1, rows=2),  # +30.00 from a new row
        ]
    )
    assert judgement.figures.total_delta == Decimal("-30.00")
    assert judgement.figures.total_change == 0.15 and judgement.figures.added_rows == 1


def test_a_new_partition_is_publication_not_restatement() -> None:
    # The SQL gives a partition not yet published only the change of rows that existed: none.
    judgement = judge([*days(8), partition("2024-04-01", new="0", existed=False)])
    assert judgement.passed
    assert judgement.figures.published_partitions == 8 and judgement.figures.total_delta == 0


def test_zero_published_total() -> None:
    judgement = judge([partition("2024-03-01", "0.00", new="50.00", restated=1)])
    assert judgement.passed  # no ratio to a total of zero
    checks = judgement.figures.checks(LIMITS)
    assert checks["published_total"] == 0.0 and checks["total_delta"] == 50.0 and checks["total_change"] == 0


def test_nothing_published() -> None:
    judgement = judge([partition("2024-03-01", new="50.00", existed=False)])
    assert judgement.passed
    checks = judgement.figures.checks(LIMITS)
    assert (checks["published_partitions"], checks["restated_share"], checks["row_change"]) == (0, 0, 0)


# ---------------------------------------------------------------- row_change


def test_row_change_exactly_at_the_limit_passes_and_above_breaches() -> None:
    # 4 published rows (published measure 0 so the total check stays quiet)
    at_limit = [partition("2024-03-01", "0", rows=4, added=2)]
    assert judge(at_limit).passed
    above = judge([partition("2024-03-01", "0", rows=4, added=3)])
    assert [breach.message for breach in above.breaches] == ["3 rows added to 4 published (75.0% > 50.0%)"]


# ------------------------------------------------------------- the whole gate


def test_breaches_come_in_check_order_and_word_the_block() -> None:
    judgement = judge(
        [partition(f"2024-03-{day:02d}", new="1000.00", rows=1, added=1, restated=1) for day in range(1, 9)]
    )
    assert [breach.figure for breach in judgement.breaches] == ["restated_share", "total_change", "row_change"]
    assert judgement.summary == (
        "8 of 8 published partitions restated (100.0% > 50.0%); "
        "net_revenue total moves by 7200.00 on 800.0 (900.0% > 25.0%); "
        "8 rows added to 8 published (100.0% > 50.0%)"
    )
    assert judgement.blocked_message("gold_daily_revenue") == (
        "Publication gate blocked gold_daily_revenue: " + judgement.summary + ". Nothing was written; the previous"
        " version stays visible. If the change is expected, re-run with"
        " --vars '{publication_gate_override: \"<why>\"}' (the override is audited), or adjust var publication_gate."
    )


def test_checks_are_logged_in_order_with_the_limits() -> None:
    checks = judge(days(8, restated=2)).figures.checks(LIMITS)
    assert json.dumps(checks) == (
        '{"published_partitions": 8, "restated_partitions": 2, "restated_share": 0.25, "published_rows": 8,'
        ' "added_rows": 0, "row_change": 0.0, "measure": "net_revenue", "published_total": 800.0,'
        ' "total_delta": 2.0, "total_change": 0.0025, "limits": {"max_restated_share": 0.5,'
        ' "min_published_partitions": 7, "max_total_change": 0.25, "max_row_change": 0.5}}'
    )


def test_limits_keep_their_type_in_messages() -> None:
    wide_open = GateLimits.from_mapping({**DEFAULTS, "max_restated_share": 1, "min_published_partitions": 1})
    assert judge(days(2, restated=2), wide_open).passed  # 1.0 is not above 1
    strict = GateLimits.from_mapping({**DEFAULTS, "max_restated_share": 0, "min_published_partitions": 1})
    assert judge(days(2, restated=1), strict).summary.startswith("1 of 2 published partitions restated (50.0% > 0%)")


def test_limits_must_be_complete_numbers() -> None:
    with pytest.raises(GateConfigError, match="missing max_row_change"):
        GateLimits.from_mapping({key: value for key, value in DEFAULTS.items() if key != "max_row_change"})
    with pytest.raises(GateConfigError, match="max_total_change must be numbers"):
        GateLimits.from_mapping({**DEFAULTS, "max_total_change": "25%"})


def test_a_check_of_one_partition_plugs_in() -> None:
    """How an expectation-aware check is added: it reads the partitions and names the one it flags."""

    def within_expected(figures: gate.GateFigures, limits: GateLimits) -> list[Breach]:
        low, high = limits.settings["expected"]
        return [
            Breach("partition_measure", p.partition_value, p.new_measure, AllowedRange(low, high), "outside")
            for p in figures.partitions
            if not low <= p.new_measure <= high
        ]

    limits = GateLimits.from_mapping({**DEFAULTS, "expected": (Decimal("90"), Decimal("110"))})
    judgement = gate.judge("net_revenue", days(3, restated=1), limits, checks=(*gate.CHECKS, within_expected))
    assert judgement.passed
    judgement = gate.judge(
        "net_revenue",
        [*days(2), partition("2024-03-03", new="150.00", restated=1)],
        limits,
        checks=(*gate.CHECKS, within_expected),
    )
    # the total moves by 50 / 300, within 25 %; the partition leaves its interval
    assert [(b.figure, b.partition) for b in judgement.breaches] == [("partition_measure", "2024-03-03")]


# --------------------------------------------- the adapter method, as the macro calls it


def test_adapter_method_reads_the_figures_query() -> None:
    rows = [  # as run_query returns the gate's SQL: decimals, ints, booleans, text
        {
            "partition_value": "2024-03-08",
            "existed": True,
            "published_rows": 2,
            "published_measure": Decimal("150.00"),
            "new_measure": Decimal("1050.00"),
            "rows_added": 0,
            "rows_restated": 1,
        },
        {
            "partition_value": "2024-03-09",
            "existed": True,
            "published_rows": 1,
            "published_measure": Decimal("60.00"),
            "new_measure": Decimal("60.00"),
            "rows_added": 0,
            "rows_restated": 0,
        },
        {
            "partition_value": "2024-03-10",
            "existed": False,
            "published_rows": 0,
            "published_measure": Decimal("0.00"),
            "new_measure": Decimal("0.00"),
            "rows_added": 0,
            "rows_restated": 0,
        },
    ]
    table = table_from_data_flat(rows, list(rows[0]))
    judgement = LatecomerAdapter.publication_gate_judgement(None, table, "net_revenue", DEFAULTS, "gold_daily_revenue")
    assert judgement["error"] is None and judgement["passed"] is False
    assert judgement["summary"] == "net_revenue total moves by 900.00 on 210.0 (428.6% > 25.0%)"
    assert judgement["breaches"] == [
        {
            "figure": "total_change",
            "partition": None,
            "observed": 900 / 210,
            "allowed": [None, 0.25],
            "message": judgement["summary"],
        }
    ]
    assert judgement["checks"]["published_partitions"] == 2 and judgement["checks"]["restated_partitions"] == 1
    assert judgement["blocked_message"].startswith("Publication gate blocked gold_daily_revenue: net_revenue total")
    broken = LatecomerAdapter.publication_gate_judgement(None, table, "net_revenue", {}, "gold_daily_revenue")
    assert broken["error"].startswith("var publication_gate needs max_restated_share")
