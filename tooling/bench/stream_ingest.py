"""Kafka to bronze, measured (issue 52): events per second, and the latency from produce to bronze.

    python -m tooling.bench.stream_ingest [--events 200000] [--rate 2000] [--seconds 20] [--format iceberg]

Beside the file ingest's events per second (the initial load), ``make bench``
runs the streaming front door (:mod:`python_jobs.landing.stream`) the way a
deployment does, as a command of its own with its own state dir, against an
Apache Kafka broker on 127.0.0.1 (:mod:`python_jobs.operations.kafka_broker`),
with the history's own event lines as messages, on a topic of
:data:`PARTITIONS` partitions:

* **throughput**: ``events`` messages produced first, then one
  ``--trigger available-now`` run lands them. Events per second are the
  records over the seconds its micro-batches took (the landing, without the
  JVM's start), and the command's whole time is given beside them;
* **latency**: a stream on a one-second trigger while a producer sends
  ``rate`` messages a second for ``seconds`` seconds. Each micro-batch's
  latency is from when its oldest record was produced (Kafka's record
  timestamp, set by the producer on this host) to when the batch's log row
  was committed: the longest any of its records waited. The median and the
  largest over the batches are reported, and the newest record's median.

The stream writes a JSON line per micro-batch (``--metrics``), read here
(:func:`summarize`).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from python_jobs.operations import kafka_broker
from tooling.bench.config import REPO_ROOT

PARTITIONS = 3
SOURCE = "bench"
TRIGGER = "1s"
# How long a stream may take to land what was produced, once produced.
SETTLE_TIMEOUT_S = 600.0
START_TIMEOUT_S = 300.0
POLL_S = 0.5


def read_metrics(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def summarize(batches: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Records, seconds and rates of a stream's micro-batches (``--metrics`` lines).

    A batch that landed nothing (already landed, or empty) adds no latency."""
    landed = [b for b in batches if b["records"]]
    records = sum(b["records"] for b in landed)
    seconds = sum(b["seconds"] for b in landed)
    oldest = [b["landed_at"] - b["produced_first"] for b in landed if b.get("produced_first") is not None]
    newest = [b["landed_at"] - b["produced_last"] for b in landed if b.get("produced_last") is not None]
    return {
        "batches": len(landed),
        "records": records,
        "flagged": sum(b["flagged"] for b in landed),
        "batch_seconds": round(seconds, 3),
        "events_per_second": round(records / seconds, 1) if seconds else None,
        "latency_s": {
            "oldest_median": round(statistics.median(oldest), 3) if oldest else None,
            "oldest_max": round(max(oldest), 3) if oldest else None,
            "newest_median": round(statistics.median(newest), 3) if newest else None,
        },
    }


def event_lines(files: Sequence[Path], events: int) -> list[str]:
    """The first ``events`` lines of ``files`` (the history's landing files), as messages."""
    lines: list[str] = []
    for path in files:
        with path.open() as handle:
            for line in handle:
                if line.strip():
                    lines.append(line.rstrip("\n"))
                    if len(lines) == events:
                        return lines
    return lines


def stream_command(broker: kafka_broker.Broker, topic: str, schema: str, table_format: str, metrics: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "python_jobs.landing.stream",
        "--source",
        SOURCE,
        "--kafka-bootstrap",
        broker.bootstrap,
        "--topic",
        topic,
        "--schema",
        schema,
        "--table-format",
        table_format,
        "--metrics",
        str(metrics),
    ]


def landed_records(metrics: Path) -> int:
    return sum(b["records"] for b in read_metrics(metrics))


