"""The report of a run: medians per variant, rendered as Markdown and JSON."""

from __future__ import annotations

import json
import shutil
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from tooling.bench.config import (
    AS_USERS_MODES,
    FLOOR,
    FORMAT_LABELS,
    GOLD_MODEL,
    LOOKBACK,
    LOOKBACK_VAR,
    MICROBATCH,
    NOTHING_NEW,
    PATCHED,
    PEERS,
    SAME_RESULT,
    SQLMESH,
)
from tooling.bench.metrics import READ_TABLES, THREAD_ROLES


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
    silver_fingerprint: dict[str, Any] = field(default_factory=dict)
    # Spark time of every SQL execution of the run (submission to completion).
    spark_seconds: float = 0.0
    # Table versions (Iceberg snapshots, Delta commits) committed, per table that got any.
    versions_written: dict[str, int] = field(default_factory=dict)
    # What each version written to a gold table says it did (Iceberg snapshot summaries, Delta operation metrics).
    snapshots: dict[str, list[dict]] = field(default_factory=dict)
    queries: dict[str, Any] = field(default_factory=dict)
    lookback_window: list[str] | None = None
    failed_nodes: list[str] = field(default_factory=list)
    floor: dict[str, Any] | None = None  # what the floor job did (tooling.bench.floor.FloorRun)
    # CPU of the run (tooling.bench.metrics.ProcessCounters).
    cpu: dict[str, float] = field(default_factory=dict)
    # Gold's measures per ``event_date|source_system``
    # (tooling.bench.microbatch.gold_measures), and where they differ from the
    # plain-Python reference's (tooling.bench.microbatch.wrong_partitions).
    gold_measures: dict[str, list] | None = None
    wrong: dict[str, Any] | None = None
    # A peer's table and the batches it ran (tooling.bench.microbatch).
    peer: dict[str, Any] | None = None

    def as_json(self) -> dict[str, Any]:
        return self.__dict__


