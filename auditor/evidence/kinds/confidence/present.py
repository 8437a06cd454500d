"""What the documents say from the `confidence` evidence as stored: the key figures it offers page 2 and
its Limitations sentences."""

from __future__ import annotations

import math

from auditor.core.numbers import percent, with_interval
from auditor.core.words import counted
from auditor.evidence.document import EvidenceItem
from auditor.evidence.registry import KeyFigure

Result = EvidenceItem  # the kind's result as evidence.json holds it (metrics, records, ...)


def key_figures(result: Result) -> list[KeyFigure]:
    from auditor.core.metric_names import read

    metrics = result.metrics
    scale = "explanations flagged for a second look before they are quoted"
    judged = read(metrics, "confidence.validation.auc")
    auc = judged.value if judged is not None else None
    reliable = metrics.get("confidence.reliable_share")
    if (auc is None or not math.isfinite(auc)) and reliable is not None and math.isfinite(reliable):
        scale += (f"; no reliability estimate: {percent(reliable)} of the explanations hold under held-out masking, "
                  "too few of one outcome to fit one")
    if judged is not None and auc is not None and math.isfinite(auc):
        scale += ("; the estimate behind the flags separates reliable from unreliable ones with AUC "
                  + with_interval(auc, judged.low, judged.high) + " (0.5 = chance)")
    lost = int(metrics.get("confidence.attribution_unreliable_queries", 0) or 0)
    if lost:
        scale += f"; on {counted(lost, 'query')} no attribution explainer is reliable (the section names what to use)"
    below = int(metrics.get("confidence.widened.explanations", 0) or 0)
    widened = metrics.get("confidence.widened.reliable_share")
    if below and widened is not None and math.isfinite(widened):
        scale += (f"; {round(widened * below)} of {counted(below, 'attribution')} below the validity floor (a set "
                  "apart from the flagged) hold with a few more features (listed in the section)")
    return [KeyFigure(80, "Share of explanations flagged as low-confidence", "confidence.flagged_fraction", scale,
                      share=True)]
