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

The pieces are modules of their own: :mod:`python_jobs.landing.feeds` (the
feeds and settings), :mod:`python_jobs.landing.ingest_lines` (reading and
numbering lines), :mod:`python_jobs.landing.shapers` (parsing and typing them)
and :mod:`python_jobs.landing.bronze` (the bronze tables and the ingestion
log). This module lands files with them and is the command line.
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

from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F

from python_jobs.core import run_lock
from python_jobs.core.failpoints import INGEST_AFTER_ROWS, failpoint
from python_jobs.core.local_rows import local_rows
from python_jobs.core.spark_config import get_spark
from python_jobs.landing.bronze import (
    INGESTIONS_DDL,
    INGESTIONS_TABLE,
    already_landed,
    append_rows,
    bronze_frame,
    ensure_bronze,
    interrupted_landings,
    landings,
)
from python_jobs.landing.feeds import FEEDS, Feed, IngestError, IngestSettings, canonical_source
from python_jobs.landing.ingest_lines import check_paths, count_lines, read_lines


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


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def ingestion_id_for(feed: Feed, source_system: str, sha256: str) -> str:
    """Stable id of a landed file: the same bytes from the same source land once."""
    return hashlib.sha256(f"{feed.name}|{source_system}|{sha256}".encode()).hexdigest()[:32]


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
        landed = landings(spark, [r.ingestion_id for _, r in new], source_system, arrival_ts, ingested_at)
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
            f"{result.path}: same bytes as {result.duplicate_of} (ingestion {result.ingestion_id}); landed once",
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
    parser = argparse.ArgumentParser(prog="python -m python_jobs.landing.ingest", description=__doc__.split("\n\n")[0])
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
