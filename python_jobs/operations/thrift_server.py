"""Start, check and stop a local Spark Thrift Server for the ``thrift`` dbt target.

    python -m python_jobs.operations.thrift_server start  [--port N] [--timeout S] [--table-format F]
                                                          [--host H --auth A]
    python -m python_jobs.operations.thrift_server status [--port N]
    python -m python_jobs.operations.thrift_server stop

The server is the HiveThriftServer2 shipped in the pyspark wheel, launched with
``<pyspark>/bin/spark-submit`` in the background. It gets exactly the settings
of the ``local`` target, from :func:`python_jobs.core.spark_config.spark_conf`:
same catalog, warehouse, metastore and table format. Jars go on the driver
class path (``--jars`` would not reach the server's SQL sessions).

It listens on 127.0.0.1. Any client that reaches the port can read and change
every table, so another address (``--host``) is refused unless HiveServer2
authentication is on (``--auth`` LDAP, KERBEROS, PAM or CUSTOM, with that
mode's settings in ``$SPARK_CONF_DIR/hive-site.xml``; docs/thrift-server.md).
NONE and NOSASL authenticate nobody.

Environment variables: ``LATECOMER_THRIFT_PORT`` (default port, 10000),
``LATECOMER_THRIFT_BIND_HOST`` (default ``--host``), ``LATECOMER_THRIFT_SERVER_AUTH``
(default ``--auth``, NONE), ``LATECOMER_STATE_DIR`` (see
:mod:`python_jobs.core.spark_config`). The pid file (``thrift_server.pid``:
pid, port and host, one a line) and the log file (``thrift_server.log``) live in
the state dir, which is created owner-only (0700), like the server's operation
log and scratch folders in it.

The embedded Derby metastore (the default, when ``LATECOMER_METASTORE_URI`` is
unset) admits a single process: while the server runs, no other Spark process
(``python -m python_jobs.landing.ingest``, ``dbt --target local``, pytest's session)
can use the same state dir, and the server cannot start while one of them holds
it. Land data before ``start`` or after ``stop``, or give each its own
``LATECOMER_STATE_DIR``. With a shared catalog (``LATECOMER_METASTORE_URI``
set for the server and every other process; docs/shared-catalog.md) the
server runs beside builds, landings and steward decisions, and BI readers
query ``<schema>_published``, whose views read one published run in every
table of a query (python_jobs/core/reader_views.py).
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import shlex
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from python_jobs.core.processes import log_tail, process_alive, read_log, runs, terminate
from python_jobs.core.spark_config import SparkConfigError, create_state_dirs, private_dir, spark_conf, state_dir

# Where the server listens unless told otherwise, and where clients reach it.
HOST = "127.0.0.1"
# hive.server2.authentication modes; the first two authenticate nobody.
UNAUTHENTICATED = ("NONE", "NOSASL")
AUTH_MODES = (*UNAUTHENTICATED, "LDAP", "KERBEROS", "PAM", "CUSTOM")
DEFAULT_PORT = 10000
DEFAULT_TIMEOUT_S = 180.0
MAIN_CLASS = "org.apache.spark.sql.hive.thriftserver.HiveThriftServer2"
PID_FILE = "thrift_server.pid"
LOG_FILE = "thrift_server.log"
PROG = "python -m python_jobs.operations.thrift_server"
# The server's folders in the state dir (operation logs, Hive scratch space).
THRIFT_DIRS = ("thrift_operation_logs", "thrift_scratch")


class ThriftServerError(RuntimeError):
    """A problem the user can fix; the message (one line) says how."""


@dataclass(frozen=True)
class ServerFiles:
    state: Path

    @property
    def pid_file(self) -> Path:
        return self.state / PID_FILE

    @property
    def log_file(self) -> Path:
        return self.state / LOG_FILE


@dataclass(frozen=True)
class Running:
    pid: int
    port: int
    host: str = HOST


def default_port() -> int:
    raw = os.environ.get("LATECOMER_THRIFT_PORT", str(DEFAULT_PORT))
    try:
        return int(raw)
    except ValueError:
        raise ThriftServerError(f"LATECOMER_THRIFT_PORT={raw!r} is not a port number") from None


def default_host() -> str:
    return os.environ.get("LATECOMER_THRIFT_BIND_HOST", HOST).strip() or HOST


def default_auth() -> str:
    return (os.environ.get("LATECOMER_THRIFT_SERVER_AUTH", "NONE").strip() or "NONE").upper()


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or a name) is this machine's loopback only."""
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        pass
    if host == "localhost":
        return True
    try:
        addresses = {info[4][0] for info in socket.getaddrinfo(host, None)}
    except OSError:
        return False
    return bool(addresses) and all(ipaddress.ip_address(a.split("%")[0]).is_loopback for a in addresses)


