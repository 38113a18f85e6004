"""Backfills, replays, the change manifest and the publication gate, end to end.

One deployment; the tests run in order, each building on the state the last
one left. Expected answers come from the plain-Python reference
(tooling/reference.py) and from hand-written values, never from the SQL.

    history  2023-12-31 .. 2024-01-03, landed more than 30 days late: held in
             quarantine by a normal build (beyond the last watermark tier);
    recent   2024-03-08 .. 2024-03-09, on time.
"""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from tests.pytest.conftest import (
    GATE_OVERRIDE,
    ROOT,
    Project,
    Webhook,
    project_copy,
    version_count,
    version_parents,
)
from tooling.reference import Arrival, arrivals_from_lines, expected_daily_revenue

# (gold_daily_revenue_causes: its data test checks that the causes of every
# step, backfills and replays among them, add up to the step)
SELECT = "+gold_daily_revenue +late_arrival_audit restatement_digest restatement_frequency gold_daily_revenue_causes"
SOURCE = "partner"


def event(event_id: str, ts: str, amount: int, kind: str = "order_placed", **extra: Any) -> dict[str, Any]:
    return {"event_id": event_id, "event_type": kind, "user_id": "u1", "amount": amount, "event_ts": ts, **extra}


RECENT = [
    event("p1", "2024-03-08T10:00:00+00:00", 100),
    event("p2", "2024-03-08T11:00:00+00:00", 50),
    event("p3", "2024-03-09T09:00:00+00:00", 80),
    event("p4", "2024-03-09T12:00:00+00:00", 20, kind="refund"),
]
HISTORY = [
    event("h0", "2023-12-31T10:00:00+00:00", 70),
    event("h1", "2024-01-01T10:00:00+00:00", 30),
    event("h2", "2024-01-02T10:00:00+00:00", 40),
    event("h3", "2024-01-03T10:00:00+00:00", 60),
]
# The partner resends h2 and p1 unchanged, and h5, which it had never sent.
RESEND = [HISTORY[2], RECENT[0], event("h5", "2024-01-02T15:00:00+00:00", 25)]
# Two deliveries of one event, the later with the right amount.
REDELIVERY_FIRST = [event("d1", "2024-03-09T18:00:00+00:00", 10)]
REDELIVERY_SECOND = [event("d1", "2024-03-09T18:00:00+00:00", 12)]

BACKFILL = {"backfill_start": "2024-01-01", "backfill_end": "2024-01-03", "backfill_reason": "partner resend"}


class Deployment:
    """The module's deployment plus what it has landed, for the reference."""

    def __init__(self, project: Project, tmp: Path) -> None:
        self.project = project
        self.tmp = tmp
        self.arrivals: list[Arrival] = []

    def land(self, name: str, rows: list[dict[str, Any]], arrival_ts: str) -> None:
        path = self.tmp / name
        path.write_text("".join(json.dumps(row) + "\n" for row in rows))
        assert self.project.ingest(SOURCE, path, arrival_ts=arrival_ts) == 0
        arrival = datetime.fromisoformat(arrival_ts).astimezone(UTC)
        self.arrivals += arrivals_from_lines(SOURCE, arrival, name, path.read_text().splitlines())

    def expected_gold(self, window: tuple[date, date] | None = None) -> dict:
        """Reference daily revenue; events inside `window` are exempt from the last watermark."""
        totals = expected_daily_revenue(self.arrivals, backfill_window=window)
        return {day: value for (day, _), value in totals.items() if value != (0, Decimal(0), Decimal(0))}

    def gold(self) -> dict:
        rows = self.project.table("gold", "gold_daily_revenue").collect()
        return {
            r.event_date: (r.orders, r.gross_revenue, r.refunds)
            for r in rows
            if (r.orders, r.gross_revenue, r.refunds) != (0, 0, 0)
        }

    def rows(self, layer: str, name: str) -> list[tuple]:
        return sorted(tuple(r) for r in self.project.table(layer, name).collect())

    def snapshots(self, layer: str, name: str) -> int:
        return version_count(self.project.spark, f"{self.project.schema}_{layer}.{name}")

    def state(self) -> dict[str, Any]:
        """Every silver, gold and audit table's rows and snapshot count."""
        tables = [
            ("silver", "silver_event_arrivals"),
            ("silver", "silver_quarantine"),
            ("silver", "silver_events"),
            ("silver", "silver_event_changes"),
            ("gold", "gold_daily_revenue"),
            ("audit", "late_arrival_audit"),
            ("audit", "gold_change_manifest"),
        ]
        return {t: (self.rows(*t), self.snapshots(*t)) for t in tables}


