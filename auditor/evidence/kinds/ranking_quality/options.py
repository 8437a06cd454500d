"""The `ranking_quality` evidence kind's spec options and the metrics it can emit (the spec loads this)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from auditor.evidence.options import EvidenceOptions


class RankingQualityOptions(EvidenceOptions):
    cutoffs: list[int] = Field([1, 3, 5, 10], min_length=1, description="nDCG cut-offs k.")
    gain: Literal["exponential", "linear"] = Field("exponential", description="Gain of a grade r: 2^r−1 or r.")
    all_zero_queries: Literal["one", "zero", "skip"] = Field(
        "one", description="nDCG of a query whose labels are all 0: 1 (LightGBM), 0, or left out of the mean.")
    relevant_from: int = Field(1, ge=1, description="MAP: grades at or above this count as relevant.")
    low_threshold: float = Field(0.5, ge=0, le=1, description="Report the share of queries below this nDCG.")
    groups: list[str] | None = Field(
        None, description="Columns the data keeps beside the features (`dataset.attribute_columns`) whose values are "
                          "groups of persons: the accuracy for each group (pairwise accuracy, AI Act Annex IV point "
                          "3). Default: every attribute column; [] none.")
    group_min_pairs: int = Field(30, ge=1, description="Pairs a group must lead to be given an accuracy.")
    group_min_share: float = Field(0.02, ge=0, lt=1, description="Share of the individuals of known group a group "
                                                                 "must reach to be given an accuracy (as LL144's 2%: "
                                                                 "a smaller group's accuracy is noise, and the gap "
                                                                 "would follow it).")
    unknown_values: list[str | None] = Field(
        ["", "unknown", None], description="Group values that mean unknown (case and surrounding spaces ignored; "
                                           "null: an empty cell): not a group.")

    @field_validator("cutoffs")
    @classmethod
    def _positive_unique(cls, value: list[int]) -> list[int]:
        if any(k < 1 for k in value):
            raise ValueError("cut-offs must be positive integers")
        return sorted(set(value))


METRICS = (  # what this kind can emit (EvidenceKind.metrics; auditor.evidence.registry.metric_pattern)
    "ranking_quality.{queries|single_doc_queries|all_zero_label_queries}",
    "ranking_quality.ndcg@{k}",
    "ranking_quality.{ndcg@{k}|map}.{mean|std|ci95_low|ci95_high|min|p10|median|max|share_low|queries}",
    "ranking_quality.group.{column}.{value}.pairwise_accuracy",
    "ranking_quality.group.{column}.{value}.pairwise_accuracy.{ci95_low|ci95_high}",
    "ranking_quality.group.{column}.gap",
    "ranking_quality.group.{column}.gap.{ci95_low|ci95_high}",
    "ranking_quality.group.{gap|columns}",
    "ranking_quality.group.gap.{ci95_low|ci95_high}",
)
