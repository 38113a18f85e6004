"""A shared Hive metastore on PostgreSQL, so several Spark processes use one catalog at once.

    python -m python_jobs.operations.metastore start  [--port N] [--timeout S]
    python -m python_jobs.operations.metastore status
    python -m python_jobs.operations.metastore stop
    python -m python_jobs.operations.metastore fetch

``start`` brings up, in the state dir (``LATECOMER_STATE_DIR``, see
:mod:`python_jobs.core.spark_config`):

1. a PostgreSQL cluster of its own in ``<state dir>/postgres`` (initialised
   once, listening on 127.0.0.1 only, no Unix socket, password authentication),
   with a database ``metastore``; Hive's schema tool creates the metastore's
   tables in it once;
2. the Hive 3.1 metastore service on 127.0.0.1 (``LATECOMER_METASTORE_PORT``,
   or 9083 when free, or a free port), whose warehouse is the sessions'
   (:func:`python_jobs.core.spark_config.warehouse_location`);

waits until the service answers a catalog call, and prints the
``LATECOMER_METASTORE_URI`` that makes every session, the Thrift server and
dbt's session targets use it. ``stop`` stops the service, then PostgreSQL.
Both are idempotent: ``start`` when it runs says so, ``stop`` when nothing
runs too; a pid file whose process is gone is removed.

The service's class path (Hive's standalone metastore 3.1.3, Hadoop's shaded
client 3.3.4, PostgreSQL's JDBC driver 42.7.4) is resolved by Maven from
``jvm/metastore/pom.xml`` into ``jvm/build/metastore`` (git-ignored) by
``fetch``; every file is checked against its sha256 in
``jvm/metastore/jars.sha256`` before the service starts.

The password of the database's role (``latecomer``) comes from
``LATECOMER_METASTORE_DB_PASSWORD``; without it, one is generated when the
cluster is initialised and kept in ``<state dir>/metastore/db.password``
(mode 0600). The service reads it from its configuration file,
``<state dir>/metastore/conf/metastore-site.xml`` (0600, written at every
start), never from its command line.

PostgreSQL refuses to run as root. Run as root, its programs (initdb, pg_ctl
and the server) start in a user namespace (``unshare --user``) where this
process's user is mapped to an unprivileged one: the cluster's files stay
root's, inside the owner-only state dir, which no other account could reach.

Environment variables (all optional):

``LATECOMER_METASTORE_PORT``
    The service's port (default 9083, or a free one when 9083 is taken).
``LATECOMER_METASTORE_DB_PASSWORD``
    The database password (see above).
``LATECOMER_METASTORE_DB_URL``, ``LATECOMER_METASTORE_DB_USER``
    An existing PostgreSQL database (``jdbc:postgresql://host:5432/metastore``)
    instead of the local cluster; the user defaults to ``latecomer`` and the
    password must be given. The schema tool creates the tables if there are none.
``LATECOMER_POSTGRES_BIN``
    The folder of PostgreSQL's server programs (default: Debian's
    ``/usr/lib/postgresql/<version>/bin``, the cluster's version first).
``LATECOMER_POSTGRES_PORT``
    The local cluster's port, chosen when it is initialised (default: a free one).
``LATECOMER_METASTORE_HOME``
    The service's files (``lib/``, ``classes/``, ``scripts/``; default
    ``jvm/build/metastore``).
``LATECOMER_METASTORE_MEMORY``
    The service's Java heap (default ``512m``).

The parts are modules of their own: :mod:`python_jobs.operations.metastore_state`
(the state dir's files and what the parts share),
:mod:`python_jobs.operations.metastore_class_path` (the service's pinned class
path and ``fetch``) and :mod:`python_jobs.operations.metastore_postgres` (the
database). This module runs the service and is the command line.
"""

from __future__ import annotations

import argparse
import os
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO
from xml.sax.saxutils import escape

from python_jobs.core.processes import log_tail, process_alive, runs, terminate
from python_jobs.core.spark_config import local_folder, private_dir, state_dir, warehouse_location
from python_jobs.operations.metastore_class_path import class_path, fetch, verified_home
from python_jobs.operations.metastore_postgres import Cluster, external_database
from python_jobs.operations.metastore_state import (
    HOST,
    PROG,
    Database,
    Files,
    MetastoreError,
    Running,
    exclusive,
    free_port,
    say,
    write_private,
)
from python_jobs.operations.thrift_server import java_executable, port_in_use

