"""The six sections of the report, each as a :class:`Chart`: lateness,
completeness backtest, restatements, live against final, quarantine and
publication holds.

Each ``*_chart`` function takes the rows of one dataset (shapes in
:class:`~python_jobs.operations.report_data.ReportData`) and returns the
section's SVG (None when there are no rows), its table and a one-line summary.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal

from matplotlib.axes import Axes
from matplotlib.lines import Line2D
from matplotlib.ticker import FixedFormatter, FixedLocator, PercentFormatter

from python_jobs.operations.report_data import HOUR, LATENESS_THRESHOLDS_SECONDS, Row
from python_jobs.operations.report_drawing import (
    NO_DATA,
    Chart,
    as_date,
    concise_dates,
    figure_svg,
    format_money,
    format_share,
    format_time,
    html_table,
    money,
    new_figure,
    number,
    slug,
    threshold_label,
)

# Timeline points labelled with their event date when there are at most this many.
ANNOTATE_AT_MOST = 40
# Dates of the live-vs-final lines drawn with markers when there are at most this many.
MARKERS_AT_MOST = 90
QUARANTINE_STATUSES = ("quarantined", "released", "rejected")
REASON_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "h", "<", ">")
STATUS_COLORS = {"quarantined": "#d62728", "released": "#2ca02c", "rejected": "#7f7f7f"}


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
