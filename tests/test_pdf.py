"""report.pdf: PDF/A-3a with evidence.json attached, shipped fonts embedded, restricted URL fetcher."""

from __future__ import annotations

import datetime as dt
import json
from io import BytesIO
from pathlib import Path

import pytest

from auditor.report.pdf import RefusedURL, render_pdf, template_fetcher
from auditor.report.render import templates_dir


def _reader(data: bytes):
    from pyhanko.pdf_utils.reader import PdfFileReader

    return PdfFileReader(BytesIO(data), strict=False)


def _embedded_files(data: bytes) -> dict[str, tuple[str, bytes]]:
    """name -> (AFRelationship, content) of the document-level attachments."""
    root = _reader(data).root
    names = root["/Names"]["/EmbeddedFiles"]["/Names"]
    out = {}
    for i in range(0, len(names), 2):
        spec = names[i + 1].get_object()
        out[str(names[i])] = (str(spec.get("/AFRelationship")), spec["/EF"]["/F"].get_object().data)
    return out


def _fonts(data: bytes) -> dict[str, bool]:
    """base font name -> whether its font program is embedded, over every page."""
    out = {}
    for page in _reader(data).root["/Pages"]["/Kids"]:
        resources = page.get_object()["/Resources"].get_object()
        fonts = resources["/Font"].get_object() if "/Font" in resources else {}
        for font in fonts.values():
            font = font.get_object()
            descendant = font["/DescendantFonts"][0].get_object() if "/DescendantFonts" in font else font
            descriptor = descendant["/FontDescriptor"].get_object()
            out[str(font["/BaseFont"])] = any(k in descriptor for k in ("/FontFile", "/FontFile2", "/FontFile3"))
    return out


def test_pdf_is_pdfa3a_with_evidence_attached(demo: Path, tmp_path: Path) -> None:
    """The demo's full audit (every evidence kind). That the same evidence gives the same bytes is checked by
    tests/test_render.py (the run's report.html and report.pdf rendered again); that the same spec and seed give the
    same evidence, by tests/test_evidence_golden.py (every kind, against the pinned digest)."""
    pdf = (demo / "report.pdf").read_bytes()
    stored = json.loads((demo / "evidence.json").read_text())
    assert pdf.startswith(b"%PDF-1.7\n")  # not 2.0: PDF/A-3 is based on PDF 1.7
    root = _reader(pdf).root
    xmp = root["/Metadata"].get_object().data.decode("utf-8")
    assert 'pdfaid:part="3"' in xmp and 'pdfaid:conformance="A"' in xmp  # PDF/A-3a: tagged
    assert "/StructTreeRoot" in root and root["/MarkInfo"]["/Marked"] and root["/Lang"] == "en"
    day = stored["run"]["evaluated_on"]
    assert f"{day}T00:00:00" in xmp  # dates from the evaluation day, not the clock
    started = stored["run"]["started_at"][:19]  # the clock's time of day is nowhere (unless it was midnight)
    assert started not in xmp or started.endswith("00:00:00")
    assert len({ref.idnum for ref in root["/AF"]}) == 1 and "/OutputIntents" in root  # WeasyPrint lists it twice
    files = _embedded_files(pdf)
    relationship, content = files["evidence.json"]
    assert relationship == "/Data"
    attached = json.loads(content)
    assert attached["run"]["evaluated_on"] == day and "started_at" not in attached["run"]
    assert {k: v for k, v in attached.items() if k != "run"} == {k: v for k, v in stored.items() if k != "run"}
    fonts = _fonts(pdf)
    assert fonts and all(fonts.values()), fonts
    assert any("DejaVu-Sans" in name for name in fonts)
    html = (demo / "report.html").read_text()
    assert stored["run"]["started_at"] not in html  # no wall-clock time in the rendered body
    (tmp_path / "report.pdf").write_bytes(pdf)  # the demo's folder is shared: the page images go here
    check_pages_visually(tmp_path / "report.pdf", title=stored["audit"]["title"])


