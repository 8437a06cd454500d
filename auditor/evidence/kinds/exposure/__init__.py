"""The `exposure` evidence kind's registry entry (light: the spec imports it)."""

from __future__ import annotations

from auditor.evidence.kinds.exposure.options import METRICS, ExposureOptions
from auditor.evidence.registry import EvidenceKind

ENTRY = EvidenceKind("exposure", ExposureOptions, f"{__name__}.measure",
    "Exposure and self-preferencing", "Who gets the attention: exposure against merit per group, "
    "and what the group feature itself is worth (DMA Art. 6(5)).", f"{__name__}.cost:estimate",
    uses=("surrogate",), metrics=METRICS,
    phrases=f"{__name__}.phrases",
    key_figures=f"{__name__}.present:key_figures", section=f"{__name__}.present:section",
    readme=(
    "who gets the attention (DSA Art. 34(1)(b), DMA Art. 6(5), P2B Art. 7): each group's share of "
    "the attention against the share its relevance earns, per group value (own-brand products, a "
    "seller tier...), with what the group feature itself is worth when set alike for every "
    "document; disparate treatment (Singh & Joachims 2018), expected exposure (Diaz et al. 2020) "
    "and AWRF (TREC Fair Ranking 2021–22) beside it"))
