"""How complete is an event-date partition, and what will it end at?

Late data makes a recent partition's orders and revenue an undercount. This
module estimates, per source system and event date, which fraction of the
value the partition will end with has already arrived, from how earlier
partitions of the same source filled up (a development curve, as in the
chain-ladder method of insurance reserving).

Arrival curve
    For a partition ``d`` and an age ``a`` (time since the start of ``d``,
    00:00 UTC), ``arrived(d, a)`` is the value of ``d``'s events whose first
    arrival (bronze ``arrival_ts``) was at most ``a`` after the start of
    ``d``. It rises as events occur during the day and as late ones arrive.
    A partition is *final* once ``horizon_hours`` have passed since its day
    ended (the project's "preliminary until" watermark tier); ``final(d)`` is
    ``arrived(d, 24 h + horizon)``.

Estimate at ``as_of``
    For partition ``d`` of age ``a = as_of - start(d)``, the reference
    partitions are the ``window_days`` most recent final partitions of the same
    source at ``as_of``. Completeness is the ratio of sums
    ``sum arrived(r, a) / sum final(r)`` over references ``r``; the
    estimated final value is ``arrived(d, a) / completeness``. The interval
    comes from the spread of the single-reference ratios
    ``arrived(r, a) / final(r)``: with ``q_lo``, ``q_hi`` their central
    ``interval`` quantiles, the final value lies in
    ``[arrived / q_hi, arrived / q_lo]``.

So "today" at 09:00 is compared with how far earlier days had got by 09:00
of their own day: completeness then covers both late events and events that
have not happened yet. Values are those of silver now (corrections and
deletions applied), attributed to the first arrival of each event.

Backtest
    For final partitions (whose outcome is known at ``as_of``) the estimate
    that would have been made ``k`` hours after the partition's day ended,
    using only what had arrived by then, is compared with the value it ended
    with; errors are summarised by horizon ``k``.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, date, datetime, time, timedelta

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from python_jobs.core.constants import ORDER_EVENT_TYPE, REFUND_EVENT_TYPE

METRICS = ("orders", "gross_revenue", "net_revenue")
# Metric values stay exact (decimal) in sums; ratios and estimates are doubles.
VALUE = "decimal(38,2)"
DAY_SECONDS = 86_400
HOUR_SECONDS = 3_600
ROUNDING = 1e-9


def parse_as_of(value: str | datetime | None) -> datetime:
    """The ``as_of`` var (ISO-8601 with a UTC offset) as an aware datetime; unset: now."""
    if value is None or (isinstance(value, str) and not value.strip()) or value == "None":
        return datetime.now(UTC).replace(microsecond=0)
    parsed = value if isinstance(value, datetime) else datetime.fromisoformat(value.replace("Z", "+00:00"))
    if parsed.tzinfo is None:
        raise ValueError(f"as_of {value!r} needs a UTC offset, e.g. 2024-02-01T00:00:00+00:00")
    return parsed.astimezone(UTC)


def final_after_seconds(horizon_hours: float) -> int:
    """Seconds from a partition's start until it is final."""
    return round(DAY_SECONDS + horizon_hours * HOUR_SECONDS)


def seconds_between(start: Column, end: Column) -> Column:
    return F.unix_seconds(end) - F.unix_seconds(start)


def last_final_date(as_of: Column, horizon_hours: float) -> Column:
    """The latest event date that is final at ``as_of``."""
    return F.to_date(F.timestamp_seconds(F.unix_seconds(as_of) - final_after_seconds(horizon_hours)))


def last_final_day(as_of: datetime, horizon_hours: float) -> date:
    """:func:`last_final_date` for one Python ``as_of``."""
    return (as_of.astimezone(UTC) - timedelta(seconds=final_after_seconds(horizon_hours))).date()


def known_at(arrivals: DataFrame, as_of: datetime, first_day: date) -> DataFrame:
    """Arrivals by ``as_of`` of partitions from ``first_day`` on (prunes silver's partitions)."""
    return arrivals.where(
        (F.col("first_arrival_ts") <= F.lit(as_of).cast("timestamp")) & (F.col("event_date") >= F.lit(first_day))
    )


