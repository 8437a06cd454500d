"""Evidence `decision_path_accuracy`: how close each attribution explainer comes to the ground truth a tree model
carries in its decision paths (paper 001: value change along the path and split frequency), per document, laid
out like the paper's Table 3, with accuracy by path depth and the top-K AUC curve.

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
from auditor.core.numbers import figure, stored
from auditor.evidence.base import AuditContext, EvidenceResult, Figure, Table, check_explanation_size
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
)
from auditor.explain import registry
from auditor.explain.base import Attributions, QueryView
from auditor.inputs.data import RankingData
from auditor.models.capabilities import reference_scores, tree_ensemble

GT_LABELS = {"value_change": "GT value change", "frequency": "GT frequency"}
CURVE_MAX_K = 10






HOW_TO_READ = (
    "A tree model's score is made by the splits on each document's path through its trees, so the path is a ground "
    "truth for which features mattered to that document. Two readings of it: value change (how much each split "
    "feature moved the score along the path; they add up to the score) and frequency (how often a feature is split "
    "on along the path). Each explainer's attributions for the top documents of each query are compared with both: "
    "Spearman correlation of the feature rankings (1 = same order, 0 = unrelated), Euclidean similarity of the "
    "normalised vectors (1 = same, 0.5 = unrelated in direction, 1/3 = opposite) and top-K AUC (1 = the explainer's "
    "most important features are exactly the path's top K; 0.5 = chance). Cells are mean ± standard deviation over "
    "documents. A low figure means the explanation points at features the model did not use for that document."
)



def check(options: DecisionPathOptions, data: RankingData) -> None:
    """A top-K list of every feature holds every relevant one: its AUC says nothing."""
    check_explanation_size(options.top_k, data.n_features, where="top_k")


def run(ctx: AuditContext, options: DecisionPathOptions) -> EvidenceResult:
    from auditor.checks.decision_path import auc_curve, ground_truth, similarity, spearman  # numba: at run time

    result = EvidenceResult(name="decision_path_accuracy", how_to_read=HOW_TO_READ)
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
    if additivity > 1e-6 * max(1.0, float(np.max(np.abs(scores)))):
        result.notes.append(f"The tree arrays do not reproduce the model's scores (max error {additivity:.3g}): the "
                            "ground truth may not describe this model.")

    from auditor.explain.perturb import SamplerCache

    background = ctx.reference().X
    sampler = SamplerCache().get(background) if any(registry.EXPLAINERS[e].surrogate for e in options.explainers) \
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
                    e = explanation(raw, query.X[d], sampler, kind, _form(name, kind, options.surrogate_form))
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
        result.summary = "No documents to explain."
        return result
    depth_arr = np.array(depth)
    metrics["decision_path.depth.mean"] = float(depth_arr.mean())
    metrics["decision_path.depth.min"] = float(depth_arr.min())
    metrics["decision_path.depth.max"] = float(depth_arr.max())
    _report_counts(result, options, found, chosen)
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
    seconds["ground truth"] = gt_seconds
    _tables(result, options, ks, curve_means, depth_arr, values, forms, rows_used, seconds, n_docs, len(chosen))
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


def _report_counts(result: EvidenceResult, options: DecisionPathOptions, found: dict[str, dict[int, Attributions]],
                   chosen: list[int]) -> None:
    """Documents an explainer that can leave some without explanation did so for (`.degenerate_docs`), and those
    its fallback solver fitted (`.fallback_docs`), with a note when > 0."""
    for name in options.explainers:
        entry = registry.EXPLAINERS[name]
        if entry.degenerate:
            count = sum(found[name][qi].n_degenerate for qi in chosen)
            result.metrics[f"decision_path.{name}.degenerate_docs"] = float(count)
            if count:
                result.notes.append(f"{entry.label} found no explanation ({entry.degenerate}) for {count} "
                                    "document(s): their attributions are zero, so Spearman is undefined for them.")
        if entry.fallback:
            count = sum(found[name][qi].n_fallback for qi in chosen)
            result.metrics[f"decision_path.{name}.fallback_docs"] = float(count)
            if count:
                result.notes.append(f"{entry.label} fitted {count} document(s) with its fallback solver "
                                    f"({entry.fallback}).")


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


def _form(name: str, kind: str, option: str) -> str:
    if not registry.EXPLAINERS[name].surrogate:
        return "attributions"
    if option != "auto":
        return option
    return "contributions" if kind == "value_change" else "coefficients"


def _metric_labels(top_k: int) -> dict[str, str]:
    return {"auc": f"AUC (top-{top_k})", "spearman": "Spearman", "spearman_abs": "Spearman |·|",
            "euclidean": "Euclidean"}


ROW_ORDER = ("auc", "spearman", "spearman_abs", "euclidean")  # the paper's Table 3 order, |·| added (the keys of
# `checks.decision_path.similarity`; tests/test_decision_path.py keeps them equal)


def _tables(result: EvidenceResult, options: DecisionPathOptions, ks: list[int],
            curve_means: dict[tuple[str, str], np.ndarray], depth: np.ndarray,
            values: dict[tuple[str, str, str], list[float]], forms: dict[tuple[str, str, str, str], list[float]],
            rows_used: dict[str, int], seconds: dict[str, float], n_docs: int, n_queries: int) -> None:
    metrics = result.metrics
    names = options.explainers
    labels = _metric_labels(options.top_k)

    def cell(name: str, kind: str, metric: str) -> str | None:
        mean = metrics.get(f"decision_path.{name}.{kind}.{metric}.mean")
        std = metrics.get(f"decision_path.{name}.{kind}.{metric}.std")
        if mean is None or not np.isfinite(mean):
            return None
        return f"{figure(mean)} ± {figure(std)}" if std is not None and np.isfinite(std) else f"{figure(mean)}"

    result.tables.append(Table(
        title="Explanation accuracy against decision-path ground truth (layout of Rahnama & Bütepage 2022, Table 3)",
        columns=["ground truth", "similarity", *[registry.label(n) for n in names]],
        rows=[[GT_LABELS[kind], labels[metric], *[cell(n, kind, metric) for n in names]]
              for kind in options.ground_truth for metric in ROW_ORDER],
        note=(f"Mean ± standard deviation over {n_docs} documents (the top {options.docs_per_query} of each of "
              f"{n_queries} queries" + (", all of a query's documents where it has fewer"
                                        if n_docs < options.docs_per_query * n_queries else "")
              + f"). Node values: {options.node_values.replace('_', '-')}. LIRME/EXS: "
              + ("contributions coef·(x−μ)/σ against value change, |coefficients| against frequency"
                 if options.surrogate_form == "auto" else f"{options.surrogate_form} for both")
              + "; every explainer is compared by |attribution| with frequency (which has no sign). Undefined "
                "values (a constant vector) are left out: see `.undefined` in the metrics."),
    ))
    surrogates = [n for n in names if registry.EXPLAINERS[n].surrogate]
    if surrogates:
        rows = []
        for name in surrogates:
            for form in ("coefficients", "contributions"):
                for kind in options.ground_truth:
                    used = _form(name, kind, options.surrogate_form) == form
                    rows.append([registry.label(name), form, GT_LABELS[kind], "yes" if used else "",
                                 *[stored(metrics.get(f"decision_path.{name}.{form}.{kind}.{m}.mean"))
                                   for m in ROW_ORDER]])
        result.tables.append(Table(
            title="Surrogate explainers: coefficient form against contribution form",
            columns=["explainer", "form", "ground truth", "used above", *[labels[m] for m in ROW_ORDER]],
            rows=rows,
            note="Coefficients are per background standard deviation; contributions are coef·(x−μ)/σ, the "
                 "surrogate's additive share of the document (μ, σ: background mean and std).", body_rows=0))
    _, bin_of, bin_labels = _depth_bins(depth, options.depth_bins)
    by_depth = ("auc", "spearman", "euclidean")
    for kind in options.ground_truth:
        rows = []
        for b, label in enumerate(bin_labels):
            inside = bin_of == b
            row: list[Any] = [label, int(inside.sum())]
            for name in names:
                for metric in by_depth:
                    arr = np.array(values[(name, kind, metric)], dtype=np.float64)[inside]
                    arr = arr[np.isfinite(arr)]
                    row.append(stored(arr.mean()) if arr.size else None)
            rows.append(row)
        rows.append(["all: Spearman ρ with depth", n_docs,
                     *[stored(metrics.get(f"decision_path.{n}.{kind}.{metric}.depth_spearman"))
                       for n in names for metric in by_depth]])
        result.tables.append(Table(
            title=f"Accuracy by decision-path depth, {GT_LABELS[kind]}",
            columns=["path depth", "docs", *[f"{registry.label(n)} {labels[m]}" for n in names for m in by_depth]],
            rows=rows,
            note="Depth: split nodes on the document's path, averaged over the trees. Mean per bin; the last row "
                 "gives the Spearman correlation between depth and accuracy over all documents "
                 "(Rahnama & Bütepage 2022, section 5.5).", body_rows=0))
    if ks:
        series = {f"{registry.label(n)} · {GT_LABELS[kind]}": [float(v) for v in curve_means[(n, kind)]]
                  for kind in options.ground_truth for n in names}
        result.tables.append(Table(
            title="Top-K AUC by K (mean over documents)",
            columns=["explainer", "ground truth", *[f"K = {k}" for k in ks]],
            rows=[[registry.label(n), GT_LABELS[kind], *[stored(v) for v in curve_means[(n, kind)]]]
                  for kind in options.ground_truth for n in names], body_rows=0))  # the figure shows it
        result.figures.append(Figure(
            title="Top-K AUC against decision-path ground truth",
            chart="line_chart", data={"x": ks, "series": series,
                                      "xlabel": "K (ground-truth features counted as important)",
                                      "ylabel": "mean top-K AUC"},
            caption=k_curve_caption(series),
            description=f"Line chart of mean top-K AUC for K = {ks[0]} to {ks[-1]}, one line per explainer and "
                        f"ground truth; at K = {ks[-1]}: "
                        + ", ".join(f"{name} {figure(values[-1])}" for name, values in series.items()) + "."))
    result.tables.append(Table(
        title="Cost per explainer",
        columns=["explainer", "model rows", "rows per document", "seconds"],
        rows=[*[[registry.label(n), int(rows_used[n]), stored(rows_used[n] / max(n_docs, 1), 1), stored(seconds[n], 3)]
                for n in names],
              ["Ground truth (all documents)", 0, 0.0, stored(seconds["ground truth"], 4)]],
        note="Ground truth reads the trees and costs no model rows. Seconds are wall time.", volatile=True))
    parts = []
    for kind in options.ground_truth:
        best = max(names, key=lambda n, k=kind: _nan_low(metrics.get(f"decision_path.{n}.{k}.spearman.mean")))
        by_auc = max(names, key=lambda n, k=kind: _nan_low(metrics.get(f"decision_path.{n}.{k}.auc.mean")))
        spearman = figure(metrics.get(f"decision_path.{best}.{kind}.spearman.mean"))
        parts.append(f"against {GT_LABELS[kind].replace('GT ', '')} {registry.label(best)} agrees best by Spearman "
                     f"({spearman})" + ("" if by_auc == best else
                                        f", {registry.label(by_auc)} by top-K AUC "
                                        f"({figure(metrics.get(f'decision_path.{by_auc}.{kind}.auc.mean'))})"))
    result.summary = f"On {n_docs} documents of {n_queries} queries, " + "; ".join(parts) + "."


def _depth_bins(depth: np.ndarray, n_bins: int) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """One bin per value when depths take at most 8 values (a single tree), else quantile bins."""
    distinct = np.unique(np.round(depth, 9))
    if distinct.size <= 8:
        bin_of = np.searchsorted(distinct, np.round(depth, 9))
        return distinct, bin_of, [f"{v:g}" for v in distinct]
    edges = np.unique(np.quantile(depth, np.linspace(0, 1, n_bins + 1)))
    bin_of = np.clip(np.searchsorted(edges, depth, side="right") - 1, 0, len(edges) - 2)
    labels = [f"{edges[i]:.2f} – {edges[i + 1]:.2f}" for i in range(len(edges) - 1)]
    return edges, bin_of, labels


def _nan_low(value: float | None) -> float:
    return -np.inf if value is None or not np.isfinite(value) else float(value)


def k_curve_caption(series: dict[str, list[float]]) -> str:
    """The top-K AUC figure's caption, saying which way this run's lines go before what the paper reports (issue
    56: a caption's direction claim is the data's, never only the paper's)."""
    from auditor.evidence.figures import line_trend

    trend, rising, lines = line_trend(series)
    balance = " on balance" if trend.startswith("neither") else ""
    return (f"0.5 = chance. Here AUC {trend}{balance} as K grows ({rising} of {lines} lines end higher than they "
            "start); Rahnama & Bütepage 2022 (Figures 3-4) report that it falls.")
