"""The `parameter_influence` evidence kind's registry entry (light: the spec imports it)."""

from __future__ import annotations

from auditor.evidence.kinds.parameter_influence.options import METRICS, ParameterInfluenceOptions
from auditor.evidence.registry import EvidenceKind

ENTRY = EvidenceKind("parameter_influence", ParameterInfluenceOptions,
    f"{__name__}.measure", "Influence of sensitive parameters",
    "Rank shifts when paid or other sensitive parameters are masked or swept.",
    f"{__name__}.cost:estimate", metrics=METRICS,
    phrases=f"{__name__}.phrases",
    key_figures=f"{__name__}.present:key_figures", section=f"{__name__}.present:section",
    coverage=("influence.queries", "", "Influence of sensitive parameters"),
    readme=(
    "what sensitive parameters (paid placement, commission) do to positions (P2B Art. 5(3)): rank "
    "shift when masked, gain from lowest to highest value, top-k changes, with intervals"))
