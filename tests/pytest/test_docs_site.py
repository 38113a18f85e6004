"""The documentation site (docs/, mkdocs.yml) as a reader gets it, without Spark.

The site is built here as ``make docs-site`` builds it (MkDocs, ``--strict``),
into a folder of the test's own. The built pages are then read with Python's
HTML parser, not with MkDocs: every link and every resource of every page
must name a file of the built site, and every fragment an element id of the
page it points into. Then headless Chromium (Debian's ``chromium``, installed
by ``make system``; the report's test drives it the same way) loads the
index and a page two levels down the navigation: the DOM it dumps must hold
the page's title and heading as mkdocs.yml and the Markdown give them, the
navigation in mkdocs.yml's order, and as many table rows as the Markdown
has, dressed by the theme's script (so the scripts load from the files).
Without Chromium those two skip, except under CI, where they fail.
"""

from __future__ import annotations

import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
import yaml

from tests.pytest.browser import require_chromium, run_chromium

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
CONFIG = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
# The index, and a page under a section of the navigation, with a table.
PAGES_IN_CHROMIUM = ("index.md", "publication-gate.md")
VOID_ELEMENTS = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


def nav_entries(entries: list[dict[str, str | list]]) -> list[tuple[str, str | None]]:
    """mkdocs.yml's navigation in reading order: (title, page), a section's page None."""
    flat: list[tuple[str, str | None]] = []
    for entry in entries:
        ((title, target),) = entry.items()
        if isinstance(target, list):
            flat.append((title, None))
            flat.extend(nav_entries(target))
        else:
            flat.append((title, target))
    return flat


NAV = nav_entries(CONFIG["nav"])


class Page(HTMLParser):
    """What the tests read of one HTML page: its ids and links, and what a reader sees."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.links: list[str] = []  # href of <a>
        self.resources: list[str] = []  # what the page loads: src, and href of <link>
        self.title = ""
        self.headings: list[str] = []  # <h1> of the page's content
        self.nav: list[str] = []  # the main navigation's entries
        self.rows = 0  # <tr> of the page's content
        self.table_classes: list[str] = []
        self._open: list[tuple[str, dict[str, str]]] = []
        # The element whose text is being collected: (kind, its depth in _open), and the text.
        self._collecting: tuple[str, int] | None = None
        self._text: list[str] = []
        self.feed(text)
        self.close()

    def _inside(self, role: str) -> bool:
        classes = [attrs.get("class", "").split() for _, attrs in self._open]
        if role == "main":
            return any(attrs.get("role") == "main" for _, attrs in self._open)
        # The main navigation; the navbar's other list (search, previous, next) is ms-md-auto.
        return any("navbar-nav" in c and "ms-md-auto" not in c for c in classes)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = {name: value or "" for name, value in attrs}
        if attributes.get("id"):
            self.ids.add(attributes["id"])
        if "src" in attributes:
            self.resources.append(attributes["src"])
        if "href" in attributes:
            (self.resources if tag == "link" else self.links).append(attributes["href"])
        kind = None
        if tag == "title":
            kind = "title"
        elif tag == "h1" and self._inside("main"):
            kind = "heading"
        elif tag == "a" and self._inside("nav"):
            classes = attributes.get("class", "").split()
            kind = "nav" if "nav-link" in classes or "dropdown-item" in classes else None
        elif tag == "tr" and self._inside("main"):
            self.rows += 1
        elif tag == "table" and self._inside("main"):
            self.table_classes.append(attributes.get("class", ""))
        if tag in VOID_ELEMENTS:
            return
        self._open.append((tag, attributes))
        if kind and self._collecting is None:
            self._collecting, self._text = (kind, len(self._open)), []

    def handle_endtag(self, tag: str) -> None:
        if not any(name == tag for name, _ in self._open):
            return
        while self._open:
            if self._collecting and len(self._open) == self._collecting[1]:
                text = " ".join("".join(self._text).split())
                kind = self._collecting[0]
                if kind == "title":
                    self.title = text
                else:
                    (self.headings if kind == "heading" else self.nav).append(text)
                self._collecting = None
            if self._open.pop()[0] == tag:
                break

    def handle_data(self, data: str) -> None:
        if self._collecting:
            self._text.append(data)


def markdown_table_rows(text: str) -> int:
    """Rows of the Markdown tables (header rows included, separator rows not)."""
    lines = [line.strip() for line in text.splitlines()]
    rows = [line for line in lines if line.startswith("|")]
    return sum(1 for line in rows if not re.fullmatch(r"\|(\s*:?-+:?\s*\|)+", line))


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("site")
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", "mkdocs.yml", "--site-dir", folder]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, f"mkdocs build --strict failed:\n{result.stdout}{result.stderr}"
    return folder


@pytest.fixture(scope="module")
def pages(site: Path) -> dict[Path, Page]:
    return {path.resolve(): Page(path.read_text(encoding="utf-8")) for path in sorted(site.rglob("*.html"))}


def target(site: Path, page: Path, reference: str) -> tuple[Path, str] | None:
    """The file and fragment a reference of ``page`` names; None for another site's."""
    parts = urlsplit(reference)
    if parts.scheme or parts.netloc:
        return None
    if not parts.path:
        path = page
    elif parts.path.startswith("/"):  # 404.html, served for any path, names files from the root
        path = site / unquote(parts.path.lstrip("/"))
    else:
        path = page.parent / unquote(parts.path)
    return path.resolve(), parts.fragment


