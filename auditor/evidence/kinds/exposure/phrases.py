"""The `exposure` metrics a policy rule judges, as sentences a compliance officer reads without the
metric's key (`auditor.report.wording`: a finding's title and its measured value)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from auditor.core.words import counted
from auditor.evidence.phrases import POINTS, Phrase

if TYPE_CHECKING:
    from auditor.evidence.document import EvidenceItem

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


def about(item: EvidenceItem) -> dict[str, Phrase]:
    """The largest and smallest ratio said of the group that has it, the queries it was met in, whether its interval
    tells anything and how many groups were left out as met in too few queries (a reader review: "the most favoured
    group gets 1.40 times …" named no group, and its interval ran from 0 to 3.90)."""
    from auditor.evidence.kinds.exposure.present import extreme

    out: dict[str, Phrase] = {}
    for which, who in (("max", "the most favoured group"), ("min", "the least favoured group")):
        found = extreme(item, which)
        if found is None:
            continue
        tail = (f"; unreliable, as {found['unreliable']}" if found["unreliable"] else "") + (
            f"; {counted(found['left_out'], 'group')} met in fewer than {found['min_queries']} queries left out"
            if found["left_out"] else "")
        subject = f"{who}, {found['label']} (met in {found['queries']} of {counted(found['of'], 'query')}),"

        def said(v: float, s: str, subject: str = subject, tail: str = tail) -> str:
            return f"{subject} gets {s} times the attention its relevance earns{tail}"

        out[f"exposure.{which}.ratio"] = said
    return out
