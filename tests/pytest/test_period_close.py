"""Period close on a schedule (var period_close: adjust), against the
plain-Python reference.

The small store of store_timeline.py is built on its schedule (5 builds
through 05-09) with period_close adjust, then two late batches change days
that are final by then, each before a build:
    05-10 18:00  web sends a late order for 05-01 and one for 05-03, mobile
                 deletes a 05-01 order, partner corrects a 05-02 amount;
    05-13 06:00  partner corrects the same order again, payments refunds part
                 of a 05-04 order, web sends a late order for 05-06.
The builds at 05-11 00:00 (05-01 .. 05-03 final) and 05-13 12:00 (05-01 ..
05-05 final, and the week of 04-29 with them) must leave every final day
as published and book each change in gold_daily_revenue_adjustments on the
day of the build; a week holds its days and the adjustments booked in it.

The reference replays the same rule in plain Python: at each build, a day
final at its as_of keeps its published values (the first build publishes
everything) and is booked its truth minus what is already accounted for.

The same timeline shows that the publication gate, with its default limits,
never blocks normal operation on a schedule: days going from live to
preliminary to final, late data, corrections and deletions. Its first five
builds are what they would be under period_close restate (no final day
changes before the sixth), and the last two change final days.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from tests.pytest.conftest import Project
from tests.pytest.store_timeline import EVENT_DAYS, FIRST_DAY, Store, build_times, gate_checks, order, store_lines
from tests.pytest.test_late_arrival_sample import expected_status
from tooling.reference import expected_daily_revenue

# Thousands of events: compiled expressions (conftest.compiled_where_many_rows).
pytestmark = pytest.mark.many_rows

SELECT = "+gold_daily_revenue_adjustments +gold_weekly_revenue +gold_monthly_revenue +gold_rollup_revenue_causes"
Money = tuple[int, Decimal, Decimal]  # orders, gross revenue, refunds


def day(n: int) -> datetime:
    return FIRST_DAY + timedelta(days=n)


def late_batches() -> list[tuple[datetime, datetime, dict[str, list[dict[str, Any]]]]]:
    """(landing, build, lines per source) of the two batches after the schedule."""
    lines = store_lines()

    def untouched_order(source: str, event_day: int) -> dict[str, Any]:
        """The source's first order of the day that the timeline never re-sends, corrects or deletes."""
        records = [line.record for line in lines[source]]
        touched = {r.get("corrects_event_id") for r in records} | {
            r.get("event_id") for r in records if r.get("is_deleted")
        }
        sent: dict[str, int] = defaultdict(int)
        for r in records:
            sent[r.get("event_id")] += 1
        return next(
            r
            for r in records
            if r.get("event_id", "").startswith(f"{source[0]}{event_day}-")
            and r["event_type"] == "order_placed"
            and not r.get("is_correction")
            and r["event_id"] not in touched
            and sent[r["event_id"]] == 1
        )

    deleted, corrected, refunded = (
        untouched_order("mobile", 0),
        untouched_order("partner", 1),
        untouched_order("payments", 3),
    )
    fixed = {
        **corrected,
        "event_id": corrected["event_id"] + "x",
        "is_correction": True,
        "corrects_event_id": corrected["event_id"],
    }
    first = {
        "web": [
            order("w0-late", day(0) + timedelta(hours=20), Decimal("41.00")),
            order("w2-late", day(2) + timedelta(hours=9), Decimal("13.50")),
        ],
        "mobile": [{**deleted, "is_deleted": True}],
        "partner": [{**fixed, "amount": round(corrected["amount"] * 2, 2)}],
    }
    again = {**fixed, "event_id": fixed["event_id"] + "x", "corrects_event_id": fixed["event_id"], "amount": 1.25}
    refund = order(
        refunded["event_id"] + "-late-r", datetime.fromisoformat(refunded["event_ts"]), Decimal("2.00"), kind="refund"
    )
    second = {
        "partner": [again],
        "payments": [refund],
        "web": [order("w5-late", day(5) + timedelta(hours=15), Decimal("7.00"))],
    }
    return [
        (day(9) + timedelta(hours=18), day(10), first),
        (day(12) + timedelta(hours=6), day(12) + timedelta(hours=12), second),
    ]


def final(event_date: date, as_of: datetime) -> bool:
    return expected_status(event_date, as_of.isoformat()) == "final"


def add(a: Money, b: Money, sign: int = 1) -> Money:
    return (a[0] + sign * b[0], a[1] + sign * b[1], a[2] + sign * b[2])


ZERO: Money = (0, Decimal("0"), Decimal("0"))


