"""The `global_importance` metrics a policy rule judges, as sentences a compliance officer reads without the
metric's key (`auditor.report.wording`: a finding's title and its measured value)."""

from __future__ import annotations

from auditor.core.words import counted
from auditor.evidence.phrases import Phrase

PHRASES: dict[str, Phrase] = {
    "global_importance.main_parameters": lambda v, _: f"{counted(int(v), 'feature')} carry 80% of what orders "
                                                      "documents within a query",
    "global_importance.top1_share": lambda v, s: f"the most important feature carries {s} of what orders documents "
                                                 "within a query",
    "global_importance.additivity.max_abs_error": lambda v, s: f"the attributions add up to the model's scores "
                                                               f"within {s} (largest error over documents)",
}
# what a count counts, where a table prints the number alone (Appendix A)
UNITS: dict[str, str] = {"global_importance.main_parameters": "main parameter"}
