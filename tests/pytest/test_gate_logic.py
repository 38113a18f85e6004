"""The publication gate's arithmetic without Spark: python_jobs.core.gate.

Figures are per partition and group (source), as the gate's SQL returns them;
expected figures, breaches and messages are worked out by hand. The limits are
the project's defaults (dbt_project.yml, checked equal to the code's). The
gate inside a build (blocking, the log table, the override) runs with Spark in
tests/pytest/test_gate_schedule.py and tests/pytest/test_backfill.py.
"""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
import yaml
from dbt.adapters.latecomer.impl import LatecomerAdapter
from dbt_common.clients.agate_helper import table_from_data_flat

from python_jobs.core import gate
from python_jobs.core.gate_checks import AllowedRange, Breach
from python_jobs.core.gate_figures import GROUP_DEFAULTS, LIMIT_NAMES, GateConfigError, GateLimits, GroupFigures
from tests.pytest.conftest import ROOT

DEFAULTS = yaml.safe_load((ROOT / "dbt_project.yml").read_text())["vars"]["publication_gate"]
LIMITS = GateLimits.from_mapping(DEFAULTS)
# The options for teams that want final to mean frozen, and the table-wide limits.
FROZEN = GateLimits.from_mapping({**DEFAULTS, "max_final_change": 0})
TABLE = GateLimits.from_mapping(
    {**DEFAULTS, "max_restated_share": 0.5, "max_total_change": 0.25, "max_row_change": 0.5}
)


def group(
    partition: str | None,
    published: str = "100.00",
    new: str | None = None,
    *,
    status: str = "final",
    source: str | None = "web",
    orders: int = 10,
    new_orders: int | None = None,
    rows: int = 1,
    added: int = 0,
    restated: int | None = None,
    existed: bool = True,
    reasons: str = "late_arrival",
) -> GroupFigures:
    """One (partition, source) group: published `published` over `orders`, left at `new` over `new_orders`."""
    new = new if new is not None else published
    new_orders = new_orders if new_orders is not None else orders
    published_measure = Decimal(published) if existed else Decimal(0)
    published_orders = orders if existed else 0
    changed = Decimal(new) != published_measure
    return GroupFigures(
        partition_value=partition,
        group_value=source,
        existed=existed,
        published_status=status if existed else None,
        published_rows=rows if existed else 0,
        published_measure=published_measure,
        measure_change=Decimal(new) - published_measure,
        published_count=published_orders,
        count_change=new_orders - published_orders,
        rows_added=added if existed else rows,
        rows_restated=(int(changed) if existed else 0) if restated is None else restated,
        reasons=frozenset(reasons.split(",")) if reasons and (changed or new_orders != orders) else frozenset(),
    )


def days(count: int, restated: int = 0, status: str = "final", first: int = 1) -> list[GroupFigures]:
    """`count` published days of 100.00 over 10 orders each from March `first`; the first `restated` moved by +1.00."""
    return [
        group(f"2024-03-{day:02d}", new="101.00" if day < first + restated else None, status=status)
        for day in range(first, first + count)
    ]


def judge(groups: list[GroupFigures], limits: GateLimits = LIMITS) -> gate.GateJudgement:
    return gate.judge("net_revenue", groups, limits, count="orders")


def limits(**settings: object) -> GateLimits:
    return GateLimits.from_mapping({**DEFAULTS, **settings})


def figures_of(judgement: gate.GateJudgement) -> list[tuple[str, str | None, str | None]]:
    return [(breach.figure, breach.partition, breach.group) for breach in judgement.breaches]


# --------------------------------------------------- what normal operation does


def test_live_partitions_filling_in_pass() -> None:
    # The first gate's false alarm: yesterday's live partitions filling in moved
    # the whole table's total by 39.7 %. Here they grow 4x and 52x, freely.
    history = days(6, status="final")
    live = [
        group("2024-03-07", "120.00", "520.00", status="live", orders=12, new_orders=52),
        group("2024-03-08", "8.01", "416.02", status="live", orders=1, new_orders=52),
    ]
    judgement = judge([*history, *live])
    assert judgement.passed, judgement.summary
    assert judgement.figures.final_partitions == 6 and judgement.figures.total_change == 0


