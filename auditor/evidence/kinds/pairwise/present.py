"""What the documents say from the `pairwise` evidence as stored: its report section (the summary, the table of
every explained pair with the features on each side, the features that most often decide a pair, the bar chart of
one query's pairs). Reads the stored item alone (metrics, records, facts), so a run renders again with this
module's wording (`auditor render`)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from auditor.core.numbers import figure, percent, signed, stored
from auditor.core.words import counted
from auditor.evidence.base import Figure, Section, Table, representative_text
from auditor.evidence.document import EvidenceItem
from auditor.evidence.figures import decode, value_text
from auditor.evidence.kinds.pairwise.options import PairwiseOptions

Result = EvidenceItem  # the kind's result as evidence.json holds it (metrics, records, ...)

HOW_TO_READ = (
    "Each row takes two neighbouring documents of a query's ranking, A (placed higher) and B (the next one), and "
    "splits the model's preference for A — the score margin s(A) − s(B) — among the features, as Shapley values: a "
    "positive value means the feature pushes A above B, a negative one pulls B up. The values add up to the margin "
    "(the note under the table gives the largest gap). A feature not listed had a small share. With `adaptive` "
    "filling (the paper's "
    "method) unknown features are filled from similar training documents, so correlated features are respected."
)
DECIDING = 10  # features the table of deciding features lists


def section(result: Result, options: PairwiseOptions) -> Section:
    records, metrics, facts = result.records, result.metrics, result.facts or {}
    if not records:
        return Section(summary="No query has two documents to compare.", how_to_read=HOW_TO_READ)
    names = [str(n) for n in facts["features"]]
    phi = np.array([[_number(r["phi"][n]) for n in names] for r in records], dtype=float)
    label = "ASIPair" if options.method == "asipair" else "RAIPair"
    mean_abs = np.abs(phi).mean(axis=0)
    order = np.lexsort((np.arange(len(names)), -mean_abs))[:DECIDING]
    tables = [_pairs_table(records, phi, names, metrics, options, label), Table(
        title="Features that most often decide neighbouring pairs",
        columns=["feature", "mean |φ|", "pairs where it is the largest"],
        rows=[[names[f], stored(mean_abs[f]), int(np.sum(np.abs(phi).argmax(axis=1) == f))] for f in order])]
    summary = (f"{len(records)} neighbouring pairs explained with {label}; '{names[int(order[0])]}' decides them most "
               f"(mean |φ| {figure(mean_abs[order[0]])}); the largest feature carries "
               f"{percent(metrics.get('pairwise.top_feature_share.mean'))} of a pair's explanation on average.")
    return Section(summary=summary, how_to_read=HOW_TO_READ, tables=tables,
                   figures=[_figure(facts, names, options, label)])


def _pairs_table(records: list[dict[str, Any]], phi: np.ndarray, names: list[str],
                 metrics: dict[str, float | None], options: PairwiseOptions, label: str) -> Table:
    """Every explained pair: its margin and the largest features on each side."""
    rows = []
    for record, values in zip(records, phi, strict=True):
        up, down = _sides(values, names, options.top_features)
        rows.append([record["query"], f"{record['rank_a']}–{record['rank_b']}", record["doc_a"], record["doc_b"],
                     stored(_number(record["value"]) - _number(record["base"])),
                     ", ".join(f"{n} {v:+.3g}" for n, v in up) or "—",
                     ", ".join(f"{n} {v:+.3g}" for n, v in down) or "—"])
    how = ("exact Shapley values over all coalitions" if all(r["exact"] for r in records)
           else f"{options.permutations if options.method == 'asipair' else options.raipair.permutations} "
                "sampled feature orders")
    return Table(
        title=f"Why each document is ranked above the next ({label}, {options.fill} filling)",
        columns=["query", "ranks", "A (document)", "B (document)", "g(A,B) − E[g]", "features that put A above B",
                 "features that pull B up"],
        rows=rows,
        note=(f"{counted(len(records), 'pair')} from {counted(int(metrics.get('pairwise.queries') or 0), 'query')}; "
              f"{how}; g = {options.pair_function}. "
              f"Top {options.top_features} features per side by |φ|. The values of each pair add up to its margin "
              f"(efficiency): the largest gap over all pairs is "
              f"{_gap(_number(metrics.get('pairwise.efficiency.max_abs_error')))}; evidence.json holds each "
              "pair's."),
        body_rows=5)


def _figure(facts: dict[str, Any], names: list[str], options: PairwiseOptions, label: str) -> Figure:
    """"Why A above B" as signed bars, one panel per adjacent pair of one query: each feature's Shapley value of the
    margin, the largest `plot_features` one bar each and the rest summed, labelled with both documents' values."""
    plot, units = facts["plot"], facts.get("units") or {}
    panels, sentences = [], []
    for rank, pair in enumerate(plot["pairs"], start=1):
        phi, row_a, row_b = decode(pair["phi"]), decode(pair["a"]), decode(pair["b"])
        order = np.lexsort((np.arange(len(phi)), -np.abs(phi)))
        shown, rest = order[:options.plot_features], order[options.plot_features:]
        labels = [f"{value_text(names[f], row_a[f], units.get(names[f]))} vs "
                  f"{value_text(names[f], row_b[f], units.get(names[f])).split(' = ', 1)[1]}" for f in shown]
        values = [float(phi[f]) for f in shown]
        if rest.size:
            labels.append(f"{rest.size} other feature{'s' if rest.size > 1 else ''}")
            values.append(float(phi[rest].sum()))
        margin = pair["value"] - pair["base"]
        gap = "" if pair["efficiency_error"] <= 1e-9 else f" (bars sum to {figure(sum(values))})"
        doc_a, doc_b = pair["doc_a"], pair["doc_b"]
        panels.append((f"#{rank} {doc_a} above #{rank + 1} {doc_b}: margin {figure(margin)}{gap}", labels, values))
        sentences.append(f"#{rank} {doc_a} is above #{rank + 1} {doc_b} by {figure(margin)}, most because of "
                         f"{names[shown[0]]} ({signed(phi[shown[0]])})")
    query = plot["query"]
    which = (f"Query {query} is the one the spec names (plot_query)" if options.plot_query is not None
             else f"By default {representative_text(query, plot['docs'])} of those audited")
    if not plot["sampled"]:
        which += " (not in the audited sample: explained for this figure only)"
    return Figure(
        title=f"Why each top document of query {query} is above the next ({label})",
        chart="pair_bars", data={"panels": panels, "xlabel": "contribution to the margin s(A) − s(B) (score units)",
                                 "up_label": "pushes A above B", "down_label": "pulls B up"},
        caption=("Each panel takes two neighbouring documents, A (placed higher) and B, and splits the score margin "
                 "s(A) − s(B) among the features: a red bar pushes A above B, a blue one pulls B up; the bars add "
                 "up to the margin. Labels give the feature's value for A, then for B. "
                 + ("With adaptive filling a feature both documents share can still carry a value: knowing it "
                    "changes how the unknown features are filled in. " if options.fill == "adaptive" else "")
                 + which + "."),
        description="Bar chart of pairwise explanations: " + "; ".join(sentences) + ".")


def _sides(phi: np.ndarray, names: list[str], count: int) -> tuple[list[tuple[str, float]], list[tuple[str, float]]]:
    """The `count` largest features by |φ| that push A up, and those that pull B up."""
    order = np.lexsort((np.arange(len(phi)), -np.abs(phi)))
    up = [(names[f], float(phi[f])) for f in order if phi[f] > 0][:count]
    down = [(names[f], float(phi[f])) for f in order if phi[f] < 0][:count]
    return up, down


def _gap(value: float) -> str:
    return "below 1e-9 (exact)" if value < 1e-9 else f"{value:.2g}"


def _number(value: Any) -> float:
    """A stored number, NaN where evidence.json holds null (not finite)."""
    return math.nan if value is None else float(value)
