"""The shared catalog: a Hive metastore service on PostgreSQL, used by several Spark processes at once.

``python -m python_jobs.operations.metastore start`` brings up a PostgreSQL
cluster and the Hive metastore service in a state dir of this module's; two
worker processes (tests/pytest/metastore_worker.py), each with its own Spark
session from ``get_spark`` and ``LATECOMER_METASTORE_URI`` set, then append to
one Iceberg table at the same time, and a Delta session creates and reads a
table through the same service. Every row appended must be there once:
Iceberg's commits on the Hive catalog take the service's locks.

The figures (start-up of each part, sessions, appends) are printed; run with
``-s`` to see them. The service's jars come from ``metastore fetch`` (Maven),
run here when they are missing.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from python_jobs.operations import metastore, metastore_class_path, metastore_postgres, metastore_state

ROOT = Path(__file__).resolve().parents[2]
APPENDS = 10
ROWS = 100
WORKERS = ("a", "b")
TIMEOUT_S = 600

pytestmark = pytest.mark.metastore


@dataclass
class Shared:
    state: Path
    uri: str
    env: dict[str, str]
    start_output: str
    start_s: float


def cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "python_jobs.operations.metastore", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )


def uri_of(output: str) -> str:
    lines = [line for line in output.splitlines() if line.startswith("LATECOMER_METASTORE_URI=")]
    assert lines, output
    return lines[-1].split("=", 1)[1]


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Shared]:
    metastore_class_path.fetch(sys.stdout)
    state = tmp_path_factory.mktemp("shared-catalog")
    env = {
        **os.environ,
        "LATECOMER_STATE_DIR": str(state),
        "LATECOMER_METASTORE_PORT": str(metastore_state.free_port()),
        # Commands over little data: the quick JIT, and a small heap each.
        "LATECOMER_JVM_PROFILE": "short",
        "LATECOMER_DRIVER_MEMORY": "1g",
        "SPARK_LOCAL_IP": "127.0.0.1",
    }
    for name in ("LATECOMER_METASTORE_URI", "LATECOMER_WAREHOUSE", "LATECOMER_METASTORE_DB_URL"):
        env.pop(name, None)
    started = time.monotonic()
    result = cli("start", env=env)
    start_s = time.monotonic() - started
    assert result.returncode == 0, result.stdout + result.stderr
    uri = uri_of(result.stdout)
    print(f"\n{result.stdout}(start: {start_s:.1f}s in all)")
    try:
        yield Shared(state, uri, {**env, "LATECOMER_METASTORE_URI": uri}, result.stdout, start_s)
    finally:
        cli("stop", env=env)


def worker(shared: Shared, out: Path, *args: str) -> subprocess.Popen[bytes]:
    log = out.with_suffix(".log").open("wb")
    return subprocess.Popen(
        [sys.executable, "-m", "tests.pytest.metastore_worker", *args, "--out", str(out)],
        cwd=ROOT,
        env=shared.env,
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
    )


def finish(process: subprocess.Popen[bytes], out: Path) -> dict[str, Any]:
    try:
        code = process.wait(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        process.kill()
        raise
    log = out.with_suffix(".log").read_text(errors="replace")
    assert code == 0, f"{out.stem} exited {code}:\n{log[-4000:]}"
    return json.loads(out.read_text())


# Addresses as /proc/net/tcp{,6} write them (IPv4 in host byte order).
LOOPBACK = {"0100007F": "127.0.0.1", "0000000000000000FFFF00000100007F": "127.0.0.1"}
LISTEN = "0A"


def listening_addresses(port: int) -> set[str]:
    """The local addresses sockets listen on at ``port`` (Linux)."""
    rows = [line.split() for name in ("tcp", "tcp6") for line in Path(f"/proc/net/{name}").read_text().splitlines()[1:]]
    return {
        LOOPBACK.get(local.split(":")[0], local.split(":")[0])
        for _, local, _, state, *_ in rows
        if state == LISTEN and local.endswith(f":{port:04X}")
    }


def test_the_cluster_and_the_service_listen_on_loopback_only(shared: Shared) -> None:
    running = metastore.read_pid_file(metastore_state.Files(shared.state))
    assert running is not None and metastore.answers(running.port)
    cluster = metastore_postgres.Cluster(metastore_state.Files(shared.state))
    assert "listen_addresses = '127.0.0.1'" in (cluster.data / "postgresql.conf").read_text()
    assert "database metastore created" in shared.start_output
    assert "schema created" in shared.start_output
    password = metastore_state.Files(shared.state).password_file
    assert password.stat().st_mode & 0o777 == 0o600
    assert metastore_state.Files(shared.state).site_file.stat().st_mode & 0o777 == 0o600
    # The service listens on 127.0.0.1, not on every interface as Hive's own main does.
    assert listening_addresses(running.port) == {"127.0.0.1"}
    assert listening_addresses(cluster.port()) == {"127.0.0.1"}


def test_start_again_says_it_runs(shared: Shared) -> None:
    again = cli("start", env=shared.env)
    assert again.returncode == 0, again.stderr
    assert "already running" in again.stdout
    assert uri_of(again.stdout) == shared.uri
    status = cli("status", env=shared.env)
    assert status.returncode == 0 and "(answering)" in status.stdout, status.stdout


def test_two_processes_append_to_one_iceberg_table_at_once_and_lose_nothing(shared: Shared, tmp_path: Path) -> None:
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    started = time.monotonic()
    processes = {}
    for index, who in enumerate(WORKERS):
        options = {"--who": who, "--index": index, "--appends": APPENDS, "--rows": ROWS, "--barrier": barrier}
        arguments = [str(item) for pair in options.items() for item in pair]
        creates = ["--create"] if index == 0 else []
        processes[who] = worker(
            shared, tmp_path / f"{who}.json", "iceberg", *arguments, "--parties", str(len(WORKERS)), *creates
        )
    results = {who: finish(process, tmp_path / f"{who}.json") for who, process in processes.items()}
    wall_s = time.monotonic() - started

    checker = results[WORKERS[0]]
    expected = APPENDS * ROWS * len(WORKERS)
    assert checker["rows"] == expected
    assert checker["distinct_ids"] == expected
    assert checker["rows_by_who"] == {who: APPENDS * ROWS for who in WORKERS}
    assert checker["snapshots"] == APPENDS * len(WORKERS), "one snapshot per append, none lost"
    # A commit that lost a race is retried more often than Iceberg's default 4 (spark_config).
    assert checker["properties"].get("commit.retry.num-retries") == "10"
    # The appends ran at the same time: each worker's first append began
    # before the other's last one ended.
    windows = {who: (result["appends"][0][0], result["appends"][-1][1]) for who, result in results.items()}
    assert max(begin for begin, _ in windows.values()) < min(end for _, end in windows.values()), windows

    # Every commit took the service's lock on the table (Hive hands out lock ids in sequence).
    cluster = metastore_postgres.Cluster(metastore_state.Files(shared.state))
    locks = int(cluster.psql("select nl_next from next_lock_id", database=metastore_state.DB_NAME)) - 1
    assert locks >= APPENDS * len(WORKERS)

    overlap_s = min(end for _, end in windows.values()) - max(begin for begin, _ in windows.values())
    print(f"\nconcurrent Iceberg appends: {len(WORKERS)} processes x {APPENDS} appends x {ROWS} rows, {wall_s:.1f}s")
    for who, result in results.items():
        durations = [end - begin for begin, end in result["appends"]]
        print(
            f"  {who}: session {result['session_s']:.1f}s, appends {sum(durations):.1f}s "
            f"(median {sorted(durations)[len(durations) // 2]:.2f}s, max {max(durations):.2f}s)"
        )
    print(
        f"  appends overlapped for {overlap_s:.1f}s; {checker['rows']} rows, {checker['snapshots']} snapshots, "
        f"{locks} metastore locks taken"
    )


def test_a_delta_session_creates_and_reads_a_table_through_the_same_metastore(shared: Shared, tmp_path: Path) -> None:
    started = time.monotonic()
    result = finish(worker(shared, tmp_path / "delta.json", "delta"), tmp_path / "delta.json")
    assert result["rows"] == 3
    assert result["provider"] == "delta"
    assert result["location"].rstrip("/").endswith("shared_catalog.db/delta_check")
    # One catalog: the Iceberg table of the other test is listed beside it.
    assert result["tables"] == ["appends", "delta_check"]
    # ... and it lives in PostgreSQL.
    cluster = metastore_postgres.Cluster(metastore_state.Files(shared.state))
    tables = cluster.psql('select "TBL_NAME" from "TBLS" order by 1', database=metastore_state.DB_NAME).split()
    assert tables == ["appends", "delta_check"]
    print(
        f"\nDelta through the shared metastore: session {result['session_s']:.1f}s, "
        f"create + insert + read {result['work_s']:.1f}s, process {time.monotonic() - started:.1f}s"
    )


def test_stop_stops_both_and_a_stale_pid_file_is_set_aside(shared: Shared) -> None:
    files = metastore_state.Files(shared.state)
    running = metastore.read_pid_file(files)
    assert running is not None
    stopped = cli("stop", env=shared.env)
    assert stopped.returncode == 0, stopped.stderr
    assert "Hive metastore stopped" in stopped.stdout and "PostgreSQL stopped" in stopped.stdout
    assert not metastore.answers(running.port)
    assert metastore_postgres.Cluster(files).running_pid() is None
    files.pid_file.write_text(f"{running.pid}\n{running.port}\n")  # a pid no process has any more
    status = cli("status", env=shared.env)
    assert status.returncode == 3 and "not running" in status.stdout
    assert not files.pid_file.exists()
    again = cli("stop", env=shared.env)
    assert again.returncode == 0 and "not running" in again.stdout


# ------------------------------------------------------------ no service needed


def test_the_service_configuration_escapes_the_password() -> None:
    database = metastore_state.Database("jdbc:postgresql://127.0.0.1:5432/metastore", "latecomer", 'p<&>"w')
    xml = metastore.site_xml(database, "/data/warehouse")
    assert '<value>p&lt;&amp;&gt;"w</value>' in xml
    assert "<name>metastore.warehouse.dir</name><value>/data/warehouse</value>" in xml


def test_a_port_that_is_not_a_metastore_does_not_answer() -> None:
    assert not metastore.answers(metastore_state.free_port(), timeout_s=1)
    with socket.socket() as listener:  # accepts, then says nothing
        listener.bind((metastore_state.HOST, 0))
        listener.listen()
        assert not metastore.answers(listener.getsockname()[1], timeout_s=1)
