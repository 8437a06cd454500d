"""The `ranking_quality` evidence kind's registry entry (light: the spec imports it)."""

from __future__ import annotations

from auditor.evidence.kinds.ranking_quality.options import METRICS, RankingQualityOptions
from auditor.evidence.registry import EvidenceKind

ENTRY = EvidenceKind("ranking_quality", RankingQualityOptions, f"{__name__}.measure",
    "Ranking quality", "nDCG@k and MAP per query against relevance labels.",
    "auditor.evidence.costs:scores_only", metrics=METRICS,
    phrases=f"{__name__}.phrases",
    key_figures=f"{__name__}.present:key_figures", limitations=f"{__name__}.present:limitations",
    section=f"{__name__}.present:section",
    readme=(
    "nDCG@k and MAP per query against relevance labels, with intervals and the weakest queries"))
