"""A build's stamp never goes behind an earlier build's (python_jobs/core/run_clock.py).

Every incremental step takes the rows stamped after its high-water mark. A
build on a host whose clock ran a year ahead stamps its rows a year ahead; a
later build by a clock put right must still be seen by every step. The rule
is checked on its own (no Spark), then on a deployment whose second build
runs with its clock a year ahead: the third build's late and new events must
reach gold, as the plain-Python reference says.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from python_jobs.core import run_clock
from tests.pytest.conftest import Project
from tests.pytest.event_rows import event as order
from tooling.reference import Arrival, arrivals_from_lines, expected_daily_revenue

NOON = datetime(2024, 3, 1, 12, 0, tzinfo=UTC)


def test_a_stamp_is_the_wall_clock_unless_the_last_stamp_is_not_earlier() -> None:
    assert run_clock.run_stamp(NOON, None) == NOON
    assert run_clock.run_stamp(NOON, "") == NOON
    # An earlier last stamp: the wall clock.
    assert run_clock.run_stamp(NOON, "2024-03-01 11:59:59.999999") == NOON
    # The same or a later one: one microsecond after it.
    assert run_clock.run_stamp(NOON, "2024-03-01 12:00:00.000000") == NOON + timedelta(microseconds=1)
    assert run_clock.run_stamp(NOON, "2025-03-01 12:00:00.000000") == datetime(2025, 3, 1, 12, 0, 0, 1, tzinfo=UTC)
    # A naive wall clock is UTC (dbt's run_started_at is aware; the Spark session reads UTC).
    assert run_clock.run_stamp(NOON.replace(tzinfo=None), None) == NOON
    # Written as Spark reads it back.
    assert run_clock.format_stamp(NOON + timedelta(microseconds=7)) == "2024-03-01 12:00:00.000007"
    assert run_clock.parse_stamp(run_clock.format_stamp(NOON)) == NOON


def test_a_damaged_last_stamp_is_an_error_that_names_the_property() -> None:
    with pytest.raises(ValueError, match="latecomer.last_run_ts holds 'yesterday'"):
        run_clock.run_stamp(NOON, "yesterday")


@contextmanager
def clock_ahead(by: timedelta) -> Iterator[None]:
    """dbt invocations started inside see run_started_at moved by ``by``, as on a host whose clock is off."""
    from dbt import tracking

    original = tracking.User.__init__

    def skewed(self: Any, cookie_dir: Any) -> None:
        original(self, cookie_dir)
        self.run_started_at += by

    tracking.User.__init__ = skewed  # type: ignore[method-assign]
    try:
        yield
    finally:
        tracking.User.__init__ = original  # type: ignore[method-assign]


def test_rows_of_a_build_after_one_with_its_clock_ahead_reach_gold(project: Project, tmp_path: Path) -> None:
    arrivals: list[Arrival] = []

    def land(name: str, rows: list[dict[str, Any]], arrival_ts: str) -> None:
        path = tmp_path / name
        path.write_text("".join(json.dumps(row) + "\n" for row in rows))
        assert project.ingest("web", path, arrival_ts=arrival_ts) == 0
        arrivals.extend(
            arrivals_from_lines(
                "web", datetime.fromisoformat(arrival_ts).astimezone(UTC), name, path.read_text().splitlines()
            )
        )

    def gold() -> dict[str, tuple[int, Decimal]]:
        rows = project.table("gold", "gold_daily_revenue").collect()
        return {r.event_date.isoformat(): (r.orders, r.gross_revenue) for r in rows}

    def expected() -> dict[str, tuple[int, Decimal]]:
        return {day.isoformat(): (o, gross) for (day, _), (o, gross, _) in expected_daily_revenue(arrivals).items()}

    def stamps() -> dict[str, datetime]:
        rows = project.table("silver", "silver_events").collect()
        return {r.event_id: r.changed_run_at for r in rows}

    select = "+gold_daily_revenue"
    land("first.ndjson", [order("a", "01", 10), order("b", "01", 20)], "2024-03-01T12:00:00+00:00")
    project.build("2024-03-01T18:00:00+00:00", select=select)
    assert gold() == expected() == {"2024-03-01": (2, Decimal("30.00"))}

    land("second.ndjson", [order("c", "02", 30)], "2024-03-02T12:00:00+00:00")
    with clock_ahead(timedelta(days=365)):
        project.build("2024-03-02T18:00:00+00:00", select=select)
    assert gold() == expected()
    ahead = stamps()["c"]
    assert ahead > datetime.now() + timedelta(days=300)  # noqa: DTZ005 (the session's timestamps are naive UTC)

    # The clock is right again: a late order for 03-01 and a new day.
    land("third.ndjson", [order("d", "01", 40), order("e", "03", 50)], "2024-03-03T12:00:00+00:00")
    project.build("2024-03-03T18:00:00+00:00", select=select)
    assert expected() == {
        "2024-03-01": (3, Decimal("70.00")),
        "2024-03-02": (1, Decimal("30.00")),
        "2024-03-03": (1, Decimal("50.00")),
    }
    assert gold() == expected()
    assert stamps()["d"] == stamps()["e"] == ahead + timedelta(microseconds=1)
    assert any("later than the clock of this host" in message for message in project.messages)


def test_a_new_as_of_keeps_dbt_partial_parse_and_reaches_the_python_models(project: Project) -> None:
    """The runner hands as_of to dbt as LATECOMER_AS_OF: a build at a new time
    parses only what reads the variable (the Python models' meta), where a new
    --vars value would make dbt parse the whole project again."""
    first, second = "2024-03-01T06:00:00+00:00", "2024-03-02T06:00:00+00:00"
    project.dbt("parse", vars={"as_of": first})
    project.dbt("parse", vars={"as_of": second}, write_json=True)
    assert not [m for m in project.messages if "Unable to do partial parsing" in m], project.messages
    manifest = json.loads((project.artifacts / "manifest.json").read_text())
    metas = {name: manifest["nodes"][f"model.latecomer.{name}"]["config"]["meta"]["as_of"]
             for name in ("gold_completeness", "gold_completeness_backtest")}  # fmt: skip
    assert metas == {"gold_completeness": second, "gold_completeness_backtest": second}