@pytest.fixture(scope="module")
def deployment(module_project: Project, tmp_path_factory: pytest.TempPathFactory) -> Deployment:
    deployment = Deployment(module_project, tmp_path_factory.mktemp("landing"))
    deployment.land("recent.ndjson", RECENT, "2024-03-10T00:00:00+00:00")
    deployment.land("history.ndjson", HISTORY, "2024-03-10T01:00:00+00:00")
    module_project.build(as_of="2024-03-10T02:00:00+00:00", select=SELECT)
    return deployment


@pytest.fixture(scope="module")
def settled(deployment: Deployment) -> dict[str, Any]:
    """The state after the first build, which no rejected build may change (read once for all of them)."""
    return deployment.state()


def test_history_beyond_the_last_tier_waits_in_quarantine(deployment: Deployment) -> None:
    held = deployment.project.table("silver", "silver_quarantine").collect()
    assert sorted(r.event_id for r in held) == ["h0", "h1", "h2", "h3"]
    assert {r.quarantine_reason for r in held} == {"beyond_watermark"}
    assert deployment.gold() == {
        date(2024, 3, 8): (2, Decimal("150.00"), Decimal("0.00")),
        date(2024, 3, 9): (1, Decimal("80.00"), Decimal("20.00")),
    }
    assert deployment.gold() == deployment.expected_gold()


# Every rule of the backfill vars is in test_run_vars.py; these show that a
# bad window fails the build before it writes anything.
@pytest.mark.parametrize(
    ("bad_vars", "message"),
    [
        ({"backfill_start": "2024-01-03", "backfill_end": "2024-01-01", "backfill_reason": "x"}, "is before"),
        ({"backfill_start": "2024-02-30", "backfill_end": "2024-03-01", "backfill_reason": "x"}, "must be a date"),
    ],
)
def test_bad_backfill_vars_fail_before_any_write(
    deployment: Deployment, settled: dict[str, Any], bad_vars: dict, message: str
) -> None:
    result = deployment.project.dbt(
        "build", "--select", SELECT, vars={"as_of": "2024-03-10T03:00:00+00:00", **bad_vars}, expect_ok=False
    )
    assert not result.success
    assert any(message in m for m in deployment.project.messages), deployment.project.messages[-20:]
    assert deployment.state() == settled


