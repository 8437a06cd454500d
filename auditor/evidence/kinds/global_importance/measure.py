"""Evidence `global_importance`: which features drive the model's scores, and which drive its rankings.

Exact TreeSHAP contributions φ give three views of a feature's importance:
- global: mean |φ| over all documents (the classic SHAP summary);
- per query: mean |φ| over the documents of each query, then averaged over queries, so every query weighs the same;
- within query: mean |φ − mean of φ in the query| per query, averaged. Only this part moves documents against
  each other: a contribution that is the same for every document of a query shifts all scores and changes no
  ranking (the caveat of paper 000 on SHAP plots computed over the whole set).

For LightGBM, φ comes from our `scoring.fast_treeshap.FastTreeShap` (the same values as LightGBM's `pred_contrib`
to 1e-9, several times faster: docs/benchmarks.md) where `pred_contrib` would take longer than compiling ours
(`capabilities.FAST_TREESHAP_MIN_SECONDS`), else from `pred_contrib` itself, as for models the array form does not
cover; for scikit-learn trees from shap's TreeExplainer; for XGBoost and CatBoost from FastTreeShap on their array
form always (their `contributions`). The table note names the one used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from auditor.checks.estimate import estimate
from auditor.checks.ranking import rank_order
from auditor.core.feature_names import metric_segments
from auditor.core.metric_names import spelled
from auditor.core.numbers import figure, percent, positions, signed, stored
from auditor.core.words import counted
from auditor.evidence.base import (
    ATTRIBUTION_VALUES,
    AuditContext,
    EvidenceResult,
    Figure,
    Table,
    check_query_id,
    representative_query,
    representative_text,
)
from auditor.evidence.importance import (
    IMPORTANCE_KEY,
    TreeshapPass,
    contribution_chunks,
    summarize,
    treeshap_pass,
)
from auditor.evidence.kinds.global_importance.options import GlobalImportanceOptions
from auditor.inputs.data import RankingData

if TYPE_CHECKING:
    pass




HOW_TO_READ = (
    "Each feature's importance is how much it moves the model's score, averaged per query. The 'within query' "
    "column keeps only what changes the order of documents inside a query — the part that matters for a ranking. "
    "Shares add up to 100% per column. The main ranking parameters are the fewest features that together reach "
    "the stated share of the within-query importance."
)



def run(ctx: AuditContext, options: GlobalImportanceOptions) -> EvidenceResult:
    data = ctx.data
    result = EvidenceResult(name="global_importance", how_to_read=HOW_TO_READ)
    plotted = _plotted_rows(ctx, options)
    decision = _explain_query(data, options.explain_query)
    keep = plotted if decision is None else np.union1d(plotted, np.arange(*data.query_ptr[decision:decision + 2]))
    kept_queries = _kept_queries(data, options.keep_queries)
    if kept_queries:
        keep = np.union1d(keep, np.concatenate([np.arange(*data.query_ptr[q:q + 2]) for q in kept_queries]))
    passed = treeshap_pass(ctx, keep)
    if passed is None:
        result.status = "skipped"
        result.error = (f"a '{ctx.model.kind}' model has no exact TreeSHAP; model-agnostic importance comes with "
                        "the local-explanation evidence")
        return result
    ctx.memo(IMPORTANCE_KEY, lambda: passed.summary)  # for disclosure_consistency
    additivity, method = passed.additivity, passed.method
    views = passed.summary.views()
    names = data.feature_names
    shares = {view: _shares(values) for view, values in views.items()}

    metrics = result.metrics
    metrics["global_importance.additivity.max_abs_error"] = additivity
    rounding = ""
    if hasattr(getattr(ctx.model, "inner", ctx.model), "reference_scores"):  # a library that sums in float32
        metrics["global_importance.score_rounding.max_abs"] = passed.rounding
        rounding = (f" (to the exact sum of the trees; {ctx.model.kind} sums them in float32, so its scores differ "
                    f"from that sum by up to {passed.rounding:.1e})")
    within = shares["within_query"]
    order = np.argsort(-within, kind="stable")
    main_count = int(np.searchsorted(np.cumsum(within[order]), options.share_for_main - 1e-12) + 1)
    metrics["global_importance.main_parameters"] = float(min(main_count, len(names)))
    metrics["global_importance.top1_share"] = float(within[order[0]])
    metrics["global_importance.top3_share"] = float(within[order[:3]].sum())
    metrics["global_importance.unused_features"] = float(np.sum(views["global"] == 0))
    metrics.update(share_metrics(passed.summary.within, order[: options.top], names,
                                 ctx.rng("global_importance/shares")))
    from scipy.stats import spearmanr  # here, not at import: the spec and policies load without scipy.stats

    rho = spearmanr(views["global"], views["within_query"]).statistic if len(names) > 1 else 1.0
    metrics["global_importance.rank_agreement_global_vs_within"] = float(np.nan_to_num(rho, nan=1.0))

    result.tables.append(Table(
        title="Feature importance (mean |SHAP value|)",
        columns=["rank", "feature", "within query", "share", "per query", "share", "global", "share"],
        rows=[[r + 1, names[f], stored(views["within_query"][f]), stored(within[f]), stored(views["per_query"][f]),
               stored(shares["per_query"][f]), stored(views["global"][f]), stored(shares["global"][f])]
              for r, f in enumerate(order[: options.top])],
        note=("Sorted by the within-query view"
              + (f"; {counted(len(names) - options.top, 'more feature')} in evidence.json"
                 if len(names) > options.top else "")
              + f". Additivity (Σφ + bias = score) holds to {additivity:.1e}{rounding}. TreeSHAP by {method}."),
    ))
    result.records = [
        {"feature": names[f], "rank": r + 1, **{f"{view}.mean_abs": stored(views[view][f]) for view in views},
         **{f"{view}.share": stored(shares[view][f]) for view in views}}
        for r, f in enumerate(order)
    ]
    top = order[: options.top]
    result.figures.append(Figure(
        title="Main ranking parameters",
        chart="bar_chart", data={"labels": [names[f] for f in top], "values": [float(within[f]) for f in top],
                                 "xlabel": "share of within-query importance", "percent": True, "cut": main_count,
                                 "cut_label": f"above the line: the main parameters ({options.share_for_main:.0%} "
                                              "of the importance)"},
        caption="Share of each feature in what moves documents against each other inside a query"
                + (f"; the features above the dashed line are the main parameters, the fewest that carry "
                   f"{options.share_for_main:.0%} of it (grey: the others)." if main_count < len(top) else
                   f"; all {len(top)} shown are main parameters (together they carry less than "
                   f"{options.share_for_main:.0%} of it)." if main_count > len(top) else "."),
        description="Bar chart of the features' shares of the within-query importance, largest first: "
                    + ", ".join(f"{names[f]} {percent(within[f])}" for f in top[:5])
                    + (f", and {len(top) - 5} more." if len(top) > 5 else ".")))
    result.figures.extend(_figures(ctx, passed, keep, plotted, decision, order, options))
    result.attributions = _attributions(ctx, passed, keep, kept_queries, options.keep_queries)
    main = ", ".join(names[f] for f in order[:main_count][:5])
    result.summary = (f"{counted(main_count, 'feature')} {'carries' if main_count == 1 else 'carry'} "
                      f"{options.share_for_main:.0%} of the within-query importance; "
                      f"the main ones: {main}{'…' if main_count > 5 else ''}.")
    return result


def share_metrics(within: np.ndarray, features: np.ndarray, names: list[str],
                  rng: np.random.Generator) -> dict[str, float]:
    """`global_importance.within_share.<feature>` with its 95% interval for each of `features` (the table's rows):
    the feature's share of the within-query importance, a ratio of two means over queries (its mean |φ − φ̄| over
    the sum over features), resampling whole queries (`checks.estimate`, statistic form). A feature whose metric
    segment another feature shares gets none (`metric_segments`)."""
    segments = metric_segments(names)
    if len(within) == 0:
        return {}
    columns = np.column_stack([np.zeros(len(within)), within.sum(axis=1)])
    out: dict[str, float] = {}
    for f in features:
        segment = segments.get(names[int(f)])
        if segment is None:
            continue
        columns[:, 0] = within[:, int(f)]
        found = estimate(columns, rng, statistic=_ratio)
        if np.isfinite(found.mean):
            out.update(spelled(f"global_importance.within_share.{segment}", found.mean, found.low, found.high))
    return out


def _ratio(means: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        out: np.ndarray = means[..., 0] / means[..., 1]
    return out




def _kept_queries(data: RankingData, wanted: int) -> list[int]:
    """The queries whose attributions are kept: evenly spread over the data, as many of `wanted` as fit in
    ATTRIBUTION_VALUES values."""
    if wanted <= 0 or data.n_queries == 0:
        return []
    spread = np.unique(np.linspace(0, data.n_queries - 1, min(wanted, data.n_queries)).round().astype(int))
    sizes = data.query_sizes()
    out, total = [], 0
    for q in spread:
        cost = int(sizes[q]) * data.n_features
        if total + cost > ATTRIBUTION_VALUES:
            break
        out.append(int(q))
        total += cost
    return out


def _attributions(ctx: AuditContext, passed: TreeshapPass, keep: np.ndarray, queries: list[int],
                  wanted: int) -> dict[str, object] | None:
    """The kept queries' TreeSHAP values per document, with each document's bias and feature values: what
    `AuditResult.explanations` turns into a shap.Explanation, from a saved run too."""
    if passed.kept_bias is None or wanted <= 0:
        return None
    data = ctx.data
    out = []
    for q in queries:
        rows = np.arange(*data.query_ptr[q:q + 2])
        at = np.searchsorted(keep, rows)
        out.append({"query": data.query_ids[q],
                    "docs": [str(data.doc_ids[i]) for i in rows],
                    "phi": [[stored(v) for v in row] for row in passed.kept[at]],
                    "bias": [stored(v) for v in passed.kept_bias[at]],
                    "values": [[None if not np.isfinite(v) else float(v) for v in row] for row in data.X[rows]]})
    return {"method": passed.method, "feature_names": list(data.feature_names), "queries": out,
            "left_out": int(min(wanted, data.n_queries) - len(queries))}


def _plotted_rows(ctx: AuditContext, options: GlobalImportanceOptions) -> np.ndarray:
    """The documents the summary and dependence plots show: all, or a seeded sample of `plot_docs`."""
    n_docs = ctx.data.n_docs
    if n_docs <= options.plot_docs:
        return np.arange(n_docs)
    return np.sort(ctx.rng("global_importance/plots").choice(n_docs, options.plot_docs, replace=False))


def _figures(ctx: AuditContext, passed: TreeshapPass, keep: np.ndarray, rows: np.ndarray, query: int | None,
             order: np.ndarray, options: GlobalImportanceOptions) -> list[Figure]:
    """Summary (beeswarm) and dependence plots of within-query-centred SHAP values, and for one query the waterfall
    of its top document and a decision plot of its top 5 — per query, because scores are only comparable inside a
    query (the caveat of paper 000). Only the `keep` rows' φ exist here (`treeshap_pass`), which these plots
    need."""
    from auditor.evidence.figures import axis_label
    from auditor.inputs.feature_dictionary import is_yes_no

    data, names = ctx.data, ctx.data.feature_names

    def centred(wanted: np.ndarray) -> np.ndarray:
        """φ minus its query's mean, for these rows (all among `keep`)."""
        phi = passed.kept[np.searchsorted(keep, wanted)]
        return phi - passed.query_means[np.searchsorted(data.query_ptr, wanted, side="right") - 1]

    shown = centred(rows)
    top = order[: min(10, len(order))]
    first = int(top[0])
    unit = ctx.feature_units.get(names[first])
    spread = shown[:, first]
    figures = [Figure(
        title=f"How the {len(top)} most important features move documents within their query (SHAP summary)",
        chart="beeswarm", data={"phi": shown[:, top], "values": data.X[np.ix_(rows, top)],
                                "names": [names[f] for f in top],
                                "xlabel": "SHAP value minus the query's mean (score units)"},
        caption=f"Each dot is a document ({len(rows)} shown); right of 0 it is pushed up within its query. Colour: "
                "the feature's value, low (blue) to high (red), as the colour bar shows.",
        description=f"Summary plot of {len(rows)} documents for the {len(top)} main parameters; {names[first]} "
                    f"spreads them most, from {figure(spread.min())} to {figure(spread.max())} score units around "
                    "their query's mean."),
        Figure(title=f"Dependence on {names[first]}",
               chart="scatter", data={"x": data.X[rows, first], "y": spread, "xlabel": axis_label(names[first], unit),
                                      "ylabel": "SHAP value minus the query's mean", "yes_no": is_yes_no(unit)},
               caption="How the top parameter's value translates into a push up or down within the query.",
               description=f"Scatter plot of {len(rows)} documents: {names[first]}'s value against its push within "
                           "the query (SHAP value minus the query's mean).")]
    if query is not None:
        figures.extend(_query_figures(ctx, query, centred, options))
    return figures


