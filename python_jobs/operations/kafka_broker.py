"""A single-node Apache Kafka broker in KRaft mode on 127.0.0.1, from its jars.

    python -m python_jobs.operations.kafka_broker fetch
    python -m python_jobs.operations.kafka_broker start [--topic NAME --partitions N]
    python -m python_jobs.operations.kafka_broker stop

For the streaming tests (tests/pytest/test_stream.py) and for trying
``python -m python_jobs.landing.stream`` locally (docs/streaming.md): no
Docker, no ZooKeeper. ``start`` writes a ``server.properties`` into a folder
it owns (``<state dir>/kafka`` by default), formats the storage there with a
random cluster id, starts the broker (also its own KRaft controller) on two
free ports of 127.0.0.1 in a process group of its own, waits until it says it
has started, and prints the bootstrap address. ``stop`` sends SIGTERM (the
broker closes its logs cleanly), then SIGKILL if it lingers.

The jars (Kafka 3.9.1's broker and command-line tools, with their
dependencies) are resolved by Maven from ``jvm/kafka/pom.xml`` into
``jvm/build/kafka`` (``LATECOMER_KAFKA_HOME``) by ``fetch`` and checked
against ``jvm/kafka/jars.sha256`` before any of them runs, as the metastore
service's are (:mod:`python_jobs.operations.metastore_class_path`).
"""

from __future__ import annotations

import argparse
import base64
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from python_jobs.core.processes import log_tail, process_alive, runs, terminate
from python_jobs.core.spark_config import REPO_ROOT, private_dir, state_dir
from python_jobs.operations.metastore_class_path import maven_package, pinned_problems, pins
from python_jobs.operations.metastore_state import MetastoreError, free_port
from python_jobs.operations.thrift_server import java_executable

HOST = "127.0.0.1"
POM = REPO_ROOT / "jvm" / "kafka" / "pom.xml"
PINS = REPO_ROOT / "jvm" / "kafka" / "jars.sha256"
DEFAULT_HOME = REPO_ROOT / "jvm" / "build" / "kafka"
PROG = "python -m python_jobs.operations.kafka_broker"
BROKER_CLASS = "kafka.Kafka"
STORAGE_TOOL = "kafka.tools.StorageTool"
TOPIC_TOOL = "org.apache.kafka.tools.TopicCommand"
PRODUCER_TOOL = "kafka.tools.ConsoleProducer"
# The line the broker logs once it serves clients.
STARTED = "Kafka Server started"
DEFAULT_TIMEOUT_S = 120.0
# A small broker: it holds a few topics of test data. C1 only, serial GC:
# it starts faster and leaves the two cores to Spark.
BROKER_JVM = ("-Xms128m", "-Xmx384m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")
TOOL_JVM = ("-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto")
BROKER_LOG4J = """\
log4j.rootLogger=INFO, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.kafka.request.logger=WARN
log4j.logger.state.change.logger=WARN
"""
TOOL_LOG4J = """\
log4j.rootLogger=WARN, stderr
log4j.appender.stderr=org.apache.log4j.ConsoleAppender
log4j.appender.stderr.Target=System.err
log4j.appender.stderr.layout=org.apache.log4j.PatternLayout
log4j.appender.stderr.layout.ConversionPattern=%p %m (%c)%n
"""


class KafkaBrokerError(RuntimeError):
    """A problem the user can fix; the message says how."""


@dataclass(frozen=True)
class Broker:
    """A running broker: its process, folder and client port."""

    pid: int
    port: int
    folder: Path

    @property
    def bootstrap(self) -> str:
        return f"{HOST}:{self.port}"


def kafka_home() -> Path:
    return Path(os.environ.get("LATECOMER_KAFKA_HOME") or DEFAULT_HOME).resolve()


def default_folder() -> Path:
    return state_dir() / "kafka"


