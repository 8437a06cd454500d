"""The `decision_path_accuracy` evidence kind's spec options and the metrics it can emit (the spec loads this)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator

from auditor.evidence.options import EvidenceOptions
from auditor.evidence.options.sections import attribution_names, method_list, methods_validator, with_sections
from auditor.explain import registry

GroundTruthKind = Literal["value_change", "frequency"]


SurrogateForm = Literal["auto", "coefficients", "contributions"]


NodeValues = Literal["count_weighted", "internal"]  # auditor.checks.decision_path.NodeValues (which loads numba)


def compared_form(name: str, kind: str, option: str) -> str:
    """The form of an explainer's explanation compared with a ground truth: a surrogate's (LIRME, EXS) as `option`
    names it (auto: contributions against value change, coefficients against frequency), any other's attributions.
    Measure compares it, present marks it: one rule for both."""
    if not registry.EXPLAINERS[name].surrogate:
        return "attributions"
    if option != "auto":
        return option
    return "contributions" if kind == "value_change" else "coefficients"


class DecisionPathOptions(EvidenceOptions):
    explainers: list[str] = method_list(
        # the exact explainers (TreeSHAP: the trees' own attribution) first, then the registry's order
        sorted(attribution_names(), key=lambda name: not registry.EXPLAINERS[name].needs_trees),
        allowed=attribution_names, description="Attribution explainers to compare (the registry's attribution "
                                               "explainers: auditor/explain/registry.py).")
    ground_truth: list[GroundTruthKind] = Field(["value_change", "frequency"], min_length=1,
                                                description="Ground truths from the decision paths "
                                                            "(Rahnama & Bütepage 2022).")
    node_values: NodeValues = Field(
        "count_weighted", description="Split-node values for the value-change ground truth: `count_weighted` means "
                                      "of the leaves below (bias = TreeSHAP's expected value) or the library's "
                                      "`internal` values.")
    top_k: int = Field(5, ge=1, description="K of the top-K AUC (paper: 5).")
    docs_per_query: int = Field(5, ge=1, description="Explain the top-ranked documents of each query.")
    queries: int | None = Field(None, ge=1, description="Audit a seeded sample of this many queries (default all; "
                                                        "the same sample as local_explanations for the same number).")
    surrogate_form: SurrogateForm = Field(
        "auto", description="LIRME/EXS explanation compared with the ground truth. auto: contributions "
                            "coef·(x−μ)/σ for value change, |coefficients| for frequency.")
    depth_bins: int = Field(4, ge=1, description="Quantile bins of path depth (when depths take more than 8 values).")

    _explainers = methods_validator("explainers", attribution_names)

    @field_validator("ground_truth")
    @classmethod
    def _unique(cls, value: list[Any]) -> list[Any]:
        return list(dict.fromkeys(value))


# the attribution explainers' option sections (`kernelshap:`, `lime:`), from the registry
DecisionPathOptions = with_sections(DecisionPathOptions, ("attribution",))  # type: ignore[misc]


METRICS = (  # what this kind can emit (EvidenceKind.metrics; auditor.evidence.registry.metric_pattern)
    "decision_path.{additivity.max_abs_error|bias|docs|queries|top_k}",
    "decision_path.depth.{mean|min|max}",
    "decision_path.{method}.{rows|degenerate_docs|fallback_docs}",
    "decision_path.{method}.{frequency|value_change}.{auc|spearman|spearman_abs|euclidean}.{mean|std|ci95_low"
    "|ci95_high|undefined|depth_spearman}",
    "decision_path.{method}.{frequency|value_change}.{auc|spearman|spearman_abs|euclidean}.mean@k{k}",
    "decision_path.{method}.{attributions|coefficients|contributions}.{frequency|value_change}.{auc|spearman"
    "|spearman_abs|euclidean}.mean",
)