class Reference:
    """What each build publishes under period_close adjust, in plain Python."""

    def __init__(self) -> None:
        self.published: dict[tuple[date, str], Money] = {}
        self.bookings: list[tuple[date, date, str, Money]] = []  # booked, adjusted day, source, amount
        self.weeks: dict[tuple[date, str], Money] = {}

    def build(self, truth: dict[tuple[date, str], Money], as_of: datetime, first: bool) -> None:
        for key in set(truth) | set(self.published):
            now = truth.get(key, ZERO)
            if first or not final(key[0], as_of):
                self.published[key] = now
                continue
            accounted = self.published.get(key, ZERO)
            for _, adjusted, source, amount in self.bookings:
                if (adjusted, source) == key:
                    accounted = add(accounted, amount)
            owed = add(now, accounted, -1)
            if owed != ZERO:
                self.bookings.append((as_of.date(), key[0], key[1], owed))
        weeks: dict[tuple[date, str], Money] = defaultdict(lambda: ZERO)
        for (event_date, source), value in self.published.items():
            weeks[(week_of(event_date), source)] = add(weeks[(week_of(event_date), source)], value)
        for booked, _, source, amount in self.bookings:
            weeks[(week_of(booked), source)] = add(weeks[(week_of(booked), source)], amount)
        for key, value in weeks.items():
            if first or not final(key[0] + timedelta(days=6), as_of):
                self.weeks[key] = value


def week_of(d: date) -> date:
    return d - timedelta(days=d.weekday())


def nonzero(rows: dict) -> dict:
    return {key: value for key, value in rows.items() if value[0] or value[1] or value[2]}


