"""Low-confidence flags: the criteria, the flag-gap statistic, and the evidence on the bookstore example."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from auditor.checks.confidence import agreement, flag_gap, score_margin, set_overlap, set_weights, verdict
from auditor.evidence.base import AuditContext, EvidenceResult
from auditor.evidence.kinds.confidence import ENTRY, present
from auditor.evidence.kinds.confidence import measure as confidence
from auditor.evidence.kinds.local_explanations import measure as local_explanations
from auditor.run.engine import run_audit
from tests.conftest import make_bookstore_context, write_spec
from tests.helpers import document_of


def test_overlap_margin_and_weights():
    assert set_overlap((1, 2, 3), (3, 2, 1)) == 1.0
    assert set_overlap((1, 2, 3), (4, 5, 6)) == 0.0
    assert set_overlap((1, 2), (2, 9, 8)) == pytest.approx(1 / 3)
    assert score_margin(np.array([3.0, 1.0, 2.0, 0.0]), 3) == pytest.approx(1.0 / np.std([3.0, 1.0, 2.0, 0.0]))
    assert score_margin(np.array([2.0, 2.0, 1.0]), 2) == 0.0  # a tie at the top
    assert score_margin(np.array([1.0, 1.0]), 2) == 0.0  # no spread at all
    np.testing.assert_array_equal(set_weights((4, 0, 2), 5), [2, 0, 1, 0, 3])


def test_verdict_names_every_reason_and_ignores_missing_measures():
    thresholds = {"validity": 0.5, "agreement": 0.4, "additivity": 1e-3, "path_accuracy": 0.6}
    judged = verdict({"validity": 0.2, "agreement": 0.9, "additivity": 0.1, "path_accuracy": float("nan")},
                     thresholds)
    assert judged.flagged and judged.criteria == ["validity", "additivity"]
    assert "validity 0.20 < 0.5" in judged.reasons[0]
    assert not verdict({"validity": 0.9, "additivity": 0.0}, thresholds).flagged
    assert not verdict({"stability": 0.0}, thresholds).flagged  # criterion not applied: no threshold


def test_flag_gap_is_positive_when_flagged_are_worse_and_undefined_without_both_groups():
    rng = np.random.default_rng(0)
    cluster = np.repeat(np.arange(40), 3)
    flagged = rng.random(120) < 0.3
    values = np.where(flagged, 0.4, 0.8) + rng.normal(scale=0.05, size=120)
    gap, low, high, *_ = flag_gap(values, flagged, cluster, np.random.default_rng(1))
    assert 0.35 < gap < 0.45 and low < gap < high and low > 0.3
    same = flag_gap(rng.normal(size=120), flagged, cluster, np.random.default_rng(1))
    assert same[1] < 0 < same[2]  # no real difference: the interval covers 0
    assert all(np.isnan(flag_gap(values, np.ones(120, dtype=bool), cluster, rng)))


@pytest.fixture(scope="module")
def context() -> AuditContext:
    return make_bookstore_context()


def _judged(context: AuditContext, **options) -> EvidenceResult:
    """The evidence measured, then presented from its stored form as the engine does (measure, then present)."""
    return ENTRY.run(context, confidence.ConfidenceOptions(**options))


def test_confidence_judges_the_explanations_the_report_shows(context):
    methods = ["treeshap5", "greedy_cover_eps", "validity_search"]
    local = local_explanations.run(context, local_explanations.LocalExplanationsOptions(
        methods=["random", *methods], k=4, k_curve=[], queries=6, optimum_max_subsets=0))
    rows_before = context.model.rows_evaluated
    result = confidence.run(context, confidence.ConfidenceOptions(methods=methods, k=4, queries=6,
                                                                  criteria=["validity", "agreement", "margin"]))
    # the same explanations (shared through the memo), so judging them evaluated only the validity of the sets
    shown = {(r["query"], r["method"]): r["selected"] for r in local.records}
    judged = {(r["query"], r["method"]): r["selected"] for r in result.records}
    assert judged and all(shown[key] == sets for key, sets in judged.items())
    validity = {(r["query"], r["method"]): r["validity"] for r in local.records}
    assert all(r["measures"]["validity"] == pytest.approx(validity[(r["query"], r["method"])], abs=1e-6)
               for r in result.records)
    n_docs = sum(r["docs"] for r in local.records if r["method"] == "random")
    options = confidence.ConfidenceOptions()  # the target (held-out rows) and a signal (other rows): the same sets
    per_set = 2 * n_docs * (1 + options.heldout_rows + options.robustness_rows)
    # TreeSHAP below the floor is widened: up to 3k - k larger sets on the audit's masking and the robustness rows,
    # one under the held-out rows
    widening = 2 * n_docs * ((3 * 4 - 4) * (1 + options.robustness_rows) + options.heldout_rows)
    assert context.model.rows_evaluated - rows_before <= len(methods) * per_set + widening
    assert 0 <= result.metrics["confidence.flagged_fraction"] <= 1
    for m in methods:
        assert f"confidence.{m}.flagged_fraction" in result.metrics


def test_a_strict_threshold_flags_with_its_reason_and_flags_validate(context):
    result = _judged(context, methods=["treeshap5", "greedy_cover_eps"], k=3, queries=8,
                     criteria=["validity", "path_accuracy", "margin", "additivity", "stability"],
                     thresholds={"validity": 0.95})
    flagged = [r for r in result.records if r["flagged"]]
    low = [r for r in result.records if r["measures"]["validity"] < 0.95]
    assert low and all(r["flagged_by_rules"] for r in low)  # the rule-based verdict, kept beside the estimate
    assert any("does not reproduce the ranking" in reason for r in low for reason in r["rule_reasons"])
    # the target: validity >= 0.95 under held-out rows (and path accuracy): few explanations reach it
    assert all(r["reliable"] == (r["heldout_validity"] >= 0.95 and r["measures"].get("path_accuracy", 1) >= 0.6)
               for r in result.records)
    assert flagged and all(r["reasons"] and r["reliability"] < 0.5 for r in flagged)
    assert all(r["measures"]["additivity"] < 1e-6 for r in result.records if r["method"] == "treeshap5")
    assert "stability" not in result.records[0]["measures"]  # TreeSHAP is deterministic: no rerun
    gap_rows = [t for t in result.tables if t.title == "Do the flags earn their keep?"]
    assert gap_rows and gap_rows[0].rows
    predicts = next(t for t in result.tables if t.title == "How well the reliability estimate predicts")
    share = next(row for row in predicts.rows if row[0].startswith("share flagged"))
    assert share[2] and " to " in share[2]  # the interval page 2 prints beside the same share (a reader review)
    gap = result.metrics.get("confidence.validation.path_accuracy_gap")  # absent: not measured, and why
    assert (gap is not None and np.isfinite(gap)) or \
        "no explainer had both flagged and unflagged" in result.unmeasured["confidence.validation.path_accuracy_gap"]


def test_bookstore_report_shows_pairwise_and_flagged_explanations(bookstore: Path):
    spec = write_spec(bookstore, evidence=[
        {"pairwise": {"queries": 3, "background_size": 150}},
        {"confidence": {"methods": ["treeshap1", "greedy_cover_eps"], "k": 3, "queries": 4,
                        "thresholds": {"validity": 0.99}}}])
    run = run_audit(spec)
    document = json.loads((run.run_dir / "evidence.json").read_text())
    pairs = document["evidence"]["pairwise"]["records"]
    assert len(pairs) == 3 and all(p["rank_a"] == 1 and p["rank_b"] == 2 for p in pairs)
    assert all(abs(sum(p["phi"].values()) - (p["value"] - p["base"])) < 1e-6 for p in pairs)
    flags = document["evidence"]["confidence"]["records"]
    assert any(r["flagged"] and r["reasons"] for r in flags)
    html = (run.run_dir / "report.html").read_text()
    assert "Why each document is ranked above the next" in html
    assert "Explanations not to rely on" in html and "estimated reliability" in html
    assert "How well the reliability estimate predicts" in html


def test_agreement_counts_only_explainers_at_least_as_valid():
    sets = [(0, 1, 2), (0, 1, 3), (4, 5, 6)]
    validity = np.array([0.9, 0.8, 0.2])
    assert np.isnan(agreement(sets, validity, 0))  # the most valid explainer has no one to defer to
    assert agreement(sets, validity, 1) == pytest.approx(2 / 3)  # only the stronger first one counts
    assert agreement(sets, validity, 2) == pytest.approx(0.0)  # both stronger ones disagree with it
    # a weak explainer's disagreement does not lower a strong one's agreement: with it, explainer 1 would be 1/3
    assert agreement(sets, np.array([0.9, 0.8, 0.85]), 1) == pytest.approx((2 / 3 + 0) / 2)


def test_near_ties_are_reported_apart_whatever_their_threshold(context):
    options = dict(methods=["treeshap5", "greedy_cover_eps"], k=3, queries=6, criteria=["validity", "margin"])
    plain = confidence.run(context, confidence.ConfidenceOptions(**options))
    tied = _judged(context, **options, thresholds={"margin": 1e9})
    assert all(r["fragile"] for r in tied.records)
    assert tied.metrics["confidence.fragile_queries_share"] == 1.0
    # the margin threshold only lists near ties: the flags (the estimate reads the margin itself) do not move
    assert tied.metrics["confidence.flagged_fraction"] == plain.metrics["confidence.flagged_fraction"]
    table = next(t for t in tied.tables if t.title == "Rankings too close to call at the top")
    assert len(table.rows) == len({r["query"] for r in tied.records})
    assert "near ties" in tied.summary


def test_the_headline_says_when_the_flags_do_not_separate(context):
    result = _judged(context, methods=["treeshap5", "lirme5", "greedy_cover_eps"], k=3, queries=8)
    low = [result.metrics.get(f"confidence.validation.{m}_gap.ci95_low", float("nan"))
           for m in ("validity", "path_accuracy")]
    says = result.summary.startswith(("The flags do not single out worse explanations", "The flags single out "
                                      "explanations of worse"))  # none proven, or which one is and which is not
    assert says == any(np.isfinite(v) and v <= 0 for v in low)
    assert says == any(d.kind == "flags-not-validated" for d in result.detections)


def test_attributions_below_the_floor_are_widened_until_they_hold(context):
    """An attribution that fails with k features gets the fewest more of its own top features that reach the floor
    on the audit's masking, and the report says whether that wider explanation holds under the held-out rows."""
    result = _judged(context, methods=["treeshap5", "greedy_cover_eps"], k=2, queries=8, thresholds={"validity": 0.8})
    below = [r for r in result.records if r["method"] == "treeshap5" and r["heldout_validity"] < 0.8]
    assert below, "a floor of 0.8 with two features leaves some TreeSHAP explanations below it"
    assert all(r["widened"] is None for r in result.records if r["method"] == "greedy_cover_eps")  # sets: no
    widened = [r for r in below if r["widened"] is not None]
    assert widened
    for r in widened:
        assert 2 < r["widened"]["k"] <= 6 and len(r["widened"]["selected"]) == r["widened"]["k"]
        assert r["widened"]["selected"][:2] == r["selected"]  # the same attribution's top features, more of them
        assert r["widened"]["validity"] >= 0.8  # chosen on the audit's masking
    m = result.metrics
    assert m["confidence.widened.explanations"] == len(below) and m["confidence.widened.reached"] == len(widened)
    holding = [r for r in widened if r["widened"]["heldout_validity"] >= 0.8]
    assert m["confidence.widened.reliable_share"] == pytest.approx(len(holding) / len(below))
    table = next(t for t in result.tables if t.title == "Attributions that need more features")
    assert len(table.rows) == min(len(below), present.WIDEN_LISTED) and f"{len(holding)} (" in table.note


