"""The run's context: its deployment lock, its clock, its vars and the project's fingerprint.

The run locks an invocation takes and releases (python_jobs.core.run_lock),
the stamp its clock starts with (python_jobs.core.run_clock), the backfill
and as-of vars checked (python_jobs.core.run_vars), the status epoch
(python_jobs.core.status_clock), and the fingerprint of what every model's
output depends on besides its own inputs.
"""

from __future__ import annotations

import hashlib
import json
import threading
from pathlib import Path
from typing import Any

from dbt.adapters.base.meta import AdapterMeta, available
from dbt.adapters.latecomer.macro_values import _failed
from dbt_common.invocation import get_invocation_id

from python_jobs.core import run_clock, run_lock, run_vars, status_clock

# The adapter's own macros (dbt/include/latecomer/macros).
ADAPTER_MACROS = Path(__file__).resolve().parents[2] / "include" / "latecomer" / "macros"

# The deployment run locks this process holds: schema -> (invocation id, lock).
_run_locks: dict[str, tuple[str, run_lock.RunLock]] = {}
_run_locks_guard = threading.Lock()


# Memo key of the invocation's run stamp.
RUN_STAMP_KEY = "run_clock:stamp"


class RunContextMixin(metaclass=AdapterMeta):
    """LatecomerAdapter's run lock, run clock and run vars; the stamp and the
    fingerprint are kept in the adapter's ``_memo``."""

    @available
    def acquire_run_lock(self, what: str, operation: str = "build") -> str:
        """Take the deployment's run locks (python_jobs.core.run_lock) for this invocation.

        Called by the first on-run-start hook (``operation`` build) and by the
        run-operations that write (``restore``, ``maintain``: on a shared
        catalog they hold the bronze append lock too, which landings take);
        ``release_run_lock`` (the last on-run-end hook) frees them, and so
        does the end of the process. Locks this process still holds for an
        earlier invocation (one that failed before its on-run-end) are
        released first; the ones this invocation holds already are kept.
        """
        schema = self.config.credentials.schema
        invocation = get_invocation_id()
        with _run_locks_guard:
            held = _run_locks.pop(schema.lower(), None)
            if held is not None and held[0] == invocation:
                _run_locks[schema.lower()] = held
                return ""
            if held is not None:
                held[1].release()
            try:
                lock = run_lock.acquire_for(run_lock.Operation[operation.upper()], schema, what)
            except run_lock.RunLockError as error:
                raise _failed(error) from None
            _run_locks[schema.lower()] = (invocation, lock)
        return ""

    @available
    def release_run_lock(self) -> str:
        """Release the run lock this invocation took (a no-op when it holds none)."""
        schema = self.config.credentials.schema.lower()
        with _run_locks_guard:
            held = _run_locks.get(schema)
            if held is not None and held[0] == get_invocation_id():
                del _run_locks[schema]
                held[1].release()
        return ""

    def cleanup_connections(self) -> None:
        """dbt's last call of an invocation (after on-run-end, and after a
        run-operation, even one that raised): the run lock is released here
        too, so a failing hook or macro never leaves it held in a process that
        goes on to run other invocations."""
        try:
            self.release_run_lock()
        finally:
            super().cleanup_connections()

    @available
    def start_run_clock(self, wall_clock: Any, last: str | None) -> str:
        """This invocation's stamp (python_jobs.core.run_clock.run_stamp), kept for ``run_stamp``."""
        try:
            stamp = run_clock.format_stamp(run_clock.run_stamp(wall_clock, last))
        except ValueError as error:
            raise _failed(error) from error
        self._memo[(get_invocation_id(), RUN_STAMP_KEY)] = stamp
        return stamp

    @available
    def run_stamp(self) -> str | None:
        """The stamp ``start_run_clock`` set for this invocation, or None (a run-operation, a parse)."""
        return self._memo.get((get_invocation_id(), RUN_STAMP_KEY))

    @available
    def backfill_window(self, start: Any, end: Any, reason: Any, mode: Any) -> dict[str, str] | None:
        """python_jobs.core.run_vars.backfill_window: the backfill vars' window, or None; fails naming the bad var."""
        try:
            window = run_vars.backfill_window(start, end, reason, mode)
        except run_vars.RunVarsError as error:
            raise _failed(error) from error
        return window.as_macro_value() if window else None

    @available
    def backfill_mode(self, mode: Any) -> str:
        """python_jobs.core.run_vars.backfill_mode: backfill or replay; fails naming the value otherwise."""
        try:
            return run_vars.backfill_mode(mode)
        except run_vars.RunVarsError as error:
            raise _failed(error) from error

    @available
    def as_of_problem(self, text: Any, format_only: bool = False) -> str | None:
        """python_jobs.core.run_vars.as_of_problem (or, with ``format_only``, as_of_format_problem)."""
        check = run_vars.as_of_format_problem if format_only else run_vars.as_of_problem
        return check(str(text))

    @available
    def status_epoch(self, as_of: Any, boundary_hours: Any) -> str:
        """python_jobs.core.status_clock.status_epoch, as ISO text."""
        try:
            return status_clock.status_epoch(as_of, list(boundary_hours)).isoformat()
        except ValueError as error:
            raise _failed(error) from error

    @available
    def project_fingerprint(self) -> str:
        """A hash of what every model's output depends on besides its own file and its
        inputs: the project's and the command line's vars, and the macros'
        source, the project's and this adapter's (its materializations and the
        SQL they write).

        A model skipped because its inputs did not move (``inputs_fingerprint``)
        is built again once any of these changes. The ``as_of`` var is left
        out: a run without it reads the clock, and each fingerprint takes it
        as its node needs (``inputs_fingerprint`` with as_of, a restated
        model's status epoch, a view's rendered SQL), so a build given the
        time skips what a build reading the clock skips. Computed once per
        invocation.
        """
        key = (get_invocation_id(), "project_fingerprint")
        if key not in self._memo:
            digest = hashlib.sha256()
            cli_vars = {name: value for name, value in self.config.cli_vars.items() if name != "as_of"}
            project_vars = {"project": self.config.vars.to_dict(), "cli": cli_vars}
            digest.update(json.dumps(project_vars, sort_keys=True, default=str).encode())
            root = Path(self.config.project_root)
            folders = [(root, root / folder) for folder in self.config.macro_paths]
            folders.append((ADAPTER_MACROS.parent, ADAPTER_MACROS))
            for base, folder in folders:
                for path in sorted(folder.rglob("*.sql")):
                    digest.update(str(path.relative_to(base)).encode())
                    digest.update(path.read_bytes())
            self._memo[key] = digest.hexdigest()
        return self._memo[key]
