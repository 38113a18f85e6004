"""Both table formats in one run, side by side (``--format both``).

A Spark JVM serves one catalog configuration, so each format runs in a child
process of its own (``python -m tooling.bench <the same arguments> --format
<format>``: its own session, state dir, schema and report), one after the
other. Then their reports are put side by side: per variant, the wall time and
Spark time on each format, and whether the gold and silver fingerprints
(format-neutral SQL, tooling.bench.checks) of each format equal the other's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tooling.bench.config import FORMAT_LABELS, FORMATS
from tooling.bench.report import agree, fmt_num, fmt_times, late_batch_dates, ratio, write_report

# What the table shows of each format's summary of a variant.
MEASURES = ("build_seconds", "build_seconds_min", "build_seconds_max", "spark_seconds", "cpu_seconds")


def run_formats(argv: Sequence[str], mode: str, results_dir: Path, formats: Sequence[str] = FORMATS) -> int:
    """Run the benchmark once per format, each in a child process, then write
    and print the side-by-side report. Returns the exit status."""
    started = datetime.now(UTC)
    reports: dict[str, dict[str, Any]] = {}
    failed = []
    for table_format in formats:
        command = ["-m", "tooling.bench", *argv, "--format", table_format]
        print(f"bench: {FORMAT_LABELS[table_format]}: python {' '.join(command)}", flush=True)
        # The last --format given wins; the cluster target reads LATECOMER_TABLE_FORMAT.
        done = subprocess.run(
            [sys.executable, *command],
            env={**os.environ, "LATECOMER_TABLE_FORMAT": table_format},
        )
        report = _latest_report(results_dir, mode, table_format, started)
        if done.returncode != 0 or report is None:
            failed.append(table_format)
            continue
        reports[table_format] = report
    if failed:
        print(f"bench: error: the run on {', '.join(failed)} failed; no side-by-side report", file=sys.stderr)
        return 1
    combined = side_by_side(reports, mode, started)
    paths = write_side_by_side(combined, results_dir)
    print()
    print(render_side_by_side(combined))
    for path in paths:
        print(f"bench: wrote {path}")
    return 0


def _latest_report(results_dir: Path, mode: str, table_format: str, since: datetime) -> dict[str, Any] | None:
    """The complete report the child for ``table_format`` wrote, if it started after ``since``."""
    path = results_dir / f"latest-{mode}-{table_format}.json"
    if not path.exists():
        return None
    report = json.loads(path.read_text())
    if datetime.fromisoformat(report["started_at"]) < since:
        return None  # an earlier run's
    report["path"] = str(path.with_name(f"bench-{mode}-{table_format}-{_stamp(report)}.json"))
    return report


def _stamp(report: Mapping[str, Any]) -> str:
    return datetime.fromisoformat(report["started_at"]).strftime("%Y%m%dT%H%M%SZ")


def compare(reports: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Per variant measured on every format: each format's medians, and
    whether the gold (and silver) fingerprints of all its runs on all formats
    are one; then whether that holds for every variant."""
    formats = list(reports)
    variants = [
        v
        for v in dict.fromkeys(v for r in reports.values() for v in r["config"]["variants"])
        if all(v in r["summary"] for r in reports.values())
    ]
    out: dict[str, Any] = {"formats": formats, "variants": {}}
    for variant in variants:
        runs = {f: [run for run in reports[f]["runs"] if run["variant"] == variant] for f in formats}
        entry: dict[str, Any] = {f: {key: reports[f]["summary"][variant].get(key) for key in MEASURES} for f in formats}
        for f in formats:
            entry[f]["gold_fingerprint"] = runs[f][0]["gold_fingerprint"] if runs[f] else None
            entry[f]["silver_fingerprint"] = runs[f][0]["silver_fingerprint"] if runs[f] else None
        entry["same_gold"] = agree([run["gold_fingerprint"] for f in formats for run in runs[f]])
        entry["same_silver"] = agree([run["silver_fingerprint"] for f in formats for run in runs[f]])
        first, *others = formats
        entry["build_ratio"] = {
            f"{f}/{first}": ratio(entry[f]["build_seconds"], entry[first]["build_seconds"]) for f in others
        }
        out["variants"][variant] = entry
    checked = out["variants"].values()
    out["same_gold_across_formats"] = bool(checked) and all(v["same_gold"] for v in checked)
    out["same_silver_across_formats"] = bool(checked) and all(v["same_silver"] for v in checked)
    return out


