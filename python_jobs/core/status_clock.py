"""When partition statuses can move: the clock a restated model's skip check reads.

An event date's status (live, preliminary, final; the ``partition_status``
macro) changes only at the end of the date plus a tier's lateness: for a
boundary of ``h`` hours, at midnight UTC plus ``h`` hours, every day. Between
two such instants no status moves, whatever the data. ``status_epoch`` names
the latest one at or before ``as_of``: two ``as_of`` values with the same epoch
give every partition the same status, so a model whose inputs did not move
need not be evaluated again.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime, timedelta

DAY = timedelta(days=1)


def parse_instant(value: str | datetime) -> datetime:
    """An ``as_of`` (ISO 8601, a date alone meaning its midnight) or a datetime, in UTC.

    Naive values are taken as UTC, as the Spark session reads them.
    """
    instant = value if isinstance(value, datetime) else datetime.fromisoformat(str(value).strip())
    if instant.tzinfo is None:
        return instant.replace(tzinfo=UTC)
    return instant.astimezone(UTC)


def status_epoch(as_of: str | datetime, boundary_hours: Iterable[float]) -> datetime:
    """The latest instant at or before ``as_of`` at which some date's status changes.

    ``boundary_hours`` are the lateness hours after the end of an event date at
    which its status moves (live to preliminary, preliminary to final).
    """
    instant = parse_instant(as_of)
    midnight = instant.replace(hour=0, minute=0, second=0, microsecond=0)
    latest = []
    for hours in boundary_hours:
        offset = timedelta(hours=float(hours)) % DAY
        candidate = midnight + offset
        latest.append(candidate if candidate <= instant else candidate - DAY)
    if not latest:
        raise ValueError("status_epoch needs at least one boundary")
    return max(latest)
