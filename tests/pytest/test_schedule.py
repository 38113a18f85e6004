"""The default schedule never stops by itself: 45 days of a store built every
48 hours on the default configuration, every gold table equal to the
plain-Python reference at every checkpoint, nothing held.

Five sources, each with its own lateness profile: web mostly within minutes,
mobile flushing offline buffers hours to days late, partner sending files a
day or more late, payments settling over days, backoffice keying in up to a
month late. Every source also re-sends events unchanged, corrects some (one
in ten corrections moves the event to the next day), deletes a few, refunds
some orders, and sends a few events later than the last watermark tier (720
hours: quarantined) and a malformed line now and then. Each build lands what
arrived since the last one, one file per source, 30 minutes before it runs.

At every build the test checks, against reference.py: every (date, source)
of gold_daily_revenue, every (date, hour, source) of gold_hourly_revenue,
the weekly and monthly rollups, and gold_revenue_by_tier's totals per date
(no customer dimension lands, so every event is the `unknown` member). Then
it checks that no partition was held and a build run again changes nothing.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from tests.pytest.conftest import Project
from tests.pytest.store_timeline import Line, Store, cents, gate_checks, order
from tooling.reference import expected_daily_revenue

# Thousands of events: compiled expressions (conftest.compiled_where_many_rows).
pytestmark = pytest.mark.many_rows

SELECT = (
    "+gold_daily_revenue +gold_hourly_revenue +gold_weekly_revenue +gold_monthly_revenue +gold_revenue_by_tier"
    " publication_holds"
)
FIRST_DAY = datetime(2024, 3, 1, tzinfo=UTC)
EVENT_DAYS = 45
BUILD_EVERY = timedelta(hours=48)
HOUR = 3600.0
DAY = 24 * HOUR


def minutes_to_hours(rng: random.Random) -> float:
    return rng.uniform(60, 3 * HOUR) if rng.random() < 0.9 else rng.uniform(3 * HOUR, 20 * HOUR)


# Seconds late, per source: a draw from its own mix.
PROFILES: dict[str, tuple[int, Callable[[random.Random], float]]] = {
    "web": (14, lambda rng: minutes_to_hours(rng) if rng.random() < 0.97 else rng.uniform(2 * DAY, 29 * DAY)),
    "mobile": (
        10,
        lambda rng: (
            rng.uniform(60, HOUR)
            if rng.random() < 0.7
            else rng.uniform(HOUR, 30 * HOUR)
            if rng.random() < 0.85
            else rng.uniform(30 * HOUR, 6 * DAY)
        ),
    ),
    "partner": (
        8,
        lambda rng: rng.uniform(20 * HOUR, 30 * HOUR) if rng.random() < 0.9 else rng.uniform(2 * DAY, 12 * DAY),
    ),
    "payments": (6, lambda rng: rng.uniform(60, 8 * HOUR) if rng.random() < 0.85 else rng.uniform(DAY, 20 * DAY)),
    "backoffice": (
        5,
        lambda rng: rng.uniform(HOUR, 20 * HOUR) if rng.random() < 0.85 else rng.uniform(3 * DAY, 29.5 * DAY),
    ),
}


def store_lines(seed: int = 45) -> dict[str, list[Line]]:
    """Every line each source sends over the 45 days, with when it sends it."""
    rng = random.Random(seed)
    lines: dict[str, list[Line]] = {source: [] for source in PROFILES}
    for source, (per_day, late) in PROFILES.items():
        for day in range(EVENT_DAYS):
            start = FIRST_DAY + timedelta(days=day)
            for number in range(per_day + rng.randint(-2, 3)):
                event_id = f"{source[0]}{day}-{number}"
                ts = start + timedelta(seconds=rng.randrange(86_400))
                amount = Decimal(rng.randint(1_000, 20_000)) / 100
                sent = ts + timedelta(seconds=late(rng))
                record = order(event_id, ts, amount)
                lines[source].append(Line(sent, record))
                draw = rng.random()
                if draw < 0.05:  # re-sent unchanged
                    lines[source].append(Line(sent + timedelta(hours=rng.uniform(1, 72)), record))
                elif draw < 0.08:  # corrected, one in ten to the next day
                    moved = rng.random() < 0.1
                    fixed = order(
                        f"{event_id}c",
                        ts + timedelta(days=1 if moved else 0),
                        cents(amount * Decimal("1.1")),
                        is_correction=True,
                        corrects_event_id=event_id,
                    )
                    lines[source].append(Line(sent + timedelta(hours=rng.uniform(2, 96)), fixed))
                elif draw < 0.10:  # deleted
                    lines[source].append(
                        Line(sent + timedelta(hours=rng.uniform(2, 72)), {**record, "is_deleted": True})
                    )
                if rng.random() < 0.07:  # part refunded a few hours later
                    refund = order(f"{event_id}r", ts + timedelta(hours=3), cents(amount / 4), kind="refund")
                    lines[source].append(Line(sent + timedelta(hours=3) + timedelta(seconds=late(rng)), refund))
            if rng.random() < 0.3:  # browsing, which no revenue model counts
                view = order(f"{source[0]}{day}-v", start + timedelta(hours=12), Decimal(0), kind="page_view")
                lines[source].append(
                    Line(start + timedelta(hours=13), {k: v for k, v in view.items() if k != "amount"})
                )
            if rng.random() < 0.04:  # later than the last tier: quarantined
                old = order(f"{source[0]}{day}-old", start - timedelta(days=31), Decimal("19.99"))
                lines[source].append(Line(start + timedelta(hours=6), old))
            if rng.random() < 0.03:  # a truncated line: quarantined
                lines[source].append(Line(start + timedelta(hours=7), {}))
    return lines


def build_times() -> list[datetime]:
    end = FIRST_DAY + timedelta(days=EVENT_DAYS)
    times, at = [], FIRST_DAY + BUILD_EVERY
    while at <= end:
        times.append(at)
        at += BUILD_EVERY
    return times


Money = tuple[int, Decimal, Decimal]


def nonzero(rows: dict) -> dict:
    return {key: value for key, value in rows.items() if value[0] or value[2]}


def money(row: Any) -> Money:
    return (row.orders, row.gross_revenue, row.refunds)


def rolled(rows: dict[tuple, Money], key: Callable[[tuple], tuple]) -> dict[tuple, Money]:
    totals: dict = defaultdict(lambda: (0, Decimal(0), Decimal(0)))
    for cell, (orders, gross, refunds) in rows.items():
        total = totals[key(cell)]
        totals[key(cell)] = (total[0] + orders, total[1] + gross, total[2] + refunds)
    return nonzero(dict(totals))


def gold(project: Project, table: str, *keys: str) -> dict[tuple, Money]:
    rows = project.table("gold", table).collect()
    return nonzero({tuple(getattr(row, key) for key in keys): money(row) for row in rows})


def check_against_reference(store: Store) -> int:
    """Every gold table equals the reference; returns the partitions compared."""
    project = store.project
    daily = nonzero(expected_daily_revenue(store.arrivals))
    hourly = nonzero(expected_daily_revenue(store.arrivals, by_hour=True))
    assert gold(project, "gold_daily_revenue", "event_date", "source_system") == daily
    assert gold(project, "gold_hourly_revenue", "event_date", "event_hour", "source_system") == hourly
    week = rolled(daily, lambda cell: (cell[0] - timedelta(days=cell[0].weekday()), cell[1]))
    assert gold(project, "gold_weekly_revenue", "week_start_date", "source_system") == week
    month = rolled(daily, lambda cell: (cell[0].replace(day=1), cell[1]))
    assert gold(project, "gold_monthly_revenue", "month_start_date", "source_system") == month
    by_tier = gold(project, "gold_revenue_by_tier", "event_date", "tier", "region")
    assert rolled(by_tier, lambda cell: (cell[0],)) == rolled(daily, lambda cell: (cell[0],))
    return len(daily) + len(hourly) + len(week) + len(month) + len(by_tier)


@pytest.fixture(scope="module")
def schedule(module_project: Project, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    store = Store(module_project, tmp_path_factory.mktemp("schedule"), SELECT)
    lines = store_lines()
    previous = datetime.min.replace(tzinfo=UTC)
    checked, builds, judged = [], 0, 0
    for step, at in enumerate(build_times()):
        landing = at - timedelta(minutes=30)
        store.land_sent(lines, previous, landing, step)
        previous = landing
        result = store.build(at, expect_ok=False)
        assert result.success, f"build {step} at {at} failed: {store.project.messages[-5:]}"
        builds += 1
        judged += sum(check["changed_groups"] for check in gate_checks(store.project.messages, "gold_daily_revenue"))
        checked.append(check_against_reference(store))
    before = sorted(tuple(r) for r in module_project.sql("select * from {schema}_gold.gold_daily_revenue"))
    assert store.build(build_times()[-1]).success
    after = sorted(tuple(r) for r in module_project.sql("select * from {schema}_gold.gold_daily_revenue"))
    return {
        "store": store,
        "builds": builds,
        "checked": checked,
        "judged": judged,
        "rerun_unchanged": before == after,
    }


def test_every_build_publishes_numbers_equal_to_the_reference(schedule: dict[str, Any]) -> None:
    assert schedule["builds"] == len(build_times()) == 22
    assert min(schedule["checked"]) > 0
    # the gate judged published groups that changed, and held none of them
    assert schedule["judged"] > 100
    print(
        f"schedule: {schedule['builds']} builds, {schedule['judged']} changed (date, source) groups judged by the"
        f" gate, {sum(schedule['checked'])} partitions compared with the reference"
    )


def test_nothing_is_held_and_late_finals_are_restated_and_flagged(schedule: dict[str, Any]) -> None:
    project = schedule["store"].project
    assert project.sql("select * from {schema}_audit.publication_holds") == []
    assert project.sql("select * from {schema}_audit.publication_gate_log") == []
    flagged = project.sql(
        "select count(*) from {schema}_gold.gold_daily_revenue where is_restated_after_final and status = 'final'"
    )[0][0]
    assert flagged > 0  # late arrivals reached final days, and were published, flagged


def test_the_store_is_what_the_issue_describes(schedule: dict[str, Any]) -> None:
    """The lateness the schedule carried: minutes to 30 days, some beyond the last tier."""
    arrivals = schedule["store"].arrivals
    late = [
        (a.arrival - datetime.fromisoformat(a.record["event_ts"])).total_seconds()
        for a in arrivals
        if a.record and a.record.get("event_ts")
    ]
    assert min(late) < HOUR and max(late) > 30 * DAY
    assert sum(1 for seconds in late if 7 * DAY < seconds <= 30 * DAY) >= 10  # late enough to reach final days
    last_day = (FIRST_DAY + timedelta(days=EVENT_DAYS - 1)).date()
    assert date(2024, 3, 1) <= last_day


def test_a_build_run_again_changes_nothing(schedule: dict[str, Any]) -> None:
    assert schedule["rerun_unchanged"]
