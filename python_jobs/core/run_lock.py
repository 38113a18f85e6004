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
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import socket
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
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


def lock_path(schema: str) -> Path:
    """``<state dir>/locks/<schema>.lock`` (the folder owner-only)."""
    if not SCHEMA_PATTERN.match(schema or ""):
        raise RunLockError(f"run lock: schema {schema!r} is not a plain identifier (letters, digits, _)")
    return private_dir(state_dir() / "locks") / f"{schema.lower()}.lock"


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
    """A held deployment lock; :meth:`release` (or process exit) frees it."""

    def __init__(self, schema: str, what: str, handle: IO[str]) -> None:
        self.schema = schema
        self.what = what
        self._handle: IO[str] | None = handle

    @property
    def held(self) -> bool:
        return self._handle is not None

    def release(self) -> None:
        if self._handle is None:
            return
        handle, self._handle = self._handle, None
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
) -> RunLock:
    """Take ``schema``'s lock for ``what`` (e.g. ``dbt build``), waiting up to ``wait`` seconds
    (default :func:`wait_seconds`); messages about waiting or a dead holder go to ``out`` (stderr)."""
    out = out or sys.stderr
    wait = wait_seconds() if wait is None else wait
    path = lock_path(schema)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    handle = os.fdopen(fd, "r+", encoding="utf-8")
    deadline = clock() + wait
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
                raise RunLockBusy(
                    f"deployment {schema!r} is busy: {held_by} holds its run lock ({path}). "
                    f"Run again once it ends, or set {WAIT_ENV} to wait for it."
                ) from None
            if not told:
                print(f"run lock: waiting up to {wait:g} s for {held_by} to finish", file=out)
                told = True
            time.sleep(POLL_SECONDS)
    previous = read_holder(handle)
    if previous is not None:
        # A holder that released the lock clears the file: one still named
        # ended without releasing it (killed, or crashed).
        print(f"run lock: {previous.describe()} ended without releasing the lock of {schema!r}; taken over", file=out)
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
    return RunLock(schema, what, handle)


def acquire_for_tool(tool: str, schema: str, what: str) -> RunLock | int:
    """:func:`acquire` for a command-line tool: the lock, or, when it cannot be
    had, the exit code to return (:data:`BUSY_EXIT_CODE` when another process
    holds it, 2 for a bad schema or setting) after saying why on stderr."""
    try:
        return acquire(schema, what)
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
