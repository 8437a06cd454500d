"""The `surrogate` evidence kind's spec options and the metrics it can emit (the spec loads this)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from auditor.evidence.options import EvidenceOptions

THREADED_CELLS = 500_000  # training cells (documents × features) from which the surrogate trains on the audit's cores


class SurrogateOptions(EvidenceOptions):
    target: Literal["regression", "lambdarank"] = Field(
        "regression", description="What the surrogate fits: per-query standardised scores (regression) or "
                                  "per-query rank grades (lambdarank).")
    grade_levels: int = Field(10, ge=2, le=31, description="lambdarank target: number of rank grades per query.")
    interactions: int = Field(10, ge=0, le=100, description="Most feature pairs the surrogate may use.")
    max_features: int | None = Field(40, ge=1, description="Most distinct features for main effects: 40 keeps the "
                                                           "surrogate one a reader can take in, and Kendall tau "
                                                           "with the model 0.82 and 0.78 on the two wide synthetic "
                                                           "sets (docs/benchmarks.md); null: as many as early "
                                                           "stopping keeps.")
    selection: Literal["first", "gain"] = Field("first", description="Rank candidate pairs by first appearance in "
                                                                     "the 3-leaf probe (paper) or by split gain.")
    learning_rate: float = Field(0.1, gt=0, le=1, description="LightGBM learning rate for every phase.")
    num_leaves: int = Field(8, ge=2, le=255, description="Leaves per tree (main effects and interactions).")
    min_data_in_leaf: int = Field(20, ge=1, description="LightGBM min_data_in_leaf.")
    max_rounds: int = Field(1000, ge=1, description="Most boosting rounds per phase (early stopping decides).")
    patience: int = Field(30, ge=1, description="Early stopping: rounds without improvement on validation queries.")
    validation_share: float = Field(0.2, gt=0, lt=1, description="Share of reference queries held out for early "
                                                                 "stopping.")
    synthetic_per_document: int = Field(0, ge=0, le=50, description="Synthetic documents per real training "
                                        "document (features recombined within its query, scored by the audited "
                                        "model); 0: real documents only.")
    top_effects: int = Field(24, ge=1, le=30, description="Most main effects drawn (largest first; a yes/no feature "
                                                          "as two bars, others as step curves). 24 (one page): on "
                                                          "both wide synthetic sets the effects drawn then hold 96% "
                                                          "of the surrogate's Kendall tau, 12 held 80–88% "
                                                          "(docs/benchmarks.md).")
    top_pairs: int = Field(10, ge=0, le=100, description="Most pair effects drawn as heatmaps (largest first; the "
                                                         "default draws every pair of the default `interactions`).")
    fidelity_floor: float = Field(0.8, ge=0, le=1, description="Mean Kendall tau with the model's rankings below "
                                                               "which (its whole interval) the surrogate is reported "
                                                               "as not describing the model.")


METRICS = (  # what this kind can emit (EvidenceKind.metrics; auditor.evidence.registry.metric_pattern)
    "surrogate.{decomposition.max_abs_error|n_interactions|n_main_effects|n_trees|training.synthetic_documents}",
    "surrogate.fidelity.{queries|explained_share|main_effects.explained_share}",
    "surrogate.fidelity.{drawn.kendall.mean|drawn.effects|effects_for_95pct}",
    "surrogate.fidelity.{kendall|ndcg@{k}}.{mean|ci95_low|ci95_high|min|p10}",
    "surrogate.fidelity.main_effects.{kendall|ndcg@{k}}.mean",
    "surrogate.labels.ndcg@{k}.{model|surrogate}",
    "surrogate.direction.{feature}",
    "surrogate.direction.{feature}.{ci95_low|ci95_high}",
)
