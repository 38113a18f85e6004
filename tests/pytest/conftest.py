"""Shared fixtures: one Spark session (one JVM) for the whole run, dbt in-process.

Every deployment is a dbt target schema (``LATECOMER_SCHEMA``) dropped before
a test (or a module) gets it, so tables of one test never leak into another
while the JVM and metastore are shared.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
# One state dir (metastore + warehouse) per pytest process: Derby is
# single-process, and parallel runs must not clobber each other.
STATE_DIR = Path(os.environ.get("LATECOMER_TEST_STATE_DIR", ROOT / ".latecomer" / f"pytest-{os.getpid()}"))
# Set before anything imports python_jobs.core.spark_config or starts Spark.
os.environ["LATECOMER_STATE_DIR"] = str(STATE_DIR)
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
# Two dbt threads, not the local profile's four: on 2 cores a warm build of
# the sample took as long with four (docs/benchmark.md, "What is left"). The
# embedded metastore's race under concurrent writes is held off by the
# adapter's write lock whatever the count (adapter/.../locks.py).
os.environ.setdefault("LATECOMER_THREADS", "2")
# The table format the suite runs on: iceberg (the default; dbt target
# `local`) or delta (LATECOMER_TEST_FORMAT=delta; dbt target `delta`). The
# session, dbt's target and the landing jobs (LATECOMER_TABLE_FORMAT) all
# take it; a test of one format's own mechanism skips on the other
# (`iceberg_only`).
TEST_FORMAT = os.environ.get("LATECOMER_TEST_FORMAT", "iceberg").lower()
if TEST_FORMAT not in ("iceberg", "delta"):
    raise SystemExit(f"LATECOMER_TEST_FORMAT={TEST_FORMAT!r}: choose iceberg or delta")
os.environ["LATECOMER_TABLE_FORMAT"] = TEST_FORMAT
TEST_TARGET = {"iceberg": "local", "delta": "delta"}[TEST_FORMAT]
# The JVM profile of the session per format (spark_config.JVM_PROFILES; the
# `spark` fixture says why they differ); LATECOMER_JVM_PROFILE still wins.
SESSION_PROFILES = {"iceberg": "short", "delta": "job"}
# `make test` runs the suite in several processes at once (tests/suite.py): one
# per format, Delta's split across pytest-xdist workers. Each keeps its own
# dbt target and log folders, those of the commands the tests call (the
# steward's replay) included: dbt reads these two variables.
# LATECOMER_TEST_RUN names a run when two run on one format at once.
RUN_NAME = "-".join(
    filter(None, (os.environ.get("LATECOMER_TEST_RUN") or TEST_FORMAT, os.environ.get("PYTEST_XDIST_WORKER")))
)
TARGET_DIR = ROOT / "target" / f"pytest-{RUN_NAME}"
os.environ["DBT_TARGET_PATH"] = str(TARGET_DIR / "commands")
os.environ["DBT_LOG_PATH"] = str(ROOT / "logs" / f"pytest-{RUN_NAME}")
# Commands the tests call that run dbt themselves (the steward's replay, the
# report) take the same target.
os.environ["LATECOMER_TARGET"] = TEST_TARGET

from dbt.cli.main import dbtRunnerResult  # noqa: E402
from dbt.constants import DEFAULT_ENV_PLACEHOLDER  # noqa: E402
from dbt_common.tests import enable_test_caching  # noqa: E402
from pyspark.sql import DataFrame, SparkSession  # noqa: E402

from python_jobs.core.dbt_runner import AS_OF_ENV, DbtRunner  # noqa: E402
from python_jobs.core.spark_config import CODEGEN_SETTINGS, get_spark  # noqa: E402
from python_jobs.landing import ingest  # noqa: E402
from tests.pytest import sample_build  # noqa: E402
from tooling.bench.state import drop_schemas  # noqa: E402

# dbt's own caches for test runs, which dbt-tests-adapter's fixtures turn on
# too: the Jinja of each macro and generic test is parsed once per process,
# not at every full parse (the project's took 7 to 10 s, 3.3 s with them).
enable_test_caching()

# Environment variables read by the profile or dbt_project.yml that tests
# change between invocations: dbt parses the project again when one does.
PARSE_ENV = ("LATECOMER_UNIT_TESTS", "LATECOMER_ACTOR", "LATECOMER_TABLE_FORMAT", "LATECOMER_THREADS")


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    shutil.rmtree(STATE_DIR, ignore_errors=True)
    # `make test` runs two of these sessions at once on two cores, where one
    # JVM's compiling comes out of the other run's CPU. On Iceberg the quick
    # compiler alone (`short`) used a fifth less CPU for the same time alone;
    # Delta's log replay and scan planning need the optimising one (`job`).
    # The measurements: docs/benchmark.md, stop 79.
    session = get_spark(TEST_FORMAT, jvm_profile=SESSION_PROFILES[TEST_FORMAT])
    yield session
    session.stop()
    shutil.rmtree(STATE_DIR, ignore_errors=True)


@pytest.fixture(scope="module", autouse=True)
def compiled_where_many_rows(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test file marked ``many_rows`` runs with its session's expressions
    compiled, whatever LATECOMER_CODEGEN chose (tests/suite.py runs the
    others interpreted): over thousands of events a build was slower
    interpreted (spark_config.CODEGEN_SETTINGS). The session's settings come
    back after the file. Other files start no Spark here."""
    if request.node.get_closest_marker("many_rows") is None:
        yield
        return
    session = request.getfixturevalue("spark")
    compiled = CODEGEN_SETTINGS["compiled"]
    before = {key: session.conf.get(key, default) for key, default in compiled.items()}
    for key, value in compiled.items():
        session.conf.set(key, value)
    yield
    for key, value in before.items():
        session.conf.set(key, value)


