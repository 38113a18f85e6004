"""How the report writes its figures and draws its charts: numbers, money, shares
and times as text, HTML tables, and matplotlib figures as inline SVG whose ids
are unique on the page.

A :class:`Chart` is one section of the page already rendered; the sections'
charts (:mod:`python_jobs.operations.report_charts`) are built from these
pieces.
"""

from __future__ import annotations

import html
import io
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import matplotlib
from matplotlib.axes import Axes
from matplotlib.dates import AutoDateLocator, ConciseDateFormatter
from matplotlib.figure import Figure

from python_jobs.operations.report_data import HOUR, Row

NO_DATA = "no data yet"


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
