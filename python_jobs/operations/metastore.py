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
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import os
import pwd
import re
import secrets
import shutil
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO
from xml.sax.saxutils import escape

from python_jobs.core.spark_config import REPO_ROOT, local_folder, private_dir, state_dir, warehouse_location
from python_jobs.operations.thrift_server import java_executable, port_in_use, process_alive, runs_class, terminate

HOST = "127.0.0.1"
DEFAULT_PORT = 9083
DEFAULT_TIMEOUT_S = 120.0
PROG = "python -m python_jobs.operations.metastore"
DB_NAME = "metastore"
DB_USER = "latecomer"
MAIN_CLASS = "latecomer.metastore.MetastoreService"
SCHEMA_TOOL = "org.apache.hadoop.hive.metastore.tools.MetastoreSchemaTool"
POM = REPO_ROOT / "jvm" / "metastore" / "pom.xml"
# Every file of the service's class path and the schema tool's scripts, with
# its sha256 (`sha256sum -c` reads it too, from the metastore home).
PINS = REPO_ROOT / "jvm" / "metastore" / "jars.sha256"
DEFAULT_HOME = REPO_ROOT / "jvm" / "build" / "metastore"
MAIN_CLASS_FILE = Path("classes") / "latecomer" / "metastore" / "MetastoreService.class"
SOURCE = REPO_ROOT / "jvm" / "metastore" / "src" / "main" / "java" / "latecomer" / "metastore" / "MetastoreService.java"
FETCH_COMMAND = f"{PROG} fetch"
LOG_TAIL_LINES = 20
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


class MetastoreError(RuntimeError):
    """A problem the user can fix; the message says how."""


@dataclass(frozen=True)
class Files:
    """Where the service and the local cluster keep their state."""

    state: Path

    @property
    def folder(self) -> Path:
        return self.state / "metastore"

    @property
    def conf_dir(self) -> Path:
        return self.folder / "conf"

    @property
    def site_file(self) -> Path:
        return self.conf_dir / "metastore-site.xml"

    @property
    def pid_file(self) -> Path:
        return self.folder / "metastore.pid"

    @property
    def log_file(self) -> Path:
        return self.folder / "metastore.log"

    @property
    def schema_log(self) -> Path:
        return self.folder / "schema.log"

    @property
    def password_file(self) -> Path:
        return self.folder / "db.password"

    @property
    def lock_file(self) -> Path:
        return self.folder / "lock"

    @property
    def data_dir(self) -> Path:
        return self.state / "postgres"

    @property
    def postgres_log(self) -> Path:
        return self.folder / "postgres.log"


@dataclass(frozen=True)
class Database:
    """The metastore's database: a JDBC URL, a user and a password."""

    url: str
    user: str
    password: str


@dataclass(frozen=True)
class Running:
    pid: int
    port: int

    @property
    def uri(self) -> str:
        return f"thrift://{HOST}:{self.port}"


def say(out: TextIO, message: str) -> None:
    print(message, file=out, flush=True)


def tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path``, readable by its owner only (0600) from its first byte."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(descriptor, 0o600)
    with os.fdopen(descriptor, "w") as handle:
        handle.write(text)


@contextmanager
def exclusive(files: Files) -> Iterator[None]:
    """One ``start`` or ``stop`` at a time per state dir."""
    private_dir(files.folder)
    with files.lock_file.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


# ------------------------------------------------------------ class path


def metastore_home() -> Path:
    return Path(os.environ.get("LATECOMER_METASTORE_HOME") or DEFAULT_HOME).resolve()


def pins(pins_file: Path = PINS) -> dict[str, str]:
    """The pinned files of a Maven-resolved home (the metastore's by default), by path relative to it: their sha256.

    ``pins_file`` is a ``sha256sum`` listing; the Kafka broker's
    (:mod:`python_jobs.operations.kafka_broker`) is read the same way.
    """
    pinned = {}
    for line in pins_file.read_text().splitlines():
        if line.strip():
            digest, name = line.split(maxsplit=1)
            pinned[name.strip()] = digest
    return pinned


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def pinned_problems(home: Path, pins_file: Path = PINS) -> list[str]:
    """Which files pinned in ``pins_file`` ``home`` lacks or holds with other bytes (empty when none)."""
    return [
        f"{name} is missing" if not (home / name).is_file() else f"{name} has other bytes than pinned"
        for name, digest in pins(pins_file).items()
        if not (home / name).is_file() or sha256_of(home / name) != digest
    ]