@dataclass
class Project:
    """A latecomer deployment in its own schema, driven like a user would."""

    spark: SparkSession
    schema: str
    target: str = TEST_TARGET
    target_path: Path = TARGET_DIR
    project_dir: Path = ROOT
    # dbt's log messages (not debug) of the last invocation.
    messages: list[str] = field(default_factory=list)
    # The SQL statements of the last invocation, as dbt logged them (its SQLQuery events).
    statements: list[str] = field(default_factory=list)
    # The target folder of the last invocation: its artifacts (change_manifest.json, ...; dbt's with write_json).
    artifacts: Path | None = None

    def parse_folder(self, target: str, vars: dict[str, Any] | None) -> Path:
        """The target folder for this schema, target, vars and environment.

        dbt parses the whole project again (2 to 9 s) whenever one of these
        differs from the last parse saved in its target folder; ``as_of``
        does not count (DbtRunner passes it through the environment). A
        folder per combination keeps the partial parse of each, so a test
        that alternates, say, a backfill's vars with none, or two modules
        taking turns, parses once per combination instead of at every switch.
        """
        key = json.dumps(
            [self.schema, target, {k: v for k, v in (vars or {}).items() if k != "as_of"},
             [os.environ.get(name) for name in PARSE_ENV]],
            sort_keys=True,
            default=str,
        )  # fmt: skip
        return self.target_path / f"{self.schema}-{hashlib.sha1(key.encode()).hexdigest()[:10]}"

    def dbt(
        self,
        *args: str,
        vars: dict[str, Any] | None = None,
        expect_ok: bool = True,
        target: str | None = None,
        write_json: bool = False,
    ) -> dbtRunnerResult:
        """dbt in-process; keeps dbt's non-debug log messages in ``messages``.

        With ``expect_ok``, a failure raises ``DbtRunError`` naming the failing nodes.
        dbt's own JSON artifacts (manifest.json, run_results.json, sources.json)
        are written only with ``write_json``, for a test that reads them: a
        build writes the 1.7 MB manifest twice, about 0.2 s each. The
        project's artifacts (change manifest, restatement digest) are
        written either way.
        """
        target = target or self.target
        self.artifacts = self.parse_folder(target, vars)
        runner = DbtRunner(
            project_dir=self.project_dir,
            profiles_dir=ROOT / "profiles",
            target=target,
            target_path=self.artifacts,
            schema=self.schema,
        )
        self.messages = []
        self.statements = []
        started = time.monotonic()
        try:
            # dbt writes manifest.json only when it parses, and `dbt parse` is itself the parse.
            reuse = not write_json and args[:1] != ("parse",)
            return runner.invoke(
                *args,
                *([] if write_json else ["--no-write-json"]),
                vars=vars,
                callbacks=[self._keep],
                check=expect_ok,
                manifest=parsed_project(self, runner, target, vars) if reuse else None,
            )
        finally:
            _count_dbt_invocation(time.monotonic() - started)

    def _keep(self, event: Any) -> None:
        if event.info.level != "debug":
            self.messages.append(event.info.msg)
        elif event.info.name == "SQLQuery":
            self.statements.append(event.data.sql)

    def build(self, as_of: str, select: str | None = None, **more_vars: Any) -> dbtRunnerResult:
        selection = ["--select", select] if select else []
        return self.dbt("build", *selection, vars={"as_of": as_of, **more_vars})

    def ingest(self, source: str, *files: Path, arrival_ts: str, feed: str = "events") -> int:
        argv = [
            "--source",
            source,
            "--feed",
            feed,
            "--arrival-ts",
            arrival_ts,
            "--schema",
            self.schema,
        ]
        return ingest.main([*argv, *map(str, files)])

    def table(self, layer: str, name: str) -> DataFrame:
        return self.spark.table(f"{self.schema}_{layer}.{name}")

    def sql(self, text: str) -> list[Any]:
        return self.spark.sql(text.format(schema=self.schema)).collect()

    def drop(self) -> None:
        drop_schemas(self.spark, self.schema)


