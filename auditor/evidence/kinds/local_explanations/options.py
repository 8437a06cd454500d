"""The `local_explanations` evidence kind's spec options and the metrics it can emit (the spec loads this)."""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator

from auditor.evidence.options import EvidenceOptions
from auditor.evidence.options.sections import (
    default_method_names,
    method_list,
    method_names,
    methods_validator,
    with_sections,
)


class LocalExplanationsOptions(EvidenceOptions):
    methods: list[str] = method_list(default_method_names(), allowed=method_names,
                                     description="Explainers to run and compare (the registry's methods: "
                                                 "auditor/explain/registry.py; default: all but the listwise "
                                                 "rankingshap and rankshap, which are opt-in).")
    k: int = Field(5, ge=1, description="Explanation size for the main comparison (paper: 5).")
    k_curve: list[int] = Field([3, 5, 7, 10], description="Sizes for the effect-of-k curve ([] to skip).")
    queries: int | None = Field(None, ge=1, description="Audit a seeded sample of this many queries (default all).")
    keep_queries: int = Field(20, ge=0, description="Queries whose attributions (each attribution method's values "
                                                   "for its top documents, with validity and completeness) "
                                                   "evidence.json keeps for AuditResult.explanations(method=...): "
                                                   "the first audited, within 50,000 values (0: none).")
    optimum_max_subsets: int = Field(
        20_000, ge=0, description="Compute the exhaustive optimum when C(features, k) is at most this (0: never).")
    validity_floor: float = Field(0.5, ge=0, le=1, description="An explainer whose mean validity is below this "
                                                              "(its whole interval) is reported as not reproducing "
                                                              "the rankings (as confidence's validity threshold).")
    background_rows: int | None = Field(
        None, ge=1, le=1000, description="Also measure validity and completeness as the listwise peers do, beside the "
                                         "audit's masking: each removed feature replaced by each of N background "
                                         "rows in turn, tau averaged over the N masked rankings (drawn once, seeded); "
                                         "the listwise explainers (rankingshap, rankshap) play that game too, as "
                                         "published. Default: the spec's `masking.rows`; null: not measured.")
    reference_max_players: int = Field(
        12, ge=0, le=16, description="Listwise explainers (rankingshap, rankshap): compare each query's values with "
                                     "the exact Shapley values when at most this many features play (2^M "
                                     "coalitions); 0: never.")

    _methods = methods_validator("methods", method_names)

    @field_validator("k_curve")
    @classmethod
    def _unique(cls, value: list[Any]) -> list[Any]:
        return list(dict.fromkeys(value))


# the explainers' option sections (`kernelshap:`, `lime:`, `greedy:`, `search:`), from the registry
LocalExplanationsOptions = with_sections(LocalExplanationsOptions)  # type: ignore[misc]


METRICS = (  # what this kind can emit (EvidenceKind.metrics; auditor.evidence.registry.metric_pattern)
    "local.{queries|excluded_queries|k}",
    "local.{method}.validity",
    "local.{method}.{validity|completeness}.{mean|median|ci95_low|ci95_high}",
    "local.{method}.validity.mean@k{k}",
    "local.{method}.{rows|share_of_optimum|set_size.mean|degenerate_docs|fallback_docs|coalitions.mean"
    "|underdetermined_share}",
    "local.{method}.convergence.agreement.{mean|ci95_low|ci95_high}",
    "local.{method}.{validity_rows.{mean|ci95_low|ci95_high}|completeness_rows.mean}",  # under background rows
    "local.{method}.reference.{queries|{footrule3|footrule10|footrule_all|l1}.mean}",  # listwise vs exact Shapley
    "local.listwise.reference.rows",
)
