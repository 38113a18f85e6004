"""Start, check and stop the warm driver that commands on a state dir attach to.

    python -m python_jobs.operations.warm_driver start  [--table-format F] [--timeout S]
    python -m python_jobs.operations.warm_driver status
    python -m python_jobs.operations.warm_driver stop

The driver is a Python process holding one Spark driver JVM with the
settings a command on the state dir starts with (:func:`spark_conf`, the
``job`` JVM profile: it lives long enough for the optimising compiler to
repay). ``start`` runs it in the background (``serve`` runs it in the
foreground), waits until its metastore answers and its JVM has warmed up
(:func:`warm_up`), and prints its pid. While it runs, ``dbt build`` and
the other commands on the same ``LATECOMER_STATE_DIR`` run in sessions of
their own in its JVM (:mod:`python_jobs.core.warm_driver`), one at a time,
and skip the new JVM's start and first pass. Its log is ``warm_driver.log``
in the state dir.

The driver holds the embedded metastore while it runs, as a Thrift server
does: a command whose settings differ (another table format, a connector)
cannot start a JVM of its own on that state dir until ``stop``.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import os
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, TextIO

from pyspark import SparkContext
from pyspark.sql import SparkSession

from python_jobs.core import warm_driver
from python_jobs.core.processes import STOP_TIMEOUT_S, log_tail, read_log, terminate
from python_jobs.core.spark_config import REPO_ROOT, TABLE_FORMATS, get_spark, private_dir, spark_conf, state_dir
from python_jobs.operations.warm_up import statements as warm_up_statements

PROG = "python -m python_jobs.operations.warm_driver"
LOG_FILE = "warm_driver.log"
# What the driver logs once it serves, its warm-up over (start waits for it).
READY = "warm driver ready: pid {pid}"
DEFAULT_TIMEOUT_S = 180.0
# The driver checks its JVM this often, and leaves when it is gone.
CHECK_EVERY_S = 2.0
# Commands a JVM serves before the driver replaces it (serve).
RECYCLE_ENV = "LATECOMER_WARM_DRIVER_COMMANDS"
RECYCLE_AFTER = 50
# The warm-up after each JVM start (warm_up): its rounds; 0 skips it. On the
# sample, the first build after a start took 27.0 to 28.1 s without one,
# 20.4 and 21.8 s after one round (15 s), 17.6 to 19.2 s after three (22 to
# 26 s); docs/warm-driver.md.
WARM_UP_ENV = "LATECOMER_WARM_DRIVER_WARM_UP"
WARM_UP_ROUNDS = 3


def open_driver(table_format: str, state: Path) -> tuple[SparkSession, warm_driver.Handle]:
    """Start a driver JVM and record it in the state dir."""
    conf = spark_conf(table_format, jvm_profile="job")
    spark = get_spark(table_format, jvm_profile="job", attach=False)
    # Boot the metastore now, so a state dir held by another process fails the start.
    spark.sql("show databases").collect()
    gateway = spark.sparkContext._gateway
    handle = warm_driver.Handle(
        pid=os.getpid(),
        port=gateway.java_parameters.port,
        token=gateway.java_parameters.auth_token,
        table_format=table_format,
        settings=warm_driver.settings_digest(conf),
        started_at=datetime.now(UTC).isoformat(timespec="seconds"),
    )
    warm_driver.write_handle(state, handle)
    return spark, handle


def close_driver(spark: SparkSession, state: Path, handle: warm_driver.Handle, forget: bool = True) -> None:
    """Stop the driver's context and end its JVM, so the next one starts afresh.

    With ``forget``, its record goes first. Without (a new JVM follows), the
    record stays: a command that reads it meanwhile waits for its turn, then
    reads the new one.
    """
    if forget and warm_driver.read_handle(state) == handle:
        warm_driver.handle_path(state).unlink(missing_ok=True)
    gateway = spark.sparkContext._gateway
    if gateway.proc.poll() is None:
        spark.stop()
        gateway.proc.terminate()
        gateway.proc.wait(timeout=STOP_TIMEOUT_S)
    with contextlib.suppress(Exception):
        gateway.close()
    # PySpark launches a JVM only while it holds none.
    SparkContext._gateway = SparkContext._jvm = None
    SparkSession._instantiatedSession = SparkSession._activeSession = None


def warm_up_rounds() -> int:
    """The warm-up's rounds: ``LATECOMER_WARM_DRIVER_WARM_UP``, else :data:`WARM_UP_ROUNDS`."""
    value = os.environ.get(WARM_UP_ENV, "").strip()
    if not value:
        return WARM_UP_ROUNDS
    if not value.isdigit():
        raise SystemExit(f"{WARM_UP_ENV}={value!r}: give the warm-up's rounds, a whole number (0: none)")
    return int(value)


def warm_up(spark: SparkSession, table_format: str, rounds: int) -> float:
    """Run the warm-up's rounds (:mod:`python_jobs.operations.warm_up`); the seconds they took.

    It moves about 9 s of the first build after a start to the start itself.
    """
    started = time.monotonic()
    for _ in range(rounds):
        for statement in warm_up_statements(table_format):
            spark.sql(statement).collect()
    return time.monotonic() - started


def open_warm(table_format: str, state: Path) -> tuple[SparkSession, warm_driver.Handle]:
    """:func:`open_driver`, then its warm-up (``LATECOMER_WARM_DRIVER_WARM_UP`` rounds).

    The caller holds the commands' lock: a command that attaches meanwhile
    waits for the warm-up to end.
    """
    rounds = warm_up_rounds()
    spark, handle = open_driver(table_format, state)
    if rounds == 0:
        return spark, handle
    try:
        print(f"warm driver: warmed up in {warm_up(spark, table_format, rounds):.1f} s", flush=True)
    except Exception as error:  # noqa: BLE001 - the warm-up is an optimisation; the driver serves without it
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        print(f"warm driver: the warm-up failed, commands start on a cold JVM: {first_line}", flush=True)
    return spark, handle


