"""When partition statuses can move (python_jobs.core.status_clock), against hand-worked instants.

The project's boundaries are 24 h (live until daily_close) and 168 h
(preliminary until month_end): both fall at midnight UTC, so the epoch is the
last midnight. A 5-minute tier and a 30-hour tier fall at 00:05 and 06:00.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from python_jobs.core.status_clock import parse_instant, status_epoch


@pytest.mark.parametrize(
    ("as_of", "hours", "expected"),
    [
        # project defaults: the last midnight, whatever the time of day
        ("2025-01-10T05:00:00+00:00", [24, 168], datetime(2025, 1, 10, tzinfo=UTC)),
        ("2025-01-10T23:59:59+00:00", [24, 168], datetime(2025, 1, 10, tzinfo=UTC)),
        # exactly on a boundary: that boundary (statuses judged at it have moved)
        ("2025-01-10T00:00:00Z", [24, 168], datetime(2025, 1, 10, tzinfo=UTC)),
        # 30 h = one day and 6 h: 06:00 each day; before it, yesterday's 06:00 or today's 00:05
        ("2025-01-10T05:00:00+00:00", [30], datetime(2025, 1, 9, 6, tzinfo=UTC)),
        ("2025-01-10T05:00:00+00:00", [30, 1 / 12], datetime(2025, 1, 10, 0, 5, tzinfo=UTC)),
        ("2025-01-10T06:00:00+00:00", [30, 1 / 12], datetime(2025, 1, 10, 6, tzinfo=UTC)),
        # an offset: 2025-01-10T01:00+02:00 is 2025-01-09T23:00 UTC
        ("2025-01-10T01:00:00+02:00", [30], datetime(2025, 1, 9, 6, tzinfo=UTC)),
        # a date alone is its midnight UTC
        ("2025-01-10", [24], datetime(2025, 1, 10, tzinfo=UTC)),
    ],
)
def test_status_epoch_is_the_last_boundary_at_or_before_as_of(as_of, hours, expected):
    assert status_epoch(as_of, hours) == expected


def test_as_of_values_between_two_boundaries_share_an_epoch():
    early = status_epoch("2025-03-01T00:00:01+00:00", [24, 168])
    late = status_epoch("2025-03-01T23:59:59.999999+00:00", [24, 168])
    next_day = status_epoch("2025-03-02T00:00:00+00:00", [24, 168])
    assert early == late
    assert next_day > late


def test_naive_and_datetime_values_are_utc():
    assert parse_instant("2025-01-10T05:00:00") == datetime(2025, 1, 10, 5, tzinfo=UTC)
    assert parse_instant(datetime(2025, 1, 10, 5)) == datetime(2025, 1, 10, 5, tzinfo=UTC)


def test_no_boundary_is_an_error():
    with pytest.raises(ValueError, match="at least one boundary"):
        status_epoch("2025-01-10", [])
