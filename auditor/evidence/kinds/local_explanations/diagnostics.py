"""The per-explainer diagnostics of `local_explanations`: the convergence check of explainers whose attributions
carry jackknife replicates (KernelSHAP: the agreement two runs with fresh coalitions would have), and the listwise
explainers' agreement with the exact Shapley values of the same game — measured per query, then reported."""

from __future__ import annotations

from typing import Any

import numpy as np

from auditor.checks.ranking import bootstrap_interval
from auditor.core.metric_names import spelled
from auditor.core.numbers import held, interval, percent, signed, stored
from auditor.evidence.base import AuditContext, EvidenceResult, Figure, Table, representative_text
from auditor.evidence.kinds.local_explanations.options import LocalExplanationsOptions
from auditor.evidence.kinds.local_explanations.present import QueryBlock, label, methods_of
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


REFERENCE_METRICS = {"footrule@3": "footrule3", "footrule@10": "footrule10", "footrule@all": "footrule_all",
                     "l1": "l1"}


def report_listwise(result: EvidenceResult, ctx: AuditContext, options: LocalExplanationsOptions, listwise: QueryBlock,
                     figure_query: int | None) -> None:
    """The listwise explainers against the exact Shapley values of their game (a table and
    `local.<name>.reference.*`), and the figure of the representative query's attributions."""
    metrics = result.metrics
    shown = [n for n in registry.EXPLAINERS if n in listwise.reference or n in listwise.reference_skipped]
    rows = []
    for name in shown:
        found = listwise.reference.get(name, [])
        skipped = listwise.reference_skipped.get(name, 0)
        metrics[f"local.{name}.reference.queries"] = float(len(found))
        means = {}
        for key, short in REFERENCE_METRICS.items():
            if found:
                means[key] = float(np.mean([a[key] for a in found]))
                metrics[f"local.{name}.reference.{short}.mean"] = means[key]
        rows.append([registry.label(name), len(found), skipped,
                     *[stored(means[key], 3) if key in means else None for key in REFERENCE_METRICS]])
        if skipped:
            result.notes.append(f"{registry.label(name)}: {skipped} queries not compared with exact Shapley values "
                                f"(more than {options.reference_max_players} features play: 2^M coalitions too "
                                "costly; `reference_max_players`).")
    if rows:
        metrics["local.listwise.reference.rows"] = float(listwise.reference_rows)
    if rows and listwise.reference_rows == 0 and not listwise.reference_skipped:  # every estimate exact: a note
        result.notes.append(", ".join(registry.label(n) for n in shown) + ": exact on every query, so its own "
                            "reference (footrule and L1: 0).")
    elif rows:
        result.tables.append(Table(
            title="Listwise attributions against exact Shapley values",
            columns=["method", "queries", "skipped", "footrule@3", "footrule@10", "footrule@all", "L1"],
            rows=rows,
            note="Mean per query. Spearman's footrule over the reference's top 3, 10 and all features (features "
                 "ordered by signed value; 0 = the same order) and the L1 distance of the two vectors each divided "
                 "by its L1 norm (0–2). An exact estimate is its own reference (0 by construction)."))
    if figure_query is None or not listwise.figure:
        return
    names = ctx.data.feature_names
    results = {n: listwise.figure[n] for n in registry.EXPLAINERS if n in listwise.figure}
    strongest = np.max([np.abs(r.values) for r in results.values()], axis=0)
    top = [int(f) for f in np.lexsort((np.arange(strongest.shape[0]), -strongest))[:5] if strongest[f] > 0]
    if not top:
        return
    query_id = ctx.data.query_ids[figure_query]
    size = int(ctx.data.query_sizes()[figure_query])
    series = {registry.label(n): (r.values[top], r.half_width[top]) for n, r in results.items()}
    result.figures.append(Figure(
        title=f"What orders this query's results (query {query_id})",
        chart="listwise_bars", data={"names": [names[f] for f in top], "series": series,
                                     "xlabel": "Shapley value of the ranking game"},
        caption=(f"Each bar is a feature's Shapley value in the game \"how much of the model's order of this query's "
                 f"{size} documents does keeping the feature reproduce\" (RankingSHAP: Kendall tau; RankSHAP: nDCG "
                 "of the model's own order; "
                 + ("the features left out masked as everywhere in this audit" if options.background_rows is None
                    else f"the features left out replaced by each of {options.background_rows} background rows in "
                         "turn, the value averaged, as published")
                 + "); the values sum to 1 − v(∅): "
                 + ", ".join(f"{registry.label(n)} {signed(1 - r.empty_value)}" for n, r in results.items())
                 + ". Error bars: 95% intervals of sampled estimates (none: exact). "
                 + representative_text(query_id, size).capitalize() + "."),
        description=(f"Bar chart of listwise attributions for query {query_id}, features by strength: "
                     + "; ".join(f"{registry.label(n)} " + ", ".join(f"{names[f]} {signed(r.values[f])}"
                                                                     for f in top[:4])
                                 for n, r in results.items()) + ".")))


def report_convergence(result: EvidenceResult, ctx: AuditContext, options: LocalExplanationsOptions,
                        agreement: dict[str, list[float]], coalitions: list[int], underdetermined: list[bool]) -> None:
    """KernelSHAP's convergence metrics, and a note and a detection when its sets would still move with a fresh
    sample of coalitions (predicted agreement below the floor) or its regressions are underdetermined."""
    metrics = result.metrics
    if not coalitions:
        return
    metrics["local.kernelshap.coalitions.mean"] = float(np.mean(coalitions))
    share = float(np.mean(underdetermined))
    metrics["local.kernelshap.underdetermined_share"] = share
    samples = options.kernelshap.nsamples
    how = "auto, 2M + 2048" if samples == "auto" else f"{samples}"
    floor = options.kernelshap.agreement_floor
    for method, values in agreement.items():
        v = np.asarray(values)
        low, high = bootstrap_interval(v, ctx.rng(f"local/convergence/{method}"))
        name = f"local.{method}.convergence.agreement"
        metrics.update(spelled(f"{name}.mean", float(v.mean()), low, high, always=True))
        if v.mean() >= floor and share <= 0.5:
            continue
        shown = interval(*held(v.mean(), low, high), share=True)
        why = (f"two runs with fresh coalitions would choose sets sharing {percent(v.mean())} of their features on "
               f"average (jackknife; 95% interval {shown}; floor {percent(floor)})")
        if share > 0.5:
            why = (f"{share:.0%} of the documents had fewer coalitions than twice their features, too few to "
                   f"determine the regression (predicted agreement of two runs' sets {percent(v.mean())})")
        result.notes.append(f"{label(method)}: the estimate is still noisy: {why}; coalitions per document: "
                            f"{np.mean(coalitions):.0f} ({how}). Raise `kernelshap.nsamples`.")
        result.detect(
            "explainer-estimate-noisy", f"{label(method)} estimates have not converged",
            f"At k = {options.k}, {why}: the features KernelSHAP names depend on its random sample as much as on the "
            "model. More coalitions (`kernelshap.nsamples`) are needed before its sets are shown as reasons.",
            severity="minor", citation="EU AI Act (Reg. 2024/1689) Art. 13(1) — output interpretable; Reg. (EU) "
                                       "2019/1150 Art. 5(1)",
            judged_by=(f"{name}.mean", "local.kernelshap.underdetermined_share"), value=float(v.mean()),
            interval=(low, high), subject=method)
