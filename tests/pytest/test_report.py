"""The HTML report (python_jobs.operations.report) as a person sees it, without Spark.

Small datasets are made by hand; the figures the page must show are worked
out here from the raw hand-made values (lateness in seconds, each source's
first and current net revenue), not with the report's code. The page is
opened in headless Chromium (Debian's ``chromium``, installed by
``make system``, which ``make test`` runs first); the assertions read the DOM
Chromium dumps and the screenshot it takes. Without Chromium these tests skip,
except under CI, where they fail.

The loader's pure pieces (threshold grid, wide-to-long CDF rows, the SQL's
reading of the change manifest) are unit-tested at the end.
"""

from __future__ import annotations

import re
from datetime import datetime
from decimal import Decimal
from html.parser import HTMLParser
from pathlib import Path

import pytest
from matplotlib import image

from python_jobs.core.constants import REVENUE_MEASURES
from python_jobs.core.spark_config import SparkConfigError
from python_jobs.operations import report, report_drawing, report_page, report_queries
from python_jobs.operations.report_data import LATENESS_THRESHOLDS_SECONDS, ReportData
from tests.pytest.browser import require_chromium, run_chromium
from tests.pytest.macro_render import PLATFORM

ROOT = Path(__file__).resolve().parents[2]
CHART_KEYS = ("lateness-cdf", "completeness-backtest", "restatements", "live-vs-final", "quarantine")
SOURCES = ("mobile", "partner", "web")

# Raw lateness (seconds) per source: the CDF shares below are counted from these.
LATENESS = {
    "web": [0, 120, 600, 3000, 7200, 90_000, 4_000_000],
    "mobile": [-30, 1800, 1800, 86_400, 259_200],
    "partner": [100_000, 100_000, 700_000, 3_000_000],
}
# (event date, source): net revenue first published and now.
FIRST = {
    ("2024-01-01", "web"): Decimal("100.00"),
    ("2024-01-01", "mobile"): Decimal("50.00"),
    ("2024-01-02", "web"): Decimal("80.00"),
    ("2024-01-02", "partner"): Decimal("20.10"),
    ("2024-01-03", "mobile"): Decimal("10.00"),
}
NOW = {
    ("2024-01-01", "web"): Decimal("112.50"),
    ("2024-01-01", "mobile"): Decimal("50.00"),
    ("2024-01-02", "web"): Decimal("75.25"),
    ("2024-01-02", "partner"): Decimal("20.10"),
    ("2024-01-03", "mobile"): Decimal("10.00"),
}


def cdf_rows() -> list[dict]:
    return [
        {
            "source_system": source,
            "threshold_seconds": threshold,
            "arrived_within": sum(1 for lateness in values if lateness <= threshold),
            "events": len(values),
        }
        for source, values in LATENESS.items()
        for threshold in LATENESS_THRESHOLDS_SECONDS
    ]


def backtest_rows() -> list[dict]:
    return [
        {
            "source_system": source,
            "metric": metric,
            "horizon_hours": float(hours),
            "partitions": 7,
            "mean_estimated_completeness": 0.5 + hours / 100,
            "mean_actual_completeness": 0.45 + hours / 80,
            "mean_absolute_relative_error": 0.2 / (1 + hours),
            "mean_relative_error": -0.1,
        }
        for source in ("web", "partner")
        for metric in ("net_revenue", "orders")
        for hours in (0, 12, 24)
    ]


def restatement_rows() -> list[dict]:
    return [
        {
            "run_started_at": datetime(2024, 1, 3, 6, 0),
            "partition_value": "2024-01-01",
            "source_system": "web",
            "restatement_reason": "late_arrival",
            "net_revenue_before": Decimal("100.00"),
            "net_revenue_after": Decimal("112.50"),
        },
        {
            "run_started_at": datetime(2024, 1, 4, 6, 0),
            "partition_value": "2024-01-02",
            "source_system": "web",
            "restatement_reason": "correction",
            "net_revenue_before": Decimal("80.00"),
            "net_revenue_after": Decimal("75.25"),
        },
        {
            "run_started_at": datetime(2024, 1, 4, 6, 0),
            "partition_value": "2024-01-02",
            "source_system": "partner",
            "restatement_reason": "deletion",
            "net_revenue_before": 30.1,
            "net_revenue_after": 20.1,
        },
    ]


def live_vs_final_rows() -> list[dict]:
    dates = sorted({day for day, _ in FIRST})
    return [
        {
            "event_date": day,
            "first_published_at": datetime(2024, 1, 2, 6, 0),
            "first_net_revenue": sum(v for (d, _), v in FIRST.items() if d == day),
            "current_net_revenue": sum(v for (d, _), v in NOW.items() if d == day),
        }
        for day in dates
    ]


