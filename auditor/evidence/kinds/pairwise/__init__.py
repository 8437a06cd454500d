"""The `pairwise` evidence kind's registry entry (light: the spec imports it)."""

from __future__ import annotations

from auditor.evidence.kinds.pairwise.options import METRICS, PairwiseOptions
from auditor.evidence.registry import EvidenceKind

ENTRY = EvidenceKind("pairwise", PairwiseOptions, f"{__name__}.measure", "Pairwise explanations",
    "Why each top document is ranked above the next (Huai et al. 2020).", f"{__name__}.cost:estimate",
    metrics=METRICS, sampled=True, pooled=True, masked=True,
    coverage=("pairwise.queries", "", "Pairwise explanations"), section=f"{__name__}.present:section",
    readme=(
    "why each top document is ranked above the next: ASIPair Shapley values of the score margin "
    "(exact for ≤ 10 features), or RAIPair (Huai et al. 2020)"))