def test_a_preliminary_partition_may_gain_its_late_tail() -> None:
    # 20 orders when its day closed, 30 now: +50 %, exactly the limit
    judgement = judge(
        [*days(6), group("2024-03-07", "200.00", "300.00", status="preliminary", orders=20, new_orders=30)]
    )
    assert judgement.passed


def test_new_partitions_and_new_groups_of_live_ones_are_publication() -> None:
    judgement = judge(
        [
            *days(7),
            group("2024-03-08", new="500.00", existed=False, new_orders=5, status="live"),
            group("2024-03-09", "100.00", status="live"),
            group("2024-03-09", new="900.00", source="backoffice", existed=False, new_orders=9),
        ]
    )
    assert judgement.passed, judgement.summary


# ------------------------------------------------------------ final partitions


def test_by_default_a_final_partition_takes_what_the_tiers_admit() -> None:
    # the schedule's stop: a final day of 1 order gets a 10-day-late second one
    late = group("2024-03-03", "201.48", "434.54", source="partner", orders=1, new_orders=2)
    assert judge([*days(6), late]).passed
    # a new source in a final day, a correction lowering it: published too
    assert judge([*days(7), group("2024-03-07", new="50.00", source="partner", existed=False, new_orders=1)]).passed
    assert judge([*days(6), group("2024-03-07", "100.00", "90.00", reasons="correction")]).passed


def test_any_change_to_a_final_partition_breaches_when_final_means_frozen() -> None:
    judgement = judge([*days(6), group("2024-03-07", "100.00", "130.00", orders=10, new_orders=11)], FROZEN)
    (breach,) = judgement.breaches
    assert (breach.figure, breach.partition, breach.group) == ("final_change", "2024-03-07", "web")
    assert breach.allowed == AllowedRange(Decimal("100.00"), Decimal("100.00"))
    assert breach.message == (
        "partition 2024-03-07 (web) is final and its net_revenue moves from 100.00 to 130.00, orders from 10 to 11;"
        " expected 100.00 (a final partition may change by 0%; reasons: late_arrival)"
    )


def test_a_new_source_in_a_final_partition_is_a_change_to_it() -> None:
    judgement = judge(
        [*days(7), group("2024-03-07", new="50.00", source="partner", existed=False, new_orders=1)], FROZEN
    )
    assert figures_of(judgement) == [("final_change", "2024-03-07", "partner")]


def test_final_partitions_may_change_for_the_reasons_allowed() -> None:
    backfill = group("2024-03-07", "100.00", "120.00", new_orders=12, reasons="backfill")
    assert judge([*days(6), backfill], FROZEN).passed
    mixed = group("2024-03-07", "100.00", "120.00", new_orders=12, reasons="backfill,late_arrival")
    assert figures_of(judge([*days(6), mixed], FROZEN)) == [("final_change", "2024-03-07", "web")]


def test_max_final_change_allows_a_small_change_and_null_turns_it_off() -> None:
    small = [*days(6), group("2024-03-07", "100.00", "110.00", new_orders=11)]
    assert judge(small, limits(max_final_change=0.1)).passed  # +10 % in measure and orders: at the limit
    assert figures_of(judge(small, limits(max_final_change=0.09))) == [("final_change", "2024-03-07", "web")]
    assert judge(small, limits(max_final_change=None)).passed


# ----------------------------------------------------------------- shrinking


def test_a_fall_in_events_with_no_deletion_or_correction_breaches() -> None:
    judgement = judge([group("2024-03-07", "100.00", "90.00", status="live", new_orders=9)])
    (breach,) = judgement.breaches
    assert breach.figure == "unexplained_shrink" and breach.allowed == AllowedRange(10, None)
    assert breach.message == (
        "partition 2024-03-07 (web): orders fall from 10 to 9 with no deletion or correction or dimension_change"
        " or backfill or replay behind it (reasons: late_arrival); expected at least 10, as late arrivals only"
        " add events"
    )


def test_a_deletion_explains_a_fall_up_to_max_shrink() -> None:
    half = group("2024-03-07", "100.00", "50.00", status="preliminary", new_orders=5, reasons="deletion")
    assert judge([half]).passed  # -50 %: at the limit


