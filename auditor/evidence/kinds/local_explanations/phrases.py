"""The `local_explanations` metrics a policy rule judges, as sentences a compliance officer reads without the
metric's key (`auditor.report.wording`: a finding's title and its measured value)."""

from __future__ import annotations

from auditor.evidence.phrases import Phrase

PHRASES: dict[str, Phrase] = {
    "local.validity_search.validity.mean": lambda v, s: f"the best explanations (valid-explanation search) have "
                                                        f"mean validity {s} — 1 means the explanation alone keeps the "
                                                        "ranking",
    "local.validity_search.validity": lambda v, s: f"the best explanations (valid-explanation search) have validity "
                                                   f"{s} — 1 means the explanation alone keeps the ranking",
}
# a per-query value's name in a sentence ("80.0% of queries have an nDCG@10 >= 0.5")
PER_QUERY: dict[str, str] = {
    "local.validity_search.validity": "explanations (valid-explanation search) of validity",
}
