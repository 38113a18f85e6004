"""Sessionization by event time, kept exact under late, corrected and deleted events.

A session is a maximal run of one user's live events in which each event
follows the previous one by at most the inactivity gap (event time, not
arrival time). Events are ordered by ``(event_ts, source_system, event_id)``,
so ties are broken the same way on every run.

* ``session_id`` is a function of the final data only: a hash of the user, the
  natural key of the session's first event and its start. Whatever order the
  events arrived in, the same events give the same ids.
* ``source_system`` of a session is the source of its first event (where the
  visit started); its date, for daily figures, is the UTC date of
  ``session_start_ts``, so a session crossing midnight counts once, on the day
  it began.
* ``revenue`` is gross: the sum of the session's ``order_placed`` amounts
  (refunds are separate events and are not netted).

:func:`update_sessions` re-sessionizes incrementally. For every event whose row
changed in silver since the sessions were last built, it takes the event's
old and new (user, event time) as changed points. An old session is
untouched when no changed point of its user lies within one gap of it,
``[start - gap, end + gap]``: its events and the gaps around it are the same,
so it is still a maximal session and is kept as it is. Only the live events
of touched sessions, plus the changed events themselves, are sessionized
again; they cannot join an untouched session, which stays more than a gap
away from all of them. A late event that bridges two sessions touches both
and merges them; a deletion touches its session, which may split.

Its output is what to merge into the sessions table on ``session_id``: new
and changed sessions, and tombstones (``event_count`` 0) for sessions that
merged into another, split or lost all their events, which the caller
deletes. After that the table equals :func:`sessionize` of all live events,
whatever the arrival order.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from python_jobs.core.constants import MONEY, ORDER_EVENT_TYPE

EVENT_KEY = ("event_id", "source_system")
MICROS_PER_SECOND = 1_000_000
# A merged row with no events marks a session to delete (see resessionize).
TOMBSTONE_COLUMN = "event_count"
SESSION_COLUMNS = (
    "session_id",
    "user_id",
    "source_system",
    "session_start_ts",
    "session_end_ts",
    "duration_seconds",
    "event_count",
    "has_order",
    "revenue",
    "changed_run_at",
)


def gap_micros(gap_minutes: float) -> int:
    if gap_minutes <= 0:
        raise ValueError(f"session gap must be positive, got {gap_minutes} minutes")
    return round(gap_minutes * 60 * MICROS_PER_SECOND)


def live_events(silver_events: DataFrame) -> DataFrame:
    """Events that belong in sessions: not deleted, with a user and an event time."""
    is_live = ~F.col("is_deleted") & F.col("user_id").isNotNull() & F.col("event_ts").isNotNull()
    return silver_events.where(is_live).select(*EVENT_KEY, "user_id", "event_type", "amount", "event_ts")


def sessionize(events: DataFrame, gap_minutes: float) -> DataFrame:
    """Sessions of ``events`` (live events: event key, user_id, event_type, amount, event_ts).

    Returns every column of :data:`SESSION_COLUMNS` but ``changed_run_at``.
    """
    in_user_order = Window.partitionBy("user_id").orderBy("event_ts", *EVENT_KEY)
    event_micros = F.unix_micros("event_ts")
    previous_micros = F.lag(event_micros).over(in_user_order)
    starts_session = previous_micros.isNull() | (event_micros - previous_micros > gap_micros(gap_minutes))
    is_order = F.col("event_type") == ORDER_EVENT_TYPE
    numbered = events.withColumn(
        "_session_number",
        F.sum(starts_session.cast("int")).over(in_user_order.rowsBetween(Window.unboundedPreceding, Window.currentRow)),
    )
    sessions = numbered.groupBy("user_id", "_session_number").agg(
        F.min(F.struct("event_ts", *EVENT_KEY)).alias("_first"),
        F.max("event_ts").alias("session_end_ts"),
        F.count(F.lit(1)).alias("event_count"),
        F.max(is_order).alias("has_order"),
        F.sum(F.when(is_order, F.coalesce(F.col("amount"), F.lit(0)))).alias("_revenue"),
    )
    first = F.col("_first")
    return sessions.select(
        session_id(F.col("user_id"), first["source_system"], first["event_id"], first["event_ts"]),
        "user_id",
        first["source_system"].alias("source_system"),
        first["event_ts"].alias("session_start_ts"),
        "session_end_ts",
        ((F.unix_micros("session_end_ts") - F.unix_micros(first["event_ts"])) / MICROS_PER_SECOND)
        .cast("bigint")
        .alias("duration_seconds"),
        "event_count",
        "has_order",
        F.coalesce(F.col("_revenue"), F.lit(0)).cast(MONEY).alias("revenue"),
    )


def session_id(user_id: Column, source_system: Column, event_id: Column, start: Column) -> Column:
    """Hash of the user, the first event's natural key and the session start."""
    start_text = F.date_format(start, "yyyy-MM-dd'T'HH:mm:ss.SSSSSS")
    key = F.concat_ws("|", user_id, source_system, event_id, start_text)
    return F.substring(F.sha2(key, 256), 1, 32).alias("session_id")