def check_pages_visually(pdf: Path, *, title: str) -> None:
    """Render every page with poppler (pdftoppm) and read the text back (pdftotext): no blank page, the content
    is there as text (not only as shapes), and the page count in the footer matches."""
    import shutil
    import subprocess

    from PIL import Image, ImageStat

    if not (shutil.which("pdftoppm") and shutil.which("pdftotext")):
        pytest.skip("poppler-utils (pdftoppm, pdftotext) not installed; .ci/run installs them")
    out = pdf.parent / "pages"
    out.mkdir()
    subprocess.run(["pdftoppm", "-r", "30", "-png", str(pdf), str(out / "page")], check=True)
    pages = sorted(out.glob("page-*.png"))
    assert len(pages) >= 5
    for page in pages:
        grey = Image.open(page).convert("L")
        # some ink besides the running header on every page (muted grey text renders near 130-170 at 30 dpi)
        assert ImageStat.Stat(grey.crop((0, grey.height // 12, grey.width, grey.height * 11 // 12))).extrema[0][0] \
            < 200, f"{page.name} is blank"
    text = subprocess.run(["pdftotext", "-layout", str(pdf), "-"], check=True, capture_output=True,
                          text=True).stdout
    for needle in (title, "Executive summary", "Ranking quality", "Limitations", f"Page 1 of {len(pages)}"):
        assert needle in text, needle
    # an unsigned report can never be approved: every page says it is a draft (issue 57, item 4)
    assert text.count("Draft — not signed, so no approval can be recorded in it") == len(pages), text[:2000]


def test_fetcher_serves_templates_only(tmp_path: Path) -> None:
    fetcher = template_fetcher()
    css = (templates_dir() / "print.css").resolve()
    response = fetcher.fetch(css.as_uri())
    assert b"@font-face" in response.read()
    response.close()
    assert fetcher.fetch((templates_dir() / "fonts" / "DejaVuSans.ttf").resolve().as_uri()).read(4) == \
        b"\x00\x01\x00\x00"
    outside = tmp_path / "secret.txt"
    outside.write_text("secret")
    refused = ["https://example.com/tracker.png", "http://127.0.0.1/x.css", "ftp://example.com/f",
               outside.as_uri(), "file:///etc/passwd", (templates_dir() / ".." / "pyproject.toml").as_uri(),
               (templates_dir() / "fonts" / "missing.ttf").as_uri(), "file://evil.example/share/x.css"]
    for url in refused:
        with pytest.raises(RefusedURL):
            fetcher.fetch(url)


def test_external_resources_are_not_fetched(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    def no_network(*args: object, **kwargs: object) -> None:
        raise AssertionError("network access during PDF rendering")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    secret = tmp_path / "secret.png"
    secret.write_bytes(b"not an image")
    html = (f'<html><head><link rel="stylesheet" href="https://example.com/x.css"></head><body><h1>T</h1>'
            f'<img src="https://example.com/a.png"><img src="{secret.as_uri()}"><p>text</p></body></html>')
    date = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    pdf = render_pdf(html, attachment=b"{}\n", date=date)
    assert pdf.startswith(b"%PDF-1.7") and b"not an image" not in pdf
    assert render_pdf(html, attachment=b"{}\n", date=date) == pdf


def test_page_two_leaves_out_the_thresholds_reasons_only_when_it_would_not_fit_otherwise(tmp_path: Path) -> None:
    """Issue 36's promise, page 2 decides on one page, on the widest reports too: when the summary runs past its
    page, the key figures' threshold reasons (between `<!--why-->` marks) are left out of the PDF and Findings open
    page 3; a summary that fits keeps them."""
    import shutil
    import subprocess

    if not shutil.which("pdftotext"):
        pytest.skip("poppler-utils (pdftotext) not installed; .ci/run installs them")

    def pdf_text(rows: int) -> list[str]:
        figures = "".join(f"<tr><td>figure {i}</td><td>1 = ideal. Required: FAIL if &lt; 0.4<!--why--> — "
                          f"REASON{i} {'a long reason why the threshold sits there ' * 4}<!--/why--></td></tr>"
                          for i in range(rows))
        html = (f"<html><head><style>#summary, #findings {{ break-before: page; }}</style></head>"
                f"<body><section id=\"cover\"><h1>Cover</h1></section><section id=\"summary\" "
                f"class=\"one-page\"><h2>Executive summary</h2><table>{figures}</table></section>"
                "<section id=\"findings\"><h2>Findings</h2></section></body></html>")
        path = tmp_path / f"{rows}.pdf"
        path.write_bytes(render_pdf(html, attachment=None, date=dt.datetime(2026, 1, 1, tzinfo=dt.UTC)))
        text = subprocess.run(["pdftotext", "-layout", str(path), "-"], check=True, capture_output=True,
                              text=True).stdout
        return text.split("\f")

    roomy = pdf_text(4)
    assert "REASON3" in roomy[1] and roomy[2].strip().startswith("Findings")
    crowded = pdf_text(16)  # with its reasons page 2 would run onto page 3
    assert "REASON" not in "".join(crowded) and "figure 15" in crowded[1], crowded[1][-300:]
    assert crowded[2].strip().startswith("Findings")


def test_a_crowded_page_two_leaves_out_the_reasons_of_requirements_met_first(tmp_path: Path) -> None:
    """Reader review D5: the judged own-products figure's reason made the demo's page 2 drop every reason; the
    reasons of requirements met go first, so a warning's reason stays."""
    import shutil
    import subprocess

    if not shutil.which("pdftotext"):
        pytest.skip("poppler-utils (pdftotext) not installed; .ci/run installs them")
    figures = "".join(f"<tr><td>figure {i}</td><td>1 = ideal. Required: FAIL if &lt; 0.4 (here: met)<!--why met--> — "
                      f"REASON{i} {'a long reason why the threshold sits there ' * 4}<!--/why--></td></tr>"
                      for i in range(16))
    figures += ("<tr><td>warned</td><td>Compared with: WARN if &gt; 0.1 (here: warning)<!--why--> — WARNREASON"
                "<!--/why--></td></tr>")
    html = (f"<html><head><style>#summary, #findings {{ break-before: page; }}</style></head>"
            f"<body><section id=\"cover\"><h1>Cover</h1></section><section id=\"summary\" "
            f"class=\"one-page\"><h2>Executive summary</h2><table>{figures}</table></section>"
            "<section id=\"findings\"><h2>Findings</h2></section></body></html>")
    path = tmp_path / "met.pdf"
    path.write_bytes(render_pdf(html, attachment=None, date=dt.datetime(2026, 1, 1, tzinfo=dt.UTC)))
    pages = subprocess.run(["pdftotext", "-layout", str(path), "-"], check=True, capture_output=True,
                           text=True).stdout.split("\f")
    assert "WARNREASON" in pages[1] and "REASON0" not in pages[1] and pages[2].strip().startswith("Findings")
