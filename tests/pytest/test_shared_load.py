"""Many processes, one deployment, under load, on the shared catalog (issue 53), in the suite's table format.

A PostgreSQL cluster and the Hive metastore service
(``python -m python_jobs.operations.metastore``) and the Thrift server start
in a state dir of this test's; then, at the same time, for a bounded time
(tests/pytest/load_driver.py, one process each):

* two landers (sources ``web`` and ``mobile``) land a file every few
  seconds through ingest's ``main()``: new orders, a resend of an order of
  their previous file and a correction of another, and, in web's first file,
  an order beyond the last watermark tier (quarantined);
* a builder builds gold every ``BUILD_EVERY`` seconds while they land, and
  once more after; after its first build, the steward rejects the
  quarantined order;
* a reader queries the daily, weekly and monthly totals through the Thrift
  server in a loop, in one query, through the readers' views
  (``<schema>_published``).

Then: no process failed (every landing landed, beside builds too: a
landing is not refused while a build runs), bronze holds every landed line
once and the ledger every bronze row, gold equals the plain-Python reference
(reference.py), and every read agrees across the three tables, and with
every other read of the same publication. The figures (reads, builds,
landings, overlaps) are printed; run with ``-s`` to see them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from python_jobs.operations import metastore_class_path, metastore_state
from tests.pytest.conftest import TEST_FORMAT, TEST_TARGET
from tests.pytest.event_rows import correction
from tests.pytest.load_driver import LANDERS
from tooling.reference import Arrival, arrivals_from_lines, expected_daily_revenue

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = "t_load"
FILES_PER_LANDER = 9
# Files a lander lands while the first build runs; the others during later builds.
BEFORE_FIRST_BUILD = 3
ORDERS_PER_FILE = 12
LAND_PAUSE_S = 4.0
BUILD_EVERY_S = 25.0
READ_PAUSE_S = 0.5
TIMEOUT_S = 1200

pytestmark = pytest.mark.load

Money = tuple[int, Decimal, Decimal]


def order(event_id: str, at: datetime, amount: int, **extra: Any) -> dict[str, Any]:
    return {
        "event_id": event_id,
        "event_type": "order_placed",
        "user_id": "u-" + event_id,
        "amount": amount,
        "event_ts": at.isoformat(),
        **extra,
    }


def lander_files(source: str, base: datetime) -> list[tuple[datetime, list[dict[str, Any]]]]:
    """A lander's files, in landing order: (arrival time, rows)."""
    files = []
    for number in range(FILES_PER_LANDER):
        arrival = base + timedelta(minutes=10 * number + (5 if source == "mobile" else 0))
        rows = [
            order(f"{source}-{number}-{k}", arrival - timedelta(minutes=37 * (k + 1)), 10 + k + number)
            for k in range(ORDERS_PER_FILE)
        ]
        if number:
            previous = base + timedelta(minutes=10 * (number - 1) + (5 if source == "mobile" else 0))
            rows.append(order(f"{source}-{number - 1}-0", previous - timedelta(minutes=37), 10 + number - 1))
            moved = correction(f"{source}-{number}-fix", f"{source}-{number - 1}-1", "01", 99)
            rows.append({**moved, "event_ts": (previous - timedelta(minutes=74)).isoformat()})
        if number == 0 and source == "web":
            rows.append(order("web-too-late", arrival - timedelta(hours=800), 500))
        files.append((arrival, rows))
    return files


def write_files(folder: Path, files: list[tuple[datetime, list[dict[str, Any]]]]) -> None:
    folder.mkdir(parents=True)
    for number, (arrival, rows) in enumerate(files):
        (folder / f"{number}.ndjson").write_text("".join(json.dumps(row) + "\n" for row in rows))
        (folder / f"{number}.arrival").write_text(arrival.isoformat())


def nonzero(rows: dict) -> dict:
    return {key: value for key, value in rows.items() if value[0] or value[2]}


def rolled(rows: dict[tuple, Money], key: Any) -> dict[tuple, Money]:
    totals: dict = defaultdict(lambda: (0, Decimal(0), Decimal(0)))
    for cell, (orders, gross, refunds) in rows.items():
        total = totals[key(cell)]
        totals[key(cell)] = (total[0] + orders, total[1] + gross, total[2] + refunds)
    return nonzero(dict(totals))


def gold_cells(rows: list[dict[str, Any]], *keys: str) -> dict[tuple, Money]:
    return nonzero(
        {
            tuple(date.fromisoformat(str(row[key])) if key.endswith("date") else row[key] for key in keys): (
                int(row["orders"]),
                Decimal(str(row["gross_revenue"])),
                Decimal(str(row["refunds"])),
            )
            for row in rows
        }
    )


