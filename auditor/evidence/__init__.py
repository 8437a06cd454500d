"""Evidence plugins: one module a kind, listed here. A new kind is one module plus one line below.

`REGISTRY` holds the kinds a spec can request; `ALWAYS` the two items every audit has (`dataset`: data facts,
`governance`: facts about the audit record), which rules address like any other. `run_order` puts the requested
items in the order they run: a plugin that `uses` another runs after it, otherwise spec order.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from auditor.evidence.base import EvidencePlugin

ALWAYS_PRESENT = ("dataset", "governance")  # the items every audit has, before the requested ones

_REGISTRY: dict[str, EvidencePlugin] | None = None
_ALWAYS: dict[str, EvidencePlugin] | None = None


def __getattr__(name: str) -> Any:
    """`REGISTRY` and `ALWAYS` import every plugin on first use, not on `import auditor.evidence.<kind>`: worker
    processes import only the kinds whose tasks they run (less start-up time and memory per worker)."""
    global _REGISTRY, _ALWAYS
    if name == "REGISTRY":
        if _REGISTRY is None:
            _REGISTRY = _build()
        return _REGISTRY
    if name == "ALWAYS":
        if _ALWAYS is None:
            _ALWAYS = _build_always()
        return _ALWAYS
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def run_order(names: list[str], plugins: dict[str, EvidencePlugin] | None = None) -> list[str]:
    """The requested evidence kinds in the order they run: each after the requested kinds it `uses`, otherwise in
    the given (spec) order — of the kinds ready to run, the first listed runs next. A kind used but not requested
    is not added. Raises ValueError on a cycle of `uses` (a registry error, never the user's)."""
    plugins = plugins if plugins is not None else __getattr__("REGISTRY")
    requested = set(names)
    waiting = {name: {used for used in plugins[name].uses if used in requested and used != name} for name in names}
    done: list[str] = []
    while len(done) < len(names):
        ready = next((name for name in names if name not in done and waiting[name] <= set(done)), None)
        if ready is None:
            cycle = [name for name in names if name not in done]
            raise ValueError(f"evidence kinds that use each other in a cycle: {', '.join(cycle)}")
        done.append(ready)
    return done


def _build_always() -> dict[str, EvidencePlugin]:
    from auditor.evidence import dataset, governance
    from auditor.evidence.base import EvidencePlugin

    plugins = (
        EvidencePlugin("dataset", dataset.DatasetOptions, dataset.run, "Dataset",
                       "Data facts: documents, queries, features, degenerate queries, the query sample.",
                       metrics=dataset.METRICS),
        EvidencePlugin("governance", governance.GovernanceOptions, governance.run, "Governance",
                       "Facts about the audit record: signed, retention, stated purpose, owner and oversight.",
                       metrics=governance.METRICS),
    )
    return {plugin.name: plugin for plugin in plugins}


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
                       "Ranking quality", "nDCG@k and MAP per query against relevance labels.",
                       metrics=ranking_quality.METRICS),
        EvidencePlugin("global_importance", global_importance.GlobalImportanceOptions, global_importance.run,
                       "Main ranking parameters", "TreeSHAP importance per feature: global, per query, within query.",
                       global_importance.check, metrics=global_importance.METRICS),
        EvidencePlugin("local_explanations", local_explanations.LocalExplanationsOptions, local_explanations.run,
                       "Local explanation quality",
                       "Explainers compared by validity and completeness (Singh et al. 2020).",
                       local_explanations.check, metrics=local_explanations.METRICS),
        EvidencePlugin("decision_path_accuracy", decision_path_accuracy.DecisionPathOptions, decision_path_accuracy.run,
                       "Decision-path accuracy",
                       "Explainers against decision-path ground truth (Rahnama & Bütepage 2022).",
                       decision_path_accuracy.check, metrics=decision_path_accuracy.METRICS),
        EvidencePlugin("disclosure_consistency", disclosure_consistency.DisclosureConsistencyOptions,
                       disclosure_consistency.run, "Declared vs actual main parameters",
                       "The declared main parameters and their order against the measured ones (P2B Art. 5).",
                       disclosure_consistency.check, uses=("surrogate",), metrics=disclosure_consistency.METRICS),
        EvidencePlugin("parameter_influence", parameter_influence.ParameterInfluenceOptions, parameter_influence.run,
                       "Influence of sensitive parameters", "Rank shifts when paid or other sensitive parameters "
                       "are masked or swept.", parameter_influence.check, metrics=parameter_influence.METRICS),
        EvidencePlugin("pairwise", pairwise.PairwiseOptions, pairwise.run,
                       "Pairwise explanations", "Why each top document is ranked above the next (Huai et al. 2020).",
                       pairwise.check, metrics=pairwise.METRICS),
        EvidencePlugin("confidence", confidence.ConfidenceOptions, confidence.run,
                       "Explanations not to rely on", "Low-confidence flags per query and explainer, with reasons.",
                       confidence.check, metrics=confidence.METRICS),
        EvidencePlugin("exposure", exposure.ExposureOptions, exposure.run, "Exposure and self-preferencing",
                       "Who gets the attention: exposure against merit per group, and what the group feature "
                       "itself is worth (DMA Art. 6(5)).", exposure.check, uses=("surrogate",),
                       metrics=exposure.METRICS),
        EvidencePlugin("surrogate", surrogate.SurrogateOptions, surrogate.run,
                       "Interpretable surrogate (ILMART)", "An ILMART twin of the model: effect curves and fidelity.",
                       metrics=surrogate.METRICS),
    )
    return {plugin.name: plugin for plugin in plugins}
