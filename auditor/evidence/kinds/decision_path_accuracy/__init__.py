"""The `decision_path_accuracy` evidence kind's registry entry (light: the spec imports it)."""

from __future__ import annotations

from auditor.evidence.kinds.decision_path_accuracy.options import METRICS, DecisionPathOptions
from auditor.evidence.registry import EvidenceKind

ENTRY = EvidenceKind("decision_path_accuracy", DecisionPathOptions,
    f"{__name__}.measure", "Decision-path accuracy",
    "Explainers against decision-path ground truth (Rahnama & Bütepage 2022).",
    f"{__name__}.cost:estimate", metrics=METRICS, sampled=True,
    masked=True, section=f"{__name__}.present:section",
    coverage=("decision_path.queries", "", "Decision-path accuracies"),
    readme=(
    "for tree models: how well each explainer agrees with ground truth read from the decision paths"
    " (Rahnama & Bütepage 2022, Table 3)"))
