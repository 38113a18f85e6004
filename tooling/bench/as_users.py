"""The late batch and a build with nothing new as a schedule runs them: each
``dbt build`` a new process (issue 50, item 4).

The benchmark's variants run in its own process, whose JVM is warm after the
initial build. A scheduled ``dbt build`` is a new process instead: Python and
dbt start, dbt reads its partial parse, the adapter starts a JVM (the ``job``
or ``short`` profile, chosen by the store's size, as for any user), and that
JVM compiles the build's code as it goes. This phase times exactly that
command, from its start to its exit, beside the in-process figures.

It runs after the in-process variants, once the benchmark's own JVM has
exited: the embedded metastore admits one process at a time. Each timed
build is preceded by a child process of its own that puts the tables back to
the variant's starting state (the restore points the in-process run
recorded) and first reads the gold and silver fingerprints the previous
build left, so every build here is checked against the same variant's
in-process result. Neither child is timed. Each repeat runs the two kinds,
the first of them alternating, and every build starts its own JVM: none of
them gets another's warm-up.

``as_of`` reaches dbt as ``LATECOMER_AS_OF``, the clock a scheduled build
reads, and the publication gate's var as in the benchmark's own builds; an
untimed ``dbt parse`` with those vars first leaves the partial parse that a
schedule's previous build would have left.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import partial
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from python_jobs.core.dbt_runner import AS_OF_ENV, SCHEMA_ENV, DbtRunner
from tooling.bench.config import AS_USERS_MODES, FORMATS, NOTHING_NEW, BenchConfig

LATE = "incremental"
# The in-process variants measured again as a schedule runs them.
KINDS = (LATE, NOTHING_NEW)
COLD, SERVER, DRIVER = MODES = AS_USERS_MODES
# Through the Thrift server: its dbt target, and what that target cannot
# build (dbt-spark runs Python models in a session only). Iceberg only: a
# Delta table is put back by changing its folder's files, which a running
# server's cached log would not see (tooling.bench.delta_state).
SERVER_TARGET = "thrift"
SERVER_EXCLUDE = "tag:python"
SERVER_FORMATS = ("iceberg",)
# Attached to a warm driver: Iceberg only, for the same reason (the driver's
# JVM caches Delta's log as the server's does).
DRIVER_FORMATS = ("iceberg",)
# A dbt run_results.json status that fails the benchmark.
FAILED = ("fail", "error")


def restore_points(late_start: Mapping[str, Any], baseline: Mapping[str, Any]) -> dict[str, dict[str, str]]:
    """Per kind, each table's pointer (TableState.pointer) at the kind's start,
    which :func:`restore` puts back in another process."""
    return {
        LATE: {table: state.pointer for table, state in late_start.items()},
        NOTHING_NEW: {table: state.pointer for table, state in baseline.items()},
    }


def order(repeat: int) -> tuple[str, ...]:
    """The kinds in repeat ``repeat`` (from 0): the first alternates."""
    return KINDS if repeat % 2 == 0 else KINDS[::-1]


def build_command(
    cfg: BenchConfig,
    vars: Mapping[str, Any],
    target_path: Path,
    target: str | None = None,
    exclude: str | None = None,
) -> list[str]:
    """The ``dbt build`` a user runs, on the benchmark's project copy and
    target (or ``target``), without ``exclude``."""
    options: list[str] = []
    if not cfg.with_tests:
        options += ["--exclude-resource-type", "test", "--exclude-resource-type", "unit_test"]
    if cfg.select:
        options += ["--select", cfg.select]
    if exclude:
        options += ["--exclude", exclude]
    return dbt_command(cfg, "build", *options, vars=vars, target_path=target_path, target=target)


def dbt_command(
    cfg: BenchConfig, *args: str, vars: Mapping[str, Any], target_path: Path, target: str | None = None
) -> list[str]:
    """``dbt *args`` from the shell, on the benchmark's project copy."""
    runner = DbtRunner(
        project_dir=cfg.project_dir, target=target or cfg.target, target_path=target_path, log_path=cfg.log_path
    )
    return [str(Path(sys.executable).with_name("dbt")), *runner.command(*args, vars=dict(vars))]


def failed_nodes(run_results: Path) -> list[str]:
    """The nodes of a build's run_results.json that failed, with their messages."""
    results = json.loads(run_results.read_text())["results"]
    return [f"{r['unique_id']}: {r['status']}: {r.get('message')}" for r in results if r["status"] in FAILED]


def measure(
    cfg: BenchConfig,
    report: Mapping[str, Any],
    vars_of: Callable[[str], tuple[str, dict[str, Any]]],
    repeat: int,
    modes: Sequence[str] = MODES,
) -> dict[str, Any]:
    """Time ``repeat`` builds of each kind in each of ``modes``; returns the
    report's ``as_users`` section. ``vars_of(kind)`` is the kind's ``as_of``
    and its other vars, as the in-process builds got them."""
    work = cfg.results_dir / f"as-users-{cfg.table_format}"
    work.mkdir(parents=True, exist_ok=True)
    points = work / "restore-points.json"
    points.write_text(json.dumps(report["restore_points"]))
    expected = {kind: _in_process_prints(report, kind) for kind in KINDS}
    runs: list[dict[str, Any]] = []
    if COLD in modes:
        runs += _cold(cfg, vars_of, repeat, points, work, expected)
    if SERVER in modes and cfg.table_format in SERVER_FORMATS:
        runs += _server(cfg, report, vars_of, repeat, expected)
    if DRIVER in modes and cfg.table_format in DRIVER_FORMATS:
        with _warm_driver(cfg):
            runs += _cold(cfg, vars_of, repeat, points, work, expected, mode=DRIVER)
    return {"runs": runs, "summary": summarize(runs)}


def _cold(
    cfg: BenchConfig,
    vars_of: Callable[[str], tuple[str, dict[str, Any]]],
    repeat: int,
    points: Path,
    work: Path,
    expected: Mapping[str, Any],
    mode: str = COLD,
) -> list[dict[str, Any]]:
    """Each build a new process; the tables put back by a child process before each.

    With a warm driver running (``mode`` DRIVER), every process attaches to
    it, and one untimed build of each kind warms it first.
    """
    target_path = cfg.results_dir / f"target-{cfg.table_format}-{mode}"
    env = _user_env(cfg)
    # What a schedule's previous build leaves: the partial parse for these vars.
    as_of, vars = vars_of(LATE)
    parse = dbt_command(cfg, "parse", vars=vars, target_path=target_path)
    parsed = subprocess.run(parse, env={**env, AS_OF_ENV: as_of}, capture_output=True, text=True)
    if parsed.returncode != 0:
        output = parsed.stdout[-2000:] + parsed.stderr[-2000:]
        raise RuntimeError(f"dbt parse failed (exit {parsed.returncode}): {output}")
    runs: list[dict[str, Any]] = []
    where = "attached to a warm driver" if mode == DRIVER else "in a new process"
    for number in range(-1 if mode == DRIVER else 0, repeat):  # -1: the driver's warm-up, untimed
        for kind in order(max(number, 0)):
            _check(runs, _restore(cfg, points, kind, work, check=bool(runs)), expected)
            cfg.log(f"bench: as users run it, {'warm-up' if number < 0 else f'{number + 1}/{repeat}'}: "
                    f"{kind}, dbt build {where}")  # fmt: skip
            as_of, vars = vars_of(kind)
            seconds = _timed_build(build_command(cfg, vars, target_path), target_path, env, as_of, f"{kind}, {mode}")
            run = {"mode": mode, "kind": kind, "repeat": number + 1, "seconds": seconds}
            runs.append(run | ({"warm_up": True} if number < 0 else {}))
    # The last build's result is read, and the late batch's start put back, as the in-process runs leave it.
    _check(runs, _restore(cfg, points, LATE, work, check=bool(runs)), expected)
    return [run for run in runs if not run.get("warm_up")]


@contextlib.contextmanager
def _warm_driver(cfg: BenchConfig) -> Iterator[None]:
    """A warm driver on the benchmark's state dir while the block runs."""
    env = _user_env(cfg)
    driver = [sys.executable, "-m", "python_jobs.operations.warm_driver"]
    subprocess.run([*driver, "start", "--table-format", cfg.table_format, "--timeout", "600"], env=env, check=True)
    try:
        yield
    finally:
        subprocess.run([*driver, "stop"], env=env, check=False)


