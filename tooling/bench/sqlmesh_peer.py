"""The SQLMesh peer: gold daily revenue as an INCREMENTAL_BY_TIME_RANGE model.

What a SQLMesh user on Spark would run instead of latecomer (issue 50): the
same revenue per event date and source as latecomer's gold_daily_revenue,
over latecomer's silver_events, as a SQLMesh model of kind
INCREMENTAL_BY_TIME_RANGE with a ``lookback`` of the lookback variant's
days, on SQLMesh's Spark engine, its state in its embedded DuckDB.

SQLMesh and its dependencies are not the product's: they are pinned in
tooling/bench/requirements-peers.txt and installed in a venv of their own
(``python3 -m venv .venv-peers && .venv-peers/bin/pip install -r
tooling/bench/requirements-peers.txt``). SQLMesh's Spark engine takes the
process's SparkSession (``SparkSession.builder...getOrCreate()``), so this
module runs in that venv's Python on a session made by
python_jobs.core.spark_config (the benchmark's settings).

``python -m tooling.bench.sqlmesh_peer probe`` (with that venv's Python and
the repository on PYTHONPATH) answers whether it runs on this Spark at all:
a session on its own state dir, a small silver_events, SQLMesh's plan over
its days, then a run at a later clock with a late event inside the lookback
and one beyond it; it prints what it did, how long each step took, and what
failed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
import traceback
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

MODEL = "sqlmesh_daily_revenue"
# Its physical tables are in <schema>_<PHYSICAL_LAYER>, the view in <schema>_peers.
PHYSICAL_LAYER = "sqlmesh"
REPO_ROOT = Path(__file__).resolve().parents[2]
PEERS_VENV = Path(os.environ.get("BENCH_PEERS_VENV", REPO_ROOT / ".venv-peers"))
REQUIREMENTS = REPO_ROOT / "tooling" / "bench" / "requirements-peers.txt"
# SQLMesh's project: its configuration and the model, written per run
# (the schema, start and lookback are the run's).
CONFIG = """\
gateways:
  spark:
    connection:
      type: spark
      # One model: nothing to run side by side (and DuckDB's state wants one thread).
      concurrent_tasks: 1
    state_connection:
      type: duckdb
      database: {state}
default_gateway: spark
model_defaults:
  dialect: spark
# Its physical tables beside the deployment's, so the benchmark captures
# and puts them back as it does every table of the schema.
physical_schema_mapping:
  "^{schema}_peers$": {schema}_{physical}
"""
MODEL_SQL = """\
MODEL (
  name {schema}_peers.{model},
  kind INCREMENTAL_BY_TIME_RANGE (
    time_column event_date,
    lookback {lookback}
  ),
  start '{start}',
  cron '@daily',
  partitioned_by event_date,
  table_format {table_format},
  grain (event_date, source_system)
);

SELECT
  event_date,
  source_system,
  COUNT_IF(event_type = 'order_placed') AS orders,
  COALESCE(SUM(CASE WHEN event_type = 'order_placed' THEN amount END), 0) AS gross_revenue,
  COALESCE(SUM(CASE WHEN event_type = 'refund' THEN amount END), 0) AS refunds,
  COALESCE(SUM(CASE WHEN event_type = 'order_placed' THEN amount END), 0)
  - COALESCE(SUM(CASE WHEN event_type = 'refund' THEN amount END), 0) AS net_revenue
FROM {schema}_silver.silver_events
WHERE NOT is_deleted AND event_date BETWEEN @start_ds AND @end_ds
GROUP BY event_date, source_system
"""


def write_project(folder: Path, schema: str, start: date, lookback_days: int, table_format: str) -> Path:
    """SQLMesh's project for ``schema``: its state in ``folder/state.duckdb``."""
    (folder / "models").mkdir(parents=True, exist_ok=True)
    (folder / "config.yaml").write_text(
        CONFIG.format(state=folder / "state.duckdb", schema=schema, physical=PHYSICAL_LAYER)
    )
    (folder / "models" / f"{MODEL}.sql").write_text(
        MODEL_SQL.format(
            schema=schema, model=MODEL, lookback=lookback_days, start=start.isoformat(), table_format=table_format
        )
    )
    return folder


