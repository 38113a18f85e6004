"""Land newline-delimited JSON files in bronze, append-only.

    python -m python_jobs.landing.ingest --source web [--arrival-ts 2024-01-16T09:00:00+00:00] FILE...
    python -m python_jobs.landing.ingest --source crm --feed customers FILE...

Every non-blank line becomes one bronze row: well-formed lines with typed
columns, malformed ones with ``parse_error`` set, so they can be routed to
quarantine, counted and replayed. Nothing is updated or deleted, and a file
already landed (same source, same bytes), earlier or under another path in
the same call, is skipped with a message.

Hostile input: a line that is not valid UTF-8 is flagged ``invalid_utf8``
(its bytes are kept as they came in ``raw_payload``; no decoder replaces them,
so two different ids never become one), a line with anything but whitespace
after its JSON object (``{..}{..}``) is flagged ``trailing_content``, file
names are read literally (never as glob patterns; names Spark cannot read,
``_x``, ``.x`` or ``a:b``, are refused before anything lands), and source
names are canonical (trimmed, lower-cased, ``[a-z0-9_]``), so ``WEB`` and
``web`` are one source.

Rows keep their physical line number (from 1, blank lines included). Files are
read in parallel splits: a first pass counts the lines of each split, so the
second pass numbers, parses and appends without sorting the whole input.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache, reduce
from pathlib import Path
from typing import TextIO

from pyspark.sql import Column, DataFrame, Observation, Row, SparkSession
from pyspark.sql import functions as F

from python_jobs.core import run_lock
from python_jobs.core.constants import CUSTOMER_TIERS, EVENT_TYPES, MONEY, MONEY_EVENT_TYPES
from python_jobs.core.failpoints import INGEST_AFTER_ROWS, failpoint
from python_jobs.core.local_rows import local_rows
from python_jobs.core.spark_config import get_spark

# ISO-8601 date-time that carries a UTC offset (Z or +hh:mm).
ISO_WITH_OFFSET = r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})$"
# A canonical source name (after trimming and lower-casing).
SOURCE_NAME = re.compile(r"[a-z0-9_]{1,64}")
# Characters Hadoop reads as glob syntax in a path (backslash escapes them).
GLOB_SYNTAX = re.compile(r"([\\\[\]{}*?])")
# What JSON counts as whitespace between values.
JSON_WHITESPACE = (" ", "\t", "\r", "\n")


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
    # The earlier path of this call with the same bytes, if any.
    duplicate_of: str | None = None
    # Its rows were in bronze without a log row (an earlier call stopped
    # between its two commits): only the log row was written now.
    recovered: bool = False


def canonical_source(name: str) -> str:
    """``name`` trimmed and lower-cased; raises :class:`IngestError` unless it is ``[a-z0-9_]``, 1 to 64 long.

    One spelling per source: ``WEB``, `` web `` and ``web`` land as ``web``,
    so a file already landed under one of them is not landed again.
    """
    canonical = name.strip().lower()
    if not name.isascii() or not SOURCE_NAME.fullmatch(canonical):
        raise IngestError(
            f"--source {name!r}: a source name is 1 to 64 of a-z, 0-9 and _ ([a-z0-9_]), "
            "after trimming and lower-casing"
        )
    return canonical


def literal_path(path: Path) -> str:
    """``path`` for Spark's readers, taken literally.

    Hadoop expands ``[ ] { } * ?`` and ``\\`` in a path as a glob pattern, so
    ``a[1].ndjson`` would read ``a1.ndjson``; each is escaped with a backslash.
    """
    return GLOB_SYNTAX.sub(r"\\\1", str(path))


def unreadable_name(path: Path) -> str | None:
    """Why Spark cannot read ``path`` by its name, or None.

    Names are otherwise taken literally (:func:`literal_path`), but Spark
    skips a file whose name starts with ``_`` or ``.`` as hidden, even when
    named (it would land no line and count as landed), and Hadoop cannot open
    one whose name holds ``:`` (it reads the part before it as a URL scheme).
    """
    if path.name.startswith(("_", ".")):
        return "Spark skips a file whose name starts with '_' or '.'"
    if ":" in path.name:
        return "Hadoop cannot open a file whose name holds ':'"
    return None


def check_paths(paths: Sequence[Path]) -> None:
    """Raise :class:`IngestError`, before anything lands, unless every path is a file Spark can read."""
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        raise IngestError(f"no such file: {', '.join(missing)}")
    refused = [f"{path} ({why})" for path in paths if (why := unreadable_name(path))]
    if refused:
        raise IngestError(f"rename these files, nothing landed: {'; '.join(refused)}")


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
LANDING_DDL = "ingestion_id string, source_system string, arrival_ts timestamp, ingested_at timestamp"
# monotonically_increasing_id() is (partition index << 33) + position in the partition.
POSITION_IN_PARTITION = (1 << 33) - 1


def is_blank(raw: Column) -> Column:
    return F.trim(raw) == ""


def scan_lines(spark: SparkSession, path: Path, ingestion_id: str) -> DataFrame:
    """Every physical line of ``path``, with where it was read.

    ``_block`` is the byte offset of the split the line came from and
    ``_index`` its 0-based position in the split's Spark partition. A file read
    on its own gets one split per partition (:func:`count_lines` checks it), so
    ``_index`` is the line's position in its split.
    """
    return spark.read.text(literal_path(path)).select(
        F.col("value").alias("raw_payload"),
        F.lit(str(path)).alias("source_file"),
        F.lit(ingestion_id).alias("ingestion_id"),
        F.input_file_block_start().alias("_block"),
        F.monotonically_increasing_id().bitwiseAND(F.lit(POSITION_IN_PARTITION)).alias("_index"),
    )


@dataclass(frozen=True)
class LineCount:
    """Lines of one file, and how many lines precede each of its splits."""

    lines: int
    blank_lines: int
    lines_before: dict[int, int]


def count_lines(spark: SparkSession, files: Sequence[tuple[Path, str]]) -> dict[str, LineCount]:
    """Line and blank-line counts per ingestion id, in one pass over ``files``.

    Files without any line are absent.
    """
    splits = (
        reduce(DataFrame.unionByName, [scan_lines(spark, path, iid) for path, iid in files])
        .groupBy("ingestion_id", "_block")
        .agg(
            F.count("*").alias("lines"),
            F.count_if(is_blank(F.col("raw_payload"))).alias("blank_lines"),
            F.min("_index").alias("first_index"),
            F.max("_index").alias("last_index"),
        )
        .collect()
    )
    by_file: dict[str, list[Row]] = {}
    for split in sorted(splits, key=lambda s: (s.ingestion_id, s["_block"])):
        if split.first_index != 0 or split.last_index != split.lines - 1:
            raise RuntimeError(
                f"lines of ingestion {split.ingestion_id} at byte {split['_block']} share a Spark "
                "partition with other lines, so they cannot be numbered; is "
                "spark.sql.files.maxPartitionNum set?"
            )
        by_file.setdefault(split.ingestion_id, []).append(split)
    counts = {}
    for iid, file_splits in by_file.items():
        before, lines_before = 0, {}
        for split in file_splits:
            lines_before[split["_block"]] = before
            before += split.lines
        counts[iid] = LineCount(before, sum(s.blank_lines for s in file_splits), lines_before)
    return counts


def read_lines(spark: SparkSession, path: Path, ingestion_id: str, count: LineCount) -> DataFrame:
    """One row per physical line of ``path`` with its 1-based line number."""
    lines_before = F.create_map(
        *(F.lit(n).cast("bigint") for pair in count.lines_before.items() for n in pair)
    )
    line_number = F.element_at(lines_before, F.col("_block")) + F.col("_index") + 1
    return scan_lines(spark, path, ingestion_id).select(
        "raw_payload",
        line_number.cast("int").alias("line_number"),
        "source_file",
        "ingestion_id",
    )


def is_invalid_utf8(raw: Column) -> Column:
    """Whether the line's bytes are not valid UTF-8.

    The text reader keeps a line's bytes as they are; decoding them replaces
    each invalid sequence with U+FFFD, so the re-encoded line differs from
    its bytes exactly when some were invalid.
    """
    return F.encode(raw, "UTF-8") != raw.cast("binary")


def has_content_after_value(line: Column) -> Column:
    """Whether anything but whitespace follows the first JSON value of ``line``.

    JSON readers stop after the first value, so ``{"a":1}{"b":2}`` parses as
    ``{"a":1}``. This scans the characters, counting brackets outside strings:
    the value ends where the count returns to 0. A native higher-order
    function (no Python), slower per line than the parser, so callers run it
    only on lines whose first ``}`` is not their last character.
    """
    def step(state: Column, char: Column) -> Column:
        depth, in_string, escaped = state["depth"], state["in_string"], state["escaped"]
        ended, bracket = state["ended"], ~in_string
        return F.struct(
            F.when(bracket & char.isin("{", "["), depth + 1)
            .when(bracket & char.isin("}", "]"), depth - 1)
            .otherwise(depth)
            .alias("depth"),
            F.when(in_string, escaped | (char != '"')).otherwise(char == '"').alias("in_string"),
            (in_string & ~escaped & (char == "\\")).alias("escaped"),
            (ended | (bracket & char.isin("}", "]") & (depth == 1))).alias("ended"),
            (state["trailing"] | (ended & ~char.isin(*JSON_WHITESPACE))).alias("trailing"),
        )

    start = F.struct(
        F.lit(0).alias("depth"),
        F.lit(False).alias("in_string"),
        F.lit(False).alias("escaped"),
        F.lit(False).alias("ended"),
        F.lit(False).alias("trailing"),
    )
    return F.aggregate(F.split(line, ""), start, step, lambda state: state["trailing"])


def parse_json(lines: DataFrame, feed: Feed) -> DataFrame:
    """``_json`` (the feed's fields as strings) and the line-level checks.

    ``_is_invalid_utf8``: the line is not valid UTF-8; ``_is_bad_json``: it is
    not a JSON object; ``_has_trailing_content``: more follows the object.
    """
    first, checks = _parse_json_columns(feed)
    return lines.select("*", *first).select("*", *checks[:1]).select("*", *checks[1:])


@cache
def _parse_json_columns(feed: Feed) -> tuple[tuple[Column, ...], tuple[Column, ...]]:
    schema = ", ".join(f"`{name}` string" for name in feed.fields) + ", _corrupt_record string"
    options = {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": "_corrupt_record"}
    parsed = F.from_json("raw_payload", schema, options)
    trimmed = F.trim("raw_payload")
    bad_json = F.col("_json").isNull() | F.col("_json._corrupt_record").isNotNull() | ~trimmed.startswith("{")
    # A line whose first "}" is its last character holds one object at most.
    one_object = F.instr(trimmed, "}") == F.length(trimmed)
    trailing = F.when(F.col("_is_bad_json") | one_object, F.lit(False)).otherwise(has_content_after_value(trimmed))
    return (
        (parsed.alias("_json"), is_invalid_utf8(F.col("raw_payload")).alias("_is_invalid_utf8")),
        (bad_json.alias("_is_bad_json"), trailing.alias("_has_trailing_content")),
    )


def _future_check(ts: Column, settings: IngestSettings) -> Column:
    horizon = F.col("arrival_ts") + F.expr(
        f"make_dt_interval(0, 0, 0, {settings.max_future_skew_hours * 3600})"
    )
    return ts > horizon


# The shapers compute each parsed value once, as a "_" column, and derive the
# typed columns and parse_error from those columns. Spark does not share an
# expression between the conditional branches of a CASE, so a regex or a cast
# written into several checks would run once per check on every row.
#
# Their expressions (and parse_json's) name columns and depend only on the
# feed and the settings, so each process builds them once (@cache): building
# them took some 800 calls into the JVM, 0.3 s of an ingest of a small file.


def shape_events(parsed: DataFrame, settings: IngestSettings) -> DataFrame:
    """Typed event columns plus ``parse_error`` for malformed lines."""
    values, typed = _event_columns(settings)
    return parsed.select("*", *values).select("*", *typed)


@cache
def _event_columns(settings: IngestSettings) -> tuple[tuple[Column, ...], tuple[Column, ...]]:
    json = F.col("_json")
    values = (
        F.lower(blank_to_null(json["event_type"])).alias("_event_type"),
        blank_to_null(json["event_ts"]).isNull().alias("_event_ts_missing"),
        json["event_ts"].rlike(ISO_WITH_OFFSET).alias("_event_ts_has_offset"),
        F.to_timestamp(json["event_ts"]).alias("_event_ts_any"),
        F.expr(f"try_cast(_json.amount as {MONEY})").alias("_amount"),
        F.expr("try_cast(_json.amount as decimal(38,10))").alias("_amount_exact"),
        parse_flag(json["is_correction"]).alias("_is_correction"),
        parse_flag(json["is_deleted"]).alias("_is_deleted"),
    )
    event_type, amount = F.col("_event_type"), F.col("_amount")
    # parse_utc_timestamp(event_ts), from the values above.
    event_ts = F.when(F.col("_event_ts_has_offset"), F.col("_event_ts_any"))
    error = first_error(
        (F.col("_is_invalid_utf8"), "invalid_utf8"),
        (F.col("_is_bad_json"), "invalid_json"),
        (F.col("_has_trailing_content"), "trailing_content"),
        (event_type.isNull(), "missing_event_type"),
        (F.col("_event_ts_missing"), "missing_event_ts"),
        (event_ts.isNull() & F.col("_event_ts_any").isNotNull(), "event_ts_without_offset"),
        (event_ts.isNull(), "unparseable_event_ts"),
        (~event_type.isin(*EVENT_TYPES), "unknown_event_type"),
        (
            json["amount"].isNotNull()
            & ~F.coalesce(amount == F.col("_amount_exact"), F.lit(False)),
            "invalid_amount",
        ),
        (event_type.isin(*MONEY_EVENT_TYPES) & amount.isNull(), "missing_amount"),
        (F.col("_is_correction").isNull() | F.col("_is_deleted").isNull(), "invalid_flag"),
        (_future_check(event_ts, settings), "event_ts_in_future"),
    )
    return values, (
        blank_to_null(json["event_id"]).alias("event_id"),
        event_type.alias("event_type"),
        blank_to_null(json["user_id"]).alias("user_id"),
        amount.alias("amount"),
        json["event_ts"].alias("event_ts_raw"),
        event_ts.alias("event_ts"),
        F.coalesce(F.col("_is_correction"), F.lit(False)).alias("is_correction"),
        blank_to_null(json["corrects_event_id"]).alias("corrects_event_id"),
        F.coalesce(F.col("_is_deleted"), F.lit(False)).alias("is_deleted"),
        error.alias("parse_error"),
    )


def shape_customers(parsed: DataFrame, settings: IngestSettings) -> DataFrame:
    """Typed customer-change columns plus ``parse_error``."""
    values, typed = _customer_columns(settings)
    return parsed.select("*", *values).select("*", *typed)


@cache
def _customer_columns(settings: IngestSettings) -> tuple[tuple[Column, ...], tuple[Column, ...]]:
    json = F.col("_json")
    values = (
        parse_utc_timestamp(json["updated_at"]).alias("_updated_at"),
        F.lower(blank_to_null(json["tier"])).alias("_tier"),
        parse_flag(json["is_deleted"]).alias("_is_deleted"),
    )
    updated_at, tier = F.col("_updated_at"), F.col("_tier")
    error = first_error(
        (F.col("_is_invalid_utf8"), "invalid_utf8"),
        (F.col("_is_bad_json"), "invalid_json"),
        (F.col("_has_trailing_content"), "trailing_content"),
        (blank_to_null(json["customer_id"]).isNull(), "missing_customer_id"),
        (blank_to_null(json["updated_at"]).isNull(), "missing_updated_at"),
        (updated_at.isNull(), "unparseable_updated_at"),
        (tier.isNotNull() & ~tier.isin(*CUSTOMER_TIERS), "unknown_tier"),
        (F.col("_is_deleted").isNull(), "invalid_flag"),
        (_future_check(updated_at, settings), "updated_at_in_future"),
    )
    return values, (
        blank_to_null(json["customer_id"]).alias("customer_id"),
        tier.alias("tier"),
        blank_to_null(json["region"]).alias("region"),
        json["updated_at"].alias("updated_at_raw"),
        updated_at.alias("updated_at"),
        F.coalesce(F.col("_is_deleted"), F.lit(False)).alias("is_deleted"),
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


def bronze_frame(
    lines: DataFrame, landed: DataFrame, feed: Feed, settings: IngestSettings
) -> DataFrame:
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


def land(
    spark: SparkSession,
    feed: Feed,
    files: Sequence[tuple[Path, FileResult]],
    landed: DataFrame,
    table: str,
    settings: IngestSettings,
) -> None:
    """Append the bronze rows of ``files`` and fill in their results' counts.

    Two passes over the files: one counts the lines of each split (line
    numbers continue from split to split), the other parses and appends.
    """
    counts = count_lines(spark, [(path, r.ingestion_id) for path, r in files])
    with_lines = [(path, r) for path, r in files if r.ingestion_id in counts]
    for _, result in files:
        count = counts.get(result.ingestion_id)
        result.lines_read, result.blank_lines = (count.lines, count.blank_lines) if count else (0, 0)
    if not with_lines:
        return
    lines = reduce(
        DataFrame.unionByName,
        [read_lines(spark, path, r.ingestion_id, counts[r.ingestion_id]) for path, r in with_lines],
    )
    observed = Observation()
    per_file = []
    for n, (_, result) in enumerate(with_lines):
        of_file = F.col("ingestion_id") == result.ingestion_id
        per_file += [
            F.count_if(of_file).alias(f"rows_{n}"),
            F.count_if(of_file & F.col("parse_error").isNotNull()).alias(f"flagged_{n}"),
        ]
    frame = bronze_frame(lines, landed, feed, settings).observe(observed, *per_file)
    append_rows(frame, table, settings)
    metrics = observed.get
    for n, (_, result) in enumerate(with_lines):
        result.flagged = metrics[f"flagged_{n}"]
        result.accepted = metrics[f"rows_{n}"] - result.flagged


def ingest(
    spark: SparkSession,
    feed: Feed,
    source_system: str,
    paths: Sequence[Path],
    arrival_ts: datetime,
    settings: IngestSettings,
    out: TextIO | None = None,
) -> list[FileResult]:
    """Append ``paths`` to the feed's bronze table; return one result per file.

    A file whose bytes were already landed from ``source_system`` (earlier, or
    under another path in the same call) is skipped. ``source_system`` is
    canonicalised (:func:`canonical_source`).
    """
    out = out or sys.stdout
    source_system = canonical_source(source_system)
    check_paths(paths)
    ingested_at = datetime.now(UTC)
    results: list[FileResult] = []
    first_of: dict[str, FileResult] = {}
    for path in paths:
        sha = file_sha256(path)
        result = FileResult(str(path), ingestion_id_for(feed, source_system, sha), sha)
        first = first_of.setdefault(result.ingestion_id, result)
        if first is not result:
            result.skipped, result.duplicate_of = True, first.path
        results.append(result)

    table = ensure_bronze(spark, feed, settings)
    landed_before = already_landed(spark, settings, list(first_of))
    for result in first_of.values():
        result.skipped = result.ingestion_id in landed_before
    unlogged = [iid for iid in first_of if iid not in landed_before]
    interrupted = interrupted_landings(spark, table, unlogged) if unlogged else {}
    to_log: list[tuple[FileResult, datetime, datetime]] = []
    for path, result in zip(paths, results, strict=True):
        found = interrupted.get(result.ingestion_id)
        if found is None or result.skipped:
            continue
        # Its rows are in bronze already: count the file's lines again and
        # write the log row the stopped call did not, with that call's times.
        count = count_lines(spark, [(path.resolve(), result.ingestion_id)]).get(result.ingestion_id)
        result.lines_read, result.blank_lines = (count.lines, count.blank_lines) if count else (0, 0)
        result.accepted, result.flagged = found.rows - found.flagged, found.flagged
        result.recovered = True
        to_log.append((result, found.arrival_ts, found.ingested_at))
    new = [(path.resolve(), r) for path, r in zip(paths, results, strict=True) if not (r.skipped or r.recovered)]
    if new:
        landed = landings(
            spark, [r.ingestion_id for _, r in new], source_system, arrival_ts, ingested_at
        )
        land(spark, feed, new, landed, table, settings)
        failpoint(INGEST_AFTER_ROWS)
        to_log += [(result, arrival_ts, ingested_at) for _, result in new]
    if to_log:
        log_rows = [
            (
                result.ingestion_id,
                feed.name,
                source_system,
                result.path,
                result.sha256,
                landed_at,
                landed_at.date(),
                logged_at,
                result.lines_read,
                result.blank_lines,
                result.accepted,
                result.flagged,
            )
            for result, landed_at, logged_at in to_log
        ]
        log = local_rows(spark, log_rows, INGESTIONS_DDL)
        append_rows(log, f"{settings.database}.{INGESTIONS_TABLE}", settings)
    for result in results:
        report(result, table, out)
    return results


def report(result: FileResult, table: str, out: TextIO) -> None:
    if result.duplicate_of is not None:
        print(
            f"{result.path}: same bytes as {result.duplicate_of} (ingestion {result.ingestion_id}); "
            "landed once",
            file=out,
        )
        return
    if result.skipped:
        print(
            f"{result.path}: already landed as ingestion {result.ingestion_id}; nothing to do",
            file=out,
        )
        return
    if result.recovered:
        print(
            f"{result.path}: its {result.accepted + result.flagged} rows were in {table} without a log row "
            f"(an earlier ingest stopped between its two commits); log row written, nothing landed again "
            f"(ingestion {result.ingestion_id})",
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
        prog="python -m python_jobs.landing.ingest", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--source", required=True, help="source system, e.g. web, mobile, partner (lower-cased; a-z, 0-9, _)"
    )
    parser.add_argument("--feed", choices=sorted(FEEDS), default="events", help="kind of file")
    parser.add_argument("--arrival-ts", help="arrival time of the batch (default: now)")
    add_bronze_arguments(parser)
    parser.add_argument("files", nargs="+", metavar="FILE")
    return parser


def add_bronze_arguments(parser: argparse.ArgumentParser) -> None:
    """Where bronze is, for the file ingest and the stream alike."""
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


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        source_system = canonical_source(args.source)
        arrival_ts = parse_arrival(args.arrival_ts)
        paths = [Path(name) for name in args.files]
        check_paths(paths)
    except IngestError as exc:
        print(f"ingest: error: {exc}", file=sys.stderr)
        return 2
    settings = IngestSettings(schema=args.schema, table_format=args.table_format)
    lock = run_lock.acquire_for_tool(
        "ingest",
        args.schema,
        f"ingest of {len(paths)} {args.feed} file(s) from {source_system}",
        run_lock.Operation.LANDING,
    )
    if isinstance(lock, int):
        return lock
    try:
        spark = get_spark(args.table_format)
        results = ingest(spark, FEEDS[args.feed], source_system, paths, arrival_ts, settings)
    finally:
        lock.release()
    landed = [r for r in results if not r.skipped]
    print(
        f"ingest: {len(landed)} file(s) landed, {len(results) - len(landed)} already landed; "
        f"{sum(r.accepted for r in landed)} rows accepted, "
        f"{sum(r.flagged for r in landed)} flagged malformed"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