def test_a_day_deleted_breaches_even_with_its_deletions() -> None:
    judgement = judge(
        [group("2024-03-07", "240.00", "0.00", status="preliminary", orders=12, new_orders=0, reasons="deletion")]
    )
    (breach,) = judgement.breaches
    assert (breach.figure, breach.observed, breach.allowed) == ("shrink", -1.0, AllowedRange(-0.5, None))
    assert breach.message == (
        "partition 2024-03-07 (web): orders fall from 12 to 0 (-100.0%); expected at least 6"
        " (at most 50.0% fewer; reasons: deletion)"
    )


def test_small_groups_are_left_to_the_other_checks() -> None:
    # 4 published orders, all deleted: below min_count, so not a share
    assert judge(
        [group("2024-03-07", "40.00", "0.00", status="live", orders=4, new_orders=0, reasons="deletion")]
    ).passed


# ------------------------------------------------------------------- growth


def test_a_closed_day_counted_twice_breaches() -> None:
    judgement = judge(
        [*days(6), group("2024-03-07", "200.00", "400.00", status="preliminary", orders=20, new_orders=40)]
    )
    (breach,) = judgement.breaches
    assert (breach.figure, breach.observed, breach.allowed) == ("closed_growth", 1.0, AllowedRange(None, 0.5))
    assert breach.message == (
        "partition 2024-03-07 (web) is preliminary and its orders grow from 20 to 40 (+100.0%); expected at most 30"
        " (its day has closed: at most 50.0% or 5 more; reasons: late_arrival)"
    )
    final = judge([*days(6), group("2024-03-07", "170.00", "340.00", orders=17, new_orders=34)])
    assert [(b.figure, b.message.split(";")[0]) for b in final.breaches] == [
        ("closed_growth", "partition 2024-03-07 (web) is final and its orders grow from 17 to 34 (+100.0%)")
    ]


def test_a_small_source_may_gain_a_few_events_whatever_their_share() -> None:
    # 5 orders when its day closed, 8 now (+60 %): three late orders are a small source's tail
    assert judge([*days(6), group("2024-03-07", "50.00", "80.00", status="preliminary", orders=5, new_orders=8)]).passed
    # 6 more than 6 (+100 %) are past both: at most 6 + max(3, 5) = 11
    (breach,) = judge(
        [*days(6), group("2024-03-07", "60.00", "120.00", status="preliminary", orders=6, new_orders=12)]
    ).breaches
    assert breach.figure == "closed_growth" and "expected at most 11 " in breach.message


def test_a_source_may_have_its_own_settings() -> None:
    # partner delivers most of a day a day late: its closed days may triple; web keeps the default
    own = limits(sources={"Partner": {"max_closed_growth": 2}})
    partner = group("2024-03-07", "100.00", "300.00", source="partner", status="preliminary", orders=10, new_orders=30)
    web = group("2024-03-07", "100.00", "300.00", status="preliminary", orders=10, new_orders=30)
    assert judge([*days(6), partner], own).passed
    assert figures_of(judge([*days(6), web], own)) == [("closed_growth", "2024-03-07", "web")]
    assert figures_of(judge([*days(6), partner])) == [("closed_growth", "2024-03-07", "partner")]
    with pytest.raises(GateConfigError, match="sources.partner: unknown setting max_row_change"):
        limits(sources={"partner": {"max_row_change": 1}})
    with pytest.raises(GateConfigError, match="max_closed_growth must be numbers"):
        limits(sources={"partner": {"max_closed_growth": "lots"}})


def test_growth_of_a_small_preliminary_group_is_not_a_share() -> None:
    assert judge([group("2024-03-07", "40.00", "120.00", status="preliminary", orders=4, new_orders=12)]).passed


# ------------------------------------------------------------ value outliers


def test_amounts_a_hundred_times_too_high_breach_against_the_groups_history() -> None:
    # history: 10.00 per order on each of 6 days; the live day's amounts are x100
    judgement = judge([*days(6), group("2024-03-07", "100.00", "10000.00", status="live")])
    (breach,) = judgement.breaches
    assert (breach.figure, breach.observed, breach.allowed) == ("value_outlier", 1000, AllowedRange(None, 50))
    assert breach.message == (
        "partition 2024-03-07 (web): net_revenue / orders is 1000 (net_revenue 10000.00 over 10); expected at most 50"
        " (5 x 10, the median of its 6 other published partitions; reasons: late_arrival)"
    )