def start(role: str, run: Path, env: dict[str, str], *args: str) -> subprocess.Popen[bytes]:
    out = run / f"{role}.json"
    log = out.with_suffix(".log").open("wb")
    return subprocess.Popen(
        [sys.executable, "-m", "tests.pytest.load_driver", role.split("-")[0], "--run", str(run), "--out", str(out),
         *args],
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
    )  # fmt: skip


def finish(role: str, process: subprocess.Popen[bytes], run: Path, deadline: float) -> dict[str, Any]:
    try:
        code = process.wait(timeout=max(1.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        code = -9
    out = run / f"{role}.json"
    log = out.with_suffix(".log").read_text(errors="replace")
    result = json.loads(out.read_text()) if out.exists() else {"failures": ["no result"]}
    result["exit_code"], result["log_tail"] = code, log[-3000:]
    return result


@pytest.fixture(scope="module")
def load(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    metastore_class_path.fetch(sys.stdout)
    state = tmp_path_factory.mktemp("shared-load")
    run = state / "run"
    run.mkdir()
    env = {
        **os.environ,
        "LATECOMER_STATE_DIR": str(state),
        "LATECOMER_METASTORE_PORT": str(metastore_state.free_port()),
        "LATECOMER_SCHEMA": SCHEMA,
        "LATECOMER_TABLE_FORMAT": TEST_FORMAT,
        "LATECOMER_TARGET": TEST_TARGET,
        "LATECOMER_JVM_PROFILE": "short",
        "LATECOMER_DRIVER_MEMORY": "1g",
        "LATECOMER_THREADS": "2",
        # The two landers take turns on the bronze append lock: each waits for the other.
        "LATECOMER_LOCK_WAIT_SECONDS": "300",
        "DBT_TARGET_PATH": str(run / "target"),
        "DBT_LOG_PATH": str(run / "logs"),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    for name in ("LATECOMER_METASTORE_URI", "LATECOMER_WAREHOUSE", "LATECOMER_METASTORE_DB_URL"):
        env.pop(name, None)
    started = subprocess.run(
        [sys.executable, "-m", "python_jobs.operations.metastore", "start"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=TIMEOUT_S,
    )  # fmt: skip
    assert started.returncode == 0, started.stdout + started.stderr
    uri = [line for line in started.stdout.splitlines() if line.startswith("LATECOMER_METASTORE_URI=")][-1]
    env["LATECOMER_METASTORE_URI"] = uri.split("=", 1)[1]
    port = metastore_state.free_port()
    env["LATECOMER_THRIFT_PORT"] = str(port)

    base = (datetime.now(UTC) - timedelta(days=2)).replace(second=0, microsecond=0)
    landed: dict[str, list[tuple[datetime, list[dict[str, Any]]]]] = {}
    for source in LANDERS:
        landed[source] = lander_files(source, base)
        write_files(state / "files" / source, landed[source])
    began = time.monotonic()
    deadline = began + TIMEOUT_S
    server = subprocess.Popen(
        [sys.executable, "-m", "python_jobs.operations.thrift_server", "start", "--port", str(port),
         "--timeout", "600", "--table-format", TEST_FORMAT],
        cwd=ROOT, env={**env, "LATECOMER_DRIVER_MEMORY": "2g"}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True,
    )  # fmt: skip
    processes = {
        f"land-{source}": start(
            f"land-{source}",
            run,
            env,
            "--files",
            str(state / "files" / source),
            "--source",
            source,
            "--pause",
            str(LAND_PAUSE_S),
            "--before-first-build",
            str(BEFORE_FIRST_BUILD),
        )
        for source in LANDERS
    }
    processes["build"] = start("build", run, env, "--every", str(BUILD_EVERY_S))
    try:
        server_output, _ = server.communicate(timeout=TIMEOUT_S)
        assert server.returncode == 0, server_output
        server_ready_s = time.monotonic() - began
        processes["read"] = start("read", run, env, "--port", str(port), "--pause", str(READ_PAUSE_S))
        results = {role: finish(role, process, run, deadline) for role, process in processes.items()}
        wall_s = time.monotonic() - began
        yield {"results": results, "landed": landed, "wall_s": wall_s, "server_ready_s": server_ready_s}
    finally:
        for process in processes.values():
            if process.poll() is None:
                process.kill()
        subprocess.run([sys.executable, "-m", "python_jobs.operations.thrift_server", "stop"], cwd=ROOT, env=env,
                       capture_output=True, timeout=120)  # fmt: skip
        subprocess.run([sys.executable, "-m", "python_jobs.operations.metastore", "stop"], cwd=ROOT, env=env,
                       capture_output=True, timeout=120)  # fmt: skip


def reference_arrivals(landed: dict[str, list[tuple[datetime, list[dict[str, Any]]]]]) -> list[Arrival]:
    arrivals = []
    for source, files in landed.items():
        for number, (arrival, rows) in enumerate(files):
            lines = [json.dumps(row) for row in rows]
            arrivals += arrivals_from_lines(source, arrival, f"{source}-{number}", lines)
    return arrivals


def overlapping(first: list[dict[str, Any]], second: list[dict[str, Any]]) -> int:
    """How many intervals of ``first`` overlap one of ``second``."""
    return sum(any(a["begun"] < b["ended"] and b["begun"] < a["ended"] for b in second) for a in first)


def test_no_process_fails(load: dict[str, Any]) -> None:
    for role, result in load["results"].items():
        assert result["exit_code"] == 0 and not result["failures"], (
            f"{role}: exit {result['exit_code']}, failures {result['failures'][:3]}\n{result['log_tail']}"
        )
    builder = load["results"]["build"]
    assert all(build["success"] for build in builder["builds"])
    assert len(builder["builds"]) >= 3
    for source in LANDERS:
        landings = load["results"][f"land-{source}"]["landings"]
        assert [landing["code"] for landing in landings] == [0] * FILES_PER_LANDER


def test_landings_run_beside_builds(load: dict[str, Any]) -> None:
    builds = load["results"]["build"]["builds"]
    landings = [landing for source in LANDERS for landing in load["results"][f"land-{source}"]["landings"]]
    assert overlapping(landings, builds) > 0


def test_bronze_is_conserved(load: dict[str, Any]) -> None:
    builder = load["results"]["build"]
    lines = sum(len(rows) for files in load["landed"].values() for _, rows in files)
    assert builder["bronze_rows"] == lines
    assert builder["bronze_distinct"] == lines
    assert builder["ledger_rows"] == lines


def test_the_steward_decision_holds(load: dict[str, Any]) -> None:
    builder = load["results"]["build"]
    rejected = builder["decision"]["rejected"]
    assert len(rejected) == 1 and builder["decision"]["code"] == 0
    statuses = {row["bronze_row_id"]: row["status"] for row in builder["quarantine"]}
    assert statuses[rejected[0]] == "rejected"


def test_gold_equals_the_reference(load: dict[str, Any]) -> None:
    gold = load["results"]["build"]["gold"]
    daily = nonzero(expected_daily_revenue(reference_arrivals(load["landed"])))
    assert gold_cells(gold["daily"], "event_date", "source_system") == daily
    week = rolled(daily, lambda cell: (cell[0] - timedelta(days=cell[0].weekday()), cell[1]))
    assert gold_cells(gold["weekly"], "week_start_date", "source_system") == week
    month = rolled(daily, lambda cell: (cell[0].replace(day=1), cell[1]))
    assert gold_cells(gold["monthly"], "month_start_date", "source_system") == month


def test_every_read_is_consistent_across_the_gold_tables(load: dict[str, Any]) -> None:
    reads = [read for read in load["results"]["read"]["reads"] if read["seq"] is not None]
    assert reads
    by_publication: dict[int, set[tuple]] = defaultdict(set)
    for read in reads:
        daily_orders, daily_gross, weekly_orders, weekly_gross, monthly_orders, monthly_gross = read["values"]
        assert daily_orders == weekly_orders == monthly_orders, read
        assert Decimal(daily_gross) == Decimal(weekly_gross) == Decimal(monthly_gross), read
        by_publication[read["seq"]].add((daily_orders, Decimal(daily_gross)))
    assert all(len(values) == 1 for values in by_publication.values()), dict(by_publication)
    # Reads went on while builds ran and published, across several publications.
    assert overlapping(reads, load["results"]["build"]["builds"]) > 0
    assert len(by_publication) >= 2
    # The last read saw the last build's publication: gold as the reference has it.
    assert reads[-1]["seq"] == max(by_publication)
    gold = load["results"]["build"]["gold"]["daily"]
    last = reads[-1]["values"]
    assert (last[0], Decimal(last[1])) == (
        sum(int(row["orders"]) for row in gold),
        sum((Decimal(str(row["gross_revenue"])) for row in gold), Decimal(0)),
    )


def test_figures(load: dict[str, Any]) -> None:
    results = load["results"]
    reads = results["read"]["reads"]
    builds = results["build"]["builds"]
    landings = [landing for source in LANDERS for landing in results[f"land-{source}"]["landings"]]
    failures = sum(len(result["failures"]) for result in results.values())
    publications = sorted({read["seq"] for read in reads if read["seq"] is not None})
    build_s = [build["ended"] - build["begun"] for build in builds]
    print(
        f"\nshared load: {load['wall_s']:.0f} s in all (Thrift server ready after {load['server_ready_s']:.0f} s); "
        f"{len(reads)} reads served ({overlapping(reads, builds)} during a build) across {len(publications)} "
        f"publications, {len(builds)} builds "
        f"({min(build_s):.0f} to {max(build_s):.0f} s each), {len(landings)} landings "
        f"({overlapping(landings, builds)} during a build), 1 steward decision, {failures} failures"
    )
    assert failures == 0
