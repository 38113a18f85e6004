"""dbt's adapter conformance suite (dbt-tests-adapter) on the latecomer adapter.

One pytest process runs one table format on one target, chosen by the
environment:

``ADAPTER_FORMAT``
    ``iceberg`` (the default) or ``delta``: the session's catalog and the
    target's ``table_format`` (profiles/profiles.yml targets ``local`` and ``delta``).
``ADAPTER_TARGET``
    ``session`` (the default): dbt in-process on one Spark session, started
    once for the run (python_jobs.core.spark_config.get_spark). ``thrift``:
    a Spark Thrift Server started once for the run on a free port
    (python_jobs.operations.thrift_server), dbt connecting to it
    (profiles/profiles.yml target ``thrift``).

Either way the run keeps its metastore and warehouse in a state dir of its
own under a temporary folder (``LATECOMER_STATE_DIR``), removed at the end.
dbt-tests-adapter's fixtures (``dbt.tests.fixtures.project``) write each test
class's project in a temporary folder and give it a schema of its own, dropped
after the class.
"""

from __future__ import annotations

import getpass
import io
import os
import shutil
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

FORMAT = os.environ.get("ADAPTER_FORMAT", "iceberg").lower()
if FORMAT not in ("iceberg", "delta"):
    raise SystemExit(f"ADAPTER_FORMAT={FORMAT!r}: choose iceberg or delta")
TARGET = os.environ.get("ADAPTER_TARGET", "session").lower()
if TARGET not in ("session", "thrift"):
    raise SystemExit(f"ADAPTER_TARGET={TARGET!r}: choose session or thrift")
# Set before anything imports python_jobs.core.spark_config or starts Spark.
STATE_DIR = Path(tempfile.mkdtemp(prefix=f"latecomer-adapter-{FORMAT}-{TARGET}-"))
os.environ["LATECOMER_STATE_DIR"] = str(STATE_DIR)
os.environ["LATECOMER_TABLE_FORMAT"] = FORMAT
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
if TARGET == "session":
    # A short-lived process over little data (spark_config.JVM_PROFILES); the
    # Thrift server keeps its own profile.
    os.environ.setdefault("LATECOMER_JVM_PROFILE", "short")

pytest_plugins = ["dbt.tests.fixtures.project"]


def pytest_unconfigure(config: pytest.Config) -> None:
    """The run's state dir goes, whether or not a test started the engine."""
    shutil.rmtree(STATE_DIR, ignore_errors=True)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="session")
def latecomer_engine() -> Iterator[dict[str, Any]]:
    """The run's one Spark JVM: the in-process session, or a Thrift server.

    Yields the profile fields that reach it.
    """
    try:
        if TARGET == "session":
            from python_jobs.core.spark_config import get_spark

            spark = get_spark(FORMAT)
            # The user owns the session's tables (docs generate's catalog reports it).
            yield {"method": "session", "user": getpass.getuser(), "threads": 1}
            spark.stop()
        else:
            from python_jobs.operations import thrift_server

            port = free_port()
            thrift_server.start(port, 300.0, FORMAT, io.StringIO())
            try:
                yield {
                    "method": "thrift",
                    "host": "127.0.0.1",
                    "port": port,
                    "user": getpass.getuser(),
                    "threads": 1,
                    "connect_retries": 3,
                    "connect_timeout": 5,
                    # As the project's thrift target (profiles/profiles.yml).
                    "poll_interval": 1,
                }
            finally:
                thrift_server.stop(io.StringIO())
    finally:
        shutil.rmtree(STATE_DIR, ignore_errors=True)


@pytest.fixture(scope="class")
def dbt_profile_target(latecomer_engine: dict[str, Any]) -> dict[str, Any]:
    """The latecomer adapter's target (dbt-tests-adapter adds the schema)."""
    return {"type": "latecomer", "table_format": FORMAT, **latecomer_engine}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On the Thrift target only the basic suite runs (the issue's scope):
    every other module is deselected, not skipped."""
    if TARGET != "thrift":
        return
    kept = [item for item in items if item.module is not None and item.module.__name__.endswith("test_basic")]
    dropped = [item for item in items if item not in kept]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept
