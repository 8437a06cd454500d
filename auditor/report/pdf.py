"""report.pdf from the same HTML as report.html: WeasyPrint, PDF/A-3b, evidence.json attached, shipped fonts.

Deterministic: same HTML + same attachment + same date ⇒ same bytes. The date comes from one fixed source
(`SOURCE_DATE_EPOCH` when set, else the audit's evaluation day at 00:00 UTC), never from the clock; the file
identifier is a hash of the content. Nothing is fetched from the network or from outside the templates folder:
`TemplateFetcher` serves files under `report_templates/` (print.css, fonts) and `data:` URLs, and refuses the rest.
"""

from __future__ import annotations

import datetime as dt
import os
import re
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from auditor.core.display import TITLE_CHARS, shown
from auditor.report.render import templates_dir

PDF_VARIANT = "pdf/a-3a"  # tagged (structure for screen readers), with evidence.json attached
PRINT_CSS = "print.css"


class RefusedURL(ValueError):
    """A resource outside the templates folder was asked for (WeasyPrint logs it and leaves it out)."""


def _fetcher_base() -> type:
    from weasyprint import URLFetcher

    return URLFetcher


def template_fetcher(root: Path | None = None) -> Any:
    """A WeasyPrint URL fetcher that serves only files under `root` (default: the templates folder)."""
    base = _fetcher_base()
    folder = (root or templates_dir()).resolve()

    class TemplateFetcher(base):  # type: ignore[misc, valid-type]
        def __init__(self) -> None:
            super().__init__(allowed_protocols={"file", "data"}, allow_redirects=False, timeout=1)
            self.root = folder

        def fetch(self, url: str, headers: Any = None) -> Any:
            parts = urlsplit(url)
            scheme = parts.scheme.lower()
            if scheme == "data":
                return super().fetch(url, headers)
            if scheme != "file" or parts.netloc not in ("", "localhost"):
                raise RefusedURL(f"refused (only files under the templates folder are served): {url}")
            path = Path(unquote(parts.path)).resolve()
            if not path.is_relative_to(self.root) or not path.is_file():
                raise RefusedURL(f"refused (outside the templates folder or missing): {url}")
            from weasyprint.urls import URLFetcherResponse

            return URLFetcherResponse(path.as_uri(), path.read_bytes(), status=200)

    return TemplateFetcher()


