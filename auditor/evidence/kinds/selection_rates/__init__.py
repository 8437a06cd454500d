"""The `selection_rates` evidence kind's registry entry (light: the spec imports it)."""

from __future__ import annotations

from auditor.evidence.kinds.selection_rates.options import METRICS, SelectionRatesOptions
from auditor.evidence.registry import EvidenceKind

ENTRY = EvidenceKind("selection_rates", SelectionRatesOptions, f"{__name__}.measure",
    "Scoring rates and impact ratios (bias audit)",
    "Each category's share of individuals scoring above the median, and its impact ratio "
    "(NYC Local Law 144).", f"{__name__}.cost:estimate", metrics=METRICS,
    phrases=f"{__name__}.phrases",
    key_figures=f"{__name__}.present:key_figures", limitations=f"{__name__}.present:limitations",
    section=f"{__name__}.present:section",
    readme=(
    "the bias audit of a hiring ranker under NYC Local Law 144 (6 RCNY §5-301): per sex, "
    "race/ethnicity and intersectional category (columns kept beside the data, never features), "
    "the scoring rate (share above the sample's median score, or in a query's top k) and the impact "
    "ratio to the highest category, with intervals, unknown counts and the categories under 2% "
    "excluded with the reason; laid out as the published summary"))
