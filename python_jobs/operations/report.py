"""A report people look at: one self-contained HTML page about lateness,
completeness, restatements and quarantine.

    python -m python_jobs.operations.report --out target/report/index.html [--schema latecomer] [--target local]
    (make report)

The page has a title, the time its data is as of, and five sections, each a
paragraph saying what the chart shows, the chart (matplotlib, inline SVG in a
``<figure id="chart-...">``) and a ``<table id="table-...">`` holding the
figures plotted. Nothing is loaded from the network: styles and charts are
inline, so the file can be mailed or archived and opened anywhere.

1. ``lateness-cdf``: the share of each source's events that arrived within
   x hours of their event time (parsed rows of ``silver_event_arrivals``), one
   line per source, at the thresholds of ``LATENESS_THRESHOLDS_SECONDS``.
2. ``completeness-backtest``: per source and metric, the completeness the
   estimate gave k hours after a day ended against the completeness it really
   had then (``gold_completeness_backtest``), and the estimate's mean absolute
   relative error.
3. ``restatements``: each published ``gold_daily_revenue`` row that a later run
   changed (``gold_change_manifest``, change ``restated``): when, which
   partition, by how much net revenue and why.
4. ``live-vs-final``: per event date, the net revenue first published (the
   first manifest row of each source's row, summed) against the current one.
5. ``quarantine``: rows held out of silver, by source, reason and status.

A dataset with no rows yet renders as "no data yet" in place of its chart.

The report is made in parts, each a module of its own:
:mod:`~python_jobs.operations.report_data` (:class:`ReportData`, the datasets'
shapes), :mod:`~python_jobs.operations.report_queries` (:func:`load_datasets`:
the datasets read from the built tables with Spark SQL, aggregated in Spark so
only small results reach the driver),
:mod:`~python_jobs.operations.report_charts` and
:mod:`~python_jobs.operations.report_drawing` (each section's chart and table)
and :mod:`~python_jobs.operations.report_page` (:func:`render_report`: the HTML
string, no Spark needed). This module is the command line.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from python_jobs.operations.report_page import build_charts, render_charts
from python_jobs.operations.report_queries import load_datasets

if TYPE_CHECKING:  # pragma: no cover - typing only
    from pyspark.sql import SparkSession

# Session targets of profiles/profiles.yml the report can read from:
# (table format, or the variable naming it; Spark master variable; default schema).
SESSION_TARGETS: dict[str, tuple[str, str | None, str | None]] = {
    "local": ("iceberg", None, None),
    "delta": ("delta", None, "latecomer_delta"),
    "cluster": ("env:LATECOMER_TABLE_FORMAT", "LATECOMER_SPARK_MASTER", None),
}


# --------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------


def session_for(target: str) -> SparkSession:
    """The Spark session of a session target of profiles/profiles.yml."""
    from python_jobs.core.spark_config import SparkConfigError, get_spark

    if target not in SESSION_TARGETS:
        raise SparkConfigError(
            f"--target {target!r}: the report reads tables in an in-process Spark session; "
            f"use one of the session targets {', '.join(SESSION_TARGETS)}."
        )
    table_format, master_variable, _ = SESSION_TARGETS[target]
    if table_format.startswith("env:"):
        table_format = os.environ.get(table_format[4:], "iceberg")
    master = os.environ.get(master_variable) if master_variable else None
    if master_variable and not master:
        raise SparkConfigError(f"--target {target} needs {master_variable} (a Spark master URL).")
    return get_spark(table_format, master)


def default_schema(target: str) -> str:
    default = SESSION_TARGETS.get(target, ("", None, None))[2]
    return os.environ.get("LATECOMER_SCHEMA") or default or "latecomer"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m python_jobs.operations.report", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--out", type=Path, default=Path("target/report/index.html"), help="HTML file to write")
    parser.add_argument("--schema", help="dbt target schema (default: LATECOMER_SCHEMA or the target's, latecomer)")
    parser.add_argument(
        "--target",
        default=os.environ.get("LATECOMER_TARGET", "local"),
        help=f"dbt target whose tables to read: {', '.join(SESSION_TARGETS)} (default: LATECOMER_TARGET or local)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from python_jobs.core.spark_config import SparkConfigError

    try:
        spark = session_for(args.target)
    except SparkConfigError as exc:
        print(f"report: error: {exc}", file=sys.stderr)
        return 2
    data = load_datasets(spark, args.schema or default_schema(args.target))
    charts = build_charts(data)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(render_charts(charts, data.as_of, datetime.now(UTC)), encoding="utf-8")
    print(f"report: wrote {args.out.resolve()}")
    for chart in charts:
        print(f"  {chart.key}: {chart.summary}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
