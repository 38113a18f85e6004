"""Land a stream of events in bronze, exactly once: a Kafka topic or a landing folder.

    python -m python_jobs.landing.stream --source pos --kafka-bootstrap HOST:PORT --topic TOPIC
    python -m python_jobs.landing.stream --source web --folder DIR [--trigger-interval 10s]

A Spark Structured Streaming query that appends to the same bronze tables as
the file ingest (:mod:`python_jobs.landing.ingest`), shaped by the same
functions: every record becomes a bronze row, malformed ones with the same
``parse_error`` reasons, under the same canonical source names, with the
micro-batch's arrival time. Lateness is not judged here; no watermark, nothing
is dropped: the tiered pipeline decides what late means.

Two ways to run it: ``--trigger available-now`` (the default) reads what is
there and stops, for a scheduled job before ``dbt build``;
``--trigger-interval 10s`` runs a micro-batch every interval until SIGTERM or
SIGINT, then stops after the batch in flight (docs/streaming.md).

Exactly once across restarts. A checkpoint per stream (``--checkpoint``,
default ``<state dir>/streams/<name>``) records which records each
micro-batch holds before the batch runs, and that it ran after; a batch
whose end was not recorded runs again, with the same records. Bronze
recognises it:

* Kafka: a micro-batch lands as one ingestion whose id is derived from the
  checkpoint's query id and the batch id, so a batch run again has the same
  id. Its log row in ``bronze_ingestions`` is written after its rows: a batch
  already logged is skipped; one whose rows are in bronze without a log row
  (the process died between the two commits) gets its log row only, as an
  interrupted file ingest does. Each row keeps its record's identity,
  ``kafka:<topic>:<partition>:<offset>``, in ``source_file``, and its
  position in the batch (in topic, partition, offset order) in
  ``line_number``.
* A folder: each micro-batch's new files are landed by the file ingest
  itself, whose ingestion id is the file's bytes and source: a batch run
  again finds its files landed (or completes an interrupted one), and a file
  landed by both the stream and ``ingest`` lands once.

The stream holds a landing's locks (:mod:`python_jobs.core.run_lock`) as
``ingest`` does: for its whole run with ``available-now``; while landing each
micro-batch with an interval, waiting for a build that holds them. On a
shared catalog a landing holds only the bronze append lock, so builds run
while the stream lands.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType

from pyspark.sql import DataFrame, Observation, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.streaming import DataStreamReader, StreamingQuery

from python_jobs.core import run_lock
from python_jobs.core.failpoints import STREAM_AFTER_BATCH, STREAM_AFTER_ROWS, failpoint
from python_jobs.core.local_rows import local_rows
from python_jobs.core.spark_config import get_spark, local_folder, state_dir
from python_jobs.landing import bronze
from python_jobs.landing.feeds import FEEDS, Feed, IngestError, IngestSettings, canonical_source
from python_jobs.landing.ingest import add_bronze_arguments, ingest

INTERVAL = re.compile(r"^(\d+)\s*(ms|s|m|min|h)$")
INTERVAL_UNITS = {"ms": "milliseconds", "s": "seconds", "m": "minutes", "min": "minutes", "h": "hours"}
# How long a stream on an interval waits for the run lock before a batch
# (a build holds it for minutes) when LATECOMER_LOCK_WAIT_SECONDS is unset.
SERVICE_LOCK_WAIT_S = 3600.0
POLL_S = 0.5


class StreamError(ValueError):
    """Bad arguments; the message says what to fix."""


@dataclass(frozen=True)
class StreamSpec:
    """What a stream reads, for which feed and source, and where it keeps its checkpoint."""

    feed: Feed
    source_system: str
    checkpoint: str
    kafka_bootstrap: str | None = None
    topic: str | None = None
    folder: Path | None = None
    starting_offsets: str = "earliest"
    max_per_trigger: int | None = None
    metrics: Path | None = None

    @property
    def is_kafka(self) -> bool:
        return self.topic is not None


@dataclass
class BatchResult:
    """What one micro-batch did, for the stream's report line."""

    batch_id: int
    ingestion_ids: list[str]
    records: int = 0
    accepted: int = 0
    flagged: int = 0
    skipped: bool = False
    recovered: bool = False
    # When the batch's oldest and newest Kafka records were produced (epoch ms).
    produced_ms: tuple[int, int] | None = None

    def metrics_line(self, seconds: float, landed_at: float) -> str:
        """One JSON line of ``--metrics``: what the batch landed, how long it
        took, and when (epoch seconds), beside when its records were produced."""
        first, last = self.produced_ms or (None, None)
        return json.dumps(
            {
                "batch": self.batch_id,
                "records": 0 if self.skipped else self.records,
                "accepted": self.accepted,
                "flagged": self.flagged,
                "seconds": round(seconds, 3),
                "landed_at": round(landed_at, 3),
                "produced_first": None if first is None else first / 1000,
                "produced_last": None if last is None else last / 1000,
            }
        )


