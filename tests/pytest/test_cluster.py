"""The ``cluster`` target on a real Spark standalone cluster: one master and one worker on 127.0.0.1.

The master and the worker run from the pyspark wheel (its ``bin/spark-class``
and jars), as subprocesses this module starts and always stops. The build
runs in a driver subprocess (``tests/pytest/cluster_driver.py``), because this
process already holds the suite's local SparkContext and a process can hold
only one. The driver uses its own state dir: the embedded Derby metastore
admits one process.

A cluster needs storage that the driver and every executor read at the same
paths: the warehouse (``LATECOMER_WAREHOUSE``) and the landing files. The
worker runs on this machine, so local disk is that shared storage here; on a
real cluster it is HDFS, an object store or a shared file system.

What is checked:

- executors in the worker process ran the build: the driver's Spark event log
  (enabled by a ``spark-defaults.conf`` in ``SPARK_CONF_DIR``, the way a user
  adds settings the project does not make) names the executor and host of
  every finished task, and the worker's work dir holds a folder for each of
  those executors;
- the answers equal the local build's: the cluster build's tables, row by row
  (run-specific columns left out, see ``sample_build.is_run_specific``), equal
  conftest's ``built_sample``, the same sample built on the ``local`` target.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyspark
import pytest

from tests.pytest import sample_build
from tests.pytest.conftest import ROOT, Project

pytestmark = pytest.mark.cluster

HOST = "127.0.0.1"
SCHEMA = "t_cluster"
SPARK_HOME = Path(pyspark.__file__).resolve().parent
MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
# JVM start-up on 2 busy cores takes seconds; the sample build a few minutes.
START_TIMEOUT_S = 180
BUILD_TIMEOUT_S = 900
STOP_TIMEOUT_S = 30


def free_ports(count: int) -> list[int]:
    """Ports free on 127.0.0.1 now, all different (each held until all are found)."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind((HOST, 0))
        return [int(sock.getsockname()[1]) for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def tail(path: Path, lines: int = 40) -> str:
    text = path.read_text(errors="replace") if path.exists() else "(no log)"
    return "\n".join(text.splitlines()[-lines:])


def stop_group(process: subprocess.Popen[bytes]) -> None:
    """Stop a process started with ``start_new_session`` and everything in its group.

    The worker's executors are its children, in its group; so is a driver's
    JVM. SIGTERM first (the worker then stops its executors), SIGKILL for
    whatever is left.
    """
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:  # nothing left in the group
            return
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=STOP_TIMEOUT_S)


@dataclass
class Daemon:
    name: str
    process: subprocess.Popen[bytes]
    log: Path


