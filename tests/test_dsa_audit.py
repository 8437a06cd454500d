"""The DSA Art. 37 audit report (`--document dsa-audit`, issue 57 item 1): laid out after Annex I of Delegated
Regulation (EU) 2024/436, one conclusion per audited obligation (Art. 8(1)) aggregated into the opinion as Art. 8(6)
does, the fields only people know printed "not stated (field)" until the spec gives them."""

from __future__ import annotations

import re
import shutil
from html import unescape
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from auditor.cli import app
from auditor.report.documents import render_document
from auditor.report.dsa_audit import NEGATIVE, NONE, POSITIVE, report_of
from tests.conftest import BOOKSTORE
from tests.helpers import bookstore_under, document_of

runner = CliRunner()

# Annex I of Reg. 2024/436 as far as its text layer holds it (Sections A, C, D and E are images in the Official
# Journal; the report lays them out as Art. 8-10 and 12 and DSA Art. 37(4) require): the section headings in order,
# then Section B's, F.1's fields, the signature block's, verbatim.
SECTIONS = ["Section A: General information", "Section B: Auditing organisation(s)",
            "Section C: Audit opinion and summary of the main findings",
            "Section D: Audit conclusions per audited obligation",
            "Section E: Commitments under codes of conduct and crisis protocols", "Section F: Third parties consulted",
            "Section G: Any other information the auditing body wishes to include in the audit report (such as a "
            "description of possible inherent limitations)", "Signature", "Annexes to the Audit Report (as applicable)"]
SECTION_B = ["Name(s) of organisation(s) constituting the auditing organisation:",
             "Information about the auditing team of the auditing organisation:", "Auditors' qualifications:",
             "Overview of the professional qualifications of the individuals who performed the audit, including "
             "domains of expertise, certifications, as applicable:",
             "Documents attesting that the auditing organisation fulfils the requirements laid down in Article 37(3), "
             "point (b) of Regulation (EU) 2022/2065 have been attached as an annex to this report:",
             "Auditors' independence:", "Declaration of interests:",
             "References to any standards relevant for the auditing team's independence that the auditing "
             "organisation(s) adheres to:",
             "List of documents attesting that the auditing organisation complies with the obligations laid down in "
             "Article 37(3), points (a) and (c) of Regulation (EU) 2022/2065 attached as annexes to this report:",
             "References to any auditing standards applied in the audit, as applicable:",
             "References to any quality management standards the auditing organisation adheres to, as applicable:"]
SECTION_F1 = ["Name of third party consulted:", "Representative and contact information of consulted third party:",
              "Date(s) of consultation:", "Input provided by third-party:"]
PER_OBLIGATION = ["Audited obligation:", "Audit criteria:", "Materiality threshold:", "Audit risk analysis:",
                  "Audit procedures and evidence", "Results:", "Audit conclusion:", "Recommendations and timeframe:"]


def _text(html: str) -> str:
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))
    return re.sub(r"\(\s+", "(", re.sub(r"\s+([,.):;])", r"\1", text))


def _in_order(text: str, labels: list[str]) -> None:
    at = 0
    for label in labels:
        found = text.find(label, at)
        assert found >= 0, f"{label!r} missing or out of order"
        at = found + len(label)


def _finding(rule: str, status: str, **more: Any) -> dict[str, Any]:
    return {"rule": rule, "pack": "eu-dsa-art27-34", "status": status, "title": f"{rule} title",
            "requirement": "FAIL if > 0", "message": f"{rule} message", "remedy": f"fix {rule}", **more}


def _document(statuses: dict[str, str], **audit: Any) -> Any:
    coverage = [{"point": "Art. 27(1)", "asks": "a", "status": "covered", "rules": ["DSA-1", "DSA-2"], "note": ""},
                {"point": "Art. 34(1)", "asks": "b", "status": "partly", "rules": ["DSA-7"], "note": "part"},
                {"point": "Art. 38", "asks": "c", "status": "not covered", "rules": [], "note": ""}]
    return document_of(policies=[{"pack": "eu-dsa-art27-34", "title": "DSA", "version": "1", "coverage": coverage}],
                       findings=[_finding(rule, status) for rule, status in statuses.items()],
                       audit={"organisation": "Shop", "provider": {"very_large_platform": True}, **audit},
                       run={"evaluated_on": "2026-11-29"},
                       assignments=[{"rule": "DSA-2", "owner": "Ranking team", "due": "2027-03-31"}])