def turns_served(state: Path) -> int:
    """Commands that took a turn since the driver's JVM started (one line each in the lock file)."""
    try:
        return len((state / warm_driver.LOCK_FILE).read_bytes().splitlines())
    except FileNotFoundError:
        return 0


def idle_turn(state: Path) -> IO[str] | None:
    """The lock file, locked, when no command holds it; None while one does."""
    lock = (state / warm_driver.LOCK_FILE).open("a")
    if warm_driver.has_turn(lock):
        return lock
    lock.close()
    return None


def serve(table_format: str) -> int:
    """Hold a driver until SIGTERM (or its JVM ends); record it in the state dir meanwhile.

    After ``LATECOMER_WARM_DRIVER_COMMANDS`` commands (:data:`RECYCLE_AFTER`),
    once none is running, the JVM is replaced by a new one: each attached
    command leaves a few threads and its session behind in it
    (docs/warm-driver.md), and a new JVM starts with none.
    """
    state = private_dir(state_dir())
    limit = int(os.environ.get(RECYCLE_ENV) or RECYCLE_AFTER)
    stopping: list[bool] = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    (state / warm_driver.LOCK_FILE).write_bytes(b"")
    with (state / warm_driver.LOCK_FILE).open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        spark, handle = open_warm(table_format, state)
    print(READY.format(pid=handle.pid) + f", {table_format}, state dir {state}", flush=True)
    try:
        while not stopping and spark.sparkContext._gateway.proc.poll() is None:
            time.sleep(CHECK_EVERY_S)
            served = turns_served(state)
            lock = idle_turn(state) if served >= limit else None
            if lock is None:
                continue
            with lock:
                # Commands that wait meanwhile read the new record once they have their turn.
                close_driver(spark, state, handle, forget=False)
                lock.truncate(0)
                spark, handle = open_warm(table_format, state)
            print(f"warm driver: a new JVM after {served} commands", flush=True)
    except BaseException:
        # No record may outlive the driver, and a JVM that failed to start must not keep this process alive.
        if warm_driver.read_handle(state) == handle:
            warm_driver.handle_path(state).unlink(missing_ok=True)
        traceback.print_exc()
        gateway = SparkContext._gateway
        if gateway is not None and gateway.proc.poll() is None:
            gateway.proc.kill()
        sys.stdout.flush()
        os._exit(1)
    ended = spark.sparkContext._gateway.proc.poll()
    close_driver(spark, state, handle)
    if ended is not None:
        print(f"the driver JVM ended (exit status {ended})", flush=True)
        return 1
    print("warm driver stopped", flush=True)
    return 0


def start(table_format: str, timeout_s: float, out: TextIO) -> int:
    state = private_dir(state_dir())
    running = warm_driver.read_handle(state)
    if running is not None:
        print(f"warm driver already running: pid {running.pid}, {running.table_format}", file=out)
        return 0 if running.table_format == table_format else 1
    log_path = state / LOG_FILE
    offset = log_path.stat().st_size if log_path.exists() else 0
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))}
    with log_path.open("a") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "python_jobs.operations.warm_driver", "serve", "--table-format", table_format],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            cwd=REPO_ROOT,
            env=env,
            start_new_session=True,
        )
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        handle = warm_driver.read_handle(state)
        # Recorded, and its warm-up over: the driver logs that it is ready only then.
        recorded = handle is not None and handle.pid == process.pid
        if recorded and READY.format(pid=process.pid) in read_log(log_path, offset):
            print(READY.format(pid=process.pid) + f", {table_format}, state dir {state}", file=out)
            return 0
        if process.poll() is not None:
            print(
                f"the warm driver ended during start-up (exit status {process.returncode}); see {log_path}:\n"
                + log_tail(log_path, offset),
                file=out,
            )
            return 1
        time.sleep(0.5)
    terminate(process.pid, leader_first=True)
    print(f"the warm driver was not ready after {timeout_s:.0f} s; see {log_path}", file=out)
    return 1


def stop(out: TextIO) -> int:
    state = state_dir()
    handle = warm_driver.read_handle(state)
    if handle is None:
        print("no warm driver running", file=out)
        return 0
    terminate(handle.pid, leader_first=True)
    warm_driver.handle_path(state).unlink(missing_ok=True)
    print(f"warm driver stopped (pid {handle.pid})", file=out)
    return 0


def status(out: TextIO) -> int:
    handle = warm_driver.read_handle(state_dir())
    if handle is None:
        print("no warm driver running", file=out)
        return 1
    print(f"warm driver running: pid {handle.pid}, {handle.table_format}, since {handle.started_at}", file=out)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    for name in ("start", "serve"):
        command = commands.add_parser(name)
        command.add_argument(
            "--table-format",
            choices=TABLE_FORMATS,
            default=os.environ.get("LATECOMER_TABLE_FORMAT", "iceberg"),
        )
        if name == "start":
            command.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, help="seconds to wait for it")
    commands.add_parser("status")
    commands.add_parser("stop")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "serve":
        return serve(args.table_format)
    if args.command == "start":
        return start(args.table_format, args.timeout, sys.stdout)
    if args.command == "status":
        return status(sys.stdout)
    return stop(sys.stdout)


if __name__ == "__main__":
    sys.exit(main())