def wait_for_records(metrics: Path, count: int, stream: subprocess.Popen[bytes], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while landed_records(metrics) < count:
        if stream.poll() is not None:
            raise RuntimeError(f"the stream ended (exit {stream.returncode}) before landing {count} records")
        if time.monotonic() > deadline:
            raise RuntimeError(f"the stream landed {landed_records(metrics)} of {count} records in {timeout_s:.0f} s")
        time.sleep(POLL_S)


def throughput(broker: kafka_broker.Broker, lines: Sequence[str], env: dict[str, str], work: Path) -> dict[str, Any]:
    """Produce every line, then land them with one available-now run."""
    topic = "bench_throughput"
    kafka_broker.create_topic(broker, topic, PARTITIONS)
    kafka_broker.produce(broker, topic, [(str(n), line) for n, line in enumerate(lines)])
    metrics = work / "throughput.jsonl"
    started = time.perf_counter()
    subprocess.run(
        stream_command(broker, topic, env["LATECOMER_SCHEMA"], env["LATECOMER_TABLE_FORMAT"], metrics),
        cwd=REPO_ROOT,
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    summary = summarize(read_metrics(metrics))
    if summary["records"] != len(lines):
        raise RuntimeError(f"the stream landed {summary['records']} of {len(lines)} messages")
    return {**summary, "command_seconds": round(time.perf_counter() - started, 1)}


def paced(producer: subprocess.Popen[bytes], lines: Sequence[str], rate: int, seconds: float) -> int:
    """Write ``rate`` lines a second to the producer for ``seconds``; the count sent."""
    assert producer.stdin is not None
    sent, started = 0, time.monotonic()
    total = min(len(lines), int(rate * seconds))
    while sent < total:
        due = min(total, int((time.monotonic() - started) * rate) + 1)
        chunk = "".join(f"{n}\t{lines[n]}\n" for n in range(sent, due))
        producer.stdin.write(chunk.encode())
        producer.stdin.flush()
        sent = due
        time.sleep(0.05)
    producer.stdin.close()
    return sent


def latency(
    broker: kafka_broker.Broker, lines: Sequence[str], rate: int, seconds: float, env: dict[str, str], work: Path
) -> dict[str, Any]:
    """A stream on a one-second trigger while messages arrive at ``rate`` a second."""
    topic = "bench_latency"
    kafka_broker.create_topic(broker, topic, PARTITIONS)
    metrics = work / "latency.jsonl"
    command = stream_command(broker, topic, env["LATECOMER_SCHEMA"], env["LATECOMER_TABLE_FORMAT"], metrics)
    stream = subprocess.Popen(
        [*command, "--trigger-interval", TRIGGER], cwd=REPO_ROOT, env=env, stdout=subprocess.DEVNULL
    )
    try:
        # A first message, landed: the stream is up and warm before the clock starts.
        kafka_broker.produce(broker, topic, [("warm-up", lines[0])])
        wait_for_records(metrics, 1, stream, START_TIMEOUT_S)
        warm = len(read_metrics(metrics))
        producer = subprocess.Popen(kafka_broker.producer_command(broker, topic), stdin=subprocess.PIPE)
        sent = paced(producer, lines, rate, seconds)
        if producer.wait(timeout=SETTLE_TIMEOUT_S) != 0:
            raise RuntimeError(f"the console producer failed (exit {producer.returncode})")
        wait_for_records(metrics, 1 + sent, stream, SETTLE_TIMEOUT_S)
    finally:
        stream.send_signal(signal.SIGTERM)
        stream.wait(timeout=SETTLE_TIMEOUT_S)
    return {"rate": rate, "seconds": seconds, "sent": sent, **summarize(read_metrics(metrics)[warm:])}


@contextmanager
def running_broker(folder: Path) -> Iterator[kafka_broker.Broker]:
    broker = kafka_broker.start(folder)
    try:
        yield broker
    finally:
        kafka_broker.stop(broker)


def measure(files: Sequence[Path], table_format: str, events: int, rate: int, seconds: float) -> dict[str, Any]:
    """Both measurements, on a broker and a state dir of their own (removed after)."""
    lines = event_lines(files, events)
    work = Path(tempfile.mkdtemp(prefix="latecomer-bench-stream-"))
    env = {
        **os.environ,
        "LATECOMER_STATE_DIR": str(work / "state"),
        "LATECOMER_SCHEMA": "bench_stream",
        "LATECOMER_TABLE_FORMAT": table_format,
    }
    try:
        with running_broker(work / "broker") as broker:
            return {
                "partitions": PARTITIONS,
                "throughput": throughput(broker, lines, env, work),
                "latency": latency(broker, lines, rate, seconds, env, work),
            }
    finally:
        shutil.rmtree(work, ignore_errors=True)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m tooling.bench.stream_ingest", description=__doc__.split("\n")[0])
    parser.add_argument("files", nargs="+", type=Path, help="NDJSON event files whose lines are the messages")
    parser.add_argument("--events", type=int, default=200_000, help="messages for the throughput run")
    parser.add_argument("--rate", type=int, default=2_000, help="messages a second in the latency run")
    parser.add_argument("--seconds", type=float, default=20.0, help="how long the latency run produces")
    parser.add_argument("--format", dest="table_format", choices=["iceberg", "delta"], default="iceberg")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    print(json.dumps(measure(args.files, args.table_format, args.events, args.rate, args.seconds), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