def fetch(out: TextIO) -> Path:
    """Resolve the broker's jars with Maven into the Kafka home, then check them against their pins."""
    home = kafka_home()
    if not pinned_problems(home, PINS):
        print(f"kafka_broker: {home} holds the pinned jars", file=out)
        return home
    print(f"kafka_broker: resolving the broker's jars with Maven into {home}", file=out, flush=True)
    try:
        maven_package(POM, "kafka.dir", home)
    except MetastoreError as exc:
        raise KafkaBrokerError(str(exc)) from None
    problems = pinned_problems(home, PINS)
    if problems:
        raise KafkaBrokerError(
            f"Maven resolved jars that are not as pinned in {PINS}: {'; '.join(problems[:3])}. "
            "If the pom changed on purpose, write the new sha256 list (see the pom's header)."
        )
    print(f"kafka_broker: {len(pins(PINS))} jars in {home}, sha256 as pinned", file=out)
    return home


def verified_home() -> Path:
    """The Kafka home, after checking every pinned jar is there with its bytes."""
    home = kafka_home()
    problems = pinned_problems(home, PINS)
    if problems:
        raise KafkaBrokerError(
            f"The Kafka broker's jars in {home} are not as pinned in {PINS.relative_to(REPO_ROOT)} "
            f"({'; '.join(problems[:3])}). `{PROG} fetch` resolves them with Maven (needs mvn and a JDK)."
        )
    return home


def java_command(home: Path, log4j: Path, main_class: str, *args: str, jvm: Sequence[str] = TOOL_JVM) -> list[str]:
    """A JVM running ``main_class`` of the pinned jars (nothing else in lib/ is on its class path)."""
    class_path = ":".join(str(home / name) for name in pins(PINS))
    return [
        java_executable(),
        *jvm,
        f"-Dlog4j.configuration={log4j.as_uri()}",
        "-cp",
        class_path,
        main_class,
        *args,
    ]


def random_cluster_id() -> str:
    """A Kafka cluster id: 16 random bytes, URL-safe base64 without padding, not starting with '-'
    (Kafka's own ``Uuid.randomUuid`` avoids those, which its tools would read as an option)."""
    while True:
        text = base64.urlsafe_b64encode(os.urandom(16)).decode().rstrip("=")
        if not text.startswith("-"):
            return text


def server_properties(folder: Path, port: int, controller_port: int) -> str:
    """One node that is both broker and KRaft controller, on 127.0.0.1 only, data in ``folder``."""
    settings = {
        "process.roles": "broker,controller",
        "node.id": "1",
        "controller.quorum.voters": f"1@{HOST}:{controller_port}",
        "listeners": f"PLAINTEXT://{HOST}:{port},CONTROLLER://{HOST}:{controller_port}",
        "advertised.listeners": f"PLAINTEXT://{HOST}:{port}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "log.dirs": str(folder / "data"),
        # One node: its internal topics cannot have more than one replica.
        "offsets.topic.replication.factor": "1",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "group.initial.rebalance.delay.ms": "0",
        # Topics are created on purpose (create_topic), with their partitions.
        "auto.create.topics.enable": "false",
    }
    return "".join(f"{key}={value}\n" for key, value in settings.items())