def changed_points(changes: DataFrame) -> DataFrame:
    """(user_id, point_ts): where each changed event is now and where it was before."""
    now = changes.select("user_id", F.col("event_ts").alias("point_ts"))
    before = changes.select(F.col("previous_user_id").alias("user_id"), F.col("previous_event_ts").alias("point_ts"))
    return now.unionByName(before).where(F.col("user_id").isNotNull() & F.col("point_ts").isNotNull()).distinct()


def near_point_days(points: DataFrame, gap: int) -> Column:
    """Sessions that overlap, within ``gap`` microseconds, a day holding a point.

    A superset of the sessions near any point, as plain range predicates on
    session_start_ts and session_end_ts (so the table's scan is pruned by the
    files' min/max statistics); false when there are no points.
    """
    days = [row.day for row in points.select(F.to_date("point_ts").alias("day")).distinct().collect()]
    margin = timedelta(microseconds=gap)
    condition = F.lit(False)
    for day in sorted(days):
        day_start = datetime(day.year, day.month, day.day)
        overlaps = (F.col("session_end_ts") >= F.lit(day_start - margin)) & (
            F.col("session_start_ts") <= F.lit(day_start + timedelta(days=1) + margin)
        )
        condition = condition | overlaps
    return condition


def event_dates_to_read(touched: DataFrame, points: DataFrame) -> list[date]:
    """UTC dates spanned by the touched sessions and dates of the changed points."""
    spans = touched.select(
        F.explode(F.sequence(F.to_date("session_start_ts"), F.to_date("session_end_ts"))).alias("event_date")
    )
    at_points = points.select(F.to_date("point_ts").alias("event_date"))
    return [row.event_date for row in spans.unionByName(at_points).distinct().collect()]


