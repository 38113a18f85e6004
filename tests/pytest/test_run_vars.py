"""The run vars' rules (python_jobs/core/run_vars.py), without Spark or dbt.

test_backfill.py and test_hostile_vars.py keep one dbt build for each way a
bad var reaches these rules, to show it fails before anything is written.
"""

from __future__ import annotations

from datetime import date

import pytest

from python_jobs.core.run_vars import BackfillWindow, RunVarsError, as_of_problem, backfill_window, calendar_date

REASON = "partner resend"


@pytest.mark.parametrize(
    ("text", "day"),
    [
        ("2024-02-29", date(2024, 2, 29)),  # a leap year
        ("2000-02-29", date(2000, 2, 29)),  # divisible by 400: a leap year
        ("2023-02-29", None),
        ("2100-02-29", None),  # divisible by 100 only: not a leap year
        ("2024-04-31", None),
        ("2024-12-31", date(2024, 12, 31)),
        ("2024-13-01", None),
        ("2024-00-10", None),
        ("0000-01-01", None),  # no year 0
        ("2024-3-1", None),
        ("2024-03-01 ", None),
        ("last week", None),
        (None, None),
    ],
)
def test_calendar_date(text: str | None, day: date | None) -> None:
    assert calendar_date(text) == day


def test_no_window_without_either_end() -> None:
    assert backfill_window(None, None, None, "backfill") is None


def test_a_window_holds_its_days_reason_and_mode() -> None:
    assert backfill_window("2024-01-01", "2024-01-03", REASON, "replay") == BackfillWindow(
        date(2024, 1, 1), date(2024, 1, 3), REASON, "replay"
    )
    one_day = backfill_window("2024-02-29", "2024-02-29", REASON, "backfill")
    assert one_day is not None
    assert one_day.as_macro_value() == {
        "start": "2024-02-29",
        "end": "2024-02-29",
        "reason": REASON,
        "mode": "backfill",
    }


@pytest.mark.parametrize(
    ("start", "end", "reason", "mode", "message"),
    [
        ("2024-01-01", None, REASON, "backfill", "Backfill needs both backfill_start and backfill_end (YYYY-MM-DD)"),
        (None, "2024-01-01", REASON, "backfill", "Backfill needs both backfill_start and backfill_end (YYYY-MM-DD)"),
        ("2024-02-30", "2024-03-01", REASON, "backfill", "backfill_start must be a date YYYY-MM-DD, got '2024-02-30'"),
        ("2024-01-01", "last week", REASON, "backfill", "backfill_end must be a date YYYY-MM-DD, got 'last week'"),
        ("2024-01-03", "2024-01-01", REASON, "backfill", "backfill_end 2024-01-01 is before backfill_start 2024-01-03"),
        ("2024-01-01", "2024-01-03", None, "backfill", "A backfill needs backfill_reason"),
        ("2024-01-01", "2024-01-03", "", "backfill", "A backfill needs backfill_reason"),
        ("2024-01-01", "2024-01-03", REASON, "rerun", "backfill_mode must be backfill or replay, got 'rerun'"),
    ],
)
def test_an_unusable_window_names_what_is_wrong(
    start: str | None, end: str | None, reason: str | None, mode: str, message: str
) -> None:
    with pytest.raises(RunVarsError) as error:
        backfill_window(start, end, reason, mode)
    assert str(error.value).startswith(message)


@pytest.mark.parametrize(
    "text",
    [
        "2024-03-01",
        "2024-03-01T00:00:00+00:00",
        "2024-03-01T23:59:59.123456Z",
        "2024-03-01 05:30+0530",
        "2024-02-29T12:00:00-18:00",
        "2024-02-29T12:00:00+18:00",
    ],
)
def test_an_as_of_that_names_an_instant_passes(text: str) -> None:
    assert as_of_problem(text) is None


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("2024-02-30T00:00:00+00:00", "2024-02-30 is not a date"),
        ("2024-03-01T24:00:00+00:00", "24:00:00 is not a time of day"),
        ("2024-03-01T23:60+00:00", "23:60 is not a time of day"),
        ("2024-03-01T23:59:60Z", "23:59:60 is not a time of day"),
        ("2024-03-01T00:00:00+18:01", "offset +18:01 is not between -18:00 and +18:00"),
        ("2024-03-01T00:00:00+25:00", "offset +25:00 is not between -18:00 and +18:00"),
        ("2024-03-01T00:00:00-05:60", "offset -05:60 is not between -18:00 and +18:00"),
    ],
)
def test_an_as_of_that_names_no_instant_says_which_part_is_wrong(text: str, problem: str) -> None:
    assert as_of_problem(text) == f"as_of '{text}': {problem} (e.g. 2024-02-01T00:00:00+00:00)"


@pytest.mark.parametrize("text", ["yesterday", "2024-03-01T00:00:00", "2024-3-1", "2024-03-01T00:00+00:00 extra"])
def test_an_as_of_in_another_format_is_refused_with_an_example(text: str) -> None:
    assert as_of_problem(text) == (
        f"as_of must be ISO-8601 with a UTC offset (e.g. 2024-02-01T00:00:00+00:00), got '{text}'"
    )
