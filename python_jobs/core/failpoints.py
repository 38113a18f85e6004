"""Named points where a process can be made to die, for fault-injection tests.

``LATECOMER_FAILPOINT=<name>`` makes the process SIGKILL its own process
group when it reaches the point of that name, at once, as a power cut or an
out-of-memory kill would: nothing is flushed, closed or rolled back, and the
JVM dies with it. Run such a process in its own process group
(``start_new_session``), as tests/pytest/faults.py does. Unset (always, in
normal use), a failpoint does nothing.

Points:

``ingest:after_rows``
    The ingest's bronze rows are committed, its log row is not.
``stream:after_rows``
    A stream's micro-batch: its bronze rows are committed, its log row is not.
``stream:after_batch``
    A stream's micro-batch is landed (rows and log row), its checkpoint does
    not record it yet: the restarted stream runs the batch again.
"""

from __future__ import annotations

import os
import signal

INGEST_AFTER_ROWS = "ingest:after_rows"
STREAM_AFTER_ROWS = "stream:after_rows"
STREAM_AFTER_BATCH = "stream:after_batch"


def failpoint(name: str) -> None:
    """Die here if ``LATECOMER_FAILPOINT`` names this point."""
    if os.environ.get("LATECOMER_FAILPOINT") == name:
        os.killpg(os.getpgid(0), signal.SIGKILL)
