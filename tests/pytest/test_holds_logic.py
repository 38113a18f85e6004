"""Publication holds without Spark: python_jobs.core.holds.decide on the gate's
judgement and the open holds, with the events and held partitions worked out
by hand. Builds that hold, clear, approve and reject run with Spark in
tests/pytest/test_publication_holds.py.
"""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from python_jobs.core import holds
from python_jobs.core.holds import OpenHold
from tests.pytest.test_gate_logic import LIMITS, days, group, judge

# A closed day counted twice (web, 20 -> 40 orders), beside six normal final days
# and a preliminary day gaining its late tail (+20 %).
DOUBLED = group("2024-03-07", "200.00", "400.00", status="preliminary", orders=20, new_orders=40)
TAIL = group("2024-03-08", "100.00", "120.00", status="preliminary", orders=10, new_orders=12)


def decide(*groups, open_holds=(), override=None) -> holds.HoldDecision:
    return holds.decide(judge([*days(6), *groups]), list(open_holds), "gold_daily_revenue", "run-1", override, "ci")


def test_a_breach_opens_a_hold_on_its_partition_alone() -> None:
    decision = decide(DOUBLED, TAIL)
    assert decision.held_partitions == ["2024-03-07"]
    (event,) = decision.events
    assert (event.event, event.groups, event.checks_fired, event.reasons) == (
        "held",
        ("web",),
        ("closed_growth",),
        ("late_arrival",),
    )
    assert event.hold_id == holds.new_hold_id("gold_daily_revenue", "2024-03-07", "run-1")
    row = event.as_dict()
    assert json.loads(row["published_values"]) == {"web": {"count": 20, "measure": "200.00", "status": "preliminary"}}
    assert json.loads(row["pending_values"]) == {"web": {"count": 40, "measure": "400.00"}}
    assert "orders grow from 20 to 40" in row["breaches"]


def test_an_open_hold_still_abnormal_is_judged_again_under_its_own_id() -> None:
    decision = decide(DOUBLED, open_holds=[OpenHold("h-7", "2024-03-07")])
    assert [(e.hold_id, e.event) for e in decision.events] == [("h-7", "judged")]
    assert decision.held_partitions == ["2024-03-07"]


def test_an_open_hold_back_to_normal_clears_and_publishes() -> None:
    # the source deleted the duplicates it sent: the day now gains only its tail
    back = group("2024-03-07", "200.00", "220.00", status="preliminary", orders=20, new_orders=22)
    decision = decide(back, open_holds=[OpenHold("h-7", "2024-03-07")])
    assert [(e.hold_id, e.event, e.resolution_reason) for e in decision.events] == [
        ("h-7", "cleared", "figures back within the gate's limits")
    ]
    assert decision.held_partitions == []
    # nothing left to write on the date at all (recomputed as published): cleared too
    assert [e.event for e in decide(open_holds=[OpenHold("h-7", "2024-03-07")]).events] == ["cleared"]


def test_approve_publishes_whatever_the_gate_says() -> None:
    approved = OpenHold("h-7", "2024-03-07", decision="approve", decision_reason="promo day", decided_by="ana")
    decision = decide(DOUBLED, open_holds=[approved])
    (event,) = decision.events
    assert (event.hold_id, event.event, event.resolution_reason, event.actor) == ("h-7", "approved", "promo day", "ana")
    assert event.checks_fired == ("closed_growth",)  # what was approved, on the record
    assert decision.held_partitions == []


def test_reject_closes_the_hold_and_what_still_breaches_is_a_new_one() -> None:
    rejected = OpenHold("h-7", "2024-03-07", decision="reject", decision_reason="re-sent", decided_by="ana")
    back = group("2024-03-07", "200.00", "200.00", status="preliminary", orders=20)
    assert [(e.hold_id, e.event) for e in decide(back, open_holds=[rejected]).events] == [("h-7", "rejected")]
    again = decide(DOUBLED, open_holds=[rejected])
    assert [(e.hold_id, e.event) for e in again.events] == [
        ("h-7", "rejected"),
        (holds.new_hold_id("gold_daily_revenue", "2024-03-07", "run-1"), "held"),
    ]
    assert again.held_partitions == ["2024-03-07"]


def test_an_override_publishes_what_it_would_hold_and_records_why() -> None:
    decision = decide(DOUBLED, override="month close, checked by finance")
    (event,) = decision.events
    assert (event.event, event.resolution_reason, event.actor) == (
        "overridden",
        "month close, checked by finance",
        "ci",
    )
    assert decision.held_partitions == []


def test_holds_are_per_partition_whatever_the_source() -> None:
    mobile = group("2024-03-09", "50.00", "5000.00", source="mobile", status="live", orders=5, new_orders=5)
    history = [group(f"2024-03-0{day}", "50.00", source="mobile", orders=5) for day in range(1, 5)]
    decision = decide(DOUBLED, mobile, *history)
    assert decision.held_partitions == ["2024-03-07", "2024-03-09"]
    assert {e.partition_value: e.checks_fired for e in decision.events} == {
        "2024-03-07": ("closed_growth",),
        "2024-03-09": ("value_outlier",),
    }


def test_unknown_decisions_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown decision 'publish'"):
        OpenHold.from_mapping({"hold_id": "h", "partition_value": "2024-03-07", "decision": "publish"})
    assert LIMITS.setting("max_final_change") is None
    assert Decimal(str(LIMITS.setting("max_closed_growth"))) == Decimal("0.5")