def test_the_typical_value_is_the_groups_own_not_another_sources() -> None:
    # mobile sells at 100.00 an order, web at 10.00: mobile's 100.00 is no outlier
    mobile = [group(f"2024-03-{day:02d}", "1000.00", source="mobile", status="final") for day in range(1, 7)]
    judgement = judge(
        [
            *days(6),
            *mobile,
            group("2024-03-07", "500.00", "1000.00", status="live", source="mobile", orders=5, new_orders=10),
        ]
    )
    assert judgement.passed, judgement.summary


def test_without_history_a_value_is_compared_with_its_published_one_of_enough_events() -> None:
    judgement = judge([group("2024-03-07", "100.00", "700.00", status="preliminary", orders=10, new_orders=12)])
    (breach,) = judgement.breaches
    assert breach.figure == "value_outlier" and breach.allowed == AllowedRange(None, Decimal("50.00"))
    assert "(5 x 10, its published value;" in breach.message


def test_one_or_two_events_are_no_typical_value() -> None:
    # one order of 13.61 published, a second of 140.83 arrives: no history, too few events to judge
    assert judge([group("2024-03-07", "13.61", "154.44", status="live", orders=1, new_orders=2)]).passed


def test_a_late_refund_lowering_the_value_is_no_outlier() -> None:
    assert judge([*days(6), group("2024-03-07", "100.00", "5.00", status="preliminary")]).passed


# -------------------------------------------------- the table, over final partitions


def test_restated_share_of_final_partitions() -> None:
    at_limit = TABLE
    assert judge(days(8, restated=8)).passed  # off by default
    assert judge(days(8, restated=4), at_limit).passed  # 4 / 8 = 0.5
    (breach,) = judge(days(8, restated=5), at_limit).breaches
    assert breach == Breach(
        figure="restated_share",
        partition=None,
        observed=0.625,
        allowed=AllowedRange(None, 0.5),
        message="5 of 8 final partitions restated (62.5% > 50.0%)",
    )
    assert judge(days(6, restated=6), at_limit).passed  # 6 final < 7: not judged


def test_total_and_row_change_of_final_partitions() -> None:
    judgement = judge([group("2024-03-01", "400.00", "500.01", rows=4, added=3)], TABLE)
    assert figures_of(judgement) == [("total_change", None, None), ("row_change", None, None)]
    assert judgement.summary == (
        "net_revenue total over final partitions moves by 100.01 on 400.0 (25.0% > 25.0%); "
        "3 rows added to the 4 of final partitions (75.0% > 50.0%)"
    )


def test_live_and_preliminary_partitions_are_not_in_the_table_figures() -> None:
    figures = judge([*days(3), *days(4, restated=4, status="preliminary", first=10)]).figures
    assert (figures.final_partitions, figures.restated_partitions, figures.total_delta) == (3, 0, 0)


# ------------------------------------------------------------- the whole gate


def test_breaches_come_in_check_order_and_word_the_block() -> None:
    judgement = judge(
        [
            group("2024-03-01", "100.00", "120.00", new_orders=12),
            group("2024-03-02", "240.00", "0.00", status="live", orders=12, new_orders=0, reasons="deletion"),
        ]
    )
    assert figures_of(judgement) == [("shrink", "2024-03-02", "web")]
    frozen = judge(judgement.figures.groups, FROZEN)
    assert figures_of(frozen) == [("final_change", "2024-03-01", "web"), ("shrink", "2024-03-02", "web")]
    assert frozen.summary == "; ".join(breach.message for breach in frozen.breaches)


def test_breaches_name_the_partitions_they_hold() -> None:
    # a group's breach holds its partition; a table-wide one every final partition the write changes
    groups = [*days(8, restated=5), group("2024-03-20", "240.00", "0.00", status="live", orders=12, new_orders=0)]
    named = judge(groups, TABLE).breaches_by_partition()
    assert {partition: [b.figure for b in breaches] for partition, breaches in named.items()} == {
        **{f"2024-03-0{day}": ["restated_share"] for day in range(1, 6)},
        "2024-03-20": ["unexplained_shrink", "shrink"],
    }


def test_checks_are_logged_with_the_limits() -> None:
    checks = judge(days(8, restated=2)).figures.checks(LIMITS)
    assert json.loads(json.dumps(checks)) == {
        "final_partitions": 8,
        "restated_partitions": 2,
        "restated_share": 0.25,
        "published_rows": 8,
        "added_rows": 0,
        "row_change": 0.0,
        "measure": "net_revenue",
        "count": "orders",
        "published_total": 800.0,
        "total_delta": 2.0,
        "total_change": 0.0025,
        "changed_groups": 2,
        "limits": DEFAULTS,
    }


