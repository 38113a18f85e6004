"""A small store's timeline, shared by the scheduled-build tests
(test_gate_schedule.py, test_period_close.py).

5 sources, 6 event days (2024-05-01 .. 05-06). Each source sends its lines as
they arrive, with the sample's mix: most events on time, some hours or days
late (within the month_end tier), duplicates re-sent, corrections (one moving
an order to the next day), deletions, refunds, a malformed line and an event
beyond the last tier (quarantined). :class:`Store` lands them and builds, and
keeps what it landed for the plain-Python reference (reference.py).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

from tests.pytest.conftest import Project
from tooling.reference import Arrival, arrivals_from_lines, expected_daily_revenue

FIRST_DAY = datetime(2024, 5, 1, tzinfo=UTC)
EVENT_DAYS = 6
ORDERS_PER_DAY = {"web": 12, "mobile": 9, "partner": 6, "payments": 5, "backoffice": 3}
# Hours between builds, from FIRST_DAY: the last build is at 05-09 12:00.
BUILD_GAPS = (24, 48, 48, 48, 36)


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


def gate_checks(messages: list[str], model: str) -> list[dict[str, Any]]:
    """The figures the publication gate logged for `model` in an invocation (empty when it did not run)."""
    prefix = f"{model}: publication gate "
    return [json.loads(m.split(" ", 4)[4]) for m in messages if m.startswith(prefix)]


def build_times() -> list[datetime]:
    times, at = [], FIRST_DAY
    for gap in BUILD_GAPS:
        at += timedelta(hours=gap)
        times.append(at)
    return times


class Store:
    """The module's deployment, what it has landed (for the reference), and its builds."""

    def __init__(self, project: Project, tmp: Path, select: str) -> None:
        self.project = project
        self.tmp = tmp
        self.select = select
        self.arrivals: list[Arrival] = []

    def land(self, source: str, records: list[dict[str, Any]], arrival: datetime, name: str) -> None:
        path = self.tmp / f"{name}.ndjson"
        path.write_text("".join((json.dumps(r) if r else '{"event_id": "trunc') + "\n" for r in records))
        assert self.project.ingest(source, path, arrival_ts=arrival.isoformat()) == 0
        self.arrivals += arrivals_from_lines(source, arrival, path.name, path.read_text().splitlines())

    def land_sent(self, lines: dict[str, list[Line]], since: datetime, until: datetime, step: int) -> None:
        """Lands, at ``until``, what each source sent after ``since``: one file per source."""
        for source, sent in lines.items():
            due = [line.record for line in sent if since < line.arrival <= until]
            if due:
                self.land(source, due, until, f"{source}_{step:02d}")

    def build(self, as_of: datetime, expect_ok: bool = True, **more_vars: Any) -> Any:
        return self.project.dbt(
            "build",
            "--select",
            self.select,
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
