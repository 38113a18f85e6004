"""Publication holds on the default configuration: the partitions the gate
finds abnormal are held in every model that restates them, everything else
publishes in the same build, and approve, reject and a source's own fix each
end where they should.

The small store of store_timeline.py (5 sources, event days 2024-05-01 ..
05-06, the sample's mix of lateness, re-sends, corrections and deletions) is
landed as its sources send it and built once at the schedule's last time:
05-01 final, the others preliminary. Then one batch lands, in which three
sources misbehave beside ordinary late arrivals:
    double   web re-sends 05-06's orders under fresh ids (a double count);
    drop     mobile re-sends 05-04's orders as add_to_cart (orders fall with
             no deletion or correction behind them);
    outlier  partner re-sends 05-05's events with their amounts x100;
    normal   late orders for 05-01 (final), 05-03 and 05-06 (from payments,
             beside web's double count), and a correction of a 05-02 order.
Expected figures come from the plain-Python reference (reference.py), on the
arrivals each step should have published.
"""

from __future__ import annotations

import json
from collections import defaultdict
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from python_jobs.landing import steward
from tests.pytest.conftest import Project
from tests.pytest.store_timeline import Store, build_times, order, store_lines
from tooling.reference import Arrival, expected_daily_revenue

SELECT = "+gold_daily_revenue +gold_hourly_revenue +gold_weekly_revenue +gold_revenue_by_tier publication_holds"
LAST_BUILD = build_times()[-1]
LAST_LANDING = LAST_BUILD - timedelta(minutes=30)
BAD_AT = LAST_BUILD + timedelta(hours=6)
DOUBLE, DROP, OUTLIER = date(2024, 5, 6), date(2024, 5, 4), date(2024, 5, 5)
HELD = {
    DOUBLE: ("web", "closed_growth"),
    DROP: ("mobile", "unexplained_shrink,shrink"),
    OUTLIER: ("partner", "value_outlier"),
}
Money = tuple[int, Decimal, Decimal]


def data_tests(result: Any) -> list[Any]:
    """The data test results of a dbt invocation (not its hooks)."""
    return [r for r in result.result.results if r.node.resource_type == "test"]


def build(store: Store, at: datetime) -> Any:
    result = store.build(at)
    assert result.success
    return result


def sent_before(source: str, day: date, kind: str = "order_placed") -> list[dict[str, Any]]:
    """The source's first sending of each `kind` event of `day` during the schedule."""
    first: dict[str, dict[str, Any]] = {}
    for line in store_lines()[source]:
        record = line.record
        if not record or record.get("is_correction") or record.get("is_deleted") or line.arrival > LAST_LANDING:
            continue
        if record["event_ts"].startswith(day.isoformat()) and record["event_type"] == kind:
            first.setdefault(record["event_id"], record)
    return list(first.values())


def daily(project: Project) -> dict[tuple[date, str], Money]:
    rows = project.table("gold", "gold_daily_revenue").collect()
    return {
        (r.event_date, r.source_system): (r.orders, r.gross_revenue, r.refunds) for r in rows if r.orders or r.refunds
    }


def nonzero(expected: dict) -> dict:
    return {key: value for key, value in expected.items() if value[0] or value[2]}


def expected(arrivals: list[Arrival], by_hour: bool = False) -> dict:
    return nonzero(expected_daily_revenue(arrivals, by_hour=by_hour))


def published_rows(project: Project, table: str, day: date) -> list[tuple]:
    rows = project.sql(f"select * from {{schema}}_gold.{table} where event_date = date'{day}'")
    return sorted(tuple(row) for row in rows)


def holds(project: Project) -> dict[str, dict[str, Any]]:
    return {row.partition_value: row.asDict() for row in project.sql("select * from {schema}_audit.publication_holds")}


def per_date(rows: dict) -> dict[date, Money]:
    totals: dict = defaultdict(lambda: (0, Decimal(0), Decimal(0)))
    for key, (orders, gross, refunds) in rows.items():
        total = totals[key[0]]
        totals[key[0]] = (total[0] + orders, total[1] + gross, total[2] + refunds)
    return dict(totals)


