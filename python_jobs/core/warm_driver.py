"""Attach a command to a running warm driver instead of starting a JVM of its own.

A ``dbt build`` from the shell starts a new driver JVM, and a new JVM spends
its first minute loading classes and compiling Spark's planner before the
build's statements run at speed (docs/benchmark.md, "After the 60-day run").
A warm driver (``python -m python_jobs.operations.warm_driver start``) is a
long-lived process holding one Spark driver for a state dir. While it runs,
:func:`python_jobs.core.spark_config.get_spark` in any command on that state
dir (``dbt build``, ``dbt docs generate``, a landing, a steward decision)
connects to it through py4j, the bridge PySpark itself uses, and runs in a
new Spark session of its own there: its own temporary views, current
database and SQL settings, the driver's catalog, metastore and warm code.

The driver records where it listens in ``warm_driver.json`` in the state dir
(owner only, like the folder: it holds the bridge's token, which the JVM
draws at random when it starts and which dies with it). A command attaches
only when the driver's Spark settings equal the ones it would start with,
but for the JVM's options and the code generation mode, which it sets in its
own session; otherwise it says why and starts its own JVM, as it does when no
driver runs.

Commands attached to one driver run one at a time (``warm_driver.lock``, held
for the command's life): on the embedded metastore Iceberg commits without
Hive's locks, which is safe only while one command writes (spark_config).
A command that finds the driver busy says so and waits for it, up to
``LATECOMER_WARM_DRIVER_WAIT_S`` seconds (default 900). Sessions that need a
connector (the streams) start their own JVM: their settings differ.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import functools
import gc
import hashlib
import json
import os
import signal
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from python_jobs.core.processes import process_alive, runs

# Written by the driver; read by the commands that attach.
HANDLE_FILE = "warm_driver.json"
LOCK_FILE = "warm_driver.lock"
WAIT_ENV = "LATECOMER_WARM_DRIVER_WAIT_S"
DEFAULT_WAIT_S = 900.0
# The driver's command line names this module's runner, which tells a live
# driver from a recycled pid.
SERVE_MARK = "python_jobs.operations.warm_driver"
# Settings a command may differ on from the driver: the JVM's options are the
# driver's once it runs, and the code generation mode is set per session.
SESSION_KEYS = ("spark.sql.codegen.wholeStage", "spark.sql.codegen.factoryMode")
IGNORED_KEYS = ("spark.driver.extraJavaOptions", *SESSION_KEYS)
# The packages PySpark's own gateway imports into its JVM view.
JAVA_IMPORTS = (
    "org.apache.spark.SparkConf",
    "org.apache.spark.api.java.*",
    "org.apache.spark.api.python.*",
    "org.apache.spark.ml.python.*",
    "org.apache.spark.mllib.api.python.*",
    "org.apache.spark.resource.*",
    "org.apache.spark.sql.*",
    "org.apache.spark.sql.api.python.*",
    "org.apache.spark.sql.hive.*",
    "scala.Tuple2",
)


class WarmDriverError(RuntimeError):
    """A warm driver that cannot serve this command; the message says why."""


@dataclass(frozen=True)
class Handle:
    """Where a warm driver listens, as ``warm_driver.json`` records it."""

    pid: int
    port: int
    token: str
    table_format: str
    settings: str
    started_at: str

    def as_json(self) -> str:
        return json.dumps(self.__dict__, indent=2) + "\n"


def settings_digest(conf: dict[str, str]) -> str:
    """A digest of the Spark settings a command and a driver must share."""
    shared = sorted((key, value) for key, value in conf.items() if key not in IGNORED_KEYS)
    return hashlib.sha256(json.dumps(shared).encode()).hexdigest()[:16]


def handle_path(state: Path) -> Path:
    return state / HANDLE_FILE


def serves(pid: int) -> bool:
    """True while ``pid`` is a live warm driver (not a recycled pid)."""
    return process_alive(pid) and runs(pid, SERVE_MARK)


def read_handle(state: Path) -> Handle | None:
    """The live driver recorded for ``state``, or None; a file left by a dead one is removed."""
    path = handle_path(state)
    try:
        handle = Handle(**json.loads(path.read_text()))
    except FileNotFoundError:
        return None
    except (ValueError, TypeError):
        return None  # being written, or not ours: start a JVM as usual
    if serves(handle.pid):
        return handle
    path.unlink(missing_ok=True)
    return None


def write_handle(state: Path, handle: Handle) -> None:
    """Write ``warm_driver.json`` owner-only, whole or not at all."""
    path = handle_path(state)
    partial = path.with_name(f".{HANDLE_FILE}.{os.getpid()}")
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as out:
        out.write(handle.as_json())
    partial.replace(path)


def say(message: str) -> None:
    print(f"latecomer: {message}", file=sys.stderr, flush=True)


def has_turn(lock: IO[str]) -> bool:
    """Lock the open lock file without waiting; False while another process holds it."""
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def take_turn(state: Path, handle: Handle) -> IO[str]:
    """Hold the driver's lock for this process's life; wait while another command holds it."""
    lock = (state / LOCK_FILE).open("a")
    if has_turn(lock):
        return lock
    wait_s = float(os.environ.get(WAIT_ENV) or DEFAULT_WAIT_S)
    say(
        f"the warm driver (pid {handle.pid}) is serving another command or warming up; "
        f"waiting up to {wait_s:.0f} s for it"
    )
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        time.sleep(0.5)
        if has_turn(lock):
            return lock
    lock.close()
    raise WarmDriverError(
        f"the warm driver (pid {handle.pid}) served another command for more than {wait_s:.0f} s; "
        f"try again, raise {WAIT_ENV}, or stop it (python -m python_jobs.operations.warm_driver stop)"
    )


def connect(handle: Handle) -> Any:
    """A py4j bridge to the driver's JVM, as PySpark opens one to a JVM it starts."""
    from py4j.clientserver import ClientServer, JavaParameters, PythonParameters
    from py4j.java_gateway import java_import

    gateway = ClientServer(
        java_parameters=JavaParameters(port=handle.port, auth_token=handle.token, auto_convert=True),
        python_parameters=PythonParameters(port=0, eager_load=False),
    )
    for name in JAVA_IMPORTS:
        java_import(gateway.jvm, name)
    return gateway


