"""Hostile run vars and payloads through dbt (docs/guarantees.md).

Impossible times, an as_of given twice and unknown backfill modes fail in
on-run-start, before anything is written (one build each way; every rule of
the vars is in test_run_vars.py); quotes and backslashes in the actor, the backfill reason
and the gate override are recorded as written; control characters in payloads
reach the steward's terminal escaped; restore_table restores the restated gold
models only.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from python_jobs.landing import steward
from tests.pytest.conftest import Project, tables_in

ACTOR = 'O\'Brien \\ "ops"'
REASON = 'partner\'s "resend" \\ day 2'
OVERRIDE = "it's a test: tiny sample"
# A JSON escape in the file: the parsed event_id holds the control characters.
HOSTILE_ID = "late\u001b]0;owned\u0007\u001b[31m"
# A raw escape sequence in the line itself (JSON forbids it, so invalid_json).
RAW_LINE = '{"event_id": "raw\x1b[2J", "event_type": "page_view", "user_id": "u1", "event_ts": "2024-03-08T10:00:00Z"}'


def order(event_id: str, event_ts: str, amount: int) -> dict[str, Any]:
    return {"event_id": event_id, "event_type": "order_placed", "user_id": "u1", "amount": amount, "event_ts": event_ts}


@pytest.mark.parametrize(
    ("run_vars", "message"),
    [
        ({"as_of": "2024-02-30T00:00:00+00:00"}, "as_of '2024-02-30T00:00:00+00:00': 2024-02-30 is not a date"),
        ({"backfill_mode": "replay'); drop table x; --"}, "backfill_mode must be backfill or replay, got"),
    ],
)
def test_unusable_run_vars_fail_before_anything_runs(project: Project, run_vars: dict, message: str) -> None:
    result = project.dbt("run", "--select", "stg_bronze_ingestions", vars=run_vars, expect_ok=False)
    assert not result.success
    assert any(message in line for line in project.messages), project.messages[-10:]
    # dbt creates the selection's schema before on-run-start; no table may follow.
    bronze = f"{project.schema}_bronze"
    assert not project.spark.catalog.databaseExists(bronze) or tables_in(project.spark, bronze, views=True) == []


def test_as_of_given_twice_and_different_fails(project: Project, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LATECOMER_AS_OF", "2024-03-01T00:00:00+00:00")
    # --vars written out: the runner would move an as_of var into the environment.
    as_var = json.dumps({"as_of": "2024-03-02T00:00:00+00:00"})
    result = project.dbt("run", "--select", "stg_bronze_ingestions", "--vars", as_var, expect_ok=False)
    assert not result.success
    message = (
        "as_of is given twice: --vars as_of '2024-03-02T00:00:00+00:00' and LATECOMER_AS_OF '2024-03-01T00:00:00+00:00'"
    )
    assert any(message in line for line in project.messages), project.messages[-10:]


@pytest.fixture(scope="module")
def built(module_project: Project, tmp_path_factory: pytest.TempPathFactory) -> Project:
    """A normal build, then a backfill releasing the quarantined order, both as ACTOR."""
    project = module_project
    path: Path = tmp_path_factory.mktemp("landing") / "batch.ndjson"
    lines = [
        json.dumps(order("on-time", "2024-03-08T10:00:00Z", 10)).encode(),
        json.dumps(order(HOSTILE_ID, "2024-01-02T10:00:00Z", 5)).encode(),  # beyond the last tier: quarantined
        RAW_LINE.encode(),
        (
            json.dumps(order("two-1", "2024-03-08T11:00:00Z", 7))
            + json.dumps(order("two-2", "2024-03-08T11:00:00Z", 8))
        ).encode(),
        json.dumps(order("bytes-?", "2024-03-08T12:00:00Z", 9)).encode().replace(b"?", b"\xff"),
    ]
    path.write_bytes(b"\n".join(lines) + b"\n")
    assert project.ingest("web", path, arrival_ts="2024-03-08T12:00:00+00:00") == 0
    # Models and snapshots only: the data tests are not what this module checks.
    build = ("build", "--select", "+late_arrival_audit", "--exclude-resource-type", "test")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LATECOMER_ACTOR", ACTOR)
        gate = {"publication_gate_override": OVERRIDE}
        project.dbt(*build, vars={"as_of": "2024-03-08T13:00:00+00:00", **gate})
        backfill = {"backfill_start": "2024-01-02", "backfill_end": "2024-01-02", "backfill_reason": REASON}
        project.dbt(*build, vars={"as_of": "2024-03-08T14:00:00+00:00", **gate, **backfill})
    return project


def test_quotes_in_actor_and_backfill_reason_are_recorded_as_written(built: Project) -> None:
    audit = built.sql("select distinct actor from {schema}_audit.late_arrival_audit")
    assert [row.actor for row in audit] == [ACTOR]
    (released,) = [row for row in built.table("silver", "silver_quarantine").collect() if row.event_id == HOSTILE_ID]
    assert (released.status, released.decided_by, released.decision_reason) == (
        "released",
        ACTOR,
        f"backfill: {REASON}",
    )
    (merged,) = [row for row in built.table("silver", "silver_events").collect() if row.event_id == HOSTILE_ID]
    assert (merged.amount, merged.last_action, merged.change_reason) == (5, "backfill", f"backfill: {REASON}")
    manifest = built.sql("select distinct actor, backfill from {schema}_audit.gold_change_manifest")
    assert {row.actor for row in manifest} == {ACTOR}
    assert f"backfill: {REASON}" in {row.backfill for row in manifest}


def test_hostile_lines_are_quarantined_with_a_reason(built: Project) -> None:
    quarantine = built.table("silver", "silver_quarantine").collect()
    reasons = {row.bronze_row_id.split(":")[1]: row.quarantine_reason for row in quarantine}
    assert reasons == {
        "2": "beyond_watermark",
        "3": "malformed: invalid_json",
        "4": "malformed: trailing_content",
        "5": "malformed: invalid_utf8",
    }
    assert {row.event_id for row in built.table("silver", "silver_events").collect()} == {"on-time", HOSTILE_ID}


def test_steward_list_escapes_control_characters(built: Project, capsys: pytest.CaptureFixture[str]) -> None:
    assert steward.main(["--schema", built.schema, "list"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out
    assert "late\\x1b]0;owned\\x07\\x1b[31m" in out  # the event id
    assert "raw\\x1b[2J" in out  # the raw payload


@pytest.mark.parametrize("model", ["late_arrival_audit", "silver_event_arrivals"])
def test_restore_table_restores_restated_gold_models_only(built: Project, model: str) -> None:
    args = json.dumps({"model": model, "version": "1", "reason": "test"})
    result = built.dbt("run-operation", "restore_table", "--args", args, expect_ok=False)
    assert not result.success
    refusal = "restore_table restores the restated gold models only (gold_daily_revenue, "
    assert any(refusal in line and f"not {model}" in line for line in built.messages), built.messages[-10:]
    assert built.table("audit", "late_arrival_audit").count() > 0
