"""The engagement's dates against the audit's day (issue 56, item 8): a review period not yet over, data said to
come from a period that runs past the audit, a tool in use before its audit — each a detection that reaches page 2,
none when the dates are in order or written as free text."""

from __future__ import annotations

import datetime as dt

import pytest

from auditor.evidence.kinds.governance.measure import period_end, run
from auditor.evidence.kinds.governance.options import GovernanceOptions


def _kinds(day: str, **facts: str) -> dict[str, str]:
    audit = {key: value for key, value in facts.items() if key in ("period", "distribution_date", "data_origin")}
    options = GovernanceOptions(audit=audit, data_window=facts.get("window"), evaluated_on=day)
    return {d.kind: d.message for d in run(None, options).detections}  # type: ignore[arg-type]


@pytest.mark.parametrize(("text", "end"), [
    ("2026", "2026-12-31"), ("2026-Q4", "2026-12-31"), ("2026 Q1", "2026-03-31"), ("2026-H1", "2026-06-30"),
    ("2024-02", "2024-02-29"), ("2026-01-01 to 2026-06-30", "2026-06-30"), ("2026-Q4 (the period under review)",
                                                                          "2026-12-31"),
    ("Q4", None), ("spring 2026", None), ("2026-13", None), ("2026-02-30", None), ("", None),
])
def test_a_period_ends_where_its_words_say(text: str, end: str | None) -> None:
    assert period_end(text) == (dt.date.fromisoformat(end) if end else None)


def test_a_period_not_over_and_data_from_the_future_are_one_detection_naming_both() -> None:
    found = _kinds("2026-11-28", period="2026-Q4", window="2026-Q4 (the period under review)")
    assert set(found) == {"review-period-not-ended"}
    assert "33 days before the period it reviews (2026-Q4) ends on 2026-12-31" in found["review-period-not-ended"]
    assert "the data are said to come from 2026-Q4" in found["review-period-not-ended"]
    assert set(_kinds("2026-11-28", period="2026-Q3", window="2026-Q4")) == {"data-period-after-audit"}
    assert _kinds("2027-01-02", period="2026-Q4", window="2026-Q4") == {}  # both over: nothing to say
    assert _kinds("2026-11-28", period="the autumn review", window="recent months") == {}  # not guessed at


def test_a_period_not_over_with_simulated_data_says_no_data_of_it_are_in_the_evidence() -> None:
    """Simulated data from no calendar period (a reader review: "the period has not ended" beside "Time window:
    none (simulated data)"): the period is still the audit's, but what the evidence misses is all of it, not its
    rest; synthetic data said to come from a period keep the first wording."""
    detections = run(None, GovernanceOptions(  # type: ignore[arg-type]
        audit={"period": "2026", "data_origin": "synthetic"}, evaluated_on="2026-11-29",
        data_window="none (simulated data, not from a calendar period)")).detections
    assert [d.title for d in detections] == ["No data of the review period 2026 are in the evidence"]
    assert "come from no calendar period" in detections[0].message and "rest of the period" not in \
        detections[0].message
    dated = _kinds("2026-11-28", period="2026-Q4", window="2026-Q4", data_origin="synthetic")
    assert "what happens in the rest of the period is not in the evidence" in dated["review-period-not-ended"]


def test_a_tool_in_use_before_its_audit_is_said() -> None:
    found = _kinds("2026-11-28", distribution_date="2026-06-01")
    assert "180 days before the audit's date 2026-11-28" in found["distributed-before-audit"]
    assert "distributed-before-audit" not in _kinds("2026-11-28", distribution_date="2027-01-15")
