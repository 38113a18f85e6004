"""Synthetic store history for the benchmark (python -m tooling.bench).

Writes NDJSON landing files in the ingest contract (see python_jobs.ingest),
with the mix of the sample data at any scale:

* one file per arrival day and source (web and mobile; a few mobile events
  come without event_id, so they get surrogate keys);
* most events arrive in the file of their own event day, some 1-3 days late,
  a few 4-20 days late, a very few beyond the 30-day watermark (quarantined);
* duplicates within a file and re-deliveries in a later file;
* corrections (with their own id and ``corrects_event_id``; some move the event
  to another hour or day) and deletions (``is_deleted``) arriving later;
* a few id-less lines without a user (null natural key) and a few malformed
  lines (truncated JSON, timestamp without offset, unknown event type, blank).

Then one *late batch*, arriving after the history, whose every line concerns
one of ``k`` chosen event dates: new late events (orders in every source),
corrections and deletions of earlier events, a correction moving an event from
one chosen date to another, re-deliveries of earlier lines, duplicates within
the batch, plus malformed and null-key lines (quarantined, no partition).

Deterministic: the same :class:`Scale` gives the same bytes, so a generated
history can be reused between runs (see :func:`generate`).
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import IO

EPOCH = datetime(2024, 1, 1, tzinfo=UTC)
_EPOCH_NAIVE = EPOCH.replace(tzinfo=None)
DAY = 86_400
GENERATOR_VERSION = 2


@dataclass(frozen=True)
class Source:
    name: str
    prefix: str
    share: float
    id_less: float  # share of its events sent without event_id (surrogate keys)


SOURCES = (
    Source("web", "w", 0.60, 0.0),
    Source("mobile", "m", 0.40, 0.02),
)
EVENT_TYPE_WEIGHTS = {
    "page_view": 0.55,
    "add_to_cart": 0.20,
    "order_placed": 0.12,
    "payment_confirmed": 0.10,
    "refund": 0.03,
}
AMOUNT_TYPES = frozenset({"order_placed", "payment_confirmed", "refund"})
MONEY_TYPES = frozenset({"order_placed", "refund"})
# UTC offsets the sources stamp their local times with (minutes).
OFFSETS = ((0, "Z"), (0, "+00:00"), (120, "+02:00"), (-300, "-05:00"), (330, "+05:30"))


@dataclass(frozen=True)
class Mix:
    """Shares of the late / duplicate / correction mix (per original event unless noted)."""

    late: float = 0.03  # arrive 1-3 days after their event day (month_end tier)
    very_late: float = 0.002  # 4-20 days after (regulatory tier)
    beyond_watermark: float = 0.0001  # 31-40 days after: quarantined
    dup_within: float = 0.01  # sent twice in the same file
    dup_across: float = 0.005  # re-delivered in a later file
    correction: float = 0.02  # of money events with ids: corrected 0-3 days later
    correction_moves: float = 0.1  # of corrections: event_ts moved by up to a day
    deletion: float = 0.005  # of money events with ids: deleted 0-3 days later
    null_key: float = 0.01  # of id-less events: no user_id either (quarantined)
    malformed: float = 0.0002  # per line of a file: a malformed line added


@dataclass(frozen=True)
class Scale:
    days: int = 60
    events_per_day: int = 100_000
    k: int = 3  # event-date partitions the late batch touches
    late_events_per_partition: int | None = None  # default: 0.5% of a day, at least 30
    seed: int = 7
    mix: Mix = field(default_factory=Mix)

    def __post_init__(self) -> None:
        if self.days < 2:
            raise ValueError("days must be at least 2")
        if not 1 <= self.k <= min(self.days, 23):
            raise ValueError(f"k must be between 1 and {min(self.days, 23)}")
        if self.events_per_day < 100:
            raise ValueError("events_per_day must be at least 100")

    @property
    def users(self) -> int:
        """Customers (user ids u1..uN): two per daily event, at least 1,000."""
        return max(1_000, 2 * self.events_per_day)

    @property
    def late_per_partition(self) -> int:
        if self.late_events_per_partition is not None:
            return self.late_events_per_partition
        return max(30, self.events_per_day // 200)

    def date_of(self, day: int) -> date:
        return (EPOCH + timedelta(days=day)).date()

    def arrival_ts(self, arrival_day: int) -> datetime:
        """History files of arrival day ``a`` land at the following midnight (UTC)."""
        return EPOCH + timedelta(days=arrival_day + 1)

    @property
    def late_arrival_ts(self) -> datetime:
        """The late batch lands the day after the last history file, so its
        arrival-date partition of bronze holds nothing else."""
        return EPOCH + timedelta(days=self.days + 1, hours=6)

    @property
    def initial_as_of(self) -> datetime:
        """As-of of the initial build (after the last history file landed)."""
        return EPOCH + timedelta(days=self.days + 1, minutes=30)

    @property
    def late_as_of(self) -> datetime:
        """As-of of the late-batch builds. No live/preliminary/final boundary
        (always midnight UTC) lies between it and ``initial_as_of``, so no
        partition's status moves: only the late batch restates gold."""
        return EPOCH + timedelta(days=self.days + 1, hours=6, minutes=30)

    @property
    def late_days(self) -> list[int]:
        """The k event days the late batch touches, oldest first: spread evenly
        over the 22 days before the last history day (inside the 30-day
        watermark): 1, 12 and 22 days before it for k=3 and 60 days."""
        span = min(self.days, 23)
        pool = list(range(1, span)) if self.k < span else list(range(span))
        step = (len(pool) - 1) / max(self.k - 1, 1)
        offsets = [pool[round(i * step)] for i in range(self.k)]
        return sorted(self.days - 1 - o for o in set(offsets))

    def key(self) -> str:
        """Folder name identifying the generated bytes."""
        return (
            f"v{GENERATOR_VERSION}_d{self.days}_e{self.events_per_day}_k{self.k}"
            f"_l{self.late_per_partition}_s{self.seed}"
        )


