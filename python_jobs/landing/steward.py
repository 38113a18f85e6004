"""Steward path for quarantined rows and publication holds.

    python -m python_jobs.landing.steward list
    python -m python_jobs.landing.steward release --reason "late partner file, approved" BRONZE_ROW_ID...
    python -m python_jobs.landing.steward reject --reason "test traffic" BRONZE_ROW_ID...
    python -m python_jobs.landing.steward holds
    python -m python_jobs.landing.steward holds approve --reason "promo day, checked with sales" HOLD_ID
    python -m python_jobs.landing.steward holds reject --reason "web re-sent 05-06 under new ids" HOLD_ID

Holds (docs/publication-gate.md): ``holds`` lists the open ones.
``approve`` records the decision; the next build publishes the pending values
(audited with actor and reason, restatement reason kept). ``reject`` sends the
arrivals behind the held change to quarantine as rejected (bronze keeps
them) and replays their event dates at once (``--no-replay``: the command to
run later is printed instead), so silver, gold and the hold agree again and
nothing published moves.

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
import json
import os
import sys
import unicodedata
import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from pyspark.sql import SparkSession

from python_jobs.core import run_lock
from python_jobs.core.dbt_runner import DbtRunError, DbtRunner
from python_jobs.core.local_rows import local_rows
from python_jobs.core.spark_config import REPO_ROOT, get_spark

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
        f"select bronze_row_id, status, quarantine_reason from {table} where bronze_row_id in ({quoted})"
    ).collect()
    return {row.bronze_row_id: row.asDict() for row in rows}


def decide(spark: SparkSession, schema: str, decision: str, ids: Sequence[str], reason: str, actor: str) -> int:
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
        "decision_id string, bronze_row_id string, decision string, reason string, actor string, decided_at timestamp",
    ).writeTo(f"{schema}_bronze.steward_decisions").append()
    print(f"steward: recorded {decision} of {len(ids)} row(s); the next dbt build applies it")
    return 0


def list_quarantine(spark: SparkSession, schema: str) -> int:
    """Print the first quarantined rows, oldest first, terminal-safe (:func:`format_table`)."""
    table = spark.table(f"{schema}_silver.silver_quarantine")
    rows = table.select(*LISTED_COLUMNS).orderBy("first_seen_at", "bronze_row_id").limit(LISTED_ROWS + 1).collect()
    print(format_table(LISTED_COLUMNS, [row.asDict() for row in rows[:LISTED_ROWS]]))
    if len(rows) > LISTED_ROWS:
        print(f"only the first {LISTED_ROWS} rows shown; query {schema}_silver.silver_quarantine for the rest")
    return 0


HOLD_COLUMNS = (
    "hold_id",
    "partition_value",
    "group_values",
    "checks_fired",
    "first_held_at",
    "last_judged_at",
    "decision",
    "breaches",
)
DECISION_COLUMNS = (
    "decision_id string, hold_id string, decision string, reason string, actor string, decided_at timestamp"
)
REJECTION_COLUMNS = (
    "decision_id string, bronze_row_id string, decision string, reason string, actor string, decided_at timestamp"
)


def open_holds(spark: SparkSession, schema: str) -> list[dict[str, Any]]:
    view = f"{schema}_audit.publication_holds"
    if not spark.catalog.tableExists(view):
        raise SystemExit(f"steward: error: no {view} yet; run `dbt build` first")
    return [
        row.asDict()
        for row in spark.table(view).where("state = 'open'").orderBy("partition_value", "hold_id").collect()
    ]


def list_holds(spark: SparkSession, schema: str) -> int:
    """Print the open holds, oldest partition first, and how to decide them."""
    holds = open_holds(spark, schema)
    if not holds:
        print("steward: no open publication hold")
        return 0
    print(format_table(HOLD_COLUMNS, holds))
    print(
        f"{len(holds)} open hold(s): each partition stays as published in every gold model that restates it. "
        "Decide with: python -m python_jobs.landing.steward holds approve|reject --reason '...' HOLD_ID"
    )
    return 0


def rejected_arrivals(spark: SparkSession, schema: str, hold: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The arrivals behind a held change: the ledger's silver rows of the hold's
    sources that changed its partition after the published rows were computed
    (their source_changed_run_at), through the last judgement."""
    groups = [group for group in (hold["group_values"] or "").split(",") if group]
    if not groups:
        return []
    sources = ", ".join(f"'{group.replace(chr(39), '')}'" for group in groups)
    partition = str(hold["partition_value"]).replace("'", "")
    return [
        row.asDict()
        for row in spark.sql(
            f"""
            with published as (
                select source_system, source_changed_run_at
                from {schema}_gold.gold_daily_revenue
                where event_date = date'{partition}'
            ),

            changed_keys as (
                select distinct changes.event_id, changes.source_system
                from {schema}_silver.silver_event_changes as changes
                left join published on changes.source_system = published.source_system
                where
                    changes.source_system in ({sources})
                    and date'{partition}' in (changes.event_date, changes.previous_event_date)
                    and changes.changed_run_at > coalesce(published.source_changed_run_at, timestamp'1900-01-01')
                    and changes.changed_run_at <= timestamp'{hold["last_judged_run_at"]}'
            )

            select distinct ledger.bronze_row_id, ledger.event_date
            from {schema}_silver.silver_event_arrivals as ledger
            left join published on ledger.source_system = published.source_system
            left semi join changed_keys
                on ledger.source_system = changed_keys.source_system
                and (ledger.event_id = changed_keys.event_id or ledger.event_date = date'{partition}')
            where
                ledger.route = 'silver'
                and ledger.source_system in ({sources})
                and ledger.ledger_run_at > coalesce(published.source_changed_run_at, timestamp'1900-01-01')
                and ledger.ledger_run_at <= timestamp'{hold["last_judged_run_at"]}'
            """
        ).collect()
    ]


