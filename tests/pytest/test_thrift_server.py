"""The Spark Thrift Server command, the ``thrift`` target end to end, and Delta fail-fast.

The server gets its own state dir: the embedded Derby metastore admits one
process, and pytest's shared Spark session owns the one under .latecomer/pytest.
Data is therefore landed (ingest in a subprocess) before the server starts.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from dbt.cli.main import dbtRunnerResult

from python_jobs.core import processes, spark_config
from python_jobs.core.dbt_runner import DbtRunner, failures
from python_jobs.operations import thrift_server

ROOT = Path(__file__).resolve().parents[2]
AS_OF = "2024-01-17T00:00:00+00:00"
ARRIVAL_TS = "2024-01-16T09:00:00+00:00"
SCHEMA = "t_thrift"
# The smallest selection with every kind of node the project builds (views,
# incremental merges, recomputed and restated models, the snapshot, the seed,
# data tests): what the target must run. Python models need a Spark session,
# which a Thrift server does not offer. Of the data tests, one generic test
# scoped to what the run wrote and one singular test stand for the other
# sixty, whose SQL the local builds run (--indirect-selection empty keeps
# dbt from adding every test of the selected models).
THRIFT_SELECTION = "+gold_daily_revenue +customer_history landing_batches"
THRIFT_TESTS = (
    "primary_key_gold_daily_revenue_event_date__source_system assert_customer_history_versions_do_not_overlap"
)
EVENTS: list[dict[str, Any] | str] = [
    {
        "event_id": "e1",
        "event_type": "page_view",
        "user_id": "u1",
        "event_ts": "2024-01-16T08:00:00+00:00",
    },
    {
        "event_id": "e2",
        "event_type": "order_placed",
        "user_id": "u1",
        "amount": "19.99",
        "event_ts": "2024-01-16T08:05:00Z",
    },
    {
        "event_id": "e3",
        "event_type": "order_placed",
        "user_id": "u2",
        "amount": "5.00",
        "event_ts": "2024-01-15T23:30:00+00:00",
    },
    {
        "event_id": "e4",
        "event_type": "refund",
        "user_id": "u2",
        "amount": "5.00",
        "event_ts": "2024-01-16T07:00:00+00:00",
    },
    "{not json",
]
CUSTOMERS: list[dict[str, Any] | str] = [
    {"customer_id": "u1", "tier": "gold", "region": "eu", "updated_at": "2024-01-10T00:00:00Z"},
    {"customer_id": "u2", "tier": "silver", "region": "us", "updated_at": "2024-01-12T00:00:00Z"},
]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((thrift_server.HOST, 0))
        return int(sock.getsockname()[1])


def run_cli(*args: str, env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "python_jobs.operations.thrift_server", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def assert_one_line_error(stderr: str, *fragments: str) -> None:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert lines[0].startswith("thrift_server: error: "), stderr
    for fragment in fragments:
        assert fragment in lines[0], stderr


def hive_query(port: int, sql: str, rows: bool = True) -> list[tuple[Any, ...]]:
    """``sql`` in a session of its own; its rows, or none (``rows=False``, for a
    statement that returns no result set)."""
    from pyhive import hive

    connection = hive.connect(host=thrift_server.HOST, port=port, username="pytest")
    try:
        cursor = connection.cursor()
        cursor.execute(sql)
        return [tuple(row) for row in cursor.fetchall()] if rows else []
    finally:
        connection.close()


@dataclass
class Server:
    port: int
    state: Path
    env: dict[str, str]
    start_seconds: float

    @property
    def pid(self) -> int:
        return int((self.state / thrift_server.PID_FILE).read_text().split()[0])


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    state = tmp_path_factory.mktemp("thrift_state")
    port = free_port()
    env = {
        **os.environ,
        "LATECOMER_STATE_DIR": str(state),
        "LATECOMER_THRIFT_PORT": str(port),
        "LATECOMER_SCHEMA": SCHEMA,
        "LATECOMER_DRIVER_MEMORY": "2g",
        "SPARK_LOCAL_IP": "127.0.0.1",
    }
    # Derby is single-process: land the data before the server owns the metastore,
    # both feeds through ingest's main() in one process (one JVM start).
    calls = []
    for source, feed, rows in (("web", "events", EVENTS), ("crm", "customers", CUSTOMERS)):
        landing = state / f"{feed}.ndjson"
        landing.write_text("".join((row if isinstance(row, str) else json.dumps(row)) + "\n" for row in rows))
        argv = ["--source", source, "--feed", feed, "--arrival-ts", ARRIVAL_TS, str(landing)]
        calls.append(f"assert ingest.main({argv!r}) == 0")
    ingest = subprocess.run(
        [sys.executable, "-c", "; ".join(["from python_jobs.landing import ingest", *calls])],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert ingest.returncode == 0, ingest.stdout + ingest.stderr
    try:
        started = time.monotonic()
        result = run_cli("start", "--timeout", "300", env=env, timeout=400)
        start_seconds = time.monotonic() - started
        assert result.returncode == 0, result.stdout + result.stderr
        assert f"ready on 127.0.0.1:{port}" in result.stdout
        print(f"\nThrift server started in {start_seconds:.1f}s")
        yield Server(port=port, state=state, env=env, start_seconds=start_seconds)
    finally:
        if (state / thrift_server.PID_FILE).exists():
            run_cli("stop", env=env)


@pytest.mark.thrift
def test_status_reports_running_server(server: Server) -> None:
    result = run_cli("status", env=server.env)
    assert result.returncode == 0, result.stderr
    assert "running" in result.stdout and "not running" not in result.stdout
    assert f"pid {server.pid}" in result.stdout
    assert f"127.0.0.1:{server.port}" in result.stdout
    assert str(server.state / thrift_server.LOG_FILE) in result.stdout
    assert hive_query(server.port, "select 1") == [(1,)]


@pytest.mark.thrift
def test_start_twice_is_refused(server: Server) -> None:
    result = run_cli("start", env=server.env)
    assert result.returncode != 0
    assert_one_line_error(result.stderr, "already running", f"pid {server.pid}", "stop")


@pytest.mark.thrift
def test_port_taken_by_another_server_is_refused(server: Server, tmp_path: Path) -> None:
    env = {**server.env, "LATECOMER_STATE_DIR": str(tmp_path)}
    result = run_cli("start", "--port", str(server.port), env=env)
    assert result.returncode != 0
    assert_one_line_error(result.stderr, f"Port {server.port}", "already taken", "--port")
    assert not (tmp_path / thrift_server.PID_FILE).exists()


def dbt_thrift(*args: str, target_path: Path) -> dbtRunnerResult:
    runner = DbtRunner(ROOT, profiles_dir=ROOT / "profiles", target="thrift", target_path=target_path)
    return runner.invoke(*args, check=False)


@pytest.mark.thrift
def test_dbt_build_and_docs_through_server(server: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LATECOMER_THRIFT_PORT", str(server.port))
    monkeypatch.setenv("LATECOMER_SCHEMA", SCHEMA)
    target = tmp_path / "target"

    build = dbt_thrift(
        "build",
        "--select",
        f"{THRIFT_SELECTION} {THRIFT_TESTS}",
        "--indirect-selection",
        "empty",
        "--vars",
        json.dumps({"as_of": AS_OF}),
        target_path=target,
    )
    assert build.success, failures(build)
    # The selection runs every kind of node the project has on this target.
    kinds = {
        r.node.config.materialized if r.node.resource_type == "model" else str(r.node.resource_type)
        for r in build.result  # type: ignore[union-attr]
        if r.status in ("success", "pass")
    }
    assert kinds >= {"view", "incremental", "recomputed", "restated", "snapshot", "seed", "test"}, kinds
    tests = [r.node.name for r in build.result if r.node.resource_type == "test"]  # type: ignore[union-attr]
    assert sorted(tests) == sorted(THRIFT_TESTS.split())
    docs = dbt_thrift("docs", "generate", "--select", THRIFT_SELECTION, target_path=target)
    assert docs.success, failures(docs)
    catalog = json.loads((target / "catalog.json").read_text())
    assert catalog["nodes"], "docs generate catalogued no model"

    # The landed rows are visible through the server...
    assert hive_query(server.port, f"select count(*) from {SCHEMA}_bronze.bronze_events") == [(len(EVENTS),)]
    # ...and so is every table or view the build made.
    built = [
        r.node
        for r in build.result  # type: ignore[union-attr]
        if r.node.resource_type == "model" and r.status == "success"
    ]
    assert built, "dbt build built no model"
    for node in built:
        relation = f"{node.schema}.{node.alias}"
        rows = hive_query(server.port, f"select count(*) from {relation}")
        assert len(rows) == 1 and rows[0][0] >= 0, relation
        assert f"model.latecomer.{node.name}" in catalog["nodes"], node.name


@pytest.mark.thrift
def test_each_session_sees_the_commits_of_the_others(server: Server) -> None:
    """A dbt build on the server runs in several of its sessions (a thread's
    connection writes on the run branch, dbt's own connection publishes at
    on-run-end), and BI tools read in theirs: a commit in one session, a new
    branch included, is what the next statement of any other reads."""
    from pyhive import hive

    table = f"{SCHEMA}_bronze.sessions_see_commits"
    hive_query(server.port, f"create table {table} (id int) using iceberg", rows=False)
    connections = [hive.connect(host=thrift_server.HOST, port=server.port, username=name) for name in ("r", "w")]
    reader, writer = (connection.cursor() for connection in connections)
    try:
        reader.execute(f"select count(*) from {table}")
        assert reader.fetchall() == [(0,)]
        writer.execute(f"insert into {table} values (1)")
        reader.execute(f"select count(*) from {table}")
        assert reader.fetchall() == [(1,)], "the reader's session read the table as it was before the insert"
        writer.execute(f"alter table {table} create branch staged")
        writer.execute(f"insert into {table}.branch_staged values (2)")
        # What on-run-end does on its own connection: main fast-forwarded to the run's branch.
        reader.execute(f"call spark_catalog.system.fast_forward('{table}', 'main', 'staged')")
        reader.fetchall()
        writer.execute(f"select id from {table} order by id")
        assert writer.fetchall() == [(1,), (2,)]
    finally:
        for connection in connections:
            connection.close()
        hive_query(server.port, f"drop table if exists {table}", rows=False)


@pytest.mark.thrift
def test_stop_then_stop_again(server: Server) -> None:
    pid = server.pid
    stopped = run_cli("stop", env=server.env)
    assert stopped.returncode == 0, stopped.stderr
    assert "stopped" in stopped.stdout
    assert not processes.process_alive(pid)
    assert not thrift_server.port_answers(server.port)

    status = run_cli("status", env=server.env)
    assert status.returncode != 0
    assert "not running" in status.stdout

    again = run_cli("stop", env=server.env)
    assert again.returncode != 0
    assert_one_line_error(again.stderr, "not running", "start")


# Error paths that need no server: in-process, against a throwaway state dir.


@pytest.fixture
def own_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("LATECOMER_STATE_DIR", str(tmp_path))
    return tmp_path


def test_submit_command_carries_the_local_target_config(own_state: Path) -> None:
    conf = spark_config.spark_conf("iceberg", jvm_profile="server")
    command = thrift_server.submit_command(10321, "iceberg")
    pairs = list(zip(command, command[1:], strict=False))
    assert ("--class", thrift_server.MAIN_CLASS) in pairs
    # One class path holds Iceberg's jar and the local file system's (when built).
    class_path = ":".join([conf.pop("spark.jars"), *filter(None, [conf.pop("spark.driver.extraClassPath", "")])])
    assert ("--driver-class-path", class_path) in pairs
    assert command.count("--driver-class-path") == 1
    assert not any(argument.startswith("spark.driver.extraClassPath=") for argument in command)
    assert "--jars" not in command
    for key, value in conf.items():
        assert ("--conf", f"{key}={value}") in pairs
    assert ("--hiveconf", "hive.server2.thrift.port=10321") in pairs
    assert ("--hiveconf", "hive.server2.thrift.bind.host=127.0.0.1") in pairs
    assert str(own_state / "metastore_db") in " ".join(command)
    # A long-lived server keeps the JVM's defaults, not a command's (spark_config.JVM_PROFILES).
    for option in spark_config.JVM_PROFILES["job"]:
        assert option not in " ".join(command)


def test_stop_when_not_running(own_state: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert thrift_server.main(["stop"]) != 0
    assert_one_line_error(capsys.readouterr().err, "not running", "start")
    assert thrift_server.main(["status"]) != 0
    assert "not running" in capsys.readouterr().out


def test_port_taken_by_another_process(own_state: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as listener:
        listener.bind((thrift_server.HOST, 0))
        listener.listen()
        port = listener.getsockname()[1]
        assert thrift_server.main(["start", "--port", str(port)]) != 0
    assert_one_line_error(capsys.readouterr().err, f"Port {port}", "already taken")
    assert not (own_state / thrift_server.PID_FILE).exists()


def test_java_missing(own_state: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(own_state))
    assert thrift_server.main(["start", "--port", str(free_port())]) != 0
    assert_one_line_error(capsys.readouterr().err, "Java is missing", "JDK 17")


def test_server_dying_during_startup_points_to_log(
    own_state: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("LATECOMER_DRIVER_MEMORY", "not-a-size")
    started = time.monotonic()
    assert thrift_server.main(["start", "--port", str(free_port()), "--timeout", "60"]) != 0
    assert time.monotonic() - started < 30
    err = capsys.readouterr().err
    first, *tail = err.splitlines()
    log = own_state / thrift_server.LOG_FILE
    assert first.startswith("thrift_server: error: Thrift server died during startup")
    assert str(log) in first
    assert any("Invalid maximum heap size" in line for line in tail), err
    assert "Traceback" not in err
    assert not (own_state / thrift_server.PID_FILE).exists()


# Delta fail-fast: a jar folder without Delta's jars must fail at once, in one message.


def dbt_executable() -> str:
    beside = Path(sys.executable).with_name("dbt")
    return str(beside) if beside.exists() else (shutil.which("dbt") or "dbt")


@pytest.mark.parametrize("command", ["debug", "build"])
def test_delta_target_without_jars_fails_fast(command: str, tmp_path: Path) -> None:
    env = {key: value for key, value in os.environ.items() if key != "LATECOMER_TABLE_FORMAT"}
    # An empty jar folder; a fresh state dir, no metastore lock.
    (tmp_path / "jars").mkdir()
    env |= {"LATECOMER_JARS_DIR": str(tmp_path / "jars"), "LATECOMER_STATE_DIR": str(tmp_path / "state")}
    cli = [dbt_executable(), command, "--target", "delta", "--profiles-dir", str(ROOT / "profiles")]
    cli += ["--project-dir", str(ROOT), "--log-path", str(tmp_path / "logs")]
    if command != "debug":  # debug has no --target-path
        cli += ["--target-path", str(tmp_path / "target")]
    started = time.monotonic()
    result = subprocess.run(
        cli,
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    elapsed = time.monotonic() - started
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert elapsed < 60, f"took {elapsed:.1f}s"  # no JVM is started
    assert output.count(f"Delta Lake jars are missing from {tmp_path / 'jars'}") == 1, output
    assert "LATECOMER_JARS_DIR" in output and "delta-storage-3.3.3.jar" in output
    assert "Traceback" not in output