@dataclass
class Batch:
    """One landing file: ingest it with ``--source source --feed feed --arrival-ts arrival_ts``."""

    source: str
    arrival_ts: datetime
    path: Path
    lines: int = 0
    feed: str = "events"


@dataclass
class History:
    scale: Scale
    root: Path
    history: list[Batch]
    late: list[Batch]
    stats: dict[str, int]

    @property
    def late_dates(self) -> list[str]:
        return sorted(str(self.scale.date_of(d)) for d in self.scale.late_days)

    def as_json(self) -> dict:
        return {
            "scale": {k: v for k, v in asdict(self.scale).items() if k != "mix"},
            "mix": asdict(self.scale.mix),
            "late_dates": self.late_dates,
            "history_files": len(self.history),
            "late_files": len(self.late),
            "stats": self.stats,
        }


def _ts_text(epoch_seconds: int, offset: tuple[int, str]) -> str:
    minutes, suffix = offset
    local = _EPOCH_NAIVE + timedelta(seconds=epoch_seconds + minutes * 60)
    return local.isoformat() + suffix


def _amount(cents: int) -> str:
    return f"{cents // 100}.{cents % 100:02d}"


@dataclass
class _Event:
    source: Source
    event_id: str | None
    event_type: str
    user_id: str | None
    seconds: int  # since EPOCH, UTC
    cents: int | None
    offset: tuple[int, str]

    def line(self, **extra: object) -> str:
        parts = []
        if self.event_id is not None:
            parts.append(f'"event_id": "{self.event_id}"')
        parts.append(f'"event_type": "{self.event_type}"')
        if self.user_id is not None:
            parts.append(f'"user_id": "{self.user_id}"')
        if self.cents is not None:
            parts.append(f'"amount": {_amount(self.cents)}')
        parts.append(f'"event_ts": "{_ts_text(self.seconds, self.offset)}"')
        for name, value in extra.items():
            parts.append(f'"{name}": {json.dumps(value)}')
        return "{" + ", ".join(parts) + "}\n"


class _Writer:
    """Landing files opened on first use, one per (arrival day, source)."""

    def __init__(self, folder: Path, scale: Scale) -> None:
        self.folder = folder
        self.scale = scale
        self.handles: dict[tuple[int, str], IO[str]] = {}
        self.lines: dict[tuple[int, str], int] = {}

    def path(self, arrival_day: int, source: str) -> Path:
        return self.folder / f"arrival_{arrival_day:03d}_{source}.ndjson"

    def write(self, arrival_day: int, source: str, text: str) -> None:
        key = (arrival_day, source)
        handle = self.handles.get(key)
        if handle is None:
            handle = self.handles[key] = self.path(arrival_day, source).open("w")
            self.lines[key] = 0
        handle.write(text)
        self.lines[key] += 1

    def close(self) -> None:
        for handle in self.handles.values():
            handle.close()


