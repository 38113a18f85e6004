"""One writer per deployment (python_jobs.core.run_lock, adapter/dbt/include/latecomer/macros/run_lock.sql).

A second process holds the lock here: a plain Python process, started with
this run's state dir, that takes the lock and sleeps. While it lives, an
ingest, a steward decision and a dbt build of the same schema exit at once,
naming it, and leave the tables as they were; once it is killed (SIGKILL: no
release), the next caller takes the lock over and says whose it was.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from python_jobs.core import run_lock
from python_jobs.landing import steward
from tests.pytest.conftest import ROOT, Project

HOLDER = """
import sys, time
from python_jobs.core import run_lock
lock = run_lock.acquire(sys.argv[1], "lock test holder")
print("held", flush=True)
time.sleep(float(sys.argv[2]))
lock.release()
print("released", flush=True)
"""


@contextmanager
def holder(schema: str, seconds: float = 120.0) -> Iterator[subprocess.Popen[str]]:
    """A process holding ``schema``'s lock for ``seconds`` (killed on exit if still alive)."""
    process = subprocess.Popen(
        [sys.executable, "-c", HOLDER, schema, str(seconds)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None and process.stdout.readline().strip() == "held"
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=30)


def kill(process: subprocess.Popen[str]) -> None:
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)


def test_a_second_caller_is_told_who_holds_the_lock(capsys) -> None:
    with holder("t_lock_plain") as process:
        with pytest.raises(run_lock.RunLockBusy) as busy:
            run_lock.acquire("t_lock_plain", "second caller", wait=0)
        message = str(busy.value)
        assert "deployment 't_lock_plain' is busy" in message
        assert f"lock test holder (pid {process.pid} on " in message
        assert run_lock.WAIT_ENV in message
        # Waiting does not help while the holder lives.
        started = time.monotonic()
        with pytest.raises(run_lock.RunLockBusy):
            run_lock.acquire("t_lock_plain", "second caller", wait=0.6)
        assert time.monotonic() - started >= 0.6
        assert "waiting up to 0.6 s for lock test holder" in capsys.readouterr().err
        kill(process)
    # The kernel freed the dead holder's lock; its record names it.
    lock = run_lock.acquire("t_lock_plain", "after the kill", wait=0)
    assert lock.held
    assert f"lock test holder (pid {process.pid} on " in capsys.readouterr().err
    lock.release()
    # A released lock leaves no record: the next holder reports nothing.
    run_lock.acquire("t_lock_plain", "again", wait=0).release()
    assert capsys.readouterr().err == ""


def test_a_waiting_caller_gets_the_lock_once_it_is_released(capsys) -> None:
    with holder("t_lock_wait", seconds=1.0):
        lock = run_lock.acquire("t_lock_wait", "patient caller", wait=30)
        assert lock.held
        lock.release()
    err = capsys.readouterr().err
    assert "waiting up to 30 s" in err and "ended without releasing" not in err


def test_locks_of_other_deployments_are_independent() -> None:
    with holder("t_lock_one"):
        run_lock.acquire("t_lock_two", "other deployment", wait=0).release()


@pytest.mark.parametrize("schema", ["", "a/b", "../x", "x y", "t;drop"])
def test_schema_names_that_are_not_identifiers_are_refused(schema: str) -> None:
    with pytest.raises(run_lock.RunLockError, match="not a plain identifier"):
        run_lock.acquire(schema, "bad", wait=0)


@pytest.mark.parametrize("value", ["soon", "-1", "nan"])
def test_bad_wait_settings_are_refused(value: str) -> None:
    with pytest.raises(run_lock.RunLockError, match=run_lock.WAIT_ENV):
        run_lock.wait_seconds(value)


def test_lock_files_live_in_a_private_folder() -> None:
    path = run_lock.lock_path("t_lock_mode")
    assert path.parent.stat().st_mode & 0o777 == 0o700


def test_ingest_steward_and_dbt_wait_for_the_deployment(project: Project, write_ndjson, capsys) -> None:
    landing = write_ndjson(
        "one.ndjson",
        [
            {
                "event_id": "e1",
                "event_type": "order_placed",
                "user_id": "u1",
                "event_ts": "2024-01-01T10:00:00Z",
                "amount": "12.50",
            }
        ],
    )
    with holder(project.schema) as process:
        assert project.ingest("web", landing, arrival_ts="2024-01-01T11:00:00+00:00") == run_lock.BUSY_EXIT_CODE
        err = capsys.readouterr().err
        assert f"ingest: error: deployment '{project.schema}' is busy: lock test holder (pid {process.pid}" in err
        # Nothing landed: not even the landing tables were created.
        assert not project.spark.catalog.tableExists(f"{project.schema}_bronze.bronze_events")

        decision = ["--schema", project.schema, "release", "--reason", "approved", "some-row-id"]
        assert steward.main(decision) == run_lock.BUSY_EXIT_CODE
        assert "is busy: lock test holder" in capsys.readouterr().err

        result = project.dbt("build", "--select", "stg_bronze_ingestions", expect_ok=False)
        assert not result.success
        assert f"deployment '{project.schema}' is busy: lock test holder (pid {process.pid}" in str(result.exception)
        assert not project.spark.catalog.tableExists(f"{project.schema}_bronze.bronze_ingestions")
        kill(process)

    assert project.ingest("web", landing, arrival_ts="2024-01-01T11:00:00+00:00") == 0
    assert "ended without releasing the lock" in capsys.readouterr().err
    project.dbt("build", "--select", "stg_bronze_ingestions")
    # The build released the lock at its end: another caller gets it at once.
    run_lock.acquire(project.schema, "after the build", wait=0).release()
    assert project.table("bronze", "bronze_events").count() == 1


def test_lock_path_is_under_the_state_dir() -> None:
    assert run_lock.lock_path("t_lock_where") == Path(os.environ["LATECOMER_STATE_DIR"]).resolve() / "locks" / (
        "t_lock_where.lock"
    )


def test_an_invocation_that_ends_holding_the_lock_releases_it(project: Project) -> None:
    """A run-operation that takes the lock and never releases it (as a failing
    on-run-end hook or macro would leave it): the invocation's end frees it, in
    this process that goes on running dbt."""
    project.dbt("run-operation", "acquire_run_lock", "--args", "{what: 'left held'}")
    run_lock.acquire(project.schema, "after the run-operation", wait=0).release()
