"""The benchmark's peers, without Spark (tooling.bench.microbatch,
tooling.bench.sqlmesh_peer): the batches a scheduled run covers, how a
peer's gold is checked against the reference, and SQLMesh's own venv.
tests/pytest/test_bench_smoke.py runs the microbatch peer."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from tooling.bench.config import REPO_ROOT
from tooling.bench.microbatch import batch_window, wrong_partitions
from tooling.bench.sqlmesh_peer import run_time, window_start


def test_the_window_is_dbts_for_a_run_at_that_time():
    # dbt: end = the as-of, start = its day less `lookback` days
    # (MicrobatchBuilder.build_start_time with the checkpoint on the day's end).
    start, end = batch_window(datetime(2026, 1, 1, 6, 30, tzinfo=UTC), 2)
    assert start == datetime(2025, 12, 30, tzinfo=UTC)
    assert end == datetime(2026, 1, 1, 6, 30, tzinfo=UTC)


def test_wrong_partitions_by_cause():
    reference = {
        "2026-01-01|web": [3, "30.00", "0.00", "30.00"],  # a late order, before the window
        "2026-01-05|web": [0, "0.00", "0.00", "0.00"],  # every event deleted: a row of zeros
        "2026-01-06|web": [1, "10.00", "0.00", "10.00"],
        "2026-01-06|mobile": [1, "5.00", "0.00", "5.00"],
        "2026-01-07|web": [2, "20.00", "0.00", "20.00"],
    }
    peer = {
        "2026-01-01|web": [2, "20.00", "0.00", "20.00"],  # the late order never counted
        "2026-01-05|web": [4, "40.00", "0.00", "40.00"],  # its batch returned no rows: stale
        "2026-01-06|web": [1, "10.00", "0.00", "10.00"],  # no mobile row: zeros, as the reference has not
        "2026-01-07|web": [2, 20.0, 0.0, 20.0],  # the same values in other types
    }
    wrong = wrong_partitions(peer, reference, window_start="2026-01-04")
    assert wrong["date_values"] == {
        "beyond_lookback": ["2026-01-01"],
        "emptied": ["2026-01-05"],
        "other": ["2026-01-06"],
    }
    assert (wrong["dates"], wrong["rows"], wrong["dates_total"]) == (3, 3, 4)
    assert (wrong["beyond_lookback"], wrong["emptied"], wrong["other"]) == (1, 1, 1)


def test_a_missing_row_is_a_row_of_zeros():
    reference = {"2026-01-05|web": [0, "0.00", "0.00", "0.00"]}
    assert wrong_partitions({}, reference, window_start="2026-01-01")["dates"] == 0


def test_the_peers_venv_pins_the_products_pyspark():
    """SQLMesh's venv (tooling/bench/requirements-peers.txt) shares the
    benchmark's session, so its PySpark is the product's."""

    def pins(path: Path) -> dict[str, str]:
        lines = [line.split("==") for line in path.read_text().splitlines() if "==" in line]
        return {name.lower(): version for name, version in lines}

    peers = pins(REPO_ROOT / "tooling" / "bench" / "requirements-peers.txt")
    assert peers["pyspark"] == pins(REPO_ROOT / "requirements.txt")["pyspark"]
    assert "sqlmesh" in peers
    assert not {"dbt-core", "dbt-spark"} & set(peers), "the product's packages stay in its own venv"


def test_sqlmesh_runs_the_next_day_over_the_same_dates_as_microbatch():
    as_of = datetime(2026, 1, 1, 6, 30, tzinfo=UTC)
    assert run_time(as_of) == datetime(2026, 1, 2, 0, 30, tzinfo=UTC)
    assert window_start(as_of, 2) == batch_window(as_of, 2)[0].date()


def test_the_reference_gold_comes_from_the_event_files_as_landed(tmp_path):
    """tooling.bench.checks: the plain-Python reference over a run's event
    files, each at its arrival time, in gold_measures' shape; other feeds are
    not events. Values worked out by hand."""
    from tooling.bench.checks import event_arrivals, reference_gold
    from tooling.synthetic import Batch

    def batch(name: str, arrival: datetime, rows: list[dict], feed: str = "events") -> Batch:
        path = tmp_path / name
        path.write_text("".join(json.dumps(row) + "\n" for row in rows))
        return Batch("web", arrival, path, len(rows), feed)

    def event(event_id: str, kind: str, amount: str, ts: str, **more) -> dict:
        return {"event_id": event_id, "event_type": kind, "user_id": "u1", "amount": amount, "event_ts": ts, **more}

    first = datetime(2026, 1, 3, tzinfo=UTC)
    batches = [
        batch("a.ndjson", first, [
            event("o1", "order_placed", "10.00", "2026-01-01T10:00:00Z"),
            event("o2", "order_placed", "7.50", "2026-01-02T10:00:00Z"),
            event("r1", "refund", "2.50", "2026-01-02T11:00:00Z"),
        ]),
        # a day later: o1 corrected to 12.00, and a duplicate of o2 that changes nothing
        batch("b.ndjson", datetime(2026, 1, 4, tzinfo=UTC), [
            event("o1c", "order_placed", "12.00", "2026-01-01T10:00:00Z", is_correction=True, corrects_event_id="o1"),
            event("o2", "order_placed", "7.50", "2026-01-02T10:00:00Z"),
        ]),
        batch("crm.ndjson", first, [{"customer_id": "u1", "tier": "gold"}], feed="customers"),
    ]  # fmt: skip
    assert reference_gold(event_arrivals(batches)) == {
        "2026-01-01|web": [1, "12.00", "0", "12.00"],
        "2026-01-02|web": [1, "7.50", "2.50", "5.00"],
    }