@pytest.fixture(scope="module")
def adjusted(module_project: Project, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Runs the whole timeline; returns the reference and what the tables held after each build."""
    store = Store(module_project, tmp_path_factory.mktemp("period_close"), SELECT)
    reference = Reference()
    lines = store_lines()
    snapshots = []
    schedule = [(at - timedelta(minutes=30), at, None) for at in build_times()]
    schedule += [(landing, at, batch) for landing, at, batch in late_batches()]
    previous = datetime.min.replace(tzinfo=FIRST_DAY.tzinfo)
    for step, (landing, at, batch) in enumerate(schedule):
        due = batch or {
            source: [line.record for line in sent if previous < line.arrival <= landing]
            for source, sent in lines.items()
        }
        for source, records in due.items():
            if records:
                store.land(source, records, landing, f"{source}_{step:02d}")
        previous = landing
        store.build(at, period_close="adjust")
        reference.build(expected_daily_revenue(store.arrivals), at, first=step == 0)
        snapshots.append(
            {
                "at": at,
                "daily": {
                    (r.event_date, r.source_system): r
                    for r in store.project.table("gold", "gold_daily_revenue").collect()
                },
                "weekly": {
                    (r.week_start_date, r.source_system): r
                    for r in store.project.table("gold", "gold_weekly_revenue").collect()
                },
                "gate_checks": gate_checks(store.project.messages, "gold_daily_revenue"),
            }
        )
        if step == len(build_times()) - 1:
            scheduled = {"gold": store.gold(), "expected": store.expected()}
    adjustments = store.project.table("gold", "gold_daily_revenue_adjustments").collect()
    monthly = store.project.table("gold", "gold_monthly_revenue").collect()
    return {
        "store": store,
        "reference": reference,
        "snapshots": snapshots,
        "adjustments": adjustments,
        "monthly": monthly,
        "scheduled": scheduled,
    }


def money(row: Any) -> Money:
    return (row.orders, row.gross_revenue, row.refunds)


def test_scheduled_builds_never_block(adjusted: dict[str, Any]) -> None:
    """Every build passed (the fixture fails otherwise), none was logged, and the
    gate did judge changes: the schedule's builds publish the reference."""
    snapshots = adjusted["snapshots"]
    assert adjusted["store"].gate_log() == []
    judged = sum(check["changed_groups"] for snapshot in snapshots for check in snapshot["gate_checks"])
    assert judged > 20, "the gate judged too few changes for this test to mean anything"
    assert {row.status for snapshot in snapshots for row in snapshot["daily"].values()} == {
        "live",
        "preliminary",
        "final",
    }
    scheduled = adjusted["scheduled"]
    assert scheduled["gold"] == scheduled["expected"]
    last = snapshots[len(build_times()) - 1]["daily"]
    statuses = {event_date: row.status for (event_date, _), row in last.items()}
    assert [statuses[day(n).date()] for n in range(EVENT_DAYS)] == ["final"] + ["preliminary"] * 5


def test_final_days_keep_their_numbers_and_changes_are_booked(adjusted: dict[str, Any]) -> None:
    reference, snapshots = adjusted["reference"], adjusted["snapshots"]
    last = snapshots[-1]
    assert nonzero({key: money(row) for key, row in last["daily"].items()}) == nonzero(reference.published)
    booked = sorted((r.booked_date, r.adjusted_event_date, r.source_system, money(r)) for r in adjusted["adjustments"])
    assert booked == sorted(reference.bookings)
    # Each batch changed final days, and each booking is on its build's day.
    assert {b[0] for b in booked} == {day(10).date(), day(12).date()}
    assert len(booked) >= 5
    for r in adjusted["adjustments"]:
        assert r.net_revenue == r.gross_revenue - r.refunds
        assert r.adjustment_reason in {"late_arrival", "correction", "deletion"}


def test_a_final_day_never_changes_once_final(adjusted: dict[str, Any]) -> None:
    snapshots = adjusted["snapshots"]
    checked = 0
    for earlier, later in zip(snapshots, snapshots[1:], strict=False):
        for key, row in earlier["daily"].items():
            if row.status == "final":
                kept = later["daily"][key]
                assert (money(kept), kept.version, kept.last_changed_at) == (
                    money(row),
                    row.version,
                    row.last_changed_at,
                )
                checked += 1
    assert checked >= 15


def test_weeks_hold_their_days_and_bookings_and_a_closed_week_is_kept(adjusted: dict[str, Any]) -> None:
    reference, snapshots = adjusted["reference"], adjusted["snapshots"]
    last = snapshots[-1]
    assert nonzero({key: money(row) for key, row in last["weekly"].items()}) == nonzero(reference.weeks)
    closed_week = week_of(FIRST_DAY.date())
    before, after = snapshots[-2]["weekly"], last["weekly"]
    assert {r.status for (week, _), r in after.items() if week == closed_week} == {"final"}
    for key, row in before.items():
        if key[0] == closed_week:
            assert (money(after[key]), after[key].version) == (money(row), row.version)


def test_a_weeks_causes_are_its_days_changes_and_the_bookings_in_it(adjusted: dict[str, Any]) -> None:
    """gold_rollup_revenue_causes: over all its versions, a week's causes add up
    to its published values, and its adjustment causes are the reference's
    bookings, each in the week it was booked in, naming the day it belongs to."""
    causes = adjusted["store"].project.table("audit", "gold_rollup_revenue_causes").where("grain = 'week'").collect()
    explained: dict[tuple, Money] = defaultdict(lambda: ZERO)
    for cause in causes:
        explained[(cause.period_start_date, cause.source_system)] = add(
            explained[(cause.period_start_date, cause.source_system)], money(cause)
        )
    published = {key: money(row) for key, row in adjusted["snapshots"][-1]["weekly"].items()}
    assert nonzero(dict(explained)) == nonzero(published)
    booked = sorted(
        (c.period_start_date, c.change_reason.split(":")[0], c.source_system, money(c))
        for c in causes
        if c.action == "adjustment"
    )
    expected = sorted(
        (week_of(booked_on), f"for {belongs_to}", source, value)
        for booked_on, belongs_to, source, value in adjusted["reference"].bookings
    )
    assert booked == expected


def test_every_period_together_sums_to_the_truth(adjusted: dict[str, Any]) -> None:
    truth = expected_daily_revenue(adjusted["store"].arrivals)
    by_source: dict[str, Money] = defaultdict(lambda: ZERO)
    for (_, source), value in truth.items():
        by_source[source] = add(by_source[source], value)
    monthly: dict[str, Money] = defaultdict(lambda: ZERO)
    for row in adjusted["monthly"]:
        monthly[row.source_system] = add(monthly[row.source_system], money(row))
    assert nonzero(dict(monthly)) == nonzero(dict(by_source))
    # ... while the closed days alone do not: the batches changed them.
    daily: dict[str, Money] = defaultdict(lambda: ZERO)
    for (_, source), row in adjusted["snapshots"][-1]["daily"].items():
        daily[source] = add(daily[source], money(row))
    assert nonzero(dict(daily)) != nonzero(dict(by_source))


def test_moving_back_to_restate_with_bookings_fails_and_publishes_nothing(adjusted: dict[str, Any]) -> None:
    store: Store = adjusted["store"]
    daily = sorted(tuple(r) for r in store.project.table("gold", "gold_daily_revenue").collect())
    weekly = sorted(tuple(r) for r in store.project.table("gold", "gold_weekly_revenue").collect())
    last_build = adjusted["snapshots"][-1]["at"]
    assert not store.build(last_build, expect_ok=False, period_close="restate").success
    message = " ".join(store.project.messages)
    assert "holds adjustments booked under period_close adjust" in message
    assert "--full-refresh --select gold_daily_revenue+" in message
    assert sorted(tuple(r) for r in store.project.table("gold", "gold_daily_revenue").collect()) == daily
    assert sorted(tuple(r) for r in store.project.table("gold", "gold_weekly_revenue").collect()) == weekly
