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

The module has three parts: :func:`render_report` turns plain data
(:class:`ReportData`, lists of dicts whose shapes are documented there) into
the HTML string and needs no Spark; :func:`load_datasets` reads the five
datasets from the built tables with Spark SQL, aggregated in Spark so only
small results reach the driver; :func:`main` is the command line.
"""

from __future__ import annotations

import argparse
import html
import io
import os
import re
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

import matplotlib
from matplotlib.axes import Axes
from matplotlib.dates import AutoDateLocator, ConciseDateFormatter
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FixedFormatter, FixedLocator, PercentFormatter

if TYPE_CHECKING:  # pragma: no cover - typing only
    from pyspark.sql import SparkSession

Row = Mapping[str, Any]

HOUR = 3600
# Thresholds of the lateness CDF, in seconds; anything later is "beyond" the last.
LATENESS_THRESHOLDS_SECONDS: tuple[int, ...] = (
    0,
    5 * 60,
    15 * 60,
    30 * 60,
    1 * HOUR,
    2 * HOUR,
    4 * HOUR,
    8 * HOUR,
    12 * HOUR,
    24 * HOUR,
    48 * HOUR,
    72 * HOUR,
    168 * HOUR,
    336 * HOUR,
    720 * HOUR,
)
# Most recent restated rows shown on the timeline.
RESTATEMENT_LIMIT = 500
# Timeline points labelled with their event date when there are at most this many.
ANNOTATE_AT_MOST = 40
# Dates of the live-vs-final lines drawn with markers when there are at most this many.
MARKERS_AT_MOST = 90
NO_DATA = "no data yet"
QUARANTINE_STATUSES = ("quarantined", "released", "rejected")
REASON_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "h", "<", ">")
STATUS_COLORS = {"quarantined": "#d62728", "released": "#2ca02c", "rejected": "#7f7f7f"}
REVENUE_MODEL = "gold_daily_revenue"

# Session targets of profiles/profiles.yml the report can read from:
# (table format, or the variable naming it; Spark master variable; default schema).
SESSION_TARGETS: dict[str, tuple[str, str | None, str | None]] = {
    "local": ("iceberg", None, None),
    "delta": ("delta", None, "latecomer_delta"),
    "cluster": ("env:LATECOMER_TABLE_FORMAT", "LATECOMER_SPARK_MASTER", None),
}


# --------------------------------------------------------------------------
# The data the page is made of
# --------------------------------------------------------------------------


@dataclass
class ReportData:
    """The five datasets, as lists of dicts (any mapping works; extra keys are ignored).

    ``lateness``: one row per source and threshold, every threshold of the grid
        for each source: ``source_system`` (str), ``threshold_seconds`` (int),
        ``arrived_within`` (int: parsed events whose lateness is at most the
        threshold) and ``events`` (int: parsed events of the source, the same on
        all its rows).
    ``backtest``: one row per source, metric and horizon: ``source_system``,
        ``metric`` (str), ``horizon_hours`` (number), ``partitions`` (int),
        ``mean_estimated_completeness``, ``mean_actual_completeness`` and
        ``mean_absolute_relative_error`` (numbers, fractions: 0.9 is 90 %).
    ``restatements``: one row per restated gold row: ``run_started_at``
        (datetime), ``partition_value`` (the event date, str or date),
        ``source_system``, ``restatement_reason`` (str or None),
        ``net_revenue_before`` and ``net_revenue_after`` (numbers or Decimal).
    ``live_vs_final``: one row per event date: ``event_date`` (str or date),
        ``first_published_at`` (datetime or None), ``first_net_revenue`` and
        ``current_net_revenue`` (numbers or Decimal; None when the date is
        missing on that side).
    ``quarantine``: one row per source, reason and status: ``source_system``,
        ``quarantine_reason``, ``status`` (str) and ``row_count`` (int).
    ``holds``: one row per publication hold (the model publication_holds):
        ``hold_id``, ``partition_value``, ``group_values``, ``state``,
        ``checks_fired``, ``breaches`` (str or None), ``first_held_at``,
        ``last_judged_at`` (datetime) and ``resolution_reason`` (str or None).
    ``as_of``: the as-of time of the newest gold build (None if unknown).
    """

    lateness: list[Row] = field(default_factory=list)
    backtest: list[Row] = field(default_factory=list)
    restatements: list[Row] = field(default_factory=list)
    live_vs_final: list[Row] = field(default_factory=list)
    quarantine: list[Row] = field(default_factory=list)
    holds: list[Row] = field(default_factory=list)
    as_of: datetime | None = None


@dataclass
class Chart:
    """One section of the page: its chart and table, already rendered."""

    key: str
    svg: str | None
    table: str
    summary: str


# --------------------------------------------------------------------------
# Formatting helpers
# --------------------------------------------------------------------------


def threshold_label(seconds: int) -> str:
    """``0``, ``5 min``, ``1 h``, ``720 h``: how a lateness threshold is written."""
    if seconds == 0:
        return "0"
    if seconds < HOUR:
        return f"{seconds // 60} min"
    return f"{seconds / HOUR:g} h"


def money(value: Any) -> Decimal | None:
    """A money figure as an exact Decimal (floats through their shortest repr)."""
    if value is None:
        return None
    return value if isinstance(value, Decimal) else Decimal(str(value))


def number(value: Any) -> float | None:
    return None if value is None else float(value)


def format_money(value: Any, signed: bool = False) -> str:
    amount = money(value)
    if amount is None:
        return "–"
    return f"{amount:+,.2f}" if signed else f"{amount:,.2f}"


def format_share(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}%"


def format_time(value: datetime | None) -> str:
    if value is None:
        return "–"
    if value.tzinfo is not None:
        value = value.astimezone(UTC)
    return value.strftime("%Y-%m-%d %H:%M UTC")


def as_date(value: Any) -> date:
    return value if isinstance(value, date) and not isinstance(value, datetime) else date.fromisoformat(str(value)[:10])


def slug(text: Any) -> str:
    """A piece of an element id: letters, digits, ``_`` and ``-`` only."""
    return re.sub(r"[^A-Za-z0-9_]+", "-", str(text)).strip("-") or "none"


def source_colors(*datasets: Iterable[Row]) -> dict[str, str]:
    """One colour per source system, the same in every chart."""
    sources = sorted({str(row["source_system"]) for rows in datasets for row in rows})
    palette = matplotlib.colormaps["tab10"].colors
    return {source: matplotlib.colors.to_hex(palette[i % len(palette)]) for i, source in enumerate(sources)}


def html_table(key: str, header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    head = "".join(f"<th>{html.escape(str(cell))}</th>" for cell in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(cell))}</td>" for cell in row) + "</tr>" for row in rows)
    return f'<table id="table-{key}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


# --------------------------------------------------------------------------
# SVG from matplotlib
# --------------------------------------------------------------------------


def new_figure(key: str, width: float = 7.5, height: float = 4.2) -> Figure:
    figure = Figure(figsize=(width, height), layout="constrained")
    figure.set_gid(f"{key}-figure")
    return figure


def concise_dates(ax: Axes) -> None:
    locator = AutoDateLocator()
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(ConciseDateFormatter(locator))


def figure_svg(figure: Figure, key: str) -> str:
    """The figure as an ``<svg>`` element to inline, its ids scoped to the chart."""
    buffer = io.StringIO()
    # Text stays text; the salt makes the generated ids stable and distinct per chart.
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": key}):
        figure.savefig(buffer, format="svg", metadata={"Date": None})
    svg = buffer.getvalue()
    svg = svg[svg.index("<svg") :]
    svg = svg.replace("<svg ", f'<svg id="svg-{key}" style="max-width:100%;height:auto" ', 1)
    return scope_svg_ids(svg, key)


def scope_svg_ids(svg: str, key: str) -> str:
    """Prefix matplotlib's own ids (``axes_1``, ``line2d_3``...) with the chart key.

    Several SVGs share one HTML document, where ids must be unique; ids that
    already start with ``<key>-`` (the series gids set here) are kept.
    """
    ids = set(re.findall(r'\bid="([^"]+)"', svg))
    renamed = {old: f"{key}-{old}" for old in ids if not old.startswith(f"{key}-")}
    svg = re.sub(r'\bid="([^"]+)"', lambda m: f'id="{renamed.get(m[1], m[1])}"', svg)
    return re.sub(r'(url\(#|href="#)([^")]+)', lambda m: m[1] + renamed.get(m[2], m[2]), svg)


# --------------------------------------------------------------------------
# 1. Lateness distribution
# --------------------------------------------------------------------------

LATENESS_KEY = "lateness-cdf"


def lateness_shares(rows: Iterable[Row]) -> dict[str, list[tuple[int, float]]]:
    """Per source: (threshold seconds, share arrived within it), by threshold."""
    shares: dict[str, list[tuple[int, float]]] = {}
    for row in sorted(rows, key=lambda r: (str(r["source_system"]), int(r["threshold_seconds"]))):
        events = int(row["events"])
        share = int(row["arrived_within"]) / events if events else 0.0
        shares.setdefault(str(row["source_system"]), []).append((int(row["threshold_seconds"]), share))
    return shares


def lateness_svg(shares: dict[str, list[tuple[int, float]]], colors: Mapping[str, str]) -> str:
    figure = new_figure(LATENESS_KEY)
    ax = figure.add_subplot()
    for source, points in shares.items():
        hours = [t / HOUR for t, _ in points]
        (line,) = ax.plot(hours, [s for _, s in points], marker="o", label=source, color=colors[source])
        line.set_gid(f"{LATENESS_KEY}-{slug(source)}")
    thresholds = sorted({t for points in shares.values() for t, _ in points})
    # Linear up to five minutes, logarithmic beyond: 0 has a place on the axis.
    ax.set_xscale("symlog", linthresh=5 / 60, linscale=0.5)
    ax.xaxis.set_major_locator(FixedLocator([t / HOUR for t in thresholds]))
    ax.xaxis.set_major_formatter(FixedFormatter([threshold_label(t) for t in thresholds]))
    ax.xaxis.set_minor_locator(FixedLocator([]))
    ax.tick_params(axis="x", labelrotation=60, labelsize=8)
    ax.yaxis.set_major_formatter(PercentFormatter(1.0))
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("arrived within (event time to arrival)")
    ax.set_ylabel("share of events")
    ax.grid(alpha=0.3)
    ax.legend(title="source")
    return figure_svg(figure, LATENESS_KEY)


def lateness_chart(rows: list[Row], colors: Mapping[str, str]) -> Chart:
    shares = lateness_shares(rows)
    events = {str(row["source_system"]): int(row["events"]) for row in rows}
    thresholds = sorted({t for points in shares.values() for t, _ in points}) or list(LATENESS_THRESHOLDS_SECONDS)
    header = [
        "source",
        "events",
        *(f"≤ {threshold_label(t)}" for t in thresholds),
        f"> {threshold_label(thresholds[-1])}",
    ]
    table_rows = [
        [source, events[source], *(format_share(s) for _, s in points), format_share(1 - points[-1][1])]
        for source, points in shares.items()
    ]
    within_day = ", ".join(f"{s} {format_share(dict(points).get(24 * HOUR))}" for s, points in shares.items())
    summary = f"{len(shares)} source(s), {sum(events.values())} events; within 24 h: {within_day}"
    return Chart(
        key=LATENESS_KEY,
        svg=lateness_svg(shares, colors) if shares else None,
        table=html_table(LATENESS_KEY, header, table_rows),
        summary=summary if shares else NO_DATA,
    )


# --------------------------------------------------------------------------
# 2. Completeness backtest
# --------------------------------------------------------------------------

BACKTEST_KEY = "completeness-backtest"


def backtest_legend(rows: list[Row], colors: Mapping[str, str]) -> list[Line2D]:
    """Colour per source, line style per series (estimated solid, actual dashed)."""
    sources = sorted({str(r["source_system"]) for r in rows})
    return [
        *(Line2D([], [], color=colors[source], label=source) for source in sources),
        Line2D([], [], color="#555555", marker="o", label="estimated"),
        Line2D([], [], color="#555555", marker="s", linestyle="--", label="actual"),
    ]


def plot_backtest_metric(top: Axes, bottom: Axes, rows: list[Row], colors: Mapping[str, str]) -> None:
    """One metric: completeness (top) and error (bottom) by horizon, a line per source and series."""
    metric = slug(rows[0]["metric"])
    for source in sorted({str(r["source_system"]) for r in rows}):
        series = [r for r in rows if str(r["source_system"]) == source]
        hours = [float(r["horizon_hours"]) for r in series]
        gid = f"{BACKTEST_KEY}-{metric}-{slug(source)}"
        for ax, column, marker, style, name in (
            (top, "mean_estimated_completeness", "o", "-", "estimated"),
            (top, "mean_actual_completeness", "s", "--", "actual"),
            (bottom, "mean_absolute_relative_error", "o", "-", "error"),
        ):
            values = [number(r[column]) for r in series]
            (line,) = ax.plot(hours, values, marker=marker, linestyle=style, color=colors[source])
            line.set_gid(f"{gid}-{name}")
    for ax in (top, bottom):
        ax.yaxis.set_major_formatter(PercentFormatter(1.0))
        ax.grid(alpha=0.3)
    top.set_title(rows[0]["metric"])
    bottom.set_xlabel("hours after the day ended")


def backtest_svg(rows: list[Row], colors: Mapping[str, str]) -> str:
    metrics = sorted({str(r["metric"]) for r in rows})
    figure = new_figure(BACKTEST_KEY, width=max(7.5, 3.8 * len(metrics)), height=5.5)
    axes = figure.subplots(2, len(metrics), squeeze=False, sharex="col")
    for column, metric in enumerate(metrics):
        plot_backtest_metric(axes[0][column], axes[1][column], [r for r in rows if r["metric"] == metric], colors)
    axes[0][0].set_ylabel("mean completeness")
    axes[1][0].set_ylabel("mean abs. relative error")
    axes[0][-1].legend(handles=backtest_legend(rows, colors), fontsize=8)
    return figure_svg(figure, BACKTEST_KEY)


def backtest_summary(rows: list[Row]) -> str:
    errors = [e for e in (number(r["mean_absolute_relative_error"]) for r in rows) if e is not None]
    return (
        f"{len({r['source_system'] for r in rows})} source(s) x {len({r['metric'] for r in rows})} metric(s) x "
        f"{len({float(r['horizon_hours']) for r in rows})} horizon(s); worst mean abs. rel. error "
        f"{format_share(max(errors) if errors else None)}"
    )


def backtest_chart(rows: list[Row], colors: Mapping[str, str]) -> Chart:
    ordered = sorted(rows, key=lambda r: (str(r["metric"]), str(r["source_system"]), float(r["horizon_hours"])))
    header = ["source", "metric", "horizon (h)", "partitions", "estimated", "actual", "mean abs. rel. error"]
    table_rows = [
        [
            r["source_system"],
            r["metric"],
            f"{float(r['horizon_hours']):g}",
            r["partitions"],
            format_share(number(r["mean_estimated_completeness"])),
            format_share(number(r["mean_actual_completeness"])),
            format_share(number(r["mean_absolute_relative_error"])),
        ]
        for r in ordered
    ]
    return Chart(
        key=BACKTEST_KEY,
        svg=backtest_svg(ordered, colors) if ordered else None,
        table=html_table(BACKTEST_KEY, header, table_rows),
        summary=backtest_summary(ordered) if ordered else NO_DATA,
    )


# --------------------------------------------------------------------------
# 3. Restatement timeline
# --------------------------------------------------------------------------

RESTATEMENTS_KEY = "restatements"


def restatement_delta(row: Row) -> Decimal:
    """How much a restatement moved net revenue (after - before; a missing side counts 0)."""
    return (money(row["net_revenue_after"]) or Decimal(0)) - (money(row["net_revenue_before"]) or Decimal(0))


def reason_of(row: Row) -> str:
    return str(row["restatement_reason"]) if row["restatement_reason"] is not None else "unknown"


def restatement_svg(rows: list[Row], colors: Mapping[str, str]) -> str:
    figure = new_figure(RESTATEMENTS_KEY)
    ax = figure.add_subplot()
    reasons = sorted({reason_of(r) for r in rows})
    groups: dict[tuple[str, str], list[Row]] = {}
    for row in rows:
        groups.setdefault((str(row["source_system"]), reason_of(row)), []).append(row)
    for (source, reason), points in sorted(groups.items()):
        dots = ax.scatter(
            [r["run_started_at"] for r in points],
            [float(restatement_delta(r)) for r in points],
            color=colors[source],
            marker=REASON_MARKERS[reasons.index(reason) % len(REASON_MARKERS)],
            s=40,
            alpha=0.8,
        )
        dots.set_gid(f"{RESTATEMENTS_KEY}-{slug(source)}-{slug(reason)}")
    if len(rows) <= ANNOTATE_AT_MOST:
        for row in rows:
            point = (row["run_started_at"], float(restatement_delta(row)))
            label = as_date(row["partition_value"]).strftime("%m-%d")
            ax.annotate(label, point, textcoords="offset points", xytext=(5, 3), fontsize=7, color="#444444")
    concise_dates(ax)
    ax.axhline(0, color="#888888", linewidth=0.8)
    ax.set_xlabel("run as of (UTC)")
    ax.set_ylabel("change of net revenue")
    ax.grid(alpha=0.3)
    ax.legend(handles=restatement_legend(rows, reasons, colors), fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))
    return figure_svg(figure, RESTATEMENTS_KEY)


def restatement_legend(rows: list[Row], reasons: list[str], colors: Mapping[str, str]) -> list[Line2D]:
    """Colour per source, marker per reason."""
    sources = sorted({str(r["source_system"]) for r in rows})
    return [
        *(Line2D([], [], color=colors[s], marker="o", linestyle="", label=s) for s in sources),
        *(
            Line2D([], [], color="#555555", marker=REASON_MARKERS[i % len(REASON_MARKERS)], linestyle="", label=r)
            for i, r in enumerate(reasons)
        ),
    ]


def restatement_summary(rows: list[Row]) -> str:
    total = sum((restatement_delta(r) for r in rows), Decimal(0))
    return (
        f"{len(rows)} restated row(s) in {len({r['run_started_at'] for r in rows})} run(s), "
        f"{len({str(r['partition_value']) for r in rows})} partition(s); net revenue "
        f"{format_money(total, signed=True)}"
    )


def restatement_chart(rows: list[Row], colors: Mapping[str, str]) -> Chart:
    ordered = sorted(rows, key=lambda r: (r["run_started_at"], str(r["partition_value"]), str(r["source_system"])))
    header = ["run as of", "event date", "source", "reason", "net revenue before", "after", "change"]
    table_rows = [
        [
            format_time(r["run_started_at"]),
            as_date(r["partition_value"]).isoformat(),
            r["source_system"],
            reason_of(r),
            format_money(r["net_revenue_before"]),
            format_money(r["net_revenue_after"]),
            format_money(restatement_delta(r), signed=True),
        ]
        for r in ordered
    ]
    return Chart(
        key=RESTATEMENTS_KEY,
        svg=restatement_svg(ordered, colors) if ordered else None,
        table=html_table(RESTATEMENTS_KEY, header, table_rows),
        summary=restatement_summary(ordered) if ordered else NO_DATA,
    )


# --------------------------------------------------------------------------
# 4. Live against final
# --------------------------------------------------------------------------

LIVE_KEY = "live-vs-final"


def live_delta(row: Row) -> Decimal | None:
    """Current minus first-published net revenue of a date (None if either is missing)."""
    first, current = money(row["first_net_revenue"]), money(row["current_net_revenue"])
    return None if first is None or current is None else current - first


def live_vs_final_svg(rows: list[Row]) -> str:
    figure = new_figure(LIVE_KEY, height=5.0)
    top, bottom = figure.subplots(2, 1, sharex=True, height_ratios=[3, 1.3])
    days = [as_date(r["event_date"]) for r in rows]
    for name, label, column, style, marker in (
        ("first", "first published", "first_net_revenue", "--", "s"),
        ("current", "now", "current_net_revenue", "-", "o"),
    ):
        values = [number(r[column]) for r in rows]
        nan_for_missing = [v if v is not None else float("nan") for v in values]
        shown_marker = marker if len(rows) <= MARKERS_AT_MOST else None
        (line,) = top.plot(days, nan_for_missing, linestyle=style, marker=shown_marker, label=label)
        line.set_gid(f"{LIVE_KEY}-{name}")
    deltas = [live_delta(r) for r in rows]
    heights = [float(d) if d is not None else 0.0 for d in deltas]
    bars = bottom.bar(days, heights, color=["#2ca02c" if h >= 0 else "#d62728" for h in heights])
    for bar, day in zip(bars, days, strict=True):
        bar.set_gid(f"{LIVE_KEY}-delta-{day.isoformat()}")
    top.set_ylabel("net revenue")
    top.legend()
    bottom.axhline(0, color="#888888", linewidth=0.8)
    bottom.set_ylabel("now - then")
    bottom.set_xlabel("event date")
    concise_dates(bottom)
    for ax in (top, bottom):
        ax.grid(alpha=0.3)
    return figure_svg(figure, LIVE_KEY)


def live_vs_final_summary(rows: list[Row]) -> str:
    moved = [d for d in (live_delta(r) for r in rows) if d]
    return (
        f"{len(rows)} event date(s), {len(moved)} moved since first published; net change "
        f"{format_money(sum(moved, Decimal(0)), signed=True)}"
    )


def live_vs_final_chart(rows: list[Row]) -> Chart:
    ordered = sorted(rows, key=lambda r: as_date(r["event_date"]))
    header = ["event date", "first published as of", "first published", "now", "change"]
    table_rows = [
        [
            as_date(r["event_date"]).isoformat(),
            format_time(r["first_published_at"]),
            format_money(r["first_net_revenue"]),
            format_money(r["current_net_revenue"]),
            format_money(live_delta(r), signed=True),
        ]
        for r in ordered
    ]
    return Chart(
        key=LIVE_KEY,
        svg=live_vs_final_svg(ordered) if ordered else None,
        table=html_table(LIVE_KEY, header, table_rows),
        summary=live_vs_final_summary(ordered) if ordered else NO_DATA,
    )


# --------------------------------------------------------------------------
# 5. Quarantine status
# --------------------------------------------------------------------------

QUARANTINE_KEY = "quarantine"
Counts = dict[tuple[str, str], dict[str, int]]


def quarantine_counts(rows: Iterable[Row]) -> Counts:
    """Row counts per (source, reason), then per status."""
    counts: Counts = {}
    for row in rows:
        group = counts.setdefault((str(row["source_system"]), str(row["quarantine_reason"])), {})
        group[str(row["status"])] = group.get(str(row["status"]), 0) + int(row["row_count"])
    return dict(sorted(counts.items()))


def quarantine_statuses(counts: Counts) -> list[str]:
    """The known statuses in their order, then any other that occurs."""
    others = sorted({status for by_status in counts.values() for status in by_status} - set(QUARANTINE_STATUSES))
    return [*QUARANTINE_STATUSES, *others]


def quarantine_svg(counts: Counts) -> str:
    figure = new_figure(QUARANTINE_KEY, height=max(2.5, 1.0 + 0.4 * len(counts)))
    ax = figure.add_subplot()
    groups = list(counts)
    positions = list(range(len(groups)))
    left = [0] * len(groups)
    for status in quarantine_statuses(counts):
        widths = [counts[group].get(status, 0) for group in groups]
        if not any(widths):
            continue
        bars = ax.barh(positions, widths, left=left, label=status, color=STATUS_COLORS.get(status))
        for bar, (source, reason) in zip(bars, groups, strict=True):
            bar.set_gid(f"{QUARANTINE_KEY}-{slug(source)}-{slug(reason)}-{slug(status)}")
        left = [a + b for a, b in zip(left, widths, strict=True)]
    ax.set_yticks(positions, [f"{source} · {reason}" for source, reason in groups], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("rows")
    ax.grid(axis="x", alpha=0.3)
    ax.legend(title="status", fontsize=8)
    return figure_svg(figure, QUARANTINE_KEY)


def quarantine_chart(rows: list[Row]) -> Chart:
    counts = quarantine_counts(rows)
    statuses = quarantine_statuses(counts)
    header = ["source", "reason", *statuses, "total"]
    table_rows = [
        [source, reason, *(by_status.get(s, 0) for s in statuses), sum(by_status.values())]
        for (source, reason), by_status in counts.items()
    ]
    totals = {s: sum(by_status.get(s, 0) for by_status in counts.values()) for s in statuses}
    summary = f"{sum(totals.values())} row(s): " + ", ".join(f"{n} {s}" for s, n in totals.items())
    return Chart(
        key=QUARANTINE_KEY,
        svg=quarantine_svg(counts) if counts else None,
        table=html_table(QUARANTINE_KEY, header, table_rows),
        summary=summary if counts else NO_DATA,
    )


# --------------------------------------------------------------------------
# 6. Publication holds
# --------------------------------------------------------------------------

HOLDS_KEY = "holds"
HOLDS_SHOWN = 50


def holds_chart(rows: list[Row]) -> Chart:
    """The open holds first (oldest partition first), then the latest closed ones; a table, no chart."""
    ordered = sorted(rows, key=lambda row: (row["state"] != "open", str(row["partition_value"])))
    open_count = sum(1 for row in rows if row["state"] == "open")
    header = ["hold", "partition", "sources", "state", "checks", "first held", "last judged", "detail"]
    table_rows = [
        [
            row["hold_id"],
            row["partition_value"],
            row.get("group_values") or "",
            row["state"],
            row.get("checks_fired") or "",
            format_time(row.get("first_held_at")),
            format_time(row.get("last_judged_at")),
            row.get("breaches") if row["state"] == "open" else row.get("resolution_reason") or "",
        ]
        for row in ordered[:HOLDS_SHOWN]
    ]
    summary = (
        f"{open_count} open hold(s), {len(rows) - open_count} closed; decide with "
        "python -m python_jobs.landing.steward holds"
    )
    return Chart(
        key=HOLDS_KEY,
        svg="" if rows else None,
        table=html_table(HOLDS_KEY, header, table_rows),
        summary=summary if rows else NO_DATA,
    )


# --------------------------------------------------------------------------
# The page
# --------------------------------------------------------------------------

# Each section's heading and the paragraph that explains its chart.
SECTIONS: dict[str, tuple[str, str]] = {
    LATENESS_KEY: (
        "1. How late events arrive",
        "For each source system, the share of its events (parsed rows of the arrival ledger, "
        "silver_event_arrivals) that had arrived within x hours of their event time. The x axis is linear "
        "up to five minutes and logarithmic beyond. A line that climbs early is a source that delivers on "
        "time; the last column of the table is the share later than 720 hours, the default last watermark "
        "tier, past which events are quarantined.",
    ),
    BACKTEST_KEY: (
        "2. Completeness estimate against the final value (backtest)",
        "For days that are now final, the completeness the estimate gave k hours after each day ended "
        "(solid) against the completeness the day really had at that moment, judged by its final value "
        "(dashed), averaged over the backtest's partitions, per source and metric "
        "(gold_completeness_backtest). Below, the mean absolute relative error of the estimated final "
        "value: how far off a number published at that horizon and scaled by the estimate is.",
    ),
    RESTATEMENTS_KEY: (
        "3. Restatements: what moved, when, by how much and why",
        "Every published row of gold_daily_revenue that a later run changed, from the change manifest "
        "(gold_change_manifest): the run that changed it (x), how much its net revenue moved (y), its "
        "source (colour) and the restatement reason (marker); small labels give the event date when there "
        "are few points. The table lists the partition (event date) and the values before and after; it "
        f"holds the latest {RESTATEMENT_LIMIT} restatements at most.",
    ),
    LIVE_KEY: (
        "4. What we said then against what we say now",
        "Per event date, the net revenue first published for it (each source's first row in the change "
        "manifest, summed over sources) against the current value in gold_daily_revenue, and the "
        "difference below. Late, corrected and deleted events move a date after it was first published; "
        "a final date rarely moves, and when it does the row is flagged is_restated_after_final and audited.",
    ),
    QUARANTINE_KEY: (
        "5. Quarantine",
        "Rows held out of silver (silver_quarantine) per source and reason: malformed lines, rows without "
        "a natural key and events later than the last watermark tier, by status. A steward releases a row "
        "(it then merges and restates like any late event) or rejects it; 'quarantined' rows still wait "
        "for a decision.",
    ),
    HOLDS_KEY: (
        "6. Publication holds",
        "Partitions of gold_daily_revenue whose change the publication gate found abnormal (a day sent twice, "
        "a fall in events with no deletion behind it, a value per event far off): while a hold is open, the "
        "date stays as published in every gold model that restates it and everything else publishes. It "
        "closes when its figures return to normal, or when a steward approves or rejects it.",
    ),
}


STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2rem auto; max-width: 1200px;
       padding: 0 1rem; color: #222; }
h1 { margin-bottom: 0.2rem; }
.as-of { color: #555; margin-top: 0; }
section { margin: 2.5rem 0; }
figure { margin: 0 0 1rem 0; max-width: 960px; }
.figures { overflow: auto; max-height: 24rem; max-width: 100%; }
table { border-collapse: collapse; font-size: 0.8rem; font-variant-numeric: tabular-nums; }
th, td { border-bottom: 1px solid #ddd; padding: 0.2rem 0.5rem; text-align: right; white-space: nowrap; }
th { background: #f4f4f4; position: sticky; top: 0; }
td:first-child, th:first-child { text-align: left; }
.empty { color: #777; font-style: italic; padding: 2rem; border: 1px dashed #bbb; text-align: center; }
"""


