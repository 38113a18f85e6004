"""The stream's and the broker manager's plain-Python parts: no Spark, no broker."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from python_jobs.landing import stream
from python_jobs.landing.ingest import CUSTOMERS, EVENTS, IngestError
from python_jobs.operations import kafka_broker


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
