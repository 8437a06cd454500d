"""Evidence `governance` (always present): facts about the audit record itself (signed, retention, stated purpose,
owner, oversight, the data's source, the tool's distribution date...), so rules can address `governance.*`
(documentation and record-keeping duties). Its options are those facts, which the engine reads from the spec: the
plugin never sees the spec. `governance.days_audit_to_distribution` counts from the evaluation day (the audit's
date) to `audit.distribution_date`: the one governance figure that depends on the day the audit runs."""

from __future__ import annotations

import datetime as dt

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
        "governance.data_source_stated": float(options.data_source_stated),
        "governance.distribution_date_stated": stated("distribution_date"),
    }
    distributed = meta.get("distribution_date")
    if distributed and options.evaluated_on:  # NYC LL144: the bias audit at most a year before the tool's use
        day = distributed if isinstance(distributed, dt.date) else dt.date.fromisoformat(str(distributed))
        metrics["governance.days_audit_to_distribution"] = float(
            (day - dt.date.fromisoformat(options.evaluated_on)).days)
    retention = meta.get("retention_years")
    return EvidenceResult(name="governance", metrics=metrics,
                          summary="Dated run" + (", signed" if options.signed else ", not signed") +
                                  (f", kept {retention} years" if retention else "") + ".")