# The parsed project, kept for the whole run by what a parse depends on
# (parsed_project): a build with the same as_of neither parses again nor
# reads its partial parse, and a new value of a var that dbt's parse does not
# read costs no full parse (3 to 10 s).
_PARSED: dict[str, Any] = {}
# The vars dbt's parse is known not to read: each is rendered only when a node
# runs, never in a config, a meta or a ref. Every other var reaches the parse,
# so a var added to the project is safe until it is listed here, and
# test_dbt_parse.py gives each of these a value away from its default and
# checks that nothing dbt parses changes.
RUNTIME_VARS = (
    "actor",
    "backfill_end",
    "backfill_mode",
    "backfill_reason",
    "backfill_releases_quarantine",
    "backfill_start",
    "data_tests",
    "live_until_tier",
    "period_close",
    "publication_gate",
    "publication_gate_override",
    "source_watermarks",
    "version_retention_margin_hours",
    "volume_baseline_days",
)
# The folders and files dbt reads a project from, whose change makes it parse again.
PROJECT_SOURCES = ("models", "macros", "seeds", "snapshots", "tests", "analyses", "dbt_project.yml", "profiles")


def project_copy(folder: Path, edits: list[tuple[str, str, str]]) -> Path:
    """A copy of the project in ``folder``, with each ``(path, old, new)`` of
    ``edits`` made in its file (``old`` found there once): a deployment built
    by the copy runs a changed model on the same tables."""
    folder.mkdir()
    for name in PROJECT_SOURCES:
        source = ROOT / name
        if name == "tests":
            shutil.copytree(source, folder / name, ignore=shutil.ignore_patterns("pytest"))
        elif source.is_dir():
            shutil.copytree(source, folder / name)
        elif source.exists():
            shutil.copy(source, folder / name)
    for path, old, new in edits:
        text = (folder / path).read_text()
        assert text.count(old) == 1, f"{path}: {old!r} found {text.count(old)} times"
        (folder / path).write_text(text.replace(old, new))
    return folder


