"""The `local_explanations` evidence kind's registry entry (light: the spec imports it)."""

from __future__ import annotations

from auditor.evidence.kinds.local_explanations.options import METRICS, LocalExplanationsOptions
from auditor.evidence.registry import EvidenceKind

ENTRY = EvidenceKind("local_explanations", LocalExplanationsOptions,
    f"{__name__}.measure", "Local explanation quality",
    "Explainers compared by validity and completeness (Singh et al. 2020).",
    f"{__name__}.cost:estimate", metrics=METRICS,
    phrases=f"{__name__}.phrases",
    key_figures=f"{__name__}.present:key_figures", limitations=f"{__name__}.present:limitations",
    self_checks=("explainer-no-better-than-random", "explanations-below-validity-floor",
                 "explainer-estimate-noisy"), sampled=True, pooled=True,
    masked=True, reduced=(("k_curve", []), ("optimum_max_subsets", 0)),
    reduced_text="the effect-of-k curve and the exhaustive optimum (only k itself)",
    coverage=("local.queries", "local.excluded_queries", "Local explanations"), section=f"{__name__}.present:section",
    readme=(
    "TreeSHAP, KernelSHAP, LIRME, EXS, GREEDY family and our validity search, compared by validity "
    "and completeness (Singh et al. 2020, Table 2), with the exhaustive optimum where affordable; "
    "opt-in listwise attributions `rankingshap` and `rankshap` (Heuss et al. 2025; Chowdhury et al."
    " 2025) — which features order a query's results, and how much — checked against exact Shapley "
    "values; validity under N background rows beside the mean masking (`background_rows`)"))