@dataclass
class QueryIdentity:
    """The query id of the checkpoint, known once the query has started.

    Micro-batches run on Spark's stream thread and may begin before
    ``start()`` returns to the main thread, so they wait for it here.
    """

    ready: threading.Event = field(default_factory=threading.Event)
    value: str = ""

    def set(self, query_id: str) -> None:
        self.value = query_id
        self.ready.set()

    def get(self) -> str:
        self.ready.wait()
        return self.value


def stream_name(feed: Feed, source_system: str, topic: str | None, folder: Path | None) -> str:
    """A stable, file-name-safe name per feed, source and input: the checkpoint's folder."""
    where = f"kafka-{topic}" if topic is not None else f"folder-{folder}"
    digest = hashlib.sha256(where.encode()).hexdigest()[:12]
    label = re.sub(r"[^A-Za-z0-9_.-]", "_", topic if topic is not None else (folder.name if folder else ""))
    return f"{feed.name}-{source_system}-{'kafka' if topic is not None else 'folder'}-{label}-{digest}"


def default_checkpoint(name: str) -> str:
    return str(state_dir() / "streams" / name)


def batch_ingestion_id(feed: Feed, source_system: str, query_id: str, batch_id: int) -> str:
    """The ingestion id of a Kafka micro-batch: the same for the same batch of the same checkpoint.

    The checkpoint's query id keeps two checkpoints (a stream started afresh
    after its checkpoint was deleted) from sharing ids for different records.
    """
    key = f"{feed.name}|{source_system}|stream|{query_id}|{batch_id}"
    return hashlib.sha256(key.encode()).hexdigest()[:32]


def kafka_lines(records: DataFrame, ingestion_id: str) -> DataFrame:
    """Kafka records as the ingest's lines (``LINES_DDL``), with each record's identity.

    ``raw_payload`` is the value's bytes as they came (a cast, no decoding:
    invalid UTF-8 is flagged as a file's line is); a record without a value
    (a tombstone) counts as a blank line. ``line_number`` is the record's
    position in the batch, in (topic, partition, offset) order, which a batch
    run again has too.
    """
    in_log_order = Window.orderBy("topic", "partition", "offset")
    return records.select(
        F.coalesce(F.col("value").cast("string"), F.lit("")).alias("raw_payload"),
        F.row_number().over(in_log_order).cast("int").alias("line_number"),
        F.format_string("kafka:%s:%d:%d", "topic", "partition", "offset").alias("source_file"),
        F.lit(ingestion_id).alias("ingestion_id"),
    )


def line_counts(lines: DataFrame, observation: Observation) -> DataFrame:
    """``lines``, counted into ``observation`` (``lines``) as a query reads them: no pass of its own."""
    return lines.observe(observation, F.count(F.lit(1)).alias("lines"))


def log_rows(
    spark: SparkSession, spec: StreamSpec, result: BatchResult, arrival_ts: datetime, ingested_at: datetime
) -> DataFrame:
    """The batch's row of the ingestion log (``INGESTIONS_DDL``); no file, so no sha256."""
    row = (
        result.ingestion_ids[0],
        spec.feed.name,
        spec.source_system,
        f"kafka:{spec.topic}:batch:{result.batch_id}",
        None,
        arrival_ts,
        arrival_ts.date(),
        ingested_at,
        result.records,
        result.records - result.accepted - result.flagged,
        result.accepted,
        result.flagged,
    )
    return local_rows(spark, [row], bronze.INGESTIONS_DDL)


