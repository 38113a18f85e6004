"""The warm driver: commands from the shell run in one long-lived Spark driver.

The driver gets a state dir of its own, and every command here is a new
process, as from the shell: the landings, ``dbt build`` (the dbt executable)
and the reads. Each must attach to the driver rather than start a JVM (the
embedded metastore would refuse a second JVM anyway), and the sample built
that way must equal the plain-Python reference.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import datetime
from decimal import Decimal
from pathlib import Path

import pytest

from python_jobs.core import warm_driver
from python_jobs.operations.warm_driver import CHECK_EVERY_S, LOG_FILE, RECYCLE_ENV, WARM_UP_ENV, warm_up_rounds
from python_jobs.operations.warm_up import SCHEMA as WARM_UP_SCHEMA
from tests.pytest import sample_build
from tooling.reference import arrivals_from_lines, expected_daily_revenue

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = "t_warm"
RECYCLE_AFTER = 5
ATTACHED = "latecomer: attached to the warm driver"
RECYCLED = "warm driver: a new JVM after"
OPEN_SESSION = "from python_jobs.core.spark_config import get_spark; get_spark().sql('show databases').collect()"
# What the read process prints: gold's daily revenue, the events the
# sessions hold against the live events they should hold, and the schemas.
READ = f"""
import json
from python_jobs.core.spark_config import get_spark
spark = get_spark()
gold = spark.sql("select cast(event_date as string), source_system, orders, cast(gross_revenue as string),
 cast(refunds as string) from {SCHEMA}_gold.gold_daily_revenue").collect()
in_sessions = spark.sql("select coalesce(sum(event_count), 0) from {SCHEMA}_silver.silver_sessions").first()[0]
live = spark.sql("select count(*) from {SCHEMA}_silver.silver_events
 where not is_deleted and user_id is not null and event_ts is not null").first()[0]
schemas = [row[0] for row in spark.sql("show schemas").collect()]
print(json.dumps({{"gold": [list(row) for row in gold], "in_sessions": in_sessions, "live": live, "schemas": schemas}}))
""".replace("\n ", " ")


def run(args: list[str], env: dict[str, str], timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)


def driver_cli(command: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return run([sys.executable, "-m", "python_jobs.operations.warm_driver", command], env)


@pytest.fixture(scope="module")
def driver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    state = tmp_path_factory.mktemp("warm_driver") / "state"
    env = {
        **os.environ,
        "LATECOMER_STATE_DIR": str(state),
        "LATECOMER_TABLE_FORMAT": "iceberg",
        "LATECOMER_SCHEMA": SCHEMA,
        "PYSPARK_PYTHON": sys.executable,
        # The sample's nine commands see the driver replace its JVM at least once.
        RECYCLE_ENV: str(RECYCLE_AFTER),
        # One round of the warm-up for each of its JVMs (three by default).
        WARM_UP_ENV: "1",
    }
    env.pop("LATECOMER_METASTORE_URI", None)
    started = driver_cli("start", env)
    assert started.returncode == 0, started.stdout + started.stderr
    # Ready only once its warm-up is over.
    assert "warm driver: warmed up in" in (state / LOG_FILE).read_text()
    try:
        yield env
    finally:
        driver_cli("stop", env)


def test_the_sample_built_from_the_shell_through_the_driver_equals_the_reference(
    driver: dict[str, str], tmp_path: Path
) -> None:
    arrivals = []
    for source, path, arrival_ts in sample_build.landing_batches():
        landed = run(
            [sys.executable, "-m", "python_jobs.landing.ingest", "--source", source, "--arrival-ts", arrival_ts]
            + ["--schema", SCHEMA, str(path)],
            driver,
        )
        assert landed.returncode == 0, landed.stderr[-3000:]
        assert ATTACHED in landed.stderr
        arrivals += arrivals_from_lines(
            source, datetime.fromisoformat(arrival_ts), path.name, path.read_text().splitlines()
        )
    # Seven landings, more than the driver serves on one JVM: idle now, it replaces the JVM
    # (it looks every CHECK_EVERY_S), and the build then attaches to the new one.
    log_file = Path(driver["LATECOMER_STATE_DIR"]) / LOG_FILE
    deadline = time.monotonic() + 300
    while RECYCLED not in log_file.read_text():
        assert time.monotonic() < deadline, "no new JVM after the landings:\n" + log_file.read_text()[-3000:]
        time.sleep(CHECK_EVERY_S)

    dbt = str(Path(sys.executable).with_name("dbt"))
    build = run(
        [dbt, "build", "--profiles-dir", "profiles", "--target-path", str(tmp_path / "target")]
        + ["--select", f"{sample_build.SELECT} +silver_sessions", "--exclude", "resource_type:test"]
        + ["--vars", json.dumps(sample_build.BUILD_VARS)],
        {**driver, "DBT_LOG_PATH": str(tmp_path / "logs")},
    )
    assert build.returncode == 0, build.stdout[-5000:] + build.stderr[-3000:]
    assert ATTACHED in build.stderr

    read = run([sys.executable, "-c", READ], driver)
    assert read.returncode == 0, read.stderr[-3000:]
    answers = json.loads(read.stdout.splitlines()[-1])
    gold = {
        (datetime.fromisoformat(day).date(), source): (orders, Decimal(gross), Decimal(refunds))
        for day, source, orders, gross, refunds in answers["gold"]
        if (orders, Decimal(gross), Decimal(refunds)) != (0, 0, 0)
    }
    expected = {key: value for key, value in expected_daily_revenue(arrivals).items() if value != (0, 0, 0)}
    assert gold == expected
    log = (Path(driver["LATECOMER_STATE_DIR"]) / LOG_FILE).read_text()
    recycled = [int(count) for count in re.findall(RECYCLED + r" (\d+) commands", log)]
    assert recycled and all(count >= RECYCLE_AFTER for count in recycled), log[-3000:]
    # Each JVM warmed up, and left nothing of its warm-up behind.
    assert log.count("warm driver: warmed up in") == 1 + len(recycled), log[-3000:]
    assert WARM_UP_SCHEMA not in answers["schemas"] and f"{SCHEMA}_gold" in answers["schemas"]
    # Every live event is in exactly one session: the Python model ran in the driver too.
    assert answers["live"] > 0
    assert answers["in_sessions"] == answers["live"]


def test_a_command_waits_for_the_one_attached_and_then_says_why_it_gave_up(
    driver: dict[str, str], tmp_path: Path
) -> None:
    state = Path(driver["LATECOMER_STATE_DIR"])
    with (state / warm_driver.LOCK_FILE).open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        waited = run(
            [sys.executable, "-c", OPEN_SESSION],
            {**driver, warm_driver.WAIT_ENV: "1"},
        )
    assert waited.returncode != 0
    assert "is serving another command or warming up; waiting up to 1 s" in waited.stderr
    assert "served another command for more than 1 s" in waited.stderr


def test_status_then_stop_then_a_command_starts_its_own_jvm(driver: dict[str, str]) -> None:
    state = Path(driver["LATECOMER_STATE_DIR"])
    status = driver_cli("status", driver)
    assert status.returncode == 0 and "warm driver running" in status.stdout
    handle = warm_driver.read_handle(state)
    assert handle is not None
    assert (state / warm_driver.HANDLE_FILE).stat().st_mode & 0o077 == 0

    stopped = driver_cli("stop", driver)
    assert stopped.returncode == 0 and f"pid {handle.pid}" in stopped.stdout
    assert not warm_driver.serves(handle.pid)
    assert not (state / warm_driver.HANDLE_FILE).exists()
    assert driver_cli("status", driver).returncode == 1

    # The metastore is free again: a command starts its own JVM on the same state dir.
    own = run([sys.executable, "-c", OPEN_SESSION], driver)
    assert own.returncode == 0, own.stderr[-3000:]
    assert ATTACHED not in own.stderr


def test_settings_digest_ignores_jvm_options_and_codegen_only() -> None:
    conf = {"spark.master": "local[2]", "spark.driver.extraJavaOptions": "-XX:+UseParallelGC"}
    same = {**conf, "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1", "spark.sql.codegen.wholeStage": "false"}
    assert warm_driver.settings_digest(conf) == warm_driver.settings_digest(same)
    assert warm_driver.settings_digest(conf) != warm_driver.settings_digest({**conf, "spark.master": "local[4]"})


def test_a_handle_left_by_a_dead_driver_is_removed(tmp_path: Path) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    handle = warm_driver.Handle(int(dead.stdout), 1, "token", "iceberg", "digest", "2024-01-01T00:00:00+00:00")
    warm_driver.write_handle(tmp_path, handle)
    assert (tmp_path / warm_driver.HANDLE_FILE).stat().st_mode & 0o777 == 0o600
    assert warm_driver.read_handle(tmp_path) is None
    assert not (tmp_path / warm_driver.HANDLE_FILE).exists()


def test_the_warm_up_rounds_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(WARM_UP_ENV, raising=False)
    assert warm_up_rounds() == 3
    for value, rounds in (("0", 0), (" 2 ", 2)):
        monkeypatch.setenv(WARM_UP_ENV, value)
        assert warm_up_rounds() == rounds
    monkeypatch.setenv(WARM_UP_ENV, "-1")
    with pytest.raises(SystemExit, match="a whole number"):
        warm_up_rounds()
