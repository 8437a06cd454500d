"""The `global_importance` evidence kind's spec options and the metrics it can emit (the spec loads this)."""

from __future__ import annotations

from pydantic import Field

from auditor.evidence.options import EvidenceOptions


class GlobalImportanceOptions(EvidenceOptions):
    top: int = Field(15, ge=1, description="How many features the table and the chart show.")
    share_for_main: float = Field(0.8, gt=0, le=1, description="Main parameters = fewest features reaching "
                                                               "this share of the total importance.")
    explain_query: str | None = Field(None, description="Query id for the one-query figures: the waterfall of its "
                                                        "top document and the decision plot of its top 5 (default: "
                                                        "the first query with at least 10 documents, else the "
                                                        "largest).")
    waterfall_features: int = Field(8, ge=1, le=30, description="Features drawn one bar each in the waterfall; the "
                                                                "rest share one bar.")
    plot_docs: int = Field(2000, ge=100, description="Documents sampled (seeded) for the summary and dependence plots.")
    keep_queries: int = Field(50, ge=0, description="Queries whose per-document TreeSHAP values (with the bias and "
                                                    "the feature values) evidence.json keeps, for "
                                                    "`AuditResult.explanations` (shap.Explanation); at most "
                                                    "50,000 values in all, the rest said to be left out.")


METRICS = (  # what this kind can emit (EvidenceKind.metrics; auditor.evidence.registry.metric_pattern)
    "global_importance.{additivity.max_abs_error|score_rounding.max_abs|main_parameters"
    "|rank_agreement_global_vs_within|top1_share|top3_share|unused_features}",
    "global_importance.within_share.{feature}",
    "global_importance.within_share.{feature}.{ci95_low|ci95_high}",
)
