"""Page one decides (issue 36): the executive summary is one page whatever the audit's size, reads in words (metric
keys only in small technical type), prints every number one way, and names findings by their plain titles.

Checked on synthetic findings (any number of rules) and on a real 136-feature audit judged by all six packs with
every provider fact set, so every law applies (the bookstore demo's summary is checked in test_report_layout.py)."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import lightgbm as lgb
import numpy as np
import pandas as pd
import pytest
import yaml

from auditor.core.numbers import figure, interval, percent, points, signed, with_interval
from auditor.evidence import REGISTRY
from auditor.evidence.document import read_document
from auditor.judging.policy import Finding, bundled_policies_dir, load_packs
from auditor.report.summary import SUMMARY_ROWS, executive_summary
from auditor.report.wording import fact, measured_sentence, phrases
from auditor.run.engine import run_audit
from tests.conftest import make_queries
from tests.helpers import assert_consistent, document_of, section_text, summary_page_checks

WIDE_PACKS = ["starter", "eu-ai-act-annex-iv", "eu-dma-art6-5", "eu-dsa-art27-34", "eu-p2b-art5", "model-governance"]
PACKS = [*WIDE_PACKS, "us-nyc-ll144", "jp-tfdpa-ranking"]  # every built-in pack (the wide audit applies the EU ones)
METRIC_KEY = re.compile(r"\b[a-z][a-z0-9_]*(?:\.[a-z0-9_@]+){1,}\b")


def test_one_number_style() -> None:
    assert figure(0.8179) == "0.818" and figure(0.91) == "0.910" and figure(1627.0) == "1,627"
    assert figure(float("nan")) == "—" and figure(-0.0) == "0" and figure(5.3e-15) == "< 1e-9"
    assert percent(0.2564) == "25.6%" and percent(-1e-6) == "0.0%" and points(-1e-5) == "0.0 pp"
    assert signed(0.0561) == "+0.0561" and interval(0.1, float("nan")) == "—"
    # a point estimate is never printed outside its own interval
    assert with_interval(0.130, -0.036, 0.1) == "0.130 (95% interval -0.0360 to 0.130)"
    assert with_interval(0.5, float("nan"), 1.0) == "0.500"
    # a threshold in its value's unit (a reader review, issue 56): "+10.7 pp … WARN if > 0.01" read as a breach
    from auditor.report.wording import requirement_text

    assert requirement_text("WARN if > 0.01", "exposure.own.counterfactual.share_change", 0.107) == \
        "WARN if > +1.0 pp"
    assert requirement_text("FAIL if > 0.4; WARN if > 0.3", "dataset.zero_share", 0.012) == \
        "FAIL if > 40.0%; WARN if > 30.0%"
    assert requirement_text("WARN if < 0.8", "selection.min_ratio", 0.57) == "WARN if < 0.8"


def test_appendix_a_gives_each_value_its_unit_as_its_threshold_has_it() -> None:
    """Appendix A printed bare numbers (a reader review: "LL144-3 … 47", "LL144-10 … 1", "LL144-6 … 16", and a
    change of share "-0.00814" beside "FAIL if > +1.0 pp"): a count carries what it counts, a stated fact the word,
    a change of share its points, each beside its threshold in the same unit."""
    from auditor.report.summary import measured
    from auditor.report.wording import requirement_text

    def cell(metric: str, value: float, requirement: str, interval: tuple[float, float] | None = None) -> str:
        finding = Finding(rule="R", title="t", pack="p", status="PASS", severity="major", metric=metric, value=value,
                          requirement=requirement, citation="", rationale="", message="", evidence="e",
                          interval=interval)
        return f"{measured(finding)} | {requirement_text(requirement, metric, value)}"

    assert cell("governance.days_audit_to_distribution", 47, "FAIL if > 365") == "47 days | FAIL if > 365 days"
    assert cell("governance.data_type_stated", 1, "FAIL if < 1") == "stated | FAIL if not stated"
    assert cell("governance.signed", 0, "FAIL if < 1") == "not signed | FAIL if not signed"
    assert cell("selection.reported", 16, "FAIL if < 2") == "16 impact ratios | FAIL if < 2 impact ratios"
    assert cell("selection.eeo1_components", 2, "FAIL if < 2") == "2 EEO-1 components | FAIL if < 2 EEO-1 components"
    assert cell("exposure.own.counterfactual.share_change", -0.00814, "FAIL if > 0.01; WARN if > 0",
                (-0.0146, -0.00182)) == "-0.8 pp (-1.5 pp to -0.2 pp) | FAIL if > +1.0 pp; WARN if > 0.0 pp"
    assert cell("ranking_quality.ndcg@10.mean", 0.818, "FAIL if < 0.4", (0.789, 0.845)) == \
        "0.818 (0.789 to 0.845) | FAIL if < 0.4"  # a measure without a unit: as before


def _builtin_rules() -> list:
    packs = load_packs(PACKS, base_dir=bundled_policies_dir())
    return [(p.pack.pack, rule) for p in packs for rule in p.pack.rules]


def test_every_builtin_rule_reads_as_a_sentence_without_its_key() -> None:
    """Every metric a built-in pack judges has words: the sentence names no metric key (the key is printed apart,
    in small type, for the technical reader)."""
    checked = 0
    for pack, rule in _builtin_rules():
        if rule.metric is None:
            continue
        value = 1.0 if "undeclared_main" in rule.metric or "main_parameters" in rule.metric else 0.25
        finding = Finding(rule=rule.id, title=rule.title, pack=pack, status="FAIL", severity=rule.severity,
                          metric=rule.metric, value=value, requirement=rule.requirement(), citation="", rationale="",
                          message="", evidence=rule.evidence, interval=(0.2, 0.3))
        sentence = measured_sentence(finding)
        assert not METRIC_KEY.search(sentence), (rule.id, sentence)
        assert rule.metric in phrases() or rule.per_query, (rule.id, sentence)  # not the fallback
        assert sentence[0].isupper() or sentence[0].isdigit(), sentence
        title = fact(finding)  # its finding's title: what was found, not the requirement (issue 56 item 1)
        assert title != rule.title and "(95% interval" not in title and not METRIC_KEY.search(title), (rule.id, title)
        assert all(word in sentence for word in title.split()[-3:]), (rule.id, title, sentence)  # the same words
        checked += 1
    assert checked >= 40


def _finding(n: int, status: str, severity: str) -> dict:
    return {"rule": f"R-{n}", "title": f"Requirement number {n}", "pack": "p", "status": status,
            "severity": severity, "metric": f"m{n}", "value": 0.3, "requirement": "FAIL if < 0.5", "citation": "Law",
            "rationale": "", "message": "", "evidence": "ranking_quality", "interval": [0.2, 0.4], "remedy": "",
            "threshold_reason": ""}


def test_the_summary_does_not_grow_with_the_number_of_rules() -> None:
    findings = ([_finding(i, "FAIL", "major") for i in range(12)]
                + [_finding(i, "WARN", "minor") for i in range(12, 40)]
                + [_finding(i, "PASS", "minor") for i in range(40, 90)])
    detections = [{"kind": f"k{i}", "title": f"Problem {i}", "message": "", "severity": "info", "citation": "",
                   "judged_by": [], "judged_by_rules": [], "evidence": "exposure", "subject": str(i)}
                  for i in range(15)]
    document = {"opinion": "negative", "findings": findings, "detections": detections,
                "evidence": {"dataset": {"metrics": {}}}, "audit": {}}
    summary = executive_summary(document_of(**document), REGISTRY)
    rows = summary["rows"]
    assert len(rows["shown"]) == SUMMARY_ROWS and rows["total"] == 12 + 28 + 15
    assert rows["more"] == rows["total"] - SUMMARY_ROWS and rows["more_by_severity"] == "4 major, 28 minor, 15 info"
    assert [r["severity"] for r in rows["shown"]] == ["major"] * SUMMARY_ROWS  # most serious first
    assert len(summary["headline"]) == 2
    text = " ".join(summary["headline"])
    assert "R-" not in text  # rule ids belong to the findings' cards
    assert "12 requirements of critical or major severity are not met" in text and "and 9 more" in text
    assert "50 requirements passed or did not apply" in text


# -- a real wide audit: 136 features, every pack applies -------------------------------------------------------------

@pytest.fixture(scope="module")
def wide_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """136 features (negative and missing values among them), 14 queries, one a single document; the cheap evidence
    kinds only, so the packs' rules on the others fail as not requested: a long list of findings."""
    folder = tmp_path_factory.mktemp("wide")
    rng = np.random.default_rng(36)
    X, y, sizes = make_queries(rng, 14, 136, min_docs=8, max_docs=30)
    X, y = X[sizes[0] - 1:], y[sizes[0] - 1:]  # the first query keeps one document
    sizes[0] = 1
    total = int(sizes.sum())
    X[:, 3] -= 0.5  # negative values
    X[rng.random(X.shape) < 0.05] = np.nan  # missing values
    X[:, 10] = (X[:, 0] > 0.6).astype(float)  # a 0/1 own-product flag the model can use
    names = [f"f{i:03d}_{'neg' if i == 3 else 'x'}" for i in range(136)]
    booster = lgb.train({"objective": "lambdarank", "num_leaves": 7, "min_data_in_leaf": 3, "verbose": -1,
                         "seed": 1}, lgb.Dataset(X, y, group=sizes, feature_name=names), num_boost_round=30)
    booster.save_model(str(folder / "model.txt"))
    qid = np.repeat(np.arange(len(sizes)), sizes)
    frame = pd.DataFrame(X, columns=names).assign(qid=qid, label=y, doc_id=[f"d{i}" for i in range(total)])
    frame.to_csv(folder / "data.csv", index=False)
    spec = {
        "audit": {"title": "Wide ranker", "organisation": "Test GmbH", "owner": "Ranking team", "period": "2026-Q4",
                  "purpose": "Issue 36's summary on wide data",
                  "provider": {"gatekeeper": True, "high_risk": True, "online_platform": True,
                               "very_large_platform": True, "intermediation_service": True}},
        "model": {"path": "model.txt"},
        "dataset": {"path": "data.csv", "query_column": "qid", "label_column": "label", "doc_id_column": "doc_id",
                    "nan_policy": "missing"},
        "evidence": [{"ranking_quality": {"cutoffs": [10]}}, {"global_importance": {}},
                     {"disclosure_consistency": {"declared": names[5:9]}},
                     {"parameter_influence": {"sensitive": [names[3]]}},
                     {"exposure": {"group": [names[10]], "own": {names[10]: 1}}}],
        "policies": WIDE_PACKS, "seed": 3, "output": {"dir": "reports", "formats": ["html", "pdf"]},
    }
    (folder / "audit.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    return run_audit(folder / "audit.yaml").run_dir


@pytest.mark.slow
def test_the_wide_audit_opens_with_a_one_page_summary(wide_run: Path) -> None:
    document = json.loads((wide_run / "evidence.json").read_text())
    acting = [f for f in document["findings"] if f["status"] in ("FAIL", "ERROR", "WARN", "WAIVED")]
    assert len(acting) > SUMMARY_ROWS, "the test needs more findings than the summary names"
    summary_page_checks(wide_run)
    assert_consistent(wide_run)
    html = (wide_run / "report.html").read_text()
    summary = section_text(html, "summary")
    assert "more (" in summary and "in Findings" in summary
    assert not re.search(r"\b(BASE|AIA|DMA|DSA|P2B|MG)-\d", summary), "rule ids are for the findings section"
    # rules of several packs on one fact keep their own titles in Appendix A (a reader review, s67 W-N2)
    passed = html[html.index('id="passed-rules"'):]
    passed = passed[:passed.index("</table>")]
    assert "<strong>AIA-4</strong> The accuracy is at an appropriate level" in passed, passed[:2000]
    # the basis a board member weighs the opinion on (a reader review, issue 56): the level of assurance and the
    # origin of the data, or that they are not stated
    assurance, origin = document["audit"].get("assurance"), document["audit"].get("data_origin")
    assert ("Basis: " + (f"{assurance} assurance (ISAE 3000" if assurance else
                         "neither the level of assurance nor the origin" if not origin else
                         "the level of assurance is not stated")) in summary, summary[-400:]


@pytest.mark.slow
def test_a_figure_printed_twice_reads_the_same(wide_run: Path) -> None:
    """The summary's key figures appear, digit for digit, in their own sections."""
    html = (wide_run / "report.html").read_text()
    document = json.loads((wide_run / "evidence.json").read_text())
    summary = executive_summary(read_document(document), REGISTRY)
    checked = 0
    for row in summary["key_figures"]:
        if row["value"] is None or not math.isfinite(row["value"]):
            continue
        section = section_text(html, f"ev-{row['evidence']}")
        assert row["value_text"] in section, (row["label"], row["value_text"])
        checked += 1
    assert checked >= 3


def test_the_headline_names_every_kind_of_finding() -> None:
    """Waived failures and verdicts that could not be judged are named too (a positive-with-comments opinion always
    says why), and the count of what passed ends the second sentence."""
    document = {"opinion": "positive with comments", "detections": [], "evidence": {"dataset": {"metrics": {}}},
                "audit": {}, "findings": [_finding(1, "WAIVED", "major"), _finding(2, "ERROR", "minor"),
                                          _finding(3, "ERROR", "minor"), _finding(4, "PASS", "minor")]}
    first, second = executive_summary(document_of(**document), REGISTRY)["headline"]
    assert "2 requirements that could not be judged and 1 waived failure" in first
    assert second == "1 requirement passed or did not apply."


def test_the_main_parameters_figure_names_each_of_a_few_main_parameters() -> None:
    """Issue 56: page 2 named the three largest of five main parameters, leaving out the undeclared one the opinion
    is about; up to six are named one by one, more as the three largest and how many more."""
    from auditor.evidence.kinds.global_importance import present

    def item(main: int) -> str:
        records = [{"feature": f"f{i}", "rank": i + 1, "within_query.share": 0.3 / (i + 1)} for i in range(12)]
        document = document_of(evidence={"global_importance": {
            "metrics": {"global_importance.main_parameters": float(main)}, "records": records}})
        return present.key_figures(document.evidence["global_importance"])[0].scale

    assert item(5) == "f0 30.0%, f1 15.0%, f2 10.0%, f3 7.5%, f4 6.0%"
    assert item(9) == "largest shares: f0 30.0%, f1 15.0%, f2 10.0% and 6 more"


def test_a_remedy_names_the_analyses_in_the_readers_words_and_the_spec_change_apart() -> None:
    """A remedy written for the tool's operator (a reader review: "the global_importance and parameter_influence
    evidence help … add them to the spec's evidence") reads in the reader's words, says what this audit did not run,
    and leaves the spec change to a note in small type."""
    from auditor.report.wording import remedy_for, remedy_setup

    pack = load_packs(["us-nyc-ll144"], base_dir=bundled_policies_dir())[0].pack
    remedy = next(rule.remedy for rule in pack.rules if rule.id == "LL144-7")
    kinds = set(REGISTRY)
    said = remedy_for(remedy, {"selection_rates"}, kinds)
    assert "a feature-importance and proxy analysis, not run in this audit, would show which features" in said
    assert "`" not in said and "spec" not in said, said
    assert remedy_setup(remedy, {"selection_rates"}, kinds) == \
        "To run them, add them to the spec's evidence (`global_importance`, `parameter_influence`)."
    ran = {"selection_rates", "global_importance", "parameter_influence"}
    assert "a feature-importance and proxy analysis would show" in remedy_for(remedy, ran, kinds)
    assert remedy_setup(remedy, ran, kinds) == ""
    assert "(in part not run in this audit) would show" in remedy_for(remedy, ran - {"global_importance"}, kinds)
    # a remedy that is the spec change itself stays as it is, without a second note saying the same
    add = "Add `surrogate` to the spec's evidence and re-run."
    assert remedy_for(add, set(), kinds) == add and remedy_setup(add, set(), kinds) == ""
