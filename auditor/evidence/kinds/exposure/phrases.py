"""The `exposure` metrics a policy rule judges, as sentences a compliance officer reads without the
metric's key (`auditor.report.wording`: a finding's title and its measured value)."""

from __future__ import annotations

from auditor.evidence.phrases import POINTS, Phrase

PHRASES: dict[str, Phrase] = {
    "exposure.own.counterfactual.share_change": lambda v, s: f"own products' share of attention is {s} against the "
                                                             "share they would get if the own-product flag were set "
                                                             "alike for every document",
    "exposure.own.ratio": lambda v, s: f"own products get {s} times the attention their relevance earns — 1 means in "
                                       "proportion",
    "exposure.own.disparate_treatment": lambda v, s: f"own products' attention per unit of relevance is {s} times "
                                                     "that of the other products",
    "exposure.max.ratio": lambda v, s: f"the most favoured group gets {s} times the attention its relevance earns",
    "exposure.min.ratio": lambda v, s: f"the least favoured group gets {s} times the attention its relevance earns",
}
# a change of a share, in percentage points as its thresholds are written ("+10.7 pp … WARN if > 1.0 pp")
UNITS: dict[str, str] = {"exposure.own.counterfactual.share_change": POINTS}
