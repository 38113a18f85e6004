"""The background processes latecomer starts and stops: is one alive, is it
still ours, what did it log, and stopping it.

The Thrift server, the metastore service, the Kafka broker and the warm
driver each run in a process group of their own (``start_new_session``) and
record their pid in the state dir. A pid outlives its process and may be
given to another one, so a recorded pid counts only while the process is
alive and its command line still names what was started (:func:`runs`).
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

STOP_TIMEOUT_S = 30.0
# Lines of a log quoted in an error.
LOG_TAIL_LINES = 20


def process_alive(pid: int) -> bool:
    """True while ``pid`` is a live (non-zombie) process."""
    try:
        # Reap it if it is our own child (start and stop in one Python process).
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done == pid:
            return False
    except ChildProcessError:
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    stat = Path(f"/proc/{pid}/stat")
    try:
        # The state letter follows the parenthesised command name.
        return stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def runs(pid: int, mark: str) -> bool:
    """Guard against a recycled pid: the command line of ``pid`` names
    ``mark`` (a JVM's main class, a Python module run with ``-m``)."""
    if not Path("/proc/self").exists():
        return True  # no /proc (macOS): trust the pid file
    try:
        return mark.encode() in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def read_log(path: Path, offset: int = 0) -> str:
    """The log written since ``offset`` (this start's part)."""
    try:
        with path.open("rb") as handle:
            handle.seek(offset)
            return handle.read().decode(errors="replace")
    except OSError:
        return ""


def log_tail(path: Path, offset: int = 0, lines: int = LOG_TAIL_LINES) -> str:
    """The last ``lines`` lines written to ``path`` since ``offset``."""
    return "\n".join(read_log(path, offset).splitlines()[-lines:])


def terminate(pid: int, timeout_s: float = STOP_TIMEOUT_S, leader_first: bool = False) -> None:
    """Stop the process group that ``pid`` leads: SIGTERM, then SIGKILL if it lingers.

    ``leader_first``: the SIGTERM goes to ``pid`` alone, a process that stops
    its own children when asked (the warm driver stops its JVM); the SIGKILL
    still goes to the whole group.
    """
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            if leader_first and sig == signal.SIGTERM:
                os.kill(pid, sig)
            else:
                os.killpg(pid, sig)
        except ProcessLookupError:
            return
        except PermissionError:
            os.kill(pid, sig)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if not process_alive(pid):
                return
            time.sleep(0.2)