def build_charts(data: ReportData) -> list[Chart]:
    colors = source_colors(data.lateness, data.backtest, data.restatements, data.quarantine)
    return [
        lateness_chart(list(data.lateness), colors),
        backtest_chart(list(data.backtest), colors),
        restatement_chart(list(data.restatements), colors),
        live_vs_final_chart(list(data.live_vs_final)),
        quarantine_chart(list(data.quarantine)),
        holds_chart(list(data.holds)),
    ]


def section_html(chart: Chart) -> str:
    title, explanation = SECTIONS[chart.key]
    visual = chart.svg if chart.svg is not None else f'<p class="empty">{NO_DATA}</p>'
    figures = chart.table if chart.svg is not None else ""
    return (
        f'<section id="section-{chart.key}">\n<h2>{html.escape(title)}</h2>\n'
        f"<p>{html.escape(explanation)}</p>\n"
        f'<div class="chart">\n<figure id="chart-{chart.key}">\n{visual}\n</figure>\n'
        f'<div class="figures">{figures}</div>\n</div>\n</section>'
    )


def render_charts(charts: Sequence[Chart], as_of: datetime | None, generated_at: datetime) -> str:
    title = "latecomer: lateness, completeness and restatements"
    as_of_text = format_time(as_of) if as_of is not None else "no gold build yet"
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en">',
            '<head><meta charset="utf-8">',
            f"<title>{html.escape(title)}</title>",
            f"<style>{STYLE}</style>",
            "</head>",
            "<body>",
            f"<h1>{html.escape(title)}</h1>",
            f'<p class="as-of">Data as of <time id="as-of">{html.escape(as_of_text)}</time>; '
            f"page generated {html.escape(format_time(generated_at))}.</p>",
            *(section_html(chart) for chart in charts),
            "</body>",
            "</html>",
            "",
        ]
    )


