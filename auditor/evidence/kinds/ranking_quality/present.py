"""What the documents say from the `ranking_quality` evidence as stored: its report section (the summary, the tables
of nDCG and MAP over queries, the weakest queries and the accuracy by group of persons, the histogram), the key
figures it offers page 2 and its Limitations sentences. Reads the stored item alone (metrics, records, facts), so a
run renders again with this module's wording (`auditor render`)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from auditor.checks.selection import eeo1_component, published_category
from auditor.core.numbers import figure, interval, percent, stored
from auditor.core.words import counted
from auditor.evidence.base import Figure, Section, Table
from auditor.evidence.document import EvidenceItem
from auditor.evidence.kinds.ranking_quality.options import RankingQualityOptions
from auditor.evidence.registry import KeyFigure

Result = EvidenceItem  # the kind's result as evidence.json holds it (metrics, records, ...)

HOW_TO_READ = (
    "nDCG@k compares the model's top k documents of a query with the best possible order of the same documents "
    "(1 = the labelled best order, 0 = no relevant document in the top k). Each query counts once; the table gives "
    "the mean over queries with a 95% bootstrap interval, the spread, and the weakest queries. MAP is the mean, "
    "over queries, of the precision at each relevant document."
)
WEAKEST = 10  # queries the weakest-queries table lists
ALL_ZERO = {"one": "1", "zero": "0", "skip": "left out"}


def section(result: Result, options: RankingQualityOptions) -> Section:
    metrics = result.metrics
    names = [*(f"ranking_quality.ndcg@{k}" for k in options.cutoffs), "ranking_quality.map"]
    single = int(metrics.get("ranking_quality.single_doc_queries") or 0)
    all_zero = int(metrics.get("ranking_quality.all_zero_label_queries") or 0)
    tables = [Table(
        title="Ranking quality over queries",
        columns=["metric", "mean", "95% interval", "std", "min", "median", "max", f"share < {options.low_threshold:g}",
                 "queries"],
        rows=[_row(metrics, name) for name in names],
        note=(f"Gain {options.gain}; queries whose labels are all 0 ({all_zero}) count as "
              f"{ALL_ZERO[options.all_zero_queries]} for nDCG and are left out of MAP; {_single_note(single)}"
              "documents with tied scores share their positions (the expected value over their orders, so the "
              "file's order decides nothing)."))]
    headline = max(options.cutoffs)
    column = f"ndcg@{headline}"
    values = [_number(r.get(column)) for r in result.records]
    weakest = sorted(range(len(values)), key=lambda i: values[i] if math.isfinite(values[i]) else math.inf)[:WEAKEST]
    tables.append(Table(
        title=f"Ten weakest queries by nDCG@{headline}",
        columns=["query", "documents", "relevant documents", f"nDCG@{headline}"],
        rows=[[result.records[i]["query"], result.records[i]["docs"], result.records[i]["relevant"],
               result.records[i].get(column)] for i in weakest]))
    groups = (result.facts or {}).get("group_accuracy")
    if groups is not None:
        tables.append(_group_table(groups, options))
    figures = [Figure(
        title=f"Distribution of nDCG@{headline} over queries",
        chart="histogram", data={"values": np.array(values, dtype=float), "bins": np.linspace(0, 1, 21),
                                 "xlabel": f"nDCG@{headline}"},
        caption="Each bar counts queries; a long left tail means some queries are ranked poorly.",
        description=_histogram_text(values, headline, options.low_threshold))]
    mean = _number(metrics.get(f"ranking_quality.{column}.mean"))
    judged = int(metrics.get(f"ranking_quality.{column}.queries") or 0)
    summary = (f"Mean nDCG@{headline} is {figure(mean)} over {counted(judged, 'query')}; "
               f"{percent(metrics.get(f'ranking_quality.{column}.share_low'))} of them score below "
               f"{options.low_threshold:g}." + (f" {counted(single, 'single-document query')} "
                                                f"{'is' if single == 1 else 'are'} left out (one document cannot be "
                                                "misranked)." if single else ""))
    return Section(summary=summary, how_to_read=HOW_TO_READ, tables=tables, figures=figures)


def _row(metrics: Mapping[str, float | None], name: str) -> list[Any]:
    """A line of the table over queries: the estimate with its interval (widened to hold the point) and its spread."""
    mean, low, high = (_number(metrics.get(f"{name}.{part}")) for part in ("mean", "ci95_low", "ci95_high"))
    return [name.removeprefix("ranking_quality."), stored(mean), interval(min(low, mean), max(high, mean)),
            *(stored(metrics.get(f"{name}.{part}")) for part in ("std", "min", "median", "max", "share_low")),
            int(metrics.get(f"{name}.queries") or 0)]


def _group_table(columns: list[dict[str, Any]], options: RankingQualityOptions) -> Table:
    rows: list[list[Any]] = []
    for column in columns:
        named = _group_names(column)
        for group in column["groups"]:
            accuracy, low, high = (_number(group[part]) for part in ("accuracy", "low", "high"))
            left_out = group["left_out"]
            rows.append([column["column"], named[str(group["group"])], group["pairs"],
                         stored(accuracy) if left_out is None else
                         f"under {percent(options.group_min_share)} of the individuals" if left_out == "share" else
                         f"too few pairs (< {options.group_min_pairs})",
                         interval(min(low, accuracy), max(high, accuracy))
                         if left_out is None and math.isfinite(low) else "—"])
    gap_words = "; ".join(f"{c['column']} {figure(c['gap'])} "
                          f"({interval(min(_number(c['gap_low']), c['gap']), max(_number(c['gap_high']), c['gap']))})"
                          for c in columns if c.get("gap") is not None)
    return Table(
        title="Accuracy by group of persons (pairwise)",
        columns=["column", "group", "pairs it leads", "pairwise accuracy", "95% interval"], rows=rows,
        note=("Pairwise accuracy of a group: of the pairs of one query where a document of the group has the higher "
              "label, the share the model orders correctly (a tie counts one half); pairs pooled over queries, "
              "95% interval by resampling queries (Beutel et al. 2019). The gap is the best group's accuracy minus "
              "the worst's, per column; unknown values are not a group, and a group under "
              f"{percent(options.group_min_share)} of the individuals of known group gets no accuracy."
              + (f" Gap per column: {gap_words}." if gap_words else "")))


def _group_names(column: dict[str, Any]) -> dict[str, str]:
    """Each group of a column as the report names it everywhere: a column of EEO-1 race/ethnicity categories with
    DCWP's "(Not Hispanic or Latino)" on a race, as the bias audit's tables print the same people (a reader review:
    "Black or African American" on page 2, "… (Not Hispanic or Latino)" on the LL144 pages)."""
    name = str(column["column"])
    values = [str(group["group"]) for group in column["groups"]]
    component, _ = eeo1_component(values)
    return {value: published_category(name, value, {name: component}) for value in values}


def _number(value: Any) -> float:
    """A stored number, NaN where evidence.json holds null (not measured)."""
    return math.nan if value is None else float(value)


def _single_note(count: int) -> str:
    return f"{counted(count, 'single-document query')} {'is' if count == 1 else 'are'} left out of every mean (one " \
        "document cannot be misranked); " if count else ""


def _histogram_text(values: list[float], k: int, low: float) -> str:
    kept = np.array([v for v in values if math.isfinite(v)])
    if not kept.size:
        return f"Histogram of nDCG@{k} over queries: no query has a value."
    return (f"Histogram of nDCG@{k} over {kept.size} queries: median {figure(np.median(kept))}, "
            f"{percent(np.mean(kept < low))} below {low:g}, lowest {figure(kept.min())}.")


def limitations(metrics: Mapping[str, float], dataset: Mapping[str, float]) -> list[str]:
    zero = int(dataset.get("dataset.all_zero_label_queries", 0))
    if zero <= 0:
        return []
    return [f"{counted(zero, 'query')} {'has' if zero == 1 else 'have'} no relevant document; "
            f"{'its' if zero == 1 else 'their'} nDCG is set by convention (see the ranking-quality note), not "
            "measured."]


def key_figures(result: Result) -> list[KeyFigure]:
    quality = result.metrics
    cutoffs = sorted(int(k.split("@")[1].split(".")[0]) for k in quality if k.startswith("ranking_quality.ndcg@")
                     and k.endswith(".mean"))
    if not cutoffs:
        return []
    all_zero = int(quality.get("ranking_quality.all_zero_label_queries") or 0)
    rule = str((result.options or {}).get("all_zero_queries", "one"))
    # the queries no document is relevant to, where the mean counts them (a reader review, D11: scored 1 they lift it)
    zero = (f"; the {counted(all_zero, 'query')} with no relevant document count as {ALL_ZERO[rule]}"
            if all_zero and rule in ("one", "zero") else "")
    figures = [KeyFigure(10, f"Ranking quality: mean nDCG@{cutoffs[-1]}", f"ranking_quality.ndcg@{cutoffs[-1]}.mean",
                         "1 = every query in its ideal order" + zero)]
    if quality.get("ranking_quality.group.gap") is not None:  # where the data keep groups of persons
        figures.append(KeyFigure(11, "Accuracy gap between the best- and the worst-served group (pairwise accuracy)",
                                 "ranking_quality.group.gap", _widest_gap(result)
                                 + "0 = every group's pairs ordered as well"))
    return figures


OTHER_GAPS = 2  # the other columns' gaps page 2 names beside the widest


def _widest_gap(result: Result) -> str:
    """Between which groups the widest accuracy gap lies ("race: Asian 0.831 against Black 0.686; "), and the other
    columns' gaps (a reader review: the sex gap left out beside the race gap), or "" when no column has two groups
    with an accuracy."""
    by_column: dict[str, dict[str, float]] = {}
    gaps: dict[str, str] = {}
    for column in (result.facts or {}).get("group_accuracy", []):
        named = _group_names(column)
        for group in column["groups"]:
            if group["left_out"] is None and group["accuracy"] is not None:
                by_column.setdefault(str(column["column"]), {})[named[str(group["group"])]] = \
                    stored(group["accuracy"]) or 0.0
        if column.get("gap") is not None:
            gap = float(column["gap"])
            low, high = min(_number(column["gap_low"]), gap), max(_number(column["gap_high"]), gap)
            gaps[str(column["column"])] = f"{figure(gap)} ({interval(low, high)})"
    spans = [(max(a.values()) - min(a.values()), column, a) for column, a in by_column.items() if len(a) >= 2]
    if not spans:
        return ""
    _, column, accuracy = max(spans)
    best, worst = max(accuracy, key=accuracy.__getitem__), min(accuracy, key=accuracy.__getitem__)
    others = [f"; {name}: gap {gap}" for name, gap in gaps.items() if name != column]
    more = len(others) - OTHER_GAPS
    also = "".join(others[:OTHER_GAPS]) + (f"; {more} more columns' gaps in the section" if more > 0 else "")
    return f"{column}: {best} {figure(accuracy[best])} against {worst} {figure(accuracy[worst])}{also}; "