_MASKING = {"mean": "replaced by its mean in the background data", "median": "replaced by its median in the "
            "background data", "zero": "set to 0", "background": "replaced by background rows, scores averaged"}
DECISION_DOCS = 5  # lines in the decision plot: more are hard to tell apart (issue 22)


def _query_figures(ctx: AuditContext, query: int, centred, options: GlobalImportanceOptions) -> list[Figure]:
    """The waterfall of the query's top document (score units and rank positions) and the decision plot of its
    top 5 documents."""
    from auditor.evidence.figures import value_text
    from auditor.explain.waterfall import positions_worth, waterfall

    data, names, units = ctx.data, ctx.data.feature_names, ctx.feature_units
    part = data.query_slice(query)
    scores = ctx.scores()[part]
    qid = data.query_ids[query]
    which = (f"Query {qid} is the one the spec names (explain_query)." if options.explain_query is not None
             else f"By default {representative_text(qid, part.stop - part.start)} (explain_query names another).")
    local_all = centred(np.arange(part.start, part.stop))
    best = int(rank_order(scores)[0])
    fall = waterfall(local_all[best], base=float(scores.mean()), score=float(scores[best]),
                     top=options.waterfall_features)
    rank, worth = positions_worth(ctx.model, ctx.masker(), data.X[part], scores, best, fall.sets)
    row = data.X[part.start + best]
    labels = [value_text(names[f], row[f], units.get(names[f])) for f in fall.features]
    if fall.n_other:
        labels.append(f"{fall.n_other} other feature{'s' if fall.n_other > 1 else ''}")
    doc = data.doc_ids[part.start + best]
    lead = int(np.argmax(np.abs(worth)))
    figures = [Figure(
        title=f"Why document {doc} is first in query {qid} (waterfall)",
        chart="waterfall", data={"labels": labels, "contributions": fall.contributions, "base": fall.base,
                                 "score": fall.score, "base_label": "query's average score",
                                 "score_label": f"score of {doc}"[:44],
                                 "xlabel": "score (starts at the query's average)",
                                 "positions": worth, "positions_label": "positions its value is worth",
                                 "reference": ("#2's score", float(np.sort(scores)[-2]))},
        caption=waterfall_caption(labels, fall.contributions, worth, _MASKING.get(ctx.masking, ctx.masking), which,
                                  n_other=fall.n_other),
        description=(f"Waterfall of document {doc}, ranked {rank + 1} of {len(scores)} in query {qid}: its score "
                     f"{figure(fall.score)} is the query's average {figure(fall.base)} plus "
                     + "; ".join(f"{label} {signed(value)}" for label, value in
                                 zip(labels[:3], fall.contributions[:3], strict=False))
                     + f"{' and the rest' if len(labels) > 3 else ''}; "
                     + (f"{labels[lead]} is worth the most places ({positions(worth[lead])})." if worth[lead]
                        else "masking any one of these leaves it first.")))
    ]
    docs = rank_order(scores)[:DECISION_DOCS]
    local = local_all[docs]
    features = np.argsort(-np.abs(local).mean(axis=0), kind="stable")[:10][::-1]
    steps = np.column_stack([local[:, features], local.sum(axis=1) - local[:, features].sum(axis=1)])
    doc_labels = [f"#{r + 1} {data.doc_ids[part.start + d]}" for r, d in enumerate(docs)]
    figures.append(Figure(
        title=f"Why query {qid} is ranked as it is (decision plot)",
        chart="decision_plot", data={"phi": steps, "base": float(scores.mean()),
                                     "names": [*[names[f] for f in features], "other features"],
                                     "labels": doc_labels, "xlabel": "score (the query's average at the bottom)"},
        caption=f"Each line is one of the top {len(docs)} documents of the query's {len(scores)}, climbing from the "
                "query's average score by each feature's push; lines end at the documents' scores, so their order "
                f"at the top is the ranking. {which}",
        description=f"Decision plot of the top {len(docs)} documents of query {qid}: their paths from the query's "
                    f"average score {figure(scores.mean())} through the {len(features)} features that separate them "
                    f"most ({names[features[-1]]} first) to their scores, {figure(scores[docs[0]])} for the first."))
    return figures


