"""The publication gate with its default limits: each kind of bad batch is
blocked, with a message naming the partition, the figure and the expected
range. (That normal late data on a schedule never blocks it is checked on the
same store's timeline in test_period_close.py.)

The small store of store_timeline.py: 5 sources, 6 event days (2024-05-01 ..
05-06), the sample's mix of lateness, re-sends, corrections, deletions,
refunds and quarantined lines. Each source's lines land as they arrive, in
one file per source at each of the schedule's builds, and one build at the
schedule's last time publishes them all: one day final and five preliminary.
The daily model and a rollup of it are built (the hourly, monthly and by-tier
models run the same gate code).

Then three bad batches land together and the next build is blocked, its
message naming each (a breach is judged per partition and source, on that
group's own figures, so each batch breaches on its own):
    a  web re-sends 05-06 with fresh event ids (a double count);
    b  mobile re-sends 05-05 with its amounts x100;
    c  web deletes every event of 05-04.
Expected figures come from the plain-Python reference (reference.py).
"""

from __future__ import annotations

import statistics
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

from tests.pytest.conftest import Project
from tests.pytest.store_timeline import Store, build_times, cents, store_lines

SELECT = "+gold_daily_revenue +gold_weekly_revenue"
LAST_BUILD = build_times()[-1]
LAST_LANDING = LAST_BUILD - timedelta(minutes=30)
BAD_DAYS = {"a": date(2024, 5, 6), "b": date(2024, 5, 5), "c": date(2024, 5, 4)}


@pytest.fixture(scope="module")
def store(module_project: Project, tmp_path_factory: pytest.TempPathFactory) -> Store:
    """The store with what its sources sent by the schedule's last build, landed
    as the schedule lands it and built once, at that build's time."""
    store = Store(module_project, tmp_path_factory.mktemp("gate_schedule"), SELECT)
    lines = store_lines()
    previous = datetime.min.replace(tzinfo=UTC)
    for step, at in enumerate(build_times()):
        landing = at - timedelta(minutes=30)
        for source, sent in lines.items():
            due = [line.record for line in sent if previous < line.arrival <= landing]
            if due:
                store.land(source, due, landing, f"{source}_{step:02d}")
        previous = landing
    store.build(LAST_BUILD)
    assert store.gold() == store.expected()
    statuses = sorted({(r.event_date, r.status) for r in module_project.table("gold", "gold_daily_revenue").collect()})
    assert [status for _, status in statuses] == ["final"] + ["preliminary"] * 5
    return store


def blocked_messages(store: Store) -> str:
    return " ".join(m for m in store.project.messages if "Publication gate blocked gold_daily_revenue" in m)


def plain(value: Decimal) -> str:
    return str(int(value)) if value == value.to_integral_value() else str(value.quantize(Decimal("0.01")))


def originals(source: str, day: date) -> list[dict[str, Any]]:
    """The source's first sending of each event of `day` it sent during the schedule
    (no re-sends, corrections or deletions)."""
    first: dict[str, dict[str, Any]] = {}
    for line in store_lines()[source]:
        record = line.record
        if not record or record.get("is_correction") or record.get("is_deleted") or line.arrival > LAST_LANDING:
            continue
        if record["event_ts"].startswith(day.isoformat()):
            first.setdefault(record["event_id"], record)
    return list(first.values())


def test_bad_batches_are_blocked_each_with_its_partition_figure_and_range(store: Store) -> None:
    published = store.published()
    expected_before = store.expected()
    typical = statistics.median(
        (gross - refunds) / orders
        for (day, source), (orders, gross, refunds) in expected_before.items()
        if source == "mobile" and day != BAD_DAYS["b"] and orders
    )
    mobile_days = sum(1 for (day, source) in expected_before if source == "mobile" and day != BAD_DAYS["b"])
    doubled, deleted = expected_before[(BAD_DAYS["a"], "web")][0], expected_before[(BAD_DAYS["c"], "web")][0]
    assert min(doubled, deleted) >= 5  # the shrink and growth checks' min_count

    resent = {
        record["event_id"]: {**record, "event_id": record["event_id"] + "-again"}
        for record in originals("web", BAD_DAYS["a"])
        if record["event_type"] == "order_placed"
    }
    deletions = [{**record, "is_deleted": True} for record in originals("web", BAD_DAYS["c"])]
    scaled = [{**record, "amount": round(record["amount"] * 100, 2)} for record in originals("mobile", BAD_DAYS["b"])]
    arrival = LAST_BUILD + timedelta(hours=6)
    store.land("web", [*resent.values(), *deletions], arrival, "bad_web")
    store.land("mobile", scaled, arrival, "bad_mobile")
    assert not store.build(arrival + timedelta(minutes=30), expect_ok=False).success

    expected = store.expected()
    message = blocked_messages(store)
    # a: the double count
    after = expected[(BAD_DAYS["a"], "web")][0]
    assert after == doubled + len(resent)  # deleted orders come back too: they are new ids
    growth = round((after - doubled) / doubled * 100, 1)
    assert (
        f"partition 2024-05-06 (web) is preliminary and its orders grow from {doubled} to {after} (+{growth}%); "
        f"expected at most {plain(Decimal(doubled) * Decimal('1.5'))}"
    ) in message
    # b: amounts x100
    orders, gross, refunds = expected[(BAD_DAYS["b"], "mobile")]
    value = (gross - refunds) / orders
    assert value > 5 * typical
    net = cents(gross - refunds)
    assert (
        f"partition 2024-05-05 (mobile): net_revenue / orders is {plain(value)} (net_revenue {net} over"
        f" {orders}); expected at most {plain(5 * typical)} (5 x {plain(typical)}, the median of its {mobile_days}"
        " other published partitions"
    ) in message
    # c: a day deleted
    assert (BAD_DAYS["c"], "web") not in expected  # no order, no refund left
    assert (
        f"partition 2024-05-04 (web): orders fall from {deleted} to 0 (-100.0%); "
        f"expected at least {plain(Decimal(deleted) / 2)} (at most 50.0% fewer; reasons: deletion"
    ) in message

    assert store.published() == published
    assert store.gate_log() == [("gold_daily_revenue", "blocked")]
