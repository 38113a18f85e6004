"""``python -m tests.suite``: the test suite on both table formats at once (``make test``).

Two lanes side by side, each a series of pytest runs with its own Spark
session, metastore, dbt target and log folders:

  iceberg  every project test (tests/pytest): the plain-Python logic,
           rendering and parsing, the scenarios, the Thrift server, the
           standalone cluster and the benchmark's smoke run; then dbt's
           basic adapter suite (tests/adapter) on a Thrift server;
  delta    the core scenarios again on Delta Lake (DELTA_SCENARIOS), then
           dbt's adapter conformance suite on the session target, on Delta
           and then on Iceberg, at the lowest CPU priority.

Why so: a build on two cores keeps the machine about two-thirds busy, and a
Delta build costs two to three Iceberg builds (docs/table-formats.md).
Three JVMs at once (Delta's scenarios in two workers) made every run three
times slower; one Delta run at the lowest priority takes the third the
Iceberg run leaves idle, as lint does. ``make test-delta`` runs every
scenario on Delta (the tests that run Spark), the 45-day schedule included.

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
# publication holds; the SCD2 dimension; versions, restore and maintenance.
DELTA_SCENARIOS = (
    "tests/pytest/test_late_arrival_sample.py",
    "tests/pytest/test_publication_holds.py",
    "tests/pytest/test_scd2.py",
    "tests/pytest/test_versions.py",
)
PROGRESS_EVERY_S = 60
# pytest's exit status when it collected (or kept) no test.
NO_TESTS = 5
# Where a pytest run's summary starts: its failures, the project's time per
# test file (tests/pytest/conftest.py), or pytest's short summary.
SUMMARY_MARKS = ("= FAILURES =", "= ERRORS =", "time per test file", "short test summary")
# pytest's progress: one character per finished test after the file's name
# (or alone, with -q or xdist), then "[ NN%]" once the line is full.
PROGRESS_LINE = re.compile(r"^(?:\S+\.py\s+)?([.FEsxX]+)\s*(?:\[\s*\d+%\])?$")


@dataclass
class Step:
    """One pytest run of a lane: its name (and log's), arguments and environment."""

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

    def start(self, beside: bool) -> None:
        command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *self.args]
        with self.log.open("wb") as out:
            self.process = subprocess.Popen(
                command,
                cwd=ROOT,
                env={**os.environ, **self.env},
                stdout=out,
                stderr=subprocess.STDOUT,
                preexec_fn=(lambda: os.nice(19)) if beside else None,
            )
        self.started = time.monotonic()

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
        marks = [
            text.rfind(mark) for mark in ("= FAILURES =", "= ERRORS =", "time per test file", "short test summary")
        ]
        start = min((m for m in marks if m >= 0), default=max(0, len(text) - 4000))
        return text[text.rfind("\n", 0, start) + 1 :].rstrip()


@dataclass
class Lane:
    """Steps run one after the other; ``beside``: at the lowest CPU priority
    (nice 19), on what the other lane leaves idle. A step runs whether or not
    the one before it passed, so one failure does not hide another's result."""

    name: str
    steps: list[Step]
    beside: bool = False
    started: float = 0.0

    def start(self) -> None:
        self.started = time.monotonic()
        self._next()

    def _next(self) -> None:
        step = next((step for step in self.steps if step.process is None), None)
        if step is not None:
            step.start(self.beside)
            print(f"suite: {step.name} started, output in {step.log.relative_to(ROOT)}", flush=True)

    def running(self) -> Step | None:
        """The step started and not yet finished, if any."""
        return next((step for step in self.steps if step.process is not None and step.poll() is None), None)

    def poll(self) -> bool:
        """Whether every step has finished (starting the next when one has)."""
        if self.running() is not None:
            return False
        if any(step.process is None for step in self.steps):
            self._next()
            return False
        return True

    def progress(self) -> str:
        running = self.running()
        if running is not None:
            return running.finished_tests()
        return f"{self.name} done in {time.monotonic() - self.started:.0f} s"

    def terminate(self) -> None:
        for step in self.steps:
            if step.process is not None and step.process.poll() is None:
                step.process.terminate()


def adapter_step(table_format: str, target: str = "session") -> Step:
    """dbt's adapter conformance suite (tests/adapter) on one format and target."""
    name = f"adapter-{table_format}" + ("" if target == "session" else f"-{target}")
    return Step(name, ["tests/adapter"], {"ADAPTER_FORMAT": table_format, "ADAPTER_TARGET": target})


def lanes(args: Sequence[str]) -> list[Lane]:
    """Iceberg's whole suite, then dbt's basic adapter suite on the Thrift target;
    beside it, Delta's core scenarios, then the adapter suite on Delta and on
    Iceberg (session target). The lanes take about as long.
    With arguments (``-k``, files) only the project's suite runs, on both formats."""
    files = [arg for arg in args if arg.endswith(".py") or "::" in arg]
    iceberg = Step("iceberg", list(args), {"LATECOMER_TEST_FORMAT": "iceberg"})
    delta = Step("delta", list(args) if files else [*args, *DELTA_SCENARIOS], {"LATECOMER_TEST_FORMAT": "delta"})
    if args:
        return [Lane("iceberg", [iceberg]), Lane("delta", [delta], beside=True)]
    return [
        Lane("iceberg", [iceberg, adapter_step("iceberg", "thrift")]),
        Lane("delta", [delta, adapter_step("delta"), adapter_step("iceberg")], beside=True),
    ]


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    LOGS.mkdir(exist_ok=True)
    started = time.monotonic()
    suite = lanes(args)
    for lane in suite:
        lane.start()
    report_at = started + PROGRESS_EVERY_S
    try:
        while not all([lane.poll() for lane in suite]):
            time.sleep(1)
            if time.monotonic() >= report_at:
                report_at += PROGRESS_EVERY_S
                elapsed = (time.monotonic() - started) / 60
                print(f"suite: {elapsed:.0f} min: " + "; ".join(lane.progress() for lane in suite), flush=True)
    except KeyboardInterrupt:
        for lane in suite:
            lane.terminate()
        raise
    steps = [step for lane in suite for step in lane.steps]
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
