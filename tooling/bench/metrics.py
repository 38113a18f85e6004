"""Spark SQL metrics of a run: what each query read and how long it ran.

Spark keeps, per SQL execution (a query or statement), its plan graph and
the values of its metrics in the SQL status store; :class:`ScanMetrics`
reads them for every execution since :meth:`ScanMetrics.start`. Executions
are attributed to dbt nodes (or floor steps) through the Spark job
description of the statement they belong to (:class:`NodeTagger`,
:func:`tagged`): Delta runs a MERGE or a file listing as nested executions
with descriptions of its own.

A table scan is a plan node named after the table format
(``TableFormat.scan_node``): Iceberg's ``BatchScan``, or on Delta a
``Scan parquet`` node (Delta reads its files as Parquet), each with its own
metric names (:attr:`ScanMetrics.WANTED`).
"""

from __future__ import annotations

import os
import re
import resource
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from pyspark.sql import SparkSession

JOB_PREFIX = "dbt node "
# Tables whose reads are measured: the landing table, and the two silver
# tables every incremental run reads from.
READ_TABLES = ("bronze_events", "silver_event_arrivals", "silver_events")


class NodeTagger:
    """dbt event callback: while a node runs, Spark jobs started from its
    thread carry the description ``dbt node <name>``, so the SQL executions
    (and what they read) can be attributed to models."""

    def __init__(self, spark: SparkSession) -> None:
        self.spark = spark

    def __call__(self, event: Any) -> None:
        name = event.info.name
        if name not in ("NodeStart", "NodeFinished"):
            return
        try:
            node = event.data.node_info.node_name
            self.spark.sparkContext.setJobDescription(f"{JOB_PREFIX}{node}" if name == "NodeStart" else None)
        except Exception:  # attribution is a nicety; never break the run
            pass


@contextmanager
def tagged(spark: SparkSession, node: str) -> Iterator[None]:
    """Attribute the Spark queries run inside the block to ``node``, as
    :class:`NodeTagger` does for a dbt node."""
    spark.sparkContext.setJobDescription(f"{JOB_PREFIX}{node}")
    try:
        yield
    finally:
        spark.sparkContext.setJobDescription(None)  # type: ignore[arg-type]


class ScanMetrics:
    """Rows, files and bytes read from some tables, from the SQL metrics of the
    scan nodes (``scan_node``: the start of their name) of every query run
    since :meth:`start`, in total and per dbt node (see :class:`NodeTagger`)."""

    # The scan nodes' metrics: Iceberg's BatchScan, Delta's (Parquet) file scan.
    WANTED = {
        "number of output rows": "rows",
        "number of result data files": "files",
        "total data file size (bytes)": "bytes",
        "number of files read": "files",
        "size of files read": "bytes",
    }

    def __init__(self, spark: SparkSession, scan_node: str, tables: Sequence[str] = READ_TABLES) -> None:
        self.spark = spark
        self.scan_node = scan_node
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
        if not node_name.startswith(self.scan_node):
            return None
        return next((t for t in self.tables if node_name.endswith(f".{t}")), None)

    def collect(self) -> dict[str, dict[str, Any]]:
        self._drain()
        # accumulator -> (table, metric, value, dbt node)
        seen: dict[int, tuple[str, str, int, str]] = {}
        executions = {i: e for i, e in self._executions().items() if i >= self.first}
        for execution_id, execution in sorted(executions.items()):
            node_name = _node_of(execution, executions)
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
        self.last_queries = _query_stats(self.store, executions, self.scan_node)
        return out


def _node_of(execution: Any, executions: dict[int, Any]) -> str:
    """The dbt node of the statement ``execution`` belongs to (its root execution's description)."""
    root = executions.get(execution.rootExecutionId(), execution)
    description = root.description() or ""
    return description[len(JOB_PREFIX) :] if description.startswith(JOB_PREFIX) else "(other)"


# Plan nodes that say nothing about what a query does.
_WRAPPERS = ("AdaptiveSparkPlan", "WholeStageCodegen", "AQEShuffleRead", "ColumnarToRow", "InputAdapter")


def _query_stats(store: Any, executions: dict[int, Any], scan_node: str) -> dict[str, Any]:
    """Spark SQL queries per dbt node: how many (top-level executions: a
    statement's nested executions, e.g. the job a CACHE TABLE runs, count
    with it), their Spark time (submission to completion; analysis and
    planning before submission are not in it), jobs, and one line per query
    (node, seconds, jobs, first plan operator, tables scanned, whether it read
    a cached relation); ``spark_seconds`` is the Spark time of them all."""
    by_node: dict[str, dict[str, Any]] = {}
    queries = []
    for execution in executions.values():
        node = _node_of(execution, executions)
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
                "scans": sorted({n.split(" ")[-1] for n in names if n.startswith(scan_node)}),
                "reads_cache": any(n.startswith("Scan In-memory table") for n in names),
            }
        )
    total = sum(stats["spark_seconds"] for stats in by_node.values())
    for stats in by_node.values():
        stats["spark_seconds"] = round(stats["spark_seconds"], 3)
    return {"by_node": by_node, "queries": queries, "spark_seconds": round(total, 3)}


