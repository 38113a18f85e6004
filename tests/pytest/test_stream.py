"""The streaming front door (python -m python_jobs.landing.stream) against a real Kafka broker and a folder.

A single-node Apache Kafka broker in KRaft mode starts from its pinned jars on
127.0.0.1 for the module (python_jobs/operations/kafka_broker.py) and stops
after it. Several console producers publish at once to a topic of several
partitions: well-formed events, malformed ones and messages sent twice. The
stream runs as a user runs it, a command of its own on a state dir of its own
(the embedded metastore admits one process at a time), and is killed with
SIGKILL at the failpoints between its commits, then started again. What
bronze holds is read by another short process (stream_driver.py) and compared
with what was produced, computed here from the messages themselves: every
message exactly once, under its topic, partition and offset, malformed ones
with their reasons. The same events landed by the stream and as a file
build the same silver and gold. These runs also prove that Spark's Kafka connector 3.5.7
runs under the pinned PySpark 3.5.8 (no 3.5.8 connector is published).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from python_jobs.operations import kafka_broker
from python_jobs.operations.kafka_broker import Broker

ROOT = Path(__file__).resolve().parents[2]
RUN_TIMEOUT_S = 300
EVENT_TS = "2024-01-15T09:10:00Z"
# Malformed messages, each with the reason bronze must give it (the ingest's
# reasons: tests/pytest/test_ingest.py checks each on files).
MALFORMED = (
    ("not json at all", "invalid_json"),
    ('{"event_id": "bad-1", "event_type": "page_view", "event_ts": "' + EVENT_TS + '"}{"x": 1}', "trailing_content"),
    ('{"event_id": "bad-2", "user_id": "u9", "event_ts": "' + EVENT_TS + '"}', "missing_event_type"),
    ('{"event_id": "bad-3", "event_type": "page_view", "event_ts": "2024-01-15 09:10:00"}', "event_ts_without_offset"),
    ('{"event_id": "bad-4", "event_type": "teleport", "event_ts": "' + EVENT_TS + '"}', "unknown_event_type"),
)


def event(event_id: str) -> str:
    return json.dumps({"event_id": event_id, "event_type": "page_view", "user_id": "u1", "event_ts": EVENT_TS})


def messages_of(producer: str, wave: int, count: int) -> list[tuple[str, str]]:
    """``count`` events, the malformed messages, and three events sent again (a producer's retry)."""
    events = [(f"{producer}-{n}", event(f"{producer}-w{wave}-{n}")) for n in range(count)]
    malformed = [(f"{producer}-bad-{n}", payload) for n, (payload, _) in enumerate(MALFORMED)]
    return events + malformed + events[:3]


def expected_rows(messages: Sequence[tuple[str, str]]) -> Counter[tuple[str, str | None]]:
    """Every message once, as (payload, reason): the reason from MALFORMED, else none."""
    reasons = dict(MALFORMED)
    return Counter((payload, reasons.get(payload)) for _, payload in messages)


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    running = kafka_broker.start(tmp_path_factory.mktemp("kafka"))
    try:
        yield running
    finally:
        kafka_broker.stop(running)


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The environment of the module's commands: a state dir of their own, short-lived JVMs."""
    return {
        **os.environ,
        "LATECOMER_STATE_DIR": str(tmp_path_factory.mktemp("stream-state")),
        "LATECOMER_JVM_PROFILE": "short",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }


def stream_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "python_jobs.landing.stream", *args]