def test_one_conclusion_per_obligation_and_the_opinion_as_article_8_6_aggregates_them() -> None:
    """A FAIL makes its obligation negative, a WARN positive with comments, a rule not measured leaves it without a
    conclusion (Art. 8(8)); the opinion is the worst; not-covered provisions and those the law does not bind to this
    provider are listed apart; a recommendation carries its rule's due date."""
    report = report_of(_document({"DSA-1": "PASS", "DSA-2": "WARN", "DSA-7": "PASS"}))
    assert [(o.point, o.conclusion) for o in report.obligations] == [("Art. 27(1)", "positive with comments"),
                                                                     ("Art. 34(1)", POSITIVE)]
    assert report.opinion == "positive with comments" and [o.point for o in report.not_in_scope] == ["Art. 38"]
    assert [(p.rule, p.due, p.owner) for p in report.obligations[0].recommendations] == [
        ("DSA-2", "2027-03-31", "Ranking team")]
    assert report_of(_document({"DSA-1": "FAIL", "DSA-2": "PASS", "DSA-7": "UNMEASURED"})).opinion == NEGATIVE
    unmeasured = report_of(_document({"DSA-1": "PASS", "DSA-2": "PASS", "DSA-7": "UNMEASURED"}))
    assert unmeasured.obligations[1].conclusion == NONE and unmeasured.opinion == NONE
    assert "Art. 8(8)" in unmeasured.obligations[1].why
    # each recommendation's effect on its obligation's conclusion follows from the other procedures (a WARN left
    # keeps it positive with comments), never a blanket "becomes positive"
    both = report_of(_document({"DSA-1": "FAIL", "DSA-2": "WARN", "DSA-7": "PASS"}))
    assert [(p.rule, p.effect) for p in both.obligations[0].recommendations] == [
        ("DSA-1", "positive with comments"), ("DSA-2", NEGATIVE)]
    alone = report_of(_document({"DSA-1": "PASS", "DSA-2": "WARN", "DSA-7": "PASS"}))
    assert alone.obligations[0].recommendations[0].effect == POSITIVE
    skipped = report_of(_document({"DSA-1": "PASS", "DSA-2": "PASS", "DSA-7": "SKIPPED"}))
    assert [o.point for o in skipped.obligations] == ["Art. 27(1)"] and skipped.opinion == POSITIVE
    assert skipped.not_in_scope[0].scope.startswith("not applicable")


def test_the_document_follows_the_template_and_prints_what_is_not_stated() -> None:
    """Sections A to G, the signature block and the annexes in order; Section B's and F.1's fields verbatim; every
    audited obligation with the eight things Art. 8-10 ask; what the spec leaves out named at the top and in place."""
    bare = render_document("dsa-audit", _document({"DSA-1": "PASS", "DSA-2": "WARN", "DSA-7": "FAIL"}),
                           evidence_bytes=b"{}")
    text = _text(bare)
    _in_order(text, SECTIONS)
    _in_order(text, SECTION_B)
    for index in (1, 2):
        block = text[text.index(f"D.{index} "):]
        _in_order(block, PER_OBLIGATION)
    assert "Audit opinion on the audited obligations: negative" in text
    assert "Incomplete: the spec does not state audit.address, audit.contact, audit.period, audit.auditor" in text
    assert "not stated (audit.risk_assessment for Art. 27(1))" in text and "None stated (audit.third_parties)" in text
    assert "Timeframe: by 2027-03-31 (Ranking team)" in text and "not stated (findings: due for DSA-7)" in text
    stated = render_document("dsa-audit", _document(
        {"DSA-1": "PASS", "DSA-2": "PASS", "DSA-7": "PASS"}, address="1 Main St", contact="dsa@shop.example",
        period="2026", auditor="Audit LLP", independence="none", qualifications="CISA",
        team=[{"name": "A. Auditor"}], standards=["ISAE 3000 (Revised)"],
        risk_assessment={"Art. 27(1)": {"inherent": "medium", "control": "low", "detection": "low",
                                        "reasoning": "terms versioned"},
                         "Art. 34(1)": {"inherent": "high", "control": "medium", "detection": "low",
                                        "reasoning": "<b>new</b> model"}},
        third_parties=[{"name": "Consumer group", "dates": "2026-10-02", "input": "complaints"}]),
        evidence_bytes=b"{}")
    text = _text(stated)
    assert "Incomplete" not in text and "inherent risk high, control risk medium, detection risk low" in text
    _in_order(text[text.index("F.1 Third party consulted"):], SECTION_F1)
    assert "&lt;b&gt;new&lt;/b&gt; model" in stated and "<b>new</b>" not in stated


