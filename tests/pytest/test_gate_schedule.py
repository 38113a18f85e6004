"""The publication gate on a schedule, with its default limits: normal late data
never blocks it, and each kind of bad batch does, with a message naming the
partition, the figure and the expected range.

A small store: 5 sources, 6 event days (2024-05-01 .. 05-06). Each source's
lines land as they arrive, in one file per source before each build, and
`dbt build` runs every 24 to 48 hours (5 builds over 9 days), as a schedule
would. The mix is the sample's: most events on time, some hours or days late
(within the month_end tier), duplicates re-sent, corrections (one moving an
order to the next day), deletions, refunds, a malformed line and an event
beyond the last tier (quarantined). By the last build one day is final and
five preliminary. The daily model and a rollup of it are built (the hourly,
monthly and by-tier models run the same gate code).

Then three bad batches land together and the next build is blocked, its
message naming each (a breach is judged per partition and source, on that
group's own figures, so each batch breaches on its own):
    a  web re-sends 05-06 with fresh event ids (a double count);
    b  mobile re-sends 05-05 with its amounts x100;
    c  web deletes every event of 05-04.
Expected figures come from the plain-Python reference (reference.py).
"""

from __future__ import annotations

import json
import random
import statistics
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from tests.pytest.conftest import Project
from tests.pytest.reference import Arrival, arrivals_from_lines, expected_daily_revenue

FIRST_DAY = datetime(2024, 5, 1, tzinfo=UTC)
EVENT_DAYS = 6
ORDERS_PER_DAY = {"web": 12, "mobile": 9, "partner": 6, "payments": 5, "backoffice": 3}
# Hours between builds, from FIRST_DAY: the last build is at 05-09 12:00.
BUILD_GAPS = (24, 48, 48, 48, 36)
SELECT = "+gold_daily_revenue +gold_weekly_revenue"


@dataclass(frozen=True)
class Line:
    arrival: datetime  # when the source sends it
    record: dict[str, Any]


def order(event_id: str, ts: datetime, amount: Decimal, kind: str = "order_placed", **extra: Any) -> dict[str, Any]:
    return {
        "event_id": event_id,
        "event_type": kind,
        "user_id": "u" + event_id,
        "amount": float(amount),
        "event_ts": ts.isoformat(),
        **extra,
    }


def cents(amount: Decimal) -> Decimal:
    return amount.quantize(Decimal("0.01"))


def lateness(rng: random.Random) -> timedelta:
    """The sample's mix: mostly on time, some hours late, a few days late (within month_end)."""
    draw = rng.random()
    if draw < 0.80:
        return timedelta(minutes=rng.randrange(60))
    if draw < 0.94:
        return timedelta(hours=rng.uniform(2, 20))
    return timedelta(hours=rng.uniform(26, 140))


def store_lines(seed: int = 11) -> dict[str, list[Line]]:
    """Every line each source sends over the timeline, with when it sends it."""
    rng = random.Random(seed)
    lines: dict[str, list[Line]] = {source: [] for source in ORDERS_PER_DAY}
    for source, per_day in ORDERS_PER_DAY.items():
        for day in range(EVENT_DAYS):
            start = FIRST_DAY + timedelta(days=day)
            for number in range(per_day + rng.randint(-1, 2)):
                event_id = f"{source[0]}{day}-{number}"
                ts = start + timedelta(seconds=rng.randrange(86_400))
                amount = Decimal(rng.randint(1_000, 20_000)) / 100
                sent = ts + lateness(rng)
                record = order(event_id, ts, amount)
                lines[source].append(Line(sent, record))
                draw = rng.random()
                if draw < 0.05:  # re-sent unchanged
                    lines[source].append(Line(sent + timedelta(hours=rng.uniform(12, 48)), record))
                elif draw < 0.09:  # corrected
                    fixed = order(
                        event_id + "c",
                        ts,
                        cents(amount * Decimal("1.1")),
                        is_correction=True,
                        corrects_event_id=event_id,
                    )
                    lines[source].append(Line(sent + timedelta(hours=rng.uniform(24, 72)), fixed))
                elif draw < 0.11:  # deleted
                    lines[source].append(
                        Line(sent + timedelta(hours=rng.uniform(24, 48)), {**record, "is_deleted": True})
                    )
                if rng.random() < 0.08:  # part refunded a few hours later
                    refund = order(event_id + "r", ts + timedelta(hours=2), cents(amount / 4), kind="refund")
                    lines[source].append(Line(sent + timedelta(hours=2) + lateness(rng), refund))
    # A correction moving a web order to the next day.
    moved = next(line.record for line in lines["web"] if line.record["event_id"] == "w3-0")
    moved_ts = datetime.fromisoformat(moved["event_ts"]) + timedelta(days=1)
    lines["web"].append(
        Line(
            FIRST_DAY + timedelta(days=5),
            {
                **moved,
                "event_id": "w3-0m",
                "is_correction": True,
                "corrects_event_id": "w3-0",
                "event_ts": moved_ts.isoformat(),
            },
        )
    )
    # Beyond the last tier (720 h), and a truncated line: quarantined.
    old = order("b-old", FIRST_DAY - timedelta(days=40), Decimal("99.00"))
    lines["backoffice"] += [Line(FIRST_DAY + timedelta(hours=10), old), Line(FIRST_DAY + timedelta(hours=10), {})]
    return lines