def test_backfill_loads_the_window_from_bronze(deployment: Deployment) -> None:
    before = deployment.state()
    recent_before = {r.event_date: r for r in deployment.project.table("gold", "gold_daily_revenue").collect()}
    deployment.project.build(as_of="2024-03-10T03:00:00+00:00", select=SELECT, **BACKFILL)

    window = (date(2024, 1, 1), date(2024, 1, 3))
    assert deployment.gold() == deployment.expected_gold(window)
    assert deployment.gold()[date(2024, 1, 2)] == (1, Decimal("40.00"), Decimal("0.00"))

    # Partitions outside the window are untouched, row for row.
    after = {r.event_date: r for r in deployment.project.table("gold", "gold_daily_revenue").collect()}
    for day in (date(2024, 3, 8), date(2024, 3, 9)):
        assert after[day] == recent_before[day]

    # The window's quarantined rows were released by the backfill, h0 (outside) was not.
    held = {r.event_id: r for r in deployment.project.table("silver", "silver_quarantine").collect()}
    assert held["h0"].status == "quarantined"
    for event_id in ("h1", "h2", "h3"):
        assert held[event_id].status == "released"
        assert held[event_id].decision_reason == "backfill: partner resend"

    silver = {r.event_id: r for r in deployment.project.table("silver", "silver_events").collect()}
    assert {silver[e].last_action for e in ("h1", "h2", "h3")} == {"backfill"}
    assert "h0" not in silver

    audit = deployment.project.table("audit", "late_arrival_audit").where("action = 'backfill'").collect()
    assert sorted(r.event_id for r in audit) == ["h1", "h2", "h3"]
    assert {r.reason for r in audit} == {"backfill: partner resend"}
    # why gold changed: the released rows, as the backfill's cause, with its reason
    causes = deployment.project.table("audit", "gold_daily_revenue_causes").where("action = 'backfill'").collect()
    assert causes and {c.change_reason for c in causes} == {"backfill: partner resend"}
    assert deployment.snapshots("silver", "silver_event_arrivals") == before[("silver", "silver_event_arrivals")][1]


def test_same_backfill_again_changes_nothing(deployment: Deployment) -> None:
    before = deployment.state()
    deployment.project.build(as_of="2024-03-10T03:00:00+00:00", select=SELECT, **BACKFILL)
    assert deployment.state() == before


def test_backfill_over_loaded_data_does_not_double_count(deployment: Deployment) -> None:
    deployment.land("resend.ndjson", RESEND, "2024-03-11T00:00:00+00:00")
    resend = {"backfill_start": "2024-01-01", "backfill_end": "2024-03-09", "backfill_reason": "partner resend 2"}
    deployment.project.build(as_of="2024-03-11T01:00:00+00:00", select=SELECT, **resend)

    expected = deployment.expected_gold((date(2024, 1, 1), date(2024, 3, 9)))
    assert deployment.gold() == expected
    assert expected[date(2024, 1, 2)] == (2, Decimal("65.00"), Decimal("0.00"))
    assert expected[date(2024, 3, 8)] == (2, Decimal("150.00"), Decimal("0.00"))
    silver = {r.event_id: r for r in deployment.project.table("silver", "silver_events").collect()}
    assert silver["h2"].version_count == 2 and silver["p1"].version_count == 2


def test_change_manifest_of_a_backfill(deployment: Deployment) -> None:
    manifest = (
        deployment.project.table("audit", "gold_change_manifest")
        .where("model = 'gold_daily_revenue' and backfill = 'backfill: partner resend 2'")
        .collect()
    )
    # Only 2024-01-02 changed values (h5); the rest of the window was recomputed and
    # found equal. 2024-03-09's daily close passed at 2024-03-11T00:00, before this
    # run's as_of, so its row moved from live to preliminary.
    changes = sorted((r.partition_value, r.change) for r in manifest)
    assert changes == [("2024-01-02", "restated"), ("2024-03-09", "status")]
    status_row = next(r for r in manifest if r.change == "status")
    assert json.loads(status_row.before_values)["status"] == "live"
    assert json.loads(status_row.after_values)["status"] == "preliminary"
    row = next(r for r in manifest if r.change == "restated")
    assert json.loads(row.before_values)["net_revenue"] == 40
    assert json.loads(row.after_values)["net_revenue"] == 65
    assert (row.before_row_version, row.after_row_version) == (1, 2)
    assert row.restatement_reason == "backfill"
    # The table versions are the backfill's MERGE commit and its parent.
    parents = version_parents(deployment.project.spark, f"{deployment.project.schema}_gold.gold_daily_revenue")
    assert parents[int(row.after_table_version)] == int(row.before_table_version)
    assert json.loads(row.input_watermarks)["bronze_ingestions.ingested_at"]

    written = json.loads((deployment.project.artifacts / "change_manifest.json").read_text())
    assert written["invocation_id"] == row.invocation_id
    assert written["models"]["gold_daily_revenue"]["partitions"] == ["2024-01-02", "2024-03-09"]
    assert written["backfill"] == "backfill: partner resend 2"