def import_sqlmesh() -> Any:
    """SQLMesh, from the peers' venv (PEERS_VENV) when this Python lacks it:
    its site-packages go last on the path, so the benchmark's own packages
    keep their versions."""
    try:
        import sqlmesh
    except ImportError:
        # Its compiled packages (DuckDB, pydantic-core) are built for one Python: this one.
        found = sorted(PEERS_VENV.glob(f"lib/python{sys.version_info.major}.{sys.version_info.minor}/site-packages"))
        if not found:
            raise RuntimeError(
                f"bench: the sqlmesh peer needs SQLMesh in {PEERS_VENV}: python3 -m venv {PEERS_VENV} && "
                f"{PEERS_VENV}/bin/pip install -r {REQUIREMENTS}"
            ) from None
        sys.path.append(str(found[0]))
        import sqlmesh
    return sqlmesh


class SqlmeshPeer:
    """The model in a SQLMesh project of the run's (``folder``), on the
    process's Spark session: its table in ``<schema>_sqlmesh`` (a view of it
    in ``<schema>_peers``), its state in ``folder/state.duckdb``, which
    :meth:`capture` copies and :meth:`put_back` puts back, as the benchmark
    does with the tables."""

    def __init__(self, folder: Path, schema: str, first_date: date, lookback_days: int, table_format: str) -> None:
        import_sqlmesh()
        self.folder = folder
        self.view = f"{schema}_peers.{MODEL}"
        shutil.rmtree(folder, ignore_errors=True)
        write_project(folder, schema, first_date, lookback_days, table_format)
        self.first_date = first_date
        self.lookback_days = lookback_days

    @property
    def state(self) -> Path:
        return self.folder / "state.duckdb"

    def capture(self) -> None:
        shutil.copyfile(self.state, self.state.with_suffix(".start"))

    def put_back(self) -> None:
        shutil.copyfile(self.state.with_suffix(".start"), self.state)

    def _context(self) -> Any:
        from sqlmesh import Context

        return Context(paths=str(self.folder))

    def build(self, spark: Any, as_of: datetime) -> float:
        """SQLMesh's first plan of prod: every day from the first to ``as_of``'s."""
        started = time.perf_counter()
        with _session_settings(spark):
            context = self._context()
            try:
                # A first plan of prod backfills from the model's start; it takes no start or end.
                context.plan("prod", execution_time=as_of, auto_apply=True, no_prompts=True)
            finally:
                context.close()
        return time.perf_counter() - started

    def run(self, spark: Any, as_of: datetime) -> tuple[float, dict[str, Any]]:
        """``sqlmesh run`` as its daily schedule would after ``as_of``: after
        the next midnight (UTC), when the day of ``as_of`` is complete: that
        day's interval is missing, and the ``lookback`` days before it run again."""
        execution_time = run_time(as_of)
        started = time.perf_counter()
        with _session_settings(spark):
            context = self._context()
            try:
                status = context.run("prod", execution_time=execution_time, skip_janitor=True)
            finally:
                context.close()
        seconds = time.perf_counter() - started
        if getattr(status, "is_failure", False):
            raise RuntimeError(f"bench: sqlmesh run failed: {status}")
        return seconds, {"execution_time": execution_time.isoformat(), "status": str(status)}


def run_time(as_of: datetime) -> datetime:
    """When a daily SQLMesh schedule next runs after ``as_of``: half an hour after its next midnight."""
    midnight = datetime.combine(as_of.date() + timedelta(days=1), datetime.min.time(), tzinfo=as_of.tzinfo)
    return midnight + timedelta(minutes=30)


def window_start(as_of: datetime, lookback_days: int) -> date:
    """The first event date that run recomputes: the day of ``as_of`` less ``lookback_days``."""
    return as_of.date() - timedelta(days=lookback_days)


@contextmanager
def _session_settings(spark: Any) -> Iterator[None]:
    """SQLMesh's Spark cursor sets these for the session it shares; the
    other variants get them back as they were."""
    keys = (
        "spark.sql.sources.partitionOverwriteMode",
        "hive.exec.dynamic.partition",
        "hive.exec.dynamic.partition.mode",
    )
    saved = {key: spark.conf.get(key, None) for key in keys}
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


