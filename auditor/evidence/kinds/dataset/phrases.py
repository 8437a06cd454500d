"""The `dataset` metrics a policy rule judges, as sentences a compliance officer reads without the
metric's key (`auditor.report.wording`: a finding's title and its measured value)."""

from __future__ import annotations

from auditor.core.words import counted
from auditor.evidence.phrases import Phrase

PHRASES: dict[str, Phrase] = {
    "dataset.n_queries": lambda v, _: f"the audited data has {counted(int(v), 'query')}",
    "dataset.all_zero_label_queries_share": lambda v, s: f"{s} of queries have no relevant document",
    "dataset.single_doc_queries_share": lambda v, s: f"{s} of queries have a single document",
    "dataset.tied_score_queries_share": lambda v, s: f"the model gives every document the same score in {s} of "
                                                     "queries",
}
# what a count counts, where a table prints the number alone (Appendix A)
UNITS: dict[str, str] = {"dataset.n_queries": "query"}
