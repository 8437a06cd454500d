"""NYC Local Law 144's summary of results as a page an employer can post (`--document ll144-summary`, issue 57 item
3): what 6 RCNY §5-303 asks to publish, in its order, every figure checked against evidence.json; historical or test
data as a closed list with the reason (§5-302); categories that are the EEO-1 categories (§5-300) or refused before
any evidence runs, unless a declared table maps them."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from auditor.cli import app
from auditor.evidence.document import read_document
from auditor.inputs.spec import OutputSpec
from auditor.report.consistency import check
from auditor.report.documents import NAMES
from tests.helpers import HIRING, hiring_run

runner = CliRunner()

# What §5-303 (with §5-301 and §5-302) asks the summary to publish, in the rules' order: the page's headings and
# its facts' labels, as they must appear.
HEADINGS = ["The bias audit", "Source and explanation of the data", "Results", "Distribution date of the tool"]
FACTS = ["Date of the bias audit", "Independent auditor", "Type of data", "Why historical data were not used",
         "How the test data were generated and obtained", "Source", "Individuals assessed", "Scoring rate"]


def _with_summary(folder: Path, spec: dict[str, Any]) -> None:
    spec["output"]["documents"] = ["report", "ll144-summary"]


@pytest.fixture(scope="module")
def hiring(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The biased ranker's and its fair twin's audits with the summary page, made once for the module."""
    folder = tmp_path_factory.mktemp("hiring")
    return {name: hiring_run(folder, f"{spec}.yaml", edit=_with_summary)
            for name, spec in (("biased", "audit"), ("fair", "audit-fair"))}


def _page(run: Any) -> tuple[str, Any]:
    raw = (run.run_dir / "evidence.json").read_bytes()
    return (run.run_dir / "ll144-summary.html").read_text(encoding="utf-8"), read_document(json.loads(raw))


def _text(html: str) -> str:
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))
    return re.sub(r"\(\s+", "(", re.sub(r"\s+([,.)])", r"\1", text))


def test_the_page_follows_the_rules_order_and_every_figure_is_the_evidence_s(hiring: dict[str, Any]) -> None:
    """The biased ranker's page: the sections and facts in §5-303's order, each category's number, rate and impact
    ratio marked and equal to evidence.json (the consistency check), the excluded categories said so, and the
    smallest ratio on the page."""
    html, document = _page(hiring["biased"])
    assert check(html, document) == []
    marks = re.findall(r'data-ref="metric:selection_rates:([^"]+)"', html)
    categories = [r for r in document.evidence["selection_rates"].records if r["kind"] == "category"]
    assert len(marks) == 3 + sum(2 + (not r["excluded"]) for r in categories), len(marks)
    text = _text(html)
    headings = [_text(h).strip() for h in re.findall(r"<h2>(.*?)</h2>", html, re.S)]
    assert headings == HEADINGS
    labels = [_text(dt).strip() for dt in re.findall(r"<dt>(.*?)</dt>", html, re.S)]
    assert [label for label in labels if label in FACTS] == FACTS, labels
    assert [_text(h).strip() for h in re.findall(r"<h3>(.*?)</h3>", html, re.S)] == [
        "Sex", "Race/ethnicity", "Intersectional: sex × race/ethnicity"]
    assert "Test data" in text and "has not been used before" in text and "Simulated applicants" in text
    assert "2027-01-15" in text and "Independent Audit Partners (demo)" in text
    # DCWP's labels: a race counts non-Hispanic individuals (6 RCNY §5-301's examples), in its table and intersected
    assert "Female × Black or African American (Not Hispanic or Latino) 481 33.7% 0.572" in text
    assert "White (Not Hispanic or Latino)" in text and "Hispanic or Latino (Not" not in text
    assert text.count("excluded (under 2.0% of the data)") == sum(r["excluded"] for r in categories) == 7
    assert "Not ready to post" not in text
    assert "<script" not in html and html.index("Content-Security-Policy") < html.index("<title>")


def test_the_fair_and_the_biased_ranker_s_pages_differ_as_they_should(hiring: dict[str, Any]) -> None:
    """Every impact ratio of the fair twin is at least 0.8; the biased ranker's page shows four below."""
    def ratios(run: Any) -> list[float]:
        html, _ = _page(run)
        cells = re.findall(r'data-ref="metric:selection_rates:[^"]+\.ratio">([\d.]+)', html)
        return [float(c) for c in cells]

    biased, fair = ratios(hiring["biased"]), ratios(hiring["fair"])
    assert len(biased) == len(fair) == 16  # 2 sexes, 5 races/ethnicities, 9 intersections (7 excluded)
    assert sum(r < 0.8 for r in biased) == 4 and min(fair) >= 0.8


def _recode(folder: Path, spec: dict[str, Any]) -> None:
    """The data's own wording for one race: 'Black' instead of EEO-1's 'Black or African American'."""
    data = (folder / "test.csv").read_text(encoding="utf-8").replace(",Black or African American", ",Black")
    (folder / "test.csv").write_text(data, encoding="utf-8")
    _with_summary(folder, spec)


