"""Evidence `global_importance`: which features drive the model's scores, and which drive its rankings.

Exact TreeSHAP contributions φ give three views of a feature's importance:
- global: mean |φ| over all documents (the classic SHAP summary);
- per query: mean |φ| over the documents of each query, then averaged over queries, so every query weighs the same;
- within query: mean |φ − mean of φ in the query| per query, averaged. Only this part moves documents against
  each other: a contribution that is the same for every document of a query shifts all scores and changes no
  ranking (the caveat of paper 000 on SHAP plots computed over the whole set).

For LightGBM, φ comes from our `auditor.fast_treeshap.FastTreeShap` (the same values as LightGBM's `pred_contrib`
to 1e-9, several times faster: docs/benchmarks.md), or from `pred_contrib` itself below `FAST_TREESHAP_MIN_DOCS`
documents and for models the array form does not cover; for scikit-learn trees from shap's TreeExplainer. The
table note names the one used.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from pydantic import Field
from scipy.stats import spearmanr

from auditor.evidence.base import AuditContext, EvidenceOptions, EvidenceResult, Figure, Table
from auditor.report.plots import bar_chart

if TYPE_CHECKING:
    from auditor.fast_treeshap import FastTreeShap
    from auditor.models.base import CountingRanker


class GlobalImportanceOptions(EvidenceOptions):
    top: int = Field(15, ge=1, description="How many features the table and the chart show.")
    share_for_main: float = Field(0.8, gt=0, le=1, description="Main parameters = fewest features reaching "
                                                               "this share of the total importance.")
    decision_query: str | None = Field(None, description="Query id for the decision plot (default: the first query "
                                                         "with at least two documents).")
    plot_docs: int = Field(2000, ge=100, description="Documents sampled (seeded) for the summary and dependence plots.")


HOW_TO_READ = (
    "Each feature's importance is how much it moves the model's score, averaged per query. The 'within query' "
    "column keeps only what changes the order of documents inside a query — the part that matters for a ranking. "
    "Shares add up to 100% per column. The main ranking parameters are the fewest features that together reach "
    "the stated share of the within-query importance."
)


def run(ctx: AuditContext, options: GlobalImportanceOptions) -> EvidenceResult:
    data = ctx.data
    result = EvidenceResult(name="global_importance", how_to_read=HOW_TO_READ)
    contrib, method = _contributions(ctx)
    if contrib is None:
        result.status = "skipped"
        result.error = (f"a '{ctx.model.kind}' model has no exact TreeSHAP; model-agnostic importance comes with "
                        "the local-explanation evidence")
        return result
    phi, bias = contrib[:, :-1], contrib[:, -1]
    additivity = float(np.max(np.abs(phi.sum(axis=1) + bias - ctx.scores())))
    summary = ctx.memo(IMPORTANCE_KEY, lambda: summarize(phi, data.query_ptr))  # for disclosure_consistency
    views = summary.views()
    names = data.feature_names
    shares = {view: _shares(values) for view, values in views.items()}

    metrics = result.metrics
    metrics["global_importance.additivity.max_abs_error"] = additivity
    within = shares["within_query"]
    order = np.argsort(-within, kind="stable")
    main_count = int(np.searchsorted(np.cumsum(within[order]), options.share_for_main - 1e-12) + 1)
    metrics["global_importance.main_parameters"] = float(min(main_count, len(names)))
    metrics["global_importance.top1_share"] = float(within[order[0]])
    metrics["global_importance.top3_share"] = float(within[order[:3]].sum())
    metrics["global_importance.unused_features"] = float(np.sum(views["global"] == 0))
    rho = spearmanr(views["global"], views["within_query"]).statistic if len(names) > 1 else 1.0
    metrics["global_importance.rank_agreement_global_vs_within"] = float(np.nan_to_num(rho, nan=1.0))

    result.tables.append(Table(
        title="Feature importance (mean |SHAP value|)",
        columns=["rank", "feature", "within query", "share", "per query", "share", "global", "share"],
        rows=[[r + 1, names[f], _r(views["within_query"][f]), _r(within[f]), _r(views["per_query"][f]),
               _r(shares["per_query"][f]), _r(views["global"][f]), _r(shares["global"][f])]
              for r, f in enumerate(order[: options.top])],
        note=("Sorted by the within-query view"
              + (f"; {len(names) - options.top} more features in evidence.json" if len(names) > options.top else "")
              + f". Additivity (Σφ + bias = score) holds to {additivity:.1e}. TreeSHAP by {method}."),
    ))
    result.records = [
        {"feature": names[f], "rank": r + 1, **{f"{view}.mean_abs": _r(views[view][f]) for view in views},
         **{f"{view}.share": _r(shares[view][f]) for view in views}}
        for r, f in enumerate(order)
    ]
    top = order[: options.top]
    result.figures.append(Figure(
        title="Main ranking parameters",
        svg=bar_chart([names[f] for f in top], [float(within[f]) for f in top], xlabel="share of within-query "
                                                                                       "importance"),
        caption="Share of each feature in what moves documents against each other inside a query."))
    result.figures.extend(_figures(ctx, phi, order, options))
    main = ", ".join(names[f] for f in order[:main_count][:5])
    result.summary = (f"{main_count} feature(s) carry {options.share_for_main:.0%} of the within-query importance; "
                      f"the main ones: {main}{'…' if main_count > 5 else ''}.")
    return result


def _figures(ctx: AuditContext, phi: np.ndarray, order: np.ndarray, options: GlobalImportanceOptions) -> list[Figure]:
    """Summary (beeswarm) and dependence plots of within-query-centred SHAP values, and a decision plot of one
    query — per query, because scores are only comparable inside a query (the caveat of paper 000)."""
    from auditor.report.plots import beeswarm, decision_plot, scatter

    data, names = ctx.data, ctx.data.feature_names
    means = np.array([phi[a:b].mean(axis=0) for a, b in itertools.pairwise(data.query_ptr)])  # Q × F

    def centred(rows: np.ndarray) -> np.ndarray:
        """φ minus its query's mean, for these rows only (a centred copy of all of φ would double the peak)."""
        return phi[rows] - means[np.searchsorted(data.query_ptr, rows, side="right") - 1]

    rows = np.arange(data.n_docs)
    if data.n_docs > options.plot_docs:
        rows = np.sort(ctx.rng("global_importance/plots").choice(data.n_docs, options.plot_docs, replace=False))
    shown = centred(rows)
    top = order[: min(10, len(order))]
    figures = [Figure(
        title="How each main parameter moves documents within their query (SHAP summary)",
        svg=beeswarm(shown[:, top], data.X[np.ix_(rows, top)], [names[f] for f in top],
                     xlabel="SHAP value minus the query's mean (score units)"),
        caption=f"Each dot is a document ({len(rows)} shown); right of 0 it is pushed up within its query. Colour: "
                "the feature's value, low (blue) to high (red)."),
        Figure(title=f"Dependence on {names[top[0]]}",
               svg=scatter(data.X[rows, top[0]], shown[:, top[0]], xlabel=names[top[0]],
                           ylabel="SHAP value minus the query's mean"),
               caption="How the top parameter's value translates into a push up or down within the query.")]
    query = _decision_query(data, options.decision_query)
    if query is not None:
        part = data.query_slice(query)
        scores = ctx.scores()[part]
        docs = np.argsort(-scores, kind="stable")[:10]
        local = centred(np.arange(part.start, part.stop))[docs]
        features = np.argsort(-np.abs(local).mean(axis=0), kind="stable")[:10][::-1]
        steps = np.column_stack([local[:, features], local.sum(axis=1) - local[:, features].sum(axis=1)])
        labels = [f"#{r + 1} {data.doc_ids[part.start + d]}" for r, d in enumerate(docs)]
        figures.append(Figure(
            title=f"Why query {data.query_ids[query]} is ranked as it is (decision plot)",
            svg=decision_plot(steps, float(scores.mean()), [*[names[f] for f in features], "other features"],
                              labels, xlabel="score (the query's mean at the bottom)"),
            caption="Each line is one of the top documents, climbing from the query's mean score by each feature's "
                    "push; lines end at the documents' scores, so their order at the top is the ranking."))
    return figures


