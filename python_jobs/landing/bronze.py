"""The bronze tables and the ingestion log: creating them, composing the bronze
rows of landed lines, finding which files have landed (or half landed), and
appending.

A landing commits its bronze rows, then its log row in ``bronze_ingestions``;
:func:`interrupted_landings` finds the files of a call stopped between the two.
The file ingest and the streams (:mod:`python_jobs.landing.stream`) both write
through these functions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from python_jobs.core.local_rows import local_rows
from python_jobs.landing.feeds import FEEDS, Feed, IngestSettings
from python_jobs.landing.ingest_lines import LINES_DDL, is_blank
from python_jobs.landing.shapers import SHAPERS, parse_json

INGESTIONS_TABLE = "bronze_ingestions"
INGESTIONS_DDL = """
    ingestion_id string,
    feed string,
    source_system string,
    source_file string,
    file_sha256 string,
    arrival_ts timestamp,
    arrival_date date,
    ingested_at timestamp,
    lines_read bigint,
    blank_lines bigint,
    rows_accepted bigint,
    rows_flagged bigint
"""
LANDING_DDL = "ingestion_id string, source_system string, arrival_ts timestamp, ingested_at timestamp"
LEADING_COLUMNS = (
    "ingestion_id",
    "source_system",
    "source_file",
    "line_number",
    "arrival_ts",
    "arrival_date",
    "ingested_at",
)


def landings(
    spark: SparkSession,
    ingestion_ids: Sequence[str],
    source_system: str,
    arrival_ts: datetime,
    ingested_at: datetime,
) -> DataFrame:
    """One row per landed file (:data:`LANDING_DDL`): what each of its bronze rows carries."""
    rows = [(iid, source_system, arrival_ts, ingested_at) for iid in ingestion_ids]
    return local_rows(spark, rows, LANDING_DDL)


def bronze_frame(lines: DataFrame, landed: DataFrame, feed: Feed, settings: IngestSettings) -> DataFrame:
    """Bronze rows for ``lines`` (:data:`LINES_DDL`) of the files ``landed``, blank lines removed.

    The files' arrival and ingestion times are joined in rather than written
    as literals: Spark inlines timestamp literals in the code it generates, so
    each call would compile (and JIT-compile) its own code.
    """
    joined = (
        lines.where(~is_blank(F.col("raw_payload")))
        .join(F.broadcast(landed), on="ingestion_id", how="inner")
        .withColumn("arrival_date", F.to_date("arrival_ts"))
    )
    shaped = SHAPERS[feed.name](parse_json(joined, feed), settings)
    payload_columns = [c for c in shaped.columns if not c.startswith("_") and c != "raw_payload"]
    ordered = list(LEADING_COLUMNS) + [c for c in payload_columns if c not in LEADING_COLUMNS]
    return shaped.select(
        F.concat_ws(":", "ingestion_id", F.col("line_number")).alias("bronze_row_id"),
        *ordered,
        "raw_payload",
    )


def ensure_tables(spark: SparkSession, feed: Feed, sample: DataFrame, settings: IngestSettings) -> str:
    """Create the schema, the feed's bronze table and the ingestion log if missing."""
    db = settings.database
    spark.sql(f"create database if not exists {db}")
    table = f"{db}.{feed.table}"
    columns = ", ".join(f"`{f.name}` {f.dataType.simpleString()}" for f in sample.schema.fields)
    spark.sql(
        f"create table if not exists {table} ({columns}) using {settings.table_format} "
        f"partitioned by (arrival_date) "
        f"comment 'Append-only landing of {feed.name}; never updated or deleted.'"
    )
    spark.sql(
        f"create table if not exists {db}.{INGESTIONS_TABLE} ({INGESTIONS_DDL}) "
        f"using {settings.table_format} "
        "comment 'One row per landed file: counts, arrival time, ingestion time.'"
    )
    return table


def ensure_bronze(spark: SparkSession, feed: Feed, settings: IngestSettings) -> str:
    """Create every feed's bronze table and the ingestion log if one is missing; ``feed``'s table name.

    Every feed's table exists once anything landed, so a deployment that
    receives only some feeds still builds (their models are then empty).
    The file ingest and the streams (:mod:`python_jobs.landing.stream`) both call it.
    """
    tables = existing_tables(spark, settings)
    if not {INGESTIONS_TABLE, *(f.table for f in FEEDS.values())} <= tables:
        no_lines = spark.createDataFrame([], LINES_DDL)
        nothing_landed = spark.createDataFrame([], LANDING_DDL)
        for each in FEEDS.values():
            ensure_tables(spark, each, bronze_frame(no_lines, nothing_landed, each, settings), settings)
    return f"{settings.database}.{feed.table}"


def existing_tables(spark: SparkSession, settings: IngestSettings) -> set[str]:
    """Names of the tables in the bronze schema (one metastore call, no table loads)."""
    if not spark.catalog.databaseExists(settings.database):
        return set()
    return {row.tableName for row in spark.sql(f"show tables in {settings.database}").collect()}


def already_landed(spark: SparkSession, settings: IngestSettings, ids: Sequence[str]) -> set[str]:
    log = f"{settings.database}.{INGESTIONS_TABLE}"
    quoted = ", ".join(f"'{iid}'" for iid in ids)
    rows = spark.sql(f"select ingestion_id from {log} where ingestion_id in ({quoted})").collect()
    return {row.ingestion_id for row in rows}


@dataclass(frozen=True)
class InterruptedLanding:
    """What bronze holds of a file whose landing stopped before its log row."""

    rows: int
    flagged: int
    arrival_ts: datetime
    ingested_at: datetime


def interrupted_landings(spark: SparkSession, table: str, ids: Sequence[str]) -> dict[str, InterruptedLanding]:
    """The ids among ``ids`` (none of them in the log) that have rows in bronze.

    A landing commits its bronze rows, then its log row; a call stopped
    between the two left rows the log does not name. Each ingest call writes
    files of its own ids, so the ids' min/max statistics let the scan skip
    almost every file.
    """
    quoted = ", ".join(f"'{iid}'" for iid in ids)
    rows = spark.sql(
        f"select ingestion_id, count(*) as row_count, count_if(parse_error is not null) as flagged, "
        f"min(arrival_ts) as arrival_ts, min(ingested_at) as ingested_at "
        f"from {table} where ingestion_id in ({quoted}) group by ingestion_id"
    ).collect()
    return {
        row.ingestion_id: InterruptedLanding(
            row.row_count, row.flagged, row.arrival_ts.astimezone(UTC), row.ingested_at.astimezone(UTC)
        )
        for row in rows
    }


def append_rows(frame: DataFrame, table: str, settings: IngestSettings) -> None:
    writer = frame.writeTo(table)
    if settings.table_format == "iceberg":
        # All rows share one arrival date: Iceberg's default hash distribution
        # would shuffle them into a single writing task.
        writer = writer.option("distribution-mode", "none")
    writer.append()