DEFAULT_PORT = 9083
DEFAULT_TIMEOUT_S = 120.0
MAIN_CLASS = "latecomer.metastore.MetastoreService"
SCHEMA_TOOL = "org.apache.hadoop.hive.metastore.tools.MetastoreSchemaTool"
# The service's settings besides the connection and the warehouse.
SERVICE_SETTINGS = {
    # The standalone metastore has no Hive query engine to evaluate partition
    # filters with (the default proxy lives in hive-exec); Spark sends filters
    # as strings, which the metastore evaluates itself.
    "metastore.expression.proxy": "org.apache.hadoop.hive.metastore.DefaultPartitionExpressionProxy",
    # The distribution's default: the other tasks' classes live in hive-exec.
    "metastore.task.threads.always": "org.apache.hadoop.hive.metastore.events.EventCleanerTask",
    # Iceberg's schema is the table's; the metastore's copy of it only mirrors
    # it, and a type change must not fail the commit (as for the embedded
    # metastore in spark_config).
    "metastore.disallow.incompatible.col.type.changes": "false",
    # A lock whose holder stopped heartbeating (a process killed during an
    # Iceberg commit) is released after a minute, by the reaper the service
    # runs every 15 s (MetastoreService), not after Hive's five; sessions
    # heartbeat every 20 s (spark_config).
    "metastore.txn.timeout": "60s",
    "metastore.timedout.txn.reaper.interval": "15s",
    "datanucleus.autoStartMechanismMode": "ignored",
}


# ------------------------------------------------------------ the service


def site_xml(database: Database, warehouse: str) -> str:
    settings = {
        "javax.jdo.option.ConnectionURL": database.url,
        "javax.jdo.option.ConnectionDriverName": "org.postgresql.Driver",
        "javax.jdo.option.ConnectionUserName": database.user,
        "javax.jdo.option.ConnectionPassword": database.password,
        "metastore.warehouse.dir": warehouse,
        **SERVICE_SETTINGS,
    }
    properties = "".join(
        f"  <property><name>{escape(name)}</name><value>{escape(value)}</value></property>\n"
        for name, value in settings.items()
    )
    return (
        '<?xml version="1.0"?>\n<!-- Written by python_jobs/operations/metastore.py at every start. -->\n'
        f"<configuration>\n{properties}</configuration>\n"
    )


def java_command(home: Path, files: Files, main_class: str, *args: str) -> list[str]:
    memory = os.environ.get("LATECOMER_METASTORE_MEMORY", "512m")
    return [
        java_executable(),
        f"-Xmx{memory}",
        # Log4j's default configuration (the console, here the log file), warnings up.
        "-Dorg.apache.logging.log4j.level=WARN",
        "-cp",
        class_path(home, files.conf_dir),
        main_class,
        *args,
    ]


def schema_tool(home: Path, files: Files, action: str) -> subprocess.CompletedProcess[str]:
    command = java_command(home, files, SCHEMA_TOOL, action, "-dbType", "postgres")
    env = {**os.environ, "METASTORE_HOME": str(home)}
    return subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env)


def ensure_schema(home: Path, files: Files, out: TextIO) -> None:
    """Hive's tables in the database: created by the schema tool when there are none."""
    info = schema_tool(home, files, "-info")
    if info.returncode == 0 and "Metastore schema version" in info.stdout:
        return
    started = time.monotonic()
    result = schema_tool(home, files, "-initSchema")
    files.schema_log.write_text(result.stdout + result.stderr)
    if result.returncode != 0:
        raise MetastoreError(
            f"Hive's schema tool could not create the metastore's tables (exit {result.returncode}); "
            f"see {files.schema_log}; last lines:\n{log_tail(files.schema_log)}"
        )
    say(out, f"metastore: Hive metastore schema created in {time.monotonic() - started:.1f}s")


def read_pid_file(files: Files) -> Running | None:
    """The running service recorded in the pid file, or None (a stale file is removed)."""
    try:
        pid, port = (int(field) for field in files.pid_file.read_text().split()[:2])
    except FileNotFoundError:
        return None
    except ValueError:
        files.pid_file.unlink(missing_ok=True)
        return None
    if process_alive(pid) and runs(pid, MAIN_CLASS):
        return Running(pid, port)
    files.pid_file.unlink(missing_ok=True)
    return None


def thrift_string(text: str) -> bytes:
    data = text.encode()
    return struct.pack(">i", len(data)) + data


def answers(port: int, timeout_s: float = 5.0) -> bool:
    """Whether the service on ``port`` answers ``get_all_databases`` with a list.

    One Thrift call in the binary protocol, written by hand: a call message
    (version 1, type CALL) with no arguments; the reply's first field is the
    result (id 0) or a MetaException (id 1, when the database is unreachable).
    """
    call = struct.pack(">I", 0x80010001) + thrift_string("get_all_databases") + struct.pack(">i", 1) + b"\x00"
    try:
        with socket.create_connection((HOST, port), timeout=timeout_s) as sock:
            sock.sendall(call)
            reply = b""
            while len(reply) < 8:
                chunk = sock.recv(4096)
                if not chunk:
                    return False
                reply += chunk
            (header, name_length) = struct.unpack(">Ii", reply[:8])
            needed = 8 + name_length + 4 + 3
            while len(reply) < needed:
                chunk = sock.recv(4096)
                if not chunk:
                    return False
                reply += chunk
    except OSError:
        return False
    field_id = struct.unpack(">h", reply[needed - 2 : needed])[0]
    return header == 0x80010002 and field_id == 0


