"""`auditor history` (issue 34, item 4): the register as a static site for the board — a portfolio page and a page
per system with its reviews, approvals, trends and findings log. One light audit of the bookstore example runs
once; the three reviews of the register are copies of its evidence.json with other days, opinions, numbers and
findings, recorded with `Register.record` (no further audits)."""

from __future__ import annotations

import copy
import datetime as dt
import json
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest
import yaml
from typer.testing import CliRunner

from auditor.cli import app
from auditor.core.errors import InputError
from auditor.core.files import sha256_file
from auditor.register.store import Register
from auditor.report.browser import Chromium, file_url, find_chromium
from auditor.report.history import pages, write_site
from auditor.report.render import CONTENT_POLICY
from auditor.run.engine import run_audit
from tests.conftest import BOOKSTORE, copy_bookstore, settled

SYSTEM = "catalogue-ranker"
HOSTILE = "<script>alert(1)</script>\u202eresu"  # a system name that tries markup and reverses the text after it
TODAY = dt.date(2026, 9, 1)
DAYS = ["2026-02-10", "2026-05-12", "2026-08-20"]
NDCG = [(0.7412, 0.7101, 0.7705), (0.7853, 0.7590, 0.8110), (0.8175, 0.7892, 0.8447)]
OPINIONS = ["negative", "positive with comments", "positive with comments"]
VERSIONS = ["2026.01", "2026.04", "2026.07"]
FAKE_BUNDLE = "ab" * 32

runner = CliRunner()


