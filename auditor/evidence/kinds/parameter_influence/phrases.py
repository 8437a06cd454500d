"""The `parameter_influence` metrics a policy rule judges, as sentences a compliance officer reads without the
metric's key (`auditor.report.wording`: a finding's title and its measured value)."""

from __future__ import annotations

from auditor.evidence.phrases import Phrase

PHRASES: dict[str, Phrase] = {
    "influence.max.topk_changed_share": lambda v, s: f"masking the most influential sensitive parameter changes "
                                                     f"which documents make the top results in {s} of queries",
    "influence.max.rank_shift.mean": lambda v, s: f"a document owes on average {s} positions to the most "
                                                  "influential sensitive parameter",
}