def order_arrivals(silver_events: DataFrame) -> DataFrame:
    """Value first arrived per (source, metric, event date, first arrival).

    ``orders`` counts live ``order_placed`` events, ``gross_revenue`` sums
    their amounts and ``net_revenue`` takes live refunds off, as
    gold_daily_revenue does.
    """
    is_order = F.col("event_type") == ORDER_EVENT_TYPE
    is_refund = F.col("event_type") == REFUND_EVENT_TYPE
    per_arrival = (
        silver_events.where(~F.col("is_deleted") & (is_order | is_refund))
        .groupBy("source_system", "event_date", "first_arrival_ts")
        .agg(
            F.count(F.when(is_order, 1)).cast(VALUE).alias("orders"),
            F.coalesce(F.sum(F.when(is_order, F.col("amount"))), F.lit(0)).cast(VALUE).alias("gross_revenue"),
            F.coalesce(F.sum(F.when(is_refund, F.col("amount"))), F.lit(0)).cast(VALUE).alias("_refunds"),
        )
        .withColumn("net_revenue", (F.col("gross_revenue") - F.col("_refunds")).cast(VALUE))
    )
    by_metric = F.explode(F.array(*(F.struct(F.lit(m).alias("metric"), F.col(m).alias("value")) for m in METRICS)))
    return per_arrival.select("source_system", "event_date", "first_arrival_ts", by_metric.alias("_m")).select(
        "source_system",
        F.col("_m.metric").alias("metric"),
        "event_date",
        "first_arrival_ts",
        F.col("_m.value").alias("value"),
    )


ARRIVAL_KEY = ("source_system", "metric", "event_date", "first_arrival_ts")


def touched_event_dates(silver_event_changes: DataFrame) -> list[date]:
    """Event dates whose silver values a change row may move: its date and, for a
    correction that moved an event, the date it left. A duplicate counts too: it
    can move its event's first arrival earlier."""
    changes = silver_event_changes
    dates = changes.select(F.col("event_date").alias("d")).union(changes.select(F.col("previous_event_date")))
    return sorted(row.d for row in dates.where(F.col("d").isNotNull()).distinct().collect())


def update_arrival_values(
    current: DataFrame | None, silver_events: DataFrame, silver_event_changes: DataFrame
) -> DataFrame:
    """Rows to merge into the arrival values table (:func:`order_arrivals` kept
    incrementally) for the silver changes it has not seen.

    ``current`` is the table, or ``None`` on a first or full-refresh run,
    which aggregates all of silver. Its largest ``changed_run_at`` is the
    high-water mark; the event dates that changes after it touch are
    aggregated again from silver, and a row of those dates that no longer
    occurs (its events deleted or moved to another date) comes back with
    value 0 and ``is_gone``, so the table's other rows are always
    :func:`order_arrivals` of silver.
    Nothing pending gives no rows. Tombstones stay (a group that comes back
    is merged over its own); :func:`live_arrival_values` leaves them out.
    The mark and the new stamp stay Spark timestamps (never Python datetimes,
    whose round trip depends on the process's time zone).
    """
    if current is None:
        stamp = silver_events.agg(F.max("changed_run_at").alias("changed_run_at"))
        return order_arrivals(silver_events).select("*", F.lit(False).alias("is_gone")).crossJoin(stamp)
    mark = current.agg(F.max("changed_run_at").alias("_mark"))
    pending = (
        silver_event_changes.crossJoin(mark)
        .where(F.col("_mark").isNull() | (F.col("changed_run_at") > F.col("_mark")))
        .drop("_mark")
    )
    # Computed once, now (localCheckpoint, not cache(): the blocks go with the
    # DataFrames instead of staying in the session).
    stamp = pending.agg(F.max("changed_run_at").alias("changed_run_at")).localCheckpoint()
    if stamp.first()[0] is None:
        return current.limit(0)
    dates = touched_event_dates(pending)
    # Read twice below (the rows and what vanished): aggregated once.
    recomputed = order_arrivals(silver_events.where(F.col("event_date").isin(dates))).localCheckpoint()
    vanished = (
        current.where(F.col("event_date").isin(dates) & ~F.col("is_gone"))
        .join(recomputed.select(*ARRIVAL_KEY), on=list(ARRIVAL_KEY), how="left_anti")
        .select(*ARRIVAL_KEY, F.lit(0).cast(VALUE).alias("value"), F.lit(True).alias("is_gone"))
    )
    return recomputed.withColumn("is_gone", F.lit(False)).unionByName(vanished).crossJoin(F.broadcast(stamp))


