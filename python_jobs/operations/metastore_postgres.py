"""The metastore's database: a PostgreSQL cluster of its own in
``<state dir>/postgres`` (initialised once, loopback only, no Unix socket,
password authentication), or an existing database named by
``LATECOMER_METASTORE_DB_URL``.

PostgreSQL refuses to run as root; run as root, its programs start in a user
namespace where this process's user is an unprivileged one.
"""

from __future__ import annotations

import os
import pwd
import re
import secrets
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from python_jobs.core.processes import process_alive
from python_jobs.core.spark_config import private_dir
from python_jobs.operations.metastore_state import (
    DB_NAME,
    DB_USER,
    HOST,
    Database,
    Files,
    MetastoreError,
    free_port,
    say,
    write_private,
)
from python_jobs.operations.thrift_server import port_in_use


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
