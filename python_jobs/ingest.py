"""Land newline-delimited JSON files in bronze, append-only.

    python -m python_jobs.ingest --source web [--arrival-ts 2024-01-16T09:00:00+00:00] FILE...
    python -m python_jobs.ingest --source crm --feed customers FILE...

Every non-blank line becomes one bronze row: well-formed lines with typed
columns, malformed ones with ``parse_error`` set, so they can be routed to
quarantine, counted and replayed. Nothing is updated or deleted, and a file
already landed (same source, same bytes) is skipped with a message.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import reduce
from pathlib import Path
from typing import TextIO

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from python_jobs.spark_config import get_spark

EVENT_TYPES = ("page_view", "add_to_cart", "order_placed", "payment_confirmed", "refund")
MONEY_EVENT_TYPES = ("order_placed", "refund")
CUSTOMER_TIERS = ("bronze", "silver", "gold", "platinum")
# ISO-8601 date-time that carries a UTC offset (Z or +hh:mm).
ISO_WITH_OFFSET = r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})$"
MONEY = "decimal(18,2)"


@dataclass(frozen=True)
class Feed:
    """A kind of landing file: its bronze table, JSON fields and time field."""

    name: str
    table: str
    fields: tuple[str, ...]
    ts_field: str


EVENTS = Feed(
    name="events",
    table="bronze_events",
    fields=(
        "event_id",
        "event_type",
        "user_id",
        "amount",
        "event_ts",
        "is_correction",
        "corrects_event_id",
        "is_deleted",
    ),
    ts_field="event_ts",
)
CUSTOMERS = Feed(
    name="customers",
    table="bronze_customer_changes",
    fields=("customer_id", "tier", "region", "updated_at", "is_deleted"),
    ts_field="updated_at",
)
FEEDS = {feed.name: feed for feed in (EVENTS, CUSTOMERS)}

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


class IngestError(ValueError):
    """Bad arguments or input files; the message says what to fix."""


@dataclass(frozen=True)
class IngestSettings:
    schema: str
    table_format: str
    max_future_skew_hours: float = 24.0

    @property
    def database(self) -> str:
        return f"{self.schema}_bronze"


@dataclass
class FileResult:
    path: str
    ingestion_id: str
    sha256: str
    lines_read: int = 0
    blank_lines: int = 0
    accepted: int = 0
    flagged: int = 0
    skipped: bool = False


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def ingestion_id_for(feed: Feed, source_system: str, sha256: str) -> str:
    """Stable id of a landed file: the same bytes from the same source land once."""
    return hashlib.sha256(f"{feed.name}|{source_system}|{sha256}".encode()).hexdigest()[:32]


def parse_utc_timestamp(raw: Column) -> Column:
    """ISO-8601 with offset -> UTC timestamp (the session time zone is UTC)."""
    return F.when(raw.rlike(ISO_WITH_OFFSET), F.to_timestamp(raw))


def parse_flag(raw: Column) -> Column:
    """JSON true/false (or absent) -> boolean; anything else -> null."""
    lowered = F.lower(F.trim(raw))
    return (
        F.when(raw.isNull(), F.lit(False))
        .when(lowered == "true", F.lit(True))
        .when(lowered == "false", F.lit(False))
    )


def blank_to_null(raw: Column) -> Column:
    return F.when(F.trim(raw) != "", F.trim(raw))


def first_error(*checks: tuple[Column, str]) -> Column:
    """The reason of the first failing check, else null."""
    expr = None
    for failed, reason in checks:
        expr = F.when(failed, F.lit(reason)) if expr is None else expr.when(failed, F.lit(reason))
    assert expr is not None
    return expr


LINES_DDL = "raw_payload string, line_number int, source_file string, ingestion_id string"


def read_lines(spark: SparkSession, path: Path) -> DataFrame:
    """One row per physical line of ``path`` with its 1-based line number."""
    in_file_order = Window.orderBy("_position")
    return (
        spark.read.text(str(path))
        .withColumn("_position", F.monotonically_increasing_id())
        .withColumn("line_number", F.row_number().over(in_file_order))
        .withColumn("source_file", F.lit(str(path)))
        .withColumnRenamed("value", "raw_payload")
        .drop("_position")
    )


def parse_json(lines: DataFrame, feed: Feed) -> DataFrame:
    schema = ", ".join(f"`{name}` string" for name in feed.fields) + ", _corrupt_record string"
    options = {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": "_corrupt_record"}
    parsed = F.from_json("raw_payload", schema, options)
    return lines.withColumn("_json", parsed).withColumn(
        "_is_bad_json",
        F.col("_json").isNull()
        | F.col("_json._corrupt_record").isNotNull()
        | ~F.trim("raw_payload").startswith("{"),
    )


def _future_check(ts: Column, settings: IngestSettings) -> Column:
    horizon = F.col("arrival_ts") + F.expr(
        f"make_dt_interval(0, 0, 0, {settings.max_future_skew_hours * 3600})"
    )
    return ts > horizon


def shape_events(parsed: DataFrame, settings: IngestSettings) -> DataFrame:
    """Typed event columns plus ``parse_error`` for malformed lines."""
    json = F.col("_json")
    event_ts = parse_utc_timestamp(json["event_ts"])
    amount = F.expr(f"try_cast(_json.amount as {MONEY})")
    amount_exact = F.expr("try_cast(_json.amount as decimal(38,10))")
    event_type = F.lower(blank_to_null(json["event_type"]))
    error = first_error(
        (F.col("_is_bad_json"), "invalid_json"),
        (event_type.isNull(), "missing_event_type"),
        (blank_to_null(json["event_ts"]).isNull(), "missing_event_ts"),
        (
            event_ts.isNull() & F.to_timestamp(json["event_ts"]).isNotNull(),
            "event_ts_without_offset",
        ),
        (event_ts.isNull(), "unparseable_event_ts"),
        (~event_type.isin(*EVENT_TYPES), "unknown_event_type"),
        (
            json["amount"].isNotNull() & ~F.coalesce(amount == amount_exact, F.lit(False)),
            "invalid_amount",
        ),
        (event_type.isin(*MONEY_EVENT_TYPES) & amount.isNull(), "missing_amount"),
        (
            parse_flag(json["is_correction"]).isNull() | parse_flag(json["is_deleted"]).isNull(),
            "invalid_flag",
        ),
        (_future_check(event_ts, settings), "event_ts_in_future"),
    )
    return parsed.select(
        "*",
        blank_to_null(json["event_id"]).alias("event_id"),
        event_type.alias("event_type"),
        blank_to_null(json["user_id"]).alias("user_id"),
        amount.alias("amount"),
        json["event_ts"].alias("event_ts_raw"),
        event_ts.alias("event_ts"),
        F.coalesce(parse_flag(json["is_correction"]), F.lit(False)).alias("is_correction"),
        blank_to_null(json["corrects_event_id"]).alias("corrects_event_id"),
        F.coalesce(parse_flag(json["is_deleted"]), F.lit(False)).alias("is_deleted"),
        error.alias("parse_error"),
    )


def shape_customers(parsed: DataFrame, settings: IngestSettings) -> DataFrame:
    """Typed customer-change columns plus ``parse_error``."""
    json = F.col("_json")
    updated_at = parse_utc_timestamp(json["updated_at"])
    tier = F.lower(blank_to_null(json["tier"]))
    error = first_error(
        (F.col("_is_bad_json"), "invalid_json"),
        (blank_to_null(json["customer_id"]).isNull(), "missing_customer_id"),
        (blank_to_null(json["updated_at"]).isNull(), "missing_updated_at"),
        (updated_at.isNull(), "unparseable_updated_at"),
        (tier.isNotNull() & ~tier.isin(*CUSTOMER_TIERS), "unknown_tier"),
        (parse_flag(json["is_deleted"]).isNull(), "invalid_flag"),
        (_future_check(updated_at, settings), "updated_at_in_future"),
    )
    return parsed.select(
        "*",
        blank_to_null(json["customer_id"]).alias("customer_id"),
        tier.alias("tier"),
        blank_to_null(json["region"]).alias("region"),
        json["updated_at"].alias("updated_at_raw"),
        updated_at.alias("updated_at"),
        F.coalesce(parse_flag(json["is_deleted"]), F.lit(False)).alias("is_deleted"),
        error.alias("parse_error"),
    )


SHAPERS = {"events": shape_events, "customers": shape_customers}
LEADING_COLUMNS = (
    "ingestion_id",
    "source_system",
    "source_file",
    "line_number",
    "arrival_ts",
    "arrival_date",
    "ingested_at",
)


def bronze_frame(
    spark: SparkSession,
    feed: Feed,
    files: Sequence[tuple[Path, str]],
    source_system: str,
    arrival_ts: datetime,
    ingested_at: datetime,
    settings: IngestSettings,
) -> DataFrame:
    """Bronze rows for ``files`` ((path, ingestion id) pairs), blank lines removed.

    With no files, an empty frame of the feed's bronze layout.
    """
    per_file = [
        read_lines(spark, path).withColumn("ingestion_id", F.lit(iid)) for path, iid in files
    ] or [spark.createDataFrame([], LINES_DDL)]
    lines = (
        reduce(DataFrame.unionByName, per_file)
        .where(F.trim("raw_payload") != "")
        .withColumn("source_system", F.lit(source_system))
        .withColumn("arrival_ts", F.lit(arrival_ts).cast("timestamp"))
        .withColumn("arrival_date", F.to_date("arrival_ts"))
        .withColumn("ingested_at", F.lit(ingested_at).cast("timestamp"))
    )
    shaped = SHAPERS[feed.name](parse_json(lines, feed), settings)
    payload_columns = [c for c in shaped.columns if not c.startswith("_") and c != "raw_payload"]
    ordered = list(LEADING_COLUMNS) + [c for c in payload_columns if c not in LEADING_COLUMNS]
    return shaped.select(
        F.concat_ws(":", "ingestion_id", F.col("line_number")).alias("bronze_row_id"),
        *ordered,
        "raw_payload",
    )


def ensure_tables(
    spark: SparkSession, feed: Feed, sample: DataFrame, settings: IngestSettings
) -> str:
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


def already_landed(spark: SparkSession, settings: IngestSettings, ids: Sequence[str]) -> set[str]:
    log = f"{settings.database}.{INGESTIONS_TABLE}"
    quoted = ", ".join(f"'{iid}'" for iid in ids)
    rows = spark.sql(f"select ingestion_id from {log} where ingestion_id in ({quoted})").collect()
    return {row.ingestion_id for row in rows}


def ingest(
    spark: SparkSession,
    feed: Feed,
    source_system: str,
    paths: Sequence[Path],
    arrival_ts: datetime,
    settings: IngestSettings,
    out: TextIO | None = None,
) -> list[FileResult]:
    """Append ``paths`` to the feed's bronze table; return one result per file."""
    out = out or sys.stdout
    ingested_at = datetime.now(UTC)
    results = []
    for path in paths:
        sha = file_sha256(path)
        results.append(FileResult(str(path), ingestion_id_for(feed, source_system, sha), sha))
    files = [(path.resolve(), r.ingestion_id) for path, r in zip(paths, results, strict=True)]
    frame = bronze_frame(spark, feed, files, source_system, arrival_ts, ingested_at, settings)
    table = ensure_tables(spark, feed, frame, settings)
    # Every feed's table exists once anything landed, so a deployment that
    # receives only some feeds still builds (their models are then empty).
    for other in FEEDS.values():
        if other is not feed:
            empty = bronze_frame(spark, other, [], source_system, arrival_ts, ingested_at, settings)
            ensure_tables(spark, other, empty, settings)
    landed = already_landed(spark, settings, [r.ingestion_id for r in results])
    for result in results:
        result.skipped = result.ingestion_id in landed
    new_ids = [r.ingestion_id for r in results if not r.skipped]
    if new_ids:
        frame = frame.where(F.col("ingestion_id").isin(new_ids)).cache()
        counts = {
            row.ingestion_id: row
            for row in frame.groupBy("ingestion_id")
            .agg(
                F.count("*").alias("rows"),
                F.count("parse_error").alias("flagged"),
            )
            .collect()
        }
        frame.writeTo(table).append()
        log_rows = []
        for path, result in zip(paths, results, strict=True):
            if result.skipped:
                continue
            row = counts.get(result.ingestion_id)
            result.accepted = (row.rows - row.flagged) if row else 0
            result.flagged = row.flagged if row else 0
            result.lines_read, result.blank_lines = count_lines(path)
            log_rows.append(
                (
                    result.ingestion_id,
                    feed.name,
                    source_system,
                    str(path),
                    result.sha256,
                    arrival_ts,
                    arrival_ts.date(),
                    ingested_at,
                    result.lines_read,
                    result.blank_lines,
                    result.accepted,
                    result.flagged,
                )
            )
        spark.createDataFrame(log_rows, INGESTIONS_DDL).writeTo(
            f"{settings.database}.{INGESTIONS_TABLE}"
        ).append()
        frame.unpersist()
    for result in results:
        report(result, table, out)
    return results