def assert_models_agree(project: Project) -> None:
    """Hourly sums to daily, daily to weekly, by tier to daily: the gold tables agree, held dates included."""
    day_rows = daily(project)
    hourly = project.table("gold", "gold_hourly_revenue").collect()
    hourly_sums: dict = defaultdict(lambda: (0, Decimal(0), Decimal(0)))
    for r in hourly:
        total = hourly_sums[(r.event_date, r.source_system)]
        hourly_sums[(r.event_date, r.source_system)] = (
            total[0] + r.orders,
            total[1] + r.gross_revenue,
            total[2] + r.refunds,
        )
    assert nonzero(dict(hourly_sums)) == day_rows
    weeks: dict = defaultdict(lambda: (0, Decimal(0), Decimal(0)))
    for (day, source), (orders, gross, refunds) in day_rows.items():
        week = (day - timedelta(days=day.weekday()), source)
        weeks[week] = (weeks[week][0] + orders, weeks[week][1] + gross, weeks[week][2] + refunds)
    weekly = project.table("gold", "gold_weekly_revenue").collect()
    assert nonzero({(r.week_start_date, r.source_system): (r.orders, r.gross_revenue, r.refunds) for r in weekly}) == (
        nonzero(dict(weeks))
    )
    tiers = project.table("gold", "gold_revenue_by_tier").collect()
    tier_sums = per_date({(r.event_date, r.tier, r.region): (r.orders, r.gross_revenue, r.refunds) for r in tiers})
    assert nonzero(tier_sums) == nonzero(per_date(day_rows))


@pytest.fixture(scope="module")
def store(module_project: Project, tmp_path_factory: pytest.TempPathFactory) -> Store:
    store = Store(module_project, tmp_path_factory.mktemp("holds"), SELECT)
    lines = store_lines()
    previous = datetime.min.replace(tzinfo=UTC)
    for step, at in enumerate(build_times()):
        landing = at - timedelta(minutes=30)
        store.land_sent(lines, previous, landing, step)
        previous = landing
    build(store, LAST_BUILD)
    assert daily(module_project) == expected(store.arrivals)
    return store


@pytest.fixture(scope="module")
def bad_build(store: Store) -> dict[str, Any]:
    project = store.project
    before = {
        day: {
            table: published_rows(project, table, day)
            for table in ("gold_daily_revenue", "gold_hourly_revenue", "gold_revenue_by_tier")
        }
        for day in HELD
    }
    published_arrivals = list(store.arrivals)
    double = [{**r, "event_id": r["event_id"] + "-again"} for r in sent_before("web", DOUBLE)]
    drop = [{**r, "event_type": "add_to_cart"} for r in sent_before("mobile", DROP)]
    outlier = [{**r, "amount": round(r["amount"] * 100, 2)} for r in sent_before("partner", OUTLIER)]
    first_final = date(2024, 5, 1)
    normal = {
        "payments": [
            order("p-late-1", datetime(2024, 5, 1, 15, tzinfo=UTC), Decimal("41.00")),
            order("p-late-6", datetime(2024, 5, 6, 9, tzinfo=UTC), Decimal("17.50")),
        ],
        "backoffice": [order("b-late-3", datetime(2024, 5, 3, 11, tzinfo=UTC), Decimal("63.25"))],
    }
    store.land("web", double, BAD_AT, "bad_web")
    store.land("mobile", drop, BAD_AT, "bad_mobile")
    store.land("partner", outlier, BAD_AT, "bad_partner")
    for source, records in normal.items():
        store.land(source, records, BAD_AT, f"normal_{source}")
    build(store, BAD_AT + timedelta(minutes=30))
    return {
        "before": before,
        "published_arrivals": published_arrivals,
        "first_final": first_final,
        "messages": list(project.messages),
    }


