"""Estimated completeness and final value of each non-final partition (python_jobs.core.completeness)."""

from pyspark.sql import functions as F

from python_jobs.core.completeness import completeness_at, lateness_summary, live_arrival_values, parse_as_of


def model(dbt, session):
    dbt.config(materialized="recomputed")
    as_of = parse_as_of(dbt.config.meta_get("as_of"))
    window_days = int(dbt.config.meta_get("completeness_window_days"))
    estimates = completeness_at(
        live_arrival_values(dbt.ref("silver_arrival_values")),
        as_of,
        horizon_hours=float(dbt.config.meta_get("completeness_horizon_hours")),
        window_days=window_days,
        interval=float(dbt.config.meta_get("completeness_interval")),
    )
    lateness = lateness_summary(dbt.ref("stg_bronze_events"), as_of, window_days)
    return estimates.join(F.broadcast(lateness), on="source_system", how="left")
