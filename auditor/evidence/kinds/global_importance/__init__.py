"""The `global_importance` evidence kind's registry entry (light: the spec imports it)."""

from __future__ import annotations

from auditor.evidence.kinds.global_importance.options import METRICS, GlobalImportanceOptions
from auditor.evidence.registry import EvidenceKind

ENTRY = EvidenceKind("global_importance", GlobalImportanceOptions,
    f"{__name__}.measure", "Main ranking parameters",
    "TreeSHAP importance per feature: global, per query, within query.",
    f"{__name__}.cost:estimate", metrics=METRICS,
    phrases=f"{__name__}.phrases",
    key_figures=f"{__name__}.present:key_figures", feature_shares="within_query.share",
    section=f"{__name__}.present:section",
    readme=(
    "exact TreeSHAP importance: global, per query, and within query (what actually orders "
    "documents)"))