def check_bind(host: str, auth: str) -> None:
    """Refuse a listening address beyond loopback while nobody is authenticated."""
    if auth not in AUTH_MODES:
        raise ThriftServerError(f"--auth {auth!r} is not a HiveServer2 authentication mode ({', '.join(AUTH_MODES)})")
    if auth in UNAUTHENTICATED and not is_loopback(host):
        raise ThriftServerError(
            f"Refusing to listen on {host} with authentication {auth}: anyone who reaches the port could read "
            f"and change every table. Keep the default --host {HOST}, or turn on HiveServer2 authentication "
            "with --auth LDAP|KERBEROS|PAM|CUSTOM (or LATECOMER_THRIFT_SERVER_AUTH) and its settings in "
            "$SPARK_CONF_DIR/hive-site.xml (docs/thrift-server.md)"
        )


def client_host(host: str) -> str:
    """Where this machine reaches a server listening on ``host`` (a wildcard means loopback)."""
    try:
        if ipaddress.ip_address(host.strip("[]")).is_unspecified:
            return HOST
    except ValueError:
        pass
    return host


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def java_executable() -> str:
    """The java that spark-submit will use (JAVA_HOME first, then PATH)."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        java = Path(java_home) / "bin" / "java"
        if os.access(java, os.X_OK):
            return str(java)
        raise ThriftServerError(
            f"Java is missing: JAVA_HOME={java_home} has no bin/java; point JAVA_HOME at a "
            "JDK 17 or unset it (e.g. apt-get install openjdk-17-jdk-headless)"
        )
    java = shutil.which("java")
    if java is None:
        raise ThriftServerError(
            "Java is missing: install a JDK 17 (e.g. apt-get install openjdk-17-jdk-headless) or set JAVA_HOME"
        )
    return java


def submit_command(
    port: int, table_format: str, host: str = HOST, auth: str = "NONE", conf: dict[str, str] | None = None
) -> list[str]:
    """The spark-submit command line of the server, listening on ``host`` with authentication ``auth``.

    ``conf`` is :func:`spark_conf` of ``table_format`` (computed when not given).
    """
    conf = dict(conf or spark_conf(table_format, jvm_profile="server"))
    # The server's sessions load catalog classes from the driver's class path,
    # not from spark.jars; one --driver-class-path holds both (a --conf of
    # spark.driver.extraClassPath after it would replace it).
    jars = [jar for jar in conf.pop("spark.jars", "").split(",") if jar]
    jars += [jar for jar in conf.pop("spark.driver.extraClassPath", "").split(":") if jar]
    command = [str(spark_home() / "bin" / "spark-submit"), "--class", MAIN_CLASS]
    command += ["--name", "latecomer-thrift-server"]
    if jars:
        command += ["--driver-class-path", ":".join(jars)]
    for key, value in conf.items():
        command += ["--conf", f"{key}={value}"]
    state = state_dir()
    hiveconf = {
        "hive.server2.thrift.port": str(port),
        "hive.server2.thrift.bind.host": host,
        "hive.server2.authentication": auth,
        "hive.server2.logging.operation.log.location": str(state / THRIFT_DIRS[0]),
        "hive.exec.local.scratchdir": str(state / THRIFT_DIRS[1]),
    }
    for key, value in hiveconf.items():
        command += ["--hiveconf", f"{key}={value}"]
    return command


def port_in_use(port: int, host: str = HOST) -> bool:
    """True when something listens on host:port (binding it fails)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host.strip("[]"), port))
        except OSError:
            return True
    return False