def render_report(data: ReportData, generated_at: datetime | None = None) -> str:
    """The whole page as an HTML string (see :class:`ReportData` for the input shapes)."""
    return render_charts(build_charts(data), data.as_of, generated_at or datetime.now(UTC))


# --------------------------------------------------------------------------
# Loading from the built tables (Spark)
# --------------------------------------------------------------------------


def lateness_sql(schema: str) -> str:
    """Per source: parsed events and, per threshold, those at most that late (one wide row)."""
    within = ",\n    ".join(
        f"count_if(lateness_seconds <= {seconds}) as within_{seconds}" for seconds in LATENESS_THRESHOLDS_SECONDS
    )
    return (
        f"select\n    source_system,\n    count(*) as events,\n    {within}\n"
        f"from {schema}_silver.silver_event_arrivals\n"
        "where parse_error is null and lateness_seconds is not null\n"
        "group by source_system"
    )


def lateness_rows(wide_rows: Iterable[Row]) -> list[dict[str, Any]]:
    """:func:`lateness_sql`'s wide rows as the long rows :class:`ReportData` takes."""
    return [
        {
            "source_system": row["source_system"],
            "threshold_seconds": seconds,
            "arrived_within": int(row[f"within_{seconds}"] or 0),
            "events": int(row["events"]),
        }
        for row in wide_rows
        for seconds in LATENESS_THRESHOLDS_SECONDS
    ]


