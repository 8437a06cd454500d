"""The `surrogate` metrics a policy rule judges, as sentences a compliance officer reads without the
metric's key (`auditor.report.wording`: a finding's title and its measured value)."""

from __future__ import annotations

from auditor.evidence.phrases import Phrase

PHRASES: dict[str, Phrase] = {
    "surrogate.fidelity.kendall.mean": lambda v, s: f"the interpretable surrogate orders documents like the model "
                                                    f"with mean Kendall tau {s} — 1 means the same order",
    "surrogate.decomposition.max_abs_error": lambda v, s: f"the surrogate's effects add up to its scores within {s}",
}