def port_answers(port: int, timeout_s: float = 1.0, host: str = HOST) -> bool:
    try:
        with socket.create_connection((client_host(host).strip("[]"), port), timeout=timeout_s):
            return True
    except OSError:
        return False


def select_one(port: int, host: str = HOST) -> None:
    """Open a PyHive session and run ``select 1``; raises on failure."""
    from pyhive import hive

    user = os.environ.get("USER", "latecomer")
    connection = hive.connect(host=client_host(host).strip("[]"), port=port, username=user)
    try:
        cursor = connection.cursor()
        cursor.execute("select 1")
        rows = cursor.fetchall()
        if [tuple(row) for row in rows] != [(1,)]:
            raise RuntimeError(f"select 1 returned {rows!r}")
    finally:
        connection.close()


def read_pid_file(files: ServerFiles) -> Running | None:
    """The running server recorded in the pid file, or None (stale files are removed)."""
    try:
        lines = files.pid_file.read_text().split()
        running = Running(pid=int(lines[0]), port=int(lines[1]), host=lines[2] if len(lines) > 2 else HOST)
    except FileNotFoundError:
        return None
    except (ValueError, IndexError):
        files.pid_file.unlink(missing_ok=True)
        return None
    if process_alive(running.pid) and runs(running.pid, MAIN_CLASS):
        return running
    files.pid_file.unlink(missing_ok=True)
    return None


DERBY_LOCKED = "Another instance of Derby may have already booted the database"


def startup_failure(files: ServerFiles, log_offset: int, returncode: int | None) -> str:
    if DERBY_LOCKED in read_log(files.log_file, log_offset):
        cause = (
            f"the Derby metastore in {files.state} is in use by another Spark process "
            "(ingest, dbt --target local, pytest); stop it or use another LATECOMER_STATE_DIR"
        )
    else:
        cause = f"exit code {returncode}"
    tail = log_tail(files.log_file, log_offset)
    return f"Thrift server died during startup ({cause}); see {files.log_file}" + (
        f"; last lines:\n{tail}" if tail else ""
    )


def start(port: int, timeout_s: float, table_format: str, out: TextIO, host: str = HOST, auth: str = "NONE") -> None:
    check_bind(host, auth)
    files = ServerFiles(state_dir())
    running = read_pid_file(files)
    if running is not None:
        raise ThriftServerError(
            f"Thrift server already running (pid {running.pid}, port {running.port}, "
            f"state dir {files.state}); stop it first with `{PROG} stop`"
        )
    if port_in_use(port, host):
        raise ThriftServerError(
            f"Port {port} on {host} is already taken by another process; free it or choose "
            f"another with --port N (or LATECOMER_THRIFT_PORT=N)"
        )
    java_executable()
    try:
        conf = spark_conf(table_format, jvm_profile="server")
        command = submit_command(port, table_format, host, auth, conf)
    except SparkConfigError as exc:
        raise ThriftServerError(str(exc)) from None
    create_state_dirs(conf)
    for folder in THRIFT_DIRS:
        private_dir(files.state / folder)
    env = {**os.environ, "SPARK_HOME": str(spark_home())}
    env.setdefault("SPARK_LOCAL_IP", HOST)
    print(
        f"Starting Spark Thrift Server on {host}:{port} ({table_format}, authentication {auth}, state dir "
        f"{files.state}); log: {files.log_file}",
        file=out,
        flush=True,
    )
    started = time.monotonic()
    with files.log_file.open("ab") as log:
        log_offset = log.tell()
        log.write(f"\n==== {time.strftime('%Y-%m-%d %H:%M:%S')} {shlex.join(command)}\n".encode())
        log.flush()
        process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=files.state,
            env=env,
            start_new_session=True,
        )
    files.pid_file.write_text(f"{process.pid}\n{port}\n{host}\n")
    try:
        wait_until_ready(process, port, started, timeout_s, files, log_offset, out, host, auth)
    except BaseException:
        terminate(process.pid, timeout_s=10)
        process.wait()
        files.pid_file.unlink(missing_ok=True)
        raise
    print(
        f"Thrift server ready on {host}:{port} (pid {process.pid}) after "
        f"{time.monotonic() - started:.1f}s; stop it with `{PROG} stop`",
        file=out,
        flush=True,
    )


