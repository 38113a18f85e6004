"""One writer at a time per deployment: the run lock.

Builds, ingests, steward decisions and the run-operations that write
(``restore_table``, ``maintain_tables``) each hold the lock of their
deployment (the dbt target schema, e.g. ``latecomer``) while they run, so two
of them never write the same tables at once. The lock is an advisory
``flock`` on ``<state dir>/locks/<schema>.lock``, a file that also names its
holder (process, host, what it runs, since when):

* the kernel releases a ``flock`` when its process ends, however it ends, so
  a lock left by a dead process (SIGKILL, a crash) is free again at once; the
  next holder says so, naming the dead one;
* a second caller waits up to ``LATECOMER_LOCK_WAIT_SECONDS`` (default 0:
  it exits at once) and then fails with :class:`RunLockBusy`, whose message
  names the holder and how to wait instead.

The lock guards processes of one host that share a state dir. Deployments
whose writers run on several hosts need a lock those hosts share (their
scheduler's, or a metastore service's Iceberg commit locks for single commits).

Two locks per deployment, one for each thing that must have one writer
(:data:`DEPLOYMENT`, :data:`BRONZE`). Each operation names the locks it holds
(:func:`locks_for`), always taken in one order, so two operations exclude
each other exactly when they name a lock in common (:func:`conflicts`):

* on the embedded Derby metastore, which admits one process at a time, every
  operation holds the deployment writer lock, as before the split;
* on a shared catalog (``LATECOMER_METASTORE_URI``), a landing holds only the
  bronze append lock: bronze is append-only and the ledger consumes files by
  identity, so a landing appends while a build runs, and the build reads it
  next time. Two landings still take turns (a file landed twice at once would
  be landed twice), and ``restore_table`` and ``maintain_tables``, which may
  rewrite any table, hold both.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import socket
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import Enum
from pathlib import Path
from typing import IO, TextIO

from python_jobs.core.spark_config import private_dir, state_dir

WAIT_ENV = "LATECOMER_LOCK_WAIT_SECONDS"
# The exit code of a command-line tool that found the lock busy (EX_TEMPFAIL:
# a scheduler may retry it later).
BUSY_EXIT_CODE = 75
POLL_SECONDS = 0.2
# Schemas are dbt identifiers; anything else never reaches a file name.
SCHEMA_PATTERN = re.compile(r"^[A-Za-z0-9_]{1,128}$")


class LockKind(Enum):
    """A lock of a deployment: what it keeps to one writer (its value), and its file's suffix."""

    DEPLOYMENT = ("deployment writer", "")
    BRONZE = ("bronze append", ".bronze")

    @property
    def title(self) -> str:
        return self.value[0]

    @property
    def suffix(self) -> str:
        return self.value[1]


DEPLOYMENT = LockKind.DEPLOYMENT
BRONZE = LockKind.BRONZE
# The order locks are taken in (a caller holding one never waits for an earlier one).
LOCK_ORDER = (DEPLOYMENT, BRONZE)


class Operation(Enum):
    """A writer of a deployment; its value is how messages name its kind."""

    BUILD = "dbt builds"
    STEWARD = "steward decisions"
    LANDING = "landings"
    RESTORE = "restore_table"
    MAINTAIN = "maintain_tables"


def shared_catalog(environ: Mapping[str, str] | None = None) -> bool:
    """Whether processes share a metastore service (``LATECOMER_METASTORE_URI`` set)."""
    return bool((os.environ if environ is None else environ).get("LATECOMER_METASTORE_URI"))


def locks_for(operation: Operation, shared: bool | None = None) -> tuple[LockKind, ...]:
    """The locks ``operation`` holds while it runs, in :data:`LOCK_ORDER`.

    On the embedded metastore (``shared`` false) every operation holds the
    deployment writer lock. On a shared catalog a landing holds only the
    bronze append lock, and restore and maintenance, which may rewrite any
    table, bronze included, hold both.
    """
    shared = shared_catalog() if shared is None else shared
    if not shared:
        return (DEPLOYMENT,)
    return {
        Operation.BUILD: (DEPLOYMENT,),
        Operation.STEWARD: (DEPLOYMENT,),
        Operation.LANDING: (BRONZE,),
        Operation.RESTORE: (DEPLOYMENT, BRONZE),
        Operation.MAINTAIN: (DEPLOYMENT, BRONZE),
    }[operation]