def quarantine_rows() -> list[dict]:
    return [
        {
            "source_system": "web",
            "quarantine_reason": "malformed: invalid_json",
            "status": "quarantined",
            "row_count": 3,
        },
        {"source_system": "web", "quarantine_reason": "beyond_watermark", "status": "released", "row_count": 2},
        {"source_system": "mobile", "quarantine_reason": "null_natural_key", "status": "rejected", "row_count": 1},
        {"source_system": "partner", "quarantine_reason": "beyond_watermark", "status": "quarantined", "row_count": 4},
        {"source_system": "partner", "quarantine_reason": "beyond_watermark", "status": "rejected", "row_count": 1},
    ]


def hold_rows() -> list[dict]:
    def hold(hold_id: str, day: str, state: str, checks: str, detail: str | None, resolution: str | None) -> dict:
        return {
            "hold_id": hold_id,
            "partition_value": day,
            "group_values": "web",
            "state": state,
            "checks_fired": checks,
            "breaches": detail,
            "first_held_at": datetime(2024, 1, 19, 6),
            "last_judged_at": datetime(2024, 1, 21),
            "resolution_reason": resolution,
        }

    return [
        hold("c3", "2024-01-05", "approved", "value_outlier", "net_revenue / orders is 900", "promo <b>day</b>"),
        hold("a1", "2024-01-12", "open", "closed_growth", "orders grow from 14 to 28 (+100.0%)", None),
    ]


def full_data() -> ReportData:
    return ReportData(
        lateness=cdf_rows(),
        backtest=backtest_rows(),
        restatements=restatement_rows(),
        live_vs_final=live_vs_final_rows(),
        quarantine=quarantine_rows(),
        holds=hold_rows(),
        as_of=datetime(2024, 1, 21),
    )


# --------------------------------------------------------------------------
# Chromium
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def chromium() -> str:
    return require_chromium("the report test")