def test_the_headline_says_when_reliability_cannot_be_estimated(context):
    """Every explanation reliable (a floor nothing misses): no estimate to fit or test, and the summary opens by
    saying so, with the measured rate, instead of an AUC."""
    result = _judged(context, methods=["treeshap5", "greedy_cover_eps"], k=3, queries=6,
                     thresholds={"validity": -1.0, "path_accuracy": 0.0})
    assert result.metrics["confidence.reliable_share"] == 1.0
    assert not np.isfinite(result.metrics["confidence.validation.auc"])
    assert result.summary.startswith("Reliability could not be estimated: measured on the held-out masking, 100.0%")
    assert f"None of {int(result.metrics['confidence.explanations'])} explanations is flagged." in result.summary
    assert any(d.kind == "reliability-not-predicted" for d in result.detections)
    assert not any("Reliability diagram" in f.title for f in result.figures)  # one bin is no diagram (W9)


def _items(metrics: dict) -> dict:
    return document_of(evidence={"confidence": {"metrics": metrics}}).evidence


def test_the_summary_key_figure_says_when_no_estimate_was_possible():
    """The one-page summary's flagged share carries why there is no AUC: the measured reliable share."""
    from auditor.report.summary import key_numbers

    metrics = {"confidence.flagged_fraction": 0.0, "confidence.validation.auc": float("nan"),
               "confidence.reliable_share": 0.995, "confidence.widened.explanations": 0.0}
    row = next(r for r in key_numbers(_items(metrics)) if r["evidence"] == "confidence")
    assert "no reliability estimate: 99.5% of the explanations hold" in row["reference"]
    metrics.update({"confidence.validation.auc": 0.93, "confidence.validation.auc.ci95_low": 0.9,
                    "confidence.validation.auc.ci95_high": 0.96, "confidence.widened.explanations": 4.0,
                    "confidence.widened.reliable_share": 0.5})
    row = next(r for r in key_numbers(_items(metrics)) if r["evidence"] == "confidence")
    assert "no reliability estimate" not in row["reference"] and "AUC 0.930" in row["reference"]
    assert "4 attributions fall below the validity floor, and 2 of the 4 hold" in row["reference"]  # no overlap said
    flagged = [{"flagged": True}, {"flagged": False}, {"flagged": True}, {"flagged": False}, {"flagged": True}]
    items = document_of(evidence={"confidence": {"metrics": metrics, "records": flagged,
                                                 "facts": {"widened": [0, 1, 2, 3]}}}).evidence
    row = next(r for r in key_numbers(items) if r["evidence"] == "confidence")  # the two sets' overlap, counted
    said = "4 attributions fall below the validity floor (2 of them also flagged), and 2 of the 4 hold"
    assert said in row["reference"]
