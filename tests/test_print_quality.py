"""Print quality as a test (issue 36): the demo's PDF as WeasyPrint lays it out. Figure text is at least 7 pt on
paper, no page is less than a third full unless a section ends there, a table split over pages keeps 3 rows on each
side, a glossary term stays with its definition, the interaction heatmaps' colour scale covers the data or says how
far the documents reach past it, and a 16-line chart repeats no colour.

One demo audit (as tests/test_report_layout.py), rendered again by `auditor render` (issue 52: the same report.html
and report.pdf, byte for byte, the figures drawn again from the stored evidence), and the WeasyPrint layout that
rendering printed (which also shows no box overflows its page and no anchor is missing): the layout's boxes give each
figure's printed width, each page's filled height and each table row's page. The layout is checked against the PDF
itself (same page count, every page's text in it). One layout serves both (~8 s each, before they were two)."""

from __future__ import annotations

import json
import logging
import re
import shutil
import subprocess
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from auditor.evidence import figures
from auditor.report import plots

PX = 0.75  # pt per CSS px
SMALLEST_TEXT = 7.0  # pt, on paper
LEAST_FILL = 1 / 3  # of a page's content height
TABLE_ROWS = 3  # body rows a split table keeps on each side of the break


@pytest.fixture(scope="module")
def rendering(demo: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, Any]:
    """`auditor render` of the demo as HTML and PDF, its figures drawn again: the folder it wrote, what it said, and
    the WeasyPrint document report.pdf was written from (`auditor.report.pdf.laid_out`'s, kept as it returned)."""
    from typer.testing import CliRunner

    from auditor.cli import app
    from auditor.report import pdf
    from auditor.report.plots import forget_drawings

    documents = []

    def kept(*args: Any, **kwargs: Any) -> Any:
        documents.append(laid_out(*args, **kwargs))
        return documents[-1]

    laid_out = pdf.laid_out
    complaints = _Complaints()
    logger = logging.getLogger("weasyprint")
    forget_drawings()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(pdf, "laid_out", kept)
        logger.addHandler(complaints)
        try:
            result = CliRunner().invoke(app, ["render", str(demo), "--out", str(tmp_path_factory.mktemp("render")),
                                              "--format", "html", "--format", "pdf"])
        finally:
            logger.removeHandler(complaints)
    assert result.exit_code == 0, result.output
    (document,) = documents
    document.complaints = complaints.messages  # what WeasyPrint logged as errors while laying it out
    return Path(result.stdout.strip()), result.stderr, document


@pytest.fixture(scope="module")
def layout(demo: Path, rendering: tuple[Path, str, Any]) -> Any:
    """WeasyPrint's document of report.html with the print stylesheet: what report.pdf was written from."""
    document = rendering[2]
    if shutil.which("pdfinfo"):  # the layout is the PDF's: same pages
        info = subprocess.run(["pdfinfo", str(demo / "report.pdf")], check=True, capture_output=True, text=True)
        assert int(re.search(r"Pages:\s+(\d+)", info.stdout).group(1)) == len(document.pages)
    return document


@pytest.mark.slow
def test_a_fresh_run_renders_byte_for_byte(demo: Path, rendering: tuple[Path, str, Any]) -> None:
    """`auditor render` of the demo's full audit (every kind of figure): the same report.html and report.pdf, in a
    new unsigned folder outside the run, the figures drawn again (the same evidence gives the same bytes)."""
    folder, stderr, _ = rendering
    assert folder.name == f"{demo.name}-rendered" and not folder.is_relative_to(demo)
    for name in ("report.html", "report.pdf"):
        assert (folder / name).read_bytes() == (demo / name).read_bytes(), name
    record = json.loads((folder / "rendered.json").read_text())
    assert record["signed"] is False and record["rendered_from"] == demo.name
    assert record["bundle"].startswith("none") and "unsigned run" in stderr
    assert sorted(p.name for p in folder.iterdir()) == ["rendered.json", "report.html", "report.pdf"]
    assert (demo / "report.html").read_text().count("<svg") >= 10  # every kind's figures, drawn from their data


class _Complaints(logging.Handler):
    """WeasyPrint's error messages (a missing anchor, CSS it cannot read) while the fixture lays the report out."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def test_no_box_overflows_the_page_and_no_anchor_is_missing(layout: Any) -> None:
    """WeasyPrint's own layout of the report: nothing logged as an error (a link to a missing anchor), and every
    box ends inside its page's content area."""
    assert not layout.complaints, layout.complaints[:5]
    overflowing = []
    for number, page in enumerate(layout.pages, 1):
        root = page._page_box
        right = root.content_box_x() + root.width
        for box in _boxes(root, margins=True):  # the margin boxes' contents too (the running header, the page number)
            if box is root or type(box).__name__ == "MarginBox" or not hasattr(box, "position_x"):
                continue
            width = box.margin_width() if hasattr(box, "margin_width") else box.width
            if box.position_x + width > right + 0.5:
                overflowing.append((number, getattr(box, "element_tag", type(box).__name__),
                                    round(box.position_x + width - right, 1)))
    assert not overflowing, overflowing[:10]


