"""The floor: the least work that applies a late batch, as a plain PySpark job.

What any pipeline must at least do with the late batch, with none of the
project's bookkeeping (no arrival ledger, quarantine, change log, audit,
versions, gate or manifest) and not through dbt:

1. read the late batch's bronze rows (its ingestion ids, in its arrival-date
   partitions) and keep the usable ones (parsed, keyed, inside the last
   watermark tier);
2. per key (event_id or the surrogate key, source), pick the row that wins:
   deletion over correction over original, then the later arrival (the
   precedence silver_events applies; corrections are taken to name the
   original, as every correction in the synthetic late batch does);
3. MERGE the winners into silver_events, where they beat the stored row;
4. recompute the revenue of the event dates touched (the winners' dates and
   the dates their keys had) and MERGE it into gold_daily_revenue and
   gold_hourly_revenue, then the weeks and months of those dates into
   gold_weekly_revenue and gold_monthly_revenue; measures only, the other
   columns of a stored row stay as they are.

The gold models the deployment lacks (e.g. under --smoke's selection) are
skipped. The rules above restate the models' (silver_events, the keys and
revenue macros) in a few lines each, which a floor has to: it is the
yardstick the dbt build is measured against, so it must not share its code.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import Any

import yaml
from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from python_jobs.core.constants import REVENUE_MEASURES
from tooling.bench.metrics import tagged

SILVER = "silver_events"
KEY = ["event_id", "source_system"]
MEASURES = REVENUE_MEASURES
# gold table -> (its key columns, the grain it is recomputed at)
GOLD = {
    "gold_daily_revenue": (["event_date", "source_system"], "day"),
    "gold_hourly_revenue": (["event_date", "event_hour", "source_system"], "day"),
    "gold_weekly_revenue": (["week_start_date", "source_system"], "week"),
    "gold_monthly_revenue": (["month_start_date", "source_system"], "month"),
}


@dataclass
class FloorRun:
    seconds: float
    late_rows: int  # usable bronze rows of the late batch
    keys_merged: int  # silver rows inserted or updated
    touched_dates: list[str]
    gold_tables: list[str] = field(default_factory=list)
    steps: dict[str, float] = field(default_factory=dict)  # wall seconds per step


def watermark_tiers(project_dir: Path) -> list[tuple[str, float]]:
    """(name, lateness hours) of the project's watermark tiers, in order."""
    project = yaml.safe_load((project_dir / "dbt_project.yml").read_text())
    return [(tier["name"], float(tier["lateness_hours"])) for tier in project["vars"]["watermark_tiers"]]


def surrogate_key(source: Column, event_type: Column, user_id: Column, event_ts: Column, amount: Column) -> Column:
    """'sk_' + SHA-256 of source, type, user, UTC time and amount (macros/keys.sql)."""
    text = F.concat_ws(
        "|",
        source,
        event_type,
        user_id,
        F.date_format(event_ts, "yyyy-MM-dd HH:mm:ss.SSSSSS"),
        F.coalesce(amount.cast("string"), F.lit("")),
    )
    return F.concat(F.lit("sk_"), F.sha2(text, 256))


def usable_rows(bronze: DataFrame, tiers: Sequence[tuple[str, float]]) -> DataFrame:
    """Bronze rows keyed and ranked like silver's: target key, record kind,
    precedence, lateness and watermark tier; unusable rows dropped."""
    has_fields = F.col("user_id").isNotNull() & F.col("event_ts").isNotNull() & F.col("event_type").isNotNull()
    event_key = F.coalesce(
        F.col("event_id"),
        F.when(
            has_fields,
            surrogate_key(
                F.col("source_system"), F.col("event_type"), F.col("user_id"), F.col("event_ts"), F.col("amount")
            ),
        ),
    )
    record_kind = (
        F.when(F.col("is_deleted"), "deletion").when(F.col("is_correction"), "correction").otherwise("original")
    )
    lateness = F.greatest(F.unix_timestamp("arrival_ts") - F.unix_timestamp("event_ts"), F.lit(0))
    tier = F.lit("beyond_watermark")
    for name, hours in reversed(tiers):
        tier = F.when(F.col("lateness_seconds") <= hours * 3600, name).otherwise(tier)
    is_usable = (
        F.col("parse_error").isNull()
        & F.col("target_event_id").isNotNull()
        & (F.col("lateness_seconds") <= tiers[-1][1] * 3600)
    )
    return (
        bronze.withColumn("event_key", event_key)
        .withColumn("record_kind", record_kind)
        .withColumn(
            "target_event_id",
            F.when(F.col("record_kind") == "original", F.col("event_key")).otherwise(
                F.coalesce(F.col("corrects_event_id"), F.col("event_key"))
            ),
        )
        .withColumn(
            "precedence",
            F.when(F.col("record_kind") == "deletion", 3).when(F.col("record_kind") == "correction", 2).otherwise(1),
        )
        .withColumn("lateness_seconds", lateness)
        .withColumn("watermark_tier", tier)
        .withColumn("event_date", F.to_date("event_ts"))
        .where(is_usable)
    )


