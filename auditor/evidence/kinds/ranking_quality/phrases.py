"""The `ranking_quality` metrics a policy rule judges, as sentences a compliance officer reads without the
metric's key (`auditor.report.wording`: a finding's title and its measured value)."""

from __future__ import annotations

from auditor.evidence.phrases import Phrase

PHRASES: dict[str, Phrase] = {
    "ranking_quality.ndcg@10.mean": lambda v, s: f"the mean nDCG@10 over queries is {s} — 1 means every query ideally "
                                                 "ordered",
    "ranking_quality.group.gap": lambda v, s: f"the best- and the worst-served group's pairwise accuracy differ "
                                              f"by {s} — 0 means every group's pairs are ordered alike",
    "ranking_quality.ndcg@10": lambda v, s: f"nDCG@10 over all queries is {s} — 1 means every query ideally ordered",
    "ranking_quality.ndcg@10.ci95_low": lambda v, s: f"the lower end of nDCG@10's 95% interval is {s}",
}
# a per-query value's name in a sentence ("80.0% of queries have an nDCG@10 >= 0.5")
PER_QUERY: dict[str, str] = {
    "ranking_quality.ndcg@10": "an nDCG@10",
}