def _malformed_lines(rng: random.Random, day: int, count: int) -> Iterator[str]:
    stamp = _ts_text(day * DAY + 3600, (0, "Z"))
    kinds = (
        '{"event_id": "bad-%d-%d", "event_type": "order_placed", "amount": 1.00, "event_ts": "2024-0\n',
        '{"event_id": "bad-%d-%d", "event_type": "order_placed", "user_id": "u1", "amount": 5.00, '
        '"event_ts": "' + stamp[:19] + '"}\n',
        '{"event_id": "bad-%d-%d", "event_type": "page_vew", "user_id": "u1", "event_ts": "' + stamp + '"}\n',
        '{"event_id": "bad-%d-%d", "event_type": "refund", "user_id": "u1", "event_ts": "' + stamp + '"}\n',
    )
    for i in range(count):
        yield rng.choice(kinds).replace("%d-%d", f"{day}-{i}")


def _new_event(rng: random.Random, source: Source, event_id: str | None, day: int, users: int) -> _Event:
    event_type = rng.choices(tuple(EVENT_TYPE_WEIGHTS), tuple(EVENT_TYPE_WEIGHTS.values()))[0]
    return _Event(
        source=source,
        event_id=event_id,
        event_type=event_type,
        user_id=f"u{rng.randrange(1, users + 1)}",
        seconds=day * DAY + rng.randrange(DAY),
        cents=rng.randrange(100, 50_000) if event_type in AMOUNT_TYPES else None,
        offset=rng.choice(OFFSETS),
    )


def _write_history(scale: Scale, folder: Path) -> tuple[list[Batch], dict[str, int], dict]:
    mix = scale.mix
    last = scale.days - 1
    writer = _Writer(folder, scale)
    stats = dict.fromkeys(
        (
            "events",
            "late",
            "very_late",
            "beyond_watermark",
            "dup_within",
            "dup_across",
            "corrections",
            "correction_moves",
            "deletions",
            "id_less",
            "null_key",
            "malformed",
        ),
        0,
    )
    late_days = set(scale.late_days)
    # Untouched money events with ids on the late batch's days, for its corrections.
    known: dict[int, list[_Event]] = {d: [] for d in late_days}
    shares = [s.share for s in SOURCES]
    type_names = tuple(EVENT_TYPE_WEIGHTS)
    type_weights = tuple(EVENT_TYPE_WEIGHTS.values())
    users = scale.users
    for day in range(scale.days):
        rng = random.Random(f"{scale.seed}:{day}")
        n = scale.events_per_day
        sources = rng.choices(SOURCES, shares, k=n)
        types = rng.choices(type_names, type_weights, k=n)
        for i in range(n):
            source = sources[i]
            event_type = types[i]
            id_less = source.id_less > 0 and rng.random() < source.id_less
            event = _Event(
                source=source,
                event_id=None if id_less else f"{source.prefix}{day:03d}-{i:07d}",
                event_type=event_type,
                user_id=f"u{rng.randrange(1, users + 1)}",
                seconds=day * DAY + rng.randrange(DAY),
                cents=rng.randrange(100, 50_000) if event_type in AMOUNT_TYPES else None,
                offset=OFFSETS[rng.randrange(len(OFFSETS))],
            )
            stats["events"] += 1
            if id_less:
                stats["id_less"] += 1
                if rng.random() < mix.null_key:
                    event.user_id = None
                    stats["null_key"] += 1
            roll = rng.random()
            arrival = day
            touched = False  # quarantined, duplicated, corrected or deleted
            if roll < mix.beyond_watermark:
                arrival = day + rng.randint(31, 40)
                if arrival > last:
                    arrival = day
                else:
                    stats["beyond_watermark"] += 1
                    touched = True
            elif roll < mix.beyond_watermark + mix.very_late:
                arrival = min(day + rng.randint(4, 20), last)
                stats["very_late"] += arrival > day
            elif roll < mix.beyond_watermark + mix.very_late + mix.late:
                arrival = min(day + rng.randint(1, 3), last)
                stats["late"] += arrival > day
            text = event.line()
            writer.write(arrival, source.name, text)
            roll = rng.random()
            if roll < mix.dup_within:
                writer.write(arrival, source.name, text)
                stats["dup_within"] += 1
                touched = True
            elif roll < mix.dup_within + mix.dup_across:
                writer.write(min(arrival + rng.randint(1, 3), last), source.name, text)
                stats["dup_across"] += 1
                touched = True
            if not id_less and event_type in MONEY_TYPES:
                roll = rng.random()
                if roll < mix.correction:
                    fixed = replace(event)
                    fixed.event_id = f"{event.event_id}-c1"
                    fixed.cents = max(100, (event.cents or 0) + rng.randrange(-2000, 2000))
                    if rng.random() < mix.correction_moves:
                        fixed.seconds += rng.randrange(-DAY, DAY)
                        stats["correction_moves"] += 1
                    writer.write(
                        min(arrival + rng.randint(0, 3), last),
                        source.name,
                        fixed.line(is_correction=True, corrects_event_id=event.event_id),
                    )
                    stats["corrections"] += 1
                    touched = True
                elif roll < mix.correction + mix.deletion:
                    writer.write(
                        min(arrival + rng.randint(0, 3), last),
                        source.name,
                        event.line(is_deleted=True),
                    )
                    stats["deletions"] += 1
                    touched = True
                if not touched and day in late_days and len(known[day]) < 200:
                    known[day].append(event)
        for source in SOURCES:
            if (day, source.name) not in writer.lines:
                continue
            count = sum(rng.random() < mix.malformed for _ in range(writer.lines[(day, source.name)]))
            if day == 0 and source.name == "web":
                count = max(count, 1)
            for text in _malformed_lines(rng, day, count):
                writer.write(day, source.name, text)
                stats["malformed"] += 1
            if source.name == "web" and rng.random() < 0.5:
                writer.write(day, source.name, "\n")  # a blank line: not data
    writer.close()
    batches = [
        Batch(source, scale.arrival_ts(day), writer.path(day, source), writer.lines[(day, source)])
        for day, source in sorted(writer.lines)
    ]
    return batches, stats, known