def side_by_side(reports: Mapping[str, dict[str, Any]], mode: str, started: datetime) -> dict[str, Any]:
    """The combined report: the comparison, and each format's full report."""
    comparison = compare(reports)
    return {
        "benchmark": "latecomer restatement, table formats side by side",
        "mode": mode,
        "complete": True,
        "started_at": started.isoformat(),
        "finished_at": datetime.now(UTC).isoformat(),
        "formats": list(reports),
        "same_gold_across_formats": comparison["same_gold_across_formats"],
        "same_silver_across_formats": comparison["same_silver_across_formats"],
        "comparison": comparison,
        "reports": dict(reports),
    }


def render_side_by_side(combined: Mapping[str, Any]) -> str:
    comparison = combined["comparison"]
    formats = comparison["formats"]
    labels = [FORMAT_LABELS.get(f, f) for f in formats]
    first = combined["reports"][formats[0]]
    scale = first["data"]["scale"]
    machine = first["machine"]
    lines = [
        f"# latecomer restatement benchmark ({combined['mode']}): {' and '.join(labels)} side by side",
        "",
        f"- history: {scale['days']} event days x {scale['events_per_day']:,} events/day; late batch touching "
        f"{late_batch_dates(first['late_batch'])}",
        f"- machine: {machine['cpu_count']} cores, {machine['memory_gib']} GiB, Spark {machine['spark']}; "
        f"each format in a process of its own, one after the other; medians of {first['config']['repeat']} "
        "run(s) per variant",
        *[
            f"- {label}: dbt target `{combined['reports'][f]['config']['target']}`, schema "
            f"`{combined['reports'][f]['config']['schema']}`, report {combined['reports'][f].get('path', '-')}"
            for f, label in zip(formats, labels, strict=True)
        ],
        "",
        "| variant | "
        + " | ".join(f"build, s {label}" for label in labels)
        + " | "
        + " | ".join(f"Spark, s {label}" for label in labels)
        + " | "
        + " | ".join(f"build {label} / {labels[0]}" for label in labels[1:])
        + " | same gold | same silver |",
        "|---|" + "---:|" * (3 * len(formats) - 1) + ":---:|:---:|",
    ]
    for variant, entry in comparison["variants"].items():
        lines.append(
            f"| {variant} | "
            + " | ".join(fmt_num(entry[f]["build_seconds"], 1) for f in formats)
            + " | "
            + " | ".join(fmt_num(entry[f]["spark_seconds"], 1) for f in formats)
            + " | "
            + " | ".join(fmt_times(value) for value in entry["build_ratio"].values())
            + f" | {_yes(entry['same_gold'])} | {_yes(entry['same_silver'])} |"
        )
    lines += [
        "",
        "Build: wall time of `dbt build` (floor: of the PySpark job), median. Spark: the sum of the Spark SQL "
        "executions' durations during it. Same gold / silver: the fingerprints of gold_daily_revenue / "
        "silver_events of every run of the variant on every format are one.",
        "",
        f"Gold fingerprint the same on {' and '.join(labels)} in every variant: "
        f"{_json_bool(combined['same_gold_across_formats'])}; silver_events too: "
        f"{_json_bool(combined['same_silver_across_formats'])}.",
        *[
            f"{label}: the dbt builds of the late batch agree on gold "
            f"{_json_bool(summary.get('all_variants_same_gold'))}, on silver "
            f"{_json_bool(summary.get('all_variants_same_silver'))}."
            for label, summary in zip(labels, (combined["reports"][f]["summary"] for f in formats), strict=True)
        ],
    ]
    return "\n".join(lines) + "\n"


def _yes(value: bool | None) -> str:
    return {True: "yes", False: "**no**", None: "-"}[value]


def _json_bool(value: bool | None) -> str:
    return json.dumps(value)


def write_side_by_side(combined: dict[str, Any], results_dir: Path) -> tuple[Path, Path]:
    """bench-<mode>-<time>.json / .md, and latest-<mode>.* (the runs of one format are named after it)."""
    render: Callable[[dict[str, Any]], str] = render_side_by_side
    return write_report(combined, results_dir, f"bench-{combined['mode']}", f"latest-{combined['mode']}", render)
