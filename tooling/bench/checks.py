"""What the variants must agree on: fingerprints of the tables they produce,
and the gold the plain-Python reference computes from the same files."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pyspark.sql import SparkSession

from tooling.bench.config import GOLD_MODEL
from tooling.bench.state import TableFormat, TableState
from tooling.reference import Arrival, arrivals_from_lines, expected_daily_revenue
from tooling.synthetic import Batch


def gold_fingerprint(spark: SparkSession, schema: str, table: str | None = None) -> dict[str, Any]:
    """Rows, partitions and a digest of gold_daily_revenue's measures (or of
    ``table``'s, a peer's table of the same columns). A row of zeros counts as
    no row: where a day's events all went away (the day the late batch
    empties), an incremental build keeps the day's row at zeros with its
    reason, and a full refresh, which never saw the events, writes none."""
    row = spark.sql(
        f"""
        select count(*) as rows, count(distinct event_date) as partitions,
               sum(orders) as orders, cast(sum(net_revenue) as string) as net_revenue,
               sum(hash(event_date, source_system, orders, gross_revenue, refunds, net_revenue))
                   as digest
        from {table or f"{schema}_gold.{GOLD_MODEL}"}
        where not (orders = 0 and gross_revenue = 0 and refunds = 0 and net_revenue = 0)
        """
    ).collect()[0]
    return row.asDict()


def dates_written(spark: SparkSession, schema: str, tables: TableFormat, start: Mapping[str, TableState]) -> list[str]:
    """The event dates of gold_daily_revenue holding a row the run wrote: rows
    that differ from the table's state at the start (values, version or run
    stamps; every date when the run recreated the table), and the partitions
    the change manifest lists for the run (a row written back unchanged, as
    the lookback does). ``start``: each table's state at the start, read
    back with `version as of` (an Iceberg snapshot id, a Delta version). A
    measure of rows, where the files written are per month (month_partitions)."""
    dates: set[str] = set()
    for table, column, where in (
        (f"{schema}_gold.{GOLD_MODEL}", "event_date", "true"),
        (f"{schema}_audit.gold_change_manifest", "partition_value", f"model = '{GOLD_MODEL}'"),
    ):
        if not spark.catalog.tableExists(table):
            continue
        rows = f"select * from {table}"
        before = tables.readable_version(table, start.get(table))
        if before is not None:
            rows = f"{rows} except all select * from {table} version as of {before}"
        found = spark.sql(f"select distinct cast({column} as string) as d from ({rows}) where {where}").collect()
        dates |= {r.d for r in found}
    return sorted(dates)


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


def event_arrivals(batches: Iterable[Batch]) -> list[Arrival]:
    """The arrivals of the event files of ``batches``, each at its arrival
    time, as tooling.reference reads them (other feeds are not events)."""
    arrivals = []
    for batch in batches:
        if batch.feed == "events":
            lines = batch.path.read_text().splitlines()
            arrivals += arrivals_from_lines(batch.source, batch.arrival_ts, batch.path.name, lines)
    return arrivals


def reference_gold(arrivals: list[Arrival]) -> dict[str, list[Any]]:
    """``event_date|source_system`` -> orders, gross revenue, refunds and net
    revenue, as tooling.reference computes them from ``arrivals``, in the
    shape of tooling.bench.microbatch.gold_measures."""
    return {
        f"{day}|{source}": [orders, str(gross), str(refunds), str(gross - refunds)]
        for (day, source), (orders, gross, refunds) in expected_daily_revenue(arrivals).items()
    }
