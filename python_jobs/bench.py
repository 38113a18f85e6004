"""Benchmark: restatement cost grows with the partitions that changed, not with history.

    python -m python_jobs.bench            (make bench)
    python -m python_jobs.bench --smoke    (make bench-smoke)

Generates a synthetic store history (python_jobs.synthetic), lands it through
the ingest job and builds it with dbt, all in this process (one JVM). Then one
late batch touching k event-date partitions is processed three ways on the
same data, each from the same starting tables:

  incremental   `dbt build`: only the changed partitions are recomputed;
  lookback      `dbt build --vars {restate_lookback_days: N}`: every partition
                of the last N event days is recomputed and rewritten, as a
                static-lookback job would (plus the changed ones, so the
                result stays correct);
  full_refresh  `dbt build --full-refresh`: silver and gold rebuilt from bronze
                (late_arrival_audit is full_refresh: false and appends);
  patched       (with --candidate-patch FILE) the incremental build of the
                project with FILE applied: what a proposed change to the SQL
                saves, and, through the gold fingerprint, that it changes no
                result.

Between variants every non-bronze Iceberg table is put back to its state after
the initial build: the table is dropped from the catalog (its files stay) and
its metadata file of that moment is registered again
(CALL spark_catalog.system.register_table); a table that a full refresh
recreated is dropped with PURGE first, which deletes only the recreated files.
Bronze (append-only, late batch included) is never touched.

Measured per variant: dbt build wall time and per-model execution time, with
the number of Spark SQL queries each model ran and their Spark time; files,
bytes and partitions written and rewritten in every silver and gold table (the
difference between the table's `.files` before and after, plus its snapshot
summaries); rows, files and bytes read from bronze_events (Spark SQL metrics
of the Iceberg scans); and a fingerprint of gold_daily_revenue, which must be
the same for the three variants. Medians over --repeat runs are printed and
written, with the machine's cores, memory and load, to
bench_results/bench-<time>.json and .md (and latest-<mode>.json / .md).

Isolation: state (metastore and warehouse) lives in bench_results/state-<schema>
(LATECOMER_STATE_DIR, wiped at start), tables in schemas <schema>_* (--schema),
dbt artifacts in bench_results/target; generated landing files are kept in
bench_results/data/<scale> and reused by later runs of the same scale. The dbt
project is copied at the start (from the working tree, --project-source DIR or
--git-ref REF, plus any --patch), so edits made during a run do not change it.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tarfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from python_jobs.synthetic import Batch, History, Scale, generate

REPO_ROOT = Path(__file__).resolve().parents[1]
RESULTS_DIR = REPO_ROOT / "bench_results"
VARIANTS = ("incremental", "lookback", "full_refresh")
# The incremental build of the project with --candidate-patch applied, from the
# same starting tables: what a proposed change saves, and that gold is unchanged.
PATCHED = "patched"
DEFAULT = {"days": 60, "events_per_day": 100_000, "lookback_days": 15, "repeat": 3}
SMOKE = {"days": 5, "events_per_day": 1_000, "lookback_days": 2, "repeat": 1}
# What --smoke builds: the late-arrival path only (the other gold models add time, not checks).
SMOKE_SELECT = "+gold_daily_revenue +late_arrival_audit"
GOLD_MODEL = "gold_daily_revenue"
# What dbt reads; copied per run (see snapshot_project).
DBT_PROJECT_FILES = (
    "dbt_project.yml",
    "packages.yml",
    "dependencies.yml",
    "profiles",
    "models",
    "macros",
    "seeds",
    "snapshots",
    "analyses",
    "tests",
)

EPILOG = """\
scaling up:
  --days and --events-per-day set the history (default 60 x 100,000 = 6M events,
  ~0.8 GB of NDJSON, run on 2 cores and the default 4g driver). Give Spark more
  with LATECOMER_DRIVER_MEMORY (e.g. 12g). To run on a cluster, export
  LATECOMER_SPARK_MASTER (spark://host:7077, yarn, k8s://...), LATECOMER_WAREHOUSE
  (shared storage) and LATECOMER_METASTORE_URI, and put --results-dir on a file
  system the executors can read (the landing files are read by Spark); the
  state dir is then not wiped, the schemas are dropped instead.
  Results of different versions or machines compare through the JSON files.
"""


# --------------------------------------------------------------------------- config


@dataclass
class BenchConfig:
    scale: Scale
    schema: str = "bench"
    repeat: int = 3
    lookback_days: int = 15
    variants: tuple[str, ...] = VARIANTS
    with_tests: bool = True
    git_ref: str | None = None  # build the dbt project of this commit, not the working tree
    patches: tuple[Path, ...] = ()  # diffs applied to the project copy (measure a proposed change)
    project_source: Path | None = None  # copy the dbt project from here, not from the working tree
    candidate_patches: tuple[Path, ...] = ()  # variant "patched": incremental build with these applied
    select: str | None = None  # dbt --select for every build (default: the whole project)
    target: str = "local"
    table_format: str = "iceberg"
    results_dir: Path = RESULTS_DIR
    mode: str = "default"
    log: Callable[[str], None] = print

    @property
    def data_dir(self) -> Path:
        return self.results_dir / "data"

    @property
    def project_dir(self) -> Path:
        return self.results_dir / f"project-{self.schema}"

    @property
    def patched_project_dir(self) -> Path:
        return self.results_dir / f"project-{self.schema}-patched"

    @property
    def target_path(self) -> Path:
        return self.results_dir / "target"

    @property
    def log_path(self) -> Path:
        return self.results_dir / "logs"


def state_dir_for(results_dir: Path, schema: str) -> Path:
    return results_dir / f"state-{schema}"


# --------------------------------------------------------------------------- dbt


@dataclass
class DbtRun:
    seconds: float
    nodes: dict[str, dict[str, Any]]
    failed_nodes: list[str] = field(default_factory=list)


# The late-arrival path the benchmark is about: these must build, every run.
CORE_MODELS = (
    "silver_event_arrivals",
    "silver_quarantine",
    "silver_events",
    "silver_event_changes",
    GOLD_MODEL,
    "late_arrival_audit",
)


def run_dbt(
    cfg: BenchConfig, *args: str, vars: dict[str, Any] | None = None, spark=None, patched: bool = False
) -> DbtRun:
    """dbt in this process (``patched``: on the project copy with the candidate
    patches). A core model (CORE_MODELS) that fails or is skipped aborts the
    benchmark; any other failing node (a data test, a model outside the
    late-arrival path) is recorded and reported, and the run goes on."""
    from dbt.cli.main import dbtRunner

    project_dir = cfg.patched_project_dir if patched else cfg.project_dir
    cli = [
        *args,
        "--project-dir",
        str(project_dir),
        "--profiles-dir",
        str(project_dir / "profiles"),
        "--target",
        cfg.target,
        "--target-path",
        str(cfg.target_path.with_name("target-patched") if patched else cfg.target_path),
        "--log-path",
        str(cfg.log_path),
    ]
    if not cfg.with_tests and args[0] == "build":
        cli += ["--exclude-resource-type", "test", "--exclude-resource-type", "unit_test"]
    if cfg.select:
        cli += ["--select", cfg.select]
    if vars:
        cli += ["--vars", json.dumps(vars)]
    os.environ["LATECOMER_SCHEMA"] = cfg.schema
    started = time.perf_counter()
    result = dbtRunner(callbacks=[NodeTagger(spark)] if spark is not None else []).invoke(cli)
    seconds = time.perf_counter() - started
    results = getattr(result.result, "results", None)
    if results is None:
        raise RuntimeError(f"dbt {' '.join(args)} failed: {result.exception}")
    status = {r.node.name: str(r.status) for r in results}
    broken = [f"{name}: {status[name]}" for name in CORE_MODELS if status.get(name, "success") != "success"]
    if args[0] == "build" and not set(CORE_MODELS) <= set(status):
        broken.append(f"not built: {sorted(set(CORE_MODELS) - set(status))}")
    if broken:
        messages = [f"{r.node.name}: {r.message}" for r in results if str(r.status) not in ("success", "pass")]
        raise RuntimeError(f"dbt {' '.join(args)}: core model(s) {broken} did not build: {messages}")
    failed_nodes = [f"{r.node.name}: {r.status}" for r in results if str(r.status) not in ("success", "pass", "warn")]
    if failed_nodes:
        cfg.log(f"bench: warning: {len(failed_nodes)} node(s) failed or were skipped: {failed_nodes}")
    nodes = {
        r.node.name: {
            "type": str(r.node.resource_type),
            "seconds": round(float(r.execution_time or 0.0), 3),
            "status": str(r.status),
        }
        for r in results
    }
    return DbtRun(seconds=seconds, nodes=nodes, failed_nodes=failed_nodes)


# --------------------------------------------------------------------------- ingest


def land(spark, cfg: BenchConfig, batches: Sequence[Batch]) -> dict[str, Any]:
    """Land ``batches`` through python_jobs.ingest, one call per (arrival, source)."""
    from python_jobs import ingest

    settings = ingest.IngestSettings(schema=cfg.schema, table_format=cfg.table_format)
    groups: dict[tuple[datetime, str, str], list[Path]] = {}
    for batch in batches:
        groups.setdefault((batch.arrival_ts, batch.feed != "events", batch.feed, batch.source), []).append(batch.path)
    totals = {feed: {"calls": 0, "rows": 0, "flagged": 0, "seconds": 0.0} for feed in ingest.FEEDS}
    for (arrival_ts, _, feed, source), paths in sorted(groups.items()):
        started = time.perf_counter()
        results = ingest.ingest(spark, ingest.FEEDS[feed], source, paths, arrival_ts, settings, out=io.StringIO())
        total = totals[feed]
        total["seconds"] += time.perf_counter() - started
        total["calls"] += 1
        for r in results:
            if r.skipped:
                raise RuntimeError(f"{r.path} was already landed: the schema is not fresh")
            total["rows"] += r.accepted + r.flagged
            total["flagged"] += r.flagged
    events = totals["events"]
    return {
        "calls": events["calls"],
        "rows": events["rows"],
        "flagged": events["flagged"],
        "seconds": round(events["seconds"], 3),
        "rows_per_second": round(events["rows"] / events["seconds"], 1) if events["seconds"] else None,
        "other_feeds": {
            feed: {**t, "seconds": round(t["seconds"], 3)}
            for feed, t in totals.items()
            if feed != "events" and t["calls"]
        },
    }


# --------------------------------------------------------------------------- tables


def schemas_of(spark, schema: str) -> list[str]:
    return [db for (db,) in spark.sql("show databases").collect() if db == schema or db.startswith(f"{schema}_")]


def drop_schemas(spark, schema: str) -> None:
    for db in schemas_of(spark, schema):
        spark.sql(f"drop database if exists {db} cascade")


def iceberg_tables(spark, schema: str, exclude_layers: Iterable[str] = ("bronze",)) -> list[str]:
    """Iceberg tables of the deployment (views and excluded layers left out)."""
    skip = {f"{schema}_{layer}" for layer in exclude_layers}
    tables = []
    for db in schemas_of(spark, schema):
        if db in skip:
            continue
        for row in spark.sql(f"show tables in {db}").collect():
            if row.isTemporary:
                continue
            name = f"{db}.{row.tableName}"
            try:
                spark.sql(f"select 1 from {name}.metadata_log_entries limit 1").collect()
            except Exception:  # a view or not an Iceberg table
                continue
            tables.append(name)
    return sorted(tables)


def current_metadata_file(spark, table: str) -> str:
    return spark.sql(f"select file from {table}.metadata_log_entries order by timestamp desc limit 1").collect()[0][0]


@dataclass
class TableState:
    table: str
    metadata_file: str
    snapshot_id: int | None
    files: dict[str, tuple[str, int, int]]  # path -> (partition, bytes, records)


def table_files(spark, table: str) -> dict[str, tuple[str, int, int]]:
    frame = spark.table(f"{table}.files")
    partition = "to_json(partition)" if "partition" in frame.columns else "'{}'"
    rows = spark.sql(
        f"select file_path, {partition} as part, file_size_in_bytes, record_count from {table}.files where content = 0"
    ).collect()
    return {r.file_path: (r.part, int(r.file_size_in_bytes), int(r.record_count)) for r in rows}


def capture(spark, tables: Sequence[str]) -> dict[str, TableState]:
    states = {}
    for table in tables:
        snap = spark.sql(f"select snapshot_id from {table}.snapshots order by committed_at desc limit 1").collect()
        states[table] = TableState(
            table=table,
            metadata_file=current_metadata_file(spark, table),
            snapshot_id=snap[0][0] if snap else None,
            files=table_files(spark, table),
        )
    return states


def restore(spark, baseline: dict[str, TableState], schema: str) -> None:
    """Put every non-bronze table back to ``baseline`` (see the module docstring)."""
    for table in iceberg_tables(spark, schema):
        if table not in baseline:  # created after the baseline: not ours to keep
            spark.sql(f"drop table {table} purge")
    for table, state in baseline.items():
        exists = spark.catalog.tableExists(table)
        if exists:
            same_lineage = spark.sql(
                f"select count(*) from {table}.metadata_log_entries where file = '{state.metadata_file}'"
            ).collect()[0][0]
            if current_metadata_file(spark, table) == state.metadata_file:
                continue
            # A recreated table (full refresh) shares no file with the baseline:
            # purge deletes its own files only.
            spark.sql(f"drop table {table}{'' if same_lineage else ' purge'}")
        spark.sql(
            f"call spark_catalog.system.register_table(table => '{table}', metadata_file => '{state.metadata_file}')"
        ).collect()
        spark.sql(f"refresh table {table}")
    spark.catalog.clearCache()


def rewrite_stats(before: TableState | None, after: dict[str, tuple[str, int, int]]) -> dict:
    old = before.files if before else {}
    added = {p: v for p, v in after.items() if p not in old}
    removed = {p: v for p, v in old.items() if p not in after}
    added_parts = {v[0] for v in added.values()}
    removed_parts = {v[0] for v in removed.values()}
    return {
        "files_added": len(added),
        "files_removed": len(removed),
        "bytes_written": sum(v[1] for v in added.values()),
        "bytes_replaced": sum(v[1] for v in removed.values()),
        "records_written": sum(v[2] for v in added.values()),
        "partitions_written": len(added_parts | removed_parts),
        "partitions_rewritten": len(removed_parts),
        "partitions_total": len({v[0] for v in after.values()}),
        "partition_values": sorted(_partition_label(p) for p in added_parts | removed_parts),
    }


def _partition_label(part_json: str) -> str:
    values = json.loads(part_json) if part_json else {}
    return ",".join(str(v) for v in values.values()) or "(unpartitioned)"


def snapshot_summaries(spark, table: str, after_snapshot: int | None) -> list[dict]:
    """Summaries of the snapshots committed after ``after_snapshot`` (all when
    the table was recreated)."""
    rows = spark.sql(
        f"select snapshot_id, parent_id, operation, summary from {table}.snapshots order by committed_at"
    ).collect()
    ids = [r.snapshot_id for r in rows]
    start = ids.index(after_snapshot) + 1 if after_snapshot in ids else 0
    keep = (
        "changed-partition-count",
        "added-files-size",
        "removed-files-size",
        "added-records",
        "deleted-records",
        "added-data-files",
        "deleted-data-files",
    )
    return [{"operation": r.operation, **{k: r.summary.get(k) for k in keep if k in r.summary}} for r in rows[start:]]


# --------------------------------------------------------------------------- Spark metrics


JOB_PREFIX = "dbt node "
# Tables whose reads are measured: the landing table, and the two silver
# tables every incremental run reads from.
READ_TABLES = ("bronze_events", "silver_event_arrivals", "silver_events")


class NodeTagger:
    """dbt event callback: while a node runs, Spark jobs started from its
    thread carry the description ``dbt node <name>``, so the SQL executions
    (and what they read) can be attributed to models."""

    def __init__(self, spark) -> None:
        self.spark = spark

    def __call__(self, event) -> None:
        name = event.info.name
        if name not in ("NodeStart", "NodeFinished"):
            return
        try:
            node = event.data.node_info.node_name
            self.spark.sparkContext.setJobDescription(f"{JOB_PREFIX}{node}" if name == "NodeStart" else None)
        except Exception:  # attribution is a nicety; never break the run
            pass


class ScanMetrics:
    """Rows, files and bytes read from some tables, from the SQL metrics of the
    Iceberg BatchScan nodes of every query run since :meth:`start`, in total
    and per dbt node (see :class:`NodeTagger`)."""

    WANTED = {
        "number of output rows": "rows",
        "number of result data files": "files",
        "total data file size (bytes)": "bytes",
    }

    def __init__(self, spark, tables: Sequence[str] = READ_TABLES) -> None:
        self.spark = spark
        self.tables = tuple(tables)
        self.store = spark._jsparkSession.sharedState().statusStore()
        self.first = 0
        self.last_queries: dict[str, Any] = {}

    def _executions(self) -> dict[int, Any]:
        """Execution id -> Spark's SQLExecutionUIData (a py4j object)."""
        executions = self.store.executionsList()
        out = {}
        for i in range(executions.size()):
            execution = executions.apply(i)
            out[execution.executionId()] = execution
        return out

    def start(self) -> None:
        self.first = max(self._executions(), default=-1) + 1

    def _drain(self) -> None:
        try:
            self.spark.sparkContext._jsc.sc().listenerBus().waitUntilEmpty(30_000)
        except Exception:
            time.sleep(2)

    def _table_of(self, node_name: str) -> str | None:
        if not node_name.startswith("BatchScan"):
            return None
        return next((t for t in self.tables if node_name.endswith(f".{t}")), None)

    def collect(self) -> dict[str, dict[str, Any]]:
        self._drain()
        # accumulator -> (table, metric, value, dbt node)
        seen: dict[int, tuple[str, str, int, str]] = {}
        executions = {i: e for i, e in self._executions().items() if i >= self.first}
        for execution_id, execution in sorted(executions.items()):
            node_name = _node_of(execution)
            graph = self.store.planGraph(execution_id)
            values = self.store.executionMetrics(execution_id)
            nodes = graph.allNodes()
            for j in range(nodes.size()):
                node = nodes.apply(j)
                table = self._table_of(node.name())
                if table is None:
                    continue
                metrics = node.metrics()
                for k in range(metrics.size()):
                    metric = metrics.apply(k)
                    key = self.WANTED.get(metric.name())
                    value = values.get(metric.accumulatorId())
                    if key is None or not value.isDefined():
                        continue
                    number = _metric_number(value.get())
                    old = seen.get(metric.accumulatorId())
                    # A cached plan shows its scan (same accumulator) again in
                    # later queries that read the cache: count it once.
                    if number and (old is None or number > old[2]):
                        seen[metric.accumulatorId()] = (table, key, number, old[3] if old else node_name)
        out: dict[str, dict[str, Any]] = {
            t: {"rows": 0, "files": 0, "bytes": 0, "scans": 0, "by_node": {}} for t in self.tables
        }
        for table, key, number, node_name in seen.values():
            out[table][key] += number
            node = out[table]["by_node"].setdefault(node_name, {"rows": 0, "files": 0, "bytes": 0, "scans": 0})
            node[key] += number
            if key == "rows":
                out[table]["scans"] += 1
                node["scans"] += 1
        # Spark keeps the metrics of the last spark.sql.ui.retainedExecutions
        # queries only: when the first of this run is gone, totals are short.
        complete = not executions or min(executions) <= self.first
        for table in self.tables:
            out[table]["complete"] = complete
            out[table]["queries"] = len(executions)
        self.last_queries = _query_stats(self.store, executions.values())
        return out


def _node_of(execution) -> str:
    description = execution.description() or ""
    return description[len(JOB_PREFIX) :] if description.startswith(JOB_PREFIX) else "(other)"


# Plan nodes that say nothing about what a query does.
_WRAPPERS = ("AdaptiveSparkPlan", "WholeStageCodegen", "AQEShuffleRead", "ColumnarToRow", "InputAdapter")


def _query_stats(store, executions: Iterable[Any]) -> dict[str, Any]:
    """Spark SQL queries per dbt node: how many (top-level executions: a
    statement's nested executions, e.g. the job a CACHE TABLE runs, count
    with it), their Spark time (submission to completion; analysis and
    planning before submission are not in it), jobs, and one line per query
    (node, seconds, jobs, first plan operator, tables scanned, whether it read
    a cached relation)."""
    by_node: dict[str, dict[str, Any]] = {}
    queries = []
    for execution in executions:
        node = _node_of(execution)
        completion = execution.completionTime()
        millis = completion.get().getTime() - execution.submissionTime() if completion.isDefined() else 0
        jobs = execution.jobs().size()
        top = execution.rootExecutionId() in (-1, execution.executionId())
        stats = by_node.setdefault(node, {"queries": 0, "spark_seconds": 0.0, "jobs": 0})
        stats["spark_seconds"] += millis / 1000 if top else 0.0
        stats["jobs"] += jobs
        stats["queries"] += 1 if top else 0
        graph = store.planGraph(execution.executionId()).allNodes()
        names = [graph.apply(j).name() for j in range(graph.size())]
        head = next((n for n in names if not n.startswith(_WRAPPERS)), names[0] if names else "?")
        queries.append(
            {
                "node": node,
                "seconds": round(millis / 1000, 3),
                "jobs": jobs,
                "nested": not top,
                "head": head,
                # Scans of a cached relation's own plan are listed under it (not re-run).
                "scans": sorted({n.split(" ")[-1] for n in names if n.startswith("BatchScan")}),
                "reads_cache": any(n.startswith("Scan In-memory table") for n in names),
            }
        )
    for stats in by_node.values():
        stats["spark_seconds"] = round(stats["spark_seconds"], 3)
    return {"by_node": by_node, "queries": queries}


def _metric_number(text: str) -> int | None:
    cleaned = text.replace(",", "").strip()
    return int(cleaned) if cleaned.isdigit() else None


# --------------------------------------------------------------------------- checks


def gold_fingerprint(spark, schema: str) -> dict[str, Any]:
    row = spark.sql(
        f"""
        select count(*) as rows, count(distinct event_date) as partitions,
               sum(orders) as orders, cast(sum(net_revenue) as string) as net_revenue,
               sum(hash(event_date, source_system, orders, gross_revenue, refunds, net_revenue))
                   as digest
        from {schema}_gold.{GOLD_MODEL}
        """
    ).collect()[0]
    return row.asDict()


def lookback_window(spark, schema: str, days: int) -> list[str]:
    """The window the static lookback covered in gold_daily_revenue: its last
    ``days`` event dates (see changed_partitions in macros/restatement)."""
    row = spark.sql(
        f"select cast(date_sub(max(event_date), {days} - 1) as string), "
        f"cast(max(event_date) as string) from {schema}_gold.{GOLD_MODEL}"
    ).collect()[0]
    return [row[0], row[1]]


# --------------------------------------------------------------------------- machine


def machine_info(spark) -> dict[str, Any]:
    mem_kib = 0
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem_kib = int(line.split()[1])
    except OSError:
        pass
    conf = spark.sparkContext.getConf()
    return {
        "cpu_count": os.cpu_count(),
        "memory_gib": round(mem_kib / 1024 / 1024, 1),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "spark": spark.version,
        "spark_master": conf.get("spark.master"),
        "driver_memory": conf.get("spark.driver.memory"),
        "shuffle_partitions": spark.conf.get("spark.sql.shuffle.partitions"),
        "retained_executions": conf.get("spark.sql.ui.retainedExecutions", "1000"),
        "load_average_start": [round(x, 2) for x in os.getloadavg()],
    }


def peak_memory(spark) -> dict[str, Any]:
    """Peak resident memory of this Python process and of the local JVM."""
    out: dict[str, Any] = {"python_peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}
    try:
        pid = spark._jvm.java.lang.ProcessHandle.current().pid()
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                out["jvm_peak_rss_mib"] = round(int(line.split()[1]) / 1024)
    except Exception:
        pass
    return out


# --------------------------------------------------------------------------- the run


@dataclass
class Measurement:
    variant: str
    repeat: int
    seconds: float
    nodes: dict[str, dict[str, Any]]
    tables: dict[str, dict[str, Any]]
    bronze_read: dict[str, Any]
    reads: dict[str, dict[str, Any]]
    gold_fingerprint: dict[str, Any]
    snapshots: dict[str, list[dict]] = field(default_factory=dict)
    queries: dict[str, Any] = field(default_factory=dict)
    lookback_window: list[str] | None = None
    failed_nodes: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return self.__dict__


def measure_variant(
    spark, cfg: BenchConfig, history: History, variant: str, baseline: dict[str, TableState]
) -> Measurement:
    scale = history.scale
    restore(spark, baseline, cfg.schema)
    vars: dict[str, Any] = {"as_of": scale.late_as_of.isoformat()}
    args = ["build"]
    if variant == "full_refresh":
        args.append("--full-refresh")
    elif variant == "lookback":
        vars["restate_lookback_days"] = cfg.lookback_days
    scans = ScanMetrics(spark)
    scans.start()
    run = run_dbt(cfg, *args, vars=vars, spark=spark, patched=variant == PATCHED)
    reads = scans.collect()
    if not reads["bronze_events"]["complete"]:
        cfg.log("bench: warning: Spark dropped the metrics of early queries; rows read are short")
    tables = {}
    snapshots = {}
    for table in iceberg_tables(spark, cfg.schema):
        layer = table.split(".")[0].removeprefix(f"{cfg.schema}_")
        if layer not in ("silver", "gold"):
            continue
        name = table.split(".")[1]
        before = baseline.get(table)
        tables[name] = {"layer": layer, **rewrite_stats(before, table_files(spark, table))}
        if layer == "gold":
            snapshots[name] = snapshot_summaries(spark, table, before and before.snapshot_id)
    return Measurement(
        variant=variant,
        repeat=0,
        seconds=round(run.seconds, 3),
        nodes=run.nodes,
        tables=tables,
        bronze_read=reads["bronze_events"],
        reads=reads,
        gold_fingerprint=gold_fingerprint(spark, cfg.schema),
        snapshots=snapshots,
        queries=scans.last_queries,
        lookback_window=(lookback_window(spark, cfg.schema, cfg.lookback_days) if variant == "lookback" else None),
        failed_nodes=run.failed_nodes,
    )


def snapshot_project(cfg: BenchConfig, patched: bool = False) -> Path:
    """Copy the dbt project for this run: from the working tree as it is now,
    from ``cfg.project_source`` or from the git commit ``cfg.git_ref``, with
    ``cfg.patches`` applied (and ``cfg.candidate_patches`` too when ``patched``).
    Edits made while a long benchmark runs then do not change what it builds,
    and results name what they built."""
    dest = cfg.patched_project_dir if patched else cfg.project_dir
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)
    if cfg.git_ref:
        listed = subprocess.run(
            ["git", "ls-tree", "--name-only", cfg.git_ref],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        archive = subprocess.run(
            ["git", "archive", "--format=tar", cfg.git_ref, *[n for n in DBT_PROJECT_FILES if n in listed]],
            cwd=REPO_ROOT,
            capture_output=True,
            check=True,
        ).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(dest, filter="data")
        shutil.rmtree(dest / "tests" / "pytest", ignore_errors=True)
    else:
        ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "pytest", ".pytest_cache")
        for name in DBT_PROJECT_FILES:
            source = (cfg.project_source or REPO_ROOT) / name
            if source.is_dir():
                shutil.copytree(source, dest / name, ignore=ignore)
            elif source.is_file():
                shutil.copy2(source, dest / name)
    for patch in (*cfg.patches, *(cfg.candidate_patches if patched else ())):
        apply_patch(dest, patch)
    return dest


def apply_patch(project: Path, patch: Path) -> None:
    """Apply a diff (paths from the repository root, as `git diff` writes them)
    to the copy in ``project``. git must not see the enclosing repository, or it
    would take the paths relative to that repository's root."""
    env = {**os.environ, "GIT_CEILING_DIRECTORIES": str(project.parent)}
    done = subprocess.run(
        ["git", "apply", "--verbose", str(patch.resolve())], cwd=project, env=env, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise RuntimeError(f"bench: {patch} does not apply to the project built: {done.stderr.strip()}")


def run_benchmark(spark, cfg: BenchConfig, on_progress: Callable[[dict], None] | None = None) -> dict[str, Any]:
    """Generate, land, build, then measure every variant ``cfg.repeat`` times.

    ``on_progress`` gets the report so far after the initial load and after
    every measured run (the CLI writes it, so a long run leaves results early).
    """
    log = cfg.log
    scale = cfg.scale
    report: dict[str, Any] = {
        "benchmark": "latecomer restatement",
        "mode": cfg.mode,
        "complete": False,
        "started_at": datetime.now(UTC).isoformat(),
        "git": {
            **git_info(),
            "built": (
                f"{cfg.git_ref} ({_resolve(cfg.git_ref)})" if cfg.git_ref else str(cfg.project_source or "working tree")
            ),
            "patches": {str(p): hashlib.sha1(p.read_bytes()).hexdigest()[:12] for p in cfg.patches},
            "candidate_patches": {str(p): hashlib.sha1(p.read_bytes()).hexdigest()[:12] for p in cfg.candidate_patches},
        },
        "machine": machine_info(spark),
        "config": {
            "schema": cfg.schema,
            "repeat": cfg.repeat,
            "lookback_days": cfg.lookback_days,
            "variants": list(cfg.variants),
            "with_tests": cfg.with_tests,
            "select": cfg.select,
            "target": cfg.target,
            "table_format": cfg.table_format,
            "restore": "before each run, every non-bronze Iceberg table is dropped from the catalog "
            "(with purge when a full refresh recreated it) and its metadata file of the end of the "
            "initial build is registered again (system.register_table)",
        },
    }
    snapshot_project(cfg)
    if PATCHED in cfg.variants:
        snapshot_project(cfg, patched=True)
    log(f"bench: generating {scale.days} days x {scale.events_per_day:,} events ({scale.key()})")
    t0 = time.perf_counter()
    history = generate(scale, cfg.data_dir)
    report["data"] = {**history.as_json(), "generate_seconds": round(time.perf_counter() - t0, 1)}

    drop_schemas(spark, cfg.schema)
    log(f"bench: landing {len(history.history)} history files in {cfg.schema}_bronze")
    ingest_history = land(spark, cfg, history.history)
    log(f"bench: landed {ingest_history['rows']:,} rows in {ingest_history['seconds']:.0f} s; initial dbt build")
    scans = ScanMetrics(spark)
    scans.start()
    initial = run_dbt(cfg, "build", vars={"as_of": scale.initial_as_of.isoformat()}, spark=spark)
    initial_reads = scans.collect()
    baseline = capture(spark, iceberg_tables(spark, cfg.schema))
    events = ingest_history["rows"]
    report["initial_load"] = {
        "ingest": ingest_history,
        "dbt_build_seconds": round(initial.seconds, 3),
        "nodes": initial.nodes,
        "failed_nodes": initial.failed_nodes,
        "bronze_read": initial_reads["bronze_events"],
        "reads": initial_reads,
        "queries": scans.last_queries,
        "tables": {
            table.split(".")[1]: {
                "files": len(state.files),
                "bytes": sum(v[1] for v in state.files.values()),
                "records": sum(v[2] for v in state.files.values()),
                "partitions": len({v[0] for v in state.files.values()}),
            }
            for table, state in baseline.items()
        },
        "events_per_second": {
            "ingest": ingest_history["rows_per_second"],
            "dbt_build": _rate(events, initial.seconds),
            **{
                model: _rate(events, initial.nodes.get(model, {}).get("seconds"))
                for model in ("silver_event_arrivals", "silver_events")
            },
        },
    }
    log(f"bench: initial build {initial.seconds:.0f} s; landing the late batch")
    report["late_batch"] = {"ingest": land(spark, cfg, history.late), "dates": history.late_dates, "k": scale.k}

    measurements: list[Measurement] = []

    def progress() -> None:
        report["runs"] = [m.as_json() for m in measurements]
        report["summary"] = summarize(measurements, cfg.variants)
        report["memory"] = peak_memory(spark)
        report["machine"]["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
        report["finished_at"] = datetime.now(UTC).isoformat()
        if on_progress:
            on_progress(report)

    progress()
    for repeat in range(cfg.repeat):
        # Rotate the order so no variant always runs first (or right after another).
        shift = repeat % len(cfg.variants)
        for variant in list(cfg.variants[shift:]) + list(cfg.variants[:shift]):
            log(f"bench: repeat {repeat + 1}/{cfg.repeat}: {variant}")
            m = measure_variant(spark, cfg, history, variant, baseline)
            m.repeat = repeat + 1
            gold = m.tables.get(GOLD_MODEL, {})
            log(
                f"bench:   {m.seconds:.1f} s, {GOLD_MODEL} partitions written "
                f"{gold.get('partitions_written')}, bronze rows read {m.bronze_read['rows']:,}"
            )
            measurements.append(m)
            progress()
    restore(spark, baseline, cfg.schema)
    report["complete"] = True
    progress()
    return report


def _rate(events: int, seconds: float | None) -> float | None:
    return round(events / seconds, 1) if seconds else None


def _resolve(ref: str) -> str | None:
    done = subprocess.run(["git", "rev-parse", "--short=12", ref], cwd=REPO_ROOT, capture_output=True, text=True)
    return done.stdout.strip() if done.returncode == 0 else None


def git_info() -> dict[str, Any]:
    """HEAD and the uncommitted changes to the dbt project the run builds."""

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(["git", *args], cwd=REPO_ROOT, capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    status = git("status", "--porcelain", "--", *DBT_PROJECT_FILES, "python_jobs")
    return {
        "head": git("rev-parse", "--short=12", "HEAD"),
        "uncommitted": status.splitlines() if status else [],
    }


# --------------------------------------------------------------------------- summary


def _median(values: Iterable[float | int | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def summarize(measurements: Sequence[Measurement], variants: Sequence[str]) -> dict[str, Any]:
    summary: dict[str, Any] = {}
    for variant in variants:
        runs = [m for m in measurements if m.variant == variant]
        if not runs:
            continue
        models = sorted({n for m in runs for n, v in m.nodes.items() if v["type"] == "model"})
        tables = sorted({t for m in runs for t in m.tables})
        summary[variant] = {
            "n": len(runs),
            "build_seconds": _median(m.seconds for m in runs),
            "model_seconds": _median(sum(v["seconds"] for v in m.nodes.values() if v["type"] == "model") for m in runs),
            "test_seconds": _median(sum(v["seconds"] for v in m.nodes.values() if v["type"] != "model") for m in runs),
            "models": {name: _median(m.nodes.get(name, {}).get("seconds") for m in runs) for name in models},
            "queries": {
                name: {
                    key: _median(m.queries.get("by_node", {}).get(name, {}).get(key) for m in runs)
                    for key in ("queries", "spark_seconds", "jobs")
                }
                for name in models
            },
            "tables": {
                name: {
                    key: _median(m.tables.get(name, {}).get(key) for m in runs)
                    for key in (
                        "partitions_written",
                        "partitions_rewritten",
                        "partitions_total",
                        "bytes_written",
                        "records_written",
                        "files_added",
                    )
                }
                for name in tables
            },
            "bronze_rows_read": _median(m.bronze_read["rows"] for m in runs),
            "bronze_bytes_read": _median(m.bronze_read["bytes"] for m in runs),
            "reads": {
                table: {
                    "rows": _median(m.reads[table]["rows"] for m in runs),
                    "bytes": _median(m.reads[table]["bytes"] for m in runs),
                    "scans": _median(m.reads[table]["scans"] for m in runs),
                    "rows_by_node": {
                        node: _median(m.reads[table]["by_node"].get(node, {}).get("rows", 0) for m in runs)
                        for node in sorted({n for m in runs for n in m.reads[table]["by_node"]})
                    },
                }
                for table in READ_TABLES
            },
            "gold_fingerprints_agree": len({json.dumps(m.gold_fingerprint) for m in runs}) == 1,
        }
    prints = {json.dumps(m.gold_fingerprint, sort_keys=True) for m in measurements}
    summary["all_variants_same_gold"] = len(prints) == 1 if prints else None
    return summary


def _mb(value: float | None) -> str:
    return "-" if value is None else f"{value / 1e6:,.1f}"


def _num(value: float | None, digits: int = 0) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def render_markdown(report: dict[str, Any]) -> str:
    data = report["data"]
    scale = data["scale"]
    machine = report["machine"]
    init = report["initial_load"]
    summary = report["summary"]
    variants = [v for v in report["config"]["variants"] if v in summary]
    lookback = report["config"]["lookback_days"]
    labels = {
        "incremental": "incremental",
        "lookback": f"lookback {lookback}d",
        "full_refresh": "full refresh",
        PATCHED: "incremental + "
        + ", ".join(Path(p).stem for p in report["git"].get("candidate_patches", {}) or ["patch"]),
    }
    runs = report.get("runs", [])
    expected = report["config"]["repeat"] * len(report["config"]["variants"])
    lines = [
        f"# latecomer restatement benchmark ({report['mode']})",
        "",
        *([] if report.get("complete") else [f"**Incomplete: {len(runs)} of {expected} runs so far.**", ""]),
        f"- history: {scale['days']} event days x {scale['events_per_day']:,} events/day "
        f"= {init['ingest']['rows']:,} bronze rows in {data['history_files']} files; "
        f"late batch: {report['late_batch']['ingest']['rows']:,} rows touching "
        f"k={report['late_batch']['k']} partitions ({', '.join(report['late_batch']['dates'])})",
        f"- machine: {machine['cpu_count']} cores, {machine['memory_gib']} GiB, "
        f"Spark {machine['spark']} {machine['spark_master']}, driver {machine['driver_memory']}; "
        f"load average {machine['load_average_start'][0]} at start, "
        f"{machine['load_average_end'][0]} at end; "
        f"peak RSS JVM {report['memory'].get('jvm_peak_rss_mib', '?')} MiB, "
        f"Python {report['memory']['python_peak_rss_mib']} MiB",
        f"- dbt project built: {report['git']['built']}"
        + "".join(f" + {Path(p).name} ({h})" for p, h in report["git"].get("patches", {}).items())
        + f" (HEAD {report['git']['head']}, "
        f"{len(report['git']['uncommitted'])} uncommitted change(s)), {report['started_at']}; medians of "
        f"{report['config']['repeat']} run(s) per variant; tables restored between runs by "
        "register_table of their post-initial-load metadata",
        "",
        "## Initial load (one run)",
        "",
        "| step | seconds | events/s |",
        "|---|---:|---:|",
        f"| ingest ({init['ingest']['calls']} calls) | {init['ingest']['seconds']:,.1f} | "
        f"{_num(init['events_per_second']['ingest'])} |",
        f"| dbt build (all) | {init['dbt_build_seconds']:,.1f} | {_num(init['events_per_second']['dbt_build'])} |",
    ]
    for model in ("silver_event_arrivals", "silver_events"):
        seconds = init["nodes"].get(model, {}).get("seconds")
        lines.append(f"| {model} | {_num(seconds, 1)} | {_num(init['events_per_second'].get(model))} |")
    lines += [
        "",
        f"## The late batch, {len(variants)} ways (medians)",
        "",
        "| | " + " | ".join(labels[v] for v in variants) + " |",
        "|---|" + "---:|" * len(variants),
    ]

    def row(label: str, fn: Callable[[dict], str]) -> None:
        lines.append(f"| {label} | " + " | ".join(fn(summary[v]) for v in variants) + " |")

    row("dbt build, s", lambda s: _num(s["build_seconds"], 1))
    row("models, s", lambda s: _num(s["model_seconds"], 1))
    row("tests and snapshot, s", lambda s: _num(s["test_seconds"], 1))
    gold_tables = sorted({t for v in variants for t, st in summary[v]["tables"].items() if t.startswith("gold")})
    for table in gold_tables:
        row(
            f"{table}: partitions written / total",
            lambda s, t=table: (
                f"{_num(s['tables'].get(t, {}).get('partitions_written'))} / "
                f"{_num(s['tables'].get(t, {}).get('partitions_total'))}"
            ),
        )
        row(
            f"{table}: MB written",
            lambda s, t=table: _mb(s["tables"].get(t, {}).get("bytes_written")),
        )
    row(
        "silver_events: partitions written",
        lambda s: _num(s["tables"].get("silver_events", {}).get("partitions_written")),
    )
    row(
        "silver_events: MB written",
        lambda s: _mb(s["tables"].get("silver_events", {}).get("bytes_written")),
    )
    row(
        "all silver+gold: MB written",
        lambda s: _mb(sum(t.get("bytes_written") or 0 for t in s["tables"].values())),
    )
    for table in READ_TABLES:
        row(
            f"{table}: rows read (scans)",
            lambda s, t=table: f"{_num(s['reads'][t]['rows'])} ({_num(s['reads'][t]['scans'])})",
        )
    row("bronze MB read", lambda s: _mb(s["bronze_bytes_read"]))
    lines += [
        "",
        f"Gold fingerprint identical across variants: {summary.get('all_variants_same_gold')}.",
        *(
            [
                "Nodes that failed or were skipped (data tests, or models off the late-arrival path; "
                f"not fatal): {sorted({t for r in runs for t in r['failed_nodes']})}"
            ]
            if any(r["failed_nodes"] for r in runs)
            else []
        ),
        "",
        "## Rows read per model (medians)",
        "",
        "| table: model | " + " | ".join(labels[v] for v in variants) + " |",
        "|---|" + "---:|" * len(variants),
        *[
            f"| {table}: {node} | "
            + " | ".join(_num(summary[v]["reads"][table]["rows_by_node"].get(node)) for v in variants)
            + " |"
            for table in READ_TABLES
            for node in sorted({n for v in variants for n in summary[v]["reads"][table]["rows_by_node"]})
        ],
        "",
        "## Model time per variant (medians)",
        "",
        "Each cell: dbt's execution time of the model, s / Spark time of its queries, s (submission to",
        "completion; analysis and planning are outside it) / number of Spark SQL queries it ran.",
        "",
        "| model | " + " | ".join(labels[v] for v in variants) + " |",
        "|---|" + "---:|" * len(variants),
    ]
    models = sorted({m for v in variants for m in summary[v]["models"]})
    models.sort(key=lambda m: -(summary[variants[0]]["models"].get(m) or 0))

    def cell(variant: str, model: str) -> str:
        queries = summary[variant].get("queries", {}).get(model) or {}
        return (
            f"{_num(summary[variant]['models'].get(model), 1)} / {_num(queries.get('spark_seconds'), 1)} / "
            f"{_num(queries.get('queries'))}"
        )

    for model in models:
        lines.append(f"| {model} | " + " | ".join(cell(v, model) for v in variants) + " |")
    return "\n".join(lines) + "\n"


def write_results(report: dict[str, Any], results_dir: Path) -> tuple[Path, Path]:
    """Write the report as JSON and Markdown, named after its mode and start
    time (rewritten as a run progresses); a complete report is also copied to
    latest-<mode>.json / .md."""
    results_dir.mkdir(parents=True, exist_ok=True)
    stamp = datetime.fromisoformat(report["started_at"]).strftime("%Y%m%dT%H%M%SZ")
    base = results_dir / f"bench-{report['mode']}-{stamp}"
    json_path, md_path = base.with_suffix(".json"), base.with_suffix(".md")
    json_path.write_text(json.dumps(report, indent=1, default=str))
    md_path.write_text(render_markdown(report))
    if report.get("complete"):
        shutil.copyfile(json_path, results_dir / f"latest-{report['mode']}.json")
        shutil.copyfile(md_path, results_dir / f"latest-{report['mode']}.md")
    return json_path, md_path


# --------------------------------------------------------------------------- CLI


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m python_jobs.bench",
        description=__doc__.split("\n\n")[0],
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--smoke",
        action="store_true",
        help=f"tiny scale for CI: {SMOKE['days']} days x {SMOKE['events_per_day']:,} events, "
        f"lookback {SMOKE['lookback_days']}, 1 repeat (explicit flags still win)",
    )
    parser.add_argument("--days", type=int, help=f"event days of history (default {DEFAULT['days']})")
    parser.add_argument(
        "--events-per-day",
        type=int,
        help=f"original events per day (default {DEFAULT['events_per_day']:,})",
    )
    parser.add_argument("--k", type=int, default=3, help="partitions the late batch touches")
    parser.add_argument(
        "--late-events", type=int, help="new late events per touched partition (default 0.5%% of a day)"
    )
    parser.add_argument(
        "--lookback-days",
        type=int,
        help=f"static lookback to compare with (default {DEFAULT['lookback_days']})",
    )
    parser.add_argument("--repeat", type=int, help=f"runs per variant; medians reported (default {DEFAULT['repeat']})")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--variants",
        default=",".join(VARIANTS),
        help="comma-separated subset of " + ",".join(VARIANTS),
    )
    parser.add_argument(
        "--no-tests",
        action="store_true",
        help="dbt build without data tests (models and snapshots only; --smoke implies it)",
    )
    parser.add_argument(
        "--select",
        help=f"dbt --select for every build (default: everything; --smoke: {SMOKE_SELECT!r})",
    )
    parser.add_argument(
        "--git-ref",
        help="build the dbt project as committed at this ref (e.g. HEAD) instead of the working tree",
    )
    parser.add_argument(
        "--project-source",
        type=Path,
        help="build the dbt project found in this folder (a copy, another checkout) instead of the working tree",
    )
    parser.add_argument(
        "--patch",
        type=Path,
        action="append",
        default=[],
        help="apply this diff (git diff format, paths from the repository root) to the copy of the "
        "project the run builds, e.g. to measure a proposed change; repeatable",
    )
    parser.add_argument(
        "--candidate-patch",
        type=Path,
        action="append",
        default=[],
        help=f"adds variant {PATCHED!r}: the incremental build of the project with this diff applied, "
        "from the same starting tables (what a proposed change saves; gold must not change); repeatable",
    )
    parser.add_argument("--schema", help="dbt target schema (default bench, bench_smoke)")
    parser.add_argument("--target", default="local", help="dbt target (profiles/profiles.yml)")
    parser.add_argument("--results-dir", type=Path, default=RESULTS_DIR, help="where data, state and results go")
    return parser


def config_from_args(args: argparse.Namespace) -> BenchConfig:
    preset = SMOKE if args.smoke else DEFAULT
    if args.git_ref and args.project_source:
        raise SystemExit("bench: --git-ref and --project-source are exclusive")
    variants = tuple(v.strip() for v in args.variants.split(",") if v.strip())
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown:
        raise SystemExit(f"bench: unknown variant(s) {unknown}; choose from {VARIANTS}")
    if args.candidate_patch:
        variants += (PATCHED,)
    scale = Scale(
        days=args.days or preset["days"],
        events_per_day=args.events_per_day or preset["events_per_day"],
        k=args.k,
        late_events_per_partition=args.late_events,
        seed=args.seed,
    )
    return BenchConfig(
        scale=scale,
        schema=args.schema or ("bench_smoke" if args.smoke else "bench"),
        repeat=args.repeat or preset["repeat"],
        lookback_days=args.lookback_days or preset["lookback_days"],
        variants=variants,
        with_tests=not (args.no_tests or args.smoke),
        git_ref=args.git_ref,
        patches=tuple(args.patch),
        candidate_patches=tuple(args.candidate_patch),
        project_source=args.project_source.resolve() if args.project_source else None,
        select=args.select or (SMOKE_SELECT if args.smoke else None),
        target=args.target,
        table_format=os.environ.get("LATECOMER_TABLE_FORMAT", "iceberg"),
        results_dir=args.results_dir.resolve(),
        mode="smoke" if args.smoke else "default",
    )


def print_summary(report: dict[str, Any], paths: Sequence[Path]) -> None:
    print()
    print(render_markdown(report))
    for path in paths:
        print(f"bench: wrote {path}")
    print(
        "bench: to scale up: --days N --events-per-day N (more history), LATECOMER_DRIVER_MEMORY=12g, "
        "or a cluster: LATECOMER_SPARK_MASTER=spark://host:7077 with LATECOMER_WAREHOUSE and "
        "LATECOMER_METASTORE_URI on shared storage (python -m python_jobs.bench --help)"
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        cfg = config_from_args(args)
    except ValueError as exc:
        print(f"bench: error: {exc}", file=sys.stderr)
        return 2
    if cfg.table_format != "iceberg":
        print("bench: error: the benchmark reads Iceberg metadata; use iceberg", file=sys.stderr)
        return 2
    # Before Spark starts: its own state dir and schema.
    state = state_dir_for(cfg.results_dir, cfg.schema)
    os.environ["LATECOMER_STATE_DIR"] = str(state)
    os.environ["LATECOMER_SCHEMA"] = cfg.schema
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    # A full build runs several hundred queries; keep the metrics of all of them.
    submit_args = os.environ.get("PYSPARK_SUBMIT_ARGS", "pyspark-shell")
    os.environ["PYSPARK_SUBMIT_ARGS"] = f"--conf spark.sql.ui.retainedExecutions=5000 {submit_args}"
    shared = os.environ.get("LATECOMER_METASTORE_URI") or os.environ.get("LATECOMER_WAREHOUSE")
    if not shared:
        shutil.rmtree(state, ignore_errors=True)

    from python_jobs.spark_config import get_spark

    spark = get_spark(cfg.table_format)
    try:
        report = run_benchmark(spark, cfg, on_progress=lambda r: write_results(r, cfg.results_dir))
        paths = write_results(report, cfg.results_dir)
        print_summary(report, paths)
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