def test_every_markdown_page_is_built_and_in_the_nav(site: Path) -> None:
    sources = sorted(path.relative_to(DOCS).as_posix() for path in DOCS.rglob("*.md"))
    assert sorted(page for _, page in NAV if page) == sources
    for source in sources:
        assert (site / source).with_suffix(".html").is_file(), source


def test_every_link_and_anchor_in_the_built_site_resolves(site: Path, pages: dict[Path, Page]) -> None:
    root = site.resolve()
    broken, checked = [], 0
    for path, page in pages.items():
        for reference in page.links + page.resources:
            named = target(root, path, reference)
            if named is None:
                continue
            checked += 1
            file, fragment = named
            where = f"{path.relative_to(root)}: {reference}"
            if root not in file.parents or not file.is_file():
                broken.append(f"{where} (no such file)")
            elif fragment and file.suffix == ".html" and fragment not in pages[file].ids:
                broken.append(f"{where} (no element with id {fragment!r})")
    assert not broken, "\n".join(broken)
    # Each page's own links (the navigation alone is some 30 a page) were looked at, not none.
    assert checked > 40 * len(pages)


def test_the_site_loads_nothing_from_the_network(site: Path, pages: dict[Path, Page]) -> None:
    remote = sorted({r for page in pages.values() for r in page.resources if target(site, site, r) is None})
    assert not remote, remote


def test_readme_leads_into_the_site() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 300, "the README is an entrance: the rest goes in docs/"
    # The test command it names is the one CI runs.
    assert re.search(r"^make test\b", (ROOT / ".ci" / "run").read_text(encoding="utf-8"), flags=re.M)
    assert re.search(r"^make test\s+#", readme, flags=re.M)
    links = [link for link in re.findall(r"\]\(([^)\s]+)\)", readme) if not urlsplit(link).scheme]
    into_docs = [link for link in links if link.startswith("docs/")]
    assert len(into_docs) >= len([page for _, page in NAV if page]) - 1
    for link in links:
        assert (ROOT / link.split("#")[0]).is_file(), link


@pytest.fixture(scope="module")
def chromium() -> str:
    return require_chromium("the documentation site's test")


@pytest.mark.parametrize("source", PAGES_IN_CHROMIUM)
def test_page_in_chromium(source: str, chromium: str, site: Path, tmp_path: Path) -> None:
    built = (site / source).with_suffix(".html")
    dom = Page(run_chromium(chromium, tmp_path / "profile", "--dump-dom", built.as_uri()))
    markdown = (DOCS / source).read_text(encoding="utf-8")
    heading = next(line[2:] for line in markdown.splitlines() if line.startswith("# "))
    title = next(title for title, page in NAV if page == source)
    site_name = CONFIG["site_name"]
    assert dom.title == (site_name if source == "index.md" else f"{title} - {site_name}")
    assert dom.headings == [heading.replace("`", "")]
    assert dom.nav == [title for title, _ in NAV]
    assert dom.rows == markdown_table_rows(markdown)
    # The theme's script (js/base.js) styles every table once it has run.
    assert all("table-striped" in classes.split() for classes in dom.table_classes), dom.table_classes
    if source != "index.md":
        assert dom.rows > 0 and dom.table_classes
