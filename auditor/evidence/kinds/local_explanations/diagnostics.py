"""The per-explainer diagnostics of `local_explanations`: the convergence check of explainers whose attributions
carry jackknife replicates (KernelSHAP: the agreement two runs with fresh coalitions would have), and the listwise
explainers' agreement with the exact Shapley values of the same game — measured per query, then summed up as
metrics, facts and detections (`present.py` says them)."""

from __future__ import annotations

from typing import Any

import numpy as np

from auditor.checks.ranking import bootstrap_interval
from auditor.core.metric_names import spelled
from auditor.evidence.base import AuditContext, EvidenceResult
from auditor.evidence.kinds.local_explanations.options import LocalExplanationsOptions
from auditor.evidence.kinds.local_explanations.present import REFERENCE_METRICS, label, noisy_reason
from auditor.evidence.kinds.local_explanations.tallies import QueryBlock, methods_of
from auditor.explain import registry
from auditor.explain.base import Attributions, QueryView, set_from_attributions


def convergence(options: LocalExplanationsOptions, methods: list[str], found: dict[str, Attributions],
                 block: QueryBlock) -> None:
    """The convergence check of an explainer whose attributions carry jackknife replicates (KernelSHAP) for one
    query: per method (shap1, shap5), the mean over pairs of its pseudo-replicates of |S_g ∩ S_h| / k, the sets at
    the main k (the agreement two runs with fresh coalitions would have; 1 where every coalition was
    enumerated)."""
    for name, attrs in found.items():
        diagnostics = attrs.diagnostics or {}
        replicates = diagnostics.get("replicates")
        if replicates is None:
            continue
        for method in methods_of(methods, name):
            docs = registry.method(method).docs
            sets = [set(set_from_attributions(r, options.k, docs=docs)) for r in replicates]
            pairs = [len(a & b) / max(len(a), 1) for i, a in enumerate(sets) for b in sets[i + 1:]]
            block.agreement.setdefault(method, []).append(float(np.mean(pairs)))
        block.coalitions.extend(int(c) for c in diagnostics["coalitions"])
        block.underdetermined.extend(bool(u) for u in diagnostics["underdetermined"])


def listwise_reference(ctx: AuditContext, options: LocalExplanationsOptions, query: QueryView, qi: int,
                       found: dict[str, Attributions], masker: Any, block: QueryBlock,
                       figure_query: int | None) -> None:
    """Per listwise explainer on one query: the peers' agreement with the exact Shapley values of the same game
    (free when the explainer was exact itself: its values are the reference), or a skip when more than
    `reference_max_players` features play; the whole result for the figure's query."""
    from auditor.checks.listwise_reference import agreement, coalition_masks, exact_shapley

    for name, attrs in found.items():
        result = (attrs.diagnostics or {}).get("listwise")
        if result is None:
            continue
        if qi == figure_query:
            block.figure[name] = result
        m = len(result.players)
        if result.estimator == "exact":
            reference = result.values
        elif m <= options.reference_max_players:
            explainer: Any = registry.EXPLAINERS[name].build(options)  # a listwise explainer: it has `game`
            rows_before = ctx.model.rows_evaluated
            game = explainer.game(ctx.model, query, masker)
            reference = np.zeros_like(result.values)
            reference[game.players] = exact_shapley(game(coalition_masks(game.m)), game.m)
            block.reference_rows += ctx.model.rows_evaluated - rows_before
        else:
            block.reference_skipped[name] = block.reference_skipped.get(name, 0) + 1
            continue
        block.reference.setdefault(name, []).append(agreement(result.values, reference))


def measure_listwise(result: EvidenceResult, ctx: AuditContext, listwise: QueryBlock,
                     figure_query: int | None) -> None:
    """The listwise explainers against the exact Shapley values of their game (`local.<name>.reference.*`; the
    queries too costly to compare as a fact), and as a fact what the figure of the representative query's
    attributions draws: its five strongest features and each explainer's values and error bars on them."""
    metrics = result.metrics
    shown = [n for n in registry.EXPLAINERS if n in listwise.reference or n in listwise.reference_skipped]
    for name in shown:
        found = listwise.reference.get(name, [])
        metrics[f"local.{name}.reference.queries"] = float(len(found))
        for key, short in REFERENCE_METRICS.items():
            if found:
                metrics[f"local.{name}.reference.{short}.mean"] = float(np.mean([a[key] for a in found]))
    if shown:
        metrics["local.listwise.reference.rows"] = float(listwise.reference_rows)
        result.facts["reference_skipped"] = {n: listwise.reference_skipped.get(n, 0) for n in shown}
    if figure_query is None or not listwise.figure:
        return
    results = {n: listwise.figure[n] for n in registry.EXPLAINERS if n in listwise.figure}
    strongest = np.max([np.abs(r.values) for r in results.values()], axis=0)
    top = [int(f) for f in np.lexsort((np.arange(strongest.shape[0]), -strongest))[:5] if strongest[f] > 0]
    if not top:
        return
    result.facts["listwise_figure"] = {
        "query": ctx.data.query_ids[figure_query], "size": int(ctx.data.query_sizes()[figure_query]),
        "features": [ctx.data.feature_names[f] for f in top],
        "explainers": [{"name": n, "values": [float(v) for v in r.values[top]],
                        "half_width": [float(v) for v in r.half_width[top]], "empty_value": float(r.empty_value)}
                       for n, r in results.items()]}


def measure_convergence(result: EvidenceResult, ctx: AuditContext, options: LocalExplanationsOptions,
                        agreement: dict[str, list[float]], coalitions: list[int], underdetermined: list[bool]) -> None:
    """KernelSHAP's convergence metrics, and a detection when its sets would still move with a fresh sample of
    coalitions (predicted agreement below the floor) or its regressions are underdetermined."""
    metrics = result.metrics
    if not coalitions:
        return
    metrics["local.kernelshap.coalitions.mean"] = float(np.mean(coalitions))
    share = float(np.mean(underdetermined))
    metrics["local.kernelshap.underdetermined_share"] = share
    for method, values in agreement.items():
        v = np.asarray(values)
        low, high = bootstrap_interval(v, ctx.rng(f"local/convergence/{method}"))
        name = f"local.{method}.convergence.agreement"
        metrics.update(spelled(f"{name}.mean", float(v.mean()), low, high, always=True))
        why = noisy_reason(metrics, options, method)
        if why is None:
            continue
        result.detect(
            "explainer-estimate-noisy", f"{label(method)} estimates have not converged",
            f"At k = {options.k}, {why}: the features KernelSHAP names depend on its random sample as much as on the "
            "model. More coalitions (`kernelshap.nsamples`) are needed before its sets are shown as reasons.",
            severity="minor", citation="EU AI Act (Reg. 2024/1689) Art. 13(1) — output interpretable; Reg. (EU) "
                                       "2019/1150 Art. 5(1)",
            judged_by=(f"{name}.mean", "local.kernelshap.underdetermined_share"), value=float(v.mean()),
            interval=(low, high), subject=method)