def resessionize(
    sessions: DataFrame,
    silver_events: DataFrame,
    changes: DataFrame,
    gap_minutes: float,
    changed_run_at: datetime,
) -> DataFrame:
    """Rows to merge into ``sessions`` (on session_id) for ``changes`` not yet applied.

    New and changed sessions carry ``changed_run_at``; every touched session
    that no longer exists comes back as a tombstone, the old row with
    ``event_count`` 0, for the caller to delete. Untouched sessions and
    recomputed ones that came out the same are not returned.
    """
    gap = gap_micros(gap_minutes)
    point_micros = F.unix_micros("point.point_ts")
    near_a_point = (
        (F.col("old.user_id") == F.col("point.user_id"))
        & (point_micros >= F.unix_micros("old.session_start_ts") - gap)
        & (point_micros <= F.unix_micros("old.session_end_ts") + gap)
    )
    # Intermediate results read more than once are kept with localCheckpoint
    # (computed once, now), never cache(): their blocks go when the
    # DataFrame does, where a cached one stays in the session for good.
    points = changed_points(changes).localCheckpoint()
    # Only sessions within one gap of a changed point's day can be near it:
    # a filter on those days lets the table's file statistics skip the rest.
    candidates = sessions.where(near_point_days(points, gap))
    touched = candidates.alias("old").join(points.alias("point"), on=near_a_point, how="left_semi").localCheckpoint()

    # Every event to sessionize again lies in a touched session or is a changed
    # event (at a changed point): reading only those event dates lets a table
    # partitioned by event_date skip the rest of history.
    dates = event_dates_to_read(touched, points)
    live = live_events(silver_events.where(F.col("event_date").isin(dates))).alias("event")
    in_touched_session = (
        (F.col("event.user_id") == F.col("old.user_id"))
        & (F.col("event.event_ts") >= F.col("old.session_start_ts"))
        & (F.col("event.event_ts") <= F.col("old.session_end_ts"))
    )
    events_of_touched = live.join(touched.alias("old"), on=in_touched_session, how="left_semi")
    changed_events = live.join(changes.select(*EVENT_KEY).distinct(), on=list(EVENT_KEY), how="left_semi")
    to_sessionize = events_of_touched.unionByName(changed_events).dropDuplicates(list(EVENT_KEY))
    # Read twice below (changed, gone): sessionized once.
    recomputed = sessionize(to_sessionize, gap_minutes).localCheckpoint()

    stamp = F.lit(changed_run_at).cast("timestamp").alias("changed_run_at")
    content = list(recomputed.columns)
    changed = recomputed.join(touched.select(*content), on=content, how="left_anti")
    gone = touched.join(recomputed.select("session_id"), on="session_id", how="left_anti")
    tombstones = gone.withColumn(TOMBSTONE_COLUMN, F.lit(0).cast("bigint"))
    return changed.select(*content, stamp).unionByName(tombstones.select(*content, stamp))


def update_sessions(
    sessions: DataFrame | None,
    silver_events: DataFrame,
    silver_event_changes: DataFrame,
    gap_minutes: float,
) -> DataFrame:
    """Rows to merge into the sessions table for the silver changes it has not seen.

    ``sessions`` is the current table, or ``None`` on a first or full-refresh
    run, which sessionizes every live event. Its largest ``changed_run_at``
    is the high-water mark: change rows after it are the ones to apply (see
    :func:`resessionize`). Nothing pending gives no rows.
    """
    if sessions is None:
        stamp = silver_events.agg(F.max("changed_run_at")).first()[0]
        # Written in time order, so each file covers a time range and the
        # incremental runs' range filters skip most of them.
        return (
            sessionize(live_events(silver_events), gap_minutes)
            .withColumn("changed_run_at", F.lit(stamp).cast("timestamp"))
            .select(*SESSION_COLUMNS)
            .orderBy("session_start_ts")
        )
    high_water_mark = sessions.agg(F.max("changed_run_at")).first()[0]
    pending = silver_event_changes
    if high_water_mark is not None:
        pending = pending.where(F.col("changed_run_at") > F.lit(high_water_mark))
    stamp = pending.agg(F.max("changed_run_at")).first()[0]
    if stamp is None:
        return sessions.select(*SESSION_COLUMNS).limit(0)
    return resessionize(sessions, silver_events, pending, gap_minutes, stamp)


def daily_sessions(sessions: DataFrame) -> DataFrame:
    """Sessions, conversion and duration per session date (UTC) and first-event source."""
    converted = F.count_if(F.col("has_order"))
    return sessions.groupBy(F.to_date("session_start_ts").alias("event_date"), F.col("source_system")).agg(
        F.count(F.lit(1)).alias("sessions"),
        converted.alias("converted_sessions"),
        (converted / F.count(F.lit(1))).alias("conversion_rate"),
        F.avg("duration_seconds").alias("avg_duration_seconds"),
        F.avg("event_count").alias("avg_events_per_session"),
        F.sum("revenue").cast(MONEY).alias("revenue"),
    )
