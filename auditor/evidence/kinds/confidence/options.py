"""The `confidence` evidence kind's spec options and the metrics it can emit (the spec loads this)."""

from __future__ import annotations

from typing import Any, Literal, get_args

from pydantic import Field, field_validator

from auditor.evidence.options import EvidenceOptions
from auditor.evidence.options.sections import judged_method_names, method_list, methods_validator, with_sections

WIDEN_TO = 3  # an attribution below the validity floor is widened up to this many times k features


def widest(k: int, n_features: int) -> int:
    """The most features a widened explanation may name: WIDEN_TO·k, and never more than half the features (an
    explanation naming most of them explains nothing)."""
    return min(WIDEN_TO * k, n_features // 2)


Criterion = Literal["validity", "agreement", "path_accuracy", "stability", "margin", "additivity"]


METRICS = (  # what this kind can emit (EvidenceKind.metrics; auditor.evidence.registry.metric_pattern)
    "confidence.{explanations|excluded_queries|fragile_queries|fragile_queries_share|flagged_fraction}",
    "confidence.flagged_fraction.{ci95_low|ci95_high}",
    "confidence.reason.{criterion}.share",
    "confidence.validation.{measure}_gap",
    "confidence.validation.{measure}_gap.{ci95_low|ci95_high}",
    "confidence.{method}.flagged_fraction",
    "confidence.{reliable_share|attribution_unreliable_queries|attribution_unreliable_queries_share}",
    "confidence.rules.flagged_fraction",
    "confidence.validation.{auc|ece}",
    "confidence.widened.{explanations|reached|reliable_share}",
    "confidence.validation.{auc|ece}.{ci95_low|ci95_high}",
)


class Thresholds(EvidenceOptions):
    validity: float = Field(0.5, description="Flag when validity (Kendall tau) is below this.")
    agreement: float = Field(0.4, description="Flag when the mean top-k overlap with the other explainers is below.")
    path_accuracy: float = Field(0.6, description="Flag when the top-K AUC against the decision path is below.")
    stability: float = Field(0.6, description="Flag when the overlap with a second seeded run is below.")
    margin: float = Field(0.01, description="Flag when the smallest top-document score gap / score std is "
                                                 "below (a near tie).")
    additivity: float = Field(1e-3, description="Flag when |Σφ − (score − base)| / score range is above.")


class ConfidenceOptions(EvidenceOptions):
    methods: list[str] = method_list(["treeshap5", "lirme5", "exs5", "greedy_cover_eps", "validity_search"],
                                     allowed=judged_method_names,
                                     description="Explainers whose explanations are judged (the registry's "
                                                 "methods but baselines such as RANDOM).")
    k: int = Field(5, ge=1, description="Explanation size (as in local_explanations).")
    queries: int | None = Field(None, ge=1, description="Judge a seeded sample of this many queries (default all).")
    criteria: list[Criterion] = Field(list(get_args(Criterion)), min_length=1, description="Criteria applied.")
    thresholds: Thresholds = Thresholds()
    margin_docs: int = Field(5, ge=2, description="Top documents whose score gaps make a ranking fragile.")
    path_top_k: int = Field(5, ge=1, description="K of the decision-path top-K AUC.")
    rerun_fraction: float = Field(1.0, gt=0, le=1, description="Sample size of the stability rerun, as a fraction "
                                                               "of the first run's (1: a new seed only).")
    max_listed: int = Field(200, ge=0, description="Flagged explanations listed in the report, each in Appendix B "
                                                   "(all are in evidence.json): a reviewer needs the list of what not "
                                                   "to rely on, not a sample of it.")
    heldout_rows: int = Field(20, ge=2, le=200, description="Background rows of the held-out masking the reliability "
                                                             "target is measured under (their own seeded draw, not "
                                                             "the masking an explanation was chosen on).")
    robustness_rows: int = Field(5, ge=1, le=200, description="Background rows (a seeded draw of their own, apart "
                                                               "from the held-out rows) an explanation's validity is "
                                                               "also measured under: a signal of the estimate (does "
                                                               "the explanation hold off the audit's masking?).")
    flag_below: float = Field(0.5, gt=0, lt=1, description="Flag an explanation whose estimated reliability (the "
                                                            "out-of-sample probability that it is reliable) is "
                                                            "below this.")
    background_rows: int | None = Field(
        None, ge=1, le=1000, description="Background rows the listwise explainers and `background_search` play on "
                                         "(tau averaged over N masked rankings), as in local_explanations. Default: "
                                         "the spec's `masking.rows`; null: the audit's masking.")

    _methods = methods_validator("methods", judged_method_names)

    @field_validator("criteria")
    @classmethod
    def _unique(cls, value: list[Any]) -> list[Any]:
        return list(dict.fromkeys(value))


ConfidenceOptions = with_sections(ConfidenceOptions)  # type: ignore[misc]  # the explainers' option sections