def fixed_date(evaluated_on: str | None) -> dt.datetime:
    """The one date written into the PDF: SOURCE_DATE_EPOCH if set, else the evaluation day at 00:00 UTC."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if epoch and epoch.strip().isdigit():
        return dt.datetime.fromtimestamp(int(epoch), dt.UTC)
    if evaluated_on:
        day = dt.date.fromisoformat(evaluated_on[:10])
        return dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC)
    return dt.datetime(1980, 1, 1, tzinfo=dt.UTC)


# a key figure's threshold reason on page 2, between these comments (which do not touch the layout), is left out of
# the PDF when page 2 would not fit on one page otherwise; escaped text cannot hold a comment
SUMMARY_REASON = re.compile(r"<!--why(?: met)?-->.*?<!--/why-->", re.S)
# first those of requirements met: a reader needs the reason most where a figure fails or warns (a reader review's
# judged own-products figure, with its reason, would otherwise have taken every reason off the demo's page 2)
MET_REASON = re.compile(r"<!--why met-->.*?<!--/why-->", re.S)
SUMMARY_PAGE = 1  # the page index of the executive summary; Findings open the next page


def _summary_overflows(document: Any) -> bool:
    """The executive summary runs past its page: the Findings section, which opens the page after it, starts later."""
    for index, page in enumerate(document.pages):
        if "findings" in page.anchors:
            return index > SUMMARY_PAGE + 1
    return False


def laid_out(html: str, *, base_url: str, fetcher: Any, stylesheet: Any) -> Any:
    """WeasyPrint's document of the report as the PDF prints it (`fitted`). The print-quality tests read this
    layout, so they see the pages the PDF has."""
    from weasyprint import HTML

    def layout(text: str) -> Any:
        return HTML(string=text, base_url=base_url, url_fetcher=fetcher).render(stylesheets=[stylesheet])

    return layout(fitted(html, layout))


def fitted(html: str, layout: Any) -> str:
    """The report with page 2 on one page: the key figures' threshold reasons left out where it would not fit
    otherwise (those of requirements met first). Whether it fits is tried on the pages up to the Findings alone, so
    the whole report is laid out once (a 40-page report took three whole layouts, 20 s)."""
    trial = _up_to_findings(html)
    for drop in (MET_REASON, SUMMARY_REASON):  # page 2 decides, on one page (issue 36)
        if not drop.search(html):
            continue
        if not _summary_overflows(layout(trial if trial is not None else html)):
            break
        html = drop.sub("", html)
        trial = None if trial is None else drop.sub("", trial)
    return html


def _up_to_findings(html: str) -> str | None:
    """The report up to where Findings open, then an empty Findings section: the same first pages, laid out in a
    fraction of the time; None when the report (an organisation's template) has no Findings section."""
    at = html.find(FINDINGS_OPEN)
    if at < 0:
        return None
    # the contents' page numbers point past the Findings: empty targets there keep WeasyPrint from complaining
    # (the numbers differ, not the lines they sit on)
    targets = "".join(f'<span id="{name}"></span>' for name in dict.fromkeys(re.findall(r'href="#([^"]+)"', html[:at]))
                      if f'id="{name}"' not in html[:at])
    return html[:at] + FINDINGS_OPEN + f"><h2>Findings</h2>{targets}</section></body></html>"


FINDINGS_OPEN = '<section id="findings"'  # escaped untrusted text cannot hold it


def render_pdf(html: str, *, attachment: bytes | None, date: dt.datetime, attachment_name: str = "evidence.json",
               title: str | None = None) -> bytes:
    """The PDF/A-3b bytes of `html`, with `attachment` embedded as `evidence.json` (AFRelationship Data); None:
    nothing attached."""
    import logging

    from weasyprint import CSS, Attachment

    folder = templates_dir()
    fetcher = template_fetcher(folder)
    base_url = folder.resolve().as_uri() + "/"
    stylesheet = CSS(filename=str(folder / PRINT_CSS), url_fetcher=fetcher, base_url=base_url)
    naive = date.astimezone(dt.UTC).replace(tzinfo=None)  # WeasyPrint writes attachment dates as UTC ("Z")
    attached = [] if attachment is None else [Attachment(
        string=attachment, name=attachment_name, base_url=base_url, url_fetcher=fetcher,
        description="Evidence document: every figure of this report, as data", created=naive, modified=naive,
        relationship="Data")]
    logger = logging.getLogger("weasyprint")
    level = logger.level
    logger.setLevel(max(level, logging.ERROR))  # refused URLs and CSS it does not know are not the user's problem
    # fontTools stamps the font subsets with "now" unless SOURCE_DATE_EPOCH is set: pin it to the fixed date.
    saved = os.environ.get("SOURCE_DATE_EPOCH")
    os.environ["SOURCE_DATE_EPOCH"] = str(int(date.timestamp()))
    try:
        document = laid_out(html, base_url=base_url, fetcher=fetcher, stylesheet=stylesheet)
        stamp = date.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        document.metadata.created = stamp
        document.metadata.modified = stamp
        if title:  # a viewer shows it in its title bar: no bidi override, no megabyte of text
            document.metadata.title = shown(title, limit=TITLE_CHARS)
        document.metadata.generator = "auditor"
        return document.write_pdf(pdf_variant=PDF_VARIANT, pdf_tags=True, attachments=attached)
    finally:
        logger.setLevel(level)
        if saved is None:
            os.environ.pop("SOURCE_DATE_EPOCH", None)
        else:
            os.environ["SOURCE_DATE_EPOCH"] = saved