def service_port(requested: int | None) -> int:
    """The port asked for (it must be free), or 9083 when free, or a free one."""
    raw = os.environ.get("LATECOMER_METASTORE_PORT")
    if requested is None and raw:
        try:
            requested = int(raw)
        except ValueError:
            raise MetastoreError(f"LATECOMER_METASTORE_PORT={raw!r} is not a port number") from None
    if requested is not None:
        if not 0 < requested < 65536:
            raise MetastoreError(f"Port {requested} is not a TCP port (1-65535)")
        if port_in_use(requested):
            raise MetastoreError(
                f"Port {requested} on {HOST} is taken by another process; free it or choose another "
                "with --port N (or LATECOMER_METASTORE_PORT)"
            )
        return requested
    return free_port() if port_in_use(DEFAULT_PORT) else DEFAULT_PORT


def launch(home: Path, files: Files, port: int, out: TextIO, timeout_s: float) -> Running:
    command = java_command(home, files, MAIN_CLASS, HOST, str(port))
    started = time.monotonic()
    with files.log_file.open("ab") as log:
        log.write(f"\n==== {time.strftime('%Y-%m-%d %H:%M:%S')} {MAIN_CLASS} {HOST} {port}\n".encode())
        log.flush()
        process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    files.pid_file.write_text(f"{process.pid}\n{port}\n")
    try:
        while not answers(port):
            if process.poll() is not None:
                raise MetastoreError(
                    f"The metastore service died during startup (exit {process.returncode}); see "
                    f"{files.log_file}; last lines:\n{log_tail(files.log_file)}"
                )
            if time.monotonic() - started > timeout_s:
                raise MetastoreError(
                    f"The metastore service did not answer within {timeout_s:.0f}s; stopped it. "
                    f"See {files.log_file} or retry with --timeout"
                )
            time.sleep(0.5)
    except BaseException:
        terminate(process.pid, timeout_s=10)
        process.wait()
        files.pid_file.unlink(missing_ok=True)
        raise
    elapsed = time.monotonic() - started
    say(out, f"metastore: Hive metastore answering on {HOST}:{port} (pid {process.pid}) after {elapsed:.1f}s")
    return Running(process.pid, port)


# ------------------------------------------------------------ commands


def start(out: TextIO, port: int | None = None, timeout_s: float = DEFAULT_TIMEOUT_S) -> Running:
    files = Files(state_dir())
    with exclusive(files):
        home = verified_home()
        java_executable()
        database = external_database() or Cluster(files).ensure(out, timeout_s)
        running = read_pid_file(files)
        if running is not None:
            say(out, f"metastore: already running (pid {running.pid}, {running.uri}, state dir {files.state})")
        else:
            warehouse = warehouse_location()
            folder = local_folder(warehouse)
            if folder is not None:
                private_dir(folder)
            private_dir(files.conf_dir)
            write_private(files.site_file, site_xml(database, warehouse))
            ensure_schema(home, files, out)
            running = launch(home, files, service_port(port), out, timeout_s)
        say(out, f"LATECOMER_METASTORE_URI={running.uri}")
        return running


def stop(out: TextIO) -> None:
    files = Files(state_dir())
    with exclusive(files):
        running = read_pid_file(files)
        if running is None:
            say(out, f"metastore: the service is not running (state dir {files.state})")
        else:
            terminate(running.pid)
            files.pid_file.unlink(missing_ok=True)
            say(out, f"metastore: Hive metastore stopped (pid {running.pid})")
        if not os.environ.get("LATECOMER_METASTORE_DB_URL") and not Cluster(files).stop(out):
            say(out, f"metastore: PostgreSQL is not running ({files.data_dir})")


def status(out: TextIO) -> bool:
    files = Files(state_dir())
    running = read_pid_file(files)
    if running is None:
        say(out, f"metastore: the service is not running (state dir {files.state}); log: {files.log_file}")
    else:
        answering = "answering" if answers(running.port) else "NOT answering"
        say(out, f"metastore: Hive metastore running: pid {running.pid}, {running.uri} ({answering})")
    external = os.environ.get("LATECOMER_METASTORE_DB_URL")
    if external:
        say(out, f"metastore: database {external} (not managed here)")
    else:
        cluster = Cluster(files)
        pid = cluster.running_pid() if cluster.initialised() else None
        if pid is None:
            say(out, f"metastore: PostgreSQL is not running ({files.data_dir})")
        else:
            say(out, f"metastore: PostgreSQL running: pid {pid}, {HOST}:{cluster.port()}, data {files.data_dir}")
    if running is not None:
        say(out, f"LATECOMER_METASTORE_URI={running.uri}")
    return running is not None


def build_parser() -> argparse.ArgumentParser:
    assert __doc__ is not None
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=["start", "status", "stop", "fetch"])
    parser.add_argument(
        "--port", type=int, help="the service's port (default: LATECOMER_METASTORE_PORT, 9083 when free, or a free one)"
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT_S,
        help=f"seconds `start` waits for PostgreSQL and for the service (default {DEFAULT_TIMEOUT_S:.0f})",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.action == "start":
            start(sys.stdout, args.port, args.timeout)
        elif args.action == "stop":
            stop(sys.stdout)
        elif args.action == "fetch":
            fetch(sys.stdout)
        else:
            return 0 if status(sys.stdout) else 3
    except MetastoreError as exc:
        print(f"metastore: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("metastore: interrupted", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