def waterfall_caption(labels: list[str], contributions: np.ndarray, worth: np.ndarray, masking: str,
                      which: str, n_other: int = 0) -> str:
    """The waterfall's caption: what each panel measures against (the left the query's other documents, the right
    the masked value), when a row's two panels point opposite ways that row as the example of why, and when the
    features not named push more than any named one, that the named bars explain only part of the score (issue
    56: on wide data "128 other features" was the largest bar, unremarked)."""
    from auditor.explain.waterfall import opposed

    values = np.asarray(contributions, dtype=np.float64)
    rest = ""
    if n_other and len(values) > 1 and abs(values[-1]) > np.max(np.abs(values[:-1])):
        named = float(np.sum(np.abs(values[:-1])))
        share = named / float(np.sum(np.abs(values)))
        rest = (f" The {n_other} features not named push {signed(values[-1])} together, more than any feature named: "
                f"the named bars carry {percent(share)} of the pushes, so this document's score rests "
                f"{'mostly' if share < 0.5 else 'partly'} on many small ones.")

    rows = opposed(contributions, worth)
    if rows:
        r = rows[0]
        down = contributions[r] < 0
        example = (f": here {labels[r]} pushes the score {'down' if down else 'up'} ({signed(contributions[r])}) "
                   f"yet is worth {positions(worth[r])} positions, as the model rates that value "
                   f"{'below' if down else 'above'} the average of the query's documents but "
                   f"{'above' if down else 'below'} the masked value")
    else:
        example = ""
    return (f"Left: from the query's average score at the bottom, each bar adds one feature's push for this "
            f"document against the query's other documents (its SHAP value minus the query's mean; red up, blue "
            f"down) and the last bar ends at its score; the bars add up to score − average exactly; the dashed line "
            f"is the score of the document ranked second. Right: how many rank positions the document's own value "
            f"of that feature is worth against the masked value — its rank with that value masked ({masking}, as "
            f"everywhere in this audit), the other documents unchanged, minus its rank. The panels compare with "
            f"different things, the left with the query's other documents and the right with the masked value, so "
            f"a bar and its positions can point opposite ways{example}. As the document is first, masking can only "
            f"cost it places: 0 means it stays first without its value, because the masked value scores well enough "
            f"or its lead is large enough (a yes/no feature masked by its mean becomes a fraction, which the model "
            f"may read as yes). Positions do not add up.{rest} {which}")


