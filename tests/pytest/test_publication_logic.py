"""The rules of staged publication (python_jobs/core/publication.py) and of what Delta commits carry
(python_jobs/core/commit_metadata.py), without Spark."""

from __future__ import annotations

import json

import pytest

from python_jobs.core import commit_metadata, publication


def test_run_branch_is_the_invocation_id_as_a_plain_identifier() -> None:
    branch = publication.run_branch("0b5e3A1c-77f2-4c1e-9d3e-1f2a3b4c5d6e")
    assert branch == "latecomer_run_0b5e3a1c77f24c1e9d3e1f2a3b4c5d6e"
    with pytest.raises(ValueError, match="invocation id"):
        publication.run_branch("--")


def test_a_run_publishes_only_when_every_node_succeeded() -> None:
    assert publication.decide([("gold_daily_revenue", "success"), ("unique_gold_key", "pass")]).publish
    # a test that only warns passed
    assert publication.decide([("gold_daily_revenue", "success"), ("alert_late_share", "warn")]).publish
    assert publication.decide([]).publish
    # an exposure in `dbt build` has nothing to run
    assert publication.decide([("gold_daily_revenue", "success"), ("finance_month_close_report", "no-op")]).publish

    blocked = publication.decide(
        [
            ("silver_events", "success"),
            ("gold_daily_revenue", "error"),
            ("gold_weekly_revenue", "skipped"),
            ("not_null_gold_hourly_revenue_orders", "fail"),
        ]
    )
    assert not blocked.publish
    assert blocked.holding_back == (
        "gold_daily_revenue (error)",
        "gold_weekly_revenue (skipped)",
        "not_null_gold_hourly_revenue_orders (fail)",
    )
    assert blocked.summary == (
        "held back by gold_daily_revenue (error), gold_weekly_revenue (skipped), "
        "not_null_gold_hourly_revenue_orders (fail)"
    )


def test_a_long_list_of_failures_is_cut_in_the_summary() -> None:
    decision = publication.decide([(f"model_{n}", "error") for n in range(7)])
    assert decision.summary == (
        "held back by model_0 (error), model_1 (error), model_2 (error), model_3 (error), model_4 (error) and 2 more"
    )


def test_stale_branches_are_other_runs_branches_only() -> None:
    refs = ["main", "latecomer_run_aaa", "audit_2024", "latecomer_run_bbb", "latecomer_run_ccc"]
    assert publication.stale_branches(refs, current="latecomer_run_bbb") == ["latecomer_run_aaa", "latecomer_run_ccc"]
    assert publication.stale_branches(["main", "audit_2024"]) == []


def test_a_delta_table_goes_back_to_its_last_version_before_the_run() -> None:
    run = "latecomer_run_bbb"
    # Written by two earlier runs (one untagged, from before tagging), then
    # three commits of this run: back to 4, whatever order the rows come in.
    history = [(6, run), (5, run), (7, run), (4, "latecomer_run_aaa"), (3, None), (0, None)]
    assert publication.version_before_run(history, run) == 4
    # Not written by the run: nothing to put back.
    assert publication.version_before_run([(1, "latecomer_run_aaa"), (0, None)], run) is None
    # Created by the run: nothing was published before it, the table stays.
    assert publication.version_before_run([(1, run), (0, run)], run) is None
    assert publication.version_before_run([], run) is None


def test_a_commit_carrying_notes_still_names_its_run() -> None:
    run = "latecomer_run_bbb"
    noted = commit_metadata.user_metadata(run, {"s_gold.gold_daily_revenue": "f1"})
    assert json.loads(noted) == {"run": run, "notes": {"s_gold.gold_daily_revenue": "f1"}}
    # without notes, the run's name alone, as commits were tagged before notes
    assert commit_metadata.user_metadata(run, {}) == run
    assert commit_metadata.user_metadata(None, {}) is None
    assert commit_metadata.run_of_commit(noted) == run
    assert commit_metadata.run_of_commit(commit_metadata.user_metadata(None, {"t": "f"})) is None
    history = [(6, noted), (5, run), (4, commit_metadata.user_metadata("latecomer_run_aaa", {"t": "f"})), (3, None)]
    assert publication.version_before_run(history, run) == 4


def _last_commit(operation: str, metadata: str | None) -> list[dict[str, str | None]]:
    return [{"version": "7", "operation": operation, "userMetadata": metadata}]


def test_a_note_counts_only_on_the_commit_that_wrote_the_table() -> None:
    table = "`s_gold`.`gold_daily_revenue`"
    notes = {"s_gold.gold_daily_revenue": "f1", "s_gold.gold_weekly_revenue": "f2"}
    metadata = commit_metadata.user_metadata("latecomer_run_bbb", notes)
    for write in ("MERGE", "CREATE OR REPLACE TABLE AS SELECT"):
        assert commit_metadata.note_of_last_commit(_last_commit(write, metadata), table) == "f1"
    # a RESTORE or an OPTIMIZE after the write carries whatever was in flight: not the table's evaluation
    assert commit_metadata.note_of_last_commit(_last_commit("RESTORE", metadata), table) is None
    assert commit_metadata.note_of_last_commit(_last_commit("OPTIMIZE", metadata), table) is None
    # another table's note, a run's name alone, nothing, or text that is not a note
    other = commit_metadata.user_metadata(None, {"s_gold.gold_weekly_revenue": "f2"})
    assert commit_metadata.note_of_last_commit(_last_commit("MERGE", other), table) is None
    for text in ("latecomer_run_bbb", None, "", "{not json", '["f1"]', '{"notes": ["f1"]}'):
        assert commit_metadata.note_of_last_commit(_last_commit("MERGE", text), table) is None
    assert commit_metadata.note_of_last_commit([], table) is None