CUSTOMER_TIERS = ("bronze", "silver", "gold", "platinum")
REGIONS = ("EU", "NA", "APAC", "LATAM")


def _write_customers(scale: Scale, folder: Path) -> list[Batch]:
    """The CRM feed: every customer, landed with the first events, and tier
    changes for 1% of them halfway through the history (some out of order).
    The late batch changes no customer."""
    rng = random.Random(f"{scale.seed}:customers")
    since = (EPOCH - timedelta(days=30)).isoformat().replace("+00:00", "Z")
    first = folder / "customers_000_crm.ndjson"
    with first.open("w") as handle:
        for n in range(1, scale.users + 1):
            tier = CUSTOMER_TIERS[min(3, int(rng.expovariate(1.2)))]
            handle.write(
                f'{{"customer_id": "u{n}", "tier": "{tier}", '
                f'"region": "{rng.choice(REGIONS)}", "updated_at": "{since}"}}\n'
            )
    batches = [Batch("crm", scale.arrival_ts(0), first, scale.users, "customers")]
    middle = scale.days // 2
    if middle > 0:
        path = folder / f"customers_{middle:03d}_crm.ndjson"
        changed = rng.sample(range(1, scale.users + 1), max(1, scale.users // 100))
        with path.open("w") as handle:
            for n in changed:
                seconds = (middle - rng.randint(0, min(3, middle))) * DAY + rng.randrange(DAY)
                handle.write(
                    f'{{"customer_id": "u{n}", "tier": "{rng.choice(CUSTOMER_TIERS)}", '
                    f'"region": "{rng.choice(REGIONS)}", '
                    f'"updated_at": "{_ts_text(seconds, (0, "Z"))}"}}\n'
                )
        batches.append(Batch("crm", scale.arrival_ts(middle), path, len(changed), "customers"))
    return batches


def _write_late_batch(scale: Scale, folder: Path, known: dict[int, list[_Event]]) -> list[Batch]:
    rng = random.Random(f"{scale.seed}:late")
    arrival_day = scale.days + 1
    writer = _Writer(folder, scale)
    days = scale.late_days
    per_source = {s.name: s for s in SOURCES}
    for rank, day in enumerate(sorted(days, reverse=True)):
        # Orders in every source, so every (date, source) row of gold changes.
        fresh = [_new_event(rng, s, f"{s.prefix}L{day:03d}-{0:06d}", day, scale.users) for s in SOURCES]
        for event in fresh:
            event.event_type = "order_placed"
            event.cents = rng.randrange(100, 50_000)
        for i in range(len(SOURCES), scale.late_per_partition):
            source = rng.choices(SOURCES, [s.share for s in SOURCES])[0]
            id_less = rng.random() < source.id_less
            event_id = None if id_less else f"{source.prefix}L{day:03d}-{i:06d}"
            fresh.append(_new_event(rng, source, event_id, day, scale.users))
        for i, event in enumerate(fresh):
            text = event.line()
            writer.write(arrival_day, event.source.name, text)
            if i % 25 == 1:  # duplicate within the batch
                writer.write(arrival_day, event.source.name, text)
        n_fix = max(2, scale.late_per_partition // 20)
        picks = rng.sample(known[day], min(len(known[day]), 2 * n_fix + 3))
        corrections, deletions = picks[:n_fix], picks[n_fix : n_fix + 2]
        moves, redeliveries = picks[n_fix + 2 : n_fix + 3], picks[n_fix + 3 :]
        for event in corrections:
            fixed = replace(event, event_id=f"{event.event_id}-late-c")
            fixed.cents = max(100, (event.cents or 0) + 1234)
            writer.write(
                arrival_day,
                event.source.name,
                fixed.line(is_correction=True, corrects_event_id=event.event_id),
            )
        for event in deletions:
            writer.write(arrival_day, event.source.name, event.line(is_deleted=True))
        for event in redeliveries:  # the same line again, arriving later
            writer.write(arrival_day, event.source.name, event.line())
        if rank > 0:
            # A correction moving an event to the newest late date.
            for event in moves:
                moved = replace(event, event_id=f"{event.event_id}-late-move")
                moved.seconds = days[-1] * DAY + event.seconds % DAY
                writer.write(
                    arrival_day,
                    event.source.name,
                    moved.line(is_correction=True, corrects_event_id=event.event_id),
                )
    # Quarantined lines: no partition touched.
    for text in _malformed_lines(rng, arrival_day, 2):
        writer.write(arrival_day, "web", text)
    nokey = _new_event(rng, per_source["mobile"], None, days[-1], scale.users)
    nokey.user_id = None
    writer.write(arrival_day, "mobile", nokey.line())
    writer.close()
    return [
        Batch(source, scale.late_arrival_ts, writer.path(day, source), writer.lines[(day, source)])
        for day, source in sorted(writer.lines)
    ]


def generate(scale: Scale, root: Path) -> History:
    """Write (or reuse) the landing files of ``scale`` under ``root/<scale.key()>``."""
    folder = root / scale.key()
    manifest = folder / "manifest.json"
    if manifest.exists():
        data = json.loads(manifest.read_text())
        return History(
            scale=scale,
            root=folder,
            history=[_batch(b) for b in data["history"]],
            late=[_batch(b) for b in data["late"]],
            stats=data["stats"],
        )
    for sub in ("history", "late"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    history, stats, known = _write_history(scale, folder / "history")
    customers = _write_customers(scale, folder / "history")
    stats["customer_lines"] = sum(b.lines for b in customers)
    history = sorted(customers + history, key=lambda b: (b.arrival_ts, b.feed != "customers"))
    late = _write_late_batch(scale, folder / "late", known)
    stats["late_batch_lines"] = sum(b.lines for b in late)
    stats["history_lines"] = sum(b.lines for b in history)
    manifest.write_text(
        json.dumps(
            {
                "scale": {k: v for k, v in asdict(scale).items() if k != "mix"},
                "stats": stats,
                "history": [_batch_json(b) for b in history],
                "late": [_batch_json(b) for b in late],
            },
            indent=1,
        )
    )
    return History(scale=scale, root=folder, history=history, late=late, stats=stats)


def _batch_json(batch: Batch) -> dict:
    return {
        "source": batch.source,
        "feed": batch.feed,
        "arrival_ts": batch.arrival_ts.isoformat(),
        "path": str(batch.path),
        "lines": batch.lines,
    }


def _batch(data: dict) -> Batch:
    return Batch(
        data["source"],
        datetime.fromisoformat(data["arrival_ts"]),
        Path(data["path"]),
        data["lines"],
        data["feed"],
    )