def land_kafka_batch(
    records: DataFrame, batch_id: int, spec: StreamSpec, settings: IngestSettings, query_id: str
) -> BatchResult:
    """Land one Kafka micro-batch once, whatever landed of it before (see the module's docstring)."""
    spark = records.sparkSession
    iid = batch_ingestion_id(spec.feed, spec.source_system, query_id, batch_id)
    result = BatchResult(batch_id, [iid])
    table = bronze.ensure_bronze(spark, spec.feed, settings)
    if bronze.already_landed(spark, settings, [iid]):
        result.skipped = True
        return result
    counted, produced = Observation(), Observation()
    timed = records.observe(
        produced, F.min(F.unix_millis("timestamp")).alias("first"), F.max(F.unix_millis("timestamp")).alias("last")
    )
    lines = line_counts(kafka_lines(timed, iid), counted)
    interrupted = bronze.interrupted_landings(spark, table, [iid]).get(iid)
    if interrupted is not None:
        # Its rows are in bronze: count its records again, log it with their times.
        lines.write.format("noop").mode("overwrite").save()
        result.records = counted.get["lines"]
        result.accepted, result.flagged = interrupted.rows - interrupted.flagged, interrupted.flagged
        result.recovered = True
        log = log_rows(spark, spec, result, interrupted.arrival_ts, interrupted.ingested_at)
        bronze.append_rows(log, f"{settings.database}.{bronze.INGESTIONS_TABLE}", settings)
        return result
    now = datetime.now(UTC)
    landed = bronze.landings(spark, [iid], spec.source_system, now, now)
    shaped = Observation()
    frame = bronze.bronze_frame(lines, landed, spec.feed, settings).observe(
        shaped, F.count(F.lit(1)).alias("rows"), F.count_if(F.col("parse_error").isNotNull()).alias("flagged")
    )
    bronze.append_rows(frame, table, settings)
    failpoint(STREAM_AFTER_ROWS)
    result.records = counted.get["lines"]
    result.produced_ms = (produced.get["first"], produced.get["last"])
    result.flagged = shaped.get["flagged"]
    result.accepted = shaped.get["rows"] - result.flagged
    bronze.append_rows(
        log_rows(spark, spec, result, now, now), f"{settings.database}.{bronze.INGESTIONS_TABLE}", settings
    )
    return result


def batch_files(batch: DataFrame) -> list[Path]:
    """The local files of a folder stream's micro-batch.

    Read from its lines' file names: the micro-batch's plan does not name its
    files (``inputFiles()`` is empty), so an empty file, which has no line,
    is not landed (a file ingest would log it with 0 lines).
    """
    names = batch.select(F.input_file_name().alias("file")).distinct().collect()
    paths = []
    for location in sorted(row.file for row in names):
        path = local_folder(location)
        if path is None:
            raise StreamError(f"{location}: a folder stream lands local files only (the ingest hashes them)")
        paths.append(path)
    return paths


def land_folder_batch(batch: DataFrame, batch_id: int, spec: StreamSpec, settings: IngestSettings) -> BatchResult:
    """Land a folder stream's new files with the file ingest (one ingestion per file, by its bytes)."""
    paths = batch_files(batch)
    if not paths:
        return BatchResult(batch_id, [])
    results = ingest(batch.sparkSession, spec.feed, spec.source_system, paths, datetime.now(UTC), settings)
    landed = [r for r in results if not r.skipped]
    return BatchResult(
        batch_id,
        [r.ingestion_id for r in results],
        records=sum(r.lines_read for r in landed),
        accepted=sum(r.accepted for r in landed),
        flagged=sum(r.flagged for r in landed),
        skipped=not landed,
        recovered=any(r.recovered for r in landed),
    )


