"""The audit implementation report (DSA Art. 37(6); Annex II of Reg. 2024/436), issue 57 item 2: drafted from the
register — each recommendation of the system's last DSA audit with the response recorded against it and whether a
later review found it remediated — and adopted with the provider's person's own key, checked offline."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from auditor.cli import app
from auditor.register.lifecycle import State
from auditor.report.implementation import draft
from tests.conftest import PASS, _keygen
from tests.helpers import bookstore_under, document_of

runner = CliRunner()

# Annex II Section A of Reg. 2024/436, verbatim: the fields the draft fills, in order.
SECTION_A = ["Audited provider:", "Address of the audited provider:",
             "Audit report on which this implementation report is based", "Date of adoption of the audit report:",
             "Reference to the audit report (for example an URL):",
             "Information on the underlying audit and the involved parties (refer to sections A and B of the audit "
             "report of reference):",
             "Does the audit implementation report refer to an audit report on compliance with all the obligations "
             "and commitments pursuant to Article 37(1) of Regulation (EU) 2022/2065 applicable to the audited "
             "provider?",
             "Where applicable, references to other audit reports resulting from audits pursuant to Article 37 of "
             "Regulation (EU) 2022/2065 that the audited provider is or will be subject to concerning the audited "
             "period:"]


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


class _Register:
    """The register's reading side as `draft` uses it: runs, their documents, the findings with their state."""

    def __init__(self, documents: list[tuple[str, Any]], findings: list[dict[str, Any]]) -> None:
        self._runs = [{"id": i, "run_name": f"run-{i}", "evaluated_on": day, "evidence_sha256": "ab" * 32}
                      for i, (day, _) in enumerate(documents)]
        self._documents = [d for _, d in documents]
        self._findings = findings

    def runs(self, system: str) -> list[dict[str, Any]]:
        return self._runs

    def document(self, run_id: int) -> dict[str, Any]:
        return self._documents[run_id].to_json()

    def findings(self, *, system: str, today: dt.date) -> list[dict[str, Any]]:
        return self._findings


def _dsa_document(day: str, statuses: dict[str, str]) -> Any:
    coverage = [{"point": "Art. 27(2)(a)", "asks": "a", "status": "covered", "rules": ["DSA-3"], "note": ""},
                {"point": "Art. 34(1)", "asks": "b", "status": "covered", "rules": ["DSA-7"], "note": ""}]
    return document_of(policies=[{"pack": "eu-dsa-art27-34", "title": "DSA", "version": "1", "coverage": coverage}],
                       findings=[{"rule": rule, "pack": "eu-dsa-art27-34", "status": status, "title": rule,
                                  "remedy": f"fix {rule}"} for rule, status in statuses.items()],
                       audit={"organisation": "Shop", "auditor": "Audit LLP"}, run={"evaluated_on": day})


def test_each_recommendation_stands_as_the_register_says() -> None:
    """The last DSA audit's recommendations only (a later run without the pack does not replace it); a response is
    in progress, an acceptance is not implemented with its reason, a remediation names the review; the provider
    adopts within a month of the audit."""
    documents = [("2026-01-10", _dsa_document("2026-01-10", {"DSA-3": "PASS", "DSA-7": "PASS"})),
                 ("2026-06-30", _dsa_document("2026-06-30", {"DSA-3": "FAIL", "DSA-7": "WARN"})),
                 ("2026-09-30", document_of(run={"evaluated_on": "2026-09-30"}))]
    responded = State(status="responded", owner="Ranking team", due="2026-12-31", response="publish sales rank")
    accepted = State(status="accepted", approver="CRO", until="2027-06-30", reason="cap planned in Q2")
    register = _Register(documents, [{"id": "shop/DSA-3", "key": "DSA-3", "state": responded},
                                     {"id": "shop/DSA-7", "key": "DSA-7", "state": accepted}])
    report = draft(register, "shop", today=dt.date(2026, 7, 15))
    assert report.audit_run == "run-1" and report.one_month == "2026-07-30" and report.later_runs == ["run-2"]
    assert [(r.procedure.rule, r.status, r.owner, r.measures) for r in report.recommendations] == [
        ("DSA-3", "in progress", "Ranking team", "publish sales rank"),
        ("DSA-7", "not implemented (justified)", None, None)]
    assert report.recommendations[1].justification == "cap planned in Q2"
    remediated = State(status="remediated", remediated_in="run-2")
    fixed = draft(_Register(documents, [{"id": "shop/DSA-3", "key": "DSA-3", "state": remediated}]), "shop",
                  today=dt.date(2026, 10, 1))
    assert [(r.status, r.later) for r in fixed.recommendations] == [("implemented", "run-2"),
                                                                   ("no response recorded", None)]


@pytest.mark.slow
def test_respond_then_draft_then_adopt_with_the_provider_s_key(tmp_path: Path) -> None:
    """The bookstore audited as a very large platform under the DSA pack, a management response recorded on the
    undeclared parameter's finding, the draft lists it with its response; adopted with the provider's key it
    verifies, and a changed word fails the check."""
    keys = _keygen(tmp_path / "keys")
    spec = bookstore_under(tmp_path, policies=["eu-dsa-art27-34"], provider={"very_large_platform": True},
                           register=str(tmp_path / "register.sqlite"), documents=("report", "dsa-audit"))
    folder = spec.parent
    env = {"TEST_KEY_PASS": PASS}
    done = runner.invoke(app, ["report", str(folder / "dsa.yaml"), "--fail-on", "never", "--quiet"])
    assert done.exit_code == 0, done.output
    register = ["--register", str(tmp_path / "register.sqlite")]
    done = runner.invoke(app, ["findings", "respond", "catalogue-ranker/DSA-3", "--owner", "Ranking team", "--due",
                               "2099-03-31", "--response", "Publish sales rank in the terms", "--key",
                               str(keys / "signer.p12"), "--passphrase-env", "TEST_KEY_PASS", *register], env=env)
    assert done.exit_code == 0, done.output
    done = runner.invoke(app, ["implementation-report", "--system", "catalogue-ranker", "--out",
                               str(tmp_path / "impl"), *register])
    assert done.exit_code == 0 and "a draft, not adopted" in done.output, done.output
    draft_folder = Path(done.stdout.strip().splitlines()[-1])
    text = _text((draft_folder / "implementation-report.html").read_text())
    at = 0
    for label in SECTION_A:
        at = text.index(label, at) + len(label)
    assert "Publish sales rank in the terms — owner Ranking team, due 2099-03-31" in text
    assert "Status: in progress" in text
    check = runner.invoke(app, ["implementation-report", "--check", str(draft_folder)])
    assert check.exit_code == 2 and "unadopted draft" in check.output
    done = runner.invoke(app, ["implementation-report", "--system", "catalogue-ranker", "--out",
                               str(tmp_path / "adopted"), "--key", str(keys / "signer.p12"), "--passphrase-env",
                               "TEST_KEY_PASS", *register], env=env)
    assert done.exit_code == 0, done.output
    adopted = Path(done.stdout.strip().splitlines()[-1])
    check = runner.invoke(app, ["implementation-report", "--check", str(adopted)])
    assert check.exit_code == 0 and "adopted by CN=" in check.output and "unchanged" in check.output, check.output
    page = adopted / "implementation-report.html"
    page.write_text(page.read_text().replace("in progress", "implemented"))
    check = runner.invoke(app, ["implementation-report", "--check", str(adopted)])
    assert check.exit_code == 2 and "implementation-report.html is not the file that was adopted" in check.output