def _explain_query(data: RankingData, wanted: str | None) -> int | None:
    if wanted is not None:
        return data.query_ids.index(wanted)
    return representative_query(data.query_sizes())


def check(options: GlobalImportanceOptions, data: RankingData) -> None:
    """`explain_query` names a query of the audited data with at least two documents."""
    check_query_id(options.explain_query, data, where="explain_query")


# Below this many documents LightGBM's pred_contrib takes well under a second, less than loading our compiled
# kernel (0.5 s once per process; compiling it into numba's cache the first time takes about 10 s).


















def _contributions(ctx: AuditContext, chunk: int = 20_000) -> tuple[np.ndarray | None, str]:
    """TreeSHAP for every document at once (φ and bias columns; None for non-tree models) — for small data and
    tests; the evidence streams instead (`treeshap_pass`)."""
    streamed = contribution_chunks(ctx, chunk)
    if streamed is None:
        return None, ""
    parts, method = streamed
    return np.concatenate([part for _, _, part in parts]), method




def importance_views(phi: np.ndarray, query_ptr: np.ndarray) -> dict[str, np.ndarray]:
    """Mean |φ| per feature three ways (see the module docstring)."""
    return summarize(phi, query_ptr).views()


def _shares(values: np.ndarray) -> np.ndarray:
    total = values.sum()
    return values / total if total > 0 else np.zeros_like(values)


