"""A DSA Art. 37 audit report as data (`--document dsa-audit`): one conclusion per audited obligation and the audit
opinion that follows from them, as Commission Delegated Regulation (EU) 2024/436 asks.

The audited obligations are the provisions the DSA pack's `covers` names (e.g. Art. 27(1)), each with the pack's
rules that are its audit procedures. Per obligation (Art. 8-10, 12 of Reg. 2024/436): the audit criteria (its rules'
requirements), the materiality threshold (`audit.materiality`, else its rules' thresholds with their reasons), the
procedures and evidence, the audit risk analysis (`audit.risk_assessment`: inherent, control, detection), the
results, the conclusion — `positive`, `positive with comments` or `negative` (Art. 8(1)), or none when reasonable
assurance was not reached (Art. 8(8)) — and, where not positive, recommendations with a timeframe (Art. 8(2)-(3):
the rules' remedies, due as the spec's `findings:` say). The opinion aggregates them as Art. 8(6) does. What only
people know is printed "not stated (field)".
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from auditor.core.errors import InputError
from auditor.evidence.document import EvidenceDocument, EvidenceItem, FindingPart
from auditor.report.wording import fact

PACK_PREFIX = "eu-dsa-art27-34"  # the built-in pack, or an organisation's pack whose name starts with it
POSITIVE, COMMENTS, NEGATIVE, NONE = "positive", "positive with comments", "negative", "no conclusion"
CONCLUSIONS = (POSITIVE, COMMENTS, NEGATIVE)
LEVELS = ("low", "medium", "high")


@dataclass
class Procedure:
    """One rule as an audit procedure of an obligation: what it requires, how it measured, what it found."""

    rule: str
    title: str
    requirement: str
    threshold_reason: str
    evidence: str
    metric: str
    status: str
    message: str
    remedy: str
    fact: str
    crosses_fail: bool = False  # a WARN whose interval reaches the FAIL threshold: compliance not shown
    owner: str | None = None
    due: str | None = None
    effect: str = ""  # as a recommendation: the obligation's conclusion once this procedure's measure clears


@dataclass
class Obligation:
    """One audited obligation and everything Reg. 2024/436 asks the report to say of it."""

    point: str
    asks: str
    scope: str  # covered, partly, not covered (the pack's `covers`), or "not applicable: ..."
    note: str
    procedures: list[Procedure]
    materiality: str | None
    risk: dict[str, Any] | None
    conclusion: str
    why: str
    recommendations: list[Procedure] = field(default_factory=list)


@dataclass
class DsaAudit:
    """The audit report's content, in the order of Annex I of Reg. 2024/436."""

    provider: str
    address: str | None
    contact: str | None
    service: str
    period: str | None
    audit_date: str
    pack: dict[str, Any]
    auditor: str | None
    team: list[dict[str, Any]]
    qualifications: str | None
    independence: str | None
    standards: list[str]
    place: str | None
    obligations: list[Obligation]
    not_in_scope: list[Obligation]
    opinion: str
    opinion_why: str
    third_parties: list[dict[str, Any]]
    limitations: list[str]
    queries: int
    very_large: bool | None
    evidence_sha256: str = ""
    missing: list[str] = field(default_factory=list)
    missing_risk: list[str] = field(default_factory=list)  # obligations without the auditor's risk analysis
    missing_due: list[str] = field(default_factory=list)  # recommendations (rules) without a timeframe
    period_open: str | None = None  # the review period has not ended on the audit's date
    data_origin: str | None = None  # audit.data_origin: real, synthetic, mixed (issue 56: said before any conclusion)
    assurance: str | None = None  # audit.assurance: Reg. 2024/436 asks an Art. 37 audit for reasonable assurance
    signed: bool = False  # the run is signed (its PDFs certified by the tool's key)