def test_the_code_defaults_are_the_projects() -> None:
    assert {name: DEFAULTS[name] for name in GROUP_DEFAULTS} == {
        name: list(value) if isinstance(value, tuple) else value for name, value in GROUP_DEFAULTS.items()
    }
    # a var naming only the table limits takes the code's per-group defaults
    table_only = GateLimits.from_mapping({name: DEFAULTS[name] for name in LIMIT_NAMES})
    assert table_only.settings == LIMITS.settings


def test_settings_must_be_known_and_well_typed() -> None:
    with pytest.raises(GateConfigError, match="min_published_partitions must be numbers"):
        limits(min_published_partitions=None)
    with pytest.raises(GateConfigError, match="missing max_row_change"):
        GateLimits.from_mapping({key: value for key, value in DEFAULTS.items() if key != "max_row_change"})
    with pytest.raises(GateConfigError, match="max_total_change must be numbers"):
        limits(max_total_change="25%")
    with pytest.raises(GateConfigError, match="max_shrink must be numbers"):
        limits(max_shrink=-0.1)
    with pytest.raises(GateConfigError, match="unknown setting max_growth"):
        limits(max_growth=1)
    with pytest.raises(GateConfigError, match="shrink_reasons must be a list of reasons"):
        limits(shrink_reasons="deletion")


# --------------------------------------------- the adapter method, as the macro calls it


def test_adapter_method_reads_the_figures_query() -> None:
    rows = [  # as run_query returns the gate's SQL: decimals, ints, booleans, text
        {
            "partition_value": "2024-03-08",
            "group_value": "partner",
            "existed": True,
            "published_status": "preliminary",
            "published_rows": 1,
            "published_measure": Decimal("150.00"),
            "measure_change": Decimal("900.00"),
            "published_count": 6,
            "count_change": 0,
            "rows_added": 0,
            "rows_restated": 1,
            "reasons": "correction",
        },
        {
            "partition_value": "2024-03-09",
            "group_value": "partner",
            "existed": True,
            "published_status": "live",
            "published_rows": 1,
            "published_measure": Decimal("60.00"),
            "measure_change": Decimal("0.00"),
            "published_count": 1,
            "count_change": 0,
            "rows_added": 0,
            "rows_restated": 0,
            "reasons": None,
        },
    ]
    table = table_from_data_flat(rows, list(rows[0]))
    no_holds = table_from_data_flat([], ["hold_id", "partition_value", "decision", "decision_reason", "decided_by"])
    judgement = LatecomerAdapter.publication_gate_holds(
        None, table, no_holds, "net_revenue", DEFAULTS, "gold_daily_revenue", "orders"
    )
    assert judgement["error"] is None and judgement["held_partitions"] == ["2024-03-08"]
    # 1050.00 over 6 orders against 25.00 an order as published (no history: one other partition)
    assert judgement["summary"] == (
        "partition 2024-03-08 (partner): net_revenue / orders is 175 (net_revenue 1050.00 over 6); expected at most"
        " 125 (5 x 25, its published value; reasons: correction)"
    )
    (breach,) = judgement["breaches"]
    assert (breach["figure"], breach["partition"], breach["group"]) == ("value_outlier", "2024-03-08", "partner")
    assert breach["allowed"] == [None, Decimal("125")]
    assert judgement["checks"]["final_partitions"] == 0 and judgement["checks"]["changed_groups"] == 1
    ((event),) = judgement["events"]
    assert (event["partition_value"], event["event"], event["group_values"], event["checks_fired"]) == (
        "2024-03-08", "held", "partner", "value_outlier")  # fmt: skip
    assert json.loads(event["published_values"]) == {
        "partner": {"count": 6, "measure": "150.00", "status": "preliminary"}
    }
    assert json.loads(event["pending_values"]) == {"partner": {"count": 6, "measure": "1050.00"}}
    broken = LatecomerAdapter.publication_gate_holds(None, table, no_holds, "net_revenue", {}, "gold_daily_revenue")
    assert broken["error"].startswith("var publication_gate needs max_restated_share")