def test_replay_repairs_a_wrong_dedup_rule(deployment: Deployment, tmp_path: Path) -> None:
    # A copy of the project whose silver merge lets the EARLIER arrival win:
    # the batch ranks its arrivals (macros/silver/event_batch.sql); the model
    # compares the winner with the stored row.
    wrong = project_copy(
        tmp_path / "wrong_project",
        [
            ("macros/silver/event_batch.sql", "arrival_ts desc", "arrival_ts asc"),
            ("models/silver/silver_events.sql", ") > named_struct(", ") < named_struct("),
        ],
    )

    deployment.land("first.ndjson", REDELIVERY_FIRST, "2024-03-12T00:00:00+00:00")
    deployment.land("second.ndjson", REDELIVERY_SECOND, "2024-03-12T00:30:00+00:00")
    deployment.project.project_dir = wrong
    try:
        deployment.project.build(as_of="2024-03-12T01:00:00+00:00", select=SELECT)
    finally:
        deployment.project.project_dir = ROOT
    silver = {r.event_id: r for r in deployment.project.table("silver", "silver_events").collect()}
    assert silver["d1"].amount == Decimal("10.00")  # the wrong rule kept the first delivery

    untouched = {r.event_date: r for r in deployment.project.table("gold", "gold_daily_revenue").collect()}
    replay = {
        "backfill_start": "2024-03-09",
        "backfill_end": "2024-03-09",
        "backfill_reason": "dedup fix",
        "backfill_mode": "replay",
    }
    deployment.project.build(as_of="2024-03-12T02:00:00+00:00", select=SELECT, **replay)

    silver = {r.event_id: r for r in deployment.project.table("silver", "silver_events").collect()}
    assert silver["d1"].amount == Decimal("12.00")
    assert silver["d1"].last_action == "replay"
    assert deployment.gold() == deployment.expected_gold((date(2024, 1, 1), date(2024, 3, 9)))
    assert deployment.gold()[date(2024, 3, 9)] == (2, Decimal("92.00"), Decimal("20.00"))
    gold = {r.event_date: r for r in deployment.project.table("gold", "gold_daily_revenue").collect()}
    assert gold[date(2024, 3, 9)].restatement_reason == "replay"
    for day, row in untouched.items():
        if day != date(2024, 3, 9):
            assert gold[day] == row
    audit = deployment.project.table("audit", "late_arrival_audit").where("action = 'replay'").collect()
    assert [(r.event_id, r.reason) for r in audit] == [("d1", "replay: dedup fix")]