def maven_package(pom: Path, dir_property: str, home: Path) -> None:
    """Run ``mvn package`` on ``pom`` with its output folder property ``dir_property`` set to ``home``.

    -C: a download whose checksum differs from the registry's fails. Shared
    by every Maven-resolved home (the metastore's, the Kafka broker's).
    """
    mvn = shutil.which("mvn")
    if mvn is None:
        raise MetastoreError("Maven is missing: apt-get install maven (and a JDK, openjdk-17-jdk-headless)")
    command = [mvn, "-q", "-B", "-C", "-f", str(pom), "package", f"-D{dir_property}={home}"]
    result = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    if result.returncode != 0:
        raise MetastoreError(f"Maven failed (exit {result.returncode}): {' '.join(command)}\n{result.stdout[-3000:]}")


def check_home(home: Path) -> list[str]:
    """What is wrong with ``home``: missing files, files of other bytes (empty when none)."""
    problems = pinned_problems(home)
    compiled = home / MAIN_CLASS_FILE
    if not compiled.is_file():
        problems.append(f"{MAIN_CLASS_FILE} is missing")
    elif SOURCE.is_file() and SOURCE.stat().st_mtime > compiled.stat().st_mtime:
        problems.append(f"{MAIN_CLASS_FILE} is older than {SOURCE.relative_to(REPO_ROOT)}")
    return problems


def class_path(home: Path, conf_dir: Path) -> str:
    """The service's class path: its configuration, its class, the pinned jars (nothing else in lib/)."""
    jars = [str(home / name) for name in pins() if name.endswith(".jar")]
    return ":".join([str(conf_dir), str(home / "classes"), *jars])


def verified_home() -> Path:
    home = metastore_home()
    problems = check_home(home)
    if problems:
        shown = "; ".join(problems[:3]) + (f"; and {len(problems) - 3} more" if len(problems) > 3 else "")
        raise MetastoreError(
            f"The metastore service's files in {home} are not as pinned in {PINS.relative_to(REPO_ROOT)} "
            f"({shown}). `{FETCH_COMMAND}` resolves them with Maven (needs mvn and a JDK)."
        )
    return home


def fetch(out: TextIO) -> Path:
    """Resolve the service's class path with Maven into the metastore home, then check it."""
    home = metastore_home()
    if not check_home(home):
        say(out, f"metastore: {home} holds the pinned files")
        return home
    say(out, f"metastore: resolving the service's jars with Maven into {home}")
    started = time.monotonic()
    maven_package(POM, "metastore.dir", home)
    problems = check_home(home)
    if problems:
        raise MetastoreError(
            f"Maven resolved files that are not as pinned in {PINS}: {'; '.join(problems)}. "
            "If the pom changed on purpose, write the new sha256 list (see the pom's header)."
        )
    size = sum((home / name).stat().st_size for name in pins() if name.endswith(".jar"))
    say(
        out,
        f"metastore: {sum(name.endswith('.jar') for name in pins())} jars ({size / 2**20:.1f} MiB) in {home}, "
        f"sha256 as pinned, in {time.monotonic() - started:.1f}s",
    )
    return home


# ------------------------------------------------------------ PostgreSQL


def postgres_bin(data_dir: Path) -> Path:
    """The folder of PostgreSQL's server programs; the cluster's own major version first."""
    wanted = ("initdb", "pg_ctl", "postgres", "psql")
    given = os.environ.get("LATECOMER_POSTGRES_BIN")
    if given:
        candidates = [Path(given)]
    else:
        versions = sorted(
            (folder for folder in Path("/usr/lib/postgresql").glob("*/bin")),
            key=lambda folder: int(folder.parent.name) if folder.parent.name.isdigit() else 0,
            reverse=True,
        )
        try:
            cluster_version = (data_dir / "PG_VERSION").read_text().strip()
            versions.sort(key=lambda folder: folder.parent.name != cluster_version)
        except OSError:
            pass
        on_path = shutil.which("pg_ctl")
        candidates = [*versions, *([Path(on_path).parent] if on_path else [])]
    for folder in candidates:
        if all(os.access(folder / name, os.X_OK) for name in wanted):
            return folder
    where = f"LATECOMER_POSTGRES_BIN={given}" if given else "/usr/lib/postgresql/*/bin or PATH"
    raise MetastoreError(
        f"PostgreSQL's server programs ({', '.join(wanted)}) are missing from {where}: "
        "apt-get install postgresql-15 (or set LATECOMER_POSTGRES_BIN to their folder), "
        "or use an existing database with LATECOMER_METASTORE_DB_URL"
    )