def report(result: BatchResult, spec: StreamSpec, settings: IngestSettings) -> None:
    table = f"{settings.database}.{spec.feed.table}"
    if result.skipped:
        print(f"stream: batch {result.batch_id} already landed; nothing to do", flush=True)
    elif result.recovered:
        print(
            f"stream: batch {result.batch_id}: its rows were in {table} without a log row (an earlier run "
            "stopped between its two commits); log row written, nothing landed again",
            flush=True,
        )
    else:
        print(
            f"stream: batch {result.batch_id}: read {result.records} records, accepted {result.accepted}, "
            f"flagged {result.flagged} malformed -> {table}",
            flush=True,
        )


def batch_lander(
    spec: StreamSpec,
    settings: IngestSettings,
    identity: QueryIdentity,
    lock_per_batch: Callable[[], run_lock.RunLock] | None,
) -> Callable[[DataFrame, int], None]:
    """The ``foreachBatch`` function: land the batch, then let Spark record it in the checkpoint."""

    def land_batch(batch: DataFrame, batch_id: int) -> None:
        lock = lock_per_batch() if lock_per_batch else None
        started = time.monotonic()
        try:
            if spec.is_kafka:
                result = land_kafka_batch(batch, batch_id, spec, settings, identity.get())
            else:
                result = land_folder_batch(batch, batch_id, spec, settings)
        finally:
            if lock is not None:
                lock.release()
        report(result, spec, settings)
        if spec.metrics is not None:
            with spec.metrics.open("a") as out:
                out.write(result.metrics_line(time.monotonic() - started, time.time()) + "\n")
        failpoint(STREAM_AFTER_BATCH)

    return land_batch


def reader(spark: SparkSession, spec: StreamSpec) -> DataFrame:
    """The stream's source: Kafka records, or the lines of the folder's new files (no watermark)."""
    stream: DataStreamReader = spark.readStream
    if spec.is_kafka:
        stream = (
            stream.format("kafka")
            .option("kafka.bootstrap.servers", spec.kafka_bootstrap)
            .option("subscribe", spec.topic)
            .option("startingOffsets", spec.starting_offsets)
        )
        if spec.max_per_trigger:
            stream = stream.option("maxOffsetsPerTrigger", spec.max_per_trigger)
        return stream.load()
    if spec.max_per_trigger:
        stream = stream.option("maxFilesPerTrigger", spec.max_per_trigger)
    return stream.format("text").load(str(spec.folder))


def parse_interval(text: str) -> str:
    """``10s``, ``500ms``, ``5m``, ``1h`` -> Spark's processing-time interval (``10 seconds``)."""
    match = INTERVAL.match(text.strip())
    if not match or int(match.group(1)) == 0:
        raise StreamError(f"--trigger-interval {text!r}: a positive whole number and a unit, e.g. 10s, 500ms, 5m")
    return f"{match.group(1)} {INTERVAL_UNITS[match.group(2)]}"


def start_query(
    spark: SparkSession,
    spec: StreamSpec,
    settings: IngestSettings,
    interval: str | None,
    lock_per_batch: Callable[[], run_lock.RunLock] | None,
) -> StreamingQuery:
    identity = QueryIdentity()
    writer = (
        reader(spark, spec)
        .writeStream.foreachBatch(batch_lander(spec, settings, identity, lock_per_batch))
        .option("checkpointLocation", spec.checkpoint)
        .queryName(Path(spec.checkpoint).name)
    )
    writer = writer.trigger(processingTime=interval) if interval else writer.trigger(availableNow=True)
    query = writer.start()
    identity.set(str(query.id))
    return query


class StopRequest:
    """SIGTERM or SIGINT asks the stream to stop after the micro-batch in flight."""

    def __init__(self) -> None:
        self.requested = threading.Event()

    def install(self) -> None:
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self.handle)

    def handle(self, signum: int, frame: FrameType | None) -> None:
        self.requested.set()


def run_until_stopped(query: StreamingQuery, stop: StopRequest) -> None:
    """Wait for the query to end; on a stop request, stop it between micro-batches.

    A processing-time trigger leaves the query idle between batches: it is
    stopped once no trigger is active. Should a batch begin meanwhile, it is
    interrupted before its checkpoint commit and runs again at the next start,
    where bronze recognises whatever of it had landed.
    """
    while query.isActive:
        if stop.requested.is_set() and not query.status["isTriggerActive"]:
            query.stop()
            break
        query.awaitTermination(POLL_S)
    query.awaitTermination()  # raises the query's error, if it failed


