"""The `pairwise` evidence kind's spec options and the metrics it can emit (the spec loads this)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from auditor.evidence.options import EvidenceOptions

METRICS = (  # what this kind can emit (EvidenceKind.metrics; auditor.evidence.registry.metric_pattern)
    "pairwise.{efficiency.max_abs_error|exact_pairs|margin.mean|pairs|queries|rows|top_feature_share.mean}",
)


class RaiPairOptions(EvidenceOptions):
    measurements: int | None = Field(None, ge=1, description="M, Bernoulli measurements (default ~2s·log(D/s), "
                                                             "s = D/4).")
    permutations: int = Field(8, ge=1, description="H, permutations averaged into the measurements.")
    noise: float | Literal["auto"] = Field("auto", description="ε of the L1 recovery; auto = the measurements' "
                                                               "standard error over permutations.")


class PairwiseOptions(EvidenceOptions):
    method: Literal["asipair", "raipair"] = Field("asipair", description="ASIPair (Shapley values) or RAIPair "
                                                                         "(compressed-sensing approximation).")
    top: int = Field(2, ge=2, description="Explain the adjacent pairs among this many top-ranked documents "
                                          "(2: why the first is above the second).")
    queries: int | None = Field(None, ge=1, description="Audit a seeded sample of this many queries (default all).")
    fill: Literal["adaptive", "masking"] = Field(
        "adaptive", description="adaptive: conditional fills from weighted training documents (Huai et al. 2020, "
                                "Eq. 4-6); "
                                "masking: the audit's masking rows for both documents (interventional).")
    pair_function: Literal["margin", "probability"] = Field(
        "margin", description="g(A, B): score margin s(A) − s(B), or the pairwise probability σ(s(A) − s(B)).")
    sigma: float = Field(0.2, gt=0, description="Smoothing σ of the distance weights (paper: 0.2).")
    eta: float = Field(0.9, gt=0, le=1, description="η: keep the best-weighted training documents until this share "
                                                    "of the weight product (Eq. 6).")
    max_neighbours: int = Field(50, ge=1, description="At most this many training documents per coalition.")
    background_size: int = Field(500, ge=2, description="Training documents sampled (seeded) as the reference set.")
    exact_max_features: int = Field(10, ge=1, le=16, description="Exact Shapley values over all 2^D coalitions up "
                                                                 "to this many features; permutations above.")
    permutations: int = Field(32, ge=1, description="ASIPair permutations when not exact.")
    top_features: int = Field(3, ge=1, description="Features listed per side in the report.")
    plot_query: str | None = Field(None, description="Query whose pairs the bar chart shows (default: of the audited "
                                                     "queries, the first with at least 10 documents, else the "
                                                     "largest).")
    plot_features: int = Field(8, ge=1, le=30, description="Features drawn one bar each per pair; the rest share "
                                                           "one bar.")
    raipair: RaiPairOptions = RaiPairOptions()
