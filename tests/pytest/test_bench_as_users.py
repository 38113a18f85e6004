"""The benchmark's as-users phase (tooling.bench.as_users) without Spark: the
command a schedule runs, the order of the kinds, what counts as a failed
build, the check against the in-process result and the report's lines.

The phase itself runs processes of its own (a JVM per build and per restore);
`python -m tooling.bench --smoke --as-users 1` runs it whole."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest

from tooling.bench import as_users
from tooling.bench.config import NOTHING_NEW, BenchConfig
from tooling.bench.report import _as_users_lines
from tooling.synthetic import Scale


def config(tmp_path: Path, **more) -> BenchConfig:
    return BenchConfig(scale=Scale(days=6, events_per_day=1_000, k=3), schema="b", results_dir=tmp_path, **more)


def test_kinds_alternate_which_runs_first():
    assert [as_users.order(n) for n in range(3)] == [
        ("incremental", NOTHING_NEW),
        (NOTHING_NEW, "incremental"),
        ("incremental", NOTHING_NEW),
    ]


def test_the_build_is_the_users_dbt_build_on_the_project_copy(tmp_path):
    cfg = config(tmp_path, with_tests=False, select="+gold_daily_revenue")
    command = as_users.build_command(cfg, {"publication_gate": {"max_shrink": None}}, tmp_path / "t")
    assert Path(command[0]).name == "dbt" and command[1] == "build"
    flag = {command[i]: command[i + 1] for i in range(2, len(command) - 1) if command[i].startswith("--")}
    assert flag["--project-dir"] == str(cfg.project_dir)
    assert flag["--target"] == "local"
    assert flag["--target-path"] == str(tmp_path / "t")
    assert flag["--select"] == "+gold_daily_revenue"
    assert json.loads(flag["--vars"]) == {"publication_gate": {"max_shrink": None}}
    assert command.count("--exclude-resource-type") == 2
    # with data tests, as the default benchmark builds
    assert "--exclude-resource-type" not in as_users.build_command(config(tmp_path), {}, tmp_path / "t")


def test_a_failing_test_or_model_fails_the_build(tmp_path):
    results = tmp_path / "run_results.json"
    statuses = ["success", "pass", "skipped", "fail", "error", "warn", "no-op"]
    rows = [{"unique_id": f"n{i}", "status": s, "message": f"m{i}"} for i, s in enumerate(statuses)]
    results.write_text(json.dumps({"results": rows}))
    assert as_users.failed_nodes(results) == ["n3: fail: m3", "n4: error: m4"]


def test_summary_per_kind_and_the_check_against_the_process():
    runs = [
        {"mode": "cold", "kind": "incremental", "seconds": 30.0, "same_as_in_process": True},
        {"mode": "cold", "kind": "incremental", "seconds": 50.0, "same_as_in_process": True},
        {"mode": "cold", "kind": "incremental", "seconds": 40.0, "same_as_in_process": True},
        {"mode": "cold", "kind": NOTHING_NEW, "seconds": 12.0, "same_as_in_process": False},
    ]
    summary = as_users.summarize(runs)["cold"]
    assert summary["incremental"] == {
        "build_seconds": 40.0,
        "build_seconds_min": 30.0,
        "build_seconds_max": 50.0,
        "runs": 3,
        "same_as_in_process": True,
    }
    assert summary[NOTHING_NEW]["same_as_in_process"] is False


def test_a_build_is_checked_against_every_in_process_run_of_its_kind():
    gold = {"rows": 5, "net_revenue": Decimal("10.50")}
    report = {
        "runs": [
            {"variant": "incremental", "gold_fingerprint": gold, "silver_fingerprint": {"rows": 9}},
            {"variant": NOTHING_NEW, "gold_fingerprint": {"rows": 4}, "silver_fingerprint": {"rows": 8}},
        ]
    }
    expected = {kind: as_users._in_process_prints(report, kind) for kind in as_users.KINDS}
    runs = [{"mode": "cold", "kind": "incremental"}]
    # as the restore child writes them: through JSON, the decimal as text
    as_users._check(runs, {"gold": {"rows": 5, "net_revenue": "10.50"}, "silver": {"rows": 9}}, expected)
    assert runs[0]["same_as_in_process"] is True
    runs = [{"mode": "server", "kind": NOTHING_NEW}]
    with pytest.raises(RuntimeError, match=r"nothing_new, server\) left other tables than in process"):
        as_users._check(runs, {"gold": {"rows": 5}, "silver": {"rows": 8}}, expected)
    assert runs[0]["same_as_in_process"] is False


def test_the_report_puts_the_new_process_beside_this_one():
    summary = {
        "incremental": {"build_seconds": 30.0, "build_seconds_min": 29.0, "build_seconds_max": 31.0},
        NOTHING_NEW: {"build_seconds": 9.5, "build_seconds_min": 9.0, "build_seconds_max": 10.0},
    }
    runs = [
        {"mode": "cold", "kind": "incremental", "seconds": 61.0, "same_as_in_process": True},
        {"mode": "cold", "kind": NOTHING_NEW, "seconds": 25.25, "same_as_in_process": True},
    ]
    lines = _as_users_lines(summary, {"runs": runs, "summary": as_users.summarize(runs)})
    assert "| late batch | 30.0 (29.0 - 31.0) | 61.0 (61.0 - 61.0) |" in lines
    assert "| nothing new | 9.5 (9.0 - 10.0) | 25.2 (25.2 - 25.2) |" in lines
    assert any("the same as in this process" in line for line in lines)
    assert _as_users_lines(summary, None) == []


def test_the_warm_driver_column_stands_beside_the_cold_one():
    summary = {"incremental": {"build_seconds": 30.0, "build_seconds_min": 29.0, "build_seconds_max": 31.0}}
    runs = [
        {"mode": "cold", "kind": "incremental", "seconds": 61.0, "same_as_in_process": True},
        {"mode": "driver", "kind": "incremental", "seconds": 35.0, "same_as_in_process": True},
        {"mode": "driver", "kind": "incremental", "seconds": 37.0, "same_as_in_process": True},
    ]
    measured = as_users.summarize(runs)
    assert measured["driver"]["incremental"]["build_seconds"] == 36.0
    lines = _as_users_lines(summary, {"runs": runs, "summary": measured})
    header = next(line for line in lines if line.startswith("| | in this process"))
    assert header.index("in a new process") < header.index("attached to a warm driver")
    assert "| late batch | 30.0 (29.0 - 31.0) | 61.0 (61.0 - 61.0) | 36.0 (35.0 - 37.0) |" in lines
