"""Synthetic store history for the benchmark (python -m tooling.bench).

Writes NDJSON landing files in the ingest contract (see python_jobs.landing.ingest),
with the mix of the sample data at any scale:

* the events of ``landing_days`` consecutive arrival days land together, at
  the midnight after the last of them, in one file per source (web and
  mobile; a few mobile events come without event_id, so they get surrogate
  keys): one ingest call per file;
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
the batch, plus malformed and null-key lines (quarantined, no partition). It
also empties a quiet day near the end (:attr:`Scale.emptied_day`): the
history holds two orders on it, and the late batch deletes both.

Every history ends on the same day (:data:`LAST_DAY`) and a longer one reaches
further back: a day's events depend on its date and the seed only, so
histories of different lengths share their recent days, and the late batch
(k dates before the end) is the same bytes for every length. A history sweep
then changes nothing but the history behind the late batch.

Deterministic: the same :class:`Scale` gives the same bytes, so a generated
history can be reused between runs (see :func:`generate`).
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, date, datetime, timedelta
from functools import lru_cache
from pathlib import Path

from python_jobs.core.constants import CUSTOMER_TIERS, MONEY_EVENT_TYPES

EPOCH = datetime(2024, 1, 1, tzinfo=UTC)
DAY = 86_400
# Days are numbered from EPOCH; every history ends on day LAST_DAY (2025-12-30).
MAX_DAYS = 730
LAST_DAY = MAX_DAYS - 1
GENERATOR_VERSION = 5


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
    # Arrival days landed together. At most 7: an event 20 days late then
    # still lands inside the 30-day watermark.
    landing_days: int = 7
    mix: Mix = field(default_factory=Mix)

    def __post_init__(self) -> None:
        if not 2 <= self.days <= MAX_DAYS:
            raise ValueError(f"days must be between 2 and {MAX_DAYS}")
        if not 1 <= self.k <= min(self.days, 23):
            raise ValueError(f"k must be between 1 and {min(self.days, 23)}")
        if self.events_per_day < 100:
            raise ValueError("events_per_day must be at least 100")
        if not 1 <= self.landing_days <= 7:
            raise ValueError("landing_days must be between 1 and 7")

    @property
    def first_day(self) -> int:
        return LAST_DAY - self.days + 1

    @property
    def last_day(self) -> int:
        return LAST_DAY

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

    def landing_end(self, arrival_day: int) -> int:
        """The last arrival day of the landing that ``arrival_day`` belongs to.
        Landings are counted back from the last day, so one always ends there."""
        return self.last_day - (self.last_day - arrival_day) // self.landing_days * self.landing_days

    def arrival_ts(self, arrival_day: int) -> datetime:
        """When the lines of arrival day ``a`` land: at the midnight (UTC) after
        the last day of its landing."""
        return EPOCH + timedelta(days=self.landing_end(arrival_day) + 1)

    @property
    def late_arrival_ts(self) -> datetime:
        """The late batch lands the day after the last history file, so its
        arrival-date partition of bronze holds nothing else."""
        return EPOCH + timedelta(days=self.last_day + 2, hours=6)

    @property
    def initial_as_of(self) -> datetime:
        """As-of of the initial build (after the last history file landed)."""
        return EPOCH + timedelta(days=self.last_day + 2, minutes=30)

    @property
    def late_as_of(self) -> datetime:
        """As-of of the late-batch builds. No live/preliminary/final boundary
        (always midnight UTC) lies between it and ``initial_as_of``, so no
        partition's status moves: only the late batch restates gold."""
        return EPOCH + timedelta(days=self.last_day + 2, hours=6, minutes=30)

    @property
    def late_days(self) -> list[int]:
        """The k event days the late batch touches, oldest first: spread evenly
        over the 22 days before the last history day (inside the 30-day
        watermark): 1, 12 and 22 days before it for k=3."""
        span = min(self.days, 23)
        pool = list(range(1, span)) if self.k < span else list(range(span))
        step = (len(pool) - 1) / max(self.k - 1, 1)
        offsets = [pool[round(i * step)] for i in range(self.k)]
        return sorted(self.last_day - o for o in set(offsets))

    @property
    def emptied_day(self) -> int | None:
        """A quiet event day, the newest at least two days before the last that
        the late batch does not otherwise touch (two days before the last for
        k=3): the history holds two orders on it, both deleted by the late
        batch, which so empties the day. A peer that overwrites only the days
        its batches return rows for keeps that day's stale rows; a lookback of
        at least its distance from the late batch's day recomputes it. None
        when every such day is a late day."""
        late = set(self.late_days)
        return next((self.last_day - o for o in range(2, self.days) if self.last_day - o not in late), None)

    def key(self) -> str:
        """Folder name identifying the generated bytes."""
        return (
            f"v{GENERATOR_VERSION}_d{self.days}_e{self.events_per_day}_k{self.k}"
            f"_l{self.late_per_partition}_s{self.seed}_g{self.landing_days}"
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
        """The event dates the late batch touches: the k late days and the emptied day."""
        emptied = [] if self.scale.emptied_day is None else [self.scale.emptied_day]
        return sorted(str(self.scale.date_of(d)) for d in [*self.scale.late_days, *emptied])

    def as_json(self) -> dict:
        return {
            "scale": {k: v for k, v in asdict(self.scale).items() if k != "mix"},
            "mix": asdict(self.scale.mix),
            "late_dates": self.late_dates,
            "history_files": len(self.history),
            "late_files": len(self.late),
            "stats": self.stats,
        }


# "HH:MM:SS" of every second of a day.
_CLOCK = tuple(f"{s // 3600:02d}:{s // 60 % 60:02d}:{s % 60:02d}" for s in range(DAY))


@lru_cache(maxsize=4096)
def _date_text(day: int) -> str:
    return (EPOCH + timedelta(days=day)).date().isoformat()


def _ts_text(epoch_seconds: int, offset: tuple[int, str]) -> str:
    """Local time at ``offset`` of a UTC instant, ISO-8601 with the offset."""
    minutes, suffix = offset
    day, second = divmod(epoch_seconds + minutes * 60, DAY)
    return f"{_date_text(day)}T{_CLOCK[second]}{suffix}"


def _line(event_id: str | None, event_type: str, user_id: str | None, cents: int | None, ts_text: str) -> str:
    """One event as a JSON line (fields in the order the sources send them)."""
    text = f'{{"event_id": "{event_id}", ' if event_id is not None else "{"
    text += f'"event_type": "{event_type}", '
    if user_id is not None:
        text += f'"user_id": "{user_id}", '
    if cents is not None:
        text += f'"amount": {cents // 100}.{cents % 100:02d}, '
    return f'{text}"event_ts": "{ts_text}"}}\n'


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
        text = _line(self.event_id, self.event_type, self.user_id, self.cents, _ts_text(self.seconds, self.offset))
        if not extra:
            return text
        return text[:-2] + "".join(f', "{name}": {json.dumps(value)}' for name, value in extra.items()) + "}\n"


class _Writer:
    """Landing files, one per landing and source: the lines of each arrival
    day are buffered and, once the landing's last day has been generated,
    written in arrival-day order as one file (one file per ingest call)."""

    def __init__(self, folder: Path, landing_end: Callable[[int], int]) -> None:
        self.folder = folder
        self.landing_end = landing_end
        self.buffers: dict[tuple[int, str], list[str]] = {}  # (arrival day, source) -> lines
        self.lines: dict[tuple[int, str], int] = {}  # (landing's last day, source) -> lines written

    def path(self, landing_end: int, source: str) -> Path:
        return self.folder / f"landing_{landing_end:03d}_{source}.ndjson"

    def write(self, arrival_day: int, source: str, text: str) -> None:
        buffer = self.buffers.get((arrival_day, source))
        if buffer is None:
            buffer = self.buffers[(arrival_day, source)] = []
        buffer.append(text)

    def flush(self, through_day: int | None = None) -> None:
        """Write the landings whose last day is ``through_day`` or earlier (all
        by default): no more lines can arrive on a day already generated."""
        files: dict[tuple[int, str], list[str]] = {}
        for day, source in sorted(self.buffers):
            end = self.landing_end(day)
            if through_day is None or end <= through_day:
                files.setdefault((end, source), []).extend(self.buffers.pop((day, source)))
        for (end, source), lines in files.items():
            with self.path(end, source).open("w") as handle:
                handle.write("".join(lines))
            self.lines[(end, source)] = len(lines)


def _binomial(rand: Callable[[], float], trials: int, p: float) -> int:
    """Successes in ``trials`` draws of probability ``p``: the gaps between
    successes are geometric, so this draws once per success, not per trial."""
    if p <= 0:
        return 0
    count, position, log_q = 0, -1, math.log1p(-p)
    while True:
        position += 1 + int(math.log(1.0 - rand()) / log_q)
        if position >= trials:
            return count
        count += 1


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


def _write_history(scale: Scale, folder: Path) -> tuple[list[Batch], dict[str, int], dict[int, list[_Event]]]:
    """The history's event files. The hot loop: a line is formatted once,
    random draws are plain ``random()`` calls, and files are written whole."""
    mix = scale.mix
    last = scale.last_day
    writer = _Writer(folder, scale.landing_end)
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
    emptied = scale.emptied_day
    # Untouched money events with ids on the late batch's days, for its
    # corrections; on the emptied day, the day's two orders.
    known: dict[int, list[_Event]] = {d: [] for d in late_days}
    shares = [s.share for s in SOURCES]
    type_names = tuple(EVENT_TYPE_WEIGHTS)
    type_weights = tuple(EVENT_TYPE_WEIGHTS.values())
    n_offsets = len(OFFSETS)
    users = scale.users
    # Cumulative thresholds of the arrival roll.
    beyond = mix.beyond_watermark
    very_late = beyond + mix.very_late
    late = very_late + mix.late
    dup_across = mix.dup_within + mix.dup_across
    deletion = mix.correction + mix.deletion
    for day in range(scale.first_day, last + 1):
        if day == emptied:
            known[day] = _write_quiet_day(scale, writer, day)
            stats["events"] += len(known[day])
            continue
        # Seeded by the day alone: a day is the same in every history that has it.
        rng = random.Random(f"{scale.seed}:{day}")
        rand = rng.random
        n = scale.events_per_day
        sources = rng.choices(SOURCES, shares, k=n)
        types = rng.choices(type_names, type_weights, k=n)
        base = day * DAY
        buffers = writer.buffers
        for i in range(n):
            source = sources[i]
            event_type = types[i]
            id_less = source.id_less > 0 and rand() < source.id_less
            event_id = None if id_less else f"{source.prefix}{day:03d}-{i:07d}"
            user_id: str | None = f"u{int(rand() * users) + 1}"
            seconds = base + int(rand() * DAY)
            cents = int(rand() * 49_900) + 100 if event_type in AMOUNT_TYPES else None
            offset = OFFSETS[int(rand() * n_offsets)]
            stats["events"] += 1
            if id_less:
                stats["id_less"] += 1
                if rand() < mix.null_key:
                    user_id = None
                    stats["null_key"] += 1
            roll = rand()
            arrival = day
            touched = False  # quarantined, duplicated, corrected or deleted
            if roll < beyond:
                arrival = day + 31 + int(rand() * 10)
                if arrival > last:
                    arrival = day
                else:
                    stats["beyond_watermark"] += 1
                    touched = True
            elif roll < very_late:
                arrival = min(day + 4 + int(rand() * 17), last)
                stats["very_late"] += arrival > day
            elif roll < late:
                arrival = min(day + 1 + int(rand() * 3), last)
                stats["late"] += arrival > day
            name = source.name
            text = _line(event_id, event_type, user_id, cents, _ts_text(seconds, offset))
            buffer = buffers.get((arrival, name))
            if buffer is None:
                buffer = buffers[(arrival, name)] = []
            buffer.append(text)
            roll = rand()
            if roll < mix.dup_within:
                buffer.append(text)
                stats["dup_within"] += 1
                touched = True
            elif roll < dup_across:
                writer.write(min(arrival + 1 + int(rand() * 3), last), name, text)
                stats["dup_across"] += 1
                touched = True
            if id_less or event_type not in MONEY_EVENT_TYPES:
                continue
            event = _Event(source, event_id, event_type, user_id, seconds, cents, offset)
            roll = rand()
            if roll < mix.correction:
                fixed = replace(event, event_id=f"{event_id}-c1")
                fixed.cents = max(100, (cents or 0) + int(rand() * 4000) - 2000)
                if rand() < mix.correction_moves:
                    fixed.seconds += int(rand() * 2 * DAY) - DAY
                    if emptied is not None and fixed.seconds // DAY == emptied:
                        # never onto the emptied day: one day further
                        fixed.seconds += DAY if day > emptied else -DAY
                    stats["correction_moves"] += 1
                writer.write(
                    min(arrival + int(rand() * 4), last),
                    name,
                    fixed.line(is_correction=True, corrects_event_id=event_id),
                )
                stats["corrections"] += 1
                touched = True
            elif roll < deletion:
                writer.write(min(arrival + int(rand() * 4), last), name, event.line(is_deleted=True))
                stats["deletions"] += 1
                touched = True
            if not touched and day in late_days and len(known[day]) < 200:
                known[day].append(event)
        for source in SOURCES:
            lines = len(writer.buffers.get((day, source.name), ()))
            if not lines:
                continue
            count = _binomial(rand, lines, mix.malformed)
            if day == scale.first_day and source.name == "web":
                count = max(count, 1)
            for text in _malformed_lines(rng, day, count):
                writer.write(day, source.name, text)
                stats["malformed"] += 1
            if source.name == "web" and rand() < 0.5:
                writer.write(day, source.name, "\n")  # a blank line: not data
        writer.flush(through_day=day)
    writer.flush()
    batches = [
        Batch(source, scale.arrival_ts(end), writer.path(end, source), writer.lines[(end, source)])
        for end, source in sorted(writer.lines)
    ]
    return batches, stats, known


def _write_quiet_day(scale: Scale, writer: _Writer, day: int) -> list[_Event]:
    """The emptied day's history: two web orders with ids, arriving on their
    day and never duplicated, corrected or deleted in the history."""
    rng = random.Random(f"{scale.seed}:{day}:quiet")
    web = SOURCES[0]
    events = []
    for i in range(2):
        event = _new_event(rng, web, f"{web.prefix}Q{day:03d}-{i:06d}", day, scale.users)
        event.event_type = "order_placed"
        event.cents = rng.randrange(100, 50_000)
        writer.write(day, web.name, event.line())
        events.append(event)
    return events


REGIONS = ("EU", "NA", "APAC", "LATAM")


def _write_customers(scale: Scale, folder: Path) -> list[Batch]:
    """The CRM feed: every customer, landed with the first events, and tier
    changes for 1% of them halfway through the history (some out of order).
    The late batch changes no customer."""
    rng = random.Random(f"{scale.seed}:customers")
    first_day = scale.first_day
    since = (EPOCH + timedelta(days=first_day - 30)).isoformat().replace("+00:00", "Z")
    first = folder / f"customers_{first_day:03d}_crm.ndjson"
    with first.open("w") as handle:
        for n in range(1, scale.users + 1):
            tier = CUSTOMER_TIERS[min(3, int(rng.expovariate(1.2)))]
            handle.write(
                f'{{"customer_id": "u{n}", "tier": "{tier}", '
                f'"region": "{rng.choice(REGIONS)}", "updated_at": "{since}"}}\n'
            )
    batches = [Batch("crm", scale.arrival_ts(first_day), first, scale.users, "customers")]
    half = scale.days // 2
    if half > 0:
        middle = first_day + half
        path = folder / f"customers_{middle:03d}_crm.ndjson"
        changed = rng.sample(range(1, scale.users + 1), max(1, scale.users // 100))
        with path.open("w") as handle:
            for n in changed:
                seconds = (middle - rng.randint(0, min(3, half))) * DAY + rng.randrange(DAY)
                handle.write(
                    f'{{"customer_id": "u{n}", "tier": "{rng.choice(CUSTOMER_TIERS)}", '
                    f'"region": "{rng.choice(REGIONS)}", '
                    f'"updated_at": "{_ts_text(seconds, (0, "Z"))}"}}\n'
                )
        batches.append(Batch("crm", scale.arrival_ts(middle), path, len(changed), "customers"))
    return batches


def _write_late_batch(scale: Scale, folder: Path, known: dict[int, list[_Event]]) -> list[Batch]:
    rng = random.Random(f"{scale.seed}:late")
    arrival_day = scale.last_day + 2
    writer = _Writer(folder, landing_end=lambda day: day)
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
    # The emptied day: its two orders deleted.
    if scale.emptied_day is not None:
        for event in known[scale.emptied_day]:
            writer.write(arrival_day, event.source.name, event.line(is_deleted=True))
    # Quarantined lines: no partition touched.
    for text in _malformed_lines(rng, arrival_day, 2):
        writer.write(arrival_day, "web", text)
    nokey = _new_event(rng, per_source["mobile"], None, days[-1], scale.users)
    nokey.user_id = None
    writer.write(arrival_day, "mobile", nokey.line())
    writer.flush()
    return [
        Batch(source, scale.late_arrival_ts, writer.path(end, source), writer.lines[(end, source)])
        for end, source in sorted(writer.lines)
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
