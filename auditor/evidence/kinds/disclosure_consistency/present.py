"""What the documents say from the `disclosure_consistency` evidence as stored: the key figures it offers page 2 and
its Limitations sentences."""

from __future__ import annotations

from auditor.evidence.document import EvidenceItem
from auditor.evidence.registry import KeyFigure

Result = EvidenceItem  # the kind's result as evidence.json holds it (metrics, records, ...)


def key_figures(result: Result) -> list[KeyFigure]:
    return [KeyFigure(70, "Declared vs measured order of main parameters (Kendall tau)", "disclosure.rank_correlation",
                      "1 = the declared order is the measured one")]
