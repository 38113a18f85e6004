"""`dbt source freshness` on landed data, judged from known ingest times.

The bronze feeds with a freshness check (models/bronze/_bronze__sources.yml,
_bronze__customer_sources.yml) are judged by ``ingested_at``, the wall clock
of the ingest call, not by the arrival time a batch claims: warn after 24 h,
no error threshold. The test freezes ingest's clock so the ingest times are
known: the event sample lands 48 h before the check, a customer change feed
1 h before. Expected: events warn (48 h > 24 h), customers pass (1 h); then
a new event file landed now brings events back to pass. Sources without a
freshness check are not run.

Tests in this module share one deployment and run in order.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from python_jobs.landing import ingest
from tests.pytest.conftest import ROOT, Project

LANDING = ROOT / "seeds" / "landing"
EVENTS = "source.latecomer.bronze.bronze_events"
CUSTOMERS = "source.latecomer.bronze_crm.bronze_customer_changes"
WARN_AFTER = {"count": 24, "period": "hour"}
EVENTS_AGE = timedelta(hours=48)
CUSTOMERS_AGE = timedelta(hours=1)
# How long the module may take between landing and checking (a margin on ages).
SLACK = timedelta(minutes=30)


@contextmanager
def ingest_clock(frozen: datetime) -> Iterator[None]:
    """Ingest's ``datetime.now`` returns ``frozen`` (so ingested_at is known)."""

    class FrozenClock(datetime):
        @classmethod
        def now(cls, tz: Any = None) -> datetime:
            return frozen if tz is None else frozen.astimezone(tz)

        @classmethod
        def fromisoformat(cls, text: str) -> datetime:
            # A plain datetime: Spark accepts no subclass as a timestamp.
            return datetime.fromisoformat(text)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ingest, "datetime", FrozenClock)
        yield


def freshness(project: Project) -> dict[str, dict[str, Any]]:
    """Run `dbt source freshness` and return sources.json's results by source id."""
    project.dbt("source", "freshness", write_json=True)
    results = json.loads((project.artifacts / "sources.json").read_text())["results"]
    return {result["unique_id"]: result for result in results}


def loaded_at(result: dict[str, Any]) -> datetime:
    """max_loaded_at as dbt wrote it. Spark's rows reach Python in the process's
    local time, so only differences between two of these are compared."""
    value = datetime.fromisoformat(result["max_loaded_at"].replace("Z", "+00:00"))
    return value if value.tzinfo else value.replace(tzinfo=UTC)


@pytest.fixture(scope="module")
def landed(module_project: Project, tmp_path_factory: pytest.TempPathFactory) -> Project:
    """The event sample ingested 48 h ago, a customer change feed 1 h ago."""
    now = datetime.now(UTC).replace(microsecond=0)
    with (ROOT / "seeds" / "landing_batches.csv").open(newline="") as handle:
        batches = list(csv.DictReader(handle))
    with ingest_clock(now - EVENTS_AGE):
        for batch in batches:
            assert (
                module_project.ingest(
                    batch["source_system"], LANDING / batch["file_name"], arrival_ts=batch["arrival_ts"]
                )
                == 0
            )
    customers = tmp_path_factory.mktemp("freshness") / "customers.ndjson"
    customers.write_text(
        json.dumps({"customer_id": "u1", "tier": "gold", "region": "eu", "updated_at": "2024-01-10T00:00:00Z"}) + "\n"
    )
    with ingest_clock(now - CUSTOMERS_AGE):
        assert module_project.ingest("crm", customers, arrival_ts="2024-01-16T00:00:00+00:00", feed="customers") == 0
    return module_project


def test_stale_feed_warns_fresh_feed_passes(landed: Project) -> None:
    results = freshness(landed)
    # Only the sources with a freshness check run.
    assert set(results) == {EVENTS, CUSTOMERS}
    for result in results.values():
        assert result["criteria"]["warn_after"] == WARN_AFTER
        assert not result["criteria"].get("error_after", {}).get("count")

    events = results[EVENTS]
    assert EVENTS_AGE.total_seconds() <= events["max_loaded_at_time_ago_in_s"] < (EVENTS_AGE + SLACK).total_seconds()
    assert events["status"] == "warn"  # 48 h > 24 h; no error_after, so never error

    customers = results[CUSTOMERS]
    assert CUSTOMERS_AGE.total_seconds() <= customers["max_loaded_at_time_ago_in_s"]
    assert customers["max_loaded_at_time_ago_in_s"] < (CUSTOMERS_AGE + SLACK).total_seconds()
    assert customers["status"] == "pass"  # 1 h < 24 h

    # The two ingest clocks, exactly: max(ingested_at) of each feed.
    assert loaded_at(customers) - loaded_at(events) == EVENTS_AGE - CUSTOMERS_AGE


def test_new_landing_makes_the_feed_fresh(landed: Project, tmp_path: Path) -> None:
    late = tmp_path / "late.ndjson"
    late.write_text(
        json.dumps(
            {
                "event_id": "fr-1",
                "event_type": "order_placed",
                "user_id": "u1",
                "amount": 5,
                "event_ts": "2024-01-12T08:00:00Z",
            }
        )
        + "\n"
    )
    assert landed.ingest("backoffice", late, arrival_ts="2024-01-22T10:00:00+00:00") == 0  # the real clock
    results = freshness(landed)
    events = results[EVENTS]
    assert events["max_loaded_at_time_ago_in_s"] < SLACK.total_seconds()
    assert events["status"] == "pass"
    assert results[CUSTOMERS]["status"] == "pass"
