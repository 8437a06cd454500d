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

Measured only: the metrics, a record per feature (its mean |φ| and share in each view), the kept queries'
attributions, and as facts what the report says besides (how TreeSHAP was computed, the main parameters' count,
the shown features' shares at full precision, the features in the data's order and their units) and what the
figures draw: the centred φ and values of the plotted documents for the ten largest features, and of one query its
top documents' centred φ, the first one's values and the rank positions they are worth; `present.py` says what
they mean.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from auditor.checks.estimate import estimate
from auditor.checks.ranking import rank_order
from auditor.core.feature_names import metric_segments
from auditor.core.metric_names import spelled
from auditor.core.numbers import stored
from auditor.evidence.base import (
    ATTRIBUTION_VALUES,
    AuditContext,
    EvidenceResult,
    check_query_id,
    representative_query,
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

PLOTTED_FEATURES = 10  # features of the summary plot (the largest by within-query importance)
DECISION_DOCS = 5  # lines in the decision plot: more are hard to tell apart (issue 22)


def run(ctx: AuditContext, options: GlobalImportanceOptions) -> EvidenceResult:
    data = ctx.data
    result = EvidenceResult(name="global_importance")
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
    float32 = hasattr(getattr(ctx.model, "inner", ctx.model), "reference_scores")  # a library that sums in float32
    if float32:
        metrics["global_importance.score_rounding.max_abs"] = passed.rounding
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

    result.records = [
        {"feature": names[f], "rank": r + 1, **{f"{view}.mean_abs": stored(views[view][f]) for view in views},
         **{f"{view}.share": stored(shares[view][f]) for view in views}}
        for r, f in enumerate(order)
    ]
    result.facts.update(method=method, float32_sums=ctx.model.kind if float32 else None, main_count=main_count,
                        within_shares=[float(within[f]) for f in order[: options.top]], features=list(names),
                        units={n: ctx.feature_units[n] for n in names if n in ctx.feature_units},
                        plotted=_plotted(ctx, passed, keep, plotted, order))
    if decision is not None:
        result.facts["query"] = _query(ctx, passed, keep, decision, options)
    result.attributions = _attributions(ctx, passed, keep, kept_queries, options.keep_queries)
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


def _centred(ctx: AuditContext, passed: TreeshapPass, keep: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """φ minus its query's mean, for these rows (all among `keep`: only their φ exist here, `treeshap_pass`)."""
    phi = passed.kept[np.searchsorted(keep, wanted)]
    centred: np.ndarray = phi - passed.query_means[np.searchsorted(ctx.data.query_ptr, wanted, side="right") - 1]
    return centred


def _plotted(ctx: AuditContext, passed: TreeshapPass, keep: np.ndarray, rows: np.ndarray,
             order: np.ndarray) -> dict[str, Any]:
    """What the summary (beeswarm) and dependence plots draw: for the plotted documents and the
    `PLOTTED_FEATURES` largest features, the within-query-centred φ and the feature values — per query, because
    scores are only comparable inside a query (the caveat of paper 000). Arrays as figures encode them
    (`figures.encode`: exact)."""
    from auditor.evidence.figures import encode

    top = order[: min(PLOTTED_FEATURES, len(order))]
    return {"features": [ctx.data.feature_names[f] for f in top],
            "phi": encode(_centred(ctx, passed, keep, rows)[:, top]), "values": encode(ctx.data.X[np.ix_(rows, top)])}


def _query(ctx: AuditContext, passed: TreeshapPass, keep: np.ndarray, query: int,
           options: GlobalImportanceOptions) -> dict[str, Any]:
    """What the waterfall and the decision plot of one query draw: its top `DECISION_DOCS` documents' ids, scores
    and centred φ, the first one's feature values and rank, and the rank positions the values of each waterfall row
    are worth to it (masked as everywhere in this audit, `ctx.masking`). Arrays as figures encode them."""
    from auditor.evidence.figures import encode
    from auditor.explain.waterfall import positions_worth, waterfall

    data = ctx.data
    part = data.query_slice(query)
    scores = ctx.scores()[part]
    local = _centred(ctx, passed, keep, np.arange(part.start, part.stop))
    docs = rank_order(scores)[:DECISION_DOCS]
    best = int(docs[0])
    fall = waterfall(local[best], base=float(scores.mean()), score=float(scores[best]),
                     top=options.waterfall_features)
    rank, worth = positions_worth(ctx.model, ctx.masker(), data.X[part], scores, best, fall.sets)
    return {"query": data.query_ids[query], "docs": len(scores), "top": [data.doc_ids[part.start + d] for d in docs],
            "scores": [float(scores[d]) for d in docs], "mean": float(scores.mean()),
            "second": float(np.sort(scores)[-2]), "phi": encode(local[docs]),
            "values": encode(data.X[part.start + best]), "rank": rank, "positions": encode(worth),
            "masking": ctx.masking}


def _explain_query(data: RankingData, wanted: str | None) -> int | None:
    if wanted is not None:
        return data.query_ids.index(wanted)
    return representative_query(data.query_sizes())


def check(options: GlobalImportanceOptions, data: RankingData) -> None:
    """`explain_query` names a query of the audited data with at least two documents."""
    check_query_id(options.explain_query, data, where="explain_query")


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