def count_lines(path: Path) -> tuple[int, int]:
    lines = blanks = 0
    with path.open("rb") as handle:
        for line in handle:
            lines += 1
            blanks += not line.strip()
    return lines, blanks


def report(result: FileResult, table: str, out: TextIO) -> None:
    if result.skipped:
        print(
            f"{result.path}: already landed as ingestion {result.ingestion_id}; nothing to do",
            file=out,
        )
        return
    print(
        f"{result.path}: read {result.lines_read} lines, accepted {result.accepted}, "
        f"flagged {result.flagged} malformed, skipped {result.blank_lines} blank "
        f"-> {table} (ingestion {result.ingestion_id})",
        file=out,
    )


def parse_arrival(text: str | None) -> datetime:
    if text is None:
        return datetime.now(UTC)
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        example = "2024-01-16T09:00:00+00:00"
        raise IngestError(f"--arrival-ts {text!r} is not ISO-8601 (e.g. {example})") from None
    if value.tzinfo is None:
        raise IngestError(f"--arrival-ts {text!r} needs a UTC offset, e.g. {text}+00:00")
    return value.astimezone(UTC)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m python_jobs.ingest", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--source", required=True, help="source system, e.g. web, mobile, partner")
    parser.add_argument("--feed", choices=sorted(FEEDS), default="events", help="kind of file")
    parser.add_argument("--arrival-ts", help="arrival time of the batch (default: now)")
    parser.add_argument(
        "--schema",
        default=os.environ.get("LATECOMER_SCHEMA", "latecomer"),
        help="dbt target schema; bronze lands in <schema>_bronze",
    )
    parser.add_argument(
        "--table-format",
        default=os.environ.get("LATECOMER_TABLE_FORMAT", "iceberg"),
        choices=["iceberg", "delta"],
    )
    parser.add_argument("files", nargs="+", metavar="FILE")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if not args.source.strip() or not args.source.replace("_", "").isalnum():
            raise IngestError(f"--source {args.source!r}: use letters, digits and underscores")
        arrival_ts = parse_arrival(args.arrival_ts)
        paths = [Path(name) for name in args.files]
        missing = [str(p) for p in paths if not p.is_file()]
        if missing:
            raise IngestError(f"no such file: {', '.join(missing)}")
    except IngestError as exc:
        print(f"ingest: error: {exc}", file=sys.stderr)
        return 2
    settings = IngestSettings(schema=args.schema, table_format=args.table_format)
    spark = get_spark(args.table_format)
    results = ingest(spark, FEEDS[args.feed], args.source, paths, arrival_ts, settings)
    landed = [r for r in results if not r.skipped]
    print(
        f"ingest: {len(landed)} file(s) landed, {len(results) - len(landed)} already landed; "
        f"{sum(r.accepted for r in landed)} rows accepted, "
        f"{sum(r.flagged for r in landed)} flagged malformed"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
