"""The report's datasets read from the built tables with Spark SQL.

Each query aggregates in Spark, so only small results reach the driver; a
query whose tables are not built yet returns no rows, which the page shows as
"no data yet". :func:`load_datasets` runs them all into a
:class:`~python_jobs.operations.report_data.ReportData`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from python_jobs.operations.report_data import LATENESS_THRESHOLDS_SECONDS, RESTATEMENT_LIMIT, ReportData, Row

if TYPE_CHECKING:  # pragma: no cover - typing only
    from pyspark.sql import SparkSession

REVENUE_MODEL = "gold_daily_revenue"


def lateness_sql(schema: str) -> str:
    """Per source: parsed events and, per threshold, those at most that late (one wide row)."""
    within = ",\n    ".join(
        f"count_if(lateness_seconds <= {seconds}) as within_{seconds}" for seconds in LATENESS_THRESHOLDS_SECONDS
    )
    return (
        f"select\n    source_system,\n    count(*) as events,\n    {within}\n"
        f"from {schema}_silver.silver_event_arrivals\n"
        "where parse_error is null and lateness_seconds is not null\n"
        "group by source_system"
    )


def lateness_rows(wide_rows: Iterable[Row]) -> list[dict[str, Any]]:
    """:func:`lateness_sql`'s wide rows as the long rows :class:`ReportData` takes."""
    return [
        {
            "source_system": row["source_system"],
            "threshold_seconds": seconds,
            "arrived_within": int(row[f"within_{seconds}"] or 0),
            "events": int(row["events"]),
        }
        for row in wide_rows
        for seconds in LATENESS_THRESHOLDS_SECONDS
    ]


def backtest_sql(schema: str) -> str:
    return (
        "select source_system, metric, horizon_hours, partitions, mean_estimated_completeness,\n"
        "    mean_actual_completeness, mean_absolute_relative_error\n"
        f"from {schema}_gold.gold_completeness_backtest\n"
        "order by metric, source_system, horizon_hours"
    )


def manifest_value(column: str, key: str) -> str:
    """SQL reading one value of a manifest JSON column (row_key, before_values, after_values)."""
    return f"get_json_object({column}, '$.{key}')"


def manifest_money(column: str) -> str:
    return f"cast({manifest_value(column, 'net_revenue')} as decimal(38, 2))"


def restatements_sql(schema: str, limit: int = RESTATEMENT_LIMIT) -> str:
    """Published revenue rows a later run changed, newest first (at most ``limit``)."""
    return (
        # as_of, the run's business time (a replay's as_of is the day it replays), not its wall clock
        "select\n    as_of as run_started_at,\n    partition_value,\n"
        f"    {manifest_value('row_key', 'source_system')} as source_system,\n"
        "    restatement_reason,\n"
        f"    {manifest_money('before_values')} as net_revenue_before,\n"
        f"    {manifest_money('after_values')} as net_revenue_after\n"
        f"from {schema}_audit.gold_change_manifest\n"
        f"where model = '{REVENUE_MODEL}' and change = 'restated'\n"
        "order by as_of desc, partition_value, source_system\n"
        f"limit {int(limit)}"
    )


def live_vs_final_sql(schema: str) -> str:
    """Per event date: first-published net revenue (summed over sources) and the current one."""
    return f"""with manifest as (
    select partition_value, row_key, as_of as run_started_at, after_row_version, after_values
    from {schema}_audit.gold_change_manifest
    where model = '{REVENUE_MODEL}'
),

first_published as (
    select
        partition_value,
        row_key,
        min(run_started_at) as first_published_at,
        min_by(after_values, named_struct('run_started_at', run_started_at, 'version', after_row_version))
            as first_values
    from manifest
    group by partition_value, row_key
),

said_then as (
    select
        partition_value as event_date,
        min(first_published_at) as first_published_at,
        sum({manifest_money("first_values")}) as first_net_revenue
    from first_published
    group by partition_value
),

said_now as (
    select cast(event_date as string) as event_date, sum(net_revenue) as current_net_revenue
    from {schema}_gold.{REVENUE_MODEL}
    group by event_date
)

select
    coalesce(said_then.event_date, said_now.event_date) as event_date,
    said_then.first_published_at,
    said_then.first_net_revenue,
    said_now.current_net_revenue
from said_then
full outer join said_now on said_then.event_date = said_now.event_date
order by event_date"""


def quarantine_sql(schema: str) -> str:
    return (
        "select source_system, quarantine_reason, status, count(*) as row_count\n"
        f"from {schema}_silver.silver_quarantine\n"
        "group by source_system, quarantine_reason, status\n"
        "order by source_system, quarantine_reason, status"
    )


def holds_sql(schema: str) -> str:
    return (
        "select hold_id, partition_value, group_values, state, checks_fired, breaches, first_held_at,\n"
        "    last_judged_at, resolution_reason\n"
        f"from {schema}_audit.publication_holds\n"
        "order by last_judged_at desc"
    )


def as_of_sql(schema: str) -> str:
    return f"select max(as_of) as as_of from {schema}_audit.gold_change_manifest where model = '{REVENUE_MODEL}'"


# Each query and the tables (``<layer>.<table>``) it reads: a missing table means "no data yet".
QUERIES: dict[str, tuple[Callable[[str], str], tuple[str, ...]]] = {
    "lateness": (lateness_sql, ("silver.silver_event_arrivals",)),
    "backtest": (backtest_sql, ("gold.gold_completeness_backtest",)),
    "restatements": (restatements_sql, ("audit.gold_change_manifest",)),
    "live_vs_final": (live_vs_final_sql, ("audit.gold_change_manifest", f"gold.{REVENUE_MODEL}")),
    "quarantine": (quarantine_sql, ("silver.silver_quarantine",)),
    "as_of": (as_of_sql, ("audit.gold_change_manifest",)),
    "holds": (holds_sql, ("audit.publication_holds",)),
}


def query_rows(spark: SparkSession, schema: str, name: str) -> list[dict[str, Any]]:
    """The rows of one query as dicts, or none when a table it reads is not built yet."""
    sql, tables = QUERIES[name]
    if not all(spark.catalog.tableExists(f"{schema}_{table}") for table in tables):
        return []
    return [row.asDict() for row in spark.sql(sql(schema)).collect()]


def load_datasets(spark: SparkSession, schema: str) -> ReportData:
    """The five datasets from ``<schema>_<layer>`` tables, aggregated in Spark."""
    as_of_rows = query_rows(spark, schema, "as_of")
    return ReportData(
        lateness=lateness_rows(query_rows(spark, schema, "lateness")),
        backtest=query_rows(spark, schema, "backtest"),
        restatements=query_rows(spark, schema, "restatements"),
        live_vs_final=query_rows(spark, schema, "live_vs_final"),
        quarantine=query_rows(spark, schema, "quarantine"),
        holds=query_rows(spark, schema, "holds"),
        as_of=as_of_rows[0]["as_of"] if as_of_rows else None,
    )