def run_stream(env: dict[str, str], *args: str, failpoint: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run the stream to its end, or to its death at ``failpoint`` (in a process group of its own)."""
    env = {**env, "LATECOMER_FAILPOINT": failpoint} if failpoint else env
    return subprocess.run(
        stream_command(*args),
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        start_new_session=True,
    )


def read_bronze(env: dict[str, str], schema: str) -> dict[str, Any]:
    result = subprocess.run(
        [sys.executable, "-m", "tests.pytest.stream_driver", schema],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def produce_at_once(broker: Broker, topic: str, batches: Sequence[Sequence[tuple[str, str]]]) -> None:
    """One console producer per batch of messages, all publishing at the same time."""
    errors: list[BaseException] = []

    def send(messages: Sequence[tuple[str, str]]) -> None:
        try:
            kafka_broker.produce(broker, topic, messages)
        except BaseException as exc:  # noqa: BLE001 - reported by the test's thread
            errors.append(exc)

    threads = [threading.Thread(target=send, args=(batch,)) for batch in batches]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors


def assert_landed_exactly_once(
    landed: dict[str, Any], source: str, topic: str, produced: list[tuple[str, str]]
) -> None:
    rows = [row for row in landed["rows"] if row["source_system"] == source]
    assert Counter((row["raw_payload"], row["parse_error"]) for row in rows) == expected_rows(produced)
    # Each row is one record, by its identity: nothing doubled, and every
    # partition's offsets run from 0 without a gap: nothing lost.
    identities = [row["source_file"] for row in rows]
    assert len(set(identities)) == len(identities) == len(produced)
    offsets: dict[str, list[int]] = {}
    for identity in identities:
        kind, record_topic, partition, offset = identity.split(":")
        assert (kind, record_topic) == ("kafka", topic)
        offsets.setdefault(partition, []).append(int(offset))
    for partition_offsets in offsets.values():
        assert sorted(partition_offsets) == list(range(len(partition_offsets)))
    # One log row per micro-batch, whose counts are its rows'.
    log = {entry["ingestion_id"]: entry for entry in landed["log"] if entry["source_system"] == source}
    per_batch = Counter(row["ingestion_id"] for row in rows)
    assert set(per_batch) == set(log)
    for iid, count in per_batch.items():
        assert log[iid]["rows_accepted"] + log[iid]["rows_flagged"] == count == log[iid]["lines_read"]


# Exactly once rests on the table format's commits: on Delta too (make test-delta).
@pytest.mark.each_format
def test_kafka_stream_lands_every_message_once_across_kills(broker: Broker, deployment: dict[str, str]) -> None:
    topic, partitions = "pos_events", 3
    kafka_broker.create_topic(broker, topic, partitions)
    first_wave = [messages_of(producer, 1, 12) for producer in ("till_a", "till_b", "till_c")]
    produce_at_once(broker, topic, first_wave)
    args = ("--source", " POS ", "--kafka-bootstrap", broker.bootstrap, "--topic", topic)
    args += ("--schema", "streamed", "--max-per-trigger", "20")

    # Killed once its first batch is landed, before the checkpoint records it.
    killed = run_stream(deployment, *args, failpoint="stream:after_batch")
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    assert "stream: batch 0: read" in killed.stdout

    second_wave = [messages_of(producer, 2, 8) for producer in ("till_a", "till_d")]
    produce_at_once(broker, topic, second_wave)
    # Batch 0 runs again and is recognised; batch 1 dies between its rows and its log row.
    killed = run_stream(deployment, *args, failpoint="stream:after_rows")
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    assert "stream: batch 0 already landed" in killed.stdout

    finished = run_stream(deployment, *args)
    assert finished.returncode == 0, finished.stderr[-3000:]
    assert "stream: batch 1: its rows were in" in finished.stdout

    produced = [message for batch in first_wave + second_wave for message in batch]
    assert_landed_exactly_once(read_bronze(deployment, "streamed"), "pos", topic, produced)


def wait_for_line(process: subprocess.Popen[str], needle: str, timeout_s: float = RUN_TIMEOUT_S) -> list[str]:
    """The process's stdout lines up to the first that holds ``needle``."""
    assert process.stdout is not None
    lines, deadline = [], time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line and process.poll() is not None:
            break
        lines.append(line)
        if needle in line:
            return lines
    raise AssertionError(f"no line with {needle!r} in {lines!r}")


def test_an_interval_stream_stops_after_its_batch_on_sigterm(broker: Broker, deployment: dict[str, str]) -> None:
    topic = "kiosk_events"
    kafka_broker.create_topic(broker, topic, 2)
    first = messages_of("kiosk", 1, 4)
    kafka_broker.produce(broker, topic, first)
    args = ("--source", "kiosk", "--kafka-bootstrap", broker.bootstrap, "--topic", topic, "--schema", "streamed")
    process = subprocess.Popen(
        stream_command(*args, "--trigger-interval", "1s"),
        env=deployment,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    try:
        wait_for_line(process, "stream: batch 0: read")
        later = messages_of("kiosk", 2, 3)
        kafka_broker.produce(broker, topic, later)
        wait_for_line(process, "stream: batch 1: read")
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=RUN_TIMEOUT_S) == 0
        assert process.stdout is not None
        assert "stream: stopped after" in process.stdout.read()
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert_landed_exactly_once(read_bronze(deployment, "streamed"), "kiosk", topic, first + later)


def write_file(folder: Path, name: str, lines: Sequence[str]) -> Path:
    path = folder / name
    path.write_text("".join(f"{line}\n" for line in lines))
    return path


# Exactly once rests on the table format's commits: on Delta too (make test-delta).
@pytest.mark.each_format
def test_folder_stream_lands_each_file_once_across_a_kill(deployment: dict[str, str], tmp_path: Path) -> None:
    folder = tmp_path / "landing"
    folder.mkdir()
    malformed = [payload for payload, _ in MALFORMED]
    first = write_file(folder, "a.ndjson", [event("f-1"), "", malformed[0], event("f-2")])
    second = write_file(folder, "b.ndjson", [malformed[1], event("f-3")])
    args = ("--source", "Kiosk_Files", "--folder", str(folder), "--schema", "filed", "--max-per-trigger", "1")

    killed = run_stream(deployment, *args, failpoint="stream:after_batch")
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    third = write_file(folder, "c.ndjson", [event("f-4"), malformed[2]])
    (folder / "a_again.ndjson").write_bytes(first.read_bytes())  # a redelivery: the same bytes
    finished = run_stream(deployment, *args)
    assert finished.returncode == 0, finished.stderr[-3000:]

    rows = [row for row in read_bronze(deployment, "filed")["rows"] if row["source_system"] == "kiosk_files"]
    reasons = dict(MALFORMED)
    expected = Counter(
        (str(path), number, line, reasons.get(line))
        for path in (first, second, third)
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if line
    )
    assert Counter((r["source_file"], r["line_number"], r["raw_payload"], r["parse_error"]) for r in rows) == expected


def events_for_a_build(now: datetime) -> list[str]:
    """A till's recent events (within the first watermark tier): views, orders, a refund,
    one event sent twice and one malformed line."""
    kinds = [("page_view", None), ("order_placed", "25.50"), ("order_placed", "10.00"), ("refund", "10.00")]
    lines = []
    for n in range(12):
        event_type, amount = kinds[n % len(kinds)]
        record = {
            "event_id": f"till-{n}",
            "event_type": event_type,
            "user_id": f"u{n % 3}",
            "event_ts": (now - timedelta(minutes=40 - 3 * n)).isoformat(),
        }
        if amount is not None:
            record["amount"] = amount
        lines.append(json.dumps(record))
    return [*lines, lines[2], MALFORMED[0][0]]


def build_and_dump(env: dict[str, str], schema: str, steps: list[list[str]], work: Path) -> dict[str, Any]:
    """Land (``steps``), ``dbt build`` and read silver and gold in one process (fault_driver.py)."""
    plan = work / f"{schema}.json"
    plan.write_text(json.dumps(steps))
    result = subprocess.run(
        [sys.executable, "-m", "tests.pytest.fault_driver", str(plan)],
        env={**env, "LATECOMER_SCHEMA": schema},
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S * 2,
        check=False,
    )
    assert result.returncode == 0, (result.stdout + result.stderr)[-5000:]
    dumped = [line for line in result.stdout.splitlines() if line.startswith("DUMP ")]
    return json.loads(dumped[-1].removeprefix("DUMP "))


def test_a_stream_builds_the_same_gold_as_the_same_events_landed_as_a_file(
    broker: Broker, deployment: dict[str, str], tmp_path: Path
) -> None:
    now = datetime.now(UTC)
    lines = events_for_a_build(now)
    topic = "till_events"
    kafka_broker.create_topic(broker, topic, 3)
    messages = [(f"till-{n}", line) for n, line in enumerate(lines)]
    produce_at_once(broker, topic, [messages[0::2], messages[1::2]])
    streamed = run_stream(
        deployment, "--source", "till", "--kafka-bootstrap", broker.bootstrap, "--topic", topic, "--schema", "by_stream"
    )
    assert streamed.returncode == 0, streamed.stderr[-3000:]
    as_of = (now + timedelta(minutes=5)).isoformat()
    path = write_file(tmp_path, "till.ndjson", lines)
    by_file = build_and_dump(
        deployment, "by_file", [["ingest", "till", str(path), now.isoformat()], ["build", as_of], ["dump"]], tmp_path
    )
    by_stream = build_and_dump(deployment, "by_stream", [["build", as_of], ["dump"]], tmp_path)
    assert by_file["gold"], "the events reach gold"
    assert sorted(by_stream["gold"]) == sorted(by_file["gold"])
    assert sorted(by_stream["silver"]) == sorted(by_file["silver"])