def spawn_logged(command: list[str], cwd: Path, env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    """``command`` in its own process group (killed as one), output to ``log``."""
    with log.open("wb") as handle:
        return subprocess.Popen(
            command,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=handle,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def start_daemon(name: str, args: list[str], env: dict[str, str], logs: Path) -> Daemon:
    log = logs / f"{name}.log"
    process = spawn_logged([str(SPARK_HOME / "bin" / "spark-class"), *args], logs, env, log)
    return Daemon(name=name, process=process, log=log)


@dataclass
class Standalone:
    master_url: str
    webui_port: int
    work_dir: Path
    daemons: list[Daemon]

    def state(self) -> dict[str, Any]:
        """The master's state, as its web UI serves it (workers, applications)."""
        with urllib.request.urlopen(f"http://{HOST}:{self.webui_port}/json/", timeout=5) as response:
            return json.loads(response.read())

    def logs(self) -> str:
        return "\n".join(f"--- {d.name} ({d.log}):\n{tail(d.log)}" for d in self.daemons)

    def wait_for(self, what: str, ready: Callable[[dict[str, Any]], bool]) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        last = "no answer yet"
        while True:
            for daemon in self.daemons:
                if daemon.process.poll() is not None:
                    pytest.fail(
                        f"Spark {daemon.name} exited ({daemon.process.returncode}) before {what}\n{self.logs()}"
                    )
            try:
                state = self.state()
                if ready(state):
                    return
                last = f"workers: {state.get('workers')}"
            except (OSError, ValueError) as exc:  # not listening yet, or a partial answer
                last = repr(exc)
            if time.monotonic() > deadline:
                pytest.fail(f"{what} not within {START_TIMEOUT_S}s (last: {last})\n{self.logs()}")
            time.sleep(1)


def alive_worker(state: dict[str, Any]) -> bool:
    return any(worker["state"] == "ALIVE" and worker["host"] == HOST for worker in state.get("workers", []))


@pytest.fixture(scope="module")
def standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Standalone]:
    """A standalone master and one worker (1 core, 1 GB) on 127.0.0.1; stopped, executors too, at the end."""
    root = tmp_path_factory.mktemp("standalone")
    (root / "conf").mkdir()
    work_dir = root / "work"
    env = {
        **os.environ,
        "SPARK_HOME": str(SPARK_HOME),
        "SPARK_LOCAL_IP": HOST,
        # An empty conf dir: no spark-defaults.conf or spark-env.sh from elsewhere.
        "SPARK_CONF_DIR": str(root / "conf"),
    }
    master_port, master_ui, worker_ui = free_ports(3)
    master_url = f"spark://{HOST}:{master_port}"
    cluster = Standalone(master_url=master_url, webui_port=master_ui, work_dir=work_dir, daemons=[])
    try:
        master_args = ["--host", HOST, "--port", str(master_port), "--webui-port", str(master_ui)]
        cluster.daemons.append(start_daemon("master", [MASTER_CLASS, *master_args], env, root))
        cluster.wait_for("the master answered", lambda state: state.get("status") == "ALIVE")
        worker_args = [master_url, "--host", HOST, "--cores", "1", "--memory", "1g"]
        worker_args += ["--webui-port", str(worker_ui), "--work-dir", str(work_dir)]
        cluster.daemons.append(start_daemon("worker", [WORKER_CLASS, *worker_args], env, root))
        cluster.wait_for("a worker registered ALIVE", alive_worker)
        yield cluster
    finally:
        for daemon in reversed(cluster.daemons):
            stop_group(daemon.process)


@dataclass
class ClusterBuild:
    app_id: str
    answers: dict[str, Any]
    event_log: Path
    seconds: float


@pytest.fixture(scope="module")
def cluster_build(standalone: Standalone, tmp_path_factory: pytest.TempPathFactory) -> ClusterBuild:
    """The sample built on the ``cluster`` target by cluster_driver.py, in its own process and state dir."""
    root = tmp_path_factory.mktemp("cluster_build")
    events = root / "events"
    events.mkdir()
    conf = root / "conf"
    conf.mkdir()
    (conf / "spark-defaults.conf").write_text(
        f"spark.eventLog.enabled true\nspark.eventLog.dir {events.as_uri()}\nspark.eventLog.compress false\n"
    )
    env = {
        **os.environ,
        "SPARK_HOME": str(SPARK_HOME),
        "SPARK_LOCAL_IP": HOST,
        "SPARK_CONF_DIR": str(conf),
        # Executors start their Python workers with the driver's interpreter.
        "PYSPARK_PYTHON": sys.executable,
        "LATECOMER_TARGET": "cluster",
        "LATECOMER_SPARK_MASTER": standalone.master_url,
        "LATECOMER_STATE_DIR": str(root / "state"),
        # Local disk is shared storage here: the worker runs on this machine.
        "LATECOMER_WAREHOUSE": str(root / "shared" / "warehouse"),
        "LATECOMER_SCHEMA": SCHEMA,
        "LATECOMER_DRIVER_MEMORY": "1g",
        # A short process over the sample (spark_config.JVM_PROFILES).
        "LATECOMER_JVM_PROFILE": "short",
        "LATECOMER_EXECUTOR_MEMORY": "1g",
        "LATECOMER_EXECUTOR_CORES": "1",
    }
    # The embedded metastore, Iceberg, the sample's settings: nothing else from the caller.
    for name in (
        "LATECOMER_METASTORE_URI",
        "LATECOMER_TABLE_FORMAT",
        "LATECOMER_SHUFFLE_PARTITIONS",
        "LATECOMER_EXECUTOR_INSTANCES",
        "LATECOMER_UNIT_TESTS",
        "PYSPARK_SUBMIT_ARGS",
    ):
        env.pop(name, None)
    out = root / "result.json"
    log = root / "driver.log"
    started = time.monotonic()
    driver = spawn_logged([sys.executable, "-m", "tests.pytest.cluster_driver", "--out", str(out)], ROOT, env, log)
    try:
        returncode: int | None = driver.wait(timeout=BUILD_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        returncode = None
    finally:
        stop_group(driver)  # its JVM too, should it outlive it
    seconds = time.monotonic() - started
    if returncode != 0 or not out.exists():
        outcome = f"timed out after {BUILD_TIMEOUT_S}s" if returncode is None else f"exited {returncode}"
        pytest.fail(
            f"cluster build {outcome}\n--- driver ({log}):\n{tail(log, 80)}\n{standalone.logs()}\n"
            f"executor logs under {standalone.work_dir}"
        )
    result = json.loads(out.read_text())
    print(f"\ncluster build of the sample: {seconds:.0f}s, application {result['app_id']}")
    return ClusterBuild(
        app_id=result["app_id"],
        answers=result["answers"],
        event_log=events / result["app_id"],
        seconds=seconds,
    )


def finished_tasks(event_log: Path) -> Counter[tuple[str, str]]:
    """Successful tasks per (executor id, host), from a Spark event log's task-end events."""
    tasks: Counter[tuple[str, str]] = Counter()
    with event_log.open() as handle:
        for line in handle:
            event = json.loads(line)
            if event["Event"] == "SparkListenerTaskEnd" and event["Task End Reason"]["Reason"] == "Success":
                info = event["Task Info"]
                tasks[(info["Executor ID"], info["Host"])] += 1
    return tasks


def test_executors_in_the_worker_ran_the_build(standalone: Standalone, cluster_build: ClusterBuild) -> None:
    logs = sorted(path.name for path in cluster_build.event_log.parent.iterdir())
    assert cluster_build.event_log.is_file(), f"no finished event log {cluster_build.event_log.name}: {logs}"
    tasks = finished_tasks(cluster_build.event_log)
    print(f"tasks per (executor, host): {dict(tasks)}")
    on_executors = {key: count for key, count in tasks.items() if key[0] != "driver"}
    assert on_executors, f"no task ran on an executor: {dict(tasks)}"
    assert sum(on_executors.values()) == sum(tasks.values()), f"tasks ran in the driver: {dict(tasks)}"
    for executor_id, host in on_executors:
        assert host == HOST
        # The worker launched it: it keeps each executor's logs in <work dir>/<app>/<executor>/.
        executor_dir = standalone.work_dir / cluster_build.app_id / executor_id
        assert (executor_dir / "stderr").is_file(), f"{executor_dir} was not made by the worker"
    state = standalone.state()
    applications = {app["id"] for app in state["activeapps"] + state["completedapps"]}
    assert cluster_build.app_id in applications


def test_cluster_answers_equal_the_local_build(cluster_build: ClusterBuild, built_sample: Project) -> None:
    local = sample_build.answers(built_sample.spark, built_sample.schema)
    assert all(table["rows"] for table in local["rows"].values()), "a compared table is empty"
    cluster = cluster_build.answers
    assert cluster["counts"] == local["counts"]
    for name, expected in local["rows"].items():
        assert cluster["rows"][name]["columns"] == expected["columns"], name
        assert cluster["rows"][name]["rows"] == expected["rows"], name
