"""``python -m tests.suite``: the test suite on both table formats at once (``make test``).

Two pytest runs side by side, each with its own Spark session, metastore,
dbt target and log folders (tests/pytest/conftest.py):

  iceberg  every test: the plain-Python logic, rendering and parsing, the
           scenarios, the Thrift server, the standalone cluster and the
           benchmark's smoke run;
  delta    the core scenarios again on Delta Lake (DELTA_SCENARIOS), at the
           lowest CPU priority.

Why so: a build on two cores keeps the machine about two-thirds busy, and a
Delta build costs two to three Iceberg builds (docs/table-formats.md).
Three JVMs at once (Delta's scenarios in two workers) made every run three
times slower; one Delta run at the lowest priority takes the third the
Iceberg run leaves idle, as lint does. ``make test-delta`` runs every
scenario on Delta (the tests that run Spark), the 45-day schedule included.

Arguments are passed to both pytest runs (``-k``, ``-x``); a file given
runs on both. Each run's output goes to ``target/suite-<format>.log``; this
prints their progress (tests finished) once a minute and, at the end, each
run's time per file and result. The exit status is the first failing
run's, 0 when both pass.
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
# pytest's progress: one character per finished test after the file's name
# (or alone, with -q or xdist), then "[ NN%]" once the line is full.
PROGRESS_LINE = re.compile(r"^(?:\S+\.py\s+)?([.FEsxX]+)\s*(?:\[\s*\d+%\])?$")


@dataclass
class Run:
    table_format: str
    args: list[str]
    # Lowest CPU priority (nice 19): runs on what the other run leaves idle.
    beside: bool = False
    process: subprocess.Popen[bytes] | None = None
    started: float = 0.0
    seconds: float | None = None

    @property
    def log(self) -> Path:
        return LOGS / f"suite-{self.table_format}.log"

    def start(self) -> None:
        env = {**os.environ, "LATECOMER_TEST_FORMAT": self.table_format}
        command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *self.args]
        with self.log.open("wb") as out:
            self.process = subprocess.Popen(
                command,
                cwd=ROOT,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                preexec_fn=(lambda: os.nice(19)) if self.beside else None,
            )
        self.started = time.monotonic()

    def poll(self) -> int | None:
        assert self.process is not None
        code = self.process.poll()
        if code is not None and self.seconds is None:
            self.seconds = time.monotonic() - self.started
        return code

    def progress(self) -> str:
        """How many tests have finished (and failed), or how the run ended."""
        if self.seconds is not None:
            return f"{self.table_format} done ({self.poll()}) in {self.seconds:.0f} s"
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        marks = "".join(m.group(1) for m in map(PROGRESS_LINE.match, text.splitlines()) if m)
        failed = sum(marks.count(c) for c in "FE")
        return f"{self.table_format} {len(marks)} tests finished" + (f", {failed} failed" if failed else "")

    def summary(self) -> str:
        """The run's summary: from pytest's time-per-file section (or its
        failures, when it printed any) to the end."""
        text = self.log.read_text(errors="replace")
        marks = [text.rfind(mark) for mark in ("= FAILURES =", "= ERRORS =", "time per test file")]
        start = min((m for m in marks if m >= 0), default=max(0, len(text) - 4000))
        return text[text.rfind("\n", 0, start) + 1 :].rstrip()


def runs(args: Sequence[str]) -> list[Run]:
    files = [arg for arg in args if arg.endswith(".py") or "::" in arg]
    return [
        Run("iceberg", list(args)),
        Run("delta", list(args) if files else [*args, *DELTA_SCENARIOS], beside=True),
    ]


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    LOGS.mkdir(exist_ok=True)
    started = time.monotonic()
    suite = runs(args)
    for run in suite:
        run.start()
        print(f"suite: {run.table_format} started, output in {run.log.relative_to(ROOT)}", flush=True)
    report_at = started + PROGRESS_EVERY_S
    try:
        while any(run.poll() is None for run in suite):
            time.sleep(1)
            if time.monotonic() >= report_at:
                report_at += PROGRESS_EVERY_S
                elapsed = (time.monotonic() - started) / 60
                print(f"suite: {elapsed:.0f} min: " + "; ".join(r.progress() for r in suite), flush=True)
    except KeyboardInterrupt:
        for run in suite:
            if run.process is not None and run.process.poll() is None:
                run.process.terminate()
        raise
    codes = [run.poll() for run in suite]
    for run in suite:
        print(f"\n===== {run.table_format}: {run.log.relative_to(ROOT)} =====\n{run.summary()}")
    print(f"\nsuite: {'; '.join(r.progress() for r in suite)}; {time.monotonic() - started:.0f} s in all")
    return next((code for code in codes if code), 0)


if __name__ == "__main__":
    sys.exit(main())