def test_the_document_needs_the_dsa_pack(tmp_path: Path) -> None:
    """--document dsa-audit on a spec without a DSA pack is refused before anything runs."""
    folder = tmp_path / "b"
    shutil.copytree(BOOKSTORE, folder)
    spec = yaml.safe_load((folder / "audit.yaml").read_text())
    spec.pop("signing", None)
    (folder / "plain.yaml").write_text(yaml.safe_dump(spec))
    done = runner.invoke(app, ["report", str(folder / "plain.yaml"), "--document", "dsa-audit", "--out",
                               str(tmp_path / "out")])
    assert done.exit_code == 2 and "eu-dsa" in done.output and "--document" in done.output, done.output


@pytest.mark.slow
def test_the_bookstore_as_a_very_large_platform_gets_a_dsa_audit_report(tmp_path: Path) -> None:
    """The bookstore under the DSA pack, its provider a very large platform: dsa-audit.html beside the report, one
    conclusion per audited provision of the pack, and the same page drawn again by `auditor render`."""
    spec = bookstore_under(tmp_path, policies=["eu-dsa-art27-34"], provider={"very_large_platform": True},
                           documents=("report", "dsa-audit"))
    folder = spec.parent
    done = runner.invoke(app, ["report", str(folder / "dsa.yaml"), "--fail-on", "never"])
    assert done.exit_code == 0, done.output
    run = next((folder / "out").iterdir())
    html = (run / "dsa-audit.html").read_text()
    conclusions = re.findall(r'<td class="conclusion">([^<]+)</td>', html)
    assert len(conclusions) == 7  # Art. 27(1), 27(2)(a), 27(2)(b), 34(1), 34(1)(b), 34(2)(a), 34(3)
    assert set(conclusions) <= {"positive", "positive with comments", "negative", "no conclusion"}
    text = unescape(_text(html))  # issue 56: an obligation the audit could not conclude on says what it needs, as a
    # recommendation with its effect; rule numbers are said not to be articles
    assert ("DSA-13: give the audit what this procedure needs, then audit again: the provider's published "
            "recommender statement was not given to the audit") in text
    assert "once DSA-13's measure is taken and clears its conditions" in text
    assert "none until the audit can conclude" not in text
    assert "Rule numbers such as DSA-1 are those of the evidence pack eu-dsa-art27-34, not articles" in text
    assert "audit risk analysis pursuant to Article 9 of this Regulation: none: no obligation's risk analysis" in text
    assert "Not about the service's own use: the data are synthetic" in text  # the bookstore's data_origin
    assert "Not at the level of assurance Art. 37 asks" in text and "Not signed: the run was made without" in text
    rendered = runner.invoke(app, ["render", str(run), "--out", str(tmp_path / "r"), "--document", "dsa-audit"])
    assert rendered.exit_code == 0, rendered.output
    again = next((tmp_path / "r").iterdir()) / "dsa-audit.html"
    assert again.read_bytes() == (run / "dsa-audit.html").read_bytes()


def test_a_conclusion_names_what_its_judged_detection_found() -> None:
    """A not-met requirement whose rule judges a detection is summed up by that detection's title, which names the
    feature or group (issue 56: facts first), not by the rule's requirement."""
    document = _document({"DSA-1": "FAIL", "DSA-2": "PASS", "DSA-7": "PASS"})
    raw = document.to_json()
    raw["detections"] = [{"kind": "undeclared-main-parameter", "title": "Undeclared main ranking parameter: x",
                          "subject": "x", "message": "m", "severity": "major", "citation": "c",
                          "judged_by_rules": ["DSA-1"]}]
    from auditor.evidence.document import read_document

    report = report_of(read_document(raw))
    assert report.obligations[0].why == "not complied with: Undeclared main ranking parameter: x (rule DSA-1)"