@pytest.fixture(scope="module")
def audited(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One light audit of the bookstore (ranking quality and disclosure only, HTML only, no register)."""
    folder = tmp_path_factory.mktemp("light")
    copy_bookstore(folder)
    spec = settled(yaml.safe_load((BOOKSTORE / "audit.yaml").read_text()))
    spec.pop("signing")
    spec.pop("findings", None)
    spec["evidence"] = [{"ranking_quality": {"cutoffs": [1, 3, 5, 10]}},
                        next(item for item in spec["evidence"] if "disclosure_consistency" in item)]
    spec["output"] = {"dir": "reports", "formats": ["html"]}
    (folder / "audit.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    return run_audit(folder / "audit.yaml", register="off").run_dir


def _review(base: dict, i: int) -> dict:
    """The audit's evidence as review i: its day, version, opinion, nDCG@10 and findings changed."""
    doc = copy.deepcopy(base)
    doc["run"]["evaluated_on"] = DAYS[i]
    doc["run"]["started_at"] = f"{DAYS[i]}T09:00:00+00:00"
    doc["inputs"]["model"]["version"] = VERSIONS[i]
    doc["opinion"] = OPINIONS[i]
    metrics = doc["evidence"]["ranking_quality"]["metrics"]
    (metrics["ranking_quality.ndcg@10.mean"], metrics["ranking_quality.ndcg@10.ci95_low"],
     metrics["ranking_quality.ndcg@10.ci95_high"]) = NDCG[i]
    doc["evidence"]["disclosure_consistency"]["metrics"]["disclosure.undeclared_share"] = [0.12, 0.09, 0.082][i]
    status = {f["rule"]: f for f in doc["findings"]}
    assert status["P2B-8"]["status"] == "UNMEASURED"  # its evidence is not in this light audit: made a failure here
    status["P2B-8"]["status"] = "FAIL"
    assert {r: status[r]["status"] for r in ("BASE-8", "P2B-4", "P2B-8")} == dict.fromkeys(
        ("BASE-8", "P2B-4", "P2B-8"), "FAIL")
    doc["assignments"] = [{"rule": "P2B-4", "owner": "Search & Discovery team", "due": "2026-03-31",
                           "note": "Declare sales volume in the terms"}]
    if i >= 1:  # P2B-8 remediated; the undeclared parameter (BASE-8 and P2B-4: one fact) waived under both laws
        status["P2B-8"]["status"] = "PASS"
        status["BASE-8"]["status"] = status["P2B-4"]["status"] = "WAIVED"
        doc["waivers"] = [{"rule": rule, "approver": "Head of Model Risk", "expires": "2026-06-30",
                           "justification": "Sales volume is declared in the next terms update"}
                          for rule in ("BASE-8", "P2B-4")]
    return doc


def _record(register: Register, document: dict, run_dir: Path, system: str, bundle: str | None) -> None:
    (run_dir / "evidence.json").write_text(json.dumps(document, sort_keys=True))
    register.record(document, system=system, run_dir=run_dir, evidence_sha256=sha256_file(run_dir / "evidence.json"),
                    bundle_sha256=bundle, actor="auditor-ci")


@pytest.fixture(scope="module")
def register_path(audited: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A register with three reviews of the catalogue ranker (the second approved, signed ones with a bundle
    digest) and one rejected review of a system with a hostile name."""
    root = tmp_path_factory.mktemp("reg")
    base = json.loads((audited / "evidence.json").read_text())
    register = Register(root / "reports" / "register.sqlite")
    for i in range(3):
        run_dir = root / "reports" / f"catalogue-{DAYS[i]}"
        shutil.copytree(audited, run_dir)
        _record(register, _review(base, i), run_dir, SYSTEM, FAKE_BUNDLE if i else None)
    register.record_approval(run_dir=root / "reports" / f"catalogue-{DAYS[1]}", bundle_sha256=FAKE_BUNDLE,
                             decision="approved", approver="Head of Model Risk", reason=None, statement_sha256="c" * 64)
    hostile_dir = root / "elsewhere" / "hostile-run"
    shutil.copytree(audited, hostile_dir)
    document = _review(base, 0)
    base8 = next(f for f in document["findings"] if f["rule"] == "BASE-8")
    base8["title"] = "<img src=x onerror=alert(1)> \u202eturned"
    _record(register, document, hostile_dir, HOSTILE, FAKE_BUNDLE)
    register.record_approval(run_dir=hostile_dir, bundle_sha256=FAKE_BUNDLE, decision="rejected",
                             approver="Board \u202eevil", reason="not enough evidence", statement_sha256="d" * 64)
    register.close()
    return root / "reports" / "register.sqlite"


@pytest.fixture(scope="module")
def site(register_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site") / "board"
    register = Register(register_path, create=False)
    try:
        written = write_site(register, out, today=TODAY)
    finally:
        register.close()
    assert written[0].name == "index.html"
    return out


def _page(site: Path, system: str = SYSTEM) -> Path:
    index = (site / "index.html").read_text()
    name = re.search(r'<td class="system"><a href="([^"]+)">' + re.escape(system), index)
    assert name is not None
    return site / name.group(1)


def _row(index: str, system: str) -> str:
    return next(row for row in index.split('<td class="system">')[1:] if f'.html">{system}' in row).split("</tr>")[0]


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []
        self.ids: set[str] = set()
        self.tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self.tags.append(tag)
        attributes = dict(attrs)
        if attributes.get("id"):
            self.ids.add(attributes["id"])
        if tag == "a":
            self.hrefs.append(attributes["href"])


def test_the_portfolio_lists_each_system_with_its_last_review(site: Path, register_path: Path) -> None:
    index = (site / "index.html").read_text()
    assert index.startswith("<!DOCTYPE html>") and CONTENT_POLICY in index.split("</head>")[0]
    row = _row(index, SYSTEM)
    assert SYSTEM in row and DAYS[2] in row and VERSIONS[2] in row and "positive with comments" in row
    # BASE-8 and P2B-4, one finding (responded, due 2026-03-31; accepted until 2026-06-30, which lapsed: overdue on
    # 2026-09-01) stays; P2B-8 was remediated
    assert re.findall(r'<td class="num"[^>]*>(?:<strong class="problem">)?(\d+)', row) == ["1", "1", "3"]
    assert "not approved" in row  # the last review is not approved (the second one is)
    hostile = _row(index, "&lt;script&gt;")
    assert "rejected by Board ⟨U+202E⟩evil on" in hostile
    assert "3 reviews" not in index and "2 systems, 4 reviews" in index


def test_the_system_page_shows_every_review_approval_and_verify_command(site: Path) -> None:
    page = _page(site).read_text()
    for day, opinion, version in zip(DAYS, OPINIONS, VERSIONS, strict=True):
        review = page.split(f"<h3>{day} · model version {version}")[1].split("</article>")[0]
        assert opinion in review
    reviews = page.split('<section id="reviews">')[1]
    assert reviews.index(DAYS[2]) < reviews.index(DAYS[1]) < reviews.index(DAYS[0])  # newest first
    second = page.split(f"<h3>{DAYS[1]}")[1].split("</article>")[0]
    assert "approved by Head of Model Risk on" in second
    assert re.search(r'<pre class="verify">auditor verify /\S+catalogue-2026-05-12 --trust signer-cert.pem '
                     r"--pubkey bundle-ed25519.pub.pem</pre>", second)
    first = page.split(f"<h3>{DAYS[0]}")[1].split("</article>")[0]
    assert "not signed" in first and "not approved" in first


def test_trends_have_a_point_per_review_with_intervals(site: Path) -> None:
    page = _page(site).read_text()
    figures = re.findall(r"<figure class=\"plot\">.*?</figure>", page, re.S)
    titles = [re.search(r"<figcaption>(.*?)</figcaption>", f).group(1) for f in figures]
    assert titles[0] == "Ranking quality: mean nDCG@10"
    assert any("undeclared share" in t for t in titles)
    assert "Declared vs measured order of main parameters (Kendall tau)" in titles  # the report's key numbers
    ndcg = figures[0]
    points = re.search(r'<g id="trend-1-points">(.*?)</g>\s*</g>', ndcg, re.S) or \
        re.search(r'<g id="trend-1-points">(.*?)</g>', ndcg, re.S)
    assert points is not None and points.group(1).count("<use ") == len(DAYS)
    assert 'role="img"' in ndcg and "<desc" in ndcg
    description = re.search(r"<desc[^>]*>(.*?)</desc>", ndcg, re.S).group(1)
    assert "3 of 3 reviews" in description and "2026-02-10: 0.741 (95% interval 0.710 to 0.770)" in description
    assert "0.818 (0.789 to 0.845)" in page  # the table under the figures


def test_the_findings_log_lists_every_event(site: Path) -> None:
    page = _page(site).read_text()
    log = page.split('<section id="findings">')[1]
    assert "catalogue-ranker/P2B-4" not in log, "one fact, one finding: BASE-8 and P2B-4 judge the same metric"
    base8 = next(a for a in log.split("<article")[1:] if "catalogue-ranker/BASE-8" in a)
    assert "overdue" in base8 and "opened" in base8 and "responded" in base8
    assert base8.count('<td class="day">seen</td>') == 2
    assert "Search &amp; Discovery team" in base8 and "due 2026-03-31" in base8 and "auditor-ci" in base8
    assert base8.count('<td class="day">accepted</td>') == 1 and "Head of Model Risk until 2026-06-30" in base8
    p2b8 = next(a for a in log.split("<article")[1:] if "catalogue-ranker/P2B-8" in a)
    assert '<td class="day">remediated</td>' in p2b8
    assert 'remediated by the <a href="#review-2">review of 2026-05-12</a>' in p2b8
    assert log.index("catalogue-ranker/BASE-8") < log.index("catalogue-ranker/P2B-8")  # overdue before remediated


def test_every_link_resolves(site: Path) -> None:
    for page in site.glob("*.html"):
        parser = _Links()
        parser.feed(page.read_text())
        assert parser.hrefs
        for href in parser.hrefs:
            parsed = urlparse(href)
            if href.startswith("#"):
                assert href[1:] in parser.ids, (page.name, href)
            elif parsed.scheme == "file":
                assert Path(unquote(parsed.path)).is_file(), href
            else:
                assert not parsed.scheme, href
                assert (site / unquote(href)).resolve().is_file(), (page.name, href)
    index = (site / "index.html").read_text()
    assert 'href="../../' in _page(site).read_text()  # the catalogue's reports, relative to the site
    assert "index.html" not in [h for h in re.findall(r'href="([^"]+)"', index)]


def test_untrusted_names_are_escaped_and_marked(site: Path) -> None:
    for page in site.glob("*.html"):
        text = page.read_text()
        assert "\u202e" not in text, page.name
        assert "<script" not in text and "<img" not in text, page.name
        parser = _Links()
        parser.feed(text)
        assert "script" not in parser.tags and "img" not in parser.tags
    hostile = _page(site, "&lt;script&gt;")
    assert hostile.name.endswith(".html") and re.fullmatch(r"[a-z0-9-]+\.html", hostile.name)
    text = hostile.read_text()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;⟨U+202E⟩resu" in text
    assert "&lt;img src=x onerror=alert(1)&gt; ⟨U+202E⟩turned" in text


def test_the_same_register_and_day_give_the_same_bytes(register_path: Path, site: Path, tmp_path: Path) -> None:
    register = Register(register_path, create=False)
    try:
        again = pages(register, site, today=TODAY)
        assert again == {p.name: p.read_text() for p in site.glob("*.html")}
        shutil.copytree(site, tmp_path / "copy")
        write_site(register, tmp_path / "copy", system=SYSTEM, today=TODAY)  # our own pages are replaced
        assert "1 system, 3 reviews" in (tmp_path / "copy" / "index.html").read_text()
        (tmp_path / "index.html").write_text("<p>the team's own page</p>")
        with pytest.raises(InputError, match="not written by `auditor history`"):
            write_site(register, tmp_path, today=TODAY)
        assert (tmp_path / "index.html").read_text() == "<p>the team's own page</p>"
        with pytest.raises(InputError, match=r"no review of system 'catalogue-rankr'.*catalogue-ranker"):
            pages(register, tmp_path, system="catalogue-rankr", today=TODAY)
    finally:
        register.close()


def test_the_command(register_path: Path, tmp_path: Path) -> None:
    result = runner.invoke(app, ["history", "--register", str(register_path), "--out", str(tmp_path / "one"),
                                 "--system", SYSTEM])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in (tmp_path / "one").iterdir()) == ["catalogue-ranker.html", "index.html"]
    assert "1 system, 3 reviews" in (tmp_path / "one" / "index.html").read_text()
    missing = runner.invoke(app, ["history", "--register", str(tmp_path / "nope.sqlite"), "--out", str(tmp_path)])
    assert missing.exit_code == 2 and missing.output.count("\n") == 1 and "no register here" in missing.output
    (tmp_path / "broken.sqlite").write_text("not a database")
    broken = runner.invoke(app, ["history", "--register", str(tmp_path / "broken.sqlite"), "--out", str(tmp_path)])
    assert broken.exit_code == 2 and broken.output.count("\n") == 1 and "damaged" in broken.output


def test_an_organisation_s_templates_render_the_site_as_they_render_the_report(register_path: Path, site: Path,
                                                                               tmp_path: Path) -> None:
    """`--template`: the site takes the report's path (issue 52, item 3): an organisation's history template is used
    before ours, in the same sandbox, and a broken one is bad input before anything is written."""
    from auditor.report.render import templates_dir

    mine = tmp_path / "templates" / "history"
    mine.mkdir(parents=True)
    ours = (templates_dir() / "history" / "index.html.j2").read_text(encoding="utf-8")
    board = "<p>For the board of Example Books</p>"
    (mine / "index.html.j2").write_text(ours.replace("{% endblock %}", board + "{% endblock %}", 1), encoding="utf-8")
    register = Register(register_path, create=False)
    try:
        write_site(register, tmp_path / "site", today=TODAY, templates=tmp_path / "templates")
    finally:
        register.close()
    changed = (tmp_path / "site" / "index.html").read_text(encoding="utf-8")
    assert "<p>For the board of Example Books</p>" in changed
    assert changed.replace("<p>For the board of Example Books</p>", "", 1) == (site / "index.html").read_text()
    assert (tmp_path / "site" / "catalogue-ranker.html").read_text() == (site / "catalogue-ranker.html").read_text()
    result = runner.invoke(app, ["history", "--register", str(register_path), "--out", str(tmp_path / "cli"),
                                 "--template", str(tmp_path / "templates")])
    assert result.exit_code == 0 and "For the board" in (tmp_path / "cli" / "index.html").read_text(), result.output
    (mine / "system.html.j2").write_text("{% if %}", encoding="utf-8")
    broken = runner.invoke(app, ["history", "--register", str(register_path), "--out", str(tmp_path / "other"),
                                 "--template", str(tmp_path / "templates")])
    assert broken.exit_code == 2 and "system.html.j2" in broken.output and not (tmp_path / "other").exists()


def test_an_empty_register_says_so(tmp_path: Path) -> None:
    Register(tmp_path / "register.sqlite").close()
    result = runner.invoke(app, ["history", "--register", str(tmp_path / "register.sqlite"), "--out",
                                 str(tmp_path / "site")])
    assert result.exit_code == 0, result.output
    assert [p.name for p in (tmp_path / "site").iterdir()] == ["index.html"]
    assert "The register holds no reviews yet." in (tmp_path / "site" / "index.html").read_text()


def test_both_pages_fit_a_phone_and_a_desktop_in_chromium(site: Path) -> None:
    if find_chromium() is None:
        pytest.skip("Chromium not installed (Debian package `chromium`); .ci/run installs it")
    with Chromium() as browser:
        for page in (site / "index.html", _page(site), _page(site, "&lt;script&gt;")):
            for width in (390, 1280):
                view = browser.view(file_url(page), width)
                assert view.scroll_width <= width, (page.name, width, view.scroll_width, view.overflowing)
                assert not view.overflowing, (page.name, width)
                assert not view.console_errors, (page.name, width, view.console_errors)