def _server(
    cfg: BenchConfig,
    report: Mapping[str, Any],
    vars_of: Callable[[str], tuple[str, dict[str, Any]]],
    repeat: int,
    expected: Mapping[str, Any],
) -> list[dict[str, Any]]:
    """Each build a new dbt process through one Thrift server, warmed first by
    an untimed build of each kind; the tables put back through the server."""
    from pyhive import hive

    from tooling.bench.formats import table_format

    port = _free_port()
    env = _user_env(cfg) | {"LATECOMER_THRIFT_PORT": str(port)}
    server = [sys.executable, "-m", "python_jobs.operations.thrift_server"]
    subprocess.run([*server, "start", "--port", str(port), "--table-format", cfg.table_format, "--timeout", "600"],
                   env=env, check=True)  # fmt: skip
    try:
        connection = hive.connect(host="127.0.0.1", port=port, username="bench")
        sql = ServerSql(connection.cursor())
        fmt = table_format(sql, cfg.table_format)  # type: ignore[arg-type]
        target_path = cfg.results_dir / f"target-{cfg.table_format}-{SERVER}"
        command = partial(build_command, cfg, target_path=target_path, target=SERVER_TARGET, exclude=SERVER_EXCLUDE)
        runs: list[dict[str, Any]] = []
        for number in range(-1, repeat):  # -1: the warm-up, untimed
            for kind in order(max(number, 0)):
                _check(runs, put_back(sql, fmt, cfg.schema, report["restore_points"][kind], bool(runs)), expected)
                cfg.log(f"bench: as users run it, {'warm-up' if number < 0 else f'{number + 1}/{repeat}'}: "
                        f"{kind}, dbt build through a Thrift server")  # fmt: skip
                as_of, vars = vars_of(kind)
                seconds = _timed_build(command(vars), target_path, env, as_of, f"{kind}, {SERVER}")
                run = {"mode": SERVER, "kind": kind, "repeat": number + 1, "seconds": seconds}
                runs.append(run | ({"warm_up": True} if number < 0 else {}))
        _check(runs, put_back(sql, fmt, cfg.schema, report["restore_points"][LATE], True), expected)
        connection.close()
    finally:
        subprocess.run([*server, "stop"], env=env, check=False)
    return [run for run in runs if not run.get("warm_up")]


def _user_env(cfg: BenchConfig) -> dict[str, str]:
    """A user's environment: the benchmark's own Spark options (it keeps every query's metrics) left out."""
    return {key: value for key, value in os.environ.items() if key != "PYSPARK_SUBMIT_ARGS"} | {SCHEMA_ENV: cfg.schema}


def _timed_build(command: list[str], target_path: Path, env: Mapping[str, str], as_of: str, label: str) -> float:
    """Run one build (``command``, writing to ``target_path``), from its start
    to its exit; a failed node fails the benchmark."""
    (target_path / "run_results.json").unlink(missing_ok=True)
    started = time.perf_counter()
    done = subprocess.run(command, env={**env, AS_OF_ENV: as_of})
    seconds = round(time.perf_counter() - started, 3)
    print(f"bench:   {seconds:.1f} s", flush=True)
    results = target_path / "run_results.json"
    failing = failed_nodes(results) if results.exists() else ["no run_results.json"]
    if done.returncode != 0 or failing:
        raise RuntimeError(f"dbt build ({label}) failed (exit {done.returncode}): {failing}")
    return seconds