def decide_hold(
    spark: SparkSession, schema: str, decision: str, hold_id: str, reason: str, actor: str
) -> tuple[int, dict[str, Any] | None, list[dict[str, Any]]]:
    """Records a steward's decision on an open hold; returns (exit code, the hold, the rejected arrivals)."""
    hold = next((h for h in open_holds(spark, schema) if h["hold_id"] == hold_id), None)
    if hold is None:
        print(f"steward: error: {printable(hold_id)}: no open publication hold with this id", file=sys.stderr)
        return 2, None, []
    decided_at = datetime.now(UTC)
    rejected = rejected_arrivals(spark, schema, hold) if decision == "reject" else []
    if rejected:
        why = f"publication hold {hold_id} rejected: {reason}"
        local_rows(
            spark,
            [(uuid.uuid4().hex, row["bronze_row_id"], "reject", why, actor, decided_at) for row in rejected],
            REJECTION_COLUMNS,
        ).writeTo(f"{schema}_bronze.steward_decisions").append()
    local_rows(spark, [(uuid.uuid4().hex, hold_id, decision, reason, actor, decided_at)], DECISION_COLUMNS).writeTo(
        f"{schema}_bronze.hold_decisions"
    ).append()
    what = "approval" if decision == "approve" else f"rejection ({len(rejected)} arrival(s) to quarantine)"
    print(f"steward: recorded the {what} of hold {hold_id} ({hold['partition_value']}, {hold['group_values']})")
    return 0, hold, rejected


def replay_vars(hold: Mapping[str, Any], rejected: Sequence[Mapping[str, Any]], reason: str) -> dict[str, Any]:
    """The build that applies a rejection: a replay of the held date and of the rejected arrivals' dates."""
    dates = sorted({str(hold["partition_value"])} | {str(row["event_date"]) for row in rejected if row["event_date"]})
    return {
        "backfill_start": dates[0],
        "backfill_end": dates[-1],
        "backfill_mode": "replay",
        "backfill_reason": f"publication hold {hold['hold_id']} rejected: {reason}",
        "backfill_releases_quarantine": False,
    }


def holds_command(spark: SparkSession, args: argparse.Namespace) -> int:
    if args.decision is None:
        return list_holds(spark, args.schema)
    if not args.hold_id or not (args.reason or "").strip():
        print("steward: error: holds approve|reject needs --reason and a HOLD_ID", file=sys.stderr)
        return 2
    lock = run_lock.acquire_for_tool(
        "steward", args.schema, f"steward holds {args.decision} {args.hold_id}", run_lock.Operation.STEWARD
    )
    if isinstance(lock, int):
        return lock
    try:
        code, hold, rejected = decide_hold(spark, args.schema, args.decision, args.hold_id, args.reason, args.actor)
    finally:
        lock.release()
    if code or args.decision == "approve":
        if not code:
            print("steward: the next dbt build publishes its pending values")
        return code
    assert hold is not None
    build_vars = replay_vars(hold, rejected, args.reason)
    if args.as_of:
        build_vars["as_of"] = args.as_of
    if args.no_replay:
        print(f"steward: replay it before the next scheduled build: dbt build --vars '{json.dumps(build_vars)}'")
        return 0
    print(f"steward: replaying {build_vars['backfill_start']} to {build_vars['backfill_end']} without them")
    try:
        DbtRunner(REPO_ROOT, schema=args.schema).invoke("build", vars=build_vars)
    except DbtRunError as error:
        print(
            f"steward: error: the replay failed ({error}); run it again: dbt build --vars '{json.dumps(build_vars)}'",
            file=sys.stderr,
        )
        return 1
    print(f"steward: hold {hold['hold_id']} rejected; silver and gold are back to what was published")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m python_jobs.landing.steward", description=__doc__)
    parser.add_argument("--schema", default=os.environ.get("LATECOMER_SCHEMA", "latecomer"))
    parser.add_argument("--actor", default=os.environ.get("LATECOMER_ACTOR", getpass.getuser()))
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("list", help="show quarantined rows")
    holds = commands.add_parser("holds", help="list open publication holds, or approve / reject one")
    holds.add_argument("decision", nargs="?", choices=("approve", "reject"))
    holds.add_argument("hold_id", nargs="?", metavar="HOLD_ID")
    holds.add_argument("--reason", help="why (recorded in the audit table)")
    holds.add_argument("--as-of", help="the replay build's as_of (reject; default: now)")
    holds.add_argument("--no-replay", action="store_true", help="reject: print the replay command, do not run it")
    for name in ("release", "reject"):
        sub = commands.add_parser(name, help=f"{name} quarantined rows")
        sub.add_argument("--reason", required=True, help="why (recorded in the audit table)")
        sub.add_argument("bronze_row_ids", nargs="+", metavar="BRONZE_ROW_ID")
    args = parser.parse_args(argv)
    spark = get_spark()
    if args.command == "list":
        return list_quarantine(spark, args.schema)
    if args.command == "holds":
        return holds_command(spark, args)
    if not args.reason.strip():
        print("steward: error: --reason must not be empty", file=sys.stderr)
        return 2
    lock = run_lock.acquire_for_tool(
        "steward",
        args.schema,
        f"steward {args.command} of {len(args.bronze_row_ids)} row(s)",
        run_lock.Operation.STEWARD,
    )
    if isinstance(lock, int):
        return lock
    try:
        return decide(spark, args.schema, args.command, args.bronze_row_ids, args.reason, args.actor)
    finally:
        lock.release()


if __name__ == "__main__":
    sys.exit(main())