def unprivileged(command: list[str]) -> list[str]:
    """``command`` as a user PostgreSQL accepts: as is, or for root in a user namespace.

    Inside the namespace this process's user is an unprivileged account
    (``postgres`` when it exists, else ``nobody``); outside, the files it
    writes stay this user's.
    """
    if os.geteuid() != 0:
        return command
    unshare = shutil.which("unshare")
    if unshare is None:
        raise MetastoreError(
            "PostgreSQL refuses to run as root, and unshare (util-linux) is missing to run it as an "
            "unprivileged user: run this as a non-root user, or install util-linux"
        )
    try:
        account = pwd.getpwnam("postgres")
    except KeyError:
        account = pwd.getpwnam("nobody")
    return [unshare, "--user", f"--map-user={account.pw_uid}", f"--map-group={account.pw_gid}", *command]


def run(command: list[str], what: str, env: dict[str, str] | None = None) -> str:
    """Run ``command``; its output, or an error naming ``what`` with the output."""
    try:
        result = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env, timeout=300)
    except OSError as exc:
        raise MetastoreError(f"{what} could not start: {exc}") from None
    if result.returncode != 0:
        output = (result.stdout + result.stderr).strip()
        hint = ""
        if "unshare" in command[0] and "Operation not permitted" in output:
            hint = (
                " (this machine does not allow user namespaces, which let root run PostgreSQL as an "
                "unprivileged user: run this as a non-root user, or use an existing database with "
                "LATECOMER_METASTORE_DB_URL)"
            )
        raise MetastoreError(f"{what} failed (exit {result.returncode}){hint}:\n{output[-3000:]}")
    return result.stdout


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