class Dom(HTMLParser):
    """What the assertions read from Chromium's DOM: ids, figures' contents and tables."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.source = text
        self.ids: list[str] = []
        self.figure_ids: dict[str, list[str]] = {}
        self.figure_tags: dict[str, set[str]] = {}
        self.figure_text: dict[str, str] = {}
        self.tables: dict[str, list[list[str]]] = {}
        self.texts: dict[str, str] = {}
        self._figure: str | None = None
        self._table: str | None = None
        self._cell: list[str] | None = None
        # The innermost element with an id whose text is collected, and its tag.
        self._element: tuple[str, str] | None = None
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element_id = dict(attrs).get("id")
        if element_id:
            self.ids.append(element_id)
            self._element = (tag, element_id)
        if tag == "figure" and element_id:
            self._figure = element_id
            self.figure_ids[element_id], self.figure_tags[element_id] = [], set()
            self.figure_text[element_id] = ""
        elif self._figure:
            self.figure_tags[self._figure].add(tag)
            if element_id:
                self.figure_ids[self._figure].append(element_id)
        if tag == "table" and element_id:
            self._table = element_id
            self.tables[element_id] = []
        elif tag == "tr" and self._table:
            self.tables[self._table].append([])
        elif tag in ("td", "th") and self._table:
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if self._element and self._element[0] == tag:
            self._element = None
        if tag == "figure":
            self._figure = None
        elif tag == "table":
            self._table = None
        elif tag in ("td", "th") and self._table and self._cell is not None:
            self.tables[self._table][-1].append("".join(self._cell).strip())
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)
        if self._figure:
            self.figure_text[self._figure] += data
        if self._element:
            element_id = self._element[1]
            self.texts[element_id] = self.texts.get(element_id, "") + data

    def table(self, key: str) -> tuple[list[str], list[list[str]]]:
        header, *rows = self.tables[f"table-{key}"]
        return header, rows

    def record(self, key: str, *leading: str) -> dict[str, str]:
        """The row of a table whose first cells are ``leading``, by column name."""
        header, rows = self.table(key)
        matches = [row for row in rows if tuple(row[: len(leading)]) == leading]
        assert len(matches) == 1, f"{key}: {leading} matches {len(matches)} rows in {rows}"
        return dict(zip(header, matches[0], strict=True))


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("report")
    written = {}
    for name, data in {"full": full_data(), "empty": ReportData()}.items():
        path = folder / f"{name}.html"
        path.write_text(report_page.render_report(data, generated_at=datetime(2024, 1, 21, 12, 0)), encoding="utf-8")
        written[name] = path
    return written


@pytest.fixture(scope="module")
def dom(chromium: str, pages: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Dom:
    profile = tmp_path_factory.mktemp("chromium-profile")
    return Dom(run_chromium(chromium, profile, "--dump-dom", pages["full"].as_uri()))


@pytest.fixture(scope="module")
def empty_dom(chromium: str, pages: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Dom:
    profile = tmp_path_factory.mktemp("chromium-profile")
    return Dom(run_chromium(chromium, profile, "--dump-dom", pages["empty"].as_uri()))


# --------------------------------------------------------------------------
# The rendered page
# --------------------------------------------------------------------------


def test_page_has_title_as_of_and_every_chart_as_svg(dom: Dom) -> None:
    assert "<title>latecomer: lateness, completeness and restatements</title>" in dom.source
    assert dom.texts["as-of"] == "2024-01-21 00:00 UTC"
    for key in CHART_KEYS:
        assert f"chart-{key}" in dom.figure_ids, f"no figure for {key}"
        assert "svg" in dom.figure_tags[f"chart-{key}"], f"{key}: no inline SVG"
        assert f"table-{key}" in dom.tables, f"{key}: no table"
        assert "no data yet" not in dom.figure_text[f"chart-{key}"]


def test_element_ids_are_unique_across_the_charts(dom: Dom) -> None:
    duplicates = sorted({i for i in dom.ids if dom.ids.count(i) > 1})
    assert not duplicates, duplicates[:10]


def test_one_series_per_source(dom: Dom) -> None:
    cdf = dom.figure_ids["chart-lateness-cdf"]
    assert sorted(i for i in cdf if re.fullmatch(r"lateness-cdf-(web|mobile|partner)", i)) == [
        f"lateness-cdf-{s}" for s in SOURCES
    ]
    backtest = set(dom.figure_ids["chart-completeness-backtest"])
    for metric in ("net_revenue", "orders"):
        for source in ("web", "partner"):
            for series in ("estimated", "actual", "error"):
                assert f"completeness-backtest-{metric}-{source}-{series}" in backtest
    assert not any("-mobile-" in i for i in backtest)
    restatements = set(dom.figure_ids["chart-restatements"])
    assert {"restatements-web-late_arrival", "restatements-web-correction", "restatements-partner-deletion"} <= (
        restatements
    )
    live = set(dom.figure_ids["chart-live-vs-final"])
    assert {"live-vs-final-first", "live-vs-final-current"} <= live
    assert {f"live-vs-final-delta-2024-01-0{d}" for d in (1, 2, 3)} <= live
    quarantine = dom.figure_ids["chart-quarantine"]
    for source in SOURCES:
        assert any(i.startswith(f"quarantine-{source}-") for i in quarantine), source
    assert "quarantine-partner-beyond_watermark-rejected" in quarantine


def share(count: int, total: int) -> str:
    return f"{100 * count / total:.1f}%"


def test_lateness_table_shows_the_cdf_shares(dom: Dom) -> None:
    header, rows = dom.table("lateness-cdf")
    assert header[:3] == ["source", "events", "≤ 0"]
    assert header[-1] == "> 720 h"
    assert [row[0] for row in rows] == sorted(LATENESS)
    for source, values in LATENESS.items():
        record = dom.record("lateness-cdf", source)
        assert record["events"] == str(len(values))
        for label, seconds in (("≤ 0", 0), ("≤ 5 min", 300), ("≤ 1 h", 3600), ("≤ 24 h", 86_400)):
            assert record[label] == share(sum(1 for v in values if v <= seconds), len(values)), (source, label)
        assert record["> 720 h"] == share(sum(1 for v in values if v > 720 * 3600), len(values))
    # The same figures by hand, for one source.
    web = dom.record("lateness-cdf", "web")
    assert (web["≤ 5 min"], web["≤ 1 h"], web["≤ 24 h"], web["> 720 h"]) == ("28.6%", "57.1%", "71.4%", "14.3%")


def test_backtest_table(dom: Dom) -> None:
    record = dom.record("completeness-backtest", "partner", "orders", "12")
    assert record["partitions"] == "7"
    assert record["estimated"] == "62.0%"
    assert record["actual"] == "60.0%"
    assert record["mean abs. rel. error"] == f"{100 * 0.2 / 13:.1f}%"
    _, rows = dom.table("completeness-backtest")
    assert len(rows) == 2 * 2 * 3


def test_restatement_table_shows_when_what_and_by_how_much(dom: Dom) -> None:
    _, rows = dom.table("restatements")
    assert [row[0] for row in rows] == ["2024-01-03 06:00 UTC", "2024-01-04 06:00 UTC", "2024-01-04 06:00 UTC"]
    late = dom.record("restatements", "2024-01-03 06:00 UTC", "2024-01-01", "web")
    assert (late["reason"], late["net revenue before"], late["after"], late["change"]) == (
        "late_arrival",
        "100.00",
        "112.50",
        "+12.50",
    )
    assert dom.record("restatements", "2024-01-04 06:00 UTC", "2024-01-02", "web")["change"] == "-4.75"
    # Floats are taken at their shortest decimal form, so 20.1 - 30.1 is exactly -10.
    assert dom.record("restatements", "2024-01-04 06:00 UTC", "2024-01-02", "partner")["change"] == "-10.00"


def test_live_vs_final_table_shows_then_now_and_the_change(dom: Dom) -> None:
    for day in ("2024-01-01", "2024-01-02", "2024-01-03"):
        first = sum(v for (d, _), v in FIRST.items() if d == day)
        now = sum(v for (d, _), v in NOW.items() if d == day)
        record = dom.record("live-vs-final", day)
        assert record["first published"] == f"{first:,.2f}"
        assert record["now"] == f"{now:,.2f}"
        assert record["change"] == f"{now - first:+,.2f}"
    assert dom.record("live-vs-final", "2024-01-01")["change"] == "+12.50"
    assert dom.record("live-vs-final", "2024-01-02")["change"] == "-4.75"
    assert dom.record("live-vs-final", "2024-01-03")["change"] == "+0.00"


def test_quarantine_table_counts_by_source_reason_and_status(dom: Dom) -> None:
    header, rows = dom.table("quarantine")
    assert header == ["source", "reason", "quarantined", "released", "rejected", "total"]
    partner = dom.record("quarantine", "partner", "beyond_watermark")
    assert (partner["quarantined"], partner["released"], partner["rejected"], partner["total"]) == ("4", "0", "1", "5")
    web = dom.record("quarantine", "web", "malformed: invalid_json")
    assert (web["quarantined"], web["total"]) == ("3", "3")
    assert len(rows) == 4


def test_holds_table_lists_open_holds_first_with_what_decides_them(dom: Dom) -> None:
    header, rows = dom.table("holds")
    assert header == ["hold", "partition", "sources", "state", "checks", "first held", "last judged", "detail"]
    assert [row[:4] for row in rows] == [["a1", "2024-01-12", "web", "open"], ["c3", "2024-01-05", "web", "approved"]]
    assert dom.record("holds", "a1")["detail"] == "orders grow from 14 to 28 (+100.0%)"
    assert dom.record("holds", "c3")["detail"] == "promo <b>day</b>"  # text, escaped, never markup
    assert dom.record("holds", "a1")["first held"] == "2024-01-19 06:00 UTC"


def test_empty_datasets_say_no_data_yet(empty_dom: Dom) -> None:
    assert empty_dom.texts["as-of"] == "no gold build yet"
    for key in CHART_KEYS:
        assert "no data yet" in empty_dom.figure_text[f"chart-{key}"], key
        assert "svg" not in empty_dom.figure_tags[f"chart-{key}"], key


def test_screenshot_is_not_blank(chromium: str, pages: dict[str, Path], tmp_path: Path) -> None:
    shot = tmp_path / "report.png"
    run_chromium(
        chromium, tmp_path / "profile", f"--screenshot={shot}", "--window-size=1200,3000", pages["full"].as_uri()
    )
    pixels = image.imread(shot)
    assert pixels.shape[:2] == (3000, 1200)
    non_white = (pixels[:, :, :3] < 0.9).any(axis=2).mean()
    # Charts, lines and text cover far more than a blank or error page would.
    assert non_white > 0.03, f"only {non_white:.2%} of the screenshot is not white"


# --------------------------------------------------------------------------
# Without a browser
# --------------------------------------------------------------------------


def test_page_needs_no_network(pages: dict[str, Path]) -> None:
    text = pages["full"].read_text(encoding="utf-8")
    assert "<script" not in text and "<link" not in text and "@import" not in text
    assert not re.search(r"\b(src|href)=\"(?!#)", text), "a resource outside the page"
    assert not re.search(r"url\((?!#)", text)


def test_svg_references_resolve_inside_their_chart(pages: dict[str, Path]) -> None:
    text = pages["full"].read_text(encoding="utf-8")
    for svg in re.findall(r"<svg .*?</svg>", text, flags=re.S):
        ids = set(re.findall(r'\bid="([^"]+)"', svg))
        references = set(re.findall(r'(?:url\(#|href="#)([^")]+)', svg))
        assert references <= ids, references - ids


def test_summaries_one_line_per_chart() -> None:
    summaries = {chart.key: chart.summary for chart in report_page.build_charts(full_data())}
    assert list(summaries) == [*CHART_KEYS, "holds"]
    assert summaries["holds"] == "1 open hold(s), 1 closed; decide with python -m python_jobs.landing.steward holds"
    assert summaries["lateness-cdf"].startswith("3 source(s), 16 events")
    assert summaries["restatements"] == "3 restated row(s) in 2 run(s), 2 partition(s); net revenue -2.25"
    assert summaries["live-vs-final"].startswith("3 event date(s), 2 moved")
    assert summaries["quarantine"] == "11 row(s): 7 quarantined, 2 released, 2 rejected"
    empty = report_page.build_charts(ReportData())
    assert {chart.summary for chart in empty} == {"no data yet"}


def test_threshold_grid_and_labels() -> None:
    assert LATENESS_THRESHOLDS_SECONDS[0] == 0
    assert list(LATENESS_THRESHOLDS_SECONDS) == sorted(set(LATENESS_THRESHOLDS_SECONDS))
    labels = [report_drawing.threshold_label(s) for s in LATENESS_THRESHOLDS_SECONDS]
    assert labels[:5] == ["0", "5 min", "15 min", "30 min", "1 h"]
    assert labels[-1] == "720 h"


def test_lateness_rows_from_sparks_wide_rows() -> None:
    wide = {"source_system": "web", "events": 4}
    wide.update({f"within_{s}": (1 if s < 3600 else 3 if s < 86_400 else 4) for s in LATENESS_THRESHOLDS_SECONDS})
    wide["within_0"] = None  # count_if over no rows of a group cannot be null, but be safe
    rows = report_queries.lateness_rows([wide])
    assert len(rows) == len(LATENESS_THRESHOLDS_SECONDS)
    assert rows[0] == {"source_system": "web", "threshold_seconds": 0, "arrived_within": 0, "events": 4}
    assert {r["threshold_seconds"]: r["arrived_within"] for r in rows}[3600] == 3
    assert report_queries.lateness_rows([]) == []


def test_lateness_sql_counts_every_threshold_over_parsed_rows() -> None:
    sql = report_queries.lateness_sql("demo")
    assert "from demo_silver.silver_event_arrivals" in sql
    assert "where parse_error is null" in sql
    for seconds in LATENESS_THRESHOLDS_SECONDS:
        assert f"count_if(lateness_seconds <= {seconds}) as within_{seconds}" in sql


def test_manifest_sql_reads_the_keys_the_manifest_writes() -> None:
    """row_key holds the model's unique key, before/after_values its other non-publication columns."""
    model = (ROOT / "models" / "gold" / "gold_daily_revenue.sql").read_text()
    macro = (ROOT / PLATFORM / "publication" / "change_manifest.sql").read_text()
    assert re.search(r"unique_key=\[[^]]*'source_system'", model)
    # Its measures (revenue_measure_names, the same list: test_macro_lists.py) include net revenue.
    assert "revenue_measure_names())" in model and "net_revenue" in REVENUE_MEASURES
    assert "{{ latecomer__json_of('after_rows', keys) }} as row_key" in macro
    assert "'net_revenue'" not in macro.split("macro latecomer__publication_columns")[1].split("endmacro")[0]
    for sql in (report_queries.restatements_sql("demo"), report_queries.live_vs_final_sql("demo")):
        assert "demo_audit.gold_change_manifest" in sql
        assert "model = 'gold_daily_revenue'" in sql
        assert "'$.net_revenue'" in sql
    assert "get_json_object(row_key, '$.source_system')" in report_queries.restatements_sql("demo")
    assert "change = 'restated'" in report_queries.restatements_sql("demo")
    assert "limit 500" in report_queries.restatements_sql("demo")
    assert "from demo_gold.gold_daily_revenue" in report_queries.live_vs_final_sql("demo")


def test_targets_and_schemas(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LATECOMER_SCHEMA", raising=False)
    assert report.default_schema("local") == "latecomer"
    assert report.default_schema("delta") == "latecomer_delta"
    monkeypatch.setenv("LATECOMER_SCHEMA", "other")
    assert report.default_schema("local") == "other"
    with pytest.raises(SparkConfigError, match="session targets"):
        report.session_for("thrift")
    monkeypatch.delenv("LATECOMER_SPARK_MASTER", raising=False)
    with pytest.raises(SparkConfigError, match="LATECOMER_SPARK_MASTER"):
        report.session_for("cluster")