def run_tool(command: list[str], what: str, stdin: str | None = None) -> str:
    result = subprocess.run(command, input=stdin, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise KafkaBrokerError(f"{what} failed (exit {result.returncode}):\n{(result.stderr or result.stdout)[-3000:]}")
    return result.stdout


def read_pid_file(folder: Path) -> Broker | None:
    """The broker recorded in ``folder``'s pid file while it runs, else None (a stale file is removed)."""
    pid_file = folder / "broker.pid"
    try:
        pid, port = (int(value) for value in pid_file.read_text().split())
    except (FileNotFoundError, ValueError):
        return None
    if process_alive(pid) and runs(pid, BROKER_CLASS):
        return Broker(pid, port, folder)
    pid_file.unlink(missing_ok=True)
    return None


def wait_until_started(process: subprocess.Popen[bytes], log: Path, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if STARTED in log.read_text(errors="replace"):
            return
        if process.poll() is not None:
            raise KafkaBrokerError(
                f"the Kafka broker exited ({process.returncode}) while starting; {log}:\n{log_tail(log)}"
            )
        time.sleep(0.3)
    terminate(process.pid)
    raise KafkaBrokerError(f"the Kafka broker did not start within {timeout_s:.0f} s; see {log}")


def start(folder: Path | None = None, timeout_s: float = DEFAULT_TIMEOUT_S) -> Broker:
    """Start a broker in ``folder`` and wait until it serves.

    Its storage is formatted on first use, with a random cluster id; a broker
    already running there (its pid file) is returned as it is.
    """
    folder = folder or default_folder()
    running = read_pid_file(folder)
    if running is not None:
        return running
    home = verified_home()
    private_dir(folder)
    port, controller_port = free_port(), free_port()
    properties = folder / "server.properties"
    properties.write_text(server_properties(folder, port, controller_port))
    (folder / "log4j.properties").write_text(BROKER_LOG4J)
    (folder / "tools-log4j.properties").write_text(TOOL_LOG4J)
    tools_log4j = folder / "tools-log4j.properties"
    format_args = ("format", "--ignore-formatted", "-t", random_cluster_id(), "-c", str(properties))
    run_tool(java_command(home, tools_log4j, STORAGE_TOOL, *format_args), "formatting the broker's storage")
    log = folder / "broker.log"
    with log.open("wb") as handle:
        command = java_command(home, folder / "log4j.properties", BROKER_CLASS, str(properties), jvm=BROKER_JVM)
        process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=handle, stderr=subprocess.STDOUT, start_new_session=True
        )
    wait_until_started(process, log, timeout_s)
    (folder / "broker.pid").write_text(f"{process.pid} {port}\n")
    return Broker(process.pid, port, folder)


def stop(broker: Broker) -> None:
    """SIGTERM the broker (a clean shutdown), SIGKILL it if it lingers; forget its pid file."""
    terminate(broker.pid)
    (broker.folder / "broker.pid").unlink(missing_ok=True)


def tool(broker: Broker, main_class: str, *args: str) -> list[str]:
    return java_command(verified_home(), broker.folder / "tools-log4j.properties", main_class, *args)


def create_topic(broker: Broker, topic: str, partitions: int) -> None:
    """Create ``topic`` with ``partitions`` partitions (one replica: one node)."""
    args = ("--bootstrap-server", broker.bootstrap, "--create", "--topic", topic)
    args += ("--partitions", str(partitions), "--replication-factor", "1")
    run_tool(tool(broker, TOPIC_TOOL, *args), f"creating topic {topic}")


def producer_command(broker: Broker, topic: str, keyed: bool = True) -> list[str]:
    """Kafka's console producer: one message a line of its stdin, ``key<TAB>value`` when ``keyed``.

    Acks from every replica, no retries that could reorder or duplicate a
    message: what it was given is what the topic holds.
    """
    args = ["--bootstrap-server", broker.bootstrap, "--topic", topic]
    args += ["--producer-property", "acks=all", "--producer-property", "enable.idempotence=true"]
    if keyed:
        args += ["--property", "parse.key=true", "--property", "key.separator=\t"]
    return tool(broker, PRODUCER_TOOL, *args)


def produce(broker: Broker, topic: str, messages: Sequence[tuple[str, str]]) -> None:
    """Send ``(key, value)`` messages to ``topic`` through one console producer (values on one line each)."""
    lines = "".join(f"{key}\t{value}\n" for key, value in messages)
    run_tool(producer_command(broker, topic), f"producing to {topic}", stdin=lines)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("fetch", help="resolve the broker's jars with Maven and check them")
    starting = commands.add_parser("start", help="start a broker in <state dir>/kafka")
    starting.add_argument("--topic", help="create this topic once it runs")
    starting.add_argument("--partitions", type=int, default=3)
    commands.add_parser("stop", help="stop the broker of <state dir>/kafka")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "fetch":
            fetch(sys.stdout)
        elif args.command == "start":
            broker = start()
            if args.topic:
                create_topic(broker, args.topic, args.partitions)
            print(f"kafka_broker: running (pid {broker.pid}); bootstrap {broker.bootstrap}")
        else:
            running = read_pid_file(default_folder())
            if running is None:
                print("kafka_broker: not running")
            else:
                stop(running)
                print(f"kafka_broker: stopped (pid {running.pid})")
    except KafkaBrokerError as exc:
        print(f"kafka_broker: error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