def live_arrival_values(arrival_values: DataFrame) -> DataFrame:
    """The arrival values table without its tombstones: :func:`order_arrivals` of silver."""
    return arrival_values.where(~F.col("is_gone")).select(*ARRIVAL_KEY, "value")


def arrived_by(arrivals: DataFrame, targets: DataFrame) -> DataFrame:
    """Per target: the value of its partition arrived by its ``as_of_ts``."""
    arrived_in_time = F.col("a.first_arrival_ts") <= F.col("t.as_of_ts")
    same_partition = [F.col(f"t.{c}") == F.col(f"a.{c}") for c in ("source_system", "metric", "event_date")]
    return (
        targets.alias("t")
        .join(arrivals.alias("a"), on=same_partition, how="left")
        .groupBy(*(F.col(f"t.{c}") for c in targets.columns))
        .agg(F.sum(F.when(arrived_in_time, F.col("a.value")).otherwise(0)).alias("arrived_value"))
    )


def estimate_completeness(
    arrivals: DataFrame,
    targets: DataFrame,
    horizon_hours: float,
    window_days: int,
    interval: float = 0.8,
) -> DataFrame:
    """Completeness, estimated final value and interval for each target.

    ``arrivals``: output of :func:`order_arrivals`. ``targets``: one row per
    (source_system, metric, event_date, as_of_ts), any further columns are
    kept. Adds ``partition_age_hours``, ``arrived_value``, ``completeness``,
    ``estimated_final``, ``estimated_final_low``, ``estimated_final_high`` and
    ``reference_days`` (final partitions with a non-zero value behind the
    curve). Completeness and estimates are null without reference data.
    """
    if not 0 < interval < 1:
        raise ValueError(f"interval must be between 0 and 1, got {interval}")
    if window_days < 1:
        raise ValueError(f"window_days must be at least 1, got {window_days}")
    final_after = final_after_seconds(horizon_hours)
    age = seconds_between(F.col("event_date").cast("timestamp"), F.col("as_of_ts"))
    last_reference = last_final_date(F.col("as_of_ts"), horizon_hours)
    references = targets.withColumn("_age", age).withColumn(
        "_reference_date",
        F.explode(F.sequence(F.date_sub(last_reference, window_days - 1), last_reference)),
    )
    same_reference = [
        F.col("r.source_system") == F.col("a.source_system"),
        F.col("r.metric") == F.col("a.metric"),
        F.col("r._reference_date") == F.col("a.event_date"),
    ]
    arrival_age = seconds_between(F.col("r._reference_date").cast("timestamp"), F.col("a.first_arrival_ts"))
    by_age = arrival_age <= F.least(F.col("r._age"), F.lit(final_after))
    by_final = arrival_age <= final_after
    target_columns = [F.col(f"r.{c}") for c in targets.columns]
    per_reference = (
        references.alias("r")
        .join(arrivals.alias("a"), on=same_reference, how="left")
        .groupBy(*target_columns, F.col("r._reference_date"))
        .agg(
            F.sum(F.when(by_age, F.col("a.value")).otherwise(0)).alias("_ref_arrived"),
            F.sum(F.when(by_final, F.col("a.value")).otherwise(0)).alias("_ref_final"),
        )
    )
    has_value = F.col("_ref_final") > 0
    lower_q, upper_q = (1 - interval) / 2, 1 - (1 - interval) / 2
    curve = per_reference.groupBy(*targets.columns).agg(
        (F.sum("_ref_arrived").cast("double") / F.when(F.sum("_ref_final") > 0, F.sum("_ref_final"))).alias(
            "completeness"
        ),
        F.percentile(
            F.when(has_value, F.col("_ref_arrived").cast("double") / F.col("_ref_final")),
            F.array(F.lit(lower_q), F.lit(upper_q)),
        ).alias("_ratio_quantiles"),
        F.count_if(has_value).alias("reference_days"),
    )
    arrived = F.col("arrived_value")
    positive = F.col("completeness") > 0
    return (
        arrived_by(arrivals, targets)
        .join(curve, on=list(targets.columns), how="inner")
        .select(
            *targets.columns,
            (age / HOUR_SECONDS).alias("partition_age_hours"),
            arrived.alias("arrived_value"),
            "completeness",
            F.when(positive, arrived / F.col("completeness")).alias("estimated_final"),
            ratio_bound(arrived, F.col("_ratio_quantiles")[1]).alias("estimated_final_low"),
            ratio_bound(arrived, F.col("_ratio_quantiles")[0]).alias("estimated_final_high"),
            "reference_days",
        )
    )