def backtest_sql(schema: str) -> str:
    return (
        "select source_system, metric, horizon_hours, partitions, mean_estimated_completeness,\n"
        "    mean_actual_completeness, mean_absolute_relative_error\n"
        f"from {schema}_gold.gold_completeness_backtest\n"
        "order by metric, source_system, horizon_hours"
    )


def manifest_value(column: str, key: str) -> str:
    """SQL reading one value of a manifest JSON column (row_key, before_values, after_values)."""
    return f"get_json_object({column}, '$.{key}')"


def manifest_money(column: str) -> str:
    return f"cast({manifest_value(column, 'net_revenue')} as decimal(38, 2))"


def restatements_sql(schema: str, limit: int = RESTATEMENT_LIMIT) -> str:
    """Published revenue rows a later run changed, newest first (at most ``limit``)."""
    return (
        # as_of, the run's business time (a replay's as_of is the day it replays), not its wall clock
        "select\n    as_of as run_started_at,\n    partition_value,\n"
        f"    {manifest_value('row_key', 'source_system')} as source_system,\n"
        "    restatement_reason,\n"
        f"    {manifest_money('before_values')} as net_revenue_before,\n"
        f"    {manifest_money('after_values')} as net_revenue_after\n"
        f"from {schema}_audit.gold_change_manifest\n"
        f"where model = '{REVENUE_MODEL}' and change = 'restated'\n"
        "order by as_of desc, partition_value, source_system\n"
        f"limit {int(limit)}"
    )


