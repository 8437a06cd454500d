"""The report against its own evidence (issue 56 item 3, auditor/report/consistency.py): the demo's pages hold no
contradiction the checker can see, and each kind of seeded contradiction is reported, one line each."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from auditor.evidence.document import EvidenceDocument, read_document
from auditor.report.consistency import check


@pytest.fixture(scope="module")
def pages(demo: Path) -> tuple[str, EvidenceDocument]:
    return (demo / "report.html").read_text(), read_document(json.loads((demo / "evidence.json").read_text()))


NDCG = 'data-ref="metric:ranking_quality:ranking_quality.ndcg@10.mean">'


@pytest.mark.slow
def test_the_demo_report_says_what_its_evidence_holds(pages: tuple[str, EvidenceDocument]) -> None:
    html, document = pages
    assert check(html, document) == []
    assert html.count("data-ref=") >= 8 and html.count("data-severity=") >= 8  # the checker had work to do


def _once(html: str, old: str, new: str) -> str:
    assert old in html, old
    return html.replace(old, new, 1)


@pytest.mark.slow
def test_each_seeded_contradiction_is_one_line(pages: tuple[str, EvidenceDocument]) -> None:
    html, document = pages
    value = re.search(re.escape(NDCG) + r"([^<]+)<br><span class=\"interval\">([^<]+)</span>", html)
    assert value is not None
    printed, interval = value.group(1), value.group(2)
    moved = _once(html, NDCG + printed, NDCG + "0.918")
    widened = _once(html, f'{printed}<br><span class="interval">{interval}</span>',
                    f'{printed}<br><span class="interval">0.500 to 0.999</span>')
    found = document.reading("ranking_quality", "ranking_quality.ndcg@10.mean")
    assert found is not None and found.low is not None and found.high is not None
    other = f"{found.value:.4f} (95% interval {found.low:.4f} to {found.high:.4f})"  # right, but printed otherwise
    twice = _once(html, "</body>", f"<p><span {NDCG}{other}</span></p></body>")
    subject = re.search(r'data-subject="([^"]+)" data-severity="major"', html)
    assert subject is not None
    card = html.rindex(f'data-subject="{subject.group(1)}" data-severity="major"')
    severe = html[:card] + html[card:].replace('data-severity="major"', 'data-severity="minor"', 1)
    pointer = _once(html, '<a href="#limitations">Limitations</a>', '<a href="#limitations">Glossary</a>')
    absent = _once(html, NDCG, 'data-ref="metric:ranking_quality:ranking_quality.ndcg@99.mean">')
    count = re.search(r'data-count="(\d+)" data-rows-of="([^"]+)">\d+<', html)
    assert count is not None
    miscounted = _once(html, count.group(0), f'data-count="{int(count.group(1)) + 30}" data-rows-of="{count.group(2)}">'
                                             f'{int(count.group(1)) + 30}<')
    seeded = {"moved": (moved, "prints 0.918 where evidence.json holds"),
              "widened": (widened, "prints the interval “0.500 to 0.999”"),
              "twice": (twice, "printed with 2 different intervals"),
              "severe": (severe, f"{subject.group(1)}: printed with 2 severities (major, minor)"),
              "pointer": (pointer, "a pointer “Glossary” leads to the section “Limitations"),
              "absent": (absent, "evidence.json holds no value for it"),
              "miscounted": (miscounted, f"which holds {count.group(1)}"),
              # a law said on page 2 to bind the provider whole, where Scope and evidence.json say in part
              "law": (_once(html, "(applies in part, not judged)", "(applies, not judged)"), "said to be “applies”")}
    raw = document.to_json()  # a caption claiming the other direction than its lines take
    figure = next(f for f in raw["evidence"]["decision_path_accuracy"]["figures"] if f["chart"] == "line_chart")
    claimed = re.search(r"AUC (rises|falls)", figure["caption"])
    assert claimed is not None, figure["caption"]
    other = "falls" if claimed.group(1) == "rises" else "rises"
    figure["caption"] = figure["caption"].replace(f"AUC {claimed.group(1)}", f"AUC {other}", 1)
    problems = check(html, read_document(raw))
    assert len(problems) == 1 and f"says it {other}, but" in problems[0], problems
    for name, (page, words) in seeded.items():
        problems = check(page, document)
        assert problems and words in problems[0], (name, problems)
        if name == "widened":  # also a second interval beside Appendix A's of the same metric
            assert len(problems) == 2 and "printed with 2 different intervals" in problems[1], problems
        else:
            assert len(problems) == 1, (name, problems)


@pytest.mark.slow
def test_a_run_under_every_law_with_every_provider_fact_set_is_consistent(tmp_path: Path) -> None:
    """Issue 56 item 3: the bookstore (light evidence) judged by every built-in pack, its provider every kind the
    laws name — every law applies on every page alike, and no printed figure differs from its evidence; no rule ends
    in ERROR (a figure the light run cannot give is not measured, with the reason)."""
    from typer.testing import CliRunner

    from auditor.cli import app
    from tests.helpers import assert_consistent, bookstore_under

    spec = bookstore_under(tmp_path, policies=["starter", "eu-p2b-art5", "eu-dsa-art27-34", "eu-dma-art6-5",
                                                "eu-ai-act-annex-iv", "jp-tfdpa-ranking", "model-governance"],
                           provider=dict.fromkeys(("gatekeeper", "high_risk", "online_platform", "very_large_platform",
                                                   "intermediation_service", "employment_decision_tool",
                                                   "jp_specified_platform"), True))
    folder = spec.parent
    done = CliRunner().invoke(app, ["report", str(spec), "--fail-on", "never", "--quiet"])
    assert done.exit_code == 0, done.output
    run = next((folder / "out").iterdir())
    assert_consistent(run)
    document = read_document(json.loads((run / "evidence.json").read_text()))
    assert not [f.rule for f in document.findings if f.status == "ERROR"]
    assert not [p["pack"] for p in document.policies if not p["applicability"].startswith("applies")]
