"""Steward path for quarantined rows: list, release or reject them.

    python -m python_jobs.landing.steward list
    python -m python_jobs.landing.steward release --reason "late partner file, approved" BRONZE_ROW_ID...
    python -m python_jobs.landing.steward reject --reason "test traffic" BRONZE_ROW_ID...

Decisions are appended to ``<schema>_bronze.steward_decisions``; the next
``dbt build`` applies them: released rows merge into silver and restate gold
like any late event (audited as quarantine_release), rejected rows stay in
quarantine with the reason. Only rows held for lateness can be released;
malformed rows are fixed at the source and landed again.

What ``list`` prints comes from landed files, so it is made terminal-safe:
control and format characters (escape sequences, carriage returns,
right-to-left overrides) are shown as ``\\xNN`` / ``\\uNNNN``, and raw
payloads are cut to their first 100 characters.
"""

from __future__ import annotations

import argparse
import getpass
import os
import sys
import unicodedata
import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from pyspark.sql import SparkSession

from python_jobs.core import run_lock
from python_jobs.core.local_rows import local_rows
from python_jobs.core.spark_config import get_spark

RELEASABLE_REASONS = ("beyond_watermark",)
LISTED_COLUMNS = (
    "bronze_row_id",
    "source_system",
    "quarantine_reason",
    "status",
    "event_id",
    "event_ts",
    "arrival_ts",
    "first_seen_at",
    "raw_payload",
)
LISTED_ROWS = 100
PAYLOAD_CHARS = 100
NAMED_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
# Control, format, surrogate, line and paragraph separator characters.
UNPRINTABLE_CATEGORIES = ("Cc", "Cf", "Cs", "Zl", "Zp")


def printable(value: Any) -> str:
    """``value`` as text a terminal shows as it is: unprintable characters escaped (``\\x1b``)."""
    if value is None:
        return "null"
    shown = []
    for char in str(value):
        if char in NAMED_ESCAPES:
            shown.append(NAMED_ESCAPES[char])
        elif unicodedata.category(char) in UNPRINTABLE_CATEGORIES:
            shown.append(f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}")
        else:
            shown.append(char)
    return "".join(shown)


def format_table(columns: Sequence[str], rows: Sequence[Mapping[str, Any]]) -> str:
    """``rows`` as an aligned text table of ``columns``, every cell :func:`printable`."""
    cells = [[printable(row[column]) for column in columns] for row in rows]
    for line in cells:
        for n, column in enumerate(columns):
            if column == "raw_payload" and len(line[n]) > PAYLOAD_CHARS:
                line[n] = line[n][:PAYLOAD_CHARS] + "..."
    widths = [max([len(column)] + [len(line[n]) for line in cells]) for n, column in enumerate(columns)]
    rule = "+" + "+".join("-" * (width + 2) for width in widths) + "+"
    body = [
        "| " + " | ".join(text.ljust(width) for text, width in zip(line, widths, strict=True)) + " |"
        for line in [list(columns), *cells]
    ]
    return "\n".join([rule, body[0], rule, *body[1:], rule])


def quarantine_rows(spark: SparkSession, schema: str, ids: Sequence[str]) -> dict[str, dict]:
    table = f"{schema}_silver.silver_quarantine"
    if not spark.catalog.tableExists(table):
        raise SystemExit(f"steward: error: no {table} yet; run `dbt build` first")
    quoted = ", ".join("'" + i.replace("'", "") + "'" for i in ids)
    rows = spark.sql(
        f"select bronze_row_id, status, quarantine_reason from {table} "
        f"where bronze_row_id in ({quoted})"
    ).collect()
    return {row.bronze_row_id: row.asDict() for row in rows}


def decide(
    spark: SparkSession, schema: str, decision: str, ids: Sequence[str], reason: str, actor: str
) -> int:
    found = quarantine_rows(spark, schema, ids)
    problems = []
    for bronze_row_id in ids:
        row = found.get(bronze_row_id)
        if row is None:
            problems.append(f"{bronze_row_id}: not in quarantine")
        elif row["status"] != "quarantined":
            problems.append(f"{bronze_row_id}: already {row['status']}")
        elif decision == "release" and row["quarantine_reason"] not in RELEASABLE_REASONS:
            problems.append(
                f"{bronze_row_id}: held as '{row['quarantine_reason']}', which cannot be released; "
                "fix the line at the source and land the file again"
            )
    if problems:
        for problem in problems:
            print(f"steward: error: {printable(problem)}", file=sys.stderr)
        print("steward: nothing recorded", file=sys.stderr)
        return 2
    decided_at = datetime.now(UTC)
    rows = [(uuid.uuid4().hex, i, decision, reason, actor, decided_at) for i in ids]
    local_rows(
        spark,
        rows,
        "decision_id string, bronze_row_id string, decision string, reason string, "
        "actor string, decided_at timestamp",
    ).writeTo(f"{schema}_bronze.steward_decisions").append()
    print(f"steward: recorded {decision} of {len(ids)} row(s); the next dbt build applies it")
    return 0


def list_quarantine(spark: SparkSession, schema: str) -> int:
    """Print the first quarantined rows, oldest first, terminal-safe (:func:`format_table`)."""
    table = spark.table(f"{schema}_silver.silver_quarantine")
    rows = (
        table.select(*LISTED_COLUMNS)
        .orderBy("first_seen_at", "bronze_row_id")
        .limit(LISTED_ROWS + 1)
        .collect()
    )
    print(format_table(LISTED_COLUMNS, [row.asDict() for row in rows[:LISTED_ROWS]]))
    if len(rows) > LISTED_ROWS:
        print(f"only the first {LISTED_ROWS} rows shown; query {schema}_silver.silver_quarantine for the rest")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m python_jobs.landing.steward", description=__doc__)
    parser.add_argument("--schema", default=os.environ.get("LATECOMER_SCHEMA", "latecomer"))
    parser.add_argument("--actor", default=os.environ.get("LATECOMER_ACTOR", getpass.getuser()))
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("list", help="show quarantined rows")
    for name in ("release", "reject"):
        sub = commands.add_parser(name, help=f"{name} quarantined rows")
        sub.add_argument("--reason", required=True, help="why (recorded in the audit table)")
        sub.add_argument("bronze_row_ids", nargs="+", metavar="BRONZE_ROW_ID")
    args = parser.parse_args(argv)
    spark = get_spark()
    if args.command == "list":
        return list_quarantine(spark, args.schema)
    if not args.reason.strip():
        print("steward: error: --reason must not be empty", file=sys.stderr)
        return 2
    lock = run_lock.acquire_for_tool(
        "steward", args.schema, f"steward {args.command} of {len(args.bronze_row_ids)} row(s)"
    )
    if isinstance(lock, int):
        return lock
    try:
        return decide(spark, args.schema, args.command, args.bronze_row_ids, args.reason, args.actor)
    finally:
        lock.release()


if __name__ == "__main__":
    sys.exit(main())