def wait_until_ready(
    process: subprocess.Popen[bytes],
    port: int,
    started: float,
    timeout_s: float,
    files: ServerFiles,
    log_offset: int,
    out: TextIO,
    host: str = HOST,
    auth: str = "NONE",
) -> None:
    """Poll until the port answers and ``select 1`` works, the process dies or time runs out.

    With authentication other than NONE there are no credentials to log in
    with, so the port answering is taken as ready.
    """
    next_note = 10.0
    last_error = "port not open yet"
    while True:
        elapsed = time.monotonic() - started
        if process.poll() is not None:
            raise ThriftServerError(startup_failure(files, log_offset, process.returncode))
        if elapsed > timeout_s:
            raise ThriftServerError(
                f"Thrift server did not accept connections within {timeout_s:.0f}s "
                f"({last_error}); stopped it. See {files.log_file} or retry with --timeout"
            )
        if port_answers(port, host=host):
            if auth != "NONE":
                return
            try:
                select_one(port, host)
                return
            except Exception as exc:  # the server is still starting its session
                last_error = f"select 1 failed: {type(exc).__name__}: {exc}".splitlines()[0]
        if elapsed >= next_note:
            print(f"  waiting for the server... {elapsed:.0f}s", file=out, flush=True)
            next_note += 10.0
        time.sleep(1.0)


def stop(out: TextIO) -> None:
    files = ServerFiles(state_dir())
    running = read_pid_file(files)
    if running is None:
        raise ThriftServerError(
            f"Thrift server is not running (no live pid in {files.pid_file}); start it with `{PROG} start`"
        )
    print(f"Stopping Thrift server (pid {running.pid}, port {running.port})...", file=out)
    terminate(running.pid)
    files.pid_file.unlink(missing_ok=True)
    print("Thrift server stopped", file=out)


def status(port: int, out: TextIO) -> bool:
    files = ServerFiles(state_dir())
    running = read_pid_file(files)
    if running is None:
        taken = " (but another process listens on it)" if port_in_use(port, default_host()) else ""
        print(
            f"Thrift server not running (state dir {files.state}, port {port}{taken}); log: {files.log_file}",
            file=out,
        )
        return False
    answering = "answering" if port_answers(running.port, host=running.host) else "NOT answering yet"
    print(
        f"Thrift server running: pid {running.pid}, {running.host}:{running.port} ({answering}), log: {files.log_file}",
        file=out,
    )
    return True


def build_parser() -> argparse.ArgumentParser:
    assert __doc__ is not None
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=["start", "status", "stop"])
    parser.add_argument("--port", type=int, help="port (default: LATECOMER_THRIFT_PORT or 10000)")
    parser.add_argument(
        "--host",
        help=f"address to listen on (default: LATECOMER_THRIFT_BIND_HOST or {HOST}); "
        "beyond loopback only with --auth other than NONE",
    )
    parser.add_argument(
        "--auth",
        type=str.upper,
        help="hive.server2.authentication: NONE (default, or LATECOMER_THRIFT_SERVER_AUTH), NOSASL, LDAP, "
        "KERBEROS, PAM or CUSTOM; the mode's settings go in $SPARK_CONF_DIR/hive-site.xml",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT_S,
        help=f"seconds `start` waits for the server (default {DEFAULT_TIMEOUT_S:.0f})",
    )
    parser.add_argument(
        "--table-format",
        choices=["iceberg", "delta"],
        default=os.environ.get("LATECOMER_TABLE_FORMAT", "iceberg"),
        help="table format of the server's catalog (default: iceberg, as the thrift target)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        port = args.port if args.port is not None else default_port()
        if not 0 < port < 65536:
            raise ThriftServerError(f"--port {port} is not a TCP port (1-65535)")
        if args.action == "start":
            host = args.host.strip() if args.host else default_host()
            auth = args.auth.strip() if args.auth else default_auth()
            start(port, args.timeout, args.table_format, sys.stdout, host, auth)
        elif args.action == "stop":
            stop(sys.stdout)
        else:
            return 0 if status(port, sys.stdout) else 3
    except ThriftServerError as exc:
        print(f"thrift_server: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("thrift_server: interrupted", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