def probe(table_format: str, lookback_days: int, folder: Path) -> dict[str, Any]:
    """Whether SQLMesh builds and reruns the model on this Spark (see the module's doc)."""
    os.environ["LATECOMER_STATE_DIR"] = str(folder / "state")
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    out: dict[str, Any] = {"table_format": table_format, "lookback_days": lookback_days, "steps": {}}
    steps: dict[str, Any] = out["steps"]

    def step(name: str, fn: Any) -> Any:
        started = time.perf_counter()
        try:
            value = fn()
        except Exception as exc:
            steps[name] = {"seconds": round(time.perf_counter() - started, 1), "error": repr(exc)[:2000]}
            steps[name]["traceback"] = traceback.format_exc()[-4000:]
            raise
        steps[name] = {"seconds": round(time.perf_counter() - started, 1), "ok": True}
        return value

    import pyspark
    import sqlglot
    import sqlmesh

    out["versions"] = {"sqlmesh": sqlmesh.__version__, "sqlglot": sqlglot.__version__, "pyspark": pyspark.__version__}
    from python_jobs.core.spark_config import get_spark

    spark = step("spark session", lambda: get_spark(table_format))
    schema = "probe"
    days = [date(2026, 1, 1) + timedelta(days=i) for i in range(30)]
    try:

        def silver() -> None:
            spark.sql(f"create database if not exists {schema}_silver")
            spark.sql(f"create database if not exists {schema}_peers")
            rows = [
                (f"e{i}", "web", "order_placed", 10.0 + i, datetime(d.year, d.month, d.day, 12), d, False)
                for i, d in enumerate(days)
            ]
            frame = spark.createDataFrame(
                rows,
                "event_id string, source_system string, event_type string, amount double, "
                "event_ts timestamp, event_date date, is_deleted boolean",
            )
            frame.writeTo(f"{schema}_silver.silver_events").using(table_format).partitionedBy(
                frame.event_date
            ).createOrReplace()

        step("silver_events", silver)
        peer = step("project", lambda: SqlmeshPeer(folder / "project", schema, days[0], lookback_days, table_format))
        first_as_of = datetime.combine(days[-1] + timedelta(days=1), datetime.min.time()) + timedelta(minutes=30)
        step("plan (every day)", lambda: peer.build(spark, first_as_of))
        table = peer.view
        out["rows_after_plan"] = step("read after plan", lambda: spark.table(table).count())
        # Late events: one inside the lookback, one beyond it; then the next day's run.
        inside, beyond = days[-2], days[-1] - timedelta(days=lookback_days + 3)
        late = spark.createDataFrame(
            [
                (
                    "late-in",
                    "web",
                    "order_placed",
                    1000.0,
                    datetime(inside.year, inside.month, inside.day, 9),
                    inside,
                    False,
                ),
                (
                    "late-out",
                    "web",
                    "order_placed",
                    1000.0,
                    datetime(beyond.year, beyond.month, beyond.day, 9),
                    beyond,
                    False,
                ),
            ],
            spark.table(f"{schema}_silver.silver_events").schema,
        )
        step("late events", lambda: late.writeTo(f"{schema}_silver.silver_events").append())
        out["run"] = step("run (next day)", lambda: peer.run(spark, first_as_of))
        got = {
            str(r.event_date): float(r.gross_revenue)
            for r in spark.sql(f"select event_date, gross_revenue from {table}").collect()
        }
        out["late_inside_counted"] = got.get(str(inside), 0.0) >= 1000.0
        out["late_beyond_counted"] = got.get(str(beyond), 0.0) >= 1000.0
        out["ok"] = True
    except Exception:
        out["ok"] = False
    finally:
        spark.stop()
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tooling.bench.sqlmesh_peer")
    parser.add_argument("command", choices=("probe",))
    parser.add_argument("--format", default="iceberg", choices=("iceberg", "delta"))
    parser.add_argument("--lookback-days", type=int, default=2)
    parser.add_argument("--dir", type=Path, help="its state dir and project (default: a new temporary folder)")
    args = parser.parse_args(argv)
    folder = args.dir or Path(tempfile.mkdtemp(prefix="sqlmesh-probe-"))
    result = probe(args.format, args.lookback_days, folder.resolve())
    print(json.dumps(result, indent=1, default=str))
    return 0 if result.get("ok") else 1


if __name__ == "__main__":
    sys.exit(main())
