"""Evidence `governance` (always present): facts about the audit record itself (signed, retention, stated purpose,
owner, oversight...), so rules can address `governance.*` (documentation and record-keeping duties). Its options
are those facts, which the engine reads from the spec: the plugin never sees the spec."""

from __future__ import annotations

from auditor.evidence.base import AuditContext, EvidenceResult
from auditor.evidence.options.governance import GovernanceOptions


def run(ctx: AuditContext, options: GovernanceOptions) -> EvidenceResult:
    meta = options.audit

    def stated(key: str) -> float:
        value = meta.get(key)
        return float(bool(value and str(value).strip()))

    metrics = {
        "governance.signed": float(options.signed),
        "governance.retention_years": float(meta.get("retention_years") or 0),
        "governance.purpose_stated": stated("purpose"),
        "governance.owner_stated": stated("owner"),
        "governance.period_stated": stated("period"),
        "governance.limitations_recorded": float(len(meta.get("limitations") or [])),
        "governance.baseline_present": float(options.baseline_present),
        "governance.intended_use_stated": stated("intended_use"),
        "governance.human_oversight_stated": stated("human_oversight"),
        "governance.independence_stated": stated("independence"),
        "governance.auditor_stated": stated("auditor"),
        "governance.features_described": float(options.features_described),
    }
    retention = meta.get("retention_years")
    return EvidenceResult(name="governance", metrics=metrics,
                          summary="Dated run" + (", signed" if options.signed else ", not signed") +
                                  (f", kept {retention} years" if retention else "") + ".")
