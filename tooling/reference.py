"""A plain-Python statement of latecomer's late-data rules, written from the
specification and independent of the SQL models, used to compute expected
answers for the scenario tests and the gold the benchmark's variants must
publish. Kept deliberately naive: no Spark, no SQL.
"""

from __future__ import annotations

import json
import math
import re
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal, InvalidOperation

EVENT_TYPES = {"page_view", "add_to_cart", "order_placed", "payment_confirmed", "refund"}
OFFSET = re.compile(r"(Z|[+-]\d{2}:?\d{2})$")
LAST_TIER = timedelta(hours=720)


@dataclass
class Arrival:
    source: str
    arrival: datetime
    file_key: str  # stands in for the content-derived ingestion id
    line: int
    record: dict


def parse_ts(text: str | None) -> datetime | None:
    if not isinstance(text, str) or not OFFSET.search(text):
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)
    except ValueError:
        return None


def well_formed(record: dict, arrival: datetime) -> bool:
    ts = parse_ts(record.get("event_ts"))
    if ts is None or record.get("event_type") not in EVENT_TYPES:
        return False
    if record["event_type"] in ("order_placed", "refund") and record.get("amount") is None:
        return False
    if record.get("amount") is not None:
        try:
            Decimal(str(record["amount"]))
        except InvalidOperation:
            return False
    return ts <= arrival + timedelta(hours=24)


def arrivals_from_lines(source: str, arrival: datetime, file_key: str, lines: list[str]) -> list[Arrival]:
    out = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            record = None
        out.append(Arrival(source, arrival, file_key, number, record if isinstance(record, dict) else {}))
    return out


def expected_state(arrivals: list[Arrival], backfill_window: tuple[date, date] | None = None) -> tuple[dict, int]:
    """(current rows per key, quarantined count) after all arrivals, any order.

    Events dated inside ``backfill_window`` (inclusive) are exempt from the
    last watermark tier, as a backfill of those dates loads them.
    """
    accepted, quarantined = [], 0
    for a in arrivals:
        r = a.record
        ts = parse_ts(r.get("event_ts")) if r else None
        if not r or not well_formed(r, a.arrival):
            quarantined += 1
            continue
        key = r.get("event_id") or (
            (
                r["event_type"],
                r.get("user_id"),
                ts,
                Decimal(str(r.get("amount", "0"))).quantize(Decimal("0.01")),
            )
            if r.get("user_id")
            else None
        )
        if key is None and not r.get("corrects_event_id"):
            quarantined += 1
            continue
        in_window = backfill_window is not None and backfill_window[0] <= ts.date() <= backfill_window[1]
        if a.arrival - ts > LAST_TIER and not in_window:
            quarantined += 1
            continue
        accepted.append((a, r, key, ts))
    links = {
        (a.source, r["event_id"]): r["corrects_event_id"]
        for a, r, _, _ in accepted
        if r.get("is_correction")
        and r.get("event_id")
        and r.get("corrects_event_id")
        and r["event_id"] != r["corrects_event_id"]
    }
    current: dict = {}
    for a, r, key, ts in accepted:
        kind = 3 if r.get("is_deleted") else 2 if r.get("is_correction") else 1
        target = r.get("corrects_event_id") or key if kind > 1 else key
        seen = {target}
        while (a.source, target) in links and links[(a.source, target)] not in seen:
            target = links[(a.source, target)]
            seen.add(target)
        rank = (kind, a.arrival, a.file_key, a.line)
        slot = (target, a.source)
        if slot not in current or rank > current[slot]["rank"]:
            current[slot] = {
                "rank": rank,
                "deleted": kind == 3,
                "type": r["event_type"],
                "amount": Decimal(str(r.get("amount", "0"))),
                "date": ts.date(),
                "hour": ts.astimezone(UTC).hour,
            }
    return current, quarantined


def expected_daily_revenue(
    arrivals: list[Arrival], backfill_window: tuple[date, date] | None = None, by_hour: bool = False
) -> dict[tuple, tuple[int, Decimal, Decimal]]:
    """(event_date, source) -> (orders, gross revenue, refunds); with ``by_hour``,
    keyed (event_date, hour, source)."""
    current, _ = expected_state(arrivals, backfill_window)
    totals: dict = defaultdict(lambda: [0, Decimal("0"), Decimal("0")])
    for (_, source), row in current.items():
        if row["deleted"]:
            continue
        cell = totals[(row["date"], row["hour"], source) if by_hour else (row["date"], source)]
        if row["type"] == "order_placed":
            cell[0] += 1
            cell[1] += row["amount"]
        elif row["type"] == "refund":
            cell[2] += row["amount"]
        else:
            cell[0] += 0
    return {k: (v[0], v[1], v[2]) for k, v in totals.items()}


def percentile(values: list[float], q: float) -> float:
    """The q-quantile of ``values``, interpolated linearly between closest ranks."""
    ordered = sorted(values)
    position = q * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def quarantined(a: Arrival) -> bool:
    """Whether expected_state holds this arrival out of silver (no backfill)."""
    _, count = expected_state([a])
    return count == 1


def lateness_by_arrival_day(arrivals: list[Arrival], tier_hours: dict[str, float]) -> dict:
    """(source, arrival date) -> events, quarantined, shares later than each
    tier and lateness percentiles of the well-formed events, in seconds."""
    days: dict = defaultdict(list)
    for a in arrivals:
        days[(a.source, a.arrival.date())].append(a)
    out = {}
    for key, rows in days.items():
        lateness = [
            max(0, int((a.arrival - parse_ts(a.record["event_ts"])).total_seconds()))
            for a in rows
            if a.record and well_formed(a.record, a.arrival)
        ]
        figures = {
            "events": len(rows),
            "timed_events": len(lateness),
            "quarantined_events": sum(quarantined(a) for a in rows),
        }
        for name, hours in tier_hours.items():
            later = sum(1 for seconds in lateness if seconds > round(hours * 3600))
            figures[f"share_later_than_{name}"] = later / len(lateness) if lateness else None
        for label, q in (("p50", 0.5), ("p90", 0.9), ("p95", 0.95), ("p99", 0.99)):
            figures[f"lateness_{label}_seconds"] = percentile(lateness, q) if lateness else None
        figures["lateness_max_seconds"] = max(lateness) if lateness else None
        out[key] = figures
    return out


def round_up_tolerance(seconds: float) -> int:
    """A suggested tolerance: 5-minute steps up to an hour, hours up to two days, then days."""
    seconds = max(seconds, 1)
    step = 300 if seconds <= 3600 else 3600 if seconds <= 172_800 else 86_400
    return math.ceil(seconds / step) * step