def _boxes(box: Any, *, margins: bool = False) -> Any:
    """WeasyPrint's box tree under `box`, the page's margin boxes (running header, page number) left out unless
    `margins`."""
    yield box
    for child in getattr(box, "children", None) or []:
        if margins or type(child).__name__ != "MarginBox":
            yield from _boxes(child, margins=margins)


def _text(box: Any) -> str:
    return "".join(getattr(b, "text", "") for b in _boxes(box))[:40]


def _tag(element: Any) -> str:
    return str(getattr(element, "tag", "")).rsplit("}", 1)[-1]


def _classes(element: Any) -> set[str]:
    return set((element.get("class") or "").split()) if element is not None else set()


def _svg_texts(svg: Any) -> list[tuple[float, str]]:
    """(font size in the SVG's user units, text) of every <text> of a matplotlib SVG (`font: 7px 'DejaVu Sans'`)."""
    found = []
    for element in svg.iter():
        if _tag(element) != "text":
            continue
        style = element.get("style") or ""
        size = re.search(r"font(?:-size)?:[^;]*?([\d.]+)px", style)
        assert size, f"a figure text without a font size: {style!r}"
        found.append((float(size.group(1)), "".join(element.itertext()).strip()))
    return found


def printed_figures(document: Any) -> list[tuple[int, float, list[tuple[float, str]]]]:
    """(page, printed scale, texts) of every figure: the scale is the SVG's printed width (its box in the layout)
    over its width in user units (the viewBox, which matplotlib writes in pt), so a text's size on paper is its
    font size × the scale."""
    found = []
    for number, page in enumerate(document.pages, 1):
        for box in _boxes(page._page_box):
            if type(getattr(box, "replacement", None)).__name__ != "SVGImage":
                continue
            svg = box.element
            view = [float(v) for v in svg.get("viewBox").split()]
            found.append((number, box.width * PX / view[2], _svg_texts(svg)))
    return found


@pytest.mark.slow
def test_figure_text_is_at_least_7_pt_on_paper(demo: Path, layout: Any) -> None:
    figures = printed_figures(layout)
    assert len(figures) == (demo / "report.html").read_text().count('<figure class="plot') > 10
    small = [(page, round(size * scale, 2), text) for page, scale, texts in figures for size, text in texts
             if size * scale < SMALLEST_TEXT - 1e-6]
    assert not small, small[:10]
    assert all(scale <= 1 + 1e-6 for _, scale, _ in figures), "a figure printed larger than it was made"


@pytest.mark.slow
def test_no_text_is_under_7_pt_on_paper(layout: Any) -> None:
    """Issue 56 item 9: not only figures — tables of the appendix, the spec as written, hashes, tags and code in
    small print are 7 pt at least (the appendix tables were 6.3 pt, hashes 5.9 pt)."""
    small: dict[tuple[float, str], str] = {}
    for number, page in enumerate(layout.pages, 1):
        for box in _boxes(page._page_box):
            text = getattr(box, "text", None)
            size = box.style["font_size"] * PX
            if text and text.strip() and size < SMALLEST_TEXT - 1e-6:
                small.setdefault((round(size, 2), getattr(box, "element_tag", "")), f"page {number}: {text[:30]!r}")
    assert not small, sorted(small.items())[:10]


