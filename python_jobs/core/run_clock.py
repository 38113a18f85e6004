"""The run clock: the stamp a build puts on the rows it writes.

Every incremental step takes the rows newer than its high-water mark, the
largest stamp it consumed (``changed_run_at``, ``ledger_run_at``, ...). Those
stamps must grow from one build to the next, or a step skips rows for good:
a build on a host whose clock ran ahead stamps its rows in the future, and
every later build, stamped by a clock put right, writes rows older than that
mark.

So a build's stamp is its wall-clock start, unless that is not later than the
last build's stamp: then it is one microsecond after it. The last stamp is
kept with the deployment's tables (a property of the change manifest, written
at the start of each build, before any row carries the new stamp), so it
survives a build that stops half way. Business time (``as_of``, statuses) is
not affected: it still defaults to the wall clock.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

# The table property that holds the last build's stamp.
PROPERTY = "latecomer.last_run_ts"
# Spark timestamps have microseconds: the smallest step after a stamp.
TICK = timedelta(microseconds=1)
STAMP_FORMAT = "%Y-%m-%d %H:%M:%S.%f"


def parse_stamp(text: str) -> datetime:
    """A stamp as written by :func:`format_stamp` (UTC, no offset)."""
    try:
        return datetime.strptime(text.strip(), STAMP_FORMAT).replace(tzinfo=UTC)
    except ValueError:
        raise ValueError(
            f"table property {PROPERTY} holds {text!r}, not a stamp like 2024-03-01 12:00:00.000000; "
            f"unset it (ALTER TABLE ... UNSET TBLPROPERTIES ('{PROPERTY}')) only if no build ran with a clock "
            "ahead of this host's"
        ) from None


def format_stamp(stamp: datetime) -> str:
    """UTC, microseconds, as Spark reads a timestamp literal in a UTC session."""
    return stamp.astimezone(UTC).strftime(STAMP_FORMAT)


def run_stamp(wall_clock: datetime, last: str | None) -> datetime:
    """This build's stamp: ``wall_clock`` (naive means UTC), or just after ``last`` when that is not earlier."""
    now = wall_clock.replace(tzinfo=UTC) if wall_clock.tzinfo is None else wall_clock.astimezone(UTC)
    if last is None or not last.strip():
        return now
    return max(now, parse_stamp(last) + TICK)
