"""The `exposure` evidence kind's spec options and the metrics it can emit (the spec loads this)."""

from __future__ import annotations

import math
from typing import Literal

from pydantic import Field, field_validator

from auditor.evidence.options import EvidenceOptions

ATTENTION_MODELS = ("log", "geometric", "cascade")  # the three attention models side by side (attention.py)
ATTENTION_MEASURES = ("exposure_share", "merit_share", "ratio", "counterfactual.share_change")  # under each
ATTENTION_METRICS = (  # exposure under the three attention models (attention.py)
    "exposure.{own|{feature}.{value}}.attention.{log|geometric|cascade}.{exposure_share|merit_share|ratio"
    "|counterfactual.share_change}",
    "exposure.{own|{feature}.{value}}.attention.{log|geometric|cascade}.{exposure_share|merit_share|ratio"
    "|counterfactual.share_change}.{ci95_low|ci95_high}",
    "exposure.{own|{feature}.{value}}.attention.{min_ratio|max_ratio|min_share_change|max_share_change}",
    "exposure.{own|{feature}.{value}}.attention.{min_ratio|max_ratio|min_share_change|max_share_change}"
    ".{ci95_low|ci95_high}",
    "exposure.{max|min}.attention.{{log|geometric|cascade}.ratio|min_ratio|max_ratio}",
    "exposure.{max|min}.attention.{{log|geometric|cascade}.ratio|min_ratio|max_ratio}.{ci95_low|ci95_high}",
    "exposure.max.attention.{{log|geometric|cascade}.counterfactual.share_change|min_share_change"
    "|max_share_change}",
    "exposure.max.attention.{{log|geometric|cascade}.counterfactual.share_change|min_share_change"
    "|max_share_change}.{ci95_low|ci95_high}",
)


class ExposureOptions(EvidenceOptions):
    group: list[str] = Field([], description="Feature columns whose values form the groups, categorical or 0/1 "
                                             "(e.g. a seller tier, a sponsored flag).")
    own: dict[str, float] = Field({}, description="The platform's own products: {column: value}, e.g. {own_brand: 1}; "
                                                  "the column is a group, and the value's figures are also reported "
                                                  "as exposure.own.* (DMA Art. 6(5), P2B Art. 7).")
    attention: Literal["log", "geometric", "cascade"] | list[float] = Field(
        "log", description="Attention of each position: log = 1/log2(1 + rank), geometric = patience^(rank − 1), "
                           "cascade (stops at relevant documents, as expected reciprocal rank), or a list of "
                           "weights for ranks 1, 2, … (e.g. click-through rates by position).")
    patience: float = Field(0.5, gt=0, le=1, description="geometric and cascade: the chance of looking one position "
                                                         "further.")
    cutoff: int | None = Field(10, ge=1, description="Positions beyond this get no attention (the first page); null: "
                                                     "the whole ranking.")
    relevance: str | None = Field(None, description="A feature column to use as relevance (merit) instead of the "
                                                    "labels.")
    merit: Literal["ideal", "relevance"] = Field(
        "ideal", description="A group's merit share: its share of the attention in the ideal order by relevance "
                             "(equally relevant documents taking turns; default), or of the total relevance.")
    counterfactual: bool = Field(True, description="Re-rank with the group feature set alike for every document.")
    top_queries: int = Field(5, ge=1, le=100, description="Queries listed with the largest over-exposure, per group.")
    max_values: int = Field(20, ge=2, le=100, description="Most distinct values a group column may take.")
    queries: int | None = Field(None, ge=2, description="Sample of queries (seeded); default: all.")
    min_queries: int = Field(10, ge=2, description="A group value that competes with others in fewer queries keeps "
                                                   "its own figures but takes no part in the largest and smallest "
                                                   "ratio the packs judge (`exposure.max.*`, `exposure.min.*`): a "
                                                   "share from a handful of queries is not evidence of a group's "
                                                   "treatment.")
    resamples: int = Field(2000, ge=100, le=100_000, description="Bootstrap resamples of queries for intervals.")

    def groups(self) -> list[str]:
        """The group columns: `group`, then the column `own` names when it is not among them."""
        return [*self.group, *(c for c in self.own if c not in self.group)]

    @field_validator("own")
    @classmethod
    def _one_own_group(cls, value: dict[str, float]) -> dict[str, float]:
        if len(value) > 1:
            raise ValueError("name one column and the value that marks the platform's own products, e.g. "
                             "{own_brand: 1}")
        return value

    @field_validator("attention")
    @classmethod
    def _weights(cls, value: str | list[float]) -> str | list[float]:
        if isinstance(value, list) and (not value or any(not math.isfinite(w) or w < 0 for w in value)
                                        or not any(w > 0 for w in value) or len(value) > 10_000):
            raise ValueError("attention weights are non-negative numbers, at least one above 0, for ranks 1, 2, …")
        return value


METRICS = (  # what this kind can emit (EvidenceKind.metrics; auditor.evidence.registry.metric_pattern)
    "exposure.{groups|queries}",
    "exposure.expected_exposure.{disparity|loss|relevance}.{mean|ci95_low|ci95_high}",
    "exposure.{feature}.{expected_exposure.disparity|expected_exposure.loss|expected_exposure.relevance"
    "|awrf}.{mean|ci95_low|ci95_high}",
    "exposure.{feature}.{value}.{queries|excess}",
    "exposure.{own|max|min|{feature}.{value}}.{exposure_share|merit_share|ratio|disparate_treatment"
    "|counterfactual.exposure_share|counterfactual.share_change|counterfactual.ratio}",
    "exposure.{own|max|min|{feature}.{value}}.{exposure_share|merit_share|ratio|disparate_treatment"
    "|counterfactual.exposure_share|counterfactual.share_change|counterfactual.ratio"
    "|counterfactual.rank_shift}.{ci95_low|ci95_high}",
    "exposure.{own|max|min|{feature}.{value}}.counterfactual.rank_shift.{mean|max}",
    *ATTENTION_METRICS,  # the same figures under each attention model (attention.py)
)
