"""What the documents say from the `selection_rates` evidence as stored: the key figures it offers page 2 and
its Limitations sentences."""

from __future__ import annotations

from collections.abc import Mapping

from auditor.core.words import counted
from auditor.evidence.document import EvidenceItem
from auditor.evidence.registry import KeyFigure

Result = EvidenceItem  # the kind's result as evidence.json holds it (metrics, records, ...)


def key_figures(result: Result) -> list[KeyFigure]:
    if result.metrics.get("selection.min_ratio") is None:
        return []
    ratios = [r for r in result.records if isinstance(r, dict) and not r.get("excluded")
              and isinstance(r.get("impact_ratio"), (int, float))]
    lowest = min(ratios, key=lambda r: r["impact_ratio"]) if ratios else None
    who = f"the category: {lowest['category']} ({lowest.get('table', '')}); " if lowest is not None else ""
    # the category in the reference text, not the label: the history site follows a figure by its label
    return [KeyFigure(45, "Smallest impact ratio of a category (its scoring rate ÷ the highest category's)",
                      "selection.min_ratio", f"{who}1 = selected as often as the most favoured category; NYC LL144 "
                      "sets no level, 0.8 is the four-fifths rule of thumb")]


def limitations(metrics: Mapping[str, float], dataset: Mapping[str, float]) -> list[str]:
    if "selection.individuals" not in metrics:
        return []
    out = ["Scoring rates count each document of a query as an individual: a person who applied to several postings "
           "counts once per posting, and the categories are those the data records (self-reported or inferred "
           "as its source says)."]
    excluded = int(metrics.get("selection.excluded", 0))
    if excluded:
        out.append(f"{counted(excluded, 'category')} under the minimum share of the data "
                   f"{'has' if excluded == 1 else 'have'} no impact ratio (the section names "
                   f"{'it' if excluded == 1 else 'them'}).")
    return out
