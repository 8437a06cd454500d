"""The `surrogate` evidence kind's registry entry (light: the spec imports it)."""

from __future__ import annotations

from auditor.evidence.kinds.surrogate.options import METRICS, SurrogateOptions
from auditor.evidence.registry import EvidenceKind

ENTRY = EvidenceKind("surrogate", SurrogateOptions, f"{__name__}.measure",
    "Interpretable surrogate (ILMART)", "An ILMART twin of the model: effect curves and fidelity.",
    f"{__name__}.cost:estimate", metrics=METRICS,
    phrases=f"{__name__}.phrases",
    key_figures=f"{__name__}.present:key_figures", limitations=f"{__name__}.present:limitations",
    section=f"{__name__}.present:section",
    self_checks=("surrogate-low-fidelity",),
    readme=(
    "an interpretable ILMART twin of the model (Lucchese et al. 2022): main effects and pair "
    "interactions plotted, how faithfully it ranks like the model, exact decomposition"))