def winners(rows: DataFrame) -> DataFrame:
    """One row per key: the highest precedence, then the latest arrival (ties:
    higher ingestion id, later line), with the key's count of rows and first
    arrival."""
    per_key = Window.partitionBy("target_event_id", "source_system")
    ranked = per_key.orderBy(
        F.col("precedence").desc(),
        F.col("arrival_ts").desc(),
        F.col("ingestion_id").desc(),
        F.col("line_number").desc(),
    )
    return (
        rows.withColumn("batch_rank", F.row_number().over(ranked))
        .withColumn("new_versions", F.count(F.lit(1)).over(per_key))
        .withColumn("batch_first_arrival_ts", F.min("arrival_ts").over(per_key))
        .where(F.col("batch_rank") == 1)
    )


def _order(prefix: str) -> Column:
    return F.struct(*[F.col(f"{prefix}.{c}") for c in ("precedence", "arrival_ts", "ingestion_id", "line_number")])


def silver_rows(fresh: DataFrame, stored: DataFrame, columns: Sequence[tuple[str, str]], as_of: datetime) -> DataFrame:
    """The silver_events rows to write: winners that beat the stored row of
    their key (or have none), in the table's columns (``columns``: name and
    type). Columns the floor does not compute keep the stored value."""
    joined = fresh.alias("new").join(
        stored.alias("old"),
        (F.col("new.target_event_id") == F.col("old.event_id"))
        & (F.col("new.source_system") == F.col("old.source_system")),
        how="left",
    )
    is_known = F.col("old.event_id").isNotNull()
    new_wins = ~is_known | (_order("new") > _order("old"))
    new = {
        name: F.col(f"new.{name}")
        for name in (
            "event_type",
            "user_id",
            "amount",
            "event_ts",
            "event_date",
            "record_kind",
            "precedence",
            "arrival_ts",
            "ingested_at",
            "ingestion_id",
            "line_number",
            "bronze_row_id",
            "lateness_seconds",
            "watermark_tier",
        )
    }
    computed: dict[str, Column] = {
        **new,
        "event_id": F.col("new.target_event_id"),
        "source_system": F.col("new.source_system"),
        "is_deleted": F.col("new.record_kind") == "deletion",
        "first_arrival_ts": F.least(
            F.col("new.batch_first_arrival_ts"),
            F.coalesce(F.col("old.first_arrival_ts"), F.col("new.batch_first_arrival_ts")),
        ),
        "version_count": F.coalesce(F.col("old.version_count"), F.lit(0)) + F.col("new.new_versions"),
        **{
            f"previous_{name}": F.col(f"old.{name}")
            for name in ("event_type", "user_id", "amount", "event_ts", "event_date", "is_deleted")
        },
        "last_action": F.when(F.col("new.record_kind") != "original", F.col("new.record_kind"))
        .when(is_known, "late_merge")
        .otherwise("insert"),
        "change_reason": F.lit(None),
        "processed_at": F.lit(as_of),
        "changed_run_at": F.current_timestamp(),
        "invocation_id": F.lit("floor"),
    }
    return joined.where(new_wins).select(
        *[computed.get(name, F.col(f"old.{name}")).cast(kind).alias(name) for name, kind in columns]
    )


def _in_list(column: str, values: Sequence[Any]) -> str:
    return f"{column} in ({', '.join(repr(str(v)) for v in values)})"


def merge(
    spark: SparkSession, table: str, rows: DataFrame, keys: Sequence[str], target_filter: str, update: str
) -> None:
    """MERGE ``rows`` into ``table`` on ``keys``; ``target_filter`` (on the
    target's partition column) prunes the target to the touched partitions."""
    view = f"floor_{table.split('.')[-1]}"
    rows.createOrReplaceTempView(view)
    on = " and ".join(f"t.{k} = s.{k}" for k in keys)
    spark.sql(
        f"merge into {table} t using {view} s on {on} and t.{target_filter} "
        f"when matched then update set {update} when not matched then insert *"
    )
    spark.catalog.dropTempView(view)


def revenue(rows: DataFrame, keys: Sequence[str]) -> DataFrame:
    """Revenue measures of non-deleted silver events (macros/revenue.sql)."""
    order = F.col("event_type") == "order_placed"
    refund = F.col("event_type") == "refund"
    gross = F.coalesce(F.sum(F.when(order, F.col("amount"))), F.lit(0))
    refunds = F.coalesce(F.sum(F.when(refund, F.col("amount"))), F.lit(0))
    return rows.groupBy(*keys).agg(
        F.count(F.when(order, 1)).alias("orders"),
        gross.alias("gross_revenue"),
        refunds.alias("refunds"),
        (gross - refunds).alias("net_revenue"),
    )


