"""A draft of the audit implementation report (DSA Art. 37(6); Annex II of Delegated Regulation (EU) 2024/436) from
the register: every operational recommendation of a system's last DSA audit with what the provider has recorded
against it — the management response (owner, due date, measures), a risk acceptance with its reason (a
recommendation not implemented, justified), or nothing yet — and whether a later review found the rule met.

It is the provider's document: the tool drafts it; the provider's person adopts it and signs it with their own key
(`auditor implementation-report --key`, trust/adoption.py), never the tool's.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from auditor.core.errors import InputError
from auditor.evidence.document import EvidenceDocument, read_document
from auditor.report.dsa_audit import DsaAudit, Obligation, Procedure, report_of


@dataclass
class Recommendation:
    """One operational recommendation of the audit and where the register says it stands."""

    obligation: Obligation
    procedure: Procedure
    finding: str  # the register's finding id, or "" when the register holds none for it
    status: str  # implemented, in progress, overdue, not implemented (justified), no response recorded
    owner: str | None = None
    due: str | None = None
    measures: str | None = None
    justification: str | None = None
    accepted_until: str | None = None
    later: str | None = None  # the later review that found the rule met


@dataclass
class ImplementationReport:
    """What the draft prints, in Annex II's order: Section A, then the recommendations."""

    system: str
    audit: DsaAudit
    audit_run: str
    audit_day: str
    recommendations: list[Recommendation]
    later_runs: list[str]
    drafted_on: str
    one_month: str  # the day the provider must adopt it by (DSA Art. 37(6)), counted from the audit's day
    address: str | None = None
    evidence_sha256: str = ""
    notes: list[str] = field(default_factory=list)


def draft(register: Any, system: str, *, today: dt.date) -> ImplementationReport:
    """The draft for `system` from the register: its last run with a DSA audit (one whose evidence applied the DSA
    pack) and the findings' events since."""
    runs = register.runs(system)
    if not runs:
        raise InputError(f"the register holds no review of '{system}'", where="--system",
                         fix="name a system `auditor findings list` shows")
    base: tuple[dict[str, Any], EvidenceDocument, DsaAudit] | None = None
    for row in sorted(runs, key=lambda r: (r["evaluated_on"], r["id"]), reverse=True):
        document = read_document(register.document(row["id"]))
        try:
            base = (row, document, report_of(document))
            break
        except InputError:
            continue
    if base is None:
        raise InputError(f"no review of '{system}' in the register applied the DSA pack", where="--system",
                         fix="run the audit with `eu-dsa-art27-34` among its policies first")
    row, document, audit = base
    later = [r for r in runs if (r["evaluated_on"], r["id"]) > (row["evaluated_on"], row["id"])]
    findings = {f["key"]: f for f in register.findings(system=system, today=today)}
    identities = {f.rule: f.identity for f in document.findings}
    out = []
    for obligation in audit.obligations:
        for procedure in obligation.recommendations:
            found = findings.get(identities.get(procedure.rule, procedure.rule))
            out.append(_standing(obligation, procedure, found))
    day = dt.date.fromisoformat(audit.audit_date) if audit.audit_date else today
    report = ImplementationReport(system=system, audit=audit, audit_run=row["run_name"], audit_day=audit.audit_date,
                                  evidence_sha256=str(row.get("evidence_sha256") or ""),
                                  recommendations=out, later_runs=[r["run_name"] for r in later],
                                  drafted_on=today.isoformat(), one_month=_month_after(day).isoformat(),
                                  address=audit.address)
    if not out:
        report.notes.append("The audit's opinion needs no implementation report: it made no operational "
                            "recommendation (every conclusion positive).")
    return report


def _standing(obligation: Obligation, procedure: Procedure, found: dict[str, Any] | None) -> Recommendation:
    entry = Recommendation(obligation=obligation, procedure=procedure, finding="", status="no response recorded")
    if found is None:
        return entry
    state = found["state"]
    entry.finding = found["id"]
    entry.owner, entry.due, entry.measures = state.owner, state.due, state.response
    if state.status == "remediated":
        entry.status, entry.later = "implemented", state.remediated_in
    elif state.status == "accepted":
        entry.status, entry.justification, entry.accepted_until = ("not implemented (justified)", state.reason,
                                                                   state.until)
    elif state.status in ("responded", "overdue"):
        entry.status = "in progress" if state.status == "responded" else "overdue"
    return entry


def _month_after(day: dt.date) -> dt.date:
    """The same day of the next month (the last day of that month when it has no such day)."""
    import calendar

    year, month = (day.year + 1, 1) if day.month == 12 else (day.year, day.month + 1)
    return dt.date(year, month, min(day.day, calendar.monthrange(year, month)[1]))
