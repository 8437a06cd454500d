"""What the documents say from the `surrogate` evidence as stored: the key figures it offers page 2 and
its Limitations sentences."""

from __future__ import annotations

from collections.abc import Mapping

from auditor.core.numbers import figure
from auditor.evidence.document import EvidenceItem
from auditor.evidence.registry import KeyFigure

Result = EvidenceItem  # the kind's result as evidence.json holds it (metrics, records, ...)


def key_figures(result: Result) -> list[KeyFigure]:
    return [KeyFigure(60, "Surrogate fidelity (Kendall tau with the model's rankings)",
                      "surrogate.fidelity.kendall.mean", "1 = the surrogate orders documents as the model does")]


def limitations(metrics: Mapping[str, float], dataset: Mapping[str, float]) -> list[str]:
    if "surrogate.fidelity.kendall.mean" not in metrics:
        return []
    return [f"The interpretable surrogate ranks like the model with Kendall's tau "
            f"{figure(metrics['surrogate.fidelity.kendall.mean'])} on held-out queries: its effect curves describe "
            "the model only as far as that agreement goes."]
