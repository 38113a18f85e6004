"""``python -m tests.suite``: the test suite on both table formats at once (``make test``).

The suite is a queue of pytest runs (steps), each with its own Spark
session, metastore, dbt target and log folders, two at a time, the longest
first; when one ends the next starts:

  iceberg            the project's tests (tests/pytest) on Iceberg: the
                     plain-Python logic, rendering and parsing, the
                     scenarios, the standalone cluster and the benchmark's
                     smoke run, but for PROCESS_TESTS;
  delta              the core scenarios again on Delta Lake (DELTA_SCENARIOS);
  adapter-delta      dbt's adapter conformance suite (tests/adapter) on Delta,
                     but for ADAPTER_FORMAT_NEUTRAL;
  iceberg-processes  PROCESS_TESTS on Iceberg: the tests that start processes
                     of their own (the fault injection, the Thrift server, the
                     shared catalog and its load test, the streams and their
                     Kafka broker, the warm driver);
  adapter-iceberg    dbt's adapter suite on Iceberg, on the session target;
  adapter-iceberg-thrift  its basic suite on a Thrift server.

The steps evaluate expressions without generating code (INTERPRETED_ENV),
in their own sessions and in the processes they start, but for the test
files over thousands of events (marked many_rows) and the Thrift servers.

Why so: a build on two cores keeps the machine about two-thirds busy, so two
runs at once use it; three JVMs at once made every run about three times
slower. The queue keeps two going until the end, whichever ends first
(docs/testing.md). ``make test-delta`` runs every scenario on Delta (the tests
that run Spark), the 45-day schedule included.

Arguments are passed to the project's pytest run on each format (``-k``,
``-x``; a file given runs on both), and the adapter suites are left out.
Each run's output goes to ``target/suite-<run>.log``; this prints the
running steps' progress (tests finished) once a minute and, at the end,
each run's summary and result. A step runs whether or not the one before it
passed. The exit status is the first failing run's, 0 when all pass.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOGS = ROOT / "target"
# The scenarios make test runs on Delta too: the sample's late arrivals,
# corrections, deletions, quarantine, restated gold and staged publication;
# publication holds; the SCD2 dimension; versions, restore and maintenance;
# data tests answered from the table versions they passed on; silver's
# change capture; the run clock; source freshness; the run lock; schema
# changes; landing into bronze; the Python models (sessions, completeness);
# lateness monitoring. Left to Iceberg's step: the checks of hostile vars and
# dbt's unit tests (inline fixtures, no table of the format read), and the
# long ones (the backfills, the period close, the 45-day schedule, the
# benchmark's smoke run), which `make test-delta` runs.
DELTA_SCENARIOS = (
    "tests/pytest/test_change_capture.py",
    "tests/pytest/test_completeness.py",
    "tests/pytest/test_ingest.py",
    "tests/pytest/test_late_arrival_sample.py",
    "tests/pytest/test_lateness_monitoring.py",
    "tests/pytest/test_passed_tests.py",
    "tests/pytest/test_publication_holds.py",
    "tests/pytest/test_run_clock.py",
    "tests/pytest/test_run_lock.py",
    "tests/pytest/test_scd2.py",
    "tests/pytest/test_schema_changes.py",
    "tests/pytest/test_sessionize.py",
    "tests/pytest/test_source_freshness.py",
    "tests/pytest/test_versions.py",
)
# The project's tests that start processes of their own (their own JVMs) and
# need no session of the run's: a step of their own, beside the others.
PROCESS_TESTS = (
    "tests/pytest/test_faults.py",
    "tests/pytest/test_shared_load.py",
    "tests/pytest/test_shared_metastore.py",
    "tests/pytest/test_stream.py",
    "tests/pytest/test_thrift_server.py",
    "tests/pytest/test_warm_driver.py",
)
# The steps' sessions evaluate expressions without generating code
# (spark_config.CODEGEN_SETTINGS): over small tables much of a build went to
# generating and compiling code (docs/table-formats.md has the measurements).
# The test files over thousands of events compile (many_rows:
# tests/pytest/conftest.py), as does the Thrift server whatever the setting,
# as a deployment does by default. The processes PROCESS_TESTS start (the
# landings, builds and streams, over the sample) take the setting from the
# environment: interpreted, their step used 6 to 8% less CPU (stop 81:
# test_faults.py 181.9 s against 192.7, test_warm_driver.py 187.6 against 204.9).
INTERPRETED_ENV = {"LATECOMER_CODEGEN": "interpreted"}
# dbt's conformance cases that run on Iceberg only: they read, list or show
# relations the same way on both formats (caching, dbt show, --empty,
# ephemeral models, unit tests), or run no Spark (the adapter's own units).
ADAPTER_FORMAT_NEUTRAL = (
    "tests/adapter/test_caching.py",
    "tests/adapter/test_dbt_show.py",
    "tests/adapter/test_empty.py",
    "tests/adapter/test_ephemeral.py",
    "tests/adapter/test_latecomer_units.py",
    "tests/adapter/test_unit_testing.py",
)
# Steps at once: two JVMs keep two cores busy; a third slows every run.
WORKERS = 2
PROGRESS_EVERY_S = 60
# pytest's exit status when it collected (or kept) no test.
NO_TESTS = 5
# Where a pytest run's summary starts: its failures, the project's time per
# test file (tests/pytest/conftest.py), the slowest cases, or pytest's short summary.
SUMMARY_MARKS = ("= FAILURES =", "= ERRORS =", "time per test file", "slowest", "short test summary")
# The adapter suites' slowest cases, in their summaries (dbt's suite has no time per file).
ADAPTER_DURATIONS = "--durations=12"
# pytest's progress: one character per finished test after the file's name
# (or alone, with -q or xdist), then "[ NN%]" once the line is full.
PROGRESS_LINE = re.compile(r"^(?:\S+\.py\s+)?([.FEsxX]+)\s*(?:\[\s*\d+%\])?$")


@dataclass
class Step:
    """One pytest run: its name (and log's), arguments and environment."""

    name: str
    args: list[str]
    env: dict[str, str]
    process: subprocess.Popen[bytes] | None = None
    started: float = 0.0
    seconds: float | None = None
    code: int | None = None

    @property
    def log(self) -> Path:
        return LOGS / f"suite-{self.name}.log"

    def start(self) -> None:
        command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *self.args]
        with self.log.open("wb") as out:
            self.process = subprocess.Popen(
                command,
                cwd=ROOT,
                env={**os.environ, "LATECOMER_TEST_RUN": self.name, **self.env},
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        self.started = time.monotonic()
        print(f"suite: {self.name} started, output in {self.log.relative_to(ROOT)}", flush=True)

    @property
    def running(self) -> bool:
        return self.process is not None and self.poll() is None

    def poll(self) -> int | None:
        if self.process is None:
            return None
        if self.code is None:
            self.code = self.process.poll()
            if self.code is not None:
                self.seconds = time.monotonic() - self.started
        return self.code

    def finished_tests(self) -> str:
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        marks = "".join(m.group(1) for m in map(PROGRESS_LINE.match, text.splitlines()) if m)
        failed = sum(marks.count(c) for c in "FE")
        return f"{self.name} {len(marks)} tests finished" + (f", {failed} failed" if failed else "")

    def summary(self) -> str:
        """The step's summary: from pytest's time-per-file section (or its
        failures, or its short summary, when it printed any) to the end."""
        text = self.log.read_text(errors="replace") if self.log.exists() else "(not run)"
        marks = [text.rfind(mark) for mark in SUMMARY_MARKS]
        start = min((m for m in marks if m >= 0), default=max(0, len(text) - 4000))
        return text[text.rfind("\n", 0, start) + 1 :].rstrip()


def start_next(steps: Sequence[Step]) -> bool:
    """Start the next step not yet started while fewer than WORKERS run;
    whether every step has finished."""
    while sum(step.running for step in steps) < WORKERS:
        waiting = next((step for step in steps if step.process is None), None)
        if waiting is None:
            break
        waiting.start()
    return all(step.poll() is not None for step in steps)


def adapter_step(table_format: str, target: str = "session", leave_out: Sequence[str] = ()) -> Step:
    """dbt's adapter conformance suite (tests/adapter) on one format and target."""
    name = f"adapter-{table_format}" + ("" if target == "session" else f"-{target}")
    args = ["tests/adapter", ADAPTER_DURATIONS, *(f"--ignore={path}" for path in leave_out)]
    env = {"ADAPTER_FORMAT": table_format, "ADAPTER_TARGET": target}
    return Step(name, args, {**env, **(INTERPRETED_ENV if target == "session" else {})})


def planned_steps(args: Sequence[str]) -> list[Step]:
    """The steps, the longest first (the module's docstring). With arguments
    (``-k``, files) only the project's suite runs, on both formats."""
    files = [arg for arg in args if arg.endswith(".py") or "::" in arg]
    iceberg_env = {"LATECOMER_TEST_FORMAT": "iceberg", **INTERPRETED_ENV}
    delta_env = {"LATECOMER_TEST_FORMAT": "delta", **INTERPRETED_ENV}
    delta = Step("delta", list(args) if files else [*args, *DELTA_SCENARIOS], delta_env)
    if args:
        return [Step("iceberg", list(args), iceberg_env), delta]
    return [
        Step("iceberg", ["tests/pytest", *(f"--ignore={path}" for path in PROCESS_TESTS)], iceberg_env),
        delta,
        adapter_step("delta", leave_out=ADAPTER_FORMAT_NEUTRAL),
        Step("iceberg-processes", list(PROCESS_TESTS), iceberg_env),
        adapter_step("iceberg"),
        adapter_step("iceberg", "thrift"),
    ]


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    LOGS.mkdir(exist_ok=True)
    started = time.monotonic()
    steps = planned_steps(args)
    report_at = started + PROGRESS_EVERY_S
    try:
        while not start_next(steps):
            time.sleep(1)
            if time.monotonic() >= report_at:
                report_at += PROGRESS_EVERY_S
                elapsed = (time.monotonic() - started) / 60
                running = [step.finished_tests() for step in steps if step.running]
                print(f"suite: {elapsed:.0f} min: " + "; ".join(running), flush=True)
    except KeyboardInterrupt:
        for step in steps:
            if step.running and step.process is not None:
                step.process.terminate()
        raise
    for step in steps:
        print(f"\n===== {step.name}: {step.log.relative_to(ROOT)} =====\n{step.summary()}")
    print("\nsuite: " + "; ".join(f"{step.name} {outcome(step.code)} in {step.seconds or 0:.0f} s" for step in steps))
    print(f"suite: {time.monotonic() - started:.0f} s in all")
    return next((step.code for step in steps if step.code not in (0, NO_TESTS)), 0)


def outcome(code: int | None) -> str:
    if code == NO_TESTS:
        # The files given hold no test for this format (on Delta, those that run no Spark).
        return "had no test to run"
    return "passed" if code == 0 else f"FAILED ({code})"


if __name__ == "__main__":
    sys.exit(main())