@pytest.mark.slow
def test_every_plot_function_sets_its_text_at_print_size() -> None:
    """Without the demo: figures are made at their print size (at most the page's text width) with no text under
    7 pt, whatever the number of rows; and a 16-line chart is two panels of 8 lines, no colour twice in one."""
    from xml.etree import ElementTree

    rng = np.random.default_rng(0)
    names = [f"feature_{i}_with_a_longer_name" for i in range(16)]
    x = rng.normal(size=200)
    heat = [(f"{a} × {b}", figures.HeatAxis(a, rng.normal(size=200)),
             figures.HeatAxis(b, rng.integers(0, 2, 200), True), rng.normal(size=200))
            for a, b in zip(names[:5], names[5:10], strict=True)]
    svgs = {
        "bar_chart": plots.bar_chart(names, np.linspace(1, 0.1, 16), xlabel="share", percent=True),
        "line_chart": plots.line_chart([1, 2, 3, 5, 10], {n: rng.uniform(size=5) for n in names},
                                       xlabel="k", ylabel="validity"),
        "beeswarm": plots.beeswarm(rng.normal(size=(300, 12)), rng.normal(size=(300, 12)), names[:12], xlabel="φ"),
        "waterfall": plots.waterfall(names[:10], rng.normal(size=10), base=0.1, score=0.5, base_label="base",
                                     score_label="score", xlabel="score", positions=rng.normal(size=10),
                                     positions_label="positions"),
        "decision_plot": plots.decision_plot(rng.normal(size=(5, 10)), 0.0, names[:10], names[:5], xlabel="score"),
        "pair_bars": plots.pair_bars([("A above B", names[:6], rng.normal(size=6))] * 3, xlabel="push",
                                     up_label="up", down_label="down"),
        "box_plot": plots.box_plot({n: rng.normal(size=50) for n in names}, ylabel="validity"),
        "step_curves": plots.step_curves([figures.StepPanel.of(n, np.array([-1.0, 0.0, 1.0]), rng.normal(size=4), x)
                                          for n in names[:10]], ylabel="contribution", columns=4),
        "pair_heatmaps": plots.pair_heatmaps(figures.pair_cells(heat), colorbar="pair effect"),
        "scatter": plots.scatter(x, rng.normal(size=200), xlabel="price", ylabel="φ"),
        "histogram": plots.histogram(x, bins=20, xlabel="nDCG@10"),
    }
    for name, svg in svgs.items():
        root = ElementTree.fromstring(svg)
        width = float(root.get("viewBox").split()[2])
        assert width <= plots.PRINT_WIDTH * 72 + 0.5, (name, width / 72)
        sizes = [size for size, _ in _svg_texts(root)]
        assert min(sizes) >= SMALLEST_TEXT, (name, min(sizes))
    lines = re.findall(r'<path d="M [^"]*"[^>]*?style="fill: none; stroke: (#[0-9a-f]{6}); stroke-width: 1\.2',
                       svgs["line_chart"])
    # issue 56 item 9: 16 lines are two panels of 8 (each: its lines, then its legend's samples), no colour twice
    # within a panel
    assert len(re.findall(r'<g id="axes_', svgs["line_chart"])) == 2
    assert len(lines) == 32 and len(set(lines[:8])) == 8 and lines[:8] == lines[8:16] == lines[16:24], lines


def _filled(page: Any) -> float:
    """The share of the page's content height its content fills: down to the lowest line, figure or table row."""
    root = page._page_box
    top, height = root.content_box_y(), root.height
    bottom = top
    for box in _boxes(root):
        if type(box).__name__ in ("LineBox", "InlineReplacedBox", "BlockReplacedBox", "TableRowBox"):
            bottom = max(bottom, box.position_y + box.margin_height())
    return (bottom - top) / height


def _forced_break(box: Any, side: str, first: bool) -> bool:
    """Whether a chain of first (or last) children from `box` has a forced page break on `side`."""
    while box is not None:
        if box.style[f"break_{side}"] in ("page", "left", "right", "recto", "verso"):
            return True
        children = [c for c in getattr(box, "children", None) or [] if type(c).__name__ != "MarginBox"]
        box = (children[0] if first else children[-1]) if children else None
    return False


@pytest.mark.slow
def test_no_page_is_less_than_a_third_full_unless_a_section_ends_there(layout: Any) -> None:
    pages = layout.pages
    fills = [_filled(page) for page in pages]
    short = []
    for index, fill in enumerate(fills):
        if fill >= LEAST_FILL or index == len(pages) - 1:
            continue
        ends = (_forced_break(pages[index]._page_box, "after", first=False)
                or _forced_break(pages[index + 1]._page_box, "before", first=True)
                or pages[index + 1]._page_box.page_type.name != pages[index]._page_box.page_type.name)
        if not ends:
            short.append((index + 1, round(fill, 2)))
    assert not short, f"pages less than a third full mid-section (page, fill): {short}"


@pytest.mark.slow
def test_a_table_split_over_pages_keeps_three_rows_on_each_side(layout: Any) -> None:
    rows: dict[int, dict[int, int]] = defaultdict(lambda: defaultdict(int))  # table → page → body rows
    names: dict[int, str] = {}
    for number, page in enumerate(layout.pages, 1):
        for box in _boxes(page._page_box):
            if type(box).__name__ != "TableBox":
                continue
            for group in box.children:
                if getattr(group, "is_header", False) or getattr(group, "is_footer", False):
                    continue
                for row in getattr(group, "children", None) or []:
                    if type(row).__name__ == "TableRowBox":
                        rows[id(box.element)][number] += 1
            header = [c for c in _boxes(box) if type(c).__name__ == "TableCellBox"][:2]
            names[id(box.element)] = " / ".join(_text(c) for c in header)
    split = {table: dict(pages) for table, pages in rows.items() if len(pages) > 1}
    thin = [(names[table], pages) for table, pages in split.items() if min(pages.values()) < TABLE_ROWS]
    assert not thin, f"tables split with fewer than {TABLE_ROWS} rows on a page (first headers, page → rows): {thin}"


