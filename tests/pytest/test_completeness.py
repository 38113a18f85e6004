"""Completeness estimates: a worked example, and simulated data with a known lateness law.

Expected values are computed by hand or from the lateness distribution
(closed form), never with python_jobs.core.completeness itself.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal

import pytest
from pyspark.sql import DataFrame, SparkSession

from python_jobs.core.completeness import (
    METRICS,
    backtest,
    completeness_at,
    estimate_completeness,
    lateness_summary,
    live_arrival_values,
    order_arrivals,
    update_arrival_values,
)
from python_jobs.core.local_rows import local_rows
from tests.pytest.conftest import Project, version_log

ARRIVALS_SCHEMA = (
    "source_system string, metric string, event_date date, first_arrival_ts timestamp, value decimal(38,2)"
)
SILVER_SCHEMA = (
    "event_id string, source_system string, event_type string, amount decimal(18,2), "
    "event_date date, is_deleted boolean, first_arrival_ts timestamp"
)


def ts(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def by_partition(frame: DataFrame) -> dict[tuple[str, str, str], dict]:
    return {(row.source_system, row.metric, row.event_date.isoformat()): row.asDict() for row in frame.collect()}


# ------------------------------------------------------------- worked example


def test_estimate_by_hand(spark: SparkSession) -> None:
    # Final 24 h after the day ends (48 h after it starts); two reference days.
    rows = [
        # Reference 2024-01-07: 50 by 06:00 of its day, 100 at 48 h; 100 more
        # arrive after the horizon and do not count.
        ("web", "orders", "2024-01-07", "2024-01-07 03:00", 30.0),
        ("web", "orders", "2024-01-07", "2024-01-07 05:59", 20.0),
        ("web", "orders", "2024-01-07", "2024-01-07 07:00", 40.0),
        ("web", "orders", "2024-01-07", "2024-01-08 10:00", 10.0),
        ("web", "orders", "2024-01-07", "2024-01-09 01:00", 100.0),
        # Reference 2024-01-08: 30 by 06:00 (inclusive), 50 in the end.
        ("web", "orders", "2024-01-08", "2024-01-08 06:00", 30.0),
        ("web", "orders", "2024-01-08", "2024-01-08 20:00", 20.0),
        # Open partitions at 2024-01-10 06:00.
        ("web", "orders", "2024-01-09", "2024-01-09 12:00", 70.0),
        ("web", "orders", "2024-01-10", "2024-01-10 02:00", 40.0),
        ("web", "orders", "2024-01-10", "2024-01-10 07:00", 5.0),  # after as_of
        # A source with no history: nothing to estimate from (null case).
        ("mobile", "orders", "2024-01-10", "2024-01-10 01:00", 8.0),
    ]
    arrivals = local_rows(
        spark, [(s, m, date.fromisoformat(d), ts(a), Decimal(str(v))) for s, m, d, a, v in rows], ARRIVALS_SCHEMA
    )
    as_of = ts("2024-01-10 06:00")
    targets = local_rows(
        spark,
        [(s, "orders", date(2024, 1, day), as_of) for s in ("web", "mobile") for day in (9, 10)],
        "source_system string, metric string, event_date date, as_of_ts timestamp",
    )
    got = by_partition(estimate_completeness(arrivals, targets, 24, window_days=2, interval=0.8))

    today = got[("web", "orders", "2024-01-10")]
    assert today["partition_age_hours"] == 6
    assert today["arrived_value"] == 40
    assert today["reference_days"] == 2
    # (50 + 30) / (100 + 50); per-reference ratios 0.5 and 0.6 -> 10th/90th
    # percentiles 0.51 and 0.59.
    assert today["completeness"] == pytest.approx(80 / 150)
    assert today["estimated_final"] == pytest.approx(75)
    assert today["estimated_final_low"] == pytest.approx(40 / 0.59)
    assert today["estimated_final_high"] == pytest.approx(40 / 0.51)

    yesterday = got[("web", "orders", "2024-01-09")]
    # At 30 h the references had 90 of 100 and 50 of 50.
    assert yesterday["completeness"] == pytest.approx(140 / 150)
    assert yesterday["estimated_final"] == pytest.approx(75)
    assert yesterday["estimated_final_low"] == pytest.approx(70 / 0.99)
    assert yesterday["estimated_final_high"] == pytest.approx(70 / 0.91)

    no_history = got[("mobile", "orders", "2024-01-10")]
    assert no_history["arrived_value"] == 8
    assert no_history["reference_days"] == 0
    assert no_history["completeness"] is None
    assert no_history["estimated_final"] is None
    assert got[("mobile", "orders", "2024-01-09")]["arrived_value"] == 0

    # completeness_at builds the same targets: every non-final date per source.
    live = by_partition(completeness_at(arrivals, as_of, 24, window_days=2))
    assert set(live) == set(got)
    assert live[("web", "orders", "2024-01-10")]["estimated_final"] == pytest.approx(75)


def test_order_arrivals_count_live_orders_at_first_arrival(spark: SparkSession) -> None:
    first, later = ts("2024-01-01 10:00"), ts("2024-01-02 09:00")
    silver = local_rows(
        spark,
        [
            ("o1", "web", "order_placed", Decimal("10.00"), date(2024, 1, 1), False, first),
            ("o2", "web", "order_placed", Decimal("2.50"), date(2024, 1, 1), False, first),
            ("o3", "web", "order_placed", Decimal("7.00"), date(2024, 1, 1), False, later),
            ("o4", "web", "order_placed", Decimal("99.00"), date(2024, 1, 1), True, first),
            ("r1", "web", "refund", Decimal("10.00"), date(2024, 1, 1), False, later),
            ("v1", "web", "page_view", None, date(2024, 1, 1), False, first),
        ],
        SILVER_SCHEMA,
    )
    got = {(row.metric, row.first_arrival_ts.astimezone(UTC)): row.value for row in order_arrivals(silver).collect()}
    assert got == {
        ("orders", first): 2,
        ("gross_revenue", first): 12.5,
        ("net_revenue", first): 12.5,
        ("orders", later): 1,
        ("gross_revenue", later): 7,
        # the refund arrived later: 7.00 - 10.00
        ("net_revenue", later): -3,
    }


ARRIVAL_VALUES_SCHEMA = ARRIVALS_SCHEMA + ", is_gone boolean, changed_run_at timestamp"
CHANGES_SCHEMA = "action string, event_date date, previous_event_date date, changed_run_at timestamp"


def test_arrival_values_kept_incrementally(spark: SparkSession) -> None:
    """silver_arrival_values over four runs, merged on its key as dbt does: after each
    run its live rows are the hand-computed aggregation of silver as it then is."""
    a1, a2, a3 = ts("2024-01-01 10:00"), ts("2024-01-02 09:00"), ts("2024-01-05 08:00")
    t1, t2, t3 = ts("2024-01-03 00:00"), ts("2024-01-06 00:00"), ts("2024-01-07 00:00")
    d1, d2, d3, d4 = (date(2024, 1, day) for day in (1, 2, 3, 4))
    table: dict[tuple, tuple] = {}

    def run(silver_rows: list[tuple], change_rows: list[tuple], first: bool = False) -> int:
        silver = local_rows(spark, silver_rows, SILVER_SCHEMA + ", changed_run_at timestamp")
        changes = local_rows(spark, change_rows, CHANGES_SCHEMA)
        current = None if first else local_rows(spark, list(table.values()), ARRIVAL_VALUES_SCHEMA)
        rows = update_arrival_values(current, silver, changes).collect()
        for row in rows:
            table[(row.source_system, row.metric, row.event_date, row.first_arrival_ts)] = tuple(row)
        return len(rows)

    def live() -> dict[tuple, Decimal]:
        frame = live_arrival_values(local_rows(spark, list(table.values()), ARRIVAL_VALUES_SCHEMA))
        return {(r.metric, r.event_date, r.first_arrival_ts.astimezone(UTC)): r.value for r in frame.collect()}

    def values(day: date, arrival: datetime, orders: int, gross: str, net: str) -> dict[tuple, Decimal]:
        figures = {"orders": Decimal(orders), "gross_revenue": Decimal(gross), "net_revenue": Decimal(net)}
        return {(metric, day, arrival): value for metric, value in figures.items()}

    o1 = ["o1", "web", "order_placed", Decimal("10.00"), d1, False, a1, t1]
    o2 = ["o2", "web", "order_placed", Decimal("5.00"), d1, False, a2, t1]
    o3 = ("o3", "web", "order_placed", Decimal("7.00"), d2, False, a1, t1)
    o4 = ("o4", "web", "order_placed", Decimal("4.00"), d4, False, a1, t1)
    run([tuple(o1), tuple(o2), o3, o4], [("insert", day, None, t1) for day in (d1, d1, d2, d4)], first=True)
    assert live() == {**values(d1, a1, 1, "10", "10"), **values(d1, a2, 1, "5", "5"), **values(d2, a1, 1, "7", "7"),
                      **values(d4, a1, 1, "4", "4")}  # fmt: skip

    # o2 deleted; o1 corrected onto d2 (it leaves d1); a late refund on d2; a
    # duplicate on d3. d4 is not touched, and keeps its t1 stamp.
    o1_moved = (*o1[:4], d2, False, a1, t2)
    o2_deleted = (*o2[:5], True, a2, t2)
    r1 = ("r1", "web", "refund", Decimal("3.00"), d2, False, a3, t2)
    changes = [
        ("delete", d1, d1, t2),
        ("correction", d2, d1, t2),
        ("insert", d2, None, t2),
        ("duplicate", d3, None, t2),
    ]
    assert run([o1_moved, o2_deleted, o3, o4, r1], changes) == 12  # 6 recomputed on d2, 6 tombstones on d1
    assert live() == {**values(d2, a1, 2, "17", "17"), **values(d2, a3, 0, "0", "-3"), **values(d4, a1, 1, "4", "4")}
    gone = {(*key[:3], key[3].astimezone(UTC)): row[4] for key, row in table.items() if row[5]}
    assert set(gone) == {("web", m, d1, a) for m in METRICS for a in (a1, a2)} and set(gone.values()) == {0}
    assert {row[6].astimezone(UTC) for key, row in table.items() if key[2] == d4} == {t1}

    # Nothing new: no rows to merge.
    assert run([o1_moved, o2_deleted, o3, o4, r1], changes) == 0

    # o2 restored: its group comes back over its tombstone.
    o2_back = (*o2[:5], False, a2, t3)
    run([o1_moved, o2_back, o3, o4, r1], [*changes, ("correction", d1, d1, t3)])
    assert live() == {**values(d1, a2, 1, "5", "5"), **values(d2, a1, 2, "17", "17"),
                      **values(d2, a3, 0, "0", "-3"), **values(d4, a1, 1, "4", "4")}  # fmt: skip

    # A copy of o4 that had arrived earlier (a0) lands: a duplicate, yet o4's
    # first arrival, and so the arrival its value counts at on d4, moves.
    a0, t4 = ts("2023-12-31 23:00"), ts("2024-01-08 00:00")
    o4_earlier = (*o4[:6], a0, t4)
    run([o1_moved, o2_back, o3, o4_earlier, r1], [*changes, ("duplicate", d4, None, t4)])
    assert live() == {**values(d1, a2, 1, "5", "5"), **values(d2, a1, 2, "17", "17"),
                      **values(d2, a3, 0, "0", "-3"), **values(d4, a0, 1, "4", "4")}  # fmt: skip


def test_lateness_summary_over_the_trailing_window(spark: SparkSession) -> None:
    as_of = ts("2024-01-10 00:00")
    rows = [
        ("web", None, ts("2024-01-09 12:00"), lateness)
        for lateness in (60, 120, 180, 240, 300, 360, 420, 480, 540, 600)
    ] + [
        ("web", "invalid_json", ts("2024-01-09 12:00"), 99_999),  # malformed: ignored
        ("web", None, ts("2024-01-01 12:00"), 99_999),  # before the window
        ("web", None, ts("2024-01-10 00:00:01"), 99_999),  # after as_of
    ]
    bronze = local_rows(
        spark,
        [(s, e, a, a.date(), lat) for s, e, a, lat in rows],
        "source_system string, parse_error string, arrival_ts timestamp, arrival_date date, lateness_seconds bigint",
    )
    (row,) = lateness_summary(bronze, as_of, window_days=3).collect()
    assert (row.source_system, row.lateness_p50_seconds, row.lateness_p90_seconds) == (
        "web",
        300,
        540,
    )


# ---------------------------------------------- simulation with known lateness

MEAN_LATENESS_HOURS = 4.0  # exponential lateness
ORDERS_PER_DAY = 300
BATCH_SECONDS = 900  # files land every 15 minutes
AMOUNT_RANGE = (5.0, 200.0)  # uniform order amounts
HORIZON_HOURS = 72


def expected_completeness(age_hours: float, mu: float = MEAN_LATENESS_HOURS) -> float:
    """Share of a day's events that occurred and arrived within ``age_hours`` of its start.

    Events uniform over the day, lateness exponential with mean ``mu``:
    (1/24) * integral over t in [0, min(a, 24)] of (1 - exp(-(a - t) / mu)) dt.
    """
    m = min(age_hours, 24.0)
    return (m - mu * (math.exp(-(age_hours - m) / mu) - math.exp(-age_hours / mu))) / 24


@dataclass
class Simulation:
    silver: DataFrame
    finals: dict[tuple[str, str], float]  # (event date, metric) -> value it ends with
    first_day: date


def simulate(spark: SparkSession, days: int, seed: int) -> Simulation:
    rng = random.Random(seed)
    first_day = date(2024, 1, 1)
    rows, finals = [], {}
    for offset in range(days):
        day = first_day + timedelta(days=offset)
        start = datetime.combine(day, datetime.min.time(), UTC)
        n = sum(1 for _ in range(ORDERS_PER_DAY * 2) if rng.random() < 0.5)  # ~Binomial
        revenue = Decimal(0)
        for index in range(n):
            event_ts = start + timedelta(seconds=rng.uniform(0, 86_400))
            late = event_ts.timestamp() + 3600 * rng.expovariate(1 / MEAN_LATENESS_HOURS)
            arrival = datetime.fromtimestamp(BATCH_SECONDS * math.ceil(late / BATCH_SECONDS), UTC)
            amount = Decimal(str(round(rng.uniform(*AMOUNT_RANGE), 2)))
            revenue += amount
            rows.append((f"{day}-{index}", "web", "order_placed", amount, day, False, arrival))
        finals[(day.isoformat(), "orders")] = n
        finals[(day.isoformat(), "gross_revenue")] = float(revenue)
        finals[(day.isoformat(), "net_revenue")] = float(revenue)  # no refunds
    return Simulation(spark.createDataFrame(rows, SILVER_SCHEMA), finals, first_day)


def relative_standard_error(p: float, n: float, metric: str) -> float:
    """Binomial thinning: arrived ~ Bin(n, p), so arrived / p has relative sd sqrt((1-p)/(n p));
    a sum of uniform amounts adds a factor sqrt(1 + cv^2)."""
    low, high = AMOUNT_RANGE
    cv2 = ((high - low) ** 2 / 12) / ((high + low) / 2) ** 2 if metric != "orders" else 0
    return math.sqrt((1 - p) / (n * p) * (1 + cv2))


def test_estimate_of_final_value_within_four_standard_errors(spark: SparkSession) -> None:
    window_days = 21
    sim = simulate(spark, days=window_days + 4, seed=7)
    last_day = sim.first_day + timedelta(days=window_days + 3)
    as_of = datetime.combine(last_day, datetime.min.time(), UTC) + timedelta(hours=9)
    arrivals = order_arrivals(sim.silver)
    got = by_partition(completeness_at(arrivals, as_of, HORIZON_HOURS, window_days))

    open_days = sorted({key[2] for key in got})
    assert open_days == [(last_day - timedelta(days=k)).isoformat() for k in (3, 2, 1, 0)]
    report = []
    for (_, metric, day), row in sorted(got.items()):
        age = (as_of - datetime.combine(date.fromisoformat(day), datetime.min.time(), UTC)) / (timedelta(hours=1))
        p = expected_completeness(age)
        final = sim.finals[(day, metric)]
        assert row["reference_days"] == window_days
        # Completeness: the ratio of sums over ~6300 reference orders.
        curve_error = relative_standard_error(p, ORDERS_PER_DAY * window_days, metric)
        assert abs(row["completeness"] - p) <= 4 * curve_error * p
        # Final value: the partition's own thinning plus the curve's error.
        own_error = relative_standard_error(p, sim.finals[(day, "orders")], metric)
        bound = 4 * math.hypot(own_error, curve_error)
        error = row["estimated_final"] / final - 1
        report.append((day, metric, round(age), round(p, 4), round(error, 4), round(bound, 4)))
        assert abs(error) <= bound, report
    print("\n".join(map(str, report)))


def test_backtest_errors_by_horizon(spark: SparkSession) -> None:
    window_days, backtest_days = 14, 14
    # Two days more than the backtest needs at its earliest horizon (-12 h).
    days = window_days + backtest_days + 6
    sim = simulate(spark, days=days, seed=11)
    as_of = datetime.combine(sim.first_day + timedelta(days=days), datetime.min.time(), UTC)
    horizons = [-12.0, 0.0, 6.0, 24.0]
    result = backtest(order_arrivals(sim.silver), as_of, HORIZON_HOURS, window_days, backtest_days, horizons)
    rows = {(row.metric, row.horizon_hours): row for row in result.collect()}
    assert set(rows) == {(m, k) for m in METRICS for k in horizons}
    for (metric, horizon), row in sorted(rows.items()):
        p = expected_completeness(24 + horizon)
        assert row.partitions == backtest_days
        # The partitions really were seen k hours after their day ended.
        assert row.mean_actual_completeness == pytest.approx(p, abs=0.02)
        assert row.mean_estimated_completeness == pytest.approx(p, abs=0.02)
        # Mean absolute error of an unbiased estimate with relative sd s is ~0.8 s.
        sd = relative_standard_error(p, ORDERS_PER_DAY, metric)
        assert row.mean_absolute_relative_error <= 2 * sd + 0.002
        assert abs(row.mean_relative_error) <= 4 * sd / math.sqrt(backtest_days) + 0.002
        print(
            metric,
            horizon,
            round(p, 4),
            round(row.mean_relative_error, 4),
            round(row.mean_absolute_relative_error, 4),
            round(row.interval_coverage, 2),
        )


# ------------------------------------------------------- dbt build, end to end

# Every day: orders at 09:00 (10.00) and 15:00 (20.00) land in that day's 23:00
# file; the 20:00 order (30.00) lands in the next day's. Final after 48 h
# (preliminary_until_tier = daily_close), three reference days.
ORDERS = ((9, "10.00"), (15, "20.00"), (20, "30.00"))


def order_line(day: int, hour: int, amount: str) -> dict:
    return {
        "event_id": f"w-{day}-{hour}",
        "event_type": "order_placed",
        "user_id": f"u{day}{hour}",
        "amount": amount,
        "event_ts": f"2024-01-{day:02d}T{hour:02d}:00:00Z",
    }


def test_dbt_build_publishes_estimates_and_backtest(project: Project, write_ndjson) -> None:
    for day in range(1, 7):
        lines = [order_line(day, hour, amount) for hour, amount in ORDERS[:2]]
        lines += [order_line(day - 1, *ORDERS[2])] if day > 1 else []
        path = write_ndjson(f"web_{day}.ndjson", lines)
        assert project.ingest("web", path, arrival_ts=f"2024-01-{day:02d}T23:00:00+00:00") == 0
    build_vars = {
        "as_of": "2024-01-06T23:30:00+00:00",
        "select": "+gold_completeness +gold_completeness_backtest +gold_daily_revenue",
        "preliminary_until_tier": "daily_close",
        "completeness_window_days": 3,
        "completeness_backtest_days": 2,
        "completeness_backtest_horizons_hours": [-12, 0],
    }
    project.build(**build_vars)
    # The same build again, right after the first: both summaries are left as
    # they are (no new version), the tables having been created on main, and
    # silver_arrival_values runs no Python (skip_if_inputs_unchanged).
    tables = [f"{project.schema}_gold.{table}" for table in ("gold_completeness", "gold_completeness_backtest")]
    tables.append(f"{project.schema}_silver.silver_arrival_values")
    before = {table: version_log(project.spark, table) for table in tables}
    project.build(**build_vars)
    assert {table: version_log(project.spark, table) for table in tables} == before
    assert any(m.startswith("silver_arrival_values: inputs unchanged since its last run") for m in project.messages)

    got = by_partition(project.table("gold", "gold_completeness"))
    assert set(got) == {("web", m, d) for m in METRICS for d in ("2024-01-05", "2024-01-06")}
    daily_revenue = project.table("gold", "gold_daily_revenue").collect()
    revenue = {(row.event_date.isoformat(), metric): row[metric] for row in daily_revenue for metric in METRICS}
    expected = {
        # Jan 5 at 47.5 h: the references had everything by then.
        ("orders", "2024-01-05"): (3, 1.0, 3),
        ("gross_revenue", "2024-01-05"): (60, 1.0, 60),
        ("net_revenue", "2024-01-05"): (60, 1.0, 60),
        # Jan 6 at 23.5 h: the references had the 09:00 and 15:00 orders only.
        ("orders", "2024-01-06"): (2, 2 / 3, 3),
        ("gross_revenue", "2024-01-06"): (30, 0.5, 60),
        ("net_revenue", "2024-01-06"): (30, 0.5, 60),
    }
    for (_, metric, day), row in got.items():
        arrived, completeness, final = expected[(metric, day)]
        assert row["arrived_value"] == arrived == revenue[(day, metric)]
        assert row["completeness"] == pytest.approx(completeness)
        assert row["estimated_final"] == pytest.approx(final)
        # Every reference day filled up the same way: a zero-width interval.
        assert row["estimated_final_low"] == pytest.approx(final)
        assert row["estimated_final_high"] == pytest.approx(final)
        assert row["reference_days"] == 3
        # Bronze lateness over the last 3 days: 8 h, 14 h and 27 h, three times each.
        assert (row["lateness_p50_seconds"], row["lateness_p90_seconds"]) == (14 * 3600, 27 * 3600)

    backtest_rows = {
        (row.metric, row.horizon_hours): row for row in project.table("gold", "gold_completeness_backtest").collect()
    }
    # At -12 h (noon of the day) no reference had anything yet: nothing to score.
    assert set(backtest_rows) == {(metric, 0.0) for metric in METRICS}
    for (metric, _), row in backtest_rows.items():
        # Jan 3 and Jan 4 seen at midnight after their day: 2 of 3 orders, 30 of 60 arrived,
        # and the curve (Jan 1-2) said exactly that.
        assert row.partitions == 2
        assert row.mean_absolute_relative_error == pytest.approx(0)
        assert row.interval_coverage == 1
        share = 2 / 3 if metric == "orders" else 0.5
        assert row.mean_estimated_completeness == pytest.approx(share)
        assert row.mean_actual_completeness == pytest.approx(share)