def report_of(document: EvidenceDocument) -> DsaAudit:
    """The DSA audit report from a run's evidence; InputError when the run applied no DSA pack."""
    pack = next((p for p in document.policies if str(p.get("pack", "")).startswith(PACK_PREFIX)
                 and p.get("coverage")), None)
    if pack is None:
        raise InputError("the run applied no DSA pack with audited obligations (`covers`), which the dsa-audit "
                         "document is laid out by", where="policies",
                         fix="add `eu-dsa-art27-34` to the spec's policies and run the audit again")
    audit = document.audit
    findings = {f.rule: f for f in document.findings if f.pack == pack["pack"]}
    found_by: dict[str, str] = {}  # a rule's judged detection names what was found (the feature, the group)
    for detection in document.detections:
        for rule in detection.judged_by_rules or []:
            found_by.setdefault(rule, detection.title)
    due = {str(a.get("rule")): a for a in document.assignments}
    risks = audit.get("risk_assessment") or {}
    materiality = audit.get("materiality") or {}
    obligations, outside = [], []
    for row in pack["coverage"]:
        procedures = [_procedure(findings[rule], due.get(rule), found_by.get(rule),
                                  document.evidence.get(findings[rule].evidence)) for rule in row["rules"]
                      if rule in findings]
        applying = [p for p in procedures if p.status != "SKIPPED"]
        entry = Obligation(point=row["point"], asks=row["asks"], scope=row["status"], note=row.get("note") or "",
                           procedures=procedures, materiality=materiality.get(row["point"]),
                           risk=risks.get(row["point"]), conclusion=NONE, why="")
        if row["status"] == "not covered" or not procedures:
            outside.append(entry)
            continue
        if not applying:
            entry.scope = "not applicable: " + (procedures[0].message.removeprefix("not applicable: ") or
                                                "the law does not bind this provider")
            outside.append(entry)
            continue
        entry.conclusion, entry.why = _conclusion(applying)
        # what to do: a requirement not met, and (issue 56) a procedure that kept the audit from concluding, whose
        # recommendation is to give the audit what it needs
        entry.recommendations = [p for p in applying if p.status in ("FAIL", "WARN", "WAIVED", "UNMEASURED", "ERROR")]
        for recommended in entry.recommendations:  # Annex I: each recommendation's effect on the conclusion
            cleared = [replace(p, status="PASS", crosses_fail=False) if p is recommended else p for p in applying]
            recommended.effect = _conclusion(cleared)[0]
        obligations.append(entry)
    opinion, opinion_why = _opinion(obligations)
    model = (document.spec.get("content") or {}).get("model") or {}
    version = (document.inputs.get("model") or {}).get("version") or model.get("version")
    dataset = document.evidence.get("dataset")
    report = DsaAudit(
        provider=str(audit.get("organisation") or ""), address=audit.get("address"), contact=audit.get("contact"),
        service=" ".join(str(x) for x in (model.get("name") or audit.get("title"), version) if x),
        period=audit.get("period"), audit_date=str(document.run.get("evaluated_on") or ""), pack=pack,
        auditor=audit.get("auditor"), team=list(audit.get("team") or []), qualifications=audit.get("qualifications"),
        independence=audit.get("independence"), standards=list(audit.get("standards") or []),
        place=audit.get("place"), obligations=obligations, not_in_scope=outside, opinion=opinion,
        opinion_why=opinion_why, third_parties=list(audit.get("third_parties") or []),
        limitations=list(audit.get("limitations") or []),
        queries=int(dataset.value("dataset.n_queries") or 0) if dataset is not None else 0,
        very_large=(audit.get("provider") or {}).get("very_large_platform"))
    report.missing = [name for name, value in (
        ("audit.address", report.address), ("audit.contact", report.contact), ("audit.period", report.period),
        ("audit.auditor", report.auditor), ("audit.independence", report.independence),
        ("audit.qualifications", report.qualifications), ("audit.team", report.team),
        ("audit.standards", report.standards)) if not value]
    report.missing_due = [p.rule for o in obligations for p in o.recommendations if not p.due]
    report.period_open = next((d.message for d in document.detections if d.kind == "review-period-not-ended"), None)
    report.missing_risk = [o.point for o in obligations if o.risk is None]
    report.data_origin, report.assurance = audit.get("data_origin"), audit.get("assurance")
    report.signed = bool((document.spec.get("content") or {}).get("signing"))
    return report


def _procedure(finding: FindingPart, assignment: dict[str, Any] | None, detected: str | None,
               item: EvidenceItem | None = None) -> Procedure:
    return Procedure(rule=finding.rule, title=finding.title, requirement=finding.requirement,
                     threshold_reason=finding.threshold_reason, evidence=finding.evidence, metric=finding.metric,
                     status=finding.status, message=finding.message, remedy=finding.remedy,
                     fact=detected if detected and finding.status in ("FAIL", "WARN", "WAIVED")
                     else fact(finding, item),
                     crosses_fail=finding.inconclusive and "(FAIL if" in finding.message,
                     owner=(assignment or {}).get("owner"),
                     due=str(assignment["due"]) if assignment and assignment.get("due") else None)


def _conclusion(procedures: list[Procedure]) -> tuple[str, str]:
    """The conclusion on one obligation from its procedures' verdicts (Reg. 2024/436 Art. 8(1), 8(8))."""
    statuses = {p.status for p in procedures}

    def named(wanted: set[str]) -> str:
        return "; ".join(f"{p.fact} (rule {p.rule})" for p in procedures if p.status in wanted)

    if "FAIL" in statuses:
        return NEGATIVE, f"not complied with: {named({'FAIL'})}"
    unsure = [p for p in procedures if p.status in ("ERROR", "UNMEASURED") or p.crosses_fail]
    if unsure:
        missing = "; ".join(f"rule {p.rule}: the 95% interval of its measure reaches its failing threshold, so "
                            "compliance is not shown" if p.crosses_fail else
                            f"rule {p.rule}: {p.message.removeprefix('not measured: ')}" for p in unsure)
        return NONE, f"reasonable assurance was not reached (Art. 8(8) of Reg. 2024/436) — {missing}"
    if statuses & {"WARN", "WAIVED"}:
        return COMMENTS, f"complied with, with improvements recommended: {named({'WARN', 'WAIVED'})}"
    return POSITIVE, "every requirement is met over the whole 95% interval of its measure"


def _opinion(obligations: list[Obligation]) -> tuple[str, str]:
    """The audit opinion from the conclusions, as Art. 8(6) of Reg. 2024/436 aggregates them."""
    conclusions = [o.conclusion for o in obligations]
    if not obligations:
        return NONE, "no audited obligation applies to this provider"
    if NEGATIVE in conclusions:
        return NEGATIVE, f"{conclusions.count(NEGATIVE)} of {len(obligations)} conclusions are negative"
    if NONE in conclusions:
        return NONE, (f"{conclusions.count(NONE)} of {len(obligations)} obligations could not be concluded on with "
                      "reasonable assurance (Art. 8(8))")
    if COMMENTS in conclusions:
        return COMMENTS, (f"{conclusions.count(COMMENTS)} of {len(obligations)} conclusions are positive with "
                          "comments, none negative")
    return POSITIVE, f"all {len(obligations)} conclusions are positive"
