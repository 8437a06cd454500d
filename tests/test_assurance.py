"""The report as an assurance document: which laws apply to this provider (a rule of a law that does not bind it is
not applicable, not PASS or FAIL), and the engagement facts with the conclusion in its standard form."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from auditor.evidence.base import EvidenceResult
from auditor.judging.policy import Finding, LoadedPack, PolicyPack, applicability, evaluate, load_packs, opinion
from auditor.report.assurance import conclusion, engagement
from tests.conftest import copy_bookstore
from tests.helpers import document_of

TODAY = dt.date(2026, 11, 26)
BASE = {"title": "t", "evidence": "ranking_quality", "citation": "c", "rationale": "r", "severity": "critical",
        "metric": "m", "fail_if": "< 0.4"}


def _pack(applies_to: dict[str, bool], *rules: dict) -> LoadedPack:
    model = PolicyPack(pack="law", title="A law", version="1", applies_to=applies_to,
                       rules=[{**BASE, **r} for r in rules] or [{**BASE, "id": "L-1"}])
    return LoadedPack(pack=model, path=Path("law.yaml"), sha256="0")


def _judge(packs: list[LoadedPack], provider: dict[str, bool | None]) -> list:
    evidence = {"ranking_quality": EvidenceResult(name="ranking_quality", metrics={"m": 0.1})}
    return evaluate(packs, evidence, requested=set(evidence), waivers=[], today=TODAY, provider=provider)


def test_a_law_that_does_not_bind_the_provider_is_not_applicable() -> None:
    """A failing measure under the DMA of a provider that is no gatekeeper: not applicable, and the opinion is
    not negative because of it; stated as a gatekeeper, or unstated, the rule judges."""
    dma = _pack({"gatekeeper": True})
    outside = _judge([dma], {"gatekeeper": False})[0]
    assert outside.status == "SKIPPED" and outside.message.startswith("not applicable: the provider is not a "
                                                                      "gatekeeper (audit.provider.gatekeeper)")
    assert opinion([outside]) == "positive"
    assert _judge([dma], {"gatekeeper": True})[0].status == "FAIL"
    assert _judge([dma], {})[0].status == "FAIL"  # not stated: judged as if it applied, and said so
    # in words, the key after them (issue 56: not "(audit.provider.gatekeeper not stated)")
    assert "the spec does not say whether the provider is a gatekeeper: audit.provider.gatekeeper)" in \
        applicability(dma, {})
    assert applicability(dma, {}).startswith("applicability not established (the spec does not say whether")
    assert applicability(dma, {"gatekeeper": True}) == "applies: the provider is a gatekeeper"


def test_a_rule_can_narrow_its_packs_scope() -> None:
    dsa = _pack({"online_platform": True}, {"id": "DSA-27"}, {"id": "DSA-34", "applies_to": {"very_large_platform":
                                                                                           True}})
    found = _judge([dsa], {"online_platform": True, "very_large_platform": False})
    assert [f.status for f in found] == ["FAIL", "SKIPPED"]
    assert "not a very large platform" in found[1].message


def test_unknown_provider_facts_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown provider fact 'gatekeper'"):
        _pack({"gatekeper": True})


def test_the_bundled_packs_state_their_scope() -> None:
    packs = {p.pack.pack: p for p in load_packs(["eu-dma-art6-5", "eu-ai-act-annex-iv", "eu-dsa-art27-34",
                                                 "eu-p2b-art5", "starter"], base_dir=Path("."))}
    assert packs["eu-dma-art6-5"].pack.applies_to == {"gatekeeper": True}
    assert packs["eu-ai-act-annex-iv"].pack.applies_to == {"high_risk": True}
    assert packs["starter"].pack.applies_to == {}
    art34 = [r for r in packs["eu-dsa-art27-34"].pack.rules if "Art. 34" in r.citation]
    assert art34 and all(r.applies_to == {"very_large_platform": True} for r in art34)


@pytest.mark.parametrize(("level", "verdict", "words"), [
    ("reasonable", "positive", "In our opinion the ranking system meets, in all material respects"),
    ("reasonable", "positive with comments", "except for the matters in the findings"),
    ("reasonable", "negative", "does not meet"),
    ("limited", "positive", "nothing has come to our attention"),
    ("limited", "negative", "matters have come to our attention that cause us to believe"),
    (None, "positive", "No assurance conclusion in standard form: the level of assurance is not stated"),
    # the cover's opinion and this page do not contradict each other (reader review H5)
    (None, "positive with comments", "The overall opinion (positive with comments) is the verdict of the rules"),
])
def test_the_conclusion_follows_the_level_of_assurance(level: str | None, verdict: str, words: str) -> None:
    assert words in conclusion(level, verdict)


def test_engagement_facts_are_stated_or_marked_not_stated() -> None:
    document = {"audit": {"title": "Review", "addressee": "The board", "assurance": "limited", "place": "Berlin",
                          "owner": "Search team", "auditor": "Model Risk"},
                "spec": {"content": {"model": {"name": "catalogue-ranker", "version": "7"}}},
                "policies": [{"pack": "eu-p2b-art5", "title": "P2B Art. 5", "version": "1",
                              "applicability": "applies: the provider is an intermediation service"}],
                "evidence": {"ranking_quality": {}}, "opinion": "negative", "run": {"evaluated_on": "2026-11-26"}}
    rows = dict(engagement(document_of(**document), {"ranking_quality": "Ranking quality"}))
    assert rows["Addressee"] == "The board" and rows["Date and place"] == "2026-11-26, Berlin"
    assert "catalogue-ranker version 7" in rows["Subject matter"]
    assert rows["Criteria"] == ["P2B Art. 5 (eu-p2b-art5 1): applies: the provider is an intermediation service"]
    assert "Search team answers for the ranking system" in rows["Responsibilities"]
    assert rows["Conclusion"].startswith("Based on the procedures performed") and "does not meet" in rows["Conclusion"]
    assert rows["Qualifications"] == "not stated (audit.qualifications)"
    empty = dict(engagement(document_of(audit={"title": "Review"}, opinion="positive"), {}))
    assert empty["Addressee"] == "not stated (audit.addressee)" and empty["Assurance"] == "not stated (audit.assurance)"


def test_the_data_description_reaches_the_scope(tmp_path: Path) -> None:
    """dataset.description's frame, window and label source are printed; each missing one says so."""

    import yaml

    from auditor.run.engine import run_audit
    from tests.conftest import BOOKSTORE

    copy_bookstore(tmp_path)
    spec = yaml.safe_load((BOOKSTORE / "audit.yaml").read_text())
    spec.pop("signing")
    spec["register"] = False
    spec["evidence"] = [{"ranking_quality": {}}]
    spec["policies"] = []
    spec["findings"] = []
    spec["output"] = {"dir": "reports", "formats": ["html"]}
    spec["dataset"]["description"] = {"frame": "Searches drawn from the <EU> log", "labels": "Editors, 0-4"}
    (tmp_path / "audit.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    html = (run_audit(tmp_path / "audit.yaml").run_dir / "report.html").read_text()
    assert "Searches drawn from the &lt;EU&gt; log" in html and "Editors, 0-4" in html
    assert 'not stated (<code class="key">dataset.description.window</code>)' in html  # the spec key as code, not words


def test_laws_not_applied_are_stated_with_whether_they_bind_the_provider() -> None:
    """The criteria name every law the built-in packs know: applied ones, and the others with whether they bind this
    provider (a binding law whose pack was not applied is a gap the reader must see)."""
    from auditor.judging.policy import bundled_policies_dir, law_scope, load_packs

    applied = load_packs(["starter", "eu-p2b-art5"], base_dir=bundled_policies_dir())
    provider = {"gatekeeper": False, "online_platform": True, "very_large_platform": False, "high_risk": None,
                "intermediation_service": True}
    others = {law["pack"]: law for law in law_scope(applied, provider)}
    assert set(others) == {"eu-dma-art6-5", "eu-dsa-art27-34", "eu-ai-act-annex-iv", "us-nyc-ll144", "jp-tfdpa-ranking"}
    assert others["eu-dma-art6-5"]["applicability"].startswith("not applicable: the provider is not a gatekeeper")
    assert others["eu-dsa-art27-34"]["applicability"].startswith("applies")
    assert "not established" in others["eu-ai-act-annex-iv"]["applicability"]
    assert "whether the system is an automated employment decision tool: audit.provider.employment_decision_tool" \
        in others["us-nyc-ll144"]["applicability"]
    rows = dict(engagement(document_of(opinion="negative", other_laws=list(others.values())), {}))
    dsa = next(line for line in rows["Criteria"] if "eu-dsa-art27-34" in line)
    assert "not applied" in dsa and "this report does not judge it" in dsa


def test_a_judged_detection_takes_its_rules_severity() -> None:
    """One severity per fact: the P2B-11 warning (minor) and the detection it judges print the same severity."""
    from auditor.judging.policy import judged_severity

    findings = [Finding(rule="P2B-11", title="t", pack="p", status="WARN", severity="minor", metric="m", value=0.1,
                        requirement="", citation="", rationale="", message=""),
                Finding(rule="X-1", title="t", pack="q", status="WARN", severity="major", metric="m", value=0.1,
                        requirement="", citation="", rationale="", message="")]
    assert judged_severity("major", ["P2B-11"], findings) == "minor"
    assert judged_severity("minor", ["P2B-11", "X-1"], findings) == "major"  # the most severe judging rule
    assert judged_severity("critical", [], findings) == "critical"  # unjudged: the evidence's own


def test_a_law_that_binds_in_part_says_so_on_page_2_as_in_scope() -> None:
    """Issue 56: page 2 said "DSA Art. 27 and 34 (applies, not judged)" while Scope said Art. 34 does not apply (not
    a very large platform): a law whose rules apply only in part says "in part" in the brief list too."""
    from auditor.evidence import REGISTRY
    from auditor.report.summary import not_covered

    law = {"pack": "eu-dsa-art27-34", "title": "DSA Art. 27 and 34", "applied": False,
           "applicability": "applies: the provider is an online platform; 7 of 13 rules do not: the provider is not a "
                            "very large platform (audit.provider.very_large_platform)"}
    whole = {**law, "pack": "eu-p2b-art5", "title": "P2B Art. 5", "applicability": "applies to every provider"}
    document = document_of(other_laws=[law, whole])
    brief = not_covered(document, REGISTRY, brief=True)
    assert "DSA Art. 27 and 34 (applies in part, not judged)" in brief and "P2B Art. 5 (applies, not judged)" in brief
    full = " ".join(not_covered(document, REGISTRY))
    assert "7 of 13 rules do not" in full and "not a very large platform" in full
