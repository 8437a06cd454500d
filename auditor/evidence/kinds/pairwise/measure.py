"""Evidence `pairwise`: for each audited query, why the model ranks each of the top documents above the next one
(paper 003: ASIPair, or RAIPair when the feature count makes Shapley values costly), with the efficiency check
Σφ = g(A, B) − E[g]. Definitions: `auditor/explain/pairwise.py` and docs/metrics.md (`pairwise.*`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from auditor.checks.ranking import rank_order
from auditor.core.numbers import figure, percent, signed, stored
from auditor.core.words import counted
from auditor.evidence.base import (
    AuditContext,
    EvidenceResult,
    Figure,
    Table,
    check_query_id,
    representative_query,
    representative_text,
)
from auditor.evidence.executor import split
from auditor.evidence.kinds.pairwise.options import PairwiseOptions
from auditor.inputs.data import RankingData

if TYPE_CHECKING:
    from auditor.explain.pairwise import AsiPair, PairExplanation, RaiPair


HOW_TO_READ = (
    "Each row takes two neighbouring documents of a query's ranking, A (placed higher) and B (the next one), and "
    "splits the model's preference for A — the score margin s(A) − s(B) — among the features, as Shapley values: a "
    "positive value means the feature pushes A above B, a negative one pulls B up. The values add up to the margin "
    "(the note under the table gives the largest gap). A feature not listed had a small share. With `adaptive` "
    "filling (the paper's "
    "method) unknown features are filled from similar training documents, so correlated features are respected."
)







def run(ctx: AuditContext, options: PairwiseOptions) -> EvidenceResult:
    result = EvidenceResult(name="pairwise", how_to_read=HOW_TO_READ)
    data, scores = ctx.data, ctx.scores()
    names = data.feature_names
    explainer = _explainer(ctx, options)
    sizes = data.query_sizes()
    chosen = ctx.query_sample(options.queries, "pairwise/queries",
                              eligible=[q for q in range(data.n_queries) if sizes[q] >= 2])
    records: list[dict[str, Any]] = []
    table_rows: list[list[Any]] = []
    by_query: dict[int, list[PairExplanation]] = {}
    phis, margins, efficiency, rows_before = [], [], [], ctx.model.rows_evaluated
    exact_count = 0
    tops = {qi: data.query_slice(qi).start + rank_order(scores[data.query_slice(qi)])[:options.top] for qi in chosen}
    blocks = split(chosen, ctx.workers, most=16)
    payloads = ([(qi, data.X[tops[qi]]) for qi in block] for block in blocks)
    with ctx.progress.task(f"Pairwise explanations ({len(chosen)} queries)", len(chosen)) as ticker:
        explained = [pairs for block in ctx.run_tasks(_explain_pairs, explainer, payloads, size=len(chosen),
                                                      ticker=ticker) for pairs in block]
    for qi, pairs in zip(chosen, explained, strict=True):
        by_query[qi] = pairs
        for rank, pair in enumerate(pairs, start=1):
            row_a, row_b = int(tops[qi][rank - 1]), int(tops[qi][rank])
            exact_count += int(pair.exact)
            phis.append(pair.phi)
            margins.append(pair.value - pair.base)
            efficiency.append(pair.efficiency_error)
            up, down = _sides(pair.phi, names, options.top_features)
            records.append({"query": data.query_ids[qi], "rank_a": rank, "rank_b": rank + 1,
                            "doc_a": data.doc_ids[row_a], "doc_b": data.doc_ids[row_b],
                            "value": round(pair.value, 9), "base": round(pair.base, 9),
                            "phi": {names[f]: round(float(pair.phi[f]), 9) for f in range(len(names))},
                            "efficiency_error": float(pair.efficiency_error), "exact": pair.exact})
            table_rows.append([data.query_ids[qi], f"{rank}–{rank + 1}", data.doc_ids[row_a], data.doc_ids[row_b],
                               stored(pair.value - pair.base),
                               ", ".join(f"{n} {v:+.3g}" for n, v in up) or "—",
                               ", ".join(f"{n} {v:+.3g}" for n, v in down) or "—"])
    result.records = records
    result.n_model_rows = ctx.model.rows_evaluated - rows_before
    metrics = result.metrics
    metrics["pairwise.pairs"] = float(len(records))
    metrics["pairwise.queries"] = float(len(chosen))
    metrics["pairwise.rows"] = float(result.n_model_rows)
    if not records:
        result.summary = "No query has two documents to compare."
        return result
    phi = np.array(phis)
    share = np.abs(phi).max(axis=1) / np.maximum(np.abs(phi).sum(axis=1), 1e-300)
    metrics["pairwise.efficiency.max_abs_error"] = float(max(efficiency))
    metrics["pairwise.top_feature_share.mean"] = float(share.mean())
    metrics["pairwise.margin.mean"] = float(np.mean(margins))
    metrics["pairwise.exact_pairs"] = float(exact_count)
    label = "ASIPair" if options.method == "asipair" else "RAIPair"
    how = ("exact Shapley values over all coalitions" if exact_count == len(records)
           else f"{options.permutations if options.method == 'asipair' else options.raipair.permutations} "
                "sampled feature orders")
    result.tables.append(Table(
        title=f"Why each document is ranked above the next ({label}, {options.fill} filling)",
        columns=["query", "ranks", "A (document)", "B (document)", "g(A,B) − E[g]", "features that put A above B",
                 "features that pull B up"],
        rows=table_rows,
        note=(f"{counted(len(records), 'pair')} from {counted(len(chosen), 'query')}; {how}; "
              f"g = {options.pair_function}. "
              f"Top {options.top_features} features per side by |φ|. The values of each pair add up to its margin "
              f"(efficiency): the largest gap over all pairs is {_gap(max(efficiency))}; each pair's is in "
              "evidence.json (`efficiency_error`)."),
        body_rows=5,
    ))
    mean_abs = np.abs(phi).mean(axis=0)
    order = np.lexsort((np.arange(len(names)), -mean_abs))[:10]
    result.tables.append(Table(
        title="Features that most often decide neighbouring pairs",
        columns=["feature", "mean |φ|", "pairs where it is the largest"],
        rows=[[names[f], stored(mean_abs[f]), int(np.sum(np.abs(phi).argmax(axis=1) == f))] for f in order]))
    result.figures.append(_figure(ctx, explainer, options, chosen, by_query, label))
    top = names[int(order[0])]
    result.summary = (f"{len(records)} neighbouring pairs explained with {label}; '{top}' decides them most "
                      f"(mean |φ| {figure(mean_abs[order[0]])}); the largest feature carries "
                      f"{percent(share.mean())} of a pair's explanation on average.")
    return result


PLOTTED_PAIRS = 3  # panels of the bar chart: the first pairs of the plotted query


def _figure(ctx: AuditContext, explainer: AsiPair | RaiPair, options: PairwiseOptions, chosen: list[int],
            by_query: dict[int, list[PairExplanation]], label: str) -> Figure:
    """"Why A above B" as signed bars, one panel per adjacent pair of one query (at most `PLOTTED_PAIRS`): each
    feature's Shapley value of the margin, the largest `plot_features` one bar each and the rest summed, labelled
    with both documents' values. A query named by `plot_query` that the sample left out is explained here, from
    the same streams, for the figure only (its rows count in this item's model rows)."""
    from auditor.evidence.figures import value_text

    data, scores, names, units = ctx.data, ctx.scores(), ctx.data.feature_names, ctx.feature_units
    qi = data.query_ids.index(options.plot_query) if options.plot_query is not None else \
        representative_query(data.query_sizes(), chosen)
    part = data.query_slice(qi)
    top = part.start + rank_order(scores[part])[:options.top]
    pairs = by_query.get(qi) or _explain_pairs(ctx, explainer, [(qi, data.X[top])])[0]
    panels, sentences = [], []
    for rank, pair in enumerate(pairs[:PLOTTED_PAIRS], start=1):
        row_a, row_b = data.X[top[rank - 1]], data.X[top[rank]]
        order = np.lexsort((np.arange(len(pair.phi)), -np.abs(pair.phi)))
        shown, rest = order[:options.plot_features], order[options.plot_features:]
        labels = [f"{value_text(names[f], row_a[f], units.get(names[f]))} vs "
                  f"{value_text(names[f], row_b[f], units.get(names[f])).split(' = ', 1)[1]}" for f in shown]
        values = [float(pair.phi[f]) for f in shown]
        if rest.size:
            labels.append(f"{rest.size} other feature{'s' if rest.size > 1 else ''}")
            values.append(float(pair.phi[rest].sum()))
        margin = pair.value - pair.base
        gap = "" if pair.efficiency_error <= 1e-9 else f" (bars sum to {figure(sum(values))})"
        doc_a, doc_b = data.doc_ids[top[rank - 1]], data.doc_ids[top[rank]]
        panels.append((f"#{rank} {doc_a} above #{rank + 1} {doc_b}: margin {figure(margin)}{gap}", labels, values))
        sentences.append(f"#{rank} {doc_a} is above #{rank + 1} {doc_b} by {figure(margin)}, most because of "
                         f"{names[shown[0]]} ({signed(pair.phi[shown[0]])})")
    which = (f"Query {data.query_ids[qi]} is the one the spec names (plot_query)" if options.plot_query is not None
             else f"By default {representative_text(data.query_ids[qi], part.stop - part.start)} of those audited")
    if qi not in by_query:
        which += " (not in the audited sample: explained for this figure only)"
    return Figure(
        title=f"Why each top document of query {data.query_ids[qi]} is above the next ({label})",
        chart="pair_bars", data={"panels": panels, "xlabel": "contribution to the margin s(A) − s(B) (score units)",
                                 "up_label": "pushes A above B", "down_label": "pulls B up"},
        caption=("Each panel takes two neighbouring documents, A (placed higher) and B, and splits the score margin "
                 "s(A) − s(B) among the features: a red bar pushes A above B, a blue one pulls B up; the bars add "
                 "up to the margin. Labels give the feature's value for A, then for B. "
                 + ("With adaptive filling a feature both documents share can still carry a value: knowing it "
                    "changes how the unknown features are filled in. " if options.fill == "adaptive" else "")
                 + which + "."),
        description="Bar chart of pairwise explanations: " + "; ".join(sentences) + ".")


def check(options: PairwiseOptions, data: RankingData) -> None:
    """`plot_query` names a query of the audited data with at least two documents."""
    check_query_id(options.plot_query, data, where="plot_query")


def _gap(value: float) -> str:
    return "below 1e-9 (exact)" if value < 1e-9 else f"{value:.2g}"


def _explain_pairs(ctx: AuditContext, explainer: AsiPair | RaiPair,
                   payload: list[tuple[int, np.ndarray]]) -> list[list[Any]]:
    """An executor task: for each query of the block (its top documents' rows, best first), every adjacent pair
    explained, drawing from the pair's own stream."""
    out = []
    for qi, top in payload:
        out.append([explainer.explain(ctx.model, top[rank - 1], top[rank], ctx.rng(f"pairwise/{qi}/{rank}"))
                    for rank in range(1, len(top))])
        ctx.tick()
    return out


def _explainer(ctx: AuditContext, options: PairwiseOptions) -> AsiPair | RaiPair:
    from auditor.explain.pairwise import AsiPair, ConditionalFill, RaiPair

    if options.fill == "masking":
        reference = ctx.masker().fill
    else:
        pool = ctx.reference().X
        take = ctx.rng("pairwise/background").choice(len(pool), size=min(options.background_size, len(pool)),
                                                     replace=False)
        reference = pool[np.sort(take)]
    fill = ConditionalFill(reference, options.fill, sigma=options.sigma, eta=options.eta,
                           max_neighbours=options.max_neighbours)
    if options.method == "raipair":
        rai = options.raipair
        return RaiPair(fill, function=options.pair_function, measurements=rai.measurements,
                       permutations=rai.permutations, noise=rai.noise)
    return AsiPair(fill, function=options.pair_function, exact_max_features=options.exact_max_features,
                   permutations=options.permutations)


def _sides(phi: np.ndarray, names: list[str], count: int) -> tuple[list[tuple[str, float]], list[tuple[str, float]]]:
    order = np.lexsort((np.arange(len(phi)), -np.abs(phi)))
    up = [(names[f], float(phi[f])) for f in order if phi[f] > 0][:count]
    down = [(names[f], float(phi[f])) for f in order if phi[f] < 0][:count]
    return up, down