class ProcessCounters:
    """CPU seconds a run costs, and what the JVM spends some of them on.

    Wall time on two cores moves by a third between repeats of the same
    build; the CPU both processes burn moves much less, so it is the better
    figure for telling two versions of the project apart. Read from
    ``/proc`` (Linux) and the JVM's management beans:

    - ``jvm_cpu_seconds``: user and system time of the Spark driver JVM
      (with ``local[n]``, the executors' tasks run in it too);
    - ``python_cpu_seconds``: this process (dbt's threads, the benchmark);
    - ``gc_seconds``: the JVM's garbage collectors, wall time;
    - ``jit_seconds``: HotSpot's compilers, summed elapsed time (inflated
      when the cores are busy);
    - ``jvm_cpu_by_thread``: the JVM's CPU split by thread role, from
      ``/proc/<pid>/task``: ``tasks`` (executor task threads: running the
      queries' stages), ``jit`` (the C1 and C2 compiler threads), ``gc``
      (collector threads) and ``driver`` (the rest: dbt's SQL calls through
      py4j, where Spark parses, analyses, optimises and plans each query,
      and code generation, plus threads that ended during the run);
    - ``codegen_compilations`` and ``codegen_seconds``: Spark's whole-stage
      code generation, classes compiled and an estimate of their compile
      time (count x the mean of Spark's decaying histogram).
    """

    def __init__(self, spark: SparkSession) -> None:
        self.jvm = spark._jvm
        self.pid = self.jvm.ProcessHandle.current().pid()
        self.first: dict[str, float] = {}
        self.first_threads: dict[int, tuple[str, float]] = {}

    def _threads(self) -> dict[int, tuple[str, float]]:
        """Each live JVM thread's role and CPU seconds so far."""
        threads = {}
        for tid in os.listdir(f"/proc/{self.pid}/task"):
            try:
                name, seconds = _proc_cpu(f"/proc/{self.pid}/task/{tid}/stat")
            except FileNotFoundError:  # the thread ended while we listed them
                continue
            threads[int(tid)] = (_thread_role(name), seconds)
        return threads

    def read(self) -> dict[str, float]:
        _, jvm_cpu = _proc_cpu(f"/proc/{self.pid}/stat")
        beans = self.jvm.java.lang.management.ManagementFactory
        collectors = beans.getGarbageCollectorMXBeans()
        codegen = self.jvm.org.apache.spark.metrics.source.CodegenMetrics.METRIC_COMPILATION_TIME()
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return {
            "jvm_cpu_seconds": jvm_cpu,
            "python_cpu_seconds": usage.ru_utime + usage.ru_stime,
            "gc_seconds": sum(collectors.get(i).getCollectionTime() for i in range(collectors.size())) / 1000,
            "jit_seconds": beans.getCompilationMXBean().getTotalCompilationTime() / 1000,
            "codegen_compilations": codegen.getCount(),
            "codegen_seconds": codegen.getCount() * codegen.getSnapshot().getMean() / 1000,
        }

    def start(self) -> None:
        self.first = self.read()
        self.first_threads = self._threads()

    def collect(self) -> dict[str, Any]:
        """What each counter grew by since :meth:`start`."""
        now = self.read()
        grown: dict[str, Any] = {key: now[key] - self.first.get(key, 0) for key in now}
        by_role = dict.fromkeys(THREAD_ROLES, 0.0)
        for tid, (role, seconds) in self._threads().items():
            if role != "driver":
                by_role[role] += seconds - self.first_threads.get(tid, (role, 0.0))[1]
        by_role["driver"] = grown["jvm_cpu_seconds"] - sum(by_role.values())
        grown["jvm_cpu_by_thread"] = {role: round(seconds, 1) for role, seconds in by_role.items()}
        return {key: round(value, 3) if isinstance(value, float) else value for key, value in grown.items()}


THREAD_ROLES = ("tasks", "jit", "gc", "driver")


def _proc_cpu(stat_path: str) -> tuple[str, float]:
    """A process's or thread's name and CPU seconds (user + system) from its ``/proc`` stat file."""
    with open(stat_path) as stat:
        text = stat.read()
    # Fields after the command name; utime and stime are the 14th and 15th.
    fields = text.rsplit(")", 1)[1].split()
    return text[text.index("(") + 1 : text.rindex(")")], (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _thread_role(name: str) -> str:
    """The role of a JVM thread from its (15-character) Linux name."""
    if name.startswith("Executor task"):
        return "tasks"
    if "CompilerThre" in name:
        return "jit"
    if name.startswith(("GC Thread", "G1 ")):
        return "gc"
    return "driver"


# A size metric's text (Delta's "size of files read"): its total, rounded by
# Spark to a tenth of its unit, e.g. "14.4 KiB", or "total (min, med, max)\n14.4 KiB (...)".
_SIZE = re.compile(r"([0-9.]+) (B|KiB|MiB|GiB|TiB)\b")
_UNITS = {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40}


def _metric_number(text: str) -> int | None:
    """A metric's value: a count, or a size in bytes (approximate: see _SIZE)."""
    cleaned = text.replace(",", "").strip()
    if cleaned.isdigit():
        return int(cleaned)
    size = _SIZE.search(cleaned)
    return round(float(size.group(1)) * _UNITS[size.group(2)]) if size else None
