"""A run's vars, checked: the clock (``as_of``) and the backfill window.

``macros/backfill.sql`` calls these through the adapter in on-run-start
(``validate_run_vars``), so an unusable value fails the run before any model
writes, with one sentence naming the value and what is wrong with it. The
macros keep what needs Spark: whether Spark reads the ``as_of`` as a timestamp.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from typing import Any

MODES = ("backfill", "replay")
EXAMPLE_AS_OF = "2024-02-01T00:00:00+00:00"
# ISO 8601 as Spark reads it: a date, optionally a time of day (seconds and up
# to 6 decimals optional) with a UTC offset (Z, +HH:MM or +HHMM).
AS_OF_FORMAT = re.compile(
    r"(?P<date>[0-9]{4}-[0-9]{2}-[0-9]{2})"
    r"(?:[T ](?P<time>(?P<hour>[0-9]{2}):(?P<minute>[0-9]{2})(?::(?P<second>[0-9]{2})(?:[.][0-9]{1,6})?)?)"
    r"(?P<offset>Z|[+-](?P<offset_hours>[0-9]{2}):?(?P<offset_minutes>[0-9]{2})))?"
)
DATE_FORMAT = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})")
# Spark reads offsets up to 18 hours.
MAX_OFFSET_MINUTES = 18 * 60


class RunVarsError(ValueError):
    """A run var that cannot be used; the message says which and why."""


@dataclass(frozen=True)
class BackfillWindow:
    """The event dates a backfill or replay loads again, both ends included."""

    start: date
    end: date
    reason: str
    mode: str

    def as_macro_value(self) -> dict[str, str]:
        """What the ``backfill_window`` macro returns: dates as YYYY-MM-DD text."""
        return {"start": self.start.isoformat(), "end": self.end.isoformat(), "reason": self.reason, "mode": self.mode}


def calendar_date(text: Any) -> date | None:
    """``text`` (YYYY-MM-DD) as a date, or None when it is no day of the calendar (2024-02-30, 2024-13-01)."""
    match = DATE_FORMAT.fullmatch(str(text))
    if match is None:
        return None
    try:
        return date(*(int(part) for part in match.groups()))
    except ValueError:
        return None


def backfill_mode(mode: Any) -> str:
    """The ``backfill_mode`` var: backfill or replay."""
    if mode not in MODES:
        raise RunVarsError(f"backfill_mode must be backfill or replay, got '{mode}'")
    return str(mode)


def backfill_window(start: Any, end: Any, reason: Any, mode: Any) -> BackfillWindow | None:
    """The window of the ``backfill_start``/``backfill_end`` vars, or None when neither is given.

    A window needs both ends, real dates, the end not before the start, and a
    ``backfill_reason`` (the audit records it); ``mode`` is ``backfill_mode``.
    """
    if start is None and end is None:
        return None
    if start is None or end is None:
        raise RunVarsError("Backfill needs both backfill_start and backfill_end (YYYY-MM-DD)")
    days = []
    for name, value in (("backfill_start", start), ("backfill_end", end)):
        day = calendar_date(value)
        if day is None:
            raise RunVarsError(f"{name} must be a date YYYY-MM-DD, got '{value}'")
        days.append(day)
    if days[1] < days[0]:
        raise RunVarsError(f"backfill_end {end} is before backfill_start {start}")
    if not reason:
        raise RunVarsError("A backfill needs backfill_reason, e.g. --vars '{backfill_reason: \"partner resend\"}'")
    return BackfillWindow(days[0], days[1], str(reason), backfill_mode(mode))


def as_of_format_problem(text: str) -> str | None:
    """The error for an ``as_of`` that is not ISO 8601 with a UTC offset, or None."""
    if AS_OF_FORMAT.fullmatch(text) is None:
        return f"as_of must be ISO-8601 with a UTC offset (e.g. {EXAMPLE_AS_OF}), got '{text}'"
    return None


def as_of_problem(text: str) -> str | None:
    """The error for an ``as_of`` that names no instant, or None.

    Beyond the format: a calendar date, a time of day up to 23:59:59 and an
    offset within -18:00 to +18:00. Spark reads an impossible time as null,
    which would judge every status at no time.
    """
    format_problem = as_of_format_problem(text)
    if format_problem:
        return format_problem
    parts = AS_OF_FORMAT.fullmatch(text)
    assert parts is not None
    problem = None
    if calendar_date(parts["date"]) is None:
        problem = f"{parts['date']} is not a date"
    elif parts["time"] and (int(parts["hour"]) > 23 or int(parts["minute"]) > 59 or int(parts["second"] or 0) > 59):
        problem = f"{parts['time']} is not a time of day"
    elif parts["offset_hours"] and (
        int(parts["offset_minutes"]) > 59
        or int(parts["offset_hours"]) * 60 + int(parts["offset_minutes"]) > MAX_OFFSET_MINUTES
    ):
        problem = f"offset {parts['offset']} is not between -18:00 and +18:00"
    if problem:
        return f"as_of '{text}': {problem} (e.g. {EXAMPLE_AS_OF})"
    return None