def test_each_bad_partition_is_held_with_its_check_and_figures(store: Store, bad_build: dict[str, Any]) -> None:
    found = holds(store.project)
    assert {day: (row["group_values"], row["checks_fired"], row["state"]) for day, row in found.items()} == {
        str(day): (source, check, "open") for day, (source, check) in HELD.items()
    }
    everything = expected(store.arrivals)
    published = expected(bad_build["published_arrivals"])
    for day, (source, _) in HELD.items():
        hold = found[str(day)]
        pending = json.loads(hold["pending_values"])[source]
        before = json.loads(hold["published_values"])[source]
        assert (before["count"], Decimal(before["measure"])) == (
            published[(day, source)][0],
            published[(day, source)][1] - published[(day, source)][2],
        )
        new = everything.get((day, source), (0, Decimal(0), Decimal(0)))
        assert (pending["count"], Decimal(pending["measure"])) == (new[0], new[1] - new[2])
        assert hold["first_held_at"] == hold["last_judged_at"]
    end_line = " ".join(m for m in bad_build["messages"] if "Publication holds:" in m)
    assert "3 partition(s) held" in end_line and "python -m python_jobs.landing.steward holds" in end_line
    alert = store.project.dbt("test", "--select", "alert_publication_holds", vars={"as_of": BAD_AT.isoformat()})
    assert [(r.node.name, r.status, r.failures) for r in data_tests(alert)] == [("alert_publication_holds", "warn", 3)]


def test_held_partitions_stay_as_published_in_every_model(store: Store, bad_build: dict[str, Any]) -> None:
    for day, tables in bad_build["before"].items():
        for table, rows in tables.items():
            assert published_rows(store.project, table, day) == rows, (table, day)
    assert_models_agree(store.project)


def test_every_other_partition_publishes_and_equals_the_reference(store: Store, bad_build: dict[str, Any]) -> None:
    gold = daily(store.project)
    everything = expected(store.arrivals)
    others = {key: value for key, value in everything.items() if key[0] not in HELD}
    assert {key: value for key, value in gold.items() if key[0] not in HELD} == others
    hourly = store.project.table("gold", "gold_hourly_revenue").collect()
    assert {
        (r.event_date, r.event_hour, r.source_system): (r.orders, r.gross_revenue, r.refunds)
        for r in hourly
        if r.event_date not in HELD and (r.orders or r.refunds)
    } == {key: value for key, value in expected(store.arrivals, by_hour=True).items() if key[0] not in HELD}
    final_row = store.project.sql(
        "select status, is_restated_after_final, restatement_reason from {schema}_gold.gold_daily_revenue"
        " where event_date = date'2024-05-01' and source_system = 'payments'"
    )[0]
    assert (final_row.status, final_row.is_restated_after_final, final_row.restatement_reason) == (
        "final",
        True,
        "late_arrival",
    )


def test_a_source_taking_back_its_outlier_clears_the_hold(store: Store, bad_build: dict[str, Any]) -> None:
    fixed_at = BAD_AT + timedelta(hours=2)
    fixed = sent_before("partner", OUTLIER)
    store.land("partner", fixed, fixed_at, "fixed_partner")
    build(store, fixed_at + timedelta(minutes=30))
    hold = holds(store.project)[str(OUTLIER)]
    assert (hold["state"], hold["resolution_reason"]) == ("cleared", "figures back within the gate's limits")
    gold = daily(store.project)
    assert {key: value for key, value in gold.items() if key[0] == OUTLIER} == {
        key: value for key, value in expected(store.arrivals).items() if key[0] == OUTLIER
    }
    assert_models_agree(store.project)


def test_approve_publishes_the_pending_values_at_the_next_build(store: Store, bad_build: dict[str, Any]) -> None:
    hold_id = holds(store.project)[str(DROP)]["hold_id"]
    assert (
        steward.main(
            [
                "--schema",
                store.project.schema,
                "--actor",
                "ana",
                "holds",
                "approve",
                hold_id,
                "--reason",
                "mobile reclassified those orders",
            ]
        )
        == 0
    )
    assert holds(store.project)[str(DROP)]["decision"] == "approve"
    build(store, BAD_AT + timedelta(hours=4))
    hold = holds(store.project)[str(DROP)]
    assert (hold["state"], hold["resolution_reason"], hold["resolved_by"]) == (
        "approved",
        "mobile reclassified those orders",
        "ana",
    )
    everything = expected(store.arrivals)
    assert {k: v for k, v in daily(store.project).items() if k[0] == DROP} == {
        k: v for k, v in everything.items() if k[0] == DROP
    }
    reason = store.project.sql(
        "select restatement_reason from {schema}_gold.gold_daily_revenue"
        f" where event_date = date'{DROP}' and source_system = 'mobile'"
    )[0][0]
    assert reason == "late_arrival"
    assert_models_agree(store.project)


