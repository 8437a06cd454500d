"""The `governance` evidence kind's registry entry (light: the spec imports it)."""

from __future__ import annotations

from auditor.evidence.kinds.governance.options import METRICS, GovernanceOptions
from auditor.evidence.registry import EvidenceKind

ENTRY = EvidenceKind("governance", GovernanceOptions, f"{__name__}.measure", "Governance",
    "Facts about the audit record: signed, retention, stated purpose, owner and oversight.",
    "auditor.evidence.costs:none", metrics=METRICS,
    phrases=f"{__name__}.phrases")