def ratio_bound(arrived: Column, ratio: Column) -> Column:
    """arrived / ratio; null when the ratio is zero or unknown."""
    return F.when(ratio > 0, arrived / ratio)


def partition_pairs(arrivals: DataFrame) -> DataFrame:
    return arrivals.select("source_system", "metric").distinct()


def live_targets(arrivals: DataFrame, as_of: datetime, horizon_hours: float) -> DataFrame:
    """Every source and metric for each event date that is not final at ``as_of``."""
    as_of_ts = F.lit(as_of).cast("timestamp")
    first_open = F.date_add(last_final_date(as_of_ts, horizon_hours), 1)
    return partition_pairs(arrivals).select(
        "source_system",
        "metric",
        F.explode(F.sequence(first_open, F.to_date(as_of_ts))).alias("event_date"),
        as_of_ts.alias("as_of_ts"),
    )


def completeness_at(
    arrivals: DataFrame,
    as_of: datetime,
    horizon_hours: float,
    window_days: int,
    interval: float = 0.8,
) -> DataFrame:
    """Estimates for every non-final partition at ``as_of``, from data arrived by then."""
    first_reference = last_final_day(as_of, horizon_hours) - timedelta(days=window_days - 1)
    known = known_at(arrivals, as_of, first_reference)
    targets = live_targets(known, as_of, horizon_hours)
    return estimate_completeness(known, targets, horizon_hours, window_days, interval)


def lateness_summary(bronze_events: DataFrame, as_of: datetime, window_days: int) -> DataFrame:
    """Median and 90th percentile of bronze lateness per source over the trailing window."""
    as_of_ts = F.lit(as_of).cast("timestamp")
    in_window = (
        F.col("parse_error").isNull()
        & (F.col("arrival_ts") <= as_of_ts)
        & (F.col("arrival_date") >= F.date_sub(F.to_date(as_of_ts), window_days))
        & (F.col("arrival_ts") > as_of_ts - F.expr(f"make_dt_interval({window_days})"))
    )
    quantiles = F.percentile_approx("lateness_seconds", [0.5, 0.9], 10_000)
    return (
        bronze_events.where(in_window)
        .groupBy("source_system")
        .agg(quantiles.alias("_q"))
        .select(
            "source_system",
            F.col("_q")[0].cast("bigint").alias("lateness_p50_seconds"),
            F.col("_q")[1].cast("bigint").alias("lateness_p90_seconds"),
        )
    )


