"""Why a number changed (python_jobs/core/explain.py), without Spark: steps
of one gold row as gold_daily_revenue_causes holds them, hand-computed."""

from __future__ import annotations

from decimal import Decimal

import pytest

from python_jobs.core import explain


def cause(run: str, start: int, end: int, before: str, after: str, action: str, net: str, events: int = 1, **more):
    """One cause row of a step of 2024-03-02 web (no refunds: gross is net; orders left at 0)."""
    return {
        "event_date": "2024-03-02",
        "source_system": "web",
        "explained_run_at": run,
        "from_version": start,
        "to_version": end,
        "action": action,
        "watermark_tier": more.get("tier"),
        "change_reason": more.get("reason"),
        "events": events,
        "min_lateness_seconds": more.get("low"),
        "max_lateness_seconds": more.get("high"),
        "orders": more.get("orders", 0),
        "gross_revenue": Decimal(more.get("gross", net)),
        "refunds": Decimal(more.get("refunds", "0")),
        "net_revenue": Decimal(net),
        **{f"{m}_before": Decimal(0) for m in ("orders", "refunds")},
        **{f"{m}_before": Decimal(before) for m in ("gross_revenue", "net_revenue")},
        **{f"{m}_after": Decimal(0) for m in ("orders", "refunds")},
        **{f"{m}_after": Decimal(after) for m in ("gross_revenue", "net_revenue")},
    }


# Version 1: 3 on-time orders (300.00). Version 2: 9 late events (+380.00) and a
# correction (+32.50). Version 3: a deletion (-50.00).
STEPS = [
    cause("2024-03-03 01:00", 0, 1, "0", "300.00", "insert", "300.00", events=3, tier="realtime", low=60, high=1800),
    cause(
        "2024-03-04 01:00",
        1,
        2,
        "300.00",
        "712.50",
        "late_merge",
        "380.00",
        events=9,
        tier="daily_close",
        low=3600,
        high=86400,
    ),
    cause("2024-03-04 01:00", 1, 2, "300.00", "712.50", "correction", "32.50", reason=None),
    cause("2024-03-05 01:00", 2, 3, "712.50", "662.50", "deletion", "-50.00"),
]


def test_one_step_reads_as_the_issue_asks() -> None:
    found = explain.explain(STEPS, 1, 2)
    assert found.change["net_revenue"] == Decimal("412.50")
    assert explain.describe(found) == (
        "2024-03-02 web, version 1 -> 2: net_revenue +412.50 = "
        "9 events 1 to 24 h late (tier daily_close) (+380.00), 1 correction (+32.50)"
    )
    assert not any(found.remainder.values())


def test_versions_default_to_the_latest_step() -> None:
    assert explain.describe(explain.explain(STEPS)) == (
        "2024-03-02 web, version 2 -> 3: net_revenue -50.00 = 1 deletion (-50.00)"
    )


def test_steps_add_up_across_versions() -> None:
    found = explain.explain(STEPS, 0, 3)
    assert (found.before["net_revenue"], found.after["net_revenue"]) == (Decimal(0), Decimal("662.50"))
    # 300 + 380 + 32.50 - 50, causes largest first
    assert [c.action for c in found.causes] == ["late_merge", "insert", "deletion", "correction"]
    assert sum(c.delta["net_revenue"] for c in found.causes) == Decimal("662.50")
    assert not any(found.remainder.values())


def test_a_restore_explains_what_it_took_back() -> None:
    restored = [*STEPS, cause("2024-03-06 01:00", 3, 1, "662.50", "300.00", "table_restore", "-362.50", events=0)]
    found = explain.explain(restored, 3, 1)
    assert explain.describe(found) == "2024-03-02 web, version 3 -> 1: net_revenue -362.50 = restore_table (-362.50)"
    assert not any(found.remainder.values())
    # and a remainder nothing explains is said, never hidden
    broken = [{**row, "net_revenue": Decimal("1.00")} if row["action"] == "deletion" else row for row in STEPS]
    assert explain.describe(explain.explain(broken)) == (
        "2024-03-02 web, version 2 -> 3: net_revenue -50.00 = 1 deletion (+1.00); not explained by these causes: -51.00"
    )


def test_versions_that_were_never_published_apart_are_refused() -> None:
    with pytest.raises(ValueError, match=r"version 7 of this row was never published; its versions: \[1, 2, 3\]"):
        explain.explain(STEPS, 1, 7)
    with pytest.raises(ValueError, match=r"no published version 2 before version 2"):
        explain.explain(STEPS, 2, 2)
    with pytest.raises(ValueError, match="no explained version"):
        explain.explain([])
    with pytest.raises(ValueError, match="measure must be one of"):
        explain.describe(explain.explain(STEPS), "margin")