def conflicts(first: Operation, second: Operation, shared: bool | None = None) -> bool:
    """Whether two operations on one deployment exclude each other: they hold a lock in common."""
    return bool(set(locks_for(first, shared)) & set(locks_for(second, shared)))


def holders_of(kind: LockKind, shared: bool | None = None) -> list[Operation]:
    """The operations that hold ``kind``: the ones a busy message names."""
    return [operation for operation in Operation if kind in locks_for(operation, shared)]


def busy_message(schema: str, kind: LockKind, held_by: str, path: Path, shared: bool | None = None) -> str:
    """What a caller that found ``kind`` held is told: who holds it, what takes turns on it, and how to wait."""
    takers = [operation.value for operation in holders_of(kind, shared)] or ["its writers"]
    turns = ", ".join(takers[:-1]) + f" and {takers[-1]}" if len(takers) > 1 else takers[0]
    return (
        f"deployment {schema!r} is busy: {held_by} holds its {kind.title} lock ({path}); "
        f"{turns} take turns on it. Run again once it ends, or set {WAIT_ENV} to wait for it."
    )


class RunLockError(RuntimeError):
    """The lock cannot be taken: a bad schema name or wait setting."""


class RunLockBusy(RunLockError):
    """Another process holds the deployment's lock."""


@dataclass(frozen=True)
class Holder:
    """Who holds (or last held) a lock, as its file records it."""

    pid: int
    host: str
    what: str
    since: str

    def describe(self) -> str:
        return f"{self.what} (pid {self.pid} on {self.host}, since {self.since})"


def lock_path(schema: str, kind: LockKind = DEPLOYMENT) -> Path:
    """``<state dir>/locks/<schema>.lock`` (the deployment writer lock) or
    ``<schema>.bronze.lock`` (the bronze append lock); the folder owner-only."""
    if not SCHEMA_PATTERN.match(schema or ""):
        raise RunLockError(f"run lock: schema {schema!r} is not a plain identifier (letters, digits, _)")
    return private_dir(state_dir() / "locks") / f"{schema.lower()}{kind.suffix}.lock"


def wait_seconds(value: str | None = None) -> float:
    """``LATECOMER_LOCK_WAIT_SECONDS`` (or ``value``) as seconds; unset or empty: 0."""
    text = os.environ.get(WAIT_ENV, "") if value is None else value
    try:
        seconds = float(text) if text.strip() else 0.0
    except ValueError:
        raise RunLockError(f"{WAIT_ENV}={text!r} is not a number of seconds") from None
    if seconds < 0 or seconds != seconds:
        raise RunLockError(f"{WAIT_ENV}={text!r} must be 0 or more seconds")
    return seconds


def read_holder(handle: IO[str]) -> Holder | None:
    """The holder recorded in an open lock file, or None when it records none."""
    handle.seek(0)
    try:
        record = json.loads(handle.read() or "null")
        return None if record is None else Holder(**record)
    except (ValueError, TypeError):
        return None


class RunLock:
    """The locks held for one operation; :meth:`release` (or process exit) frees them."""

    def __init__(self, schema: str, what: str, handles: IO[str] | list[IO[str]]) -> None:
        self.schema = schema
        self.what = what
        self._handles: list[IO[str]] = handles if isinstance(handles, list) else [handles]

    @property
    def held(self) -> bool:
        return bool(self._handles)

    def release(self) -> None:
        """Free the locks, the last taken first."""
        handles, self._handles = self._handles, []
        for handle in reversed(handles):
            release_handle(handle)


