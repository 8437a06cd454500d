"""Evidence `decision_path_accuracy`: how close each attribution explainer comes to the ground truth a tree model
carries in its decision paths (paper 001: value change along the path and split frequency), per document — measured
only: the metrics, the per-document records and as facts whether the trees reproduce the scores and the accuracy by
path depth; `present.py` lays them out like the paper's Table 3, with the top-K AUC curve. The cost table (wall-clock
seconds, never stored) is the one table made here.

Only tree models (LightGBM, scikit-learn trees, XGBoost, CatBoost) have decision paths; any other model (ONNX, a
Python function) is SKIPPED.
Definitions: `auditor/checks/decision_path.py` and docs/metrics.md (`decision_path.*`).
"""

from __future__ import annotations

import time
from collections import defaultdict
from typing import Any

import numpy as np

from auditor.checks.estimate import estimate
from auditor.checks.ranking import rank_order
from auditor.core.numbers import stored
from auditor.evidence.base import AuditContext, EvidenceResult, Table, check_explanation_size
from auditor.evidence.explainers import (
    attributions,
    attributions_many,
    build,
    explanation,
    reusable_attributions,
)
from auditor.evidence.kinds.decision_path_accuracy.options import (
    DecisionPathOptions,
    NodeValues,
    compared_form,
)
from auditor.explain import registry
from auditor.explain.base import Attributions, QueryView
from auditor.inputs.data import RankingData
from auditor.models.capabilities import reference_scores, tree_ensemble

CURVE_MAX_K = 10


def check(options: DecisionPathOptions, data: RankingData) -> None:
    """A top-K list of every feature holds every relevant one: its AUC says nothing."""
    check_explanation_size(options.top_k, data.n_features, where="top_k")


