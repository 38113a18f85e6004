"""The report's HTML page: each section's heading and explanation, the style
sheet, and the document that holds the sections.

:func:`render_report` turns a :class:`~python_jobs.operations.report_data.ReportData`
into the whole page as a string; it needs no Spark.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from datetime import UTC, datetime

from python_jobs.operations.report_charts import (
    BACKTEST_KEY,
    HOLDS_KEY,
    LATENESS_KEY,
    LIVE_KEY,
    QUARANTINE_KEY,
    RESTATEMENTS_KEY,
    backtest_chart,
    holds_chart,
    lateness_chart,
    live_vs_final_chart,
    quarantine_chart,
    restatement_chart,
)
from python_jobs.operations.report_data import RESTATEMENT_LIMIT, ReportData
from python_jobs.operations.report_drawing import NO_DATA, Chart, format_time, source_colors

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