def project_files_stamp(project_dir: Path) -> list[tuple[str, int, int]]:
    """Every file dbt reads from ``project_dir`` (and the adapter's macros),
    with its modification time and size: a test that edits one parses again."""
    stamp = []
    for top in [*(project_dir / name for name in PROJECT_SOURCES), ROOT / "adapter" / "dbt" / "include"]:
        paths = [top] if top.is_file() else sorted(top.rglob("*")) if top.is_dir() else []
        for path in paths:
            if path.is_file() and "__pycache__" not in path.parts:
                info = path.stat()
                stamp.append((str(path), info.st_mtime_ns, info.st_size))
    return stamp


def parsed_project(project: Project, runner: DbtRunner, target: str, vars: dict[str, Any] | None) -> Any:
    """The manifest of ``runner``'s project, parsed once per parse folder,
    project and project files, and again when an environment variable dbt
    read while parsing changed; none when it does not parse (the invocation
    then fails as dbt would).

    The parse gets every var but RUNTIME_VARS (``as_of`` reaches dbt as
    LATECOMER_AS_OF too) in the parse folder of those vars alone, so that
    dbt's partial parse there survives the runtime vars changing: a new
    ``as_of`` parses again only the two files that read it (the Python
    models' configs).
    """
    parse_vars = {name: value for name, value in (vars or {}).items() if name not in RUNTIME_VARS}
    folder = project.parse_folder(target, parse_vars)
    key = json.dumps([str(folder), str(runner.project_dir), project_files_stamp(runner.project_dir)])
    environment = dict(os.environ)
    if parse_vars.get("as_of") is not None:
        environment[AS_OF_ENV] = str(parse_vars["as_of"])
    manifest = _PARSED.get(key)
    if manifest is None or not same_environment(manifest.env_vars, environment):
        result = replace(runner, target_path=folder).invoke("parse", "--no-write-json", vars=parse_vars, check=False)
        if not result.success:
            return None
        manifest = _PARSED[key] = result.result
    return manifest


def same_environment(parsed_with: dict[str, str], environment: dict[str, str]) -> bool:
    """Whether every environment variable dbt read while parsing has in
    ``environment`` the value it had (or is still unset, where a default
    was taken)."""
    return all(environment.get(name, DEFAULT_ENV_PLACEHOLDER) == value for name, value in parsed_with.items())


# The schema of a deployment is named by its fixture, not by its test: dbt
# keeps a parse per schema (the schema is part of the profile, and of every
# node's relation), and parses the whole project again, some 5 s, for a schema
# it has not parsed in that target folder. One name per fixture lets each test
# reuse the parse the tests before it left (parse_folder). Tests run one at a
# time, and each deployment is dropped before it is handed out, so no table
# outlives its test (or module) into the next.
TEST_SCHEMA = "t_test"
MODULE_SCHEMA = "t_module"
# The reason tests give when they override the publication gate: one text for
# all of them, since vars dbt has not parsed with in a target folder make it
# parse the project again (test_hostile_vars.py gives a text of its own).
GATE_OVERRIDE = {"publication_gate_override": "checked by hand"}


def expression_settings(spark: SparkSession) -> tuple[str, str]:
    """How the session evaluates expressions now: its code generation factory
    mode and whole-stage code generation, Spark's defaults where unset."""
    return (
        spark.conf.get("spark.sql.codegen.factoryMode", "FALLBACK"),
        spark.conf.get("spark.sql.codegen.wholeStage", "true"),
    )


def tables_in(spark: SparkSession, database: str, views: bool = False) -> list[str]:
    """The tables of a database (and its views, with ``views``), by name;
    never the session's temporary views. In SQL, not ``spark.catalog.listTables``,
    whose Python objects a session with interpreted expressions cannot decode
    (spark_config.CODEGEN_MODES)."""
    listed = [row.tableName for row in spark.sql(f"show tables in {database}").collect() if not row.isTemporary]
    if views:
        return listed
    view_names = {row.viewName for row in spark.sql(f"show views in {database}").collect()}
    return [name for name in listed if name not in view_names]


def version_count(spark: SparkSession, table: str) -> int:
    """How many versions ``table`` has: Iceberg's snapshots, Delta's commits (DESCRIBE HISTORY)."""
    if TEST_FORMAT == "delta":
        return spark.sql(f"describe history {table}").count()
    return spark.sql(f"select count(*) from {table}.snapshots").first()[0]