def run(ctx: AuditContext, options: DecisionPathOptions) -> EvidenceResult:
    from auditor.checks.decision_path import auc_curve, ground_truth, similarity, spearman  # numba: at run time

    result = EvidenceResult(name="decision_path_accuracy")
    ensemble, reason = tree_ensemble(ctx.model)
    if ensemble is None:
        result.status = "skipped"
        result.error = reason
        return result
    data = ctx.data
    scores = ctx.scores()
    # local_explanations' sample stream: with the same `queries`, both audit the same queries (and share their work)
    chosen = ctx.query_sample(options.queries, "local/queries")
    top = {qi: data.query_slice(qi).start + rank_order(scores[data.query_slice(qi)])[:options.docs_per_query]
           for qi in chosen}  # what QueryView.top_docs picks below
    explained = np.concatenate([top[qi] for qi in chosen]) if chosen else np.zeros(0, dtype=np.int64)
    start = time.perf_counter()
    truth = ground_truth(ensemble, data.X[explained], values=options.node_values)  # only the explained documents
    position = {int(row): i for i, row in enumerate(explained)}
    additivity = _additivity(ensemble, data.X, scores, options.node_values, reference_scores(ctx.model))
    gt_seconds = time.perf_counter() - start
    metrics = result.metrics
    metrics["decision_path.additivity.max_abs_error"] = additivity
    metrics["decision_path.bias"] = truth.bias
    # the ground truth describes the model when its value changes add up to the scores (to the arithmetic's noise)
    result.facts["reproduces_scores"] = not additivity > 1e-6 * max(1.0, float(np.max(np.abs(scores))))

    from auditor.explain.perturb import shared_samplers

    background = ctx.reference().X
    sampler = shared_samplers().get(background) if any(registry.EXPLAINERS[e].surrogate for e in options.explainers) \
        else None
    masker = ctx.masker()
    explainers = build(options)
    ks = list(range(1, min(CURVE_MAX_K, data.n_features - 1) + 1))
    values: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    forms: dict[tuple[str, str, str, str], list[float]] = defaultdict(list)
    curves: dict[tuple[str, str], list[np.ndarray]] = defaultdict(list)
    owner, depth, records = [], [], []
    rows_used: dict[str, int] = defaultdict(int)
    seconds: dict[str, float] = defaultdict(float)
    views = {qi: QueryView(X=data.X[data.query_slice(qi)], scores=scores[data.query_slice(qi)],
                           query_id=data.query_ids[qi], background=background) for qi in chosen}
    found = _attributions(ctx, options, explainers, views, masker, rows_used, seconds)
    explained_by = {name: {qi: np.asarray(a.values, dtype=np.float64) for qi, a in by_query.items()}
                    for name, by_query in found.items()}
    for index, qi in enumerate(ctx.progress.track(chosen, description="Decision-path accuracy", total=len(chosen))):
        part = data.query_slice(qi)
        query = views[qi]
        docs = query.top_docs(options.docs_per_query)
        attributions = {name: explained_by[name][qi] for name in options.explainers}
        for j, d in enumerate(docs):
            row = part.start + int(d)
            at = position[row]
            owner.append(index)
            depth.append(float(truth.depth[at]))
            record: dict[str, Any] = {"query": query.query_id, "doc": data.doc_ids[row], "rank": j + 1,
                                      "depth": round(float(truth.depth[at]), 6)}
            for name in options.explainers:
                raw = attributions[name][j]
                per: dict[str, float | None] = {}
                for kind in options.ground_truth:
                    g = truth.value_change[at] if kind == "value_change" else truth.frequency[at]
                    if registry.EXPLAINERS[name].surrogate:
                        candidates = {form: explanation(raw, query.X[d], sampler, kind, form)
                                      for form in ("coefficients", "contributions")}
                        for form, e in candidates.items():
                            for metric, value in similarity(e, g, top_k=options.top_k).items():
                                forms[(name, form, kind, metric)].append(value)
                    e = explanation(raw, query.X[d], sampler, kind, compared_form(name, kind, options.surrogate_form))
                    for metric, value in similarity(e, g, top_k=options.top_k).items():
                        values[(name, kind, metric)].append(value)
                        per[f"{kind}.{metric}"] = stored(value, 6)
                    curves[(name, kind)].append(auc_curve(e, g, ks))
                record[name] = per
            records.append(record)
    result.records = records
    n_docs = len(owner)
    metrics["decision_path.docs"] = float(n_docs)
    metrics["decision_path.queries"] = float(len(chosen))
    metrics["decision_path.top_k"] = float(options.top_k)
    if n_docs == 0:
        return result
    depth_arr = np.array(depth)
    metrics["decision_path.depth.mean"] = float(depth_arr.mean())
    metrics["decision_path.depth.min"] = float(depth_arr.min())
    metrics["decision_path.depth.max"] = float(depth_arr.max())
    _counts(result, options, found, chosen)
    owner_arr = np.array(owner)
    rng = ctx.rng("decision_path/intervals")
    for (name, kind, metric), series in values.items():
        arr = np.array(series, dtype=np.float64)
        finite = arr[np.isfinite(arr)]
        prefix = f"decision_path.{name}.{kind}.{metric}"
        metrics.update(estimate(arr, rng, clusters=owner_arr, n_clusters=len(chosen), quantiles=(0.025, 0.975))
                       .metrics(prefix))  # quantiles as written before the estimates were brought together
        metrics[f"{prefix}.std"] = float(finite.std(ddof=1)) if finite.size > 1 else float("nan")
        metrics[f"{prefix}.undefined"] = float(arr.size - finite.size)
        metrics[f"{prefix}.depth_spearman"] = spearman(depth_arr[np.isfinite(arr)], finite) \
            if finite.size > 2 else float("nan")
    curve_means: dict[tuple[str, str], np.ndarray] = {}
    for key, rows in curves.items():
        stacked = np.vstack(rows)
        with np.errstate(all="ignore"):
            curve_means[key] = np.array([np.nanmean(c) if np.isfinite(c).any() else np.nan for c in stacked.T])
        for k, value in zip(ks, curve_means[key], strict=True):
            metrics[f"decision_path.{key[0]}.{key[1]}.auc.mean@k{k}"] = float(value)
    for name in options.explainers:
        metrics[f"decision_path.{name}.rows"] = float(rows_used[name])
    for (name, form, kind, metric), series in forms.items():
        arr = np.array(series, dtype=np.float64)
        finite = arr[np.isfinite(arr)]
        metrics[f"decision_path.{name}.{form}.{kind}.{metric}.mean"] = float(finite.mean()) if finite.size \
            else float("nan")
    result.facts["depth_bins"] = _by_depth(options, depth_arr, values)
    seconds["ground truth"] = gt_seconds
    result.tables.append(_cost_table(options, rows_used, seconds, n_docs))
    return result


def _attributions(ctx: AuditContext, options: DecisionPathOptions, explainers: dict[str, Any],
                  views: dict[int, QueryView], masker: Any, rows_used: dict[str, int],
                  seconds: dict[str, float]) -> dict[str, dict[int, Attributions]]:
    """Each explainer's attributions of each query's top documents, shared with `local_explanations`: the same
    streams and memo entries, so documents it already explained (e.g. its top 5 when we need the top 3) cost
    nothing here, and the rest are batched across queries where the explainer `batches`."""
    out: dict[str, dict[int, Attributions]] = {}
    ticker = ctx.progress.task(f"Decision-path attributions ({len(views)} queries × {len(options.explainers)} "
                               "explainers)", len(views) * len(options.explainers))
    for name in options.explainers:
        rows_before, begin = ctx.model.rows_evaluated, time.perf_counter()
        found = {qi: reusable_attributions(ctx, options, name, view, qi, options.docs_per_query)
                 for qi, view in views.items()}
        missing = [(view, qi, view.top_docs(options.docs_per_query)) for qi, view in views.items()
                   if found[qi] is None]
        if missing and registry.EXPLAINERS[name].batches:
            attributions_many(ctx, options, explainers, name, missing, masker)
        out[name] = {}
        for qi, view in views.items():  # one tick a query (batched ones tick as they are read back)
            out[name][qi] = found[qi] if found[qi] is not None else attributions(
                ctx, options, explainers, name, view, qi, view.top_docs(options.docs_per_query), masker)
            ticker.advance()
        rows_used[name] += ctx.model.rows_evaluated - rows_before
        seconds[name] += time.perf_counter() - begin
    ticker.close()
    return out


