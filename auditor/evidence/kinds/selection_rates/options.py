"""The `selection_rates` evidence kind's spec options and the metrics it can emit (the spec loads this)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from auditor.evidence.options import EvidenceOptions

INTERSECTION = "_x_"  # joins the columns (and the values) of an intersectional category in a metric name
FOUR_FIFTHS = 0.8  # the EEOC's rule of thumb (29 CFR §1607.4(D)): `selection.below_four_fifths`, informative only


class SelectionRatesOptions(EvidenceOptions):
    categories: list[str] | None = Field(
        None, description="Columns whose values are the categories (e.g. [sex, race_ethnicity]): columns the data "
                          "keeps beside the features (`dataset.attribute_columns`), never the model's; default: every "
                          "attribute column.")
    intersections: bool = Field(True, description="Also the intersectional categories: every combination of the "
                                                  "columns' values (e.g. sex × race/ethnicity, 6 RCNY §5-301).")
    cutoff: Literal["median", "top_k"] = Field(
        "median", description="Who counts as selected: `median` — scoring above the median score of the whole "
                              "sample (LL144's scoring rate); `top_k` — among the first `k` of its query (a ranked "
                              "list's first page).")
    k: int = Field(10, ge=1, description="top_k: positions of each query that count as selected.")
    min_share: float = Field(0.02, ge=0, lt=1, description="Categories below this share of the individuals with a "
                                                           "known category get no impact ratio (6 RCNY §5-301 lets "
                                                           "the auditor exclude those under 2%, with the reason "
                                                           "stated); their number and rate are still reported.")
    unknown_values: list[str | None] = Field(
        ["", "unknown", None], description="Values that mean the category is unknown (case and surrounding spaces "
                                           "ignored; null: an empty cell): counted, not included in the rates.")
    labels: dict[str, dict[str, str]] = Field(
        {}, description="A declared table from the data's values to the categories they stand for, per column (e.g. "
                        "`{race: {Black: Black or African American, Other: unknown}}`; case and surrounding spaces "
                        "ignored): LL144's categories are the EEO-1 component 1 categories (6 RCNY §5-300), and a "
                        "value mapped to one of `unknown_values` is counted as unknown.")
    resamples: int = Field(2000, ge=100, le=100_000, description="Bootstrap resamples for the intervals.")
    resample_unit: Literal["query", "individual"] = Field(
        "query", description="What the bootstrap resamples: whole queries (a posting's candidates are ranked "
                             "together; default) or individuals.")
    warn_below: float = Field(0.8, gt=0, le=1, description="A category whose impact ratio lies below this over its "
                                                           "whole interval is detected (default 0.8, the four-fifths "
                                                           "rule of thumb; LL144 itself sets no level).")

    @field_validator("categories")
    @classmethod
    def _some(cls, value: list[str] | None) -> list[str] | None:
        if value is not None and not value:
            raise ValueError("name at least one category column, or leave `categories` out for every attribute "
                             "column")
        return value


METRICS = (  # what this kind can emit (EvidenceKind.metrics; auditor.evidence.registry.metric_pattern)
    "selection.{column}.{value}.{n|rate|ratio}",
    "selection.{column}.{value}.{rate|ratio}.{ci95_low|ci95_high}",
    "selection.{column}.min_ratio",
    "selection.{column}.min_ratio.{ci95_low|ci95_high}",
    "selection.min_ratio",
    "selection.min_ratio.{ci95_low|ci95_high}",
    "selection.unknown.{column}",
    "selection.{individuals|queries|columns|intersections|reported|excluded|unknown_reported|below_four_fifths}",
    "selection.{eeo1_components|non_eeo1|median_score}",
)
