"""What the variants must agree on: fingerprints of the tables they produce."""

from __future__ import annotations

from typing import Any

from pyspark.sql import SparkSession

from tooling.bench.config import GOLD_MODEL


def gold_fingerprint(spark: SparkSession, schema: str) -> dict[str, Any]:
    row = spark.sql(
        f"""
        select count(*) as rows, count(distinct event_date) as partitions,
               sum(orders) as orders, cast(sum(net_revenue) as string) as net_revenue,
               sum(hash(event_date, source_system, orders, gross_revenue, refunds, net_revenue))
                   as digest
        from {schema}_gold.{GOLD_MODEL}
        """
    ).collect()[0]
    return row.asDict()


def lookback_window(spark: SparkSession, schema: str, days: int) -> list[str]:
    """The window the static lookback covered in gold_daily_revenue: its last
    ``days`` event dates (see changed_partitions in tooling/bench/lookback.patch)."""
    row = spark.sql(
        f"select cast(date_sub(max(event_date), {days} - 1) as string), "
        f"cast(max(event_date) as string) from {schema}_gold.{GOLD_MODEL}"
    ).collect()[0]
    return [row[0], row[1]]


def silver_fingerprint(spark: SparkSession, schema: str) -> dict[str, Any]:
    """Rows of silver_events and a digest of each key's current values and
    winning bronze row."""
    row = spark.sql(
        f"""
        select count(*) as rows, count_if(is_deleted) as deleted,
               sum(hash(event_id, source_system, event_type, user_id, amount, event_ts, is_deleted,
                        bronze_row_id)) as digest
        from {schema}_silver.silver_events
        """
    ).collect()[0]
    return row.asDict()