def version_log(spark: SparkSession, table: str) -> list[tuple[str, str]]:
    """``table``'s versions as they became current, oldest first: (version id,
    'yyyy-MM-dd HH:mm:ss.SSSSSS' UTC). Iceberg: its snapshot log (`history`),
    where a rollback makes an older snapshot current again; Delta: its
    commits, where a RESTORE is a commit of its own."""
    if TEST_FORMAT == "delta":
        rows = (
            spark.sql(f"describe history {table}")
            .selectExpr("cast(version as string)", "date_format(timestamp, 'yyyy-MM-dd HH:mm:ss.SSSSSS')")
            .orderBy("version")
            .collect()
        )
    else:
        rows = spark.sql(
            "select cast(snapshot_id as string), date_format(made_current_at, 'yyyy-MM-dd HH:mm:ss.SSSSSS')"
            f" from {table}.history order by made_current_at"
        ).collect()
    return [(row[0], row[1]) for row in rows]


def version_parents(spark: SparkSession, table: str) -> dict[int, int | None]:
    """Each version of ``table`` and the one it was written on: Iceberg's
    snapshot parent, Delta's commit readVersion."""
    if TEST_FORMAT == "delta":
        rows = spark.sql(f"describe history {table}").select("version", "readVersion").collect()
    else:
        rows = spark.sql(f"select snapshot_id, parent_id from {table}.snapshots").collect()
    return {row[0]: row[1] for row in rows}


def rewrites_and_deletes_added(spark: SparkSession, table: str) -> list[tuple[int, int]]:
    """Per version of ``table``, oldest first: (what it rewrote, row deletes
    it wrote without rewriting). Iceberg: its snapshot summaries'
    deleted-data-files and added-delete-files; Delta: its commits'
    operationMetrics, rows copied into new files and deletion vectors added
    (a file whose every row goes is removed, which copies nothing)."""
    if TEST_FORMAT == "delta":
        rows = spark.sql(f"describe history {table}").orderBy("version").collect()
        metrics = [{k: int(v) for k, v in (row.operationMetrics or {}).items() if v.isdigit()} for row in rows]
        return [
            (
                m.get("numCopiedRows", 0) + m.get("numTargetRowsCopied", 0),
                m.get("numDeletionVectorsAdded", 0) + m.get("numTargetDeletionVectorsAdded", 0),
            )
            for m in metrics
        ]
    rows = spark.sql(f"select summary from {table}.snapshots order by committed_at").collect()
    return [
        (int(row.summary.get("deleted-data-files", 0)), int(row.summary.get("added-delete-files", 0))) for row in rows
    ]


