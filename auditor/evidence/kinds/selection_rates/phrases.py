"""The `selection_rates` metrics a policy rule judges, as sentences a compliance officer reads without the
metric's key (`auditor.report.wording`: a finding's title and its measured value)."""

from __future__ import annotations

from auditor.core.words import counted
from auditor.evidence.phrases import Phrase, stated

PHRASES: dict[str, Phrase] = {
    "selection.eeo1_components": lambda v, _: (f"{counted(int(v), 'EEO-1 component')} (sex, race/ethnicity) "
                                               f"{'is' if int(v) == 1 else 'are'} among the category columns"),
    "selection.non_eeo1": lambda v, _: (f"{counted(int(v), 'category value')} "
                                        f"{'is' if int(v) == 1 else 'are'} no EEO-1 component 1 category"
                                        if v else "every category is an EEO-1 component 1 category"),
    "selection.min_ratio": lambda v, s: f"the least selected category's scoring rate is {s} times the most selected "
                                        "category's — 1 means as often",
    "selection.columns": lambda v, _: (f"{counted(int(v), 'category column')} (sex, race/ethnicity) "
                                       f"{'is' if int(v) == 1 else 'are'} reported"),
    "selection.intersections": stated("the intersectional categories are reported",
                                       "the intersectional categories are not reported", "reported"),
    "selection.reported": lambda v, _: f"{counted(int(v), 'category', 'categories')} have an impact ratio",
    "selection.unknown_reported": stated("the number of individuals of unknown category is reported",
                                          "the number of individuals of unknown category is not reported", "reported"),
}
# what a count counts, where a table prints the number alone (Appendix A: "16 impact ratios", not "16")
UNITS: dict[str, str] = {
    "selection.eeo1_components": "EEO-1 component",
    "selection.non_eeo1": "non-EEO-1 category",
    "selection.columns": "category column",
    "selection.reported": "impact ratio",
}
