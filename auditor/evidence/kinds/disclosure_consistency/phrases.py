"""The `disclosure_consistency` metrics a policy rule judges, as sentences a compliance officer reads without the
metric's key (`auditor.report.wording`: a finding's title and its measured value)."""

from __future__ import annotations

from auditor.core.words import counted
from auditor.evidence.phrases import Phrase

PHRASES: dict[str, Phrase] = {
    "disclosure.undeclared_main": lambda v, _: (
        f"{counted(int(v), 'influential ranking parameter')} {'orders' if int(v) == 1 else 'order'} the results "
        f"but {'is' if int(v) == 1 else 'are'} not declared" if v else "every influential ranking parameter is "
                                                                      "declared"),
    "disclosure.undeclared_in_main": lambda v, _: (
        f"{counted(int(v), 'main ranking parameter')} {'is' if int(v) == 1 else 'are'} not declared, influential "
        "or not" if v else "every main ranking parameter is declared"),
    "disclosure.undeclared_share": lambda v, s: f"features the declaration does not name carry {s} of what orders "
                                                "documents within a query",
    "disclosure.rank_correlation": lambda v, s: f"the declared order of the main parameters against the measured "
                                                f"order: Kendall tau {s} (1 = the same order, 0 = unrelated, "
                                                "−1 = reversed)",
    "disclosure.per_query.rank_correlation.mean": lambda v, s: f"query by query, the declared order against the "
                                                               f"measured one: mean Kendall tau {s}",
    "disclosure.stability.main_set_overlap.mean": lambda v, s: f"resampling the queries, the measured main parameters "
                                                               f"stay the same set with mean overlap {s} — 1 means "
                                                               "always the same",
    "disclosure.stability.weighted_kendall.mean": lambda v, s: f"resampling the queries, the measured order of the "
                                                               f"parameters keeps a weighted Kendall tau of {s}",
    "disclosure.statement.false_claims": lambda v, _: (
        f"{counted(int(v), 'claim')} of the published ranking statement {'is' if int(v) == 1 else 'are'} contradicted "
        "by the measurement" if v else "every claim of the published ranking statement that could be checked holds "
        "or is within the measurement's uncertainty"),
}
# a per-query value's name in a sentence ("80.0% of queries have an nDCG@10 >= 0.5")
PER_QUERY: dict[str, str] = {
    "disclosure.per_query.rank_correlation": "a Kendall tau between the declared and the measured order",
}
# what a count counts, where a table prints the number alone (Appendix A)
UNITS: dict[str, str] = {
    "disclosure.undeclared_main": "undeclared influential parameter",
    "disclosure.undeclared_in_main": "undeclared main parameter",
    "disclosure.statement.false_claims": "contradicted claim",
}