def test_reject_quarantines_the_arrivals_behind_it_and_nothing_published_moves(
    store: Store, bad_build: dict[str, Any]
) -> None:
    project = store.project
    hold_id = holds(project)[str(DOUBLE)]["hold_id"]
    doubled_before = published_rows(project, "gold_daily_revenue", DOUBLE)
    assert (
        steward.main(
            [
                "--schema",
                project.schema,
                "--actor",
                "ana",
                "holds",
                "reject",
                hold_id,
                "--reason",
                "web re-sent the day",
                "--as-of",
                (BAD_AT + timedelta(hours=5)).isoformat(),
            ]
        )
        == 0
    )
    hold = holds(project)[str(DOUBLE)]
    assert (hold["state"], hold["resolution_reason"]) == ("rejected", "web re-sent the day")
    rejected = project.sql(
        "select event_id, status, quarantine_reason from {schema}_silver.silver_quarantine"
        " where quarantine_reason = 'publication_hold_rejected'"
    )
    double_ids = {r["event_id"] + "-again" for r in sent_before("web", DOUBLE)}
    assert {r.event_id for r in rejected} == double_ids and {r.status for r in rejected} == {"rejected"}
    store.arrivals = [a for a in store.arrivals if a.file_key != "bad_web.ndjson"]
    web_rows = [row for row in published_rows(project, "gold_daily_revenue", DOUBLE) if "web" in row]
    assert web_rows == [row for row in doubled_before if "web" in row]  # nothing published moved for web
    assert {k: v for k, v in daily(project).items() if k[0] == DOUBLE} == {
        k: v for k, v in expected(store.arrivals).items() if k[0] == DOUBLE
    }
    assert daily(project) == expected(store.arrivals)
    assert_models_agree(project)
    assert not [row for row in holds(project).values() if row["state"] == "open"]


def test_a_correction_cycle_is_quarantined_and_the_build_goes_on(store: Store, bad_build: dict[str, Any]) -> None:
    """Two corrections naming each other never resolve: they wait in quarantine
    with their reason, the build and its data tests pass, and every number
    publishes without them."""
    project = store.project
    at = BAD_AT + timedelta(hours=8)
    ts = datetime(2024, 5, 7, 10, tzinfo=UTC)
    cycle = [
        order("bk-c1", ts, Decimal("70.00"), is_correction=True, corrects_event_id="bk-c2"),
        order("bk-c2", ts, Decimal("80.00"), is_correction=True, corrects_event_id="bk-c1"),
    ]
    late = [order("p-late-7", ts, Decimal("12.00"))]
    store.land("backoffice", cycle, at, "cycle_backoffice")
    store.land("payments", late, at, "late_payments")
    result = project.dbt(
        "build",
        "--select",
        f"{SELECT} silver_quarantine assert_correction_chains_resolve",
        vars={"as_of": (at + timedelta(minutes=30)).isoformat()},
        expect_ok=False,
    )
    assert result.success
    held = project.sql(
        "select event_id, quarantine_reason, status from {schema}_silver.silver_quarantine"
        " where source_system = 'backoffice' and event_id like 'bk-c%'"
    )
    assert sorted(tuple(row) for row in held) == [
        ("bk-c1", "unresolved_correction_chain", "quarantined"),
        ("bk-c2", "unresolved_correction_chain", "quarantined"),
    ]
    assert project.sql("select * from {schema}_silver.silver_events where event_id like 'bk-c%'") == []
    store.arrivals = [a for a in store.arrivals if a.file_key != "cycle_backoffice.ndjson"]
    assert daily(project) == expected(store.arrivals)
    assert_models_agree(project)


def test_every_data_test_passes_on_what_the_holds_left(store: Store, bad_build: dict[str, Any]) -> None:
    """After holds, a clear, an approval, a rejection with its replay and a quarantined
    cycle: conservation of bronze rows, keys, causes adding up to each change."""
    result = store.project.dbt(
        "test", "--exclude", "path:tests/monitoring", vars={"as_of": (BAD_AT + timedelta(hours=9)).isoformat()}
    )
    statuses = {r.node.name: r.status for r in data_tests(result)}
    assert statuses and set(statuses.values()) == {"pass"}, {k: v for k, v in statuses.items() if v != "pass"}
    assert "assert_bronze_rows_conserved" in statuses and any(name.startswith("causes_sum") for name in statuses)