def per_batch_lock(schema: str, what: str) -> Callable[[], run_lock.RunLock]:
    """A landing's locks, taken for one micro-batch, waiting for a build that holds them."""
    wait = run_lock.wait_seconds() or SERVICE_LOCK_WAIT_S
    return lambda: run_lock.acquire_for(run_lock.Operation.LANDING, schema, what, wait)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m python_jobs.landing.stream", description=__doc__.split("\n\n")[0])
    parser.add_argument("--source", required=True, help="source system, e.g. pos, mobile (lower-cased; a-z, 0-9, _)")
    parser.add_argument("--feed", choices=sorted(FEEDS), default="events", help="kind of record")
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--topic", help="the Kafka topic to read (with --kafka-bootstrap)")
    where.add_argument("--folder", type=Path, help="a landing folder of NDJSON files")
    parser.add_argument("--kafka-bootstrap", help="the Kafka brokers, host:port[,host:port]")
    parser.add_argument(
        "--starting-offsets",
        default="earliest",
        help="where a new Kafka stream starts (earliest, latest or Spark's JSON); a checkpoint overrides it",
    )
    when = parser.add_mutually_exclusive_group()
    when.add_argument("--trigger", choices=["available-now"], default="available-now")
    when.add_argument("--trigger-interval", help="run a micro-batch every interval (10s, 1m) until SIGTERM")
    parser.add_argument("--max-per-trigger", type=int, help="Kafka records (or folder files) per micro-batch at most")
    parser.add_argument("--checkpoint", help="the stream's checkpoint (default <state dir>/streams/<name>)")
    parser.add_argument(
        "--metrics",
        type=Path,
        help="append a JSON line per micro-batch to this file: records, seconds, when landed and produced",
    )
    add_bronze_arguments(parser)
    return parser


def spec_from(args: argparse.Namespace) -> StreamSpec:
    """The stream's spec from the command line; raises :class:`StreamError` or :class:`IngestError`."""
    feed = FEEDS[args.feed]
    source_system = canonical_source(args.source)
    if args.topic is not None and not args.kafka_bootstrap:
        raise StreamError("--topic needs --kafka-bootstrap host:port")
    if args.folder is not None and not args.folder.is_dir():
        raise StreamError(f"--folder {args.folder}: no such folder")
    if args.max_per_trigger is not None and args.max_per_trigger < 1:
        raise StreamError("--max-per-trigger must be 1 or more")
    folder = args.folder.resolve() if args.folder is not None else None
    name = stream_name(feed, source_system, args.topic, folder)
    return StreamSpec(
        feed=feed,
        source_system=source_system,
        checkpoint=args.checkpoint or default_checkpoint(name),
        kafka_bootstrap=args.kafka_bootstrap,
        topic=args.topic,
        folder=folder,
        starting_offsets=args.starting_offsets,
        max_per_trigger=args.max_per_trigger,
        metrics=args.metrics,
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        spec = spec_from(args)
        interval = parse_interval(args.trigger_interval) if args.trigger_interval else None
    except (StreamError, IngestError) as exc:
        print(f"stream: error: {exc}", file=sys.stderr)
        return 2
    settings = IngestSettings(schema=args.schema, table_format=args.table_format)
    what = f"stream of {spec.feed.name} from {spec.source_system} ({spec.topic or spec.folder})"
    stop = StopRequest()
    stop.install()
    whole_run = None if interval else run_lock.acquire_for_tool("stream", args.schema, what, run_lock.Operation.LANDING)
    if isinstance(whole_run, int):
        return whole_run
    started = time.monotonic()
    try:
        spark = get_spark(args.table_format, connectors=("kafka",) if spec.is_kafka else ())
        lock_per_batch = per_batch_lock(args.schema, what) if interval else None
        query = start_query(spark, spec, settings, interval, lock_per_batch)
        run_until_stopped(query, stop)
    finally:
        if whole_run is not None:
            whole_run.release()
    print(f"stream: stopped after {time.monotonic() - started:.1f} s; checkpoint {spec.checkpoint}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
