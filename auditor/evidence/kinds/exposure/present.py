"""What the documents say from the `exposure` evidence as stored: the key figures it offers page 2 and
its Limitations sentences."""

from __future__ import annotations

from auditor.evidence.document import EvidenceItem
from auditor.evidence.registry import KeyFigure

Result = EvidenceItem  # the kind's result as evidence.json holds it (metrics, records, ...)


def key_figures(result: Result) -> list[KeyFigure]:
    if result.metrics.get("exposure.own.ratio") is not None:
        return [KeyFigure(50, "Own products' attention ÷ what their relevance earns", "exposure.own.ratio",
                          "1 = attention in proportion to relevance")]
    return [KeyFigure(50, "Largest exposure ratio of a group (attention ÷ what its relevance earns)",
                      "exposure.max.ratio", "1 = attention in proportion to relevance")]
