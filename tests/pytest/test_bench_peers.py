"""The benchmark's peers, without Spark (tooling.bench.microbatch,
tooling.bench.sqlmesh_peer): the batches a scheduled run covers, how a
peer's gold is checked against the reference, and SQLMesh's own venv.
tests/pytest/test_bench_smoke.py runs the microbatch peer."""

from __future__ import annotations

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
