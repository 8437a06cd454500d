"""The report is never cleaner than its evidence: what the audit detects reaches the first pages and the opinion,
verdicts do not depend on the seed, and the PDF carries what a regulator expects (issue 27)."""

from __future__ import annotations

import datetime as dt
import json
import re
import shutil
import subprocess
from pathlib import Path

import lightgbm as lgb
import numpy as np
import pytest
import yaml

from auditor.core.errors import InputError
from auditor.evidence import REGISTRY
from auditor.evidence.document import EvidenceDocument
from auditor.inputs.feature_dictionary import build
from auditor.report.glossary import GLOSSARY, REFERENCES
from auditor.report.summary import executive_summary
from auditor.run.engine import run_audit
from tests.conftest import copy_bookstore, make_queries, write_spec
from tests.helpers import assert_consistent, document_of, wide_exposure_item

DAY = dt.date(2026, 1, 15)


@pytest.fixture(scope="module")
def starter_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bookstore audit judged by the starter pack alone (light evidence), as HTML and PDF."""
    from tests.conftest import BOOKSTORE, LIGHT

    folder = tmp_path_factory.mktemp("starter")
    copy_bookstore(folder)
    spec = yaml.safe_load((BOOKSTORE / "audit.yaml").read_text())
    spec["evidence"] = [next((LIGHT[name] for name in item if name in LIGHT), item) for item in spec["evidence"]]
    spec.pop("signing", None)
    spec["policies"] = ["starter"]
    spec["output"] = {"dir": "reports", "formats": ["html", "pdf"]}
    spec["audit"].update(intended_use="Orders the catalogue's books for a shopper's search",
                         human_oversight="Merchandisers review the top results weekly", data_origin="synthetic")
    spec["features"] = {"sponsored": {"meaning": "The publisher paid for placement", "unit": "yes/no"}}
    spec["findings"] = [{"rule": "BASE-8", "owner": "Search team", "due": "2026-03-31"}]
    (folder / "audit.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    return run_audit(folder / "audit.yaml", today=DAY).run_dir


def _pdf_text(pdf: Path, last: int | None = None) -> str:
    if not shutil.which("pdftotext"):
        pytest.skip("poppler-utils (pdftotext) not installed; .ci/run installs them")
    args = ["pdftotext", "-layout", *(["-l", str(last)] if last else []), str(pdf), "-"]
    return subprocess.run(args, check=True, capture_output=True, text=True).stdout


@pytest.mark.slow
def test_what_the_evidence_detects_reaches_the_first_pages_and_the_opinion(starter_run: Path) -> None:
    assert_consistent(starter_run)
    document = json.loads((starter_run / "evidence.json").read_text())
    assert document["opinion"] != "positive"
    kinds = {d["kind"]: d for d in document["detections"]}
    assert "undeclared-main-parameter" in kinds and "sales_rank_log" in kinds["undeclared-main-parameter"]["title"]
    assert "sensitive-parameter-effect" in kinds and "sponsored" in kinds["sensitive-parameter-effect"]["title"]
    first_pages = _pdf_text(starter_run / "report.pdf", last=5)
    summary = first_pages.split("Executive summary", 1)[-1]
    for needle in ("sales_rank_log", "sponsored", "Overall opinion"):
        assert needle in summary, needle
    assert "Overall opinion: positive\n" not in first_pages


@pytest.mark.slow
def test_the_pdf_carries_what_a_regulator_expects(starter_run: Path) -> None:
    text = re.sub(r"\s+", " ", _pdf_text(starter_run / "report.pdf"))
    for needle in ("Glossary and references", "Intended use", "Orders the catalogue's books", "Human oversight",
                   "Limitations", "Feature dictionary", "The publisher paid for placement", "How to verify this report",
                   "Singh, J., Wang, Z., Khosla, M., Anand, A. (2020)", "Recommended",
                   "synthetic data", "Why it matters"):
        assert needle in text, needle
    assert "paper 000" not in text and "paper 001" not in text
    html = (starter_run / "report.html").read_text()
    acted_on = html.split("Findings to act on")[1].split("Rules that passed")[0]
    assert "BASE-8" in acted_on and "Search team, due 2026-03-31" in acted_on and "sales_rank_log" in acted_on


def test_the_summary_lists_every_unjudged_detection_and_every_rule() -> None:
    document = {
        "opinion": "positive with comments",
        "findings": [
            {"rule": "A-1", "title": "Quality", "pack": "a", "status": "PASS", "severity": "major", "metric": "m",
             "value": 0.9, "requirement": "FAIL if < 0.5", "citation": "Law 1", "rationale": "why", "message": "ok",
             "evidence": "ranking_quality", "interval": [0.8, 0.95], "remedy": "do", "threshold_reason": ""},
            {"rule": "B-1", "title": "Quality", "pack": "b", "status": "WARN", "severity": "minor", "metric": "m",
             "value": 0.9, "requirement": "FAIL if < 0.5", "citation": "Law 2", "rationale": "why",
             "message": "unsure", "evidence": "ranking_quality", "interval": [0.4, 0.95], "inconclusive": True,
             "remedy": "collect more queries", "threshold_reason": ""}],
        "detections": [{"kind": "x", "title": "Something found", "message": "details", "severity": "major",
                        "citation": "Law 3", "judged_by": [], "judged_by_rules": [], "evidence": "surrogate"}],
        "assignments": [{"rule": "B-1", "owner": "Team", "due": "2027-01-01"}],
        "evidence": {"dataset": {"metrics": {}}},
        "audit": {"out_of_scope": ["Credit decisions"]},
    }
    summary = executive_summary(document_of(**document), REGISTRY)
    assert [g["head"].rule for g in summary["act_on"]] == ["B-1"]  # one finding for the same requirement ...
    assert [f.rule for f in summary["act_on"][0]["rules"]] == ["B-1", "A-1"]  # ... citing both rules
    assert summary["act_on"][0]["citations"] == ["Law 2", "Law 1"]
    assert summary["act_on"][0]["record"]["owner"] == "Team"  # without a register: the spec's `findings:`
    assert summary["act_on"][0]["remedy"].endswith("If that confirms it: collect more queries")  # 0.9 meets it
    assert [d["title"] for d in summary["unjudged"]] == ["Something found"]
    first = summary["headline"][0]
    assert "1 warning" in first and "1 detected problem no applied rule judges" in first
    assert [r["title"] for r in summary["rows"]["shown"]] == ["Something found", "Quality"]  # major before minor
    assert summary["rows"]["shown"][1]["verdict"] == "inconclusive warning"
    assert any("Credit decisions" in item for item in summary["not_covered"])
    assert sum("was not requested" in item for item in summary["not_covered"]) == len(REGISTRY)


def test_feature_dictionary_from_the_spec_and_a_csv(tmp_path: Path) -> None:
    from auditor.inputs.spec import FeatureInfo

    names = ["price", "rating", "sponsored"]
    csv = tmp_path / "features.csv"
    csv.write_text("name,meaning,unit\nprice,Price of the book,EUR\nrating,Mean review,1-5\n")
    out = build({"sponsored": FeatureInfo.model_validate("Paid placement")}, csv, names, spec_file=tmp_path / "s")
    assert list(out) == names and out["price"] == {"meaning": "Price of the book", "unit": "EUR"}
    assert out["sponsored"] == {"meaning": "Paid placement", "unit": None}
    csv.write_text("name,meaning\nprise,Price\n")
    with pytest.raises(InputError, match="did you mean 'price'"):
        build({}, csv, names, spec_file=tmp_path / "s")
    csv.write_text("feature,description\nprice,Price\n")
    with pytest.raises(InputError, match="needs the columns"):
        build({}, csv, names, spec_file=tmp_path / "s")


def test_glossary_covers_every_explainer_and_references_are_complete() -> None:
    terms = " ".join(term for term, _ in GLOSSARY)
    for word in ("TreeSHAP", "KernelSHAP", "LIRME", "EXS", "GREEDY", "ASIPair", "RAIPair", "ILMART", "Validity",
                 "Completeness", "nDCG", "Masking", "RANDOM"):
        assert word in terms, word
    from auditor.explain import registry

    for explainer in registry.EXPLAINERS.values():  # every explainer a spec can name, by its report label
        label = explainer.label.replace(" (ours)", "").split(" (")[0].split(",")[0]
        assert label in terms, label
    for short, full in REFERENCES.values():
        assert short and re.search(r"\(\d{4}\)|\d{4}/\d+", full), full
    cited = {short for short, _ in REFERENCES.values()}
    for _, meaning in GLOSSARY:  # every work the glossary cites by author and year is in the references
        for match in re.findall(r"\(([A-Z][^()]*? \d{4})", meaning):
            for part in match.split(";"):
                assert part.strip() in cited or not part.strip()[-4:].isdigit(), part


def test_page_2_says_how_serious_a_requirement_left_unmeasured_is() -> None:
    """A reader review (issue 56): "1 requirement not measured" hid that it was a major one."""
    from auditor.evidence import REGISTRY
    from auditor.report.summary import executive_summary

    document = document_of(findings=[{"rule": "P2B-12", "status": "UNMEASURED", "severity": "major", "title": "t"},
                                     {"rule": "X-1", "status": "PASS", "severity": "minor", "title": "u"}],
                           opinion="positive with comments")
    assert "1 requirement not measured (major)" in " ".join(executive_summary(document, REGISTRY)["headline"])
    minor = document_of(findings=[{"rule": "X-2", "status": "UNMEASURED", "severity": "minor", "title": "t"}],
                        opinion="positive with comments")
    assert "not measured (" not in " ".join(executive_summary(minor, REGISTRY)["headline"])


def test_the_glossary_and_references_hold_only_what_this_report_uses() -> None:
    """Issue 56, item 4: a reference is listed when the report cites it, a term when the report uses it — a hiring
    audit of ranking quality by group cites Beutel et al. 2019 and no explainer's paper, and shows neither Waiver
    nor PSI when it has no waiver and no comparison with an earlier review."""
    from auditor.report.glossary import glossary_for
    from auditor.report.render import cited

    table = {"title": "Accuracy by group of persons (pairwise)", "columns": ["column"], "rows": [],
             "note": "Pairs pooled over queries, 95% interval by resampling queries (Beutel et al. 2019)."}
    document = document_of(evidence={"ranking_quality": {"metrics": {"ranking_quality.ndcg@10.mean": 0.8},
                                                         "tables": [table]}})
    assert list(cited(document)) == ["beutel2019"]
    terms = {term for term, _ in glossary_for(document)}
    assert "nDCG@k" in terms and not terms & {"Waiver", "PSI", "Kendall's tau", "TreeSHAP", "ILMART, surrogate"}
    waived = document_of(evidence=document.to_json()["evidence"], findings=[{"rule": "X-1", "status": "WAIVED"}])
    assert "Waiver" in {term for term, _ in glossary_for(waived)}


def _wide_folder(tmp_path: Path) -> Path:
    """A 40-feature ranker on 70 generated queries, negative-valued features included."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(5)
    X, y, sizes = make_queries(rng, 70, 40, min_docs=8, max_docs=30)
    X[:, 10:20] -= 0.5
    booster = lgb.train({"objective": "lambdarank", "num_leaves": 15, "learning_rate": 0.1, "verbosity": -1,
                         "seed": 1, "deterministic": True, "num_threads": 1, "min_data_in_leaf": 5},
                        lgb.Dataset(X, y, group=sizes), num_boost_round=60)
    booster.save_model(str(tmp_path / "model.txt"))
    qid = np.repeat(np.arange(len(sizes)), sizes)
    columns = {"qid": qid, "label": y.astype(int), "doc_id": np.arange(len(y))}
    columns.update({f"Column_{i}": X[:, i] for i in range(X.shape[1])})
    import pandas as pd

    pd.DataFrame(columns).to_csv(tmp_path / "test.csv", index=False)
    spec = {"audit": {"title": "Wide", "organisation": "O"}, "model": {"path": "model.txt"},
            "dataset": {"path": "test.csv", "doc_id_column": "doc_id"},
            "evidence": [{"ranking_quality": {"cutoffs": [5, 10]}}, {"global_importance": {}},
                         {"local_explanations": {"methods": ["random", "treeshap5", "greedy_cover_eps"], "k": 5,
                                                 "k_curve": [], "queries": 25}},
                         {"disclosure_consistency": {"declared": ["Column_0", "Column_1", "Column_2"],
                                                     "resamples": 60}}],
            "policies": ["starter", "model-governance"], "output": {"dir": "reports", "formats": ["html"]}}
    (tmp_path / "audit.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    return tmp_path / "audit.yaml"


@pytest.mark.slow
@pytest.mark.parametrize("which", ["bookstore", "wide"])
def test_seeds_7_and_8_give_the_same_verdicts(which: str, bookstore: Path, tmp_path: Path) -> None:
    spec = write_spec(bookstore, policies=["starter", "eu-p2b-art5"]) if which == "bookstore" else \
        _wide_folder(tmp_path / "wide")
    verdicts = []
    for seed in (7, 8):
        run = run_audit(spec, seed=seed, today=DAY)
        verdicts.append({f.rule: f.status for f in run.findings})
    flips = {rule: (verdicts[0][rule], verdicts[1][rule]) for rule in verdicts[0]
             if {verdicts[0][rule], verdicts[1][rule]} == {"PASS", "FAIL"}}
    assert not flips, flips
    assert verdicts[0].keys() == verdicts[1].keys() and len(verdicts[0]) > 5


def test_the_glossary_and_limitations_name_only_what_ran() -> None:
    """Issue 56, "only what ran": a report whose audit measured ranking quality alone defines no explainer, no
    surrogate and no pairwise term, and says nothing of feature importance it did not compute."""
    from auditor.report.glossary import NEEDS, glossary_for

    def document(status: str = "ok", **metrics: list[str]) -> EvidenceDocument:
        return document_of(evidence={kind: {"status": status, "metrics": dict.fromkeys(names, 0.5)}
                                     for kind, names in metrics.items()})

    quality = [term for term, _ in glossary_for(document(ranking_quality=["ranking_quality.ndcg@10.mean"]))]
    assert "nDCG@k" in quality and "Query, document" in quality
    assert not {"EXS", "ASIPair, RAIPair", "ILMART, surrogate", "Main parameters", "SHAP"} & set(quality)
    wider = [term for term, _ in glossary_for(document(pairwise=["pairwise.margin.mean"],
                                                       surrogate=["surrogate.fidelity.kendall.mean"]))]
    assert {"ASIPair, RAIPair", "ILMART, surrogate", "Fidelity"} <= set(wider) and "EXS" not in wider
    failed = document("error", pairwise=["pairwise.margin.mean"])
    assert "ASIPair, RAIPair" not in [term for term, _ in glossary_for(failed)]
    assert set(NEEDS) <= {term for term, _ in GLOSSARY}  # no condition on a term that is not there


def test_a_warning_only_rule_beyond_its_level_is_a_risk_in_words_beside_a_positive_opinion() -> None:
    """A reader review (issue 56, item 6): LL144 sets no level, so an impact ratio of 0.572 whose whole interval is
    under the four-fifths line only warns; page 2 must still say it as a risk, with the figure, not as an all-clear."""
    ratio = {"rule": "LL144-7", "status": "WARN", "severity": "major", "title": "The smallest impact ratio",
             "metric": "selection.min_ratio", "value": 0.572, "interval": [0.49, 0.637],
             "requirement": "WARN if < 0.8", "evidence": "selection_rates"}
    risk = " ".join(executive_summary(document_of(findings=[ratio], opinion="positive with comments"),
                                      REGISTRY)["headline"])
    assert "A risk no law sets a level for" in risk and "0.572 (95% interval 0.490 to 0.637)" in risk
    assert "below the comparison level of 0.8 over its whole interval" in risk
    crossing = {**ratio, "interval": [0.7, 0.85], "inconclusive": True}  # the data cannot tell: no risk stated
    assert "A risk" not in " ".join(executive_summary(
        document_of(findings=[crossing], opinion="positive with comments"), REGISTRY)["headline"])
    failing = {**ratio, "requirement": "FAIL if < 0.5; WARN if < 0.8"}  # a rule that can fail says so itself
    assert "A risk" not in " ".join(executive_summary(
        document_of(findings=[failing], opinion="positive with comments"), REGISTRY)["headline"])


def test_page_2_says_which_packs_were_judged_as_if_their_law_applied() -> None:
    """A reader review (W7): a critical DMA finding read as established exposure while the DMA's applicability was
    not established; page 2's coverage line says so."""
    from auditor.report.summary import covered

    packs = [{"pack": "starter", "applicability": "applies to every provider"},
             {"pack": "eu-dma-art6-5", "applicability": "applicability not established (…): judged as if it applied"},
             {"pack": "eu-p2b-art5", "applicability": "applicability not established (…): judged as if it applied"}]
    assert "2 of them judged as if the law applied (applicability not established)" in covered(
        document_of(policies=packs), REGISTRY, 3)
    assert "eu-dma-art6-5 judged as if the law applied" in covered(document_of(policies=packs[:2]), REGISTRY, 3)
    assert "as if" not in covered(document_of(policies=packs[:1]), REGISTRY, 3)


def test_a_finding_about_several_subjects_names_them_all() -> None:
    """A reader review (W5): "Undeclared main ranking parameter: f11_score; and 1 more" read as one missing."""
    from auditor.report.summary import _fact

    found = [{"title": f"Undeclared main ranking parameter: {name}"} for name in ("f11", "f75", "f3", "f9")]
    assert _fact(found[:2]) == "Undeclared main ranking parameter (2): f11 and f75"
    assert _fact(found) == "Undeclared main ranking parameter (4): f11, f75, f3 and 1 more"
    assert _fact([{"title": "A"}, {"title": "B"}]) == "A; and 1 more"  # different facts: the first, and a count


def test_the_paid_placement_key_figure_says_how_far_documents_move() -> None:
    """A reader review (D10): "44.3% of queries' top results change" alone pictured paid placement reshaping half
    the result pages, where a document moves 0.68 places on average."""
    from auditor.report.summary import key_numbers

    metrics = {"influence.sponsored.topk_changed_share": 0.443, "influence.max.topk_changed_share": 0.443,
               "influence.sponsored.rank_shift.mean": 0.679, "influence.sponsored.rank_shift.max": 9.0}
    items = document_of(evidence={"parameter_influence": {"metrics": metrics}}).evidence
    row = next(r for r in key_numbers(items) if r["evidence"] == "parameter_influence")
    assert "'sponsored'" in row["label"] and "a document moves 0.679 places on average (at most 9)" in row["reference"]


def test_the_ranking_quality_key_figure_says_how_queries_without_a_relevant_document_count() -> None:
    """A reader review (D11): the 4 queries with no relevant document are scored 1 and lift the mean."""
    from auditor.report.summary import key_numbers

    metrics = {"ranking_quality.ndcg@10.mean": 0.818, "ranking_quality.all_zero_label_queries": 4.0}
    row = key_numbers(document_of(evidence={"ranking_quality": {"metrics": metrics}}).evidence)[0]
    assert "; the 4 queries with no relevant document count as 1" in row["reference"]
    skipped = document_of(evidence={"ranking_quality": {"metrics": metrics, "options": {"all_zero_queries": "skip"}}})
    assert "no relevant document" not in key_numbers(skipped.evidence)[0]["reference"]


def test_the_most_favoured_groups_finding_names_the_group_from_its_stored_evidence() -> None:
    """Reader review W3: page 2's title of DSA-11 said "the most favoured group" without naming it; the summary reads
    the finding's stored evidence (tests/test_exposure.py has the sentence's wording)."""
    finding = {"rule": "DSA-11", "status": "WARN", "severity": "major", "title": "No group gets much more attention",
               "metric": "exposure.max.ratio", "value": 1.404, "interval": [0.0, 3.896], "inconclusive": True,
               "requirement": "FAIL if > 1.25; WARN if > 1.1", "evidence": "exposure"}
    item = wide_exposure_item().model_dump()
    summary = executive_summary(document_of(findings=[finding], evidence={"exposure": item},
                                            opinion="positive with comments"), REGISTRY)
    title = summary["rows"]["shown"][0]["title"]
    assert title.startswith("The most favoured group, f1_count = 7 (met in 10 of 43 queries), gets 1.40 times")
    assert "unreliable, as its 95% interval reaches 0" in summary["act_on"][0]["sentence"]


def test_the_own_products_key_figure_is_the_measure_a_rule_judges() -> None:
    """Reader review D5: page 2 showed the own products' ratio 1.73 with no requirement, while the rule (P2B-11)
    judged the flag's own gain, +10.7 pp. The judged figure is shown with its requirement, 1.73 beside it."""
    from auditor.report.summary import key_numbers

    groups = [{"column": "own_brand", "values": [{"value": "1", "label": "own_brand = yes"}]}]
    item = {"facts": {"groups": groups}, "options": {"own": {"own_brand": 1.0}},
            "metrics": {"exposure.own.ratio": 1.729, "exposure.own.ratio.ci95_low": 1.555,
                        "exposure.own.ratio.ci95_high": 1.943, "exposure.own.counterfactual.share_change": 0.1068,
                        "exposure.own.counterfactual.share_change.ci95_low": 0.0903,
                        "exposure.own.counterfactual.share_change.ci95_high": 0.1246}}
    rule = {"rule": "P2B-11", "status": "WARN", "severity": "minor", "evidence": "exposure",
            "metric": "exposure.own.counterfactual.share_change", "value": 0.1068, "interval": [0.0903, 0.1246],
            "requirement": "WARN if > 0.01"}
    document = document_of(evidence={"exposure": item}, findings=[rule])
    [row] = key_numbers(document.evidence, document.findings)
    assert (row["metric"], row["value_text"], row["interval_text"]) == (
        "exposure.own.counterfactual.share_change", "+10.7 pp", "+9.0 pp to +12.5 pp")
    assert row["reference_point"] == (
        "own products: the documents with own_brand = yes; 0 = the flag moves none; attention ÷ what relevance "
        "earns: 1.73 (1.55 to 1.94). Compared with: WARN if > +1.0 pp (here: warning)")
    ratio_rule = {**rule, "rule": "DMA-1", "metric": "exposure.own.ratio", "value": 1.729,
                  "requirement": "FAIL if > 1.25"}
    both = document_of(evidence={"exposure": item}, findings=[{**rule, "status": "PASS"}, ratio_rule])
    [row] = key_numbers(both.evidence, both.findings)  # both judged: the worse verdict's figure, the other beside it
    assert row["metric"] == "exposure.own.ratio" and "share due to the flag: +10.7 pp" \
        in row["reference_point"]
    [row] = key_numbers(document.evidence, [])  # judged by none: the ratio, as before
    assert row["metric"] == "exposure.own.ratio"


def test_a_metric_two_rules_judge_is_one_technical_line() -> None:
    """Reader review W10: "influence.max.topk_changed_share = 0.7442; … · influence.max.topk_changed_share = 0.7442;
    WARN if > 0.1" — the key once, with each rule's requirement, and free to break after its dots, not inside a word."""
    from auditor.report.render import breakable

    rule = {"title": "Paid placement", "status": "WARN", "severity": "minor",
            "metric": "influence.max.topk_changed_share", "value": 0.7442, "citation": "Law", "rationale": "why",
            "message": "m", "evidence": "parameter_influence", "remedy": "", "threshold_reason": ""}
    document = document_of(opinion="positive with comments", evidence={"dataset": {"metrics": {}}}, findings=[
        {**rule, "rule": "DSA-7", "pack": "dsa", "requirement": "FAIL if > 0.5; WARN if > 0.25"},
        {**rule, "rule": "BASE-9", "pack": "starter", "requirement": "WARN if > 0.1"},
        {**rule, "rule": "P2B-9", "pack": "p2b", "requirement": "WARN if > 0.1"}])
    lines = [line for g in executive_summary(document, REGISTRY)["act_on"] for line, _ in g["technical_refs"]]
    assert lines == ["influence.max.topk_changed_share = 0.7442; DSA-7: FAIL if > 0.5; WARN if > 0.25 · "
                     "BASE-9, P2B-9: WARN if > 0.1"], lines
    assert str(breakable(lines[0])).startswith("influence.<wbr>max.<wbr>topk_changed_share = 0.7442; ")


def test_an_inconclusive_warning_whose_estimate_meets_the_requirement_asks_for_confirmation_first() -> None:
    """A reader review (s67, W-N1): an own-products ratio of 0.976 (interval 0.815 to 1.15) was told to remove the
    own-product flag, where only the interval's top reached the warning level."""
    ratio = {"rule": "DMA-1", "status": "WARN", "severity": "critical", "title": "t", "metric": "exposure.own.ratio",
             "value": 0.976, "interval": [0.815, 1.149], "inconclusive": True, "evidence": "exposure",
             "requirement": "FAIL if > 1.25; WARN if > 1.1; FAIL if the evidence is absent",
             "remedy": "Remove the own-product flag and re-run the audit."}
    remedy = executive_summary(document_of(findings=[ratio]), REGISTRY)["act_on"][0]["remedy"]
    assert remedy.startswith("The estimate itself meets the requirement") and "If that confirms it: remove" in remedy
    beyond = {**ratio, "value": 1.2}  # the estimate itself warns: the remedy as the pack writes it
    assert executive_summary(document_of(findings=[beyond]), REGISTRY)["act_on"][0]["remedy"].startswith("Remove")
