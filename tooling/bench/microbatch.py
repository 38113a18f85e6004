"""The dbt microbatch peer: gold daily revenue built by stock dbt-spark.

What a dbt user on Spark would run instead of latecomer (issue 50): the same
revenue per event date and source, as a microbatch model (``batch_size:
day``, ``lookback`` the lookback variant's days, ``partition_by`` the event
date) over latecomer's silver_events, in the dbt project
``tooling/bench/peers/microbatch`` and its profile of ``type: spark``,
``method: session``: stock dbt-spark, not the latecomer adapter, on the
benchmark's own Spark session (so on python_jobs.core.spark_config's
settings). Its table is ``<schema>_peers.microbatch_daily_revenue``.

The benchmark builds it once after the initial build, every day of the
history (part of the starting tables); then the variant runs it as a
schedule would at the late batch's as-of: the batches of the last
``lookback`` days before it, and today's (``--event-time-start`` and
``--event-time-end``, which give the batches dbt itself computes from the
clock). Its input is silver_events with the late batch applied: the silver
tables of the round's first incremental (or lookback) run, put back before
each of its runs (or, when it runs before both, latecomer's silver models run
once for it: :func:`build_late_silver`), so the variant's time is the gold
model's alone.

Where its gold differs from the reference (:func:`wrong_partitions`) is
counted by cause: an event date before the lookback's first batch (an event
later than the lookback is never counted), or a batch whose rows all went
away (a dynamic `insert overwrite` of no rows replaces no partition, so the
stale rows stay).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from python_jobs.core.dbt_runner import DbtRunner
from tooling.bench.config import BenchConfig
from tooling.bench.metrics import NodeTagger
from tooling.bench.project import DbtRun

PROJECT = Path(__file__).resolve().parent / "peers" / "microbatch"
MODEL = "microbatch_daily_revenue"
LAYER = "peers"
MEASURES = ("orders", "gross_revenue", "refunds", "net_revenue")
# dbt-spark sets this for the session before an `insert overwrite`; the
# session is shared with the other variants, so it is put back after.
OVERWRITE_MODE = "spark.sql.sources.partitionOverwriteMode"


def table_of(schema: str) -> str:
    return f"{schema}_{LAYER}.{MODEL}"


def batch_window(as_of: datetime, lookback_days: int) -> tuple[datetime, datetime]:
    """The event-time start and end of a scheduled run at ``as_of``: dbt's
    own (dbt.materializations.incremental.microbatch), the day of ``as_of``
    and the ``lookback_days`` before it."""
    today = datetime.combine(as_of.date(), datetime.min.time(), tzinfo=as_of.tzinfo)
    return today - timedelta(days=lookback_days), as_of


def _dbt_time(value: datetime) -> str:
    return value.strftime("%Y-%m-%dT%H:%M:%S")


def run_microbatch(
    spark: SparkSession,
    cfg: BenchConfig,
    first_date: date,
    start: datetime,
    end: datetime,
) -> DbtRun:
    """``dbt run`` of the peer's project for the batches from ``start`` to
    ``end``, in this process. A failed batch aborts the benchmark."""
    runner = DbtRunner(
        project_dir=PROJECT,
        target="session",
        target_path=cfg.results_dir / f"target-{cfg.table_format}-microbatch",
        log_path=cfg.log_path,
        schema=cfg.schema,
    )
    vars = {"lookback_days": cfg.lookback_days, "begin": first_date.isoformat(), "file_format": cfg.table_format}
    mode = spark.conf.get(OVERWRITE_MODE)
    started = time.perf_counter()
    try:
        result = runner.invoke(
            "run",
            "--event-time-start",
            _dbt_time(start),
            "--event-time-end",
            _dbt_time(end),
            vars=vars,
            callbacks=[NodeTagger(spark)],
            check=False,
        )
    finally:
        seconds = time.perf_counter() - started
        spark.conf.set(OVERWRITE_MODE, mode)
    results = getattr(result.result, "results", None)
    if not result.success or not results:
        messages = [f"{r.node.name}: {r.message}" for r in results or []] or [str(result.exception)]
        raise RuntimeError(f"bench: the dbt microbatch peer failed: {messages}")
    nodes = {
        r.node.name: {
            "type": str(r.node.resource_type),
            "seconds": round(float(r.execution_time or 0.0), 3),
            "status": str(r.status),
            "batches": len(r.batch_results.successful) if r.batch_results else None,
        }
        for r in results
    }
    return DbtRun(seconds=seconds, nodes=nodes)


def build_late_silver(cfg: BenchConfig, vars: Mapping[str, Any]) -> None:
    """latecomer's silver_events and the models it reads, after the late
    batch landed: the silver the peer's variant starts from (the dbt builds
    of the late batch all come to this silver; the report checks it)."""
    runner = DbtRunner(
        project_dir=cfg.project_dir,
        target=cfg.target,
        target_path=cfg.target_path,
        log_path=cfg.log_path,
        schema=cfg.schema,
    )
    runner.invoke("run", "--select", "+silver_events", vars=dict(vars))


def gold_measures(spark: SparkSession, table: str) -> dict[str, list[Any]]:
    """``event_date|source_system`` -> the measures of ``table``'s rows."""
    rows = spark.sql(
        f"select cast(event_date as string) as d, source_system, {', '.join(MEASURES)} from {table}"
    ).collect()
    return {f"{r.d}|{r.source_system}": [_plain(r[m]) for m in MEASURES] for r in rows}


def _plain(value: Any) -> Any:
    """A measure as JSON keeps it (decimals as strings, exact)."""
    return value if value is None or isinstance(value, int | float) else str(value)


def wrong_partitions(
    peer: Mapping[str, Sequence[Any]],
    reference: Mapping[str, Sequence[Any]],
    window_start: str,
) -> dict[str, Any]:
    """The event dates where ``peer``'s measures differ from ``reference``'s
    (a missing row counts as zeros: latecomer keeps a row of zeros where a
    source's events went away), each put down to its cause: ``beyond_lookback``
    (before the first batch ``window_start``, never recomputed), ``emptied``
    (the reference has nothing on the date: the batch returned no rows, and
    overwrote no partition) or ``other`` (neither: a defect of the peer's
    model, to be looked at)."""
    zeros = [0] * len(MEASURES)
    keys = set(peer) | set(reference)
    wrong_rows = sorted(
        k for k in keys if [_number(v) for v in peer.get(k, zeros)] != [_number(v) for v in reference.get(k, zeros)]
    )
    dates = sorted({k.split("|")[0] for k in wrong_rows})

    def has_events(day: str) -> bool:
        return any(_number(v) != 0 for k, row in reference.items() if k.startswith(f"{day}|") for v in row)

    causes: dict[str, list[str]] = {"beyond_lookback": [], "emptied": [], "other": []}
    for day in dates:
        cause = "beyond_lookback" if day < window_start else "other" if has_events(day) else "emptied"
        causes[cause].append(day)
    return {
        "dates": len(dates),
        "rows": len(wrong_rows),
        "dates_total": len({k.split("|")[0] for k in keys}),
        "window_start": window_start,
        **{cause: len(days) for cause, days in causes.items()},
        "date_values": causes,
    }


def _number(value: Any) -> float:
    return float(value) if value is not None else 0.0