def backtest_targets(
    arrivals: DataFrame,
    as_of: datetime,
    horizon_hours: float,
    backtest_days: int,
    horizons_hours: Sequence[float],
) -> DataFrame:
    """Final partitions of the last ``backtest_days``, each seen ``k`` hours after its day ended."""
    if not horizons_hours:
        raise ValueError("at least one backtest horizon is needed")
    too_late = [k for k in horizons_hours if k * HOUR_SECONDS >= final_after_seconds(horizon_hours)]
    if too_late:
        raise ValueError(f"backtest horizons {too_late} h are past the {horizon_hours} h horizon")
    last_final = last_final_date(F.lit(as_of).cast("timestamp"), horizon_hours)
    horizon = F.explode(F.array(*(F.lit(float(k)) for k in horizons_hours)))
    return (
        partition_pairs(arrivals)
        .select(
            "source_system",
            "metric",
            F.explode(F.sequence(F.date_sub(last_final, backtest_days - 1), last_final)).alias("event_date"),
        )
        .select("*", horizon.alias("horizon_hours"))
        .withColumn(
            "as_of_ts",
            F.timestamp_seconds(
                F.unix_seconds(F.date_add("event_date", 1).cast("timestamp"))
                + (F.col("horizon_hours") * HOUR_SECONDS).cast("bigint")
            ),
        )
    )


def backtest(
    arrivals: DataFrame,
    as_of: datetime,
    horizon_hours: float,
    window_days: int,
    backtest_days: int,
    horizons_hours: Sequence[float],
    interval: float = 0.8,
) -> DataFrame:
    """Estimate made ``k`` hours after each partition's day ended vs the value it ended with.

    One row per (source_system, metric, horizon_hours): partitions
    evaluated, mean relative error (bias), mean and 90th-percentile absolute
    relative error, the share of final values inside the interval, and the
    mean estimated and actual completeness. Relative error is
    ``estimated_final / final_value - 1``; partitions that ended at zero are
    not scored.
    """
    first_target = last_final_day(as_of, horizon_hours) - timedelta(days=backtest_days - 1)
    first_estimate = datetime.combine(first_target, time(), UTC) + timedelta(hours=24 + min(horizons_hours, default=0))
    first_reference = last_final_day(first_estimate, horizon_hours) - timedelta(days=window_days - 1)
    known = known_at(arrivals, as_of, first_reference)
    targets = backtest_targets(known, as_of, horizon_hours, backtest_days, horizons_hours)
    estimates = estimate_completeness(known, targets, horizon_hours, window_days, interval)
    outcome = known.groupBy("source_system", "metric", "event_date").agg(F.sum("value").alias("final_value"))
    scored = (
        estimates.join(outcome, on=["source_system", "metric", "event_date"], how="left")
        .withColumn("final_value", F.coalesce("final_value", F.lit(0)))
        .where((F.col("final_value") > 0) & F.col("estimated_final").isNotNull())
        .withColumn("_error", F.col("estimated_final") / F.col("final_value") - 1)
        .withColumn("_as_of", F.lit(as_of).cast("timestamp"))
        .withColumn(
            "_inside",
            # Bounds are quotients of doubles: allow for their rounding.
            F.col("final_value").between(
                F.col("estimated_final_low") * (1 - ROUNDING),
                F.coalesce(F.col("estimated_final_high") * (1 + ROUNDING), F.lit(float("inf"))),
            ),
        )
    )
    return scored.groupBy("source_system", "metric", "horizon_hours").agg(
        F.count(F.lit(1)).alias("partitions"),
        F.avg("_error").alias("mean_relative_error"),
        F.avg(F.abs("_error")).alias("mean_absolute_relative_error"),
        F.percentile(F.abs("_error"), F.lit(0.9)).alias("p90_absolute_relative_error"),
        F.avg(F.col("_inside").cast("double")).alias("interval_coverage"),
        F.avg("completeness").alias("mean_estimated_completeness"),
        F.avg(F.col("arrived_value").cast("double") / F.col("final_value")).alias("mean_actual_completeness"),
        F.first("_as_of").alias("as_of_ts"),
    )
