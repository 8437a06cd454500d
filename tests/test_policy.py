"""Rules, statuses, waivers and the opinion."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from auditor.core.errors import InputError
from auditor.evidence.base import EvidenceResult
from auditor.inputs.spec import Waiver
from auditor.judging.policy import (
    Condition,
    LoadedPack,
    PolicyPack,
    check_waivers,
    evaluate,
    exit_code,
    load_pack,
    load_packs,
    opinion,
)

TODAY = dt.date(2026, 11, 22)


def pack(*rules: dict) -> list[LoadedPack]:
    base = {"title": "t", "evidence": "ranking_quality", "citation": "c", "rationale": "r", "severity": "major"}
    model = PolicyPack(pack="p", title="P", version="1", rules=[{**base, **r} for r in rules])
    return [LoadedPack(pack=model, path=Path("p.yaml"), sha256="0")]


def results(**metrics: float) -> dict[str, EvidenceResult]:
    return {"ranking_quality": EvidenceResult(name="ranking_quality", metrics=dict(metrics))}


def judge(rules: list[LoadedPack], evidence: dict, waivers: list[Waiver] = ()) -> list:
    return evaluate(rules, evidence, requested=set(evidence), waivers=list(waivers), today=TODAY)


def test_condition_text_forms() -> None:
    assert Condition.model_validate("<= 0.5").holds(0.5)
    assert not Condition.model_validate("> 1e-6").holds(1e-7)
    with pytest.raises(ValueError, match="not a condition"):
        Condition.model_validate("less than 3")


@pytest.mark.parametrize(("value", "status"), [(0.3, "FAIL"), (0.5, "WARN"), (0.7, "PASS")])
def test_statuses(value: float, status: str) -> None:
    rules = pack({"id": "R1", "metric": "m", "fail_if": "< 0.4", "warn_if": "< 0.6"})
    finding = judge(rules, results(m=value))[0]
    assert finding.status == status and finding.value == value
    assert finding.requirement == "FAIL if < 0.4; WARN if < 0.6"


def test_error_skipped_and_missing_metric() -> None:
    rules = pack({"id": "R1", "metric": "m", "fail_if": "< 0.4"}, {"id": "R2", "metric": "ndcg_mean", "fail_if": "< 1"},
                 {"id": "R3", "metric": "x", "fail_if": "< 1", "evidence": "global_importance"})
    failed = {"ranking_quality": EvidenceResult(name="ranking_quality", status="error", error="no labels")}
    assert [f.status for f in judge(rules, failed)] == ["ERROR", "ERROR", "UNMEASURED"]  # R3: not requested
    found = judge(rules, results(**{"m": 1.0, "ndcg.mean": 2.0}))
    # a metric its kind declares (checked when the packs load) that this spec's options did not produce
    assert found[1].status == "UNMEASURED" and "does not produce ndcg_mean" in found[1].message
    assert judge(rules, results(m=float("nan")))[0].status == "ERROR"


def test_waivers_apply_until_expiry() -> None:
    rules = pack({"id": "R1", "metric": "m", "fail_if": "< 0.4"})
    active = Waiver(rule="R1", justification="j", approver="A", expires=TODAY)
    expired = Waiver(rule="R1", justification="j", approver="A", expires=TODAY - dt.timedelta(days=1))
    waived = judge(rules, results(m=0.1), [active])[0]
    assert waived.status == "WAIVED" and waived.waiver["approver"] == "A"
    failed = judge(rules, results(m=0.1), [expired])[0]
    assert failed.status == "FAIL" and "expired" in failed.message


def test_waiver_for_unknown_rule_is_bad_input() -> None:
    with pytest.raises(InputError, match="did you mean 'R1'"):
        check_waivers([Waiver(rule="R2", justification="j", approver="a", expires=TODAY)],
                      pack({"id": "R1", "metric": "m", "fail_if": "< 1"}))


def test_opinion_and_exit_codes() -> None:
    rules = pack({"id": "R1", "metric": "m", "fail_if": "< 0.4", "warn_if": "< 0.6", "severity": "minor"},
                 {"id": "R2", "metric": "m", "fail_if": "< 0.2"})
    assert opinion(judge(rules, results(m=0.9))) == "positive"
    assert opinion(judge(rules, results(m=0.5))) == "positive with comments"
    assert opinion(judge(rules, results(m=0.3))) == "positive with comments"  # only the minor rule fails
    assert opinion(judge(rules, results(m=0.1))) == "negative"
    assert opinion([]) == "no policy applied"
    warn = judge(rules, results(m=0.5))
    assert (exit_code(warn, "fail"), exit_code(warn, "warn"), exit_code(warn, "never")) == (0, 1, 0)


def test_builtin_pack_loads_and_duplicate_ids_refused(tmp_path: Path) -> None:
    starter = load_pack("starter", base_dir=tmp_path)
    assert starter.pack.pack == "starter" and len(starter.sha256) == 64
    with pytest.raises(InputError, match="did you mean 'starter'"):
        load_pack("startr", base_dir=tmp_path)
    with pytest.raises(InputError, match="listed more than once"):
        load_packs(["starter", "starter"], base_dir=tmp_path)


def test_pack_file_errors_have_positions(tmp_path: Path) -> None:
    (tmp_path / "mine.yaml").write_text(
        "pack: mine\ntitle: M\nversion: '1'\nrules:\n  - id: M1\n    title: t\n    evidence: dataset\n"
        "    metric: dataset.n_docs\n    fail_if: less than 3\n    severity: minor\n    citation: c\n"
        "    rationale: r\n")
    with pytest.raises(InputError) as info:
        load_pack("./mine.yaml", base_dir=tmp_path)
    assert "mine.yaml:9:14" in str(info.value) and "not a condition" in str(info.value)
