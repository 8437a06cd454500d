"""Evidence `governance` (always present): facts about the audit record itself (signed, retention, stated purpose,
owner, oversight...), so rules can address `governance.*` (documentation and record-keeping duties). Its options
are those facts, which the engine reads from the spec: the plugin never sees the spec."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from auditor.evidence.base import AuditContext, EvidenceOptions, EvidenceResult

METRICS = (  # what this kind can emit (EvidencePlugin.metrics; auditor.evidence.base.metric_pattern)
    "governance.{signed|retention_years|purpose_stated|owner_stated|period_stated|limitations_recorded"
    "|baseline_present|intended_use_stated|human_oversight_stated|independence_stated|auditor_stated"
    "|features_described}",
)


class GovernanceOptions(EvidenceOptions):
    audit: dict[str, Any] = Field(default_factory=dict, description="The spec's `audit:` block, as data.")
    signed: bool = Field(False, description="The spec has `signing:`.")
    baseline_present: bool = Field(False, description="The spec names a `baseline:` run.")
    features_described: bool = Field(False, description="The spec has `features:` or a `feature_dictionary:`.")


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
