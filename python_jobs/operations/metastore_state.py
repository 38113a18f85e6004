"""What the parts of the shared metastore have in common: where the service and
the local PostgreSQL cluster keep their state (:class:`Files`), the database
the service connects to, the running service, the error a user can fix, and
small helpers (printing progress, a file only its owner
reads, one ``start`` or ``stop`` at a time, a free port on 127.0.0.1).
"""

from __future__ import annotations

import fcntl
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from python_jobs.core.spark_config import private_dir

HOST = "127.0.0.1"
PROG = "python -m python_jobs.operations.metastore"
DB_NAME = "metastore"
DB_USER = "latecomer"


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


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]
