"""The `confidence` metrics a policy rule judges, as sentences a compliance officer reads without the
metric's key (`auditor.report.wording`: a finding's title and its measured value)."""

from __future__ import annotations

from auditor.evidence.phrases import Phrase

PHRASES: dict[str, Phrase] = {
    "confidence.flagged_fraction": lambda v, s: f"{s} of explanations are flagged as low-confidence",
    "confidence.validation.validity_gap": lambda v, s: f"flagged explanations' validity differs from unflagged ones' "
                                                       f"by {s}",
}