def _counts(result: EvidenceResult, options: DecisionPathOptions, found: dict[str, dict[int, Attributions]],
            chosen: list[int]) -> None:
    """Documents an explainer that can leave some without explanation did so for (`.degenerate_docs`), and those
    its fallback solver fitted (`.fallback_docs`): present.py notes them when > 0."""
    for name in options.explainers:
        entry = registry.EXPLAINERS[name]
        if entry.degenerate:
            result.metrics[f"decision_path.{name}.degenerate_docs"] = float(
                sum(found[name][qi].n_degenerate for qi in chosen))
        if entry.fallback:
            result.metrics[f"decision_path.{name}.fallback_docs"] = float(
                sum(found[name][qi].n_fallback for qi in chosen))


def _additivity(ensemble: Any, X: np.ndarray, scores: np.ndarray, values: NodeValues, reference: Any,
                chunk: int = 50_000) -> float:
    """max |bias + Σ value change − score| over every document, in chunks: the ground truth of all documents is
    checked but never held (two documents × features arrays would be the audit's largest). For XGBoost the score
    is the exact sum of its trees (`global_importance.reference_scores`)."""
    from auditor.checks.decision_path import ground_truth

    worst = 0.0
    for begin in range(0, X.shape[0], chunk):
        truth = ground_truth(ensemble, X[begin:begin + chunk], values=values)
        target = reference(X[begin:begin + chunk], scores[begin:begin + chunk])
        worst = max(worst, float(np.max(np.abs(truth.bias + truth.value_change.sum(axis=1) - target))))
    return worst


def _by_depth(options: DecisionPathOptions, depth: np.ndarray,
              values: dict[tuple[str, str, str], list[float]]) -> list[dict[str, Any]]:
    """The documents binned by path depth: each bin (`_depth_bins`) with its count and its mean of each
    similarity, per ground truth and explainer (`[kind][explainer][similarity]`), at full precision."""
    bin_of, bins = _depth_bins(depth, options.depth_bins)
    for b, found in enumerate(bins):
        inside = bin_of == b
        found["docs"] = int(inside.sum())
        for (name, kind, metric), series in values.items():
            found.setdefault(kind, {}).setdefault(name, {})[metric] = _mean(np.array(series, dtype=np.float64)[inside])
    return bins


def _mean(values: np.ndarray) -> float | None:
    """The mean of the finite values, None when there are none (JSON has no NaN)."""
    finite = values[np.isfinite(values)]
    return float(finite.mean()) if finite.size else None


def _cost_table(options: DecisionPathOptions, rows_used: dict[str, int], seconds: dict[str, float],
                n_docs: int) -> Table:
    """Model rows and wall-clock seconds per explainer: volatile (shown with `output.timings`, never stored), so
    the run's own and not presented again."""
    return Table(
        title="Cost per explainer",
        columns=["explainer", "model rows", "rows per document", "seconds"],
        rows=[*[[registry.label(n), int(rows_used[n]), stored(rows_used[n] / max(n_docs, 1), 1), stored(seconds[n], 3)]
                for n in options.explainers],
              ["Ground truth (all documents)", 0, 0.0, stored(seconds["ground truth"], 4)]],
        note="Ground truth reads the trees and costs no model rows. Seconds are wall time.", volatile=True)


def _depth_bins(depth: np.ndarray, n_bins: int) -> tuple[np.ndarray, list[dict[str, Any]]]:
    """Each document's bin and the bins: one a value when depths take at most 8 values (a single tree: `depth`),
    else quantile bins (`low`, `high`)."""
    distinct = np.unique(np.round(depth, 9))
    if distinct.size <= 8:
        return np.searchsorted(distinct, np.round(depth, 9)), [{"depth": float(v)} for v in distinct]
    edges = np.unique(np.quantile(depth, np.linspace(0, 1, n_bins + 1)))
    bin_of = np.clip(np.searchsorted(edges, depth, side="right") - 1, 0, len(edges) - 2)
    return bin_of, [{"low": float(edges[i]), "high": float(edges[i + 1])} for i in range(len(edges) - 1)]
