"""The rules of staged publication (python_jobs/core/publication.py), without Spark."""

from __future__ import annotations

import pytest

from python_jobs.core import publication


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