@pytest.mark.parametrize(
    ("seconds", "text"), [(90, "2 min"), (3600, "1 h"), (5400, "1.5 h"), (86400, "24 h"), (3 * 86400, "3 d")]
)
def test_lateness_reads_in_the_unit_a_reader_would_use(seconds: int, text: str) -> None:
    assert explain.duration(seconds) == text


@pytest.mark.parametrize(
    ("model", "row", "causes", "predicate", "label"),
    [
        (
            "gold_daily_revenue",
            {"event_date": "2024-01-15", "source_system": "web"},
            "gold_daily_revenue_causes",
            "event_date = date'2024-01-15' and source_system = 'web'",
            "2024-01-15 web",
        ),
        (
            "gold_hourly_revenue",
            {"event_date": "2024-01-15", "event_hour": 7, "source_system": "web"},
            "gold_hourly_revenue_causes",
            "event_date = date'2024-01-15' and event_hour = 7 and source_system = 'web'",
            "2024-01-15 07:00 web",
        ),
        (
            "gold_revenue_by_tier",
            {"event_date": "2024-01-15", "tier": "gold", "region": "eu"},
            "gold_revenue_by_tier_causes",
            "event_date = date'2024-01-15' and tier = 'gold' and region = 'eu'",
            "2024-01-15 gold eu",
        ),
        (
            "gold_weekly_revenue",
            {"week_start_date": "2024-01-15", "source_system": "web"},
            "gold_rollup_revenue_causes",
            "grain = 'week' and period_start_date = date'2024-01-15' and source_system = 'web'",
            "week of 2024-01-15 web",
        ),
        (
            "gold_ytd_revenue",
            {"year_start_date": "2024-01-01", "source_system": "web"},
            "gold_rollup_revenue_causes",
            "grain = 'year' and period_start_date = date'2024-01-01' and source_system = 'web'",
            "year of 2024-01-01 web",
        ),
    ],
)
def test_a_row_of_each_model_is_found_by_its_own_key(model, row, causes, predicate, label) -> None:
    request = explain.row_request(model, row)
    assert (request.causes, request.predicate, request.label) == (causes, predicate, label)


def test_text_keys_are_quoted_as_sql_strings() -> None:
    row = {"event_date": "2024-01-15", "tier": "x' or '1", "region": "a\\"}
    request = explain.row_request("gold_revenue_by_tier", row)
    assert request.predicate == "event_date = date'2024-01-15' and tier = 'x\\' or \\'1' and region = 'a\\\\'"


@pytest.mark.parametrize(
    ("model", "row", "message"),
    [
        ("gold_sessions", {}, "model must be one of gold_daily_revenue, gold_hourly_revenue"),
        ("gold_hourly_revenue", {"event_date": "2024-01-15", "source_system": "web"}, r"missing event_hour\)"),
        (
            "gold_weekly_revenue",
            {"event_date": "2024-01-15", "source_system": "web"},
            r"given by week_start_date, source_system \(missing week_start_date; unknown event_date\)",
        ),
        ("gold_daily_revenue", {"event_date": "2024-02-30", "source_system": "web"}, "event_date must be a date"),
        ("gold_daily_revenue", {"event_date": "2024-1-5", "source_system": "web"}, "event_date must be a date"),
        # An ISO week date: Python's date parser takes it, a SQL date literal does not.
        ("gold_daily_revenue", {"event_date": "2024-W03-1", "source_system": "web"}, "event_date must be a date"),
        ("gold_daily_revenue", {"event_date": "20240115", "source_system": "web"}, "event_date must be a date"),
        (
            "gold_hourly_revenue",
            {"event_date": "2024-01-15", "event_hour": 24, "source_system": "web"},
            "event_hour must be an hour of the day",
        ),
    ],
)
def test_a_row_that_cannot_be_found_is_refused_with_the_reason(model, row, message) -> None:
    with pytest.raises(ValueError, match=message):
        explain.row_request(model, row)


def test_new_causes_read_as_sentences() -> None:
    moved = explain.Cause("dimension_change", None, None, 2, None, None, {"net_revenue": Decimal("-40.00")})
    reason = "for 2024-01-03: correction"
    booked = explain.Cause("adjustment", None, reason, 1, None, None, {"net_revenue": Decimal("5")})
    assert explain.cause_text(moved) == "2 events moved by customer history changes (-40.00)"
    assert explain.cause_text(booked) == "1 adjustment booked 'for 2024-01-03: correction' (+5.00)"