@dataclass(frozen=True)
class Cluster:
    """The local PostgreSQL cluster in ``<state dir>/postgres``."""

    files: Files

    @property
    def data(self) -> Path:
        return self.files.data_dir

    def bin(self, program: str) -> str:
        return str(postgres_bin(self.data) / program)

    def initialised(self) -> bool:
        return (self.data / "PG_VERSION").is_file()

    def port(self) -> int:
        """The port written into the cluster's configuration when it was initialised."""
        conf = (self.data / "postgresql.conf").read_text()
        ports = re.findall(r"^port\s*=\s*(\d+)", conf, flags=re.MULTILINE)
        if not ports:
            raise MetastoreError(f"{self.data}/postgresql.conf names no port; add `port = N` to it")
        return int(ports[-1])

    def password(self) -> str:
        given = os.environ.get("LATECOMER_METASTORE_DB_PASSWORD")
        if given:
            return given
        try:
            return self.files.password_file.read_text().strip()
        except FileNotFoundError:
            raise MetastoreError(
                f"{self.files.password_file} is missing: set LATECOMER_METASTORE_DB_PASSWORD to the "
                f"password of the cluster in {self.data}"
            ) from None

    def database(self) -> Database:
        return Database(f"jdbc:postgresql://{HOST}:{self.port()}/{DB_NAME}", DB_USER, self.password())

    def running_pid(self) -> int | None:
        """The postmaster's pid when the cluster runs (its postmaster.pid names a live process)."""
        try:
            pid = int((self.data / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None
        return pid if process_alive(pid) else None

    def init(self, out: TextIO) -> None:
        """initdb, once: a superuser ``latecomer`` with a password, loopback only, no Unix socket."""
        started = time.monotonic()
        private_dir(self.files.folder)
        password = os.environ.get("LATECOMER_METASTORE_DB_PASSWORD")
        generated = not password
        if generated:
            password = secrets.token_urlsafe(24)
            write_private(self.files.password_file, password + "\n")
            pwfile = self.files.password_file
        else:
            pwfile = self.files.folder / "initdb.password"
            write_private(pwfile, password + "\n")
        try:
            run(
                unprivileged(
                    [
                        self.bin("initdb"),
                        "--pgdata",
                        str(self.data),
                        "--username",
                        DB_USER,
                        f"--pwfile={pwfile}",
                        "--auth=scram-sha-256",
                        "--encoding=UTF8",
                        "--no-locale",
                    ]
                ),
                "initdb",
            )
        except MetastoreError:
            if generated:
                self.files.password_file.unlink(missing_ok=True)
            raise
        finally:
            if not generated:
                pwfile.unlink(missing_ok=True)
        port = int(os.environ.get("LATECOMER_POSTGRES_PORT") or free_port())
        with (self.data / "postgresql.conf").open("a") as conf:
            conf.write(
                "\n# latecomer (python_jobs/operations/metastore.py): loopback only, no Unix socket.\n"
                f"listen_addresses = '{HOST}'\nport = {port}\nunix_socket_directories = ''\n"
            )
        kept = f"generated and kept in {self.files.password_file} (0600)" if generated else "from the environment"
        say(
            out,
            f"metastore: PostgreSQL cluster initialised in {self.data} in {time.monotonic() - started:.1f}s "
            f"(port {port}; password {kept})",
        )

    def start(self, out: TextIO, timeout_s: float) -> None:
        port = self.port()
        if port_in_use(port):
            raise MetastoreError(
                f"Port {port} of the PostgreSQL cluster in {self.data} is taken by another process; "
                f"free it, or change `port` at the end of {self.data}/postgresql.conf"
            )
        started = time.monotonic()
        run(
            unprivileged(
                [
                    self.bin("pg_ctl"),
                    "start",
                    "--pgdata",
                    str(self.data),
                    "--log",
                    str(self.files.postgres_log),
                    "--wait",
                    f"--timeout={int(timeout_s)}",
                ]
            ),
            f"PostgreSQL (log: {self.files.postgres_log})",
        )
        say(out, f"metastore: PostgreSQL started on {HOST}:{port} in {time.monotonic() - started:.1f}s")

    def psql(self, sql: str, database: str = "postgres") -> str:
        """Run ``sql`` in ``database`` of the running cluster; its rows, unaligned."""
        env = {**os.environ, "PGPASSWORD": self.password(), "PGCONNECT_TIMEOUT": "10"}
        command = [self.bin("psql"), "-h", HOST, "-p", str(self.port()), "-U", DB_USER, "-d", database]
        return run([*command, "-v", "ON_ERROR_STOP=1", "-tA", "-c", sql], "psql", env=env).strip()

    def ensure(self, out: TextIO, timeout_s: float) -> Database:
        """Initialised, running, with the metastore's database: the database."""
        if not self.initialised():
            self.init(out)
        if self.running_pid() is None:
            self.start(out, timeout_s)
        if self.psql(f"select count(*) from pg_database where datname = '{DB_NAME}'") == "0":
            self.psql(f"create database {DB_NAME}")
            say(out, f"metastore: database {DB_NAME} created")
        return self.database()

    def stop(self, out: TextIO) -> bool:
        if not self.initialised() or self.running_pid() is None:
            return False
        run(
            unprivileged([self.bin("pg_ctl"), "stop", "--pgdata", str(self.data), "--mode=fast", "--wait"]),
            "pg_ctl stop",
        )
        say(out, f"metastore: PostgreSQL stopped ({self.data})")
        return True


def external_database() -> Database | None:
    """The existing database named by LATECOMER_METASTORE_DB_URL, if any."""
    url = os.environ.get("LATECOMER_METASTORE_DB_URL")
    if not url:
        return None
    if not url.startswith("jdbc:postgresql://"):
        raise MetastoreError(f"LATECOMER_METASTORE_DB_URL={url!r} is not a jdbc:postgresql:// URL")
    password = os.environ.get("LATECOMER_METASTORE_DB_PASSWORD")
    if not password:
        raise MetastoreError("LATECOMER_METASTORE_DB_URL is set: give its password in LATECOMER_METASTORE_DB_PASSWORD")
    return Database(url, os.environ.get("LATECOMER_METASTORE_DB_USER") or DB_USER, password)


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
            f"see {files.schema_log}; last lines:\n{tail(files.schema_log)}"
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
    if process_alive(pid) and runs_class(pid, MAIN_CLASS):
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
                    f"{files.log_file}; last lines:\n{tail(files.log_file)}"
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
