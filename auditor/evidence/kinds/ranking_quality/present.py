"""What the documents say from the `ranking_quality` evidence as stored: the key figures it offers page 2 and
its Limitations sentences."""

from __future__ import annotations

import math
from collections.abc import Mapping

from auditor.core.numbers import figure
from auditor.core.words import counted
from auditor.evidence.document import EvidenceItem
from auditor.evidence.registry import KeyFigure

Result = EvidenceItem  # the kind's result as evidence.json holds it (metrics, records, ...)


def key_figures(result: Result) -> list[KeyFigure]:
    quality = result.metrics
    cutoffs = sorted(int(k.split("@")[1].split(".")[0]) for k in quality if k.startswith("ranking_quality.ndcg@")
                     and k.endswith(".mean"))
    if not cutoffs:
        return []
    figures = [KeyFigure(10, f"Ranking quality: mean nDCG@{cutoffs[-1]}", f"ranking_quality.ndcg@{cutoffs[-1]}.mean",
                         "1 = every query in its ideal order")]
    if quality.get("ranking_quality.group.gap") is not None:  # where the data keep groups of persons
        figures.append(KeyFigure(11, "Accuracy gap between the best- and the worst-served group (pairwise accuracy)",
                                 "ranking_quality.group.gap", _widest_gap(result)
                                 + "0 = every group's pairs ordered as well"))
    return figures


def _widest_gap(result: Result) -> str:
    """Between which groups the widest accuracy gap lies, from the groups' table ("race: Asian 0.831 against Black
    0.686; "), or "" when the table does not say."""
    table = next((t for t in result.tables if t.title.startswith("Accuracy by group of persons")), None)
    if table is None:
        return ""
    by_column: dict[str, dict[str, float]] = {}
    for column, group, _, accuracy, *_ in table.rows:
        if isinstance(accuracy, (int, float)) and math.isfinite(accuracy):
            by_column.setdefault(str(column), {})[str(group)] = float(accuracy)
    spans = [(max(a.values()) - min(a.values()), column, a) for column, a in by_column.items() if len(a) >= 2]
    if not spans:
        return ""
    _, column, accuracy = max(spans)
    best, worst = max(accuracy, key=accuracy.__getitem__), min(accuracy, key=accuracy.__getitem__)
    return f"{column}: {best} {figure(accuracy[best])} against {worst} {figure(accuracy[worst])}; "


def limitations(metrics: Mapping[str, float], dataset: Mapping[str, float]) -> list[str]:
    zero = int(dataset.get("dataset.all_zero_label_queries", 0))
    if zero <= 0:
        return []
    return [f"{counted(zero, 'query')} {'has' if zero == 1 else 'have'} no relevant document; "
            f"{'its' if zero == 1 else 'their'} nDCG is set by convention (see the ranking-quality note), not "
            "measured."]
