"""Evidence `pairwise`: for each audited query, why the model ranks each of the top documents above the next one
(paper 003: ASIPair, or RAIPair when the feature count makes Shapley values costly), with the efficiency check
Σφ = g(A, B) − E[g]. Definitions: `auditor/explain/pairwise.py` and docs/metrics.md (`pairwise.*`). Measured only:
each pair's values as a record, and as facts the feature names and units and the pairs of the query the bar chart
shows; `present.py` says what they mean."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from auditor.checks.ranking import rank_order
from auditor.evidence.base import AuditContext, EvidenceResult, check_query_id, representative_query
from auditor.evidence.executor import split
from auditor.evidence.kinds.pairwise.options import PairwiseOptions
from auditor.inputs.data import RankingData

if TYPE_CHECKING:
    from auditor.explain.pairwise import AsiPair, PairExplanation, RaiPair

PLOTTED_PAIRS = 3  # panels of the bar chart: the first pairs of the plotted query


def run(ctx: AuditContext, options: PairwiseOptions) -> EvidenceResult:
    result = EvidenceResult(name="pairwise")
    data, scores = ctx.data, ctx.scores()
    names = data.feature_names
    explainer = _explainer(ctx, options)
    sizes = data.query_sizes()
    chosen = ctx.query_sample(options.queries, "pairwise/queries",
                              eligible=[q for q in range(data.n_queries) if sizes[q] >= 2])
    records: list[dict[str, Any]] = []
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
            # full precision: the report lists each pair's features by the sign and size of φ, to 3 figures
            records.append({"query": data.query_ids[qi], "rank_a": rank, "rank_b": rank + 1,
                            "doc_a": data.doc_ids[row_a], "doc_b": data.doc_ids[row_b],
                            "value": float(pair.value), "base": float(pair.base),
                            "phi": {names[f]: float(pair.phi[f]) for f in range(len(names))},
                            "efficiency_error": float(pair.efficiency_error), "exact": pair.exact})
    result.records = records
    result.n_model_rows = ctx.model.rows_evaluated - rows_before
    metrics = result.metrics
    metrics["pairwise.pairs"] = float(len(records))
    metrics["pairwise.queries"] = float(len(chosen))
    metrics["pairwise.rows"] = float(result.n_model_rows)
    if not records:
        return result
    phi = np.array(phis)
    share = np.abs(phi).max(axis=1) / np.maximum(np.abs(phi).sum(axis=1), 1e-300)
    metrics["pairwise.efficiency.max_abs_error"] = float(max(efficiency))
    metrics["pairwise.top_feature_share.mean"] = float(share.mean())
    metrics["pairwise.margin.mean"] = float(np.mean(margins))
    metrics["pairwise.exact_pairs"] = float(exact_count)
    result.facts.update(features=list(names), units={n: ctx.feature_units[n] for n in names if n in ctx.feature_units},
                        plot=_plotted(ctx, explainer, options, chosen, by_query))
    return result


def _plotted(ctx: AuditContext, explainer: AsiPair | RaiPair, options: PairwiseOptions, chosen: list[int],
             by_query: dict[int, list[PairExplanation]]) -> dict[str, Any]:
    """The facts of the bar chart's query: its id and size, whether the sample audited it, and its first
    `PLOTTED_PAIRS` pairs with both documents' feature values (arrays as figures encode them: exact). A query named
    by `plot_query` that the sample left out is explained here, from the same streams, for the figure only (its rows
    count in this item's model rows)."""
    from auditor.evidence.figures import encode

    data, scores = ctx.data, ctx.scores()
    qi = data.query_ids.index(options.plot_query) if options.plot_query is not None else \
        representative_query(data.query_sizes(), chosen)
    assert qi is not None  # the sample holds queries of two or more documents
    part = data.query_slice(qi)
    top = part.start + rank_order(scores[part])[:options.top]
    pairs = by_query.get(qi) or _explain_pairs(ctx, explainer, [(qi, data.X[top])])[0]
    return {"query": data.query_ids[qi], "docs": part.stop - part.start, "sampled": qi in by_query,
            "pairs": [{"doc_a": data.doc_ids[top[rank - 1]], "doc_b": data.doc_ids[top[rank]],
                       "value": float(pair.value), "base": float(pair.base),
                       "efficiency_error": float(pair.efficiency_error), "phi": encode(np.asarray(pair.phi)),
                       "a": encode(data.X[top[rank - 1]]), "b": encode(data.X[top[rank]])}
                      for rank, pair in enumerate(pairs[:PLOTTED_PAIRS], start=1)]}


def check(options: PairwiseOptions, data: RankingData) -> None:
    """`plot_query` names a query of the audited data with at least two documents."""
    check_query_id(options.plot_query, data, where="plot_query")


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