def live_vs_final_sql(schema: str) -> str:
    """Per event date: first-published net revenue (summed over sources) and the current one."""
    return f"""with manifest as (
    select partition_value, row_key, as_of as run_started_at, after_row_version, after_values
    from {schema}_audit.gold_change_manifest
    where model = '{REVENUE_MODEL}'
),

first_published as (
    select
        partition_value,
        row_key,
        min(run_started_at) as first_published_at,
        min_by(after_values, named_struct('run_started_at', run_started_at, 'version', after_row_version))
            as first_values
    from manifest
    group by partition_value, row_key
),

said_then as (
    select
        partition_value as event_date,
        min(first_published_at) as first_published_at,
        sum({manifest_money("first_values")}) as first_net_revenue
    from first_published
    group by partition_value
),

said_now as (
    select cast(event_date as string) as event_date, sum(net_revenue) as current_net_revenue
    from {schema}_gold.{REVENUE_MODEL}
    group by event_date
)

select
    coalesce(said_then.event_date, said_now.event_date) as event_date,
    said_then.first_published_at,
    said_then.first_net_revenue,
    said_now.current_net_revenue
from said_then
full outer join said_now on said_then.event_date = said_now.event_date
order by event_date"""


def quarantine_sql(schema: str) -> str:
    return (
        "select source_system, quarantine_reason, status, count(*) as row_count\n"
        f"from {schema}_silver.silver_quarantine\n"
        "group by source_system, quarantine_reason, status\n"
        "order by source_system, quarantine_reason, status"
    )


