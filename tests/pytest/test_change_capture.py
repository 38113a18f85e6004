"""Change capture survives a run that stops between silver_events and its change log.

A run that stops after the silver_events MERGE and before
silver_event_changes (killed, or the change log failing) is played by
`dbt run --select +silver_events`: the ledger and silver take the new rows,
nothing downstream runs. Then each key changes again, and a whole build runs:

    k1  an order of 03-01, corrected to 03-02 (the stopped run), corrected
        again to 03-03 with a new amount;
    k2  an order of 03-01, corrected to 03-02 (the stopped run), then the
        original re-sent: the correction still wins, so silver takes the
        arrival as a duplicate, which gold ignores.

The change log must compare each key with what it last logged (03-01), not
with the stored row the stopped run wrote (03-02): gold then moves k1 from
03-01 to 03-03 and k2 from 03-01 to 03-02. Expected figures come from the
plain-Python reference.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from tests.pytest.conftest import Project
from tests.pytest.event_rows import correction, event
from tooling.reference import Arrival, arrivals_from_lines, expected_daily_revenue

SOURCE = "web"


def test_a_change_made_by_a_stopped_run_is_logged_by_the_next(project: Project, tmp_path: Path) -> None:
    arrivals: list[Arrival] = []

    def land(name: str, rows: list[dict[str, Any]], arrival_ts: str) -> None:
        path = tmp_path / name
        path.write_text("".join(json.dumps(row) + "\n" for row in rows))
        assert project.ingest(SOURCE, path, arrival_ts=arrival_ts) == 0
        arrivals.extend(
            arrivals_from_lines(
                SOURCE, datetime.fromisoformat(arrival_ts).astimezone(UTC), name, path.read_text().splitlines()
            )
        )

    def gold() -> dict:
        rows = project.table("gold", "gold_daily_revenue").collect()
        return {r.event_date.isoformat(): (r.orders, r.gross_revenue) for r in rows if r.orders or r.refunds}

    def expected() -> dict:
        return {
            day.isoformat(): (orders, gross)
            for (day, _), (orders, gross, refunds) in expected_daily_revenue(arrivals).items()
            if orders or refunds
        }

    land(
        "first.ndjson",
        [event("k1", "01", 10), event("k2", "01", 20), event("other", "01", 5)],
        "2024-03-01T12:00:00+00:00",
    )
    project.build("2024-03-01T18:00:00+00:00", select="+gold_daily_revenue")
    assert gold() == expected() == {"2024-03-01": (3, Decimal("35.00"))}

    land(
        "second.ndjson",
        [correction("k1-c1", "k1", "02", 10), correction("k2-c1", "k2", "02", 20)],
        "2024-03-02T12:00:00+00:00",
    )
    project.dbt("run", "--select", "+silver_events", vars={"as_of": "2024-03-02T18:00:00+00:00"})
    log = project.table("silver", "silver_event_changes")
    assert log.where("event_id in ('k1', 'k2') and event_date = '2024-03-02'").count() == 0  # not logged

    land("third.ndjson", [correction("k1-c2", "k1-c1", "03", 12), event("k2", "01", 20)], "2024-03-03T12:00:00+00:00")
    project.build("2024-03-03T18:00:00+00:00", select="+gold_daily_revenue")
    assert expected() == {
        "2024-03-01": (1, Decimal("5.00")),
        "2024-03-02": (1, Decimal("20.00")),
        "2024-03-03": (1, Decimal("12.00")),
    }
    assert gold() == expected()

    # What the change log took for each key: from what it last logged (03-01).
    # Read afresh: a DataFrame made before the build may keep the table as it
    # was then (Iceberg's catalog cache lets a loaded table go after 30 s).
    log = project.table("silver", "silver_event_changes")
    logged = {
        r.event_id: (r.previous_event_date.isoformat(), r.event_date.isoformat(), r.action)
        for r in log.where("event_id in ('k1', 'k2') and previous_event_date is not null").collect()
    }
    assert logged == {
        "k1": ("2024-03-01", "2024-03-03", "correction"),
        "k2": ("2024-03-01", "2024-03-02", "correction"),
    }