def _decision_query(data, wanted: str | None) -> int | None:
    if wanted is not None:
        return data.query_ids.index(wanted) if wanted in data.query_ids else None
    sizes = data.query_sizes()
    candidates = np.flatnonzero(sizes >= 2)
    return int(candidates[0]) if candidates.size else None


# Below this many documents LightGBM's pred_contrib takes well under a second, less than loading our compiled
# kernel (0.5 s once per process; compiling it into numba's cache the first time takes about 10 s).
FAST_TREESHAP_MIN_DOCS = 1_000


IMPORTANCE_KEY = ("treeshap_importance_by_query",)


@dataclass(frozen=True)
class ImportanceByQuery:
    """What the importance views need from the TreeSHAP values, per query: Q × F instead of documents × F, so it
    can be shared between evidence items (`ctx.memo`) without holding φ for the whole audit."""

    global_abs: np.ndarray  # mean |φ| over all documents (F)
    per_query_abs: np.ndarray  # mean |φ| per query (Q × F)
    within: np.ndarray  # mean |φ − query mean of φ| per query with ≥ 2 documents (Q' × F)

    def views(self) -> dict[str, np.ndarray]:
        zeros = np.zeros(len(self.global_abs))
        return {"within_query": self.within.mean(axis=0) if len(self.within) else zeros,
                "per_query": self.per_query_abs.mean(axis=0), "global": self.global_abs}