def gold_rows(spark: SparkSession, table: str, recomputed: DataFrame, keys: Sequence[str], where: str) -> DataFrame:
    """Recomputed measures in ``table``'s columns (the others null: the floor
    keeps no versions), with every stored key of the touched partitions: one
    that no longer has events gets zeros, as a restated partition does."""
    target = spark.table(table)
    rows = recomputed.join(target.where(where).select(*keys), on=list(keys), how="full")
    values = {name: F.col(name) for name in keys} | {name: F.coalesce(F.col(name), F.lit(0)) for name in MEASURES}
    return rows.select(*[values.get(name, F.lit(None)).cast(kind).alias(name) for name, kind in target.dtypes])


def run_floor(
    spark: SparkSession,
    schema: str,
    ingestion_ids: Sequence[str],
    arrival_dates: Sequence[date],
    as_of: datetime,
    project_dir: Path,
) -> FloorRun:
    """Apply the late batch (``ingestion_ids``, landed in ``arrival_dates``)
    to silver_events and the revenue tables of ``schema``."""
    started = time.perf_counter()
    steps: dict[str, float] = {}
    silver_table = f"{schema}_silver.{SILVER}"
    with _step(spark, steps, "floor: late rows"):
        bronze = spark.table(f"{schema}_bronze.bronze_events").where(
            F.col("arrival_date").isin(list(arrival_dates)) & F.col("ingestion_id").isin(list(ingestion_ids))
        )
        late = usable_rows(bronze, watermark_tiers(project_dir)).cache()
        late_rows = late.count()
        fresh = winners(late).cache()
    with _step(spark, steps, "floor: silver_events"):
        silver = spark.table(silver_table)
        stored = silver.join(
            fresh.select(F.col("target_event_id").alias("event_id"), "source_system"), on=KEY, how="left_semi"
        ).cache()
        rows = silver_rows(fresh, stored, silver.dtypes, as_of).cache()
        dates = {r.event_date for r in rows.select("event_date").distinct().collect()}
        dates |= {
            r.event_date
            for r in stored.join(rows.select(*KEY), on=KEY, how="left_semi").select("event_date").distinct().collect()
        }
        touched = sorted(d for d in dates if d is not None)
        merged = rows.count()
        if merged:
            merge(spark, silver_table, rows, KEY, _in_list("event_date", touched), "*")
        for frame in (late, fresh, stored, rows):
            frame.unpersist()
    gold_tables = []
    if touched:
        events = spark.table(silver_table).where(F.col("event_date").isin(touched) & ~F.col("is_deleted"))
        for name, (keys, grain) in GOLD.items():
            table = f"{schema}_gold.{name}"
            if not spark.catalog.tableExists(table):
                continue
            with _step(spark, steps, f"floor: {name}"):
                if grain == "day":
                    hourly = "event_hour" in keys
                    source = events.withColumn("event_hour", F.hour("event_ts")) if hourly else events
                    where = _in_list("event_date", touched)
                    recomputed = revenue(source, keys)
                else:
                    period = keys[0]
                    periods = sorted({_period_start(d, grain) for d in touched})
                    daily = spark.table(f"{schema}_gold.gold_daily_revenue").withColumn(
                        period, F.date_trunc(grain, F.col("event_date")).cast("date")
                    )
                    where = _in_list(period, periods)
                    recomputed = (
                        daily.where(F.col(period).isin(periods))
                        .groupBy(period, "source_system")
                        .agg(*[F.sum(m).alias(m) for m in MEASURES])
                    )
                rows = gold_rows(spark, table, recomputed, keys, where)
                update = ", ".join(f"t.{m} = s.{m}" for m in MEASURES)
                merge(spark, table, rows, keys, where, update)
                gold_tables.append(name)
    spark.catalog.clearCache()
    return FloorRun(
        seconds=time.perf_counter() - started,
        late_rows=late_rows,
        keys_merged=merged,
        touched_dates=[str(d) for d in touched],
        gold_tables=gold_tables,
        steps=steps,
    )


@contextmanager
def _step(spark: SparkSession, steps: dict[str, float], name: str) -> Iterator[None]:
    """A step of the job: its Spark queries are attributed to ``name`` and its
    wall time is kept in ``steps``."""
    started = time.perf_counter()
    with tagged(spark, name):
        yield
    steps[name] = round(time.perf_counter() - started, 3)


def _period_start(day: date, grain: str) -> date:
    """Monday of the week, or the first of the month (Spark's date_trunc)."""
    if grain == "week":
        return date.fromordinal(day.toordinal() - day.weekday())
    return day.replace(day=1)
