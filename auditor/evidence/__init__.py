"""Evidence plugins: one module a kind, listed here. A new kind is one module plus one line below."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from auditor.evidence.base import EvidencePlugin

_REGISTRY: dict[str, EvidencePlugin] | None = None


def __getattr__(name: str) -> Any:
    """`REGISTRY` imports every plugin on first use, not on `import auditor.evidence.<kind>`: worker processes
    import only the kinds whose tasks they run (less start-up time and memory per worker)."""
    global _REGISTRY
    if name == "REGISTRY":
        if _REGISTRY is None:
            _REGISTRY = _build()
        return _REGISTRY
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _build() -> dict[str, EvidencePlugin]:
    from auditor.evidence import (
        confidence,
        decision_path_accuracy,
        disclosure_consistency,
        exposure,
        global_importance,
        local_explanations,
        pairwise,
        parameter_influence,
        ranking_quality,
        surrogate,
    )
    from auditor.evidence.base import EvidencePlugin

    plugins = (
        EvidencePlugin("ranking_quality", ranking_quality.RankingQualityOptions, ranking_quality.run,
                       "Ranking quality", "nDCG@k and MAP per query against relevance labels."),
        EvidencePlugin("global_importance", global_importance.GlobalImportanceOptions, global_importance.run,
                       "Main ranking parameters", "TreeSHAP importance per feature: global, per query, within query.",
                       global_importance.check),
        EvidencePlugin("local_explanations", local_explanations.LocalExplanationsOptions, local_explanations.run,
                       "Local explanation quality",
                       "Explainers compared by validity and completeness (Singh et al. 2020).",
                       local_explanations.check),
        EvidencePlugin("decision_path_accuracy", decision_path_accuracy.DecisionPathOptions, decision_path_accuracy.run,
                       "Decision-path accuracy",
                       "Explainers against decision-path ground truth (Rahnama & Bütepage 2022).",
                       decision_path_accuracy.check),
        EvidencePlugin("disclosure_consistency", disclosure_consistency.DisclosureConsistencyOptions,
                       disclosure_consistency.run, "Declared vs actual main parameters",
                       "The declared main parameters and their order against the measured ones (P2B Art. 5).",
                       disclosure_consistency.check),
        EvidencePlugin("parameter_influence", parameter_influence.ParameterInfluenceOptions, parameter_influence.run,
                       "Influence of sensitive parameters", "Rank shifts when paid or other sensitive parameters "
                       "are masked or swept.", parameter_influence.check),
        EvidencePlugin("pairwise", pairwise.PairwiseOptions, pairwise.run,
                       "Pairwise explanations", "Why each top document is ranked above the next (Huai et al. 2020).",
                       pairwise.check),
        EvidencePlugin("confidence", confidence.ConfidenceOptions, confidence.run,
                       "Explanations not to rely on", "Low-confidence flags per query and explainer, with reasons.",
                       confidence.check),
        EvidencePlugin("exposure", exposure.ExposureOptions, exposure.run, "Exposure and self-preferencing",
                       "Who gets the attention: exposure against merit per group, and what the group feature "
                       "itself is worth (DMA Art. 6(5)).", exposure.check),
        EvidencePlugin("surrogate", surrogate.SurrogateOptions, surrogate.run,
                       "Interpretable surrogate (ILMART)", "An ILMART twin of the model: effect curves and fidelity."),
    )
    return {plugin.name: plugin for plugin in plugins}