def summarize(runs: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per mode and kind: median, min and max seconds, and whether every
    build's gold and silver equal the in-process build's."""
    out: dict[str, dict[str, Any]] = {}
    for mode in MODES:
        for kind in KINDS:
            mine = [r for r in runs if r["mode"] == mode and r["kind"] == kind]
            if not mine:
                continue
            seconds = [r["seconds"] for r in mine]
            out.setdefault(mode, {})[kind] = {
                "build_seconds": round(statistics.median(seconds), 3),
                "build_seconds_min": min(seconds),
                "build_seconds_max": max(seconds),
                "runs": len(mine),
                "same_as_in_process": all(r.get("same_as_in_process") for r in mine),
            }
    return out


def _in_process_prints(report: Mapping[str, Any], kind: str) -> list[dict[str, Any]]:
    return [
        _as_json({"gold": r["gold_fingerprint"], "silver": r["silver_fingerprint"]})
        for r in report.get("runs", [])
        if r["variant"] == kind
    ]


def _as_json(value: Any) -> Any:
    """``value`` as it reads back from the report's JSON (dates and decimals as text)."""
    return json.loads(json.dumps(value, default=str))


def _check(runs: list[dict[str, Any]], prints: dict[str, Any] | None, expected: Mapping[str, Any]) -> None:
    """Record on the last run whether the tables it left equal the in-process build's."""
    if not runs or prints is None:
        return
    last = runs[-1]
    last["same_as_in_process"] = bool(expected[last["kind"]]) and all(prints == e for e in expected[last["kind"]])
    if not last["same_as_in_process"]:
        raise RuntimeError(
            f"dbt build ({last['kind']}, {last['mode']}) left other tables than in process: {prints} "
            f"against {expected[last['kind']]}"
        )


def _restore(cfg: BenchConfig, points: Path, kind: str, work: Path, check: bool) -> dict[str, Any] | None:
    """Put the tables back to ``kind``'s start in a child process; with
    ``check``, return the fingerprints the tables had before."""
    out = work / "fingerprints.json"
    out.unlink(missing_ok=True)
    command = [
        sys.executable, "-m", "tooling.bench.as_users", "restore",
        "--format", cfg.table_format, "--schema", cfg.schema, "--points", str(points), "--kind", kind,
    ]  # fmt: skip
    if check:
        command += ["--fingerprints", str(out)]
    subprocess.run(command, check=True)
    return json.loads(out.read_text()) if check else None


def restore(table_format: str, schema: str, points: Path, kind: str, fingerprints: Path | None) -> None:
    """The child's work: read the fingerprints (when asked), then put back."""
    from python_jobs.core.spark_config import get_spark
    from tooling.bench.formats import table_format as format_of

    spark = get_spark(table_format, jvm_profile="short")
    try:
        pointers = json.loads(points.read_text())[kind]
        prints = put_back(spark, format_of(spark, table_format), schema, pointers, fingerprints is not None)
        if fingerprints is not None:
            fingerprints.write_text(json.dumps(prints))
    finally:
        spark.stop()


# Statements the put-back sends whose result has no rows.
NO_ROWS = ("drop", "refresh", "clear")


class ServerSql:
    """The few calls of a SparkSession that the table formats' put-back
    makes (tooling.bench.state), over a connection to a Thrift server."""

    def __init__(self, cursor: Any) -> None:
        self.cursor = cursor
        self.catalog = self

    def sql(self, text: str) -> SimpleNamespace:
        from pyspark.sql import Row

        self.cursor.execute(text)
        # Spark's server describes a result even for a statement that has no
        # rows (drop, refresh, clear cache), and PyHive fails fetching it.
        names = [column[0].split(".")[-1] for column in self.cursor.description or ()]
        if not names or text.split(None, 1)[0].lower() in NO_ROWS:
            return SimpleNamespace(collect=list)
        rows = [Row(*names)(*values) for values in self.cursor.fetchall()]
        return SimpleNamespace(collect=lambda: rows)

    def tableExists(self, table: str) -> bool:  # noqa: N802 (SparkSession.catalog's name)
        db, name = table.split(".")
        return any(row.tableName == name for row in self.sql(f"show tables in {db} like '{name}'").collect())

    def clearCache(self) -> None:  # noqa: N802 (SparkSession.catalog's name)
        self.sql("clear cache")


def put_back(session: Any, fmt: Any, schema: str, pointers: Mapping[str, str], check: bool) -> dict[str, Any] | None:
    """On ``session`` (a SparkSession, or :class:`ServerSql`): with ``check``,
    the gold and silver fingerprints the tables have, as JSON reads them
    back; then every table put back to its pointer (``fmt``'s restore)."""
    from tooling.bench.checks import gold_fingerprint, silver_fingerprint

    prints = None
    if check:
        prints = _as_json({"gold": gold_fingerprint(session, schema), "silver": silver_fingerprint(session, schema)})
    fmt.restore({table: fmt.state_of_pointer(table, pointer) for table, pointer in pointers.items()}, schema)
    return prints


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def stop_jvm(spark: Any) -> None:
    """Stop the session and end its JVM, so another process can open the
    embedded metastore (``spark.stop()`` leaves the JVM, and Derby, running)."""
    from pyspark import SparkContext

    spark.stop()
    gateway = SparkContext._gateway
    if gateway is None:
        return
    process = getattr(gateway, "proc", None)
    gateway.shutdown()
    if process is not None:
        process.terminate()
        process.wait(timeout=60)
    SparkContext._gateway = None
    SparkContext._jvm = None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tooling.bench.as_users")
    commands = parser.add_subparsers(dest="command", required=True)
    put_back = commands.add_parser("restore", help="put the tables back to a kind's start (a child of make bench)")
    put_back.add_argument("--format", choices=FORMATS, required=True)
    put_back.add_argument("--schema", required=True)
    put_back.add_argument("--points", type=Path, required=True)
    put_back.add_argument("--kind", choices=KINDS, required=True)
    put_back.add_argument("--fingerprints", type=Path, help="write the tables' fingerprints here first")
    args = parser.parse_args(argv)
    restore(args.format, args.schema, args.points, args.kind, args.fingerprints)
    return 0


if __name__ == "__main__":
    sys.exit(main())
