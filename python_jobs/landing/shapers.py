"""How a landed line becomes typed columns: the JSON parse and its line-level
checks (invalid UTF-8, not a JSON object, content after the object), then one
shaper per feed that types the fields and names the first thing wrong with the
line in ``parse_error``.

Nothing here reads or writes a table: the functions build column expressions
over a frame of lines, for the file ingest and the streams alike.
"""

from __future__ import annotations

from functools import cache

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from python_jobs.core.constants import CUSTOMER_TIERS, EVENT_TYPES, MONEY, MONEY_EVENT_TYPES
from python_jobs.landing.feeds import Feed, IngestSettings

# ISO-8601 date-time that carries a UTC offset (Z or +hh:mm).
ISO_WITH_OFFSET = r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})$"
# What JSON counts as whitespace between values.
JSON_WHITESPACE = (" ", "\t", "\r", "\n")


def parse_utc_timestamp(raw: Column) -> Column:
    """ISO-8601 with offset -> UTC timestamp (the session time zone is UTC)."""
    return F.when(raw.rlike(ISO_WITH_OFFSET), F.to_timestamp(raw))


def parse_flag(raw: Column) -> Column:
    """JSON true/false (or absent) -> boolean; anything else -> null."""
    lowered = F.lower(F.trim(raw))
    return (
        F.when(raw.isNull(), F.lit(False)).when(lowered == "true", F.lit(True)).when(lowered == "false", F.lit(False))
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
    horizon = F.col("arrival_ts") + F.expr(f"make_dt_interval(0, 0, 0, {settings.max_future_skew_hours * 3600})")
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
            json["amount"].isNotNull() & ~F.coalesce(amount == F.col("_amount_exact"), F.lit(False)),
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
