"""The stream's and the broker manager's plain-Python parts: no Spark, no broker."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from python_jobs.landing import stream
from python_jobs.landing.feeds import CUSTOMERS, EVENTS, IngestError
from python_jobs.operations import kafka_broker
from tooling.bench.stream_ingest import summarize


@pytest.mark.parametrize(
    ("text", "interval"),
    [
        ("10s", "10 seconds"),
        ("500ms", "500 milliseconds"),
        ("5m", "5 minutes"),
        ("2min", "2 minutes"),
        ("1h", "1 hours"),
    ],
)
def test_an_interval_reads_as_sparks_processing_time(text: str, interval: str) -> None:
    assert stream.parse_interval(text) == interval


@pytest.mark.parametrize("text", ["", "10", "0s", "-5s", "1.5s", "10 parsecs", "s"])
def test_an_interval_without_a_positive_whole_number_and_a_unit_is_refused(text: str) -> None:
    with pytest.raises(stream.StreamError, match="--trigger-interval"):
        stream.parse_interval(text)


def test_a_batch_keeps_its_ingestion_id_and_another_checkpoint_or_batch_gets_another() -> None:
    first = stream.batch_ingestion_id(EVENTS, "pos", "query-1", 0)
    assert first == stream.batch_ingestion_id(EVENTS, "pos", "query-1", 0)
    assert re.fullmatch(r"[0-9a-f]{32}", first)
    others = {
        stream.batch_ingestion_id(EVENTS, "pos", "query-1", 1),
        stream.batch_ingestion_id(EVENTS, "pos", "query-2", 0),
        stream.batch_ingestion_id(EVENTS, "web", "query-1", 0),
        stream.batch_ingestion_id(CUSTOMERS, "pos", "query-1", 0),
    }
    assert first not in others and len(others) == 4


def test_each_feed_source_and_input_has_its_own_checkpoint_name() -> None:
    names = {
        stream.stream_name(EVENTS, "pos", "pos-events", None),
        stream.stream_name(EVENTS, "pos", "pos/events", None),
        stream.stream_name(EVENTS, "web", "pos-events", None),
        stream.stream_name(CUSTOMERS, "pos", "pos-events", None),
        stream.stream_name(EVENTS, "pos", None, Path("/landing/a/in")),
        stream.stream_name(EVENTS, "pos", None, Path("/landing/b/in")),
    }
    assert len(names) == 6
    assert all(re.fullmatch(r"[A-Za-z0-9_.-]+", name) for name in names)


def parsed(*args: str) -> stream.StreamSpec:
    return stream.spec_from(stream.build_parser().parse_args(list(args)))


def test_a_spec_takes_the_canonical_source_and_a_checkpoint_under_the_state_dir(tmp_path: Path) -> None:
    spec = parsed("--source", " POS ", "--kafka-bootstrap", "127.0.0.1:9092", "--topic", "t")
    assert spec.source_system == "pos" and spec.is_kafka
    assert Path(spec.checkpoint).parent.name == "streams"
    folder = parsed("--source", "web", "--folder", str(tmp_path), "--checkpoint", str(tmp_path / "cp"))
    assert not folder.is_kafka and folder.folder == tmp_path.resolve() and folder.checkpoint == str(tmp_path / "cp")


def test_bad_stream_arguments_say_what_to_fix(tmp_path: Path) -> None:
    with pytest.raises(stream.StreamError, match="--kafka-bootstrap"):
        parsed("--source", "pos", "--topic", "t")
    with pytest.raises(stream.StreamError, match="no such folder"):
        parsed("--source", "pos", "--folder", str(tmp_path / "missing"))
    with pytest.raises(IngestError, match="--source"):
        parsed("--source", "pos!", "--folder", str(tmp_path))
    with pytest.raises(SystemExit):
        parsed("--source", "pos", "--topic", "t", "--folder", str(tmp_path))
    assert stream.main(["--source", "pos", "--topic", "t"]) == 2


def test_the_broker_listens_on_loopback_only_and_keeps_its_data_in_its_folder(tmp_path: Path) -> None:
    properties = dict(line.split("=", 1) for line in kafka_broker.server_properties(tmp_path, 9101, 9102).splitlines())
    assert properties["listeners"] == "PLAINTEXT://127.0.0.1:9101,CONTROLLER://127.0.0.1:9102"
    assert properties["process.roles"] == "broker,controller"
    assert properties["controller.quorum.voters"] == "1@127.0.0.1:9102"
    assert properties["log.dirs"] == str(tmp_path / "data")
    assert properties["auto.create.topics.enable"] == "false"


def test_a_cluster_id_is_kafkas_form_and_random() -> None:
    ids = {kafka_broker.random_cluster_id() for _ in range(50)}
    assert len(ids) == 50
    assert all(re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_-]{21}", cluster_id) for cluster_id in ids)


def test_the_broker_jars_are_pinned_and_fetched() -> None:
    assert not kafka_broker.pinned_problems(kafka_broker.kafka_home(), kafka_broker.PINS)
    assert "lib/kafka_2.13-3.9.1.jar" in kafka_broker.pins(kafka_broker.PINS)


def test_a_batchs_metrics_line_says_what_it_landed_and_when_its_records_were_produced() -> None:
    result = stream.BatchResult(4, ["i"], records=10, accepted=9, flagged=1, produced_ms=(1_000_500, 1_002_000))
    line = json.loads(result.metrics_line(seconds=1.23456, landed_at=1_003.25))
    assert line == {
        "batch": 4,
        "records": 10,
        "accepted": 9,
        "flagged": 1,
        "seconds": 1.235,
        "landed_at": 1_003.25,
        "produced_first": 1_000.5,
        "produced_last": 1_002.0,
    }
    skipped = stream.BatchResult(5, ["i"], records=10, skipped=True)
    assert json.loads(skipped.metrics_line(0.1, 2_000.0))["records"] == 0


def test_the_benchmark_sums_the_batches_and_takes_each_ones_wait() -> None:
    def batch(records: int, seconds: float, landed: float, first: float, last: float) -> dict[str, object]:
        return {
            "records": records,
            "flagged": 1 if records == 100 else 0,
            "seconds": seconds,
            "landed_at": landed,
            "produced_first": first,
            "produced_last": last,
        }

    nothing = {"records": 0, "flagged": 0, "seconds": 0.4, "landed_at": 999.0, "produced_first": None}
    summary = summarize(
        [
            nothing,
            batch(100, 2.0, 1_010.0, 1_007.5, 1_009.0),
            batch(300, 3.0, 1_020.0, 1_016.0, 1_019.5),
            batch(200, 1.0, 1_030.0, 1_028.0, 1_029.0),
        ]
    )
    # 600 records in 2 + 3 + 1 s; the oldest waited 2.5, 4 and 2 s, the newest 1, 0.5 and 1 s.
    assert (summary["batches"], summary["records"], summary["flagged"]) == (3, 600, 1)
    assert (summary["batch_seconds"], summary["events_per_second"]) == (6.0, 100.0)
    assert summary["latency_s"] == {"oldest_median": 2.5, "oldest_max": 4.0, "newest_median": 1.0}