@pytest.mark.slow
def test_a_glossary_term_and_its_definition_share_a_page(layout: Any) -> None:
    """Each <div class="term"> (a <dt> and its <dd>) on one page of the PDF."""
    pages: dict[int, set[int]] = defaultdict(set)
    parents: dict[int, Any] = {}
    for number, page in enumerate(layout.pages, 1):
        for box in _boxes(page._page_box):
            element = getattr(box, "element", None)
            if _tag(element) not in ("dt", "dd"):
                continue
            if not parents:
                root = next(b.element for b in _boxes(layout.pages[0]._page_box) if _tag(b.element) == "html")
                parents.update({id(child): parent for parent in root.iter() for child in parent})
            term = parents.get(id(element))
            if "term" in _classes(term):
                pages[id(term)].add(number)
    assert len(pages) > 20
    assert all(len(p) == 1 for p in pages.values()), [sorted(p) for p in pages.values() if len(p) > 1]


@pytest.mark.slow
def test_the_heatmap_colour_scale_covers_the_cells_or_says_how_far_documents_reach(demo: Path) -> None:
    """The interaction heatmaps share one scale, ±(the largest cell mean): every cell is inside it, and the caption
    says whether single documents reach past it and how far (checked against the scale's end it names)."""
    html = (demo / "report.html").read_text()
    captions = re.findall(r"<figcaption>Interactions[^<]*</figcaption>.*?<p class=\"note\">(.*?)</p>", html, re.S)
    assert captions
    for caption in captions:
        covered = re.search(r"In these panels the shared scale \((\S+) to (\S+)\) covers every document's push",
                            caption)
        wider = re.search(r"The shared scale ends at ±(\S+), the largest cell mean of all pairs; in these panels "
                          r"single documents are pushed from (\S+) to (\S+), the pushes", caption)
        assert covered or wider, caption
        if wider:
            end, low, high = (float(v.replace("\u2212", "-").replace("+", "")) for v in wider.groups())
            assert max(-low, high) > end, caption


def test_a_colour_scale_narrower_than_the_cells_is_marked_as_clipped() -> None:
    """A shared scale (`limit`) that ends inside a panel's cells gets the colour bar's arrow ends: the cells past
    it are clipped, and the bar says so."""
    rng = np.random.default_rng(1)
    panel = [("a × b", figures.HeatAxis("a", rng.normal(size=300)), figures.HeatAxis("b", rng.normal(size=300)),
              rng.normal(size=300))]
    largest = figures.cell_limit(figures.pair_cells(panel))
    assert plots.scale_extend(figures.pair_cells(panel), largest) == "neither"
    assert plots.scale_extend(figures.pair_cells(panel), largest / 2) != "neither"
    cells = figures.pair_cells(panel)
    assert plots.pair_heatmaps(cells, colorbar="x", limit=largest / 2) != plots.pair_heatmaps(cells, colorbar="x")


def test_the_first_pages_alone_lay_out_as_in_the_whole_report(demo: Path, layout: Any) -> None:
    """Whether page 2 fits is decided on the report up to the Findings alone (`pdf._up_to_findings`: one whole
    layout instead of three); those pages must be the whole report's, line for line and box for box."""
    from weasyprint import CSS, HTML

    from auditor.report.pdf import PRINT_CSS, _up_to_findings, fitted, template_fetcher
    from auditor.report.render import templates_dir

    folder = templates_dir()
    fetcher = template_fetcher(folder)
    base = folder.resolve().as_uri() + "/"
    stylesheet = CSS(filename=str(folder / PRINT_CSS), url_fetcher=fetcher, base_url=base)

    def render(text: str) -> Any:
        return HTML(string=text, base_url=base, url_fetcher=fetcher).render(stylesheets=[stylesheet])

    printed = fitted((demo / "report.html").read_text(), render)  # what `layout` laid out whole
    trial = render(_up_to_findings(printed))
    opens = next(i for i, page in enumerate(layout.pages) if "findings" in page.anchors)
    assert "findings" in trial.pages[opens].anchors  # Findings open on the same page

    def lines(page: Any) -> list[float]:  # where each line sits (the contents' page numbers and leaders differ)
        return [round(b.position_y, 2) for b in _boxes(page._page_box) if type(b).__name__ == "LineBox"]

    def boxes(page: Any) -> list[tuple[str, float, float]]:
        return [(_text(b), round(b.position_x, 2), round(b.position_y, 2)) for b in _boxes(page._page_box)]

    assert [lines(page) for page in trial.pages[:opens]] == [lines(page) for page in layout.pages[:opens]]
    assert [boxes(page) for page in trial.pages[1:opens]] == [boxes(page) for page in layout.pages[1:opens]]
