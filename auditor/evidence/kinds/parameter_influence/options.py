"""The `parameter_influence` evidence kind's spec options and the metrics it can emit (the spec loads this)."""

from __future__ import annotations

from pydantic import Field

from auditor.evidence.options import EvidenceOptions


class ParameterInfluenceOptions(EvidenceOptions):
    sensitive: list[str] = Field([], description="Features whose influence on the ranking must be measured and "
                                                 "disclosed, e.g. a sponsored flag or a commission rate.")
    top_k: int = Field(10, ge=1, description="The top of a ranking whose membership is checked.")
    sweep_points: int = Field(5, ge=2, le=50, description="Values a parameter is swept over (quantiles of the "
                                                          "background data; fewer when it has fewer values).")
    queries: int | None = Field(None, ge=2, description="Sample of queries (seeded); default: all.")
    resamples: int = Field(2000, ge=100, le=100_000, description="Bootstrap resamples of queries for intervals.")


METRICS = (  # what this kind can emit (EvidenceKind.metrics; auditor.evidence.registry.metric_pattern)
    "influence.{parameters|queries}",
    "influence.{feature}.{rank_shift|sweep_gain}",
    "influence.{feature}.{rank_shift|sweep_gain|sweep_range}.{mean|ci95_low|ci95_high}",
    "influence.{feature}.{rank_shift|sweep_range}.max",
    "influence.{feature}.{topk_changed_share|affected_docs_share}",
    "influence.{feature}.topk_changed_share.{ci95_low|ci95_high}",
    "influence.max.rank_shift.{mean|ci95_low|ci95_high}",
    "influence.max.{sweep_gain.max_abs|topk_changed_share}",
    "influence.max.{sweep_gain.max_abs|topk_changed_share}.{ci95_low|ci95_high}",
)
