"""Lateness metrics, alerts and watermark suggestions (models/monitoring, tests/monitoring).

The metrics are checked against the plain-Python reference on the sample; each
alert fires on a crafted feed whose figures are worked out by hand below, and
stays silent on the sample.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.pytest import sample_build
from tests.pytest.conftest import ROOT, Project
from tooling import reference

ALERT_TESTS = ("alert_late_share", "alert_p99_lateness", "alert_flow_interruption", "alert_quarantine_backlog")
# The publication holds alert fires on held partitions (tests/pytest/test_publication_holds.py).
HOLDS_ALERT = "alert_publication_holds"


def project_tiers() -> dict[str, float]:
    project = yaml.safe_load((ROOT / "dbt_project.yml").read_text())
    return {tier["name"]: tier["lateness_hours"] for tier in project["vars"]["watermark_tiers"]}


def node_results(result: Any) -> list[Any]:
    return [r for r in result.result.results if r.node.resource_type == "test"]


def sample_arrivals() -> list[reference.Arrival]:
    arrivals = []
    for source, path, arrival_ts in sample_build.landing_batches():
        arrival = datetime.fromisoformat(arrival_ts).astimezone(UTC)
        arrivals += reference.arrivals_from_lines(source, arrival, path.name, path.read_text().splitlines())
    return arrivals


def test_lateness_by_arrival_day_matches_reference(built_sample: Project) -> None:
    expected = reference.lateness_by_arrival_day(sample_arrivals(), project_tiers())
    got = {
        (row.source_system, row.arrival_date): row.asDict()
        for row in built_sample.table("monitoring", "lateness_by_arrival_day").collect()
    }
    assert set(got) == set(expected)
    for key, figures in expected.items():
        for column, value in figures.items():
            assert got[key][column] == pytest.approx(value), (key, column)


def test_alerts_stay_silent_on_the_sample(built_sample: Project) -> None:
    result = built_sample.dbt("test", "--select", "path:tests/monitoring", vars=sample_build.BUILD_VARS)
    statuses = {r.node.name: (r.status, r.failures) for r in node_results(result)}
    assert statuses == {name: ("pass", 0) for name in (*ALERT_TESTS, HOLDS_ALERT)}
    assert built_sample.table("monitoring", "lateness_alerts").count() == 0


def test_suggest_watermarks_from_observed_lateness(built_sample: Project) -> None:
    built_sample.dbt("run-operation", "suggest_watermarks", vars=sample_build.BUILD_VARS)
    printed = "\n".join(built_sample.messages)
    suggested = re.search(r"source_watermarks:\n((?:  .*\n?)+)", printed)
    assert suggested, printed
    got = yaml.safe_load(suggested.group(1))
    project = yaml.safe_load((ROOT / "dbt_project.yml").read_text())
    tiers = project["vars"]["watermark_tiers"]
    as_of = datetime.fromisoformat(sample_build.AS_OF)
    lateness: dict[str, list[int]] = {}
    for a in sample_arrivals():
        # the last 28 arrival days before as_of: the whole sample
        if a.record and reference.well_formed(a.record, a.arrival) and a.arrival <= as_of:
            seconds = (a.arrival - reference.parse_ts(a.record["event_ts"])).total_seconds()
            lateness.setdefault(a.source, []).append(max(0, int(seconds)))
    assert set(got) == set(lateness)
    for source, values in lateness.items():
        previous = 0
        for tier in tiers:
            seconds = max(reference.round_up_tolerance(reference.percentile(values, 1 - tier["alert_share"])), previous)
            assert got[source][tier["name"]]["lateness_hours"] == pytest.approx(seconds / 3600, rel=1e-5), source
            previous = seconds
    # mobile: 4 well-formed events 1 h 59 min, 2, 3 and 15 h late; its 0.9
    # quantile is 3 + 0.7 x 12 = 11.4 h, so daily_close would be 12 h, with 1
    # in 4 events later than it.
    assert sorted(lateness["mobile"]) == [7140, 7200, 10800, 54000]
    assert got["mobile"]["daily_close"]["lateness_hours"] == 12
    assert re.search(r"daily_close\s+0\.1\s+24\s+12\s+0\.2500", printed)


# --------------------------------------------------------------- crafted feed

AS_OF = datetime(2024, 3, 11, 12, tzinfo=UTC)
# steady's realtime tier is 5 minutes; stopped quarantines past 48 h.
CRAFTED_VARS = {
    "source_watermarks": {
        "steady": {"realtime": {"lateness_hours": 0.0833}},
        "stopped": {"month_end": {"lateness_hours": 36}, "regulatory": {"lateness_hours": 48}},
    }
}
MODELS_ONLY = ("--select", "+lateness_alerts", "--exclude", "resource_type:test")


def events(source: str, day: date, lateness: list[timedelta], start: int = 0) -> list[dict[str, Any]]:
    """Page views arriving at noon of ``day``, one per entry of ``lateness``, that late."""
    arrival = datetime(day.year, day.month, day.day, 12, tzinfo=UTC)
    return [
        {
            "event_id": f"{source}-{day}-{start + i}",
            "event_type": "page_view",
            "user_id": f"u{i}",
            "event_ts": (arrival - late).isoformat(),
        }
        for i, late in enumerate(lateness)
    ]


def land(project: Project, write_ndjson, source: str, day: date, rows: list[Any]) -> None:
    path: Path = write_ndjson(f"{source}_{day}.ndjson", rows)
    assert project.ingest(source, path, arrival_ts=f"{day}T12:00:00+00:00") == 0


def test_each_alert_fires_on_a_crafted_feed(project: Project, write_ndjson) -> None:
    minutes = [timedelta(minutes=10)]
    days = [date(2024, 3, day) for day in range(1, 12)]
    # Mar 1-3: `stopped` sends 30 events a day 10 minutes late, then nothing;
    # on Mar 1 also a malformed line and an event 72 h late (past its 48 h).
    for day in days[:3]:
        rows: list[Any] = events("stopped", day, minutes * 30)
        if day == days[0]:
            rows += ['{"event_id": "broken"', *events("stopped", day, [timedelta(hours=72)], start=99)]
        land(project, write_ndjson, "stopped", day, rows)
    # `dropping` sends 100 events a day Mar 1-4, then 5 a day.
    for day in days[:3]:
        land(project, write_ndjson, "dropping", day, events("dropping", day, minutes * 100))
    # A first build on Mar 3 13:00: the malformed line and the 72 h event are
    # quarantined then.
    project.dbt("build", *MODELS_ONLY, vars={"as_of": "2024-03-03T13:00:00+00:00", **CRAFTED_VARS})
    # `steady` sends 30 a day from Mar 4, 10 or 20 minutes late; on Mar 11
    # five of its 30 are 30 h late.
    for day in days[3:]:
        land(project, write_ndjson, "dropping", day, events("dropping", day, minutes * (100 if day == days[3] else 5)))
        usual = [timedelta(minutes=10), timedelta(minutes=20)] * 15
        unusual = [timedelta(minutes=20)] * 25 + [timedelta(hours=30)] * 5
        land(project, write_ndjson, "steady", day, events("steady", day, unusual if day == days[-1] else usual))
    project.dbt("build", *MODELS_ONLY, vars={"as_of": AS_OF.isoformat(), **CRAFTED_VARS})

    alerts = {
        (row.alert, row.source_system, row.subject): (row.observed, row.threshold)
        for row in project.table("monitoring", "lateness_alerts").collect()
    }
    assert alerts == {
        # Mar 11, the last 24 h: all 30 of steady's events are later than its
        # 5-minute realtime tier (without the override, 5 of 30 than 1 h: no
        # alert), and 5 of 30 later than daily_close's 24 h.
        ("late_share", "steady", "realtime"): (1.0, 0.25),
        ("late_share", "steady", "daily_close"): (pytest.approx(5 / 30), 0.10),
        # p99 of 25 x 1,200 s and 5 x 108,000 s is 108,000 s; Mar 4-10 each
        # had 15 x 600 s and 15 x 1,200 s, p99 1,200 s: limit 3 x 1,200 s.
        ("p99_lateness", "steady", "2024-03-11"): (108_000.0, 3_600.0),
        # stopped's last arrival: Mar 3 12:00, 192 h before as_of.
        ("flow_stopped", "stopped", "hours since last arrival"): (192.0, 168.0),
        # Mar 5-11 against the mean of four 7-day windows before: stopped 0
        # against (32 + 30 + 30) / 4; dropping 7 x 5 = 35 against 4 x 100 / 4.
        ("volume_drop", "stopped", "events in window / baseline"): (0.0, 0.5),
        ("volume_drop", "dropping", "events in window / baseline"): (pytest.approx(35 / 100), 0.5),
        # The malformed line and the 72 h event, first seen Mar 3 13:00: 191 h.
        ("quarantine_backlog", "stopped", "hours held, oldest row"): (191.0, 168.0),
    }
    reasons = {row.event_id: row.quarantine_reason for row in project.table("silver", "silver_quarantine").collect()}
    assert reasons["stopped-2024-03-01-99"] == "beyond_watermark"

    # Warn by default; error where the var says so.
    lateness_alerts = ("--select", "path:tests/monitoring", "--exclude", HOLDS_ALERT)  # no gold built here
    result = project.dbt("test", *lateness_alerts, vars={"as_of": AS_OF.isoformat(), **CRAFTED_VARS})
    assert {r.node.name: r.status for r in node_results(result)} == {name: "warn" for name in ALERT_TESTS}
    settings = yaml.safe_load((ROOT / "dbt_project.yml").read_text())["vars"]["lateness_alerts"]
    settings["late_share"]["severity"] = "error"
    result = project.dbt(
        "test",
        "--select",
        "alert_late_share",
        vars={"as_of": AS_OF.isoformat(), "lateness_alerts": settings, **CRAFTED_VARS},
        expect_ok=False,
    )
    assert [(r.node.name, r.status, r.failures) for r in node_results(result)] == [("alert_late_share", "fail", 2)]


def test_report_loads_the_built_sample(built_sample: Project) -> None:
    """The report's loader on real tables: its figures equal the reference's."""
    from python_jobs.operations.report_page import render_report
    from python_jobs.operations.report_queries import load_datasets

    data = load_datasets(built_sample.spark, built_sample.schema)
    arrivals = sample_arrivals()
    lateness: dict[str, list[int]] = {}
    for a in arrivals:
        if a.record and reference.well_formed(a.record, a.arrival):
            seconds = (a.arrival - reference.parse_ts(a.record["event_ts"])).total_seconds()
            lateness.setdefault(a.source, []).append(max(0, int(seconds)))
    within_a_day = {
        row["source_system"]: (row["arrived_within"], row["events"])
        for row in data.lateness
        if row["threshold_seconds"] == 86_400
    }
    assert within_a_day == {
        source: (sum(1 for s in values if s <= 86_400), len(values)) for source, values in lateness.items()
    }
    quarantined = sum(reference.quarantined(a) for a in arrivals)
    assert sum(row["row_count"] for row in data.quarantine) == quarantined
    # One build: every published date was first published at its current value.
    assert data.live_vs_final and all(
        row["first_net_revenue"] == row["current_net_revenue"] for row in data.live_vs_final
    )
    assert data.restatements == []
    html = render_report(data)
    assert html.count("<svg") >= 3