def build_times() -> list[datetime]:
    times, at = [], FIRST_DAY
    for gap in BUILD_GAPS:
        at += timedelta(hours=gap)
        times.append(at)
    return times


class Store:
    """The module's deployment, what it has landed (for the reference), and its builds."""

    def __init__(self, project: Project, tmp: Path) -> None:
        self.project = project
        self.tmp = tmp
        self.arrivals: list[Arrival] = []

    def land(self, source: str, records: list[dict[str, Any]], arrival: datetime, name: str) -> None:
        path = self.tmp / f"{name}.ndjson"
        path.write_text("".join((json.dumps(r) if r else '{"event_id": "trunc') + "\n" for r in records))
        assert self.project.ingest(source, path, arrival_ts=arrival.isoformat()) == 0
        self.arrivals += arrivals_from_lines(source, arrival, path.name, path.read_text().splitlines())

    def build(self, as_of: datetime, expect_ok: bool = True, **more_vars: Any) -> Any:
        return self.project.dbt(
            "build",
            "--select",
            SELECT,
            "--exclude-resource-type",
            "test",
            vars={"as_of": as_of.isoformat(), **more_vars},
            expect_ok=expect_ok,
        )

    def expected(self) -> dict[tuple[date, str], tuple[int, Decimal, Decimal]]:
        return {key: value for key, value in expected_daily_revenue(self.arrivals).items() if value[0] or value[2]}

    def gold(self) -> dict[tuple[date, str], tuple[int, Decimal, Decimal]]:
        rows = self.project.table("gold", "gold_daily_revenue").collect()
        return {
            (r.event_date, r.source_system): (r.orders, r.gross_revenue, r.refunds)
            for r in rows
            if r.orders or r.refunds
        }

    def published(self) -> list[tuple]:
        return sorted(tuple(r) for r in self.project.sql("select * from {schema}_gold.gold_daily_revenue"))

    def gate_log(self) -> list[tuple[str, str]]:
        rows = self.project.sql("select model, decision, logged_at from {schema}_audit.publication_gate_log")
        return [(r.model, r.decision) for r in sorted(rows, key=lambda r: (r.logged_at, r.model))]


@pytest.fixture(scope="module")
def store(module_project: Project, tmp_path_factory: pytest.TempPathFactory) -> Store:
    return Store(module_project, tmp_path_factory.mktemp("gate_schedule"))


def gate_checks(messages: list[str], model: str) -> list[dict[str, Any]]:
    """The figures the gate logged for `model` in the last invocation (empty when it did not run)."""
    prefix = f"{model}: publication gate "
    return [json.loads(m.split(" ", 4)[4]) for m in messages if m.startswith(prefix)]


def test_scheduled_builds_never_block(store: Store) -> None:
    lines = store_lines()
    previous = datetime.min.replace(tzinfo=UTC)
    judged = 0
    statuses: set[str] = set()
    for step, at in enumerate(build_times()):
        landing = at - timedelta(minutes=30)
        for source, sent in lines.items():
            due = [line.record for line in sent if previous < line.arrival <= landing]
            if due:
                store.land(source, due, landing, f"{source}_{step:02d}")
        previous = landing
        store.build(at)  # fails the test if any model is blocked
        judged += sum(check["changed_groups"] for check in gate_checks(store.project.messages, "gold_daily_revenue"))
        statuses |= {r.status for r in store.project.table("gold", "gold_daily_revenue").collect()}
    assert store.gate_log() == []
    assert judged > 20, "the gate judged too few changes for this test to mean anything"
    assert statuses == {"live", "preliminary", "final"}
    assert store.gold() == store.expected()
    last = {r.event_date: r.status for r in store.project.table("gold", "gold_daily_revenue").collect()}
    days = [FIRST_DAY.date() + timedelta(days=d) for d in range(EVENT_DAYS)]
    assert [last[day] for day in days] == ["final"] + ["preliminary"] * 5


def blocked_messages(store: Store) -> str:
    return " ".join(m for m in store.project.messages if "Publication gate blocked gold_daily_revenue" in m)


def plain(value: Decimal) -> str:
    return str(int(value)) if value == value.to_integral_value() else str(value.quantize(Decimal("0.01")))


LAST_BUILD = build_times()[-1]
LAST_LANDING = LAST_BUILD - timedelta(minutes=30)
BAD_DAYS = {"a": date(2024, 5, 6), "b": date(2024, 5, 5), "c": date(2024, 5, 4)}


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