def release_handle(handle: IO[str]) -> None:
    """Clear a held lock file's holder (a file naming one was left by a dead
    holder) and free its ``flock``."""
    try:
        handle.seek(0)
        handle.truncate()
        handle.flush()
    finally:
        fcntl.flock(handle, fcntl.LOCK_UN)
        handle.close()


def acquire(
    schema: str,
    what: str,
    wait: float | None = None,
    out: TextIO | None = None,
    clock: Callable[[], float] = time.monotonic,
    kinds: tuple[LockKind, ...] = (DEPLOYMENT,),
    shared: bool | None = None,
) -> RunLock:
    """Take ``schema``'s locks ``kinds`` (default: the deployment writer lock)
    for ``what`` (e.g. ``dbt build``), in :data:`LOCK_ORDER`, waiting up to
    ``wait`` seconds in all (default :func:`wait_seconds`); messages about
    waiting or a dead holder go to ``out`` (stderr). When one cannot be had,
    the ones already taken are freed before :class:`RunLockBusy` is raised
    (whose message says which writers take turns on it, on a ``shared``
    catalog or not: default :func:`shared_catalog`)."""
    out = out or sys.stderr
    wait = wait_seconds() if wait is None else wait
    deadline = clock() + wait
    handles: list[IO[str]] = []
    try:
        for kind in sorted(set(kinds), key=LOCK_ORDER.index):
            handles.append(take(schema, what, kind, wait, deadline, out, clock, shared))
    except BaseException:
        RunLock(schema, what, handles).release()
        raise
    return RunLock(schema, what, handles)


def acquire_for(
    operation: Operation, schema: str, what: str, wait: float | None = None, shared: bool | None = None
) -> RunLock:
    """:func:`acquire` of the locks ``operation`` holds (:func:`locks_for`)."""
    return acquire(schema, what, wait, kinds=locks_for(operation, shared), shared=shared)


def take(
    schema: str,
    what: str,
    kind: LockKind,
    wait: float,
    deadline: float,
    out: TextIO,
    clock: Callable[[], float],
    shared: bool | None = None,
) -> IO[str]:
    """One lock's file, held, with this process recorded as its holder."""
    path = lock_path(schema, kind)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    handle = os.fdopen(fd, "r+", encoding="utf-8")
    told = False
    while True:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            holder = read_holder(handle)
            held_by = holder.describe() if holder else "another process"
            if clock() >= deadline:
                handle.close()
                raise RunLockBusy(busy_message(schema, kind, held_by, path, shared)) from None
            if not told:
                print(f"run lock: waiting up to {wait:g} s for {held_by} to finish", file=out)
                told = True
            time.sleep(POLL_SECONDS)
    previous = read_holder(handle)
    if previous is not None:
        # A holder that released the lock clears the file: one still named
        # ended without releasing it (killed, or crashed).
        print(
            f"run lock: {previous.describe()} ended without releasing the lock of {schema!r} "
            f"({kind.title}); taken over",
            file=out,
        )
    handle.seek(0)
    handle.truncate()
    holder = Holder(
        pid=os.getpid(),
        host=socket.gethostname(),
        what=what,
        since=datetime.now(UTC).isoformat(timespec="seconds"),
    )
    handle.write(json.dumps(holder.__dict__))
    handle.flush()
    return handle


def acquire_for_tool(tool: str, schema: str, what: str, operation: Operation = Operation.BUILD) -> RunLock | int:
    """:func:`acquire_for` for a command-line tool: the locks of ``operation``,
    or, when they cannot be had, the exit code to return
    (:data:`BUSY_EXIT_CODE` when another process holds one, 2 for a bad
    schema or setting) after saying why on stderr."""
    try:
        return acquire_for(operation, schema, what)
    except RunLockError as exc:
        print(f"{tool}: error: {exc}", file=sys.stderr)
        return BUSY_EXIT_CODE if isinstance(exc, RunLockBusy) else 2


@contextmanager
def held(schema: str, what: str, wait: float | None = None) -> Iterator[RunLock]:
    """:func:`acquire` for the length of a ``with`` block."""
    lock = acquire(schema, what, wait)
    try:
        yield lock
    finally:
        lock.release()
