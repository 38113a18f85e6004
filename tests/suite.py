"""``python -m tests.suite``: the test suite on both table formats at once (``make test``).

Two pytest runs side by side, each with its own Spark sessions, metastores,
dbt target and log folders (tests/pytest/conftest.py):

  iceberg  every test: the plain-Python logic, rendering and parsing, the
           scenarios, the Thrift server, the standalone cluster and the
           benchmark's smoke run;
  delta    the scenarios again on Delta Lake (the tests that run Spark; the
           conftest deselects the rest), split by file across two
           pytest-xdist workers; but for those marked ``long_on_delta``
           (the 45-day schedule, the benchmark's smoke run), which
           ``make test-delta`` runs: a Delta build costs about three
           Iceberg builds (docs/table-formats.md), and those two alone
           would take some 35 minutes on Delta.

Why three JVMs on two cores: a build keeps about one core busy (the driver
plans each statement, dbt renders the next on the Python side, tasks are
small), so one run at a time leaves the second core mostly idle.

Arguments are passed to both pytest runs (``-k``, a file, ``-x``). Each run's
output goes to ``target/suite-<format>.log``; this prints their progress
once a minute and, at the end, each run's time per file and result. The exit
status is the first failing run's, 0 when both pass.
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
# pytest-xdist workers for Delta's run; each is a process with its own JVM.
DELTA_WORKERS = 2
PROGRESS_EVERY_S = 60
PERCENT = re.compile(r"\[\s*(\d+)%\]")


@dataclass
class Run:
    table_format: str
    args: list[str]
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
            self.process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
        self.started = time.monotonic()

    def poll(self) -> int | None:
        assert self.process is not None
        code = self.process.poll()
        if code is not None and self.seconds is None:
            self.seconds = time.monotonic() - self.started
        return code

    def progress(self) -> str:
        """The last ``[ NN%]`` pytest printed, or how the run ended."""
        if self.seconds is not None:
            return f"{self.table_format} done ({self.poll()}) in {self.seconds:.0f} s"
        found = PERCENT.findall(self.log.read_text(errors="replace")) if self.log.exists() else []
        return f"{self.table_format} {found[-1] if found else 0}%"

    def summary(self) -> str:
        """The run's summary: from pytest's time-per-file section (or its
        failures, when it printed any) to the end."""
        text = self.log.read_text(errors="replace")
        marks = [text.rfind(mark) for mark in ("= FAILURES =", "= ERRORS =", "time per test file")]
        start = min((m for m in marks if m >= 0), default=max(0, len(text) - 4000))
        return text[text.rfind("\n", 0, start) + 1 :].rstrip()


def runs(args: Sequence[str]) -> list[Run]:
    return [
        Run("iceberg", list(args)),
        Run("delta", ["-n", str(DELTA_WORKERS), "--dist", "loadfile", "-m", "not long_on_delta", *args]),
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