def test_gate_holds_a_large_restatement_until_overridden(
    deployment: Deployment, webhook: Webhook, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Correcting p1 from 100 to 1000 makes 2024-03-08's net revenue per order 1050.00 / 2 = 525, against
    # partner's other published days: 01-01 30, 01-02 65 / 2, 01-03 60 and 03-09 (80 - 20 + 12) / 2 = 36,
    # whose median is (32.5 + 36) / 2 = 34.25: at most 5 x 34.25 = 171.25 is expected.
    correction = [event("c1", "2024-03-08T10:00:00+00:00", 1000, is_correction=True, corrects_event_id="p1")]
    deployment.land("correction.ndjson", correction, "2024-03-13T00:00:00+00:00")
    published = deployment.rows("gold", "gold_daily_revenue")
    snapshots = deployment.snapshots("gold", "gold_daily_revenue")

    # The build succeeds; the partition is held, left as published, and says why.
    deployment.project.dbt("build", "--select", SELECT, vars={"as_of": "2024-03-13T01:00:00+00:00"})
    held = [m for m in deployment.project.messages if "publication hold" in m and " held, partition 2024-03-08" in m]
    assert (
        held
        and (
            "partition 2024-03-08 (partner): net_revenue / orders is 525 (net_revenue 1050.00 over 2); expected at most"
            " 171.25 (5 x 34.25, the median of its 4 other published partitions; reasons: correction)"
        )
        in held[0]
    )
    assert any(m.startswith("Publication holds: 1 partition(s) held") for m in deployment.project.messages)
    assert deployment.rows("gold", "gold_daily_revenue") == published
    assert deployment.snapshots("gold", "gold_daily_revenue") == snapshots
    log = deployment.project.sql("select * from {schema}_audit.publication_gate_log")
    assert [(r.model, r.decision) for r in log] == [("gold_daily_revenue", "held")]

    # The run's restatement digest goes to a webhook that answers 500: logged, not fatal.
    monkeypatch.setenv("LATECOMER_DIGEST_WEBHOOK", webhook.url)
    webhook.status = 500
    deployment.project.build(as_of="2024-03-13T02:00:00+00:00", select=SELECT, **GATE_OVERRIDE)
    written = json.loads((deployment.project.artifacts / "restatement_digest.json").read_text())
    assert [
        (p["model"], p["period"], p["before"]["net_revenue"], p["after"]["net_revenue"]) for p in written["periods"]
    ] == [("gold_daily_revenue", "2024-03-08", "150.00", "1050.00")]
    assert written["periods"][0]["delta"]["net_revenue"] == "900.00"
    assert written["periods"][0]["causes"] == [{"reason": "correction", "rows": 1}]
    assert webhook.received == [("application/json", written)]
    assert any(
        m.startswith("Restatement digest: 1 published period(s) restated") and "webhook failed (HTTPError" in m
        for m in deployment.project.messages
    )
    markdown = (deployment.project.artifacts / "restatement_digest.md").read_text()
    assert "| gold_daily_revenue | 2024-03-08 | 150.00 | 1050.00 | +900.00 | correction (1) |" in markdown
    # The views keep every run's: this one's, and the backfills' and the replay's before it.
    digest_rows = deployment.project.sql("select * from {schema}_audit.restatement_digest")
    this_run = [r for r in digest_rows if r.invocation_id == written["invocation_id"]]
    assert [(r.model, r.period, r.net_revenue_delta, list(r.causes)) for r in this_run] == [
        ("gold_daily_revenue", "2024-03-08", Decimal("900.00"), ["correction"])
    ]
    assert {("2024-01-02", "backfill"), ("2024-03-09", "replay")} <= {
        (r.period, cause) for r in digest_rows for cause in r.causes
    }
    newest = max(r.as_of for r in digest_rows)
    frequency = {
        (r.model, r.period): (r.restatements, r.restatements_last_7_days)
        for r in deployment.project.sql("select * from {schema}_audit.restatement_frequency")
    }
    assert frequency == {
        key: (
            sum(1 for r in digest_rows if (r.model, r.period) == key),
            sum(1 for r in digest_rows if (r.model, r.period) == key and r.as_of > newest - timedelta(days=7)),
        )
        for key in {(r.model, r.period) for r in digest_rows}
    }
    assert deployment.gold()[date(2024, 3, 8)] == (2, Decimal("1050.00"), Decimal("0.00"))
    assert deployment.gold() == deployment.expected_gold((date(2024, 1, 1), date(2024, 3, 9)))
    log = deployment.project.sql("select * from {schema}_audit.publication_gate_log order by logged_run_at")
    assert [(r.decision, r.override_reason) for r in log] == [
        ("held", None),
        ("overridden", GATE_OVERRIDE["publication_gate_override"]),
    ]
    audit = deployment.project.table("audit", "late_arrival_audit").where("action = 'publication_gate'").collect()
    assert sorted(r.after_values for r in audit) == ["held", "overridden"]
    holds = deployment.project.table("audit", "late_arrival_audit").where("action = 'publication_hold'").collect()
    assert sorted(r.reason.split(" ")[0] for r in holds) == ["held:", "overridden"]
    assert all(r.impacted_partitions == ["2024-03-08"] for r in holds)
