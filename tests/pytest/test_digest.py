"""The restatement digest without Spark: python_jobs.core.digest, and its webhook
against a real local HTTP server. Rows are change manifest rows as the
on-run-end hook reads them; figures are worked out by hand. A build writing
and posting its digest runs in tests/pytest/test_backfill.py.
"""

from __future__ import annotations

import json
import socket
from decimal import Decimal
from typing import Any

from python_jobs.core import digest
from tests.pytest.conftest import Webhook


def row(model: str, period: str, change: str, before: dict | None, after: dict, reason: str | None) -> dict[str, Any]:
    return {
        "model": model,
        "partition_value": period,
        "change": change,
        "before_values": json.dumps(before) if before is not None else None,
        "after_values": json.dumps(after),
        "restatement_reason": reason,
    }


def revenue(orders: int, net: str, status: str = "preliminary") -> dict[str, Any]:
    return {"orders": orders, "gross_revenue": net, "refunds": "0.00", "net_revenue": net, "status": status}


RUN = [
    # 2024-03-02: web gains 9 late orders (+380.00), partner's total is corrected (+32.50), mobile is new
    row("gold_daily_revenue", "2024-03-02", "restated", revenue(10, "100.00"), revenue(19, "480.00"), "late_arrival"),
    row("gold_daily_revenue", "2024-03-02", "restated", revenue(2, "67.50"), revenue(2, "100.00"), "correction"),
    row("gold_daily_revenue", "2024-03-02", "published", None, revenue(1, "20.00"), None),
    # 2024-03-03: a status move only, nothing restated
    row("gold_daily_revenue", "2024-03-03", "status", revenue(5, "50.00"), revenue(5, "50.00", "final"), None),
    # 2024-03-04: new partition, publication not restatement
    row("gold_daily_revenue", "2024-03-04", "published", None, revenue(3, "30.00"), None),
    # the week: one deletion
    row("gold_weekly_revenue", "2024-02-26", "restated", revenue(40, "900.00"), revenue(39, "880.00"), "deletion"),
]


def test_only_restated_periods_with_their_before_after_and_causes() -> None:
    run = digest.digest_of(RUN, "inv-1", "2024-03-05 00:00:00")
    assert [(p.model, p.period) for p in run.periods] == [
        ("gold_daily_revenue", "2024-03-02"),
        ("gold_weekly_revenue", "2024-02-26"),
    ]
    daily, weekly = run.periods
    assert daily.rows == 3
    assert daily.before["net_revenue"] == Decimal("167.50") and daily.after["net_revenue"] == Decimal("600.00")
    assert daily.delta["net_revenue"] == Decimal("432.50") and daily.delta["orders"] == 10
    assert daily.causes == (("correction", 1), ("late_arrival", 1), ("new rows", 1))
    assert weekly.delta == {
        "orders": -1,
        "gross_revenue": Decimal("-20.00"),
        "refunds": Decimal("0.00"),
        "net_revenue": Decimal("-20.00"),
    }


def test_json_keeps_amounts_exact() -> None:
    payload = digest.as_json(digest.digest_of(RUN, "inv-1", "2024-03-05 00:00:00"))
    assert payload["restated_periods"] == 2
    first = payload["periods"][0]
    assert first["before"]["net_revenue"] == "167.50" and first["delta"]["net_revenue"] == "432.50"
    assert first["causes"][0] == {"reason": "correction", "rows": 1}


def test_markdown_is_one_row_per_restated_period() -> None:
    text = digest.as_markdown(digest.digest_of(RUN, "inv-1", "2024-03-05 00:00:00"))
    assert text.splitlines() == [
        "# Restatement digest: run inv-1, as of 2024-03-05 00:00:00",
        "",
        "2 published period(s) restated. Figures are over the rows the run wrote.",
        "",
        "| model | period | net_revenue before | after | delta | top causes (rows) |",
        "|---|---|---:|---:|---:|---|",
        "| gold_daily_revenue | 2024-03-02 | 167.50 | 600.00 | +432.50"
        " | correction (1), late_arrival (1), new rows (1) |",
        "| gold_weekly_revenue | 2024-02-26 | 900.00 | 880.00 | -20.00 | deletion (1) |",
    ]
    quiet = digest.as_markdown(digest.digest_of(RUN[3:5], "inv-2", None))
    assert "No published period was restated." in quiet


def test_the_webhook_receives_the_json(webhook: Webhook) -> None:
    payload = digest.as_json(digest.digest_of(RUN, "inv-1", "2024-03-05 00:00:00"))
    assert digest.deliver(webhook.url, payload) is None
    assert webhook.received == [("application/json", payload)]


def test_a_failed_delivery_is_reported_not_raised(webhook: Webhook) -> None:
    webhook.status = 500
    assert digest.deliver(webhook.url, {"x": 1}) == "HTTPError: Internal Server Error"
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    assert digest.deliver(f"http://127.0.0.1:{closed}/", {"x": 1}, timeout=2).startswith("URLError: ")
    assert digest.deliver("not a url", {"x": 1}).startswith("ValueError: ")


def test_amounts_read_from_the_manifests_json_keep_their_scale() -> None:
    # Spark's to_json writes decimals as JSON numbers: 150.00, not "150.00"
    manifest_row = {
        "model": "gold_daily_revenue",
        "partition_value": "2024-03-08",
        "change": "restated",
        "before_values": '{"orders":2,"net_revenue":150.00,"status":"preliminary"}',
        "after_values": '{"orders":2,"net_revenue":1050.00,"status":"preliminary"}',
        "restatement_reason": "correction",
    }
    (period,) = digest.digest_of([manifest_row], "inv", None).periods
    assert (str(period.before["net_revenue"]), str(period.delta["net_revenue"])) == ("150.00", "900.00")


def test_the_digest_lists_open_holds_first_and_the_command_that_decides_them() -> None:
    holds = [
        {"hold_id": "aa11", "model": "gold_daily_revenue", "partition_value": "2024-05-04", "state": "approved",
         "group_values": "mobile", "checks_fired": "", "breaches": None, "resolution_reason": "checked with mobile"},
        {"hold_id": "bb22", "model": "gold_daily_revenue", "partition_value": "2024-05-06", "state": "open",
         "group_values": "web", "checks_fired": "closed_growth", "breaches": "orders grow from 14 to 28 | +100%"},
    ]  # fmt: skip
    run = digest.digest_of([], "run-2", "2024-05-10T00:00:00+00:00", holds=holds)
    assert [(hold.hold_id, hold.state) for hold in run.holds] == [("bb22", "open"), ("aa11", "approved")]
    payload = digest.as_json(run)
    assert payload["open_holds"] == 1 and payload["decide_holds_with"] == "python -m python_jobs.landing.steward holds"
    assert payload["holds"][1]["detail"] == "checked with mobile"
    markdown = digest.as_markdown(run)
    assert "## Publication holds: 1 open" in markdown
    line = "| bb22 | gold_daily_revenue | 2024-05-06 | open | web | closed_growth | orders grow from 14 to 28 \\|"
    assert line in markdown
    assert digest.as_json(digest.digest_of([], "run-3", None))["decide_holds_with"] is None
    assert "Publication holds" not in digest.as_markdown(digest.digest_of([], "run-3", None))
