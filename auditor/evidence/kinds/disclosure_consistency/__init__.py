"""The `disclosure_consistency` evidence kind's registry entry (light: the spec imports it)."""

from __future__ import annotations

from auditor.evidence.kinds.disclosure_consistency.options import METRICS, DisclosureConsistencyOptions
from auditor.evidence.registry import EvidenceKind

ENTRY = EvidenceKind("disclosure_consistency", DisclosureConsistencyOptions,
    f"{__name__}.measure", "Declared vs actual main parameters",
    "The declared main parameters and their order against the measured ones (P2B Art. 5).",
    f"{__name__}.cost:estimate", metrics=METRICS,
    phrases=f"{__name__}.phrases",
    # the surrogate measures a model without TreeSHAP; all four, the published statement's claims
    uses=("surrogate", "global_importance", "parameter_influence", "exposure"),
    key_figures=f"{__name__}.present:key_figures", section=f"{__name__}.present:section",
    readme=(
    "the main parameters the terms and conditions declare vs the measured ones (P2B Art. 5(1)): "
    "undeclared influential parameters, order agreement, stability over query samples; with "
    "`statement`, each claim of the published statement checked against the evidence"))