def holds_sql(schema: str) -> str:
    return (
        "select hold_id, partition_value, group_values, state, checks_fired, breaches, first_held_at,\n"
        "    last_judged_at, resolution_reason\n"
        f"from {schema}_audit.publication_holds\n"
        "order by last_judged_at desc"
    )


def as_of_sql(schema: str) -> str:
    return f"select max(as_of) as as_of from {schema}_audit.gold_change_manifest where model = '{REVENUE_MODEL}'"


# Each query and the tables (``<layer>.<table>``) it reads: a missing table means "no data yet".
QUERIES: dict[str, tuple[Callable[[str], str], tuple[str, ...]]] = {
    "lateness": (lateness_sql, ("silver.silver_event_arrivals",)),
    "backtest": (backtest_sql, ("gold.gold_completeness_backtest",)),
    "restatements": (restatements_sql, ("audit.gold_change_manifest",)),
    "live_vs_final": (live_vs_final_sql, ("audit.gold_change_manifest", f"gold.{REVENUE_MODEL}")),
    "quarantine": (quarantine_sql, ("silver.silver_quarantine",)),
    "as_of": (as_of_sql, ("audit.gold_change_manifest",)),
    "holds": (holds_sql, ("audit.publication_holds",)),
}


def query_rows(spark: SparkSession, schema: str, name: str) -> list[dict[str, Any]]:
    """The rows of one query as dicts, or none when a table it reads is not built yet."""
    sql, tables = QUERIES[name]
    if not all(spark.catalog.tableExists(f"{schema}_{table}") for table in tables):
        return []
    return [row.asDict() for row in spark.sql(sql(schema)).collect()]


def load_datasets(spark: SparkSession, schema: str) -> ReportData:
    """The five datasets from ``<schema>_<layer>`` tables, aggregated in Spark."""
    as_of_rows = query_rows(spark, schema, "as_of")
    return ReportData(
        lateness=lateness_rows(query_rows(spark, schema, "lateness")),
        backtest=query_rows(spark, schema, "backtest"),
        restatements=query_rows(spark, schema, "restatements"),
        live_vs_final=query_rows(spark, schema, "live_vs_final"),
        quarantine=query_rows(spark, schema, "quarantine"),
        holds=query_rows(spark, schema, "holds"),
        as_of=as_of_rows[0]["as_of"] if as_of_rows else None,
    )


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
