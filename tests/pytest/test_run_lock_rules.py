"""Which writers of one deployment exclude each other (python_jobs.core.run_lock), without Spark.

On the embedded metastore every writer holds the deployment writer lock, so
any two exclude each other. On a shared catalog a landing holds only the
bronze append lock: it runs beside a build or a steward decision, but not
beside another landing, a restore or a maintenance run, which hold it too.
The locks are ``flock``s, which conflict between two open files of one
process as between two processes, so one process shows the rules.
"""

from __future__ import annotations

import io
import itertools

import pytest

from python_jobs.core import run_lock
from python_jobs.core.run_lock import BRONZE, DEPLOYMENT, Operation

BUILD, STEWARD, LANDING, RESTORE, MAINTAIN = (
    Operation.BUILD,
    Operation.STEWARD,
    Operation.LANDING,
    Operation.RESTORE,
    Operation.MAINTAIN,
)
# The pairs that run side by side on a shared catalog; every other pair takes turns.
SIDE_BY_SIDE = {frozenset({BUILD, LANDING}), frozenset({STEWARD, LANDING})}


@pytest.mark.parametrize(("first", "second"), list(itertools.combinations_with_replacement(Operation, 2)))
def test_on_the_embedded_metastore_every_writer_takes_turns(first: Operation, second: Operation) -> None:
    assert run_lock.conflicts(first, second, shared=False)
    assert run_lock.locks_for(first, shared=False) == (DEPLOYMENT,)


@pytest.mark.parametrize(("first", "second"), list(itertools.combinations_with_replacement(Operation, 2)))
def test_on_a_shared_catalog_only_landings_run_beside_builds_and_decisions(first: Operation, second: Operation) -> None:
    expected = frozenset({first, second}) not in SIDE_BY_SIDE
    assert run_lock.conflicts(first, second, shared=True) is expected
    assert run_lock.conflicts(second, first, shared=True) is expected


def test_locks_are_named_in_one_order() -> None:
    for operation in Operation:
        kinds = run_lock.locks_for(operation, shared=True)
        assert list(kinds) == sorted(kinds, key=run_lock.LOCK_ORDER.index)
        assert kinds


def test_the_shared_catalog_is_the_metastore_setting() -> None:
    assert run_lock.shared_catalog({"LATECOMER_METASTORE_URI": "thrift://127.0.0.1:9083"})
    assert not run_lock.shared_catalog({"LATECOMER_METASTORE_URI": ""})
    assert not run_lock.shared_catalog({})


def test_lock_files_of_the_two_kinds() -> None:
    assert run_lock.lock_path("t_rules_files").name == "t_rules_files.lock"
    assert run_lock.lock_path("t_rules_files", BRONZE).name == "t_rules_files.bronze.lock"


def test_a_landing_appends_while_a_build_holds_the_deployment() -> None:
    build = run_lock.acquire_for(BUILD, "t_rules_side", "dbt build", wait=0, shared=True)
    try:
        landing = run_lock.acquire_for(LANDING, "t_rules_side", "ingest", wait=0, shared=True)
        landing.release()
    finally:
        build.release()


def test_a_second_landing_is_told_what_takes_turns(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LATECOMER_METASTORE_URI", "thrift://127.0.0.1:1")
    first = run_lock.acquire_for(LANDING, "t_rules_turns", "ingest of 1 events file(s) from web", wait=0)
    try:
        with pytest.raises(run_lock.RunLockBusy) as busy:
            run_lock.acquire_for(LANDING, "t_rules_turns", "ingest of 1 events file(s) from app", wait=0)
        message = str(busy.value)
        assert message.startswith("deployment 't_rules_turns' is busy: ingest of 1 events file(s) from web (pid ")
        assert "holds its bronze append lock" in message
        assert "landings, restore_table and maintain_tables take turns on it" in message
        with pytest.raises(run_lock.RunLockBusy) as busy:
            run_lock.acquire_for(RESTORE, "t_rules_turns", "dbt run-operation restore_table", wait=0)
        assert "holds its bronze append lock" in str(busy.value)
    finally:
        first.release()


def test_two_builds_are_told_what_takes_turns(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LATECOMER_METASTORE_URI", "thrift://127.0.0.1:1")
    first = run_lock.acquire_for(BUILD, "t_rules_builds", "dbt build", wait=0)
    try:
        with pytest.raises(run_lock.RunLockBusy) as busy:
            run_lock.acquire_for(BUILD, "t_rules_builds", "dbt build", wait=0)
        assert "holds its deployment writer lock" in str(busy.value)
        assert "dbt builds, steward decisions, restore_table and maintain_tables take turns on it" in str(busy.value)
    finally:
        first.release()


def test_a_caller_that_gets_one_lock_of_two_keeps_neither() -> None:
    landing = run_lock.acquire_for(LANDING, "t_rules_partial", "ingest", wait=0, shared=True)
    try:
        with pytest.raises(run_lock.RunLockBusy):
            run_lock.acquire_for(MAINTAIN, "t_rules_partial", "maintain_tables", wait=0, shared=True)
        # The deployment writer lock it took first was freed again.
        run_lock.acquire_for(BUILD, "t_rules_partial", "dbt build", wait=0, shared=True).release()
    finally:
        landing.release()


def test_a_restore_waits_for_a_landing_to_end() -> None:
    clock = iter(range(100))
    landing = run_lock.acquire_for(LANDING, "t_rules_wait", "ingest", wait=0, shared=True)
    out = io.StringIO()
    try:
        with pytest.raises(run_lock.RunLockBusy):
            run_lock.acquire(
                "t_rules_wait", "restore", wait=3, out=out, clock=lambda: float(next(clock)), kinds=(DEPLOYMENT, BRONZE)
            )
    finally:
        landing.release()
    assert "waiting up to 3 s for ingest" in out.getvalue()
    run_lock.acquire("t_rules_wait", "restore", wait=0, kinds=(DEPLOYMENT, BRONZE)).release()