def open_session(gateway: Any, session_settings: dict[str, str]) -> Any:
    """A new Spark session in the driver's JVM, made this process's session."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    jvm = gateway.jvm
    jsc = jvm.JavaSparkContext.fromSparkContext(jvm.org.apache.spark.SparkContext.getOrCreate())
    # The driver's own session: the JVM's default, put back when this process detaches.
    driver_session = jvm.org.apache.spark.sql.SparkSession.builder().getOrCreate()
    handler = signal.getsignal(signal.SIGINT) if threading.current_thread() is threading.main_thread() else None
    context = SparkContext(gateway=gateway, jsc=jsc)
    if handler is not None:
        # PySpark cancels every job of the context on Ctrl-C: here the context
        # is the driver's, and its other jobs are not this command's.
        signal.signal(signal.SIGINT, handler)
    session = SparkSession(context, driver_session.newSession())
    for key, value in session_settings.items():
        session.conf.set(key, value)
    leave = functools.partial(detach, gateway, driver_session)
    # Stopping this session must leave the driver running for the next command.
    session.stop = context.stop = leave
    atexit.register(leave)
    return session


def detach(gateway: Any, driver_session: Any) -> None:
    """Release every JVM object this process still holds, then close the bridge.

    py4j keeps each object it handed to a client until the client lets it go,
    and a process that ends lets go of none: the driver would keep every
    command's session, its catalog's cached tables included, for good.
    """
    from py4j.java_gateway import JavaObject
    from pyspark import SparkContext

    SparkContext._active_spark_context = None
    client = gateway._gateway_client
    with contextlib.suppress(Exception):  # the driver may be gone already
        gateway.jvm.org.apache.spark.sql.SparkSession.setDefaultSession(driver_session)
        gateway.jvm.org.apache.spark.sql.SparkSession.clearActiveSession()
        gc.collect()
        # Releases py4j queued for its background thread, which the process may end before sending.
        released = [task[1] for task in drain(getattr(client, "finalizer_deque", None)) if isinstance(task, tuple)]
        # Objects the JVM handed out are "o<n>"; the others ("t", "GATEWAY_SERVER") are the bridge's own.
        released += [
            held._target_id
            for held in gc.get_objects()
            if isinstance(held, JavaObject) and held._gateway_client is client and held._target_id.startswith("o")
        ]
        for target_id in released:
            client.garbage_collect_object(target_id, False)
    with contextlib.suppress(Exception):
        gateway.close()


def drain(queue: Any) -> list[Any]:
    """Everything in ``queue`` (a deque), taken out of it."""
    taken = []
    while queue:
        try:
            taken.append(queue.pop())
        except IndexError:
            break
    return taken


def attach(state: Path, table_format: str, conf: dict[str, str], session_settings: dict[str, str]) -> Any | None:
    """A session in the warm driver of ``state``, or None when none runs or it cannot serve ``conf``.

    ``session_settings`` are set in the new session (the code generation mode).
    """
    handle = read_handle(state)
    if handle is None:
        return None
    if handle.settings != settings_digest(conf):
        say(
            f"a warm driver (pid {handle.pid}, {handle.table_format}) runs on {state} with other Spark "
            "settings than this command's; starting a JVM of its own"
        )
        return None
    lock = take_turn(state, handle)
    # Registered first, so it runs last: the process lets go of the driver before the next command may take it.
    atexit.register(lock.close)
    # The driver may have replaced its JVM while this command waited.
    handle = read_handle(state)
    if handle is None:
        lock.close()
        return None
    lock.write(f"{os.getpid()}\n")
    lock.flush()
    started = time.monotonic()
    try:
        gateway = connect(handle)
        session = open_session(gateway, session_settings)
    except Exception as exc:  # noqa: BLE001 - a driver that does not answer: start as usual
        lock.close()
        say(f"the warm driver (pid {handle.pid}) did not answer ({exc.__class__.__name__}); starting a JVM of its own")
        return None
    say(f"attached to the warm driver (pid {handle.pid}, {table_format}) in {time.monotonic() - started:.1f} s")
    return session