def summarize(phi: np.ndarray, query_ptr: np.ndarray) -> ImportanceByQuery:
    """Per-query summaries of φ (see the module docstring). Single-document queries have no within-query effect
    and are left out of that view."""
    global_abs = np.zeros(phi.shape[1])
    for start in range(0, phi.shape[0], 50_000):  # no |φ| temporary the size of φ
        global_abs += np.abs(phi[start:start + 50_000]).sum(axis=0)
    global_abs /= max(phi.shape[0], 1)
    per_query, within = [], []
    for a, b in itertools.pairwise(query_ptr):
        block = phi[a:b]
        per_query.append(np.abs(block).mean(axis=0))
        if b - a > 1:
            within.append(np.abs(block - block.mean(axis=0)).mean(axis=0))
    width = phi.shape[1]
    return ImportanceByQuery(global_abs=global_abs, per_query_abs=np.asarray(per_query).reshape(-1, width),
                             within=np.asarray(within).reshape(-1, width))


def importance_by_query(ctx: AuditContext) -> ImportanceByQuery | None:
    """The per-query TreeSHAP summaries, computed once per audit (by global_importance when it ran first); None for
    models without exact TreeSHAP."""
    def compute() -> ImportanceByQuery | None:
        contrib, _ = _contributions(ctx)
        return None if contrib is None else summarize(contrib[:, :-1], ctx.data.query_ptr)

    return ctx.memo(IMPORTANCE_KEY, compute)


def _contributions(ctx: AuditContext, chunk: int = 20_000) -> tuple[np.ndarray | None, str]:
    """TreeSHAP for every document and which implementation computed it (None for non-tree models), in chunks so
    long runs show progress. Every chunk counts its rows as model rows, whichever implementation ran."""
    X = ctx.data.X
    fast = _fast_treeshap(ctx.model) if X.shape[0] >= FAST_TREESHAP_MIN_DOCS else None
    starts = range(0, X.shape[0], chunk)
    out: np.ndarray | None = None  # filled chunk by chunk: stacking chunks at the end would double the peak
    for start in ctx.progress.track(starts, description="TreeSHAP contributions", total=len(starts)):
        if fast is None:
            part = ctx.model.contributions(X[start:start + chunk])
            if part is None:
                return None, ""
        else:
            part = fast.contributions(X[start:start + chunk])
            ctx.model.rows_evaluated += part.shape[0]  # as CountingRanker.contributions counts pred_contrib's
        if out is None:
            out = np.empty((X.shape[0], part.shape[1]), dtype=np.float64)
        out[start:start + part.shape[0]] = part
    if fast is not None:
        method = "auditor's FastTreeShap (equal to LightGBM's pred_contrib to 1e-9)"
    else:
        method = {"lightgbm": "LightGBM's pred_contrib", "sklearn": "shap's TreeExplainer"}.get(
            ctx.model.kind, f"the '{ctx.model.kind}' model's own contributions")
    return out, method


def _fast_treeshap(model: CountingRanker) -> FastTreeShap | None:
    """Our TreeSHAP for a LightGBM model the array form covers; None otherwise (the model's own is used)."""
    from auditor.fast_treeshap import FastTreeShap
    from auditor.trees import TreeEnsemble, UnsupportedModel

    booster = getattr(getattr(model, "inner", model), "booster", None)
    if model.kind != "lightgbm" or booster is None:
        return None
    try:
        return FastTreeShap(TreeEnsemble.from_lightgbm(booster.dump_model()))
    except UnsupportedModel:  # categorical splits, multiclass, paths of more than 63 features: pred_contrib
        return None


def importance_views(phi: np.ndarray, query_ptr: np.ndarray) -> dict[str, np.ndarray]:
    """Mean |φ| per feature three ways (see the module docstring)."""
    return summarize(phi, query_ptr).views()


def _shares(values: np.ndarray) -> np.ndarray:
    total = values.sum()
    return values / total if total > 0 else np.zeros_like(values)


def _r(value: float) -> float:
    return round(float(value), 6)