def _median(values: Iterable[float | int | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


# What every variant's gold is checked against.
REFERENCE = "tooling/reference.py"
# Node types that build tables: dbt models and the floor's steps.
BUILDING = ("model", FLOOR)
# Ratios reported: the incremental build against each of these.
RATIOS = ("full_refresh", LOOKBACK, FLOOR)


def ratio(numerator: float | None, denominator: float | None) -> float | None:
    return round(numerator / denominator, 3) if numerator is not None and denominator else None


def agree(prints: Iterable[dict[str, Any]]) -> bool | None:
    distinct = {json.dumps(p, sort_keys=True) for p in prints}
    return len(distinct) == 1 if distinct else None


def summarize(measurements: Sequence[Measurement], variants: Sequence[str]) -> dict[str, Any]:
    summary: dict[str, Any] = {}
    for variant in variants:
        runs = [m for m in measurements if m.variant == variant]
        if not runs:
            continue
        models = sorted({n for m in runs for n, v in m.nodes.items() if v["type"] in BUILDING})
        tables = sorted({t for m in runs for t in m.tables})
        summary[variant] = {
            "n": len(runs),
            "build_seconds": _median(m.seconds for m in runs),
            "build_seconds_min": min(m.seconds for m in runs),
            "build_seconds_max": max(m.seconds for m in runs),
            "spark_seconds": _median(m.spark_seconds for m in runs),
            "cpu_seconds": _median(
                m.cpu["jvm_cpu_seconds"] + m.cpu["python_cpu_seconds"] if m.cpu else None for m in runs
            ),
            "cpu": {
                key: _median(m.cpu.get(key) for m in runs)
                for key in sorted({k for m in runs for k, v in m.cpu.items() if not isinstance(v, dict)})
            },
            "jvm_cpu_by_thread": {
                role: _median(m.cpu.get("jvm_cpu_by_thread", {}).get(role) for m in runs) for role in THREAD_ROLES
            },
            "versions_written": _median(sum(m.versions_written.values()) for m in runs),
            "versions_written_by_table": {
                name: _median(m.versions_written.get(name, 0) for m in runs)
                for name in sorted({n for m in runs for n in m.versions_written})
            },
            "model_seconds": _median(
                sum(v["seconds"] for v in m.nodes.values() if v["type"] in BUILDING) for m in runs
            ),
            "test_seconds": _median(
                sum(v["seconds"] for v in m.nodes.values() if v["type"] not in BUILDING) for m in runs
            ),
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
                        "dates_written",
                        "dates_total",
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
            "gold_fingerprints_agree": agree(m.gold_fingerprint for m in runs),
            # Against the plain-Python reference: the most any run left wrong.
            "wrong_dates": max((m.wrong["dates"] for m in runs if m.wrong), default=None),
            "wrong_rows": max((m.wrong["rows"] for m in runs if m.wrong), default=None),
        }
    # The dbt builds of the late batch must agree; the floor is compared with
    # the incremental build, and nothing_new has no late batch.
    same = [m for m in measurements if m.variant in SAME_RESULT]
    summary["all_variants_same_gold"] = agree(m.gold_fingerprint for m in same)
    summary["all_variants_same_silver"] = agree(m.silver_fingerprint for m in same)
    floor = [m for m in measurements if m.variant == FLOOR]
    incremental = [m for m in measurements if m.variant == "incremental"]
    if floor and incremental:
        summary["floor_same_as_incremental"] = {
            key: agree([getattr(m, key) for m in floor + incremental])
            for key in ("silver_fingerprint", "gold_fingerprint")
        }
    summary |= check_peers(measurements)
    if "incremental" in summary:
        summary["ratios"] = {
            f"incremental/{other}": {
                key: ratio(summary["incremental"][key], summary[other][key])
                for key in ("build_seconds", "spark_seconds", "cpu_seconds")
            }
            for other in RATIOS
            if other in summary
        }
    return summary


def check_peers(measurements: Sequence[Measurement]) -> dict[str, Any]:
    """Per peer, the wrong partitions of its last run against the plain-Python
    reference (tooling.reference), by cause, and whether every run of it came
    out the same."""
    out: dict[str, Any] = {}
    for peer in PEERS:
        runs = [m for m in measurements if m.variant == peer and m.peer and m.wrong is not None]
        if not runs:
            continue
        out[f"{peer}_wrong"] = {
            "reference": REFERENCE,
            "runs_agree": agree(m.gold_fingerprint for m in runs),
            "batches": next((n["batches"] for n in runs[-1].nodes.values() if n.get("batches") is not None), None),
            **(runs[-1].wrong or {}),
        }
    return out


def _mb(value: float | None) -> str:
    return "-" if value is None else f"{value / 1e6:,.1f}"


def fmt_num(value: float | None, digits: int = 0) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


# How each format's tables are put back between runs, and what one of its table versions is.
RESTORED_BY = {
    "iceberg": "register_table of their post-initial-load metadata",
    "delta": "RESTORE TABLE to their post-initial-load version",
}
VERSION_NAMES = {"iceberg": "Iceberg snapshots", "delta": "Delta commits"}


def render_markdown(report: dict[str, Any]) -> str:
    table_format = report["config"].get("table_format", "iceberg")
    data = report["data"]
    scale = data["scale"]
    machine = report["machine"]
    init = report["initial_load"]
    summary = report["summary"]
    variants = [v for v in report["config"]["variants"] if v in summary]
    lookback = report["config"]["lookback_days"]
    labels = {
        "incremental": "incremental",
        LOOKBACK: f"lookback {lookback}d",
        "full_refresh": "full refresh",
        FLOOR: "floor",
        NOTHING_NEW: "nothing new",
        MICROBATCH: f"dbt microbatch {lookback}d",
        SQLMESH: f"SQLMesh {lookback}d",
        PATCHED: "incremental + "
        + ", ".join(Path(p).stem for p in report["git"].get("candidate_patches", {}) or ["patch"]),
    }
    runs = report.get("runs", [])
    expected = report["config"]["repeat"] * len(report["config"]["variants"])
    lines = [
        f"# latecomer restatement benchmark ({report['mode']}, {FORMAT_LABELS[table_format]})",
        "",
        *([] if report.get("complete") else [f"**Incomplete: {len(runs)} of {expected} runs so far.**", ""]),
        f"- history: {scale['days']} event days x {scale['events_per_day']:,} events/day "
        f"= {init['ingest']['rows']:,} bronze rows in {data['history_files']} files; "
        f"late batch: {report['late_batch']['ingest']['rows']:,} rows touching "
        f"{late_batch_dates(report['late_batch'])}",
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
        f"{RESTORED_BY[table_format]}",
        *[
            f"- {labels[LOOKBACK]}: the project built + {Path(p).name} ({h}), var {LOOKBACK_VAR} = {lookback}"
            for p, h in report["git"].get("lookback_patch", {}).items()
        ],
        f"- dbt build with data tests: {report['config']['with_tests']}; selection: "
        f"{report['config']['select'] or 'everything'}",
        "",
        "## Initial load (one run)",
        "",
        "| step | seconds | events/s |",
        "|---|---:|---:|",
        f"| generate ({data['history_files']} files) | {fmt_num(data.get('generate_seconds'), 1)} | |",
        f"| ingest ({init['ingest']['calls']} calls{', reused' if init.get('ingest_reused') else ''}) | "
        f"{init['ingest']['seconds']:,.1f} | {fmt_num(init['events_per_second']['ingest'])} |",
        f"| dbt build (all) | {init['dbt_build_seconds']:,.1f} | {fmt_num(init['events_per_second']['dbt_build'])} |",
    ]
    for model in ("silver_event_arrivals", "silver_events"):
        seconds = init["nodes"].get(model, {}).get("seconds")
        lines.append(f"| {model} | {fmt_num(seconds, 1)} | {fmt_num(init['events_per_second'].get(model))} |")
    lines += _stream_lines(report.get("stream_ingest"), init["events_per_second"]["ingest"])
    lines += [
        "",
        f"## The late batch, {len(variants)} ways (medians)",
        "",
        "| | " + " | ".join(labels[v] for v in variants) + " |",
        "|---|" + "---:|" * len(variants),
    ]

    def row(label: str, fn: Callable[[dict], str]) -> None:
        lines.append(f"| {label} | " + " | ".join(fn(summary[v]) for v in variants) + " |")

    row("build, s", lambda s: fmt_num(s["build_seconds"], 1))
    row(
        "gold event dates wrong (rows), against tooling/reference.py",
        lambda s: f"{fmt_num(s.get('wrong_dates'))} ({fmt_num(s.get('wrong_rows'))})",
    )
    row("build min - max, s", lambda s: f"{fmt_num(s['build_seconds_min'], 1)} - {fmt_num(s['build_seconds_max'], 1)}")
    row("Spark time, s", lambda s: fmt_num(s["spark_seconds"], 1))
    row("CPU, s (JVM + Python)", lambda s: fmt_num(s.get("cpu_seconds"), 1))
    row(
        "JVM CPU by thread: tasks / JIT / GC / driver, s",
        lambda s: " / ".join(fmt_num(s.get("jvm_cpu_by_thread", {}).get(k), 1) for k in THREAD_ROLES),
    )
    jvm_work = ("gc_seconds", "jit_seconds", "codegen_seconds")
    row(
        "JVM: GC pauses / JIT elapsed / Spark codegen, s",
        lambda s: " / ".join(fmt_num(s.get("cpu", {}).get(k), 1) for k in jvm_work),
    )
    row("table versions written", lambda s: fmt_num(s["versions_written"]))
    row("models (floor: steps), s", lambda s: fmt_num(s["model_seconds"], 1))
    row("tests and snapshot, s", lambda s: fmt_num(s["test_seconds"], 1))
    gold_tables = sorted({t for v in variants for t, st in summary[v]["tables"].items() if t.startswith("gold")})
    row(
        f"{GOLD_MODEL}: event dates restated / total",
        lambda s: (
            f"{fmt_num(s['tables'].get(GOLD_MODEL, {}).get('dates_written'))} / "
            f"{fmt_num(s['tables'].get(GOLD_MODEL, {}).get('dates_total'))}"
        ),
    )
    for table in gold_tables:
        row(
            f"{table}: partitions written / total",
            lambda s, t=table: (
                f"{fmt_num(s['tables'].get(t, {}).get('partitions_written'))} / "
                f"{fmt_num(s['tables'].get(t, {}).get('partitions_total'))}"
            ),
        )
        row(
            f"{table}: MB written",
            lambda s, t=table: _mb(s["tables"].get(t, {}).get("bytes_written")),
        )
    row(
        "silver_events: partitions written",
        lambda s: fmt_num(s["tables"].get("silver_events", {}).get("partitions_written")),
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
            lambda s, t=table: f"{fmt_num(s['reads'][t]['rows'])} ({fmt_num(s['reads'][t]['scans'])})",
        )
    row("bronze MB read", lambda s: _mb(s["bronze_bytes_read"]))
    same = [labels[v] for v in variants if v in SAME_RESULT]
    floor_check = summary.get("floor_same_as_incremental")
    lines += [
        "",
        "Build: wall time of `dbt build` (floor: of the PySpark job). Spark time: the sum of the Spark SQL "
        f"executions' durations during it. Table versions: {VERSION_NAMES[table_format]} committed.",
        "",
        f"Gold fingerprint identical across {', '.join(same)}: {summary.get('all_variants_same_gold')}; "
        f"silver_events too: {summary.get('all_variants_same_silver')}.",
        *(
            [
                f"Floor against incremental: same silver_events {floor_check['silver_fingerprint']}, "
                f"same gold_daily_revenue measures {floor_check['gold_fingerprint']} (the floor keeps no versions)."
            ]
            if floor_check
            else []
        ),
        *(
            [f"Nothing new: table versions written {summary[NOTHING_NEW]['versions_written_by_table'] or 'none'}."]
            if NOTHING_NEW in summary
            else []
        ),
        *(
            [
                "Nodes skipped (models off the late-arrival path; a failing node fails the benchmark): "
                f"{sorted({t for r in runs for t in r['failed_nodes']})}"
            ]
            if any(r["failed_nodes"] for r in runs)
            else []
        ),
        *_ratio_lines(summary.get("ratios", {}), labels),
        *_peer_lines(summary, labels, report.get("late_batch", {})),
        *_as_users_lines(summary, report.get("as_users")),
        "",
        "## Rows read per model (medians)",
        "",
        "| table: model | " + " | ".join(labels[v] for v in variants) + " |",
        "|---|" + "---:|" * len(variants),
        *[
            f"| {table}: {node} | "
            + " | ".join(fmt_num(summary[v]["reads"][table]["rows_by_node"].get(node)) for v in variants)
            + " |"
            for table in READ_TABLES
            for node in sorted({n for v in variants for n in summary[v]["reads"][table]["rows_by_node"]})
        ],
        "",
        "## Model time per variant (medians)",
        "",
        "Each cell: dbt's execution time of the model (floor: wall time of the step), s / Spark time of its",
        "queries, s (submission to completion; analysis and planning are outside it) / number of Spark SQL",
        "queries it ran.",
        "",
        "| model | " + " | ".join(labels[v] for v in variants) + " |",
        "|---|" + "---:|" * len(variants),
    ]
    models = sorted({m for v in variants for m in summary[v]["models"]})
    models.sort(key=lambda m: -(summary[variants[0]]["models"].get(m) or 0))

    def cell(variant: str, model: str) -> str:
        queries = summary[variant].get("queries", {}).get(model) or {}
        return (
            f"{fmt_num(summary[variant]['models'].get(model), 1)} / {fmt_num(queries.get('spark_seconds'), 1)} / "
            f"{fmt_num(queries.get('queries'))}"
        )

    for model in models:
        lines.append(f"| {model} | " + " | ".join(cell(v, model) for v in variants) + " |")
    return "\n".join(lines) + "\n"


def _as_users_lines(summary: dict[str, Any], as_users: dict[str, Any] | None) -> list[str]:
    """The late batch and nothing new in this process beside each `dbt build`
    a new process, cold or through a Thrift server (tooling.bench.as_users)."""
    measured = (as_users or {}).get("summary", {})
    modes = [mode for mode in AS_USERS_MODES if measured.get(mode)]
    if not modes:
        return []
    headers = {
        "cold": "`dbt build` in a new process (cold JVM), s",
        "server": "`dbt build` through a Thrift server (warm JVM; Python models left out), s",
        "driver": "`dbt build` attached to a warm driver (warm JVM), s",
    }

    def cell(times: dict[str, Any] | None) -> str:
        if not times:
            return "-"
        low, high = fmt_num(times["build_seconds_min"], 1), fmt_num(times["build_seconds_max"], 1)
        return f"{fmt_num(times['build_seconds'], 1)} ({low} - {high})"

    kinds = (("incremental", "late batch"), (NOTHING_NEW, "nothing new"))
    same = all(times["same_as_in_process"] for mode in modes for times in measured[mode].values())
    return [
        "",
        "## As users run it (medians, min - max)",
        "",
        "In this process the JVM is warm after the initial build. A scheduled `dbt build` is a new process: "
        "Python, dbt and a JVM start, and the JVM compiles the build's code as it goes. Through a running "
        "Thrift server, or attached to a warm driver, dbt starts anew but the JVM stays warm (one untimed "
        "build of each kind first). Each build is timed from its start to its exit, from the same starting "
        "tables; gold and silver came out "
        + ("the same as in this process." if same else "**different from this process's**."),
        "",
        "| | in this process (warm JVM), s | " + " | ".join(headers[mode] for mode in modes) + " |",
        "|---|---:|" + "---:|" * len(modes),
        *[
            f"| {label} | {cell(summary.get(kind))} | "
            + " | ".join(cell(measured[mode].get(kind)) for mode in modes)
            + " |"
            for kind, label in kinds
        ],
    ]


def _stream_lines(stream: dict[str, Any] | None, file_rate: float | None) -> list[str]:
    """Kafka to bronze (tooling.bench.stream_ingest) beside the file ingest."""
    if not stream:
        return []
    flow, wait = stream["throughput"], stream["latency"]
    latency = wait["latency_s"]
    return [
        "",
        f"## Kafka to bronze (one run, a topic of {stream['partitions']} partitions)",
        "",
        "| path | events | landing, s | events/s |",
        "|---|---:|---:|---:|",
        f"| file ingest (the initial load above) | | | {fmt_num(file_rate)} |",
        f"| stream, available-now ({flow['batches']} micro-batches; the command {fmt_num(flow['command_seconds'], 1)} s"
        f" with its JVM's start) | {fmt_num(flow['records'])} | {fmt_num(flow['batch_seconds'], 1)} | "
        f"{fmt_num(flow['events_per_second'])} |",
        "",
        f"Latency from produce to bronze, a stream on a 1 s trigger while {fmt_num(wait['rate'])} events a second "
        f"arrived for {fmt_num(wait['seconds'])} s ({fmt_num(wait['sent'])} events, {wait['batches']} micro-batches): "
        f"the oldest record of a batch waited {fmt_num(latency['oldest_median'], 2)} s (median; at most "
        f"{fmt_num(latency['oldest_max'], 2)} s), its newest {fmt_num(latency['newest_median'], 2)} s.",
    ]


def _ratio_lines(ratios: dict[str, dict[str, float | None]], labels: dict[str, str]) -> list[str]:
    if not ratios:
        return []
    lines = ["", "| incremental as a multiple of | build | Spark time | CPU |", "|---|---:|---:|---:|"]
    for pair, values in ratios.items():
        other = pair.split("/")[1]
        build, spark = fmt_times(values["build_seconds"]), fmt_times(values["spark_seconds"])
        lines.append(f"| {labels.get(other, other)} | {build} | {spark} | {fmt_times(values.get('cpu_seconds'))} |")
    return lines


def _peer_lines(summary: dict[str, Any], labels: dict[str, str], late_batch: dict[str, Any]) -> list[str]:
    """The peers' time beside latecomer's gold model, and their wrong partitions."""
    peers = [p for p in PEERS if p in summary]
    if not peers:
        return []
    gold = summary.get("incremental", {}).get("models", {}).get(GOLD_MODEL)
    lines = [
        "",
        "## The peers",
        "",
        "Each builds gold daily revenue alone, from silver_events with the late batch applied (the silver "
        f"tables of the first incremental run); latecomer's incremental build spent {fmt_num(gold, 1)} s "
        f"on {GOLD_MODEL}. Wrong partitions: the event dates where its gold differs from the gold that the "
        f"plain-Python reference ({REFERENCE}) computes from the same files, by cause.",
        "",
        "| peer | build, s | Spark time, s | batches | wrong dates / total | wrong rows | beyond its lookback "
        "| emptied batches | other | same gold every run |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|:---:|",
    ]
    for peer in peers:
        s = summary[peer]
        wrong = summary.get(f"{peer}_wrong") or {}
        batches = wrong.get("batches")
        lines.append(
            f"| {labels.get(peer, peer)} | {fmt_num(s['build_seconds'], 1)} | {fmt_num(s['spark_seconds'], 1)} | "
            f"{fmt_num(batches)} | {fmt_num(wrong.get('dates'))} / {fmt_num(wrong.get('dates_total'))} | "
            f"{fmt_num(wrong.get('rows'))} | {fmt_num(wrong.get('beyond_lookback'))} | "
            f"{fmt_num(wrong.get('emptied'))} | {fmt_num(wrong.get('other'))} | "
            f"{ {True: 'yes', False: 'no', None: '-'}[wrong.get('runs_agree')] } |"
        )
        for cause in ("beyond_lookback", "emptied", "other"):
            days = wrong.get("date_values", {}).get(cause)
            if days:
                lines.append(f"\n{labels.get(peer, peer)}, {cause.replace('_', ' ')}: {', '.join(days)}")
    if late_batch.get("dates"):
        lines.append(f"\nThe late batch's event dates: {', '.join(late_batch['dates'])}.")
    return lines


def fmt_times(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def write_results(report: dict[str, Any], results_dir: Path) -> tuple[Path, Path]:
    """Write the report as JSON and Markdown, named after its mode, table
    format and start time (rewritten as a run progresses); a complete report
    is also copied to latest-<mode>-<format>.json / .md."""
    name = f"{report['mode']}-{report['config']['table_format']}"
    return write_report(report, results_dir, f"bench-{name}", f"latest-{name}", render_markdown)


def write_report(
    data: dict[str, Any], results_dir: Path, prefix: str, latest: str, render: Callable[[dict[str, Any]], str]
) -> tuple[Path, Path]:
    """``data`` as ``<prefix>-<start time>.json`` and, rendered, ``.md``;
    copied to ``<latest>.json`` / ``.md`` once complete."""
    results_dir.mkdir(parents=True, exist_ok=True)
    stamp = datetime.fromisoformat(data["started_at"]).strftime("%Y%m%dT%H%M%SZ")
    base = results_dir / f"{prefix}-{stamp}"
    json_path, md_path = base.with_suffix(".json"), base.with_suffix(".md")
    json_path.write_text(json.dumps(data, indent=1, default=str))
    md_path.write_text(render(data))
    if data.get("complete"):
        shutil.copyfile(json_path, results_dir / f"{latest}.json")
        shutil.copyfile(md_path, results_dir / f"{latest}.md")
    return json_path, md_path


def late_batch_dates(late_batch: dict[str, Any]) -> str:
    """The event dates a late batch touches: its k late days, and the day it empties when there is one."""
    dates = late_batch["dates"]
    emptied = "" if len(dates) == late_batch["k"] else " and the day it empties"
    return f"{len(dates)} event dates, k={late_batch['k']} late days{emptied} ({', '.join(dates)})"