def iceberg_only(feature: str) -> pytest.MarkDecorator:
    """Skips a test on Delta: it checks ``feature``, a mechanism only Iceberg has."""
    return pytest.mark.skipif(TEST_FORMAT != "iceberg", reason=f"Iceberg only: {feature}")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On Delta, the tests that run Spark, the scenarios (those on the suite's
    session, and those marked ``each_format`` that start their own): those
    that need none (the plain-Python logic, rendering, parsing) run once, on
    Iceberg, and so
    do the Thrift server's and the standalone cluster's, on the default
    format (tests/suite.py runs both)."""
    if TEST_FORMAT == "iceberg":
        return
    keep, skip = [], []
    for item in items:
        infrastructure = item.get_closest_marker("thrift") or item.get_closest_marker("cluster")
        runs_spark = "spark" in getattr(item, "fixturenames", ()) or item.get_closest_marker("each_format")
        (keep if runs_spark and not infrastructure else skip).append(item)
    if skip:
        config.hook.pytest_deselected(items=skip)
        items[:] = keep


def _deployment(spark: SparkSession, schema: str) -> Iterator[Project]:
    deployment = Project(spark=spark, schema=schema)
    deployment.drop()
    yield deployment
    deployment.drop()


@pytest.fixture
def project(spark: SparkSession) -> Iterator[Project]:
    """A fresh deployment for one test."""
    yield from _deployment(spark, TEST_SCHEMA)


@pytest.fixture(scope="module")
def module_project(spark: SparkSession) -> Iterator[Project]:
    """One deployment shared by the tests of a module, which run in order."""
    yield from _deployment(spark, MODULE_SCHEMA)


@pytest.fixture(scope="session")
def built_sample(spark: SparkSession) -> Iterator[Project]:
    """The sample batches landed and built once (tests/pytest/sample_build.py), in schema t_sample.

    Shared by every module that reads it, so none of them may change it.
    """
    deployment = Project(spark=spark, schema="t_sample")
    deployment.drop()
    for source, path, arrival_ts in sample_build.landing_batches():
        assert deployment.ingest(source, path, arrival_ts=arrival_ts) == 0
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("LATECOMER_UNIT_TESTS", raising=False)
        deployment.dbt(*sample_build.BUILD_ARGS, vars=sample_build.BUILD_VARS)
    yield deployment
    deployment.drop()


@pytest.fixture
def write_ndjson(tmp_path: Path):
    """Write dict rows (or raw strings) as an NDJSON landing file."""

    def write(name: str, rows: list[dict[str, Any] | str]) -> Path:
        path = tmp_path / name
        path.write_text("".join((row if isinstance(row, str) else json.dumps(row)) + "\n" for row in rows))
        return path

    return write


@dataclass
class Webhook:
    """A real HTTP server on 127.0.0.1 that keeps what is POSTed to it."""

    url: str
    received: list[tuple[str, Any]] = field(default_factory=list)
    status: int = 204  # the answer to every POST


@pytest.fixture
def webhook() -> Iterator[Webhook]:
    hook = Webhook(url="")

    class Receiver(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            body = self.rfile.read(int(self.headers["Content-Length"]))
            hook.received.append((self.headers["Content-Type"], json.loads(body)))
            self.send_response(hook.status)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Receiver)
    hook.url = f"http://127.0.0.1:{server.server_port}/digest"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield hook
    server.shutdown()
    server.server_close()


# What ran and how long each part took, printed at the end of every run.
_module_seconds: dict[str, float] = {}
_module_outcomes: dict[str, dict[str, int]] = {}
# In-process dbt invocations per test file: how many, and their seconds.
_module_dbt: dict[str, tuple[int, float]] = {}


def _count_dbt_invocation(seconds: float) -> None:
    # PYTEST_CURRENT_TEST is "tests/pytest/test_x.py::test_y (call)" while a test or fixture runs.
    module = os.environ.get("PYTEST_CURRENT_TEST", "?").split("::", 1)[0]
    count, total = _module_dbt.get(module, (0, 0.0))
    _module_dbt[module] = (count + 1, total + seconds)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    module = report.nodeid.split("::", 1)[0]
    _module_seconds[module] = _module_seconds.get(module, 0.0) + report.duration
    if report.when == "call" or report.outcome != "passed":
        outcomes = _module_outcomes.setdefault(module, {})
        outcomes[report.outcome] = outcomes.get(report.outcome, 0) + 1


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not _module_seconds:
        return
    terminalreporter.section("time per test file (setup, tests and teardown; of which dbt through Project.dbt)")
    for module, seconds in sorted(_module_seconds.items(), key=lambda item: -item[1]):
        outcomes = ", ".join(f"{n} {outcome}" for outcome, n in sorted(_module_outcomes.get(module, {}).items()))
        count, in_dbt = _module_dbt.get(module, (0, 0.0))
        dbt = f"; dbt {count}x {in_dbt:.1f} s" if count else ""
        terminalreporter.write_line(f"{seconds:8.1f} s  {module}  ({outcomes}{dbt})")
    count = sum(invocations for invocations, _ in _module_dbt.values())
    in_dbt = sum(seconds for _, seconds in _module_dbt.values())
    terminalreporter.write_line(f"{sum(_module_seconds.values()):8.1f} s  in all; dbt {count}x {in_dbt:.1f} s")
