"""Verdicts that do not depend on the luck of a sample: rules on estimated metrics are judged with their interval,
detections no rule judges keep the opinion from 'positive', and one requirement from two packs is one finding."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from auditor.evidence.base import Detection, EvidenceResult
from auditor.judging.policy import Condition, group_findings, metric_interval, opinion, shown_value, unjudged
from tests.helpers import judge, packs, quality

CONDITIONS = ["< 0.5", "<= 0.5", "> 0.5", ">= 0.5", "== 0.5", "!= 0.5", "between 0.3 and 0.6", "outside 0.3 and 0.6"]


@settings(max_examples=300, derandomize=True, database=None, deadline=None)
@given(text=st.sampled_from(CONDITIONS), a=st.sampled_from([0.0, 0.2, 0.3, 0.45, 0.5, 0.55, 0.6, 0.9]),
       b=st.sampled_from([0.0, 0.2, 0.3, 0.45, 0.5, 0.55, 0.6, 0.9]))
def test_interval_predicates_agree_with_the_points_inside(text: str, a: float, b: float) -> None:
    low, high = min(a, b), max(a, b)
    condition = Condition.model_validate(text)
    inside = [t for t in (0.3, 0.5, 0.6) if low <= t <= high]  # the thresholds themselves
    points = sorted({low, high, *np.linspace(low, high, 101).tolist(), *inside})
    assert condition.holds_everywhere(low, high) == all(condition.holds(p) for p in points)
    assert condition.holds_somewhere(low, high) == any(condition.holds(p) for p in points)


def _rule(**extra) -> dict:
    return {"id": "R1", "metric": "ranking_quality.ndcg@10.mean", "fail_if": "< 0.5", "warn_if": "< 0.6", **extra}


@pytest.mark.parametrize("mean, low, high, status, inconclusive", [
    (0.80, 0.75, 0.85, "PASS", False),  # the whole interval meets the requirement
    (0.62, 0.58, 0.66, "WARN", True),  # crosses the warn threshold
    (0.55, 0.52, 0.58, "WARN", False),  # wholly in the warn band
    (0.52, 0.47, 0.57, "WARN", True),  # crosses the fail threshold: not a FAIL on the luck of the sample
    (0.40, 0.35, 0.45, "FAIL", False),  # the whole interval breaks it
])
def test_rules_are_judged_on_the_interval(mean: float, low: float, high: float, status: str,
                                          inconclusive: bool) -> None:
    metrics = {"ranking_quality.ndcg@10.mean": mean, "ranking_quality.ndcg@10.ci95_low": low,
               "ranking_quality.ndcg@10.ci95_high": high}
    found = judge(packs(_rule()), quality(**metrics))[0]
    assert (found.status, found.inconclusive) == (status, inconclusive), found.message
    assert found.interval == (low, high)
    assert f"95% interval {low:.4g} to {high:.4g}" in found.message
    if inconclusive:
        assert "inconclusive — the interval crosses the threshold" in found.message
    point = judge(packs(_rule(judge_on="point")), quality(**metrics))[0]  # the opt-out for exact metrics
    assert point.interval is None and point.status == ("FAIL" if mean < 0.5 else "WARN" if mean < 0.6 else "PASS")


def test_a_metric_without_an_interval_is_judged_on_its_value() -> None:
    found = judge(packs(_rule(metric="m")), quality(m=0.45))[0]
    assert found.status == "FAIL" and found.interval is None
    assert metric_interval("a.b.mean", {"a.b.ci95_low": 0.1, "a.b.ci95_high": 0.2}) == (0.1, 0.2)
    assert metric_interval("a.share", {"a.share.ci95_low": 0.1, "a.share.ci95_high": 0.2}) == (0.1, 0.2)
    assert metric_interval("a.b.mean", {"a.b.ci95_low": float("nan"), "a.b.ci95_high": 0.2}) is None


def test_values_are_shown_with_the_digits_that_tell_them_from_the_threshold() -> None:
    rule = packs(_rule(fail_if="< 0.2", warn_if="< 0.3"))[0].pack.rules[0]
    assert shown_value(0.19999999, rule) == "0.19999999"
    assert shown_value(0.2, rule) == "0.2"
    assert shown_value(0.4565, rule) == "0.4565"
    found = judge(packs(_rule(metric="m", fail_if="< 0.2")), quality(m=0.19999999))[0]
    assert "m = 0.19999999, which is < 0.2" in found.message


def _detection(judged_by: tuple[str, ...]) -> Detection:
    return Detection(kind="undeclared-main-parameter", title="Undeclared main ranking parameter: x", message="m",
                     severity="major", citation="P2B Art. 5(1)", judged_by=judged_by, evidence="disclosure_consistency")


def test_a_detection_no_rule_judges_caps_the_opinion() -> None:
    findings = judge(packs(_rule()), quality(**{"ranking_quality.ndcg@10.mean": 0.9}))
    assert opinion(findings) == "positive"
    lonely = _detection(("disclosure.undeclared_main",))
    assert unjudged([lonely], findings) == [lonely]
    assert opinion(findings, unjudged([lonely], findings)) == "positive with comments"
    judged = _detection(("ranking_quality.ndcg@10.mean",))  # a rule on one of its metrics looked at the value
    assert unjudged([judged], findings) == []
    skipped = judge(packs(_rule()), {}, requested=set())  # a SKIPPED rule judges nothing
    assert unjudged([judged], skipped) == [judged]


def test_the_same_requirement_from_two_packs_is_one_group_worst_first() -> None:
    metrics = {"ranking_quality.ndcg@10.mean": 0.55}
    findings = judge([*packs(_rule(), {"id": "R3", "metric": "ranking_quality.map", "fail_if": "< 0.1"}),
                      *packs(_rule(id="R2", fail_if="< 0.3", warn_if="< 0.4"), name="q")],
                     quality(**metrics, **{"ranking_quality.map": 0.5}))
    groups = group_findings(findings)
    assert [[f.rule for f in g] for g in groups] == [["R1", "R2"], ["R3"]]
    assert [g[0].status for g in groups] == ["WARN", "PASS"]
    assert [f.finding for f in findings] == ["R1", "R3", "R1"], "one finding, known by the first rule id"


def test_a_packs_own_rules_on_one_metric_stay_apart() -> None:
    """A warning and a failure threshold of one pack on one metric are two requirements, not one fact of two
    laws."""
    findings = judge(packs(_rule(), _rule(id="R2", fail_if="< 0.3", warn_if="< 0.4")),
                     quality(**{"ranking_quality.ndcg@10.mean": 0.55}))
    assert [f.finding for f in findings] == ["R1", "R2"]
    assert [[f.rule for f in g] for g in group_findings(findings)] == [["R1"], ["R2"]]


def test_evidence_results_carry_their_detections_to_json() -> None:
    result = EvidenceResult(name="disclosure_consistency")
    result.detect("undeclared-main-parameter", "t", "m", severity="major", citation="c", judged_by=("a",),
                  value=0.1, interval=(0.05, float("nan")))
    out = result.to_json()["detections"][0]
    assert out["evidence"] == "disclosure_consistency" and out["judged_by"] == ["a"] and out["interval"] == [0.05, None]