def test_categories_outside_the_eeo1_ones_are_refused_before_the_evidence_runs(tmp_path: Path) -> None:
    """The page refuses a category that is no EEO-1 category, naming it and the declared table that maps it; the
    pack's LL144-11 fails without the page; with the table the page prints the EEO-1 name."""
    from auditor.core.errors import InputError

    (tmp_path / "a").mkdir()
    with pytest.raises(InputError) as refused:
        hiring_run(tmp_path / "a", "audit.yaml", edit=_recode)
    line = refused.value.one_line()
    assert "Black (race_ethnicity)" in line and "selection_rates.labels" in line and "6 RCNY §5-300" in line
    assert not list((tmp_path / "a").rglob("evidence.json"))  # nothing ran, nothing written

    def report_only(folder: Path, spec: dict[str, Any]) -> None:
        _recode(folder, spec)
        spec["output"]["documents"] = ["report"]

    (tmp_path / "b").mkdir()
    plain = hiring_run(tmp_path / "b", "audit.yaml", edit=report_only)
    verdicts = {finding.rule: finding.status for finding in plain.findings}
    assert verdicts["LL144-11"] == "FAIL" and verdicts["LL144-4"] == "FAIL"

    def mapped(folder: Path, spec: dict[str, Any]) -> None:
        _recode(folder, spec)
        spec["evidence"][0]["selection_rates"]["labels"] = {"race_ethnicity": {"black": "Black or African American"}}

    (tmp_path / "c").mkdir()
    run = hiring_run(tmp_path / "c", "audit.yaml", edit=mapped)
    verdicts = {finding.rule: finding.status for finding in run.findings}
    assert verdicts["LL144-11"] == "PASS" and verdicts["LL144-4"] == "PASS"
    html, document = _page(run)
    assert "Black or African American" in html and check(html, document) == []


def test_a_page_missing_a_fact_says_it_is_not_ready_to_post(tmp_path: Path) -> None:
    """Without the data's type, the auditor and the distribution date the page says what is missing at the top and
    prints each as not stated; LL144-10 and LL144-2 fail."""
    def bare(folder: Path, spec: dict[str, Any]) -> None:
        _with_summary(folder, spec)
        for key in ("auditor", "distribution_date"):
            spec["audit"].pop(key)
        spec["dataset"]["description"].pop("data_type")
        spec["dataset"]["description"].pop("test_data")

    run = hiring_run(tmp_path, "audit.yaml", edit=bare)
    text = _text(_page(run)[0])
    assert "Not ready to post: the audit's spec does not state audit.auditor, dataset.description.data_type, " \
           "audit.distribution_date" in text
    assert "not stated (dataset.description.data_type)" in text
    verdicts = {finding.rule: finding.status for finding in run.findings}
    assert verdicts["LL144-10"] == "FAIL" and verdicts["LL144-2"] == "FAIL"


def test_test_data_need_their_reason_and_the_spec_lists_every_document(tmp_path: Path) -> None:
    """`data_type: test` without `test_data` is bad input naming the place; a reason outside the closed list too;
    the spec's `output.documents` offers exactly the documents there are."""
    folder = tmp_path / "h"
    shutil.copytree(HIRING, folder)
    spec = yaml.safe_load((folder / "audit.yaml").read_text())
    spec["dataset"]["description"].pop("test_data")
    (folder / "bad.yaml").write_text(yaml.safe_dump(spec))
    done = runner.invoke(app, ["validate", str(folder / "bad.yaml")])
    assert done.exit_code == 2 and "dataset.description" in done.output and "test_data" in done.output, done.output
    spec["dataset"]["description"]["test_data"] = {"why": "cheaper", "how": "made up"}
    (folder / "bad.yaml").write_text(yaml.safe_dump(spec))
    done = runner.invoke(app, ["validate", str(folder / "bad.yaml")])
    assert done.exit_code == 2 and "test_data.why" in done.output, done.output
    allowed = OutputSpec.model_fields["documents"].annotation.__args__[0].__args__  # type: ignore[union-attr]
    assert tuple(allowed) == NAMES


def test_a_document_the_spec_cannot_give_is_refused_before_anything_runs(tmp_path: Path) -> None:
    """--document ll144-summary on an audit without selection_rates, and an unknown --document, exit 2 at once."""
    folder = tmp_path / "h"
    shutil.copytree(HIRING, folder)
    spec = yaml.safe_load((folder / "audit.yaml").read_text())
    spec["evidence"] = [{"ranking_quality": {"cutoffs": [5]}}]
    spec["policies"] = []
    (folder / "q.yaml").write_text(yaml.safe_dump(spec))
    done = runner.invoke(app, ["report", str(folder / "q.yaml"), "--document", "ll144-summary", "--out",
                               str(tmp_path / "out")])
    assert done.exit_code == 2 and "selection_rates" in done.output and "--document" in done.output, done.output
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
    done = runner.invoke(app, ["report", str(folder / "q.yaml"), "--document", "dsa", "--out", str(tmp_path / "o")])
    assert done.exit_code == 2 and "no document 'dsa'" in done.output, done.output


@pytest.mark.slow
def test_render_draws_the_page_again_from_the_run_as_html_and_pdf(hiring: dict[str, Any], tmp_path: Path) -> None:
    """`auditor render RUN --document ll144-summary` gives the run's own page byte for byte, and a PDF whose text
    holds the same figures."""
    run = hiring["biased"]
    done = runner.invoke(app, ["render", str(run.run_dir), "--out", str(tmp_path / "r"), "--document",
                               "ll144-summary", "--format", "html", "--format", "pdf"])
    assert done.exit_code == 0, done.output
    folder = Path(done.stdout.strip().splitlines()[-1])
    assert (folder / "ll144-summary.html").read_bytes() == (run.run_dir / "ll144-summary.html").read_bytes()
    assert not (folder / "report.html").exists()
    text = subprocess.run(["pdftotext", "-layout", str(folder / "ll144-summary.pdf"), "-"], capture_output=True,
                          text=True, check=True).stdout
    assert "Summary of results of the bias audit" in text and "0.572" in text and "2027-01-15" in text
