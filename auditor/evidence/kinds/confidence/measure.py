"""Evidence `confidence`: which explanations a reviewer should not rely on, and why.

Per (query, explainer), five criteria (auditor/checks/confidence.py): validity below a threshold; disagreement with
the explainers that reproduce this query's ranking at least as well; decision-path accuracy below a threshold (tree
models); instability across a second seeded run; attributions that do not add up to the score. A fragile ranking
(the top documents' scores nearly tied) is a property of the query, not of an explanation: it is reported apart.
The explanations are the ones `local_explanations` shows (shared through the audit's memo when both run with the
same options). Last comes the check that the flags earn their keep: flagged explanations should have lower
validity and decision-path accuracy than unflagged ones, measured with the criterion under test left out.

Measured only: the metrics, one record an explanation (its verdict with the reason sentences and the signals behind
them, its measures and signals, its widening), the detections, and as facts what `present.py` needs beside them —
the explainers and criteria applied, the number of features, the estimate's signals and reliability diagram, which
explanation each unexplained query should use, the order of the widened attributions, the flag-gap rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from auditor.checks.confidence import (
    CRITERIA,
    FlagGap,
    Verdict,
    agreement,
    flag_gap,
    score_margin,
    set_overlap,
    set_weights,
    verdict,
)
from auditor.checks.ranking import bootstrap_interval
from auditor.checks.reliability import MIN_OUTCOME, auc, calibration, clustered_interval, estimate
from auditor.checks.validity import has_order, measure_sets
from auditor.core.metric_names import read, spelled
from auditor.core.numbers import figure, interval, percent, stored, with_interval
from auditor.core.words import counted
from auditor.evidence.base import AuditContext, EvidenceResult, check_explanation_size
from auditor.evidence.executor import split
from auditor.evidence.explainers import (
    attributions,
    background_rows_masker,
    build,
    check_background_search,
    explanation,
    explanation_set,
    played_masker,
    query_spreads,
)
from auditor.evidence.kinds.confidence.options import ConfidenceOptions, Thresholds, widest
from auditor.evidence.kinds.confidence.present import SIGNALS, VALIDATED, signal_name
from auditor.explain import registry
from auditor.explain.base import Attributions, QueryView, set_from_attributions
from auditor.inputs.data import RankingData
from auditor.models.capabilities import tree_ensemble


def check(options: ConfidenceOptions, data: RankingData) -> None:
    """Sets and top-K lists that leave features out (a set of every feature is valid whatever the explainer)."""
    check_explanation_size(options.k, data.n_features, where="k")
    check_explanation_size(options.path_top_k, data.n_features, where="path_top_k")
    check_background_search(options)


def run(ctx: AuditContext, options: ConfidenceOptions) -> EvidenceResult:
    result = EvidenceResult(name="confidence")
    data, scores, masker = ctx.data, ctx.scores(), ctx.masker()
    ensemble, _ = tree_ensemble(ctx.model)
    # TreeSHAP and decision-path accuracy need a tree model: without one they are left out (present.py says so)
    methods = [m for m in options.methods if ensemble is not None or not registry.method(m).explainer.needs_trees]
    criteria = set(options.criteria) - ({"path_accuracy"} if ensemble is None else set())
    result.facts.update(methods=methods, criteria=[c for c in CRITERIA if c in criteria], features=data.n_features)
    bases = {registry.method(m).explainer.base_value for m in methods}
    base_values = {"masking": _masking_base(ctx, masker, options) if "masking" in bases else None,
                   "tree": _treeshap_bias(ctx) if "additivity" in criteria and "tree" in bases else None}
    job = _Job(options=options, methods=methods, criteria=criteria, ensemble=ensemble, base_values=base_values)
    # the stream local_explanations samples from: with the same `queries`, both judge the same queries
    chosen = ctx.query_sample(options.queries, "local/queries")
    known = _known_by_query(ctx, set(chosen))  # local_explanations' attributions and sets: not computed again
    spread = query_spreads(ctx, options, methods, chosen)  # the narrowed searches' candidates, as local_explanations'
    blocks = split(chosen, ctx.workers, most=16)
    payloads = ([(qi, data.X[data.query_slice(qi)], scores[data.query_slice(qi)], data.query_ids[qi],
                  known.get(qi, {}), None if spread is None else spread[qi]) for qi in block] for block in blocks)
    units: list[dict[str, Any]] = []
    excluded = 0
    with ctx.progress.task(f"Confidence flags ({len(chosen)} queries)", len(chosen)) as ticker:
        outcomes = list(ctx.run_tasks(_judge_block, job, payloads, size=len(chosen), ticker=ticker))
    for block_units, block_excluded in outcomes:
        units.extend(block_units)
        excluded += block_excluded
    if units:
        _reliability(result, ctx, options, methods, units)
    _flags(result, ctx, methods, units, excluded, criteria)
    return result


@dataclass(frozen=True)
class _Job:
    """What every block of queries needs besides its rows (sent with each task)."""

    options: ConfidenceOptions
    methods: list[str]
    criteria: set[str]
    ensemble: Any  # the trees in array form (decision-path ground truth), or None
    base_values: dict[str, float | None]  # φ0 of additive explainers, by `Explainer.base_value`


def _known_by_query(ctx: AuditContext, queries: set[int]) -> dict[int, dict[Any, Any]]:
    """The memo's attributions and explanation sets of these queries (keys: (kind, name, config, masking, qi, ...))."""
    out: dict[int, dict[Any, Any]] = {}
    for key, value in ctx._memo.items():
        if isinstance(key, tuple) and len(key) > 4 and key[0] in ("attributions", "set") and key[4] in queries:
            out.setdefault(key[4], {})[key] = value
    return out


def _judge_block(ctx: AuditContext, job: _Job, payload: list[tuple[Any, ...]]) -> tuple[list[dict[str, Any]], int]:
    """An executor task: every criterion for every method on a block of queries. Each query draws from its own
    streams; what local_explanations already computed arrives with the payload and joins the memo."""
    from auditor.checks.decision_path import ground_truth  # numba: loaded by the task, not by the spec
    from auditor.explain.perturb import shared_samplers

    options, methods, criteria, ensemble = job.options, job.methods, job.criteria, job.ensemble
    masker, background = ctx.masker(), ctx.reference_rows()
    rows_masker = background_rows_masker(ctx, options.background_rows)
    explainers = build(options)
    rerun = build(options, scale=options.rerun_fraction)
    chosen = {m: registry.method(m) for m in methods}
    sampler = shared_samplers().get(background) if any(c.explainer.surrogate for c in chosen.values()) else None
    # a near tie is the query's property, not the explanation's: it is reported apart and flags nothing
    thresholds = {c: getattr(options.thresholds, c) for c in criteria if c != "margin"}
    attribution_count = max([c.docs for c in chosen.values() if c.attribution] + [1])
    docs_needed = max([c.docs for c in chosen.values() if c.attribution] + [options.margin_docs])
    from auditor.explain.listwise import BackgroundMasking, expected_validity  # numba: loaded by the task

    heldout = BackgroundMasking(rows=options.heldout_rows).draw(background, ctx.rng("confidence/heldout"))
    robust = BackgroundMasking(rows=options.robustness_rows).draw(background, ctx.rng("confidence/robustness"))
    tree_method = next((m for m in methods if chosen[m].explainer.needs_trees), None)
    units: list[dict[str, Any]] = []
    excluded = 0
    for qi, X, scores, query_id, known, spread in payload:
        for key, value in known.items():
            ctx.memo(key, lambda value=value: value)
        query = QueryView(X=X, scores=scores, query_id=query_id, background=background, spread=spread)
        if not has_order(query.scores):
            excluded += 1
            continue
        top = query.top_docs(docs_needed)
        attribution_docs = query.top_docs(attribution_count)
        attrs = {c.explainer.name: attributions(ctx, options, explainers, c.explainer.name, query, qi,
                                                attribution_docs, played_masker(c.explainer.name, masker, rows_masker))
                 for c in chosen.values() if c.attribution}
        sets = {m: _set(ctx, options, explainers, attrs, m, query, qi, options.k,
                        played_masker(chosen[m].explainer.name, masker, rows_masker)) for m in methods}
        validity, _ = measure_sets(ctx.model, query.X, query.scores, masker, [sets[m] for m in methods])
        heldout_validity, _ = expected_validity(ctx.model, query.X, query.scores, heldout, [sets[m] for m in methods])
        robust_validity, _ = expected_validity(ctx.model, query.X, query.scores, robust, [sets[m] for m in methods])
        best = int(np.argmax(validity))
        truth = ground_truth(ensemble, query.X[top]) if ensemble is not None else None
        margin = score_margin(query.scores, options.margin_docs)
        fragile = "margin" in criteria and margin < options.thresholds.margin
        for i, m in enumerate(methods):
            measures: dict[str, float] = {"validity": float(validity[i]), "margin": margin}
            measures["agreement"] = agreement([sets[o] for o in methods], validity, i)
            if "stability" in criteria and not _deterministic(chosen[m], attrs):
                again = _rerun(ctx, rerun, m, query, qi, options.k,
                               played_masker(chosen[m].explainer.name, masker, rows_masker), attribution_docs)
                measures["stability"] = set_overlap(sets[m], again)
            if truth is not None:
                measures["path_accuracy"] = _path_accuracy(m, attrs, sets[m], truth, query, top, sampler,
                                                           options.path_top_k)
            if "additivity" in criteria:
                measures["additivity"] = _additivity(m, attrs, query, attribution_docs, job.base_values)
            judged = verdict(measures, thresholds)
            signals = {"validity": measures["validity"], "robust_validity": float(robust_validity[i]),
                       "agreement_best": set_overlap(sets[m], sets[methods[best]]),
                       "agreement_tree": set_overlap(sets[m], sets[tree_method]) if tree_method else float("nan"),
                       "stability": measures.get("stability", 1.0), "margin": float(np.log10(margin + 1e-6)),
                       "mass": _mass(chosen[m], attrs, sets[m]), "docs": float(np.log2(query.n_docs)),
                       "spread": float(np.std(query.scores))}
            widened = (_widened(ctx.model, attrs, chosen[m], query, (masker, robust), heldout, options.k,
                                options.thresholds.validity)
                       if chosen[m].attribution and heldout_validity[i] < options.thresholds.validity else None)
            units.append({"query": query.query_id, "qi": qi, "method": m, "set": sets[m], "measures": measures,
                          "verdict": judged, "rules": judged, "fragile": fragile, "signals": signals,
                          "heldout_validity": float(heldout_validity[i]), "widened": widened})
        ctx.tick()  # progress: one query done (skipped ones count when the block returns)
    return units, excluded


def _widened(model: Any, attrs: dict[str, Attributions], method: Any, query: QueryView, maskers: tuple[Any, Any],
             heldout: Any, k: int, floor: float) -> dict[str, Any] | None:
    """The smallest top-k' of the same attribution (k < k' ≤ WIDEN_TO·k) whose validity reaches the floor both on
    the audit's masking and under the robustness rows, with its validity under the held-out rows (which did not
    choose k'); None when no k' does. Where an attribution fails with k features, it may hold with a few more — a
    better explanation than a flag. (Reaching the floor on the mean alone chose sets that fell back under it on
    other rows: MQ2008, 3 of 14 held.)"""
    from auditor.explain.listwise import expected_validity

    masker, robust = maskers
    values = attrs[method.explainer.name].values
    sizes = list(range(k + 1, widest(k, query.n_features) + 1))
    if not sizes:
        return None
    candidates = [set_from_attributions(values, size, docs=method.docs) for size in sizes]
    validity, _ = measure_sets(model, query.X, query.scores, masker, candidates)
    passing = np.flatnonzero(validity >= floor)
    if not passing.size:
        return None
    on_rows, _ = expected_validity(model, query.X, query.scores, robust, [candidates[i] for i in passing])
    reached = passing[on_rows >= floor]
    if not reached.size:
        return None
    first = int(reached[0])
    held, _ = expected_validity(model, query.X, query.scores, heldout, [candidates[first]])
    return {"k": sizes[first], "set": candidates[first], "validity": float(validity[first]),
            "heldout_validity": float(held[0])}


def _deterministic(method: Any, attrs: dict[str, Attributions]) -> bool:
    """No second run can differ: a deterministic explainer, or a listwise one that enumerated every coalition
    (its exact estimator: the values are the Shapley values themselves)."""
    if method.explainer.deterministic:
        return True
    found = attrs.get(method.explainer.name)
    result = (found.diagnostics or {}).get("listwise") if found is not None else None
    return result is not None and result.estimator == "exact"


def _mass(method: Any, attrs: dict[str, Attributions], chosen: tuple[int, ...]) -> float:
    """The share of the attribution mass (mean |φ| over the explained documents) the chosen features hold; NaN for
    a set search, which has no attributions (the estimate fills it with the mean)."""
    if not method.attribution:
        return float("nan")
    mass = np.abs(attrs[method.explainer.name].values[:method.docs]).mean(axis=0)
    total = float(mass.sum())
    return float(mass[list(chosen)].sum() / total) if total > 0 else float("nan")


def _set(ctx: AuditContext, options: ConfidenceOptions, explainers: dict[str, Any], attrs: dict[str, Attributions],
         name: str, query: QueryView, qi: int, k: int, masker: Any) -> tuple[int, ...]:
    method = registry.method(name)
    if method.attribution:
        return set_from_attributions(attrs[method.explainer.name].values, k, docs=method.docs)
    return explanation_set(ctx, options, explainers, name, query, qi, k, masker)


def _rerun(ctx: AuditContext, explainers: dict[str, Any], name: str, query: QueryView, qi: int, k: int, masker: Any,
           docs: np.ndarray) -> tuple[int, ...]:
    rng = ctx.rng(f"confidence/rerun/{name}/{qi}")
    method = registry.method(name)
    if method.attribution:
        values = explainers[method.explainer.name].attribute(ctx.model, query, docs, masker, rng).values
        return set_from_attributions(values, k, docs=method.docs)
    return explainers[name].select(ctx.model, query, k, masker, rng)


def _path_accuracy(name: str, attrs: dict[str, Attributions], chosen: tuple[int, ...], truth: Any, query: QueryView,
                   top: np.ndarray, sampler: Any, top_k: int) -> float:
    """Top-K AUC against the value change along the decision paths of the documents the explanation covers: each
    document for attributions (averaged), the summed |value change| of the top documents for sets and for listwise
    attributions (one row for the whole query, judged by its set as a set is)."""
    from auditor.checks.decision_path import top_k_auc

    method = registry.method(name)
    if method.attribution and method.explainer.per_document:
        values = attrs[method.explainer.name].values
        form = "contributions" if method.explainer.surrogate else "attributions"
        return float(np.mean([top_k_auc(explanation(values[j], query.X[top[j]], sampler, "value_change", form),
                                        truth.value_change[j], top_k) for j in range(min(method.docs, len(top)))]))
    summed = np.abs(truth.value_change[:len(top)]).sum(axis=0)
    return top_k_auc(set_weights(chosen, query.n_features), summed, top_k)


def _masking_base(ctx: AuditContext, masker: Any, options: ConfidenceOptions) -> float | None:
    """φ0 of KernelSHAP with the masking background (the mean score of the fill rows); None for sampled ones."""
    if options.kernelshap.background != "masking":
        return None
    return float(np.mean(ctx.model.predict(masker.fill)))


def _treeshap_bias(ctx: AuditContext) -> float | None:
    """TreeSHAP's φ0 (the model's expected value): the same for every document, so one row gives it."""
    contributions = ctx.model.contributions(ctx.data.X[:1])
    return None if contributions is None else float(np.asarray(contributions)[0, -1])


def _additivity(name: str, attrs: dict[str, Attributions], query: QueryView, docs: np.ndarray,
                base_values: dict[str, float | None]) -> float:
    """max |Σφ − (score − φ0)| over the explained documents / the query's score range; NaN for surrogates and sets."""
    spread = float(np.ptp(query.scores)) or 1.0
    method = registry.method(name)
    base = base_values.get(method.explainer.base_value) if method.attribution else None
    if base is None:
        return float("nan")
    used = docs[:method.docs]
    phi = attrs[method.explainer.name].values[:len(used)]
    return float(np.abs(phi.sum(axis=1) - (query.scores[used] - base)).max() / spread)


def _flags(result: EvidenceResult, ctx: AuditContext, methods: list[str], units: list[dict[str, Any]],
           excluded: int, criteria: set[str]) -> None:
    """The flags' shares (overall with its interval over queries, per explainer, per reason), one record an
    explanation, the near ties and the check that the flags earn their keep."""
    metrics = result.metrics
    metrics["confidence.explanations"] = float(len(units))
    metrics["confidence.excluded_queries"] = float(excluded)
    if not units:
        return
    names = ctx.data.feature_names
    flagged = np.array([u["verdict"].flagged for u in units])
    by_query = [float(np.mean([u["verdict"].flagged for u in units if u["qi"] == qi]))
                for qi in dict.fromkeys(u["qi"] for u in units)]
    low, high = bootstrap_interval(np.asarray(by_query), ctx.rng("confidence/flagged"))
    metrics.update(spelled("confidence.flagged_fraction", flagged.mean(), low, high, always=True))
    for m in methods:
        metrics[f"confidence.{m}.flagged_fraction"] = float(np.mean([u["verdict"].flagged for u in units
                                                                     if u["method"] == m]))
    for criterion in CRITERIA:
        if criterion in criteria and criterion != "margin":
            metrics[f"confidence.reason.{criterion}.share"] = float(np.mean(
                [criterion in u["verdict"].criteria for u in units]))
    result.records = [{"query": u["query"], "method": u["method"], "selected": [names[f] for f in u["set"]],
                       "flagged": u["verdict"].flagged, "reasons": u["verdict"].reasons,
                       "reason_signals": u["verdict"].criteria, "fragile": u["fragile"],
                       "reliability": stored(u.get("reliability"), 6), "reliable": u.get("reliable"),
                       "heldout_validity": stored(u["heldout_validity"], 6), "flagged_by_rules": u["rules"].flagged,
                       "rule_reasons": u["rules"].reasons,
                       "signals": {k: stored(v, 6) for k, v in u["signals"].items()},
                       "measures": {k: stored(v, 6) for k, v in u["measures"].items()},
                       "widened": None if u["widened"] is None else
                       {"k": u["widened"]["k"], "selected": [names[f] for f in u["widened"]["set"]],
                        "validity": stored(u["widened"]["validity"]),
                        "heldout_validity": stored(u["widened"]["heldout_validity"])}} for u in units]
    if "margin" in criteria:
        _fragile(result, units)
    _validation(result, ctx, units)


def _fragile(result: EvidenceResult, units: list[dict[str, Any]]) -> None:
    """Rankings whose top documents are nearly tied: a tiny change reorders them, whatever explains them (the
    records say which: `fragile`)."""
    queries = {u["qi"]: u for u in units}
    fragile = [u for u in queries.values() if u["fragile"]]
    result.metrics["confidence.fragile_queries"] = float(len(fragile))
    result.metrics["confidence.fragile_queries_share"] = float(len(fragile) / len(queries))


def _validation(result: EvidenceResult, ctx: AuditContext, units: list[dict[str, Any]]) -> None:
    """Flags earn their keep: unflagged minus flagged mean of what makes an explanation reliable, measured apart
    from every signal the estimate uses — validity under the held-out masking, and decision-path accuracy (tree
    models) — within each explainer (the headline) and pooled, with query-clustered bootstrap intervals. Each row
    (`facts.validation`) keeps the two means its gap is the difference of, and the detection quotes that same row."""
    rng = ctx.rng("confidence/validation")
    cluster = np.array([u["qi"] for u in units])
    method = np.array([u["method"] for u in units])
    flags = np.array([u["verdict"].flagged for u in units])
    rows: list[dict[str, Any]] = []
    for measure, label in VALIDATED:
        values = np.array([u["heldout_validity"] if measure == "validity" else
                           u["measures"].get(measure, float("nan")) for u in units], dtype=np.float64)
        if not np.isfinite(values).any():
            continue
        keep = np.isfinite(values)
        for strata in (method, None):  # within explainer, then pooled
            found = flag_gap(values, flags, cluster, rng, strata=strata)
            gap, low, high = found.gap, found.low, found.high
            if strata is not None and not np.isfinite(gap):  # nothing to compare: not measured
                result.unmeasured[f"confidence.validation.{measure}_gap"] = (
                    f"no explainer had both flagged and unflagged explanations on these {len(set(cluster))} "
                    "queries, so the flags cannot be compared with the rest (audit more queries: "
                    "`confidence.queries`)")
            elif strata is not None:
                result.metrics.update(spelled(f"confidence.validation.{measure}_gap", gap, low, high, always=True))
                if np.isfinite(low) and low <= 0:
                    result.detect(
                        "flags-not-validated", f"The low-confidence flags do not single out worse {label}",
                        gap_sentence(label, found), severity="minor",
                        citation="EU AI Act (Reg. 2024/1689) Art. 14(4)(b) — awareness of over-reliance on output",
                        judged_by=(f"confidence.validation.{measure}_gap",), value=gap, interval=(low, high),
                        subject=measure)
            # the units the means are over: within explainer, those of explainers with both flagged and unflagged
            used = keep.copy()
            if strata is not None:
                used &= np.isin(strata, [m for m in np.unique(strata[keep])
                                         if (keep & flags & (strata == m)).any()
                                         and (keep & ~flags & (strata == m)).any()])
            rows.append({"measure": measure, "within": strata is not None, "flagged": int((used & flags).sum()),
                         "unflagged": int((used & ~flags).sum()), "flagged_mean": _plain(found.flagged_mean),
                         "unflagged_mean": _plain(found.unflagged_mean), "gap": _plain(gap), "low": _plain(low),
                         "high": _plain(high)})
    result.facts["validation"] = rows


def _plain(value: float) -> float | None:
    """A measured number as facts keep it, at full precision (present.py rounds what it shows); None when not
    finite (JSON has no NaN)."""
    return float(value) if np.isfinite(value) else None


def _reliable(unit: dict[str, Any], thresholds: Thresholds) -> bool:
    """The target: validity under the held-out masking at least the floor and, where the trees give the ground
    truth, decision-path accuracy at least its floor."""
    ok = unit["heldout_validity"] >= thresholds.validity
    path = unit["measures"].get("path_accuracy")
    return bool(ok and (path is None or not np.isfinite(path) or path >= thresholds.path_accuracy))


BETTER_HIGH = {"validity", "robust_validity", "agreement_best", "agreement_tree", "stability", "mass", "margin",
               "spread"}


def _reason(signal: str, unit: dict[str, Any], standardised: float, typical: float) -> str:
    """A signal that pulls the estimate down, in words: which way it lies from the audit's typical value."""
    if signal.startswith("explainer:"):
        # relative, as the indicator is: the explainer pulls the estimate down against the others, however reliable
        # its explanations are on the whole (issue 56: "seldom" beside 72 of 79 reliable)
        return (f"{registry.label(signal.removeprefix('explainer:'))} explanations are reliable less often than the "
                "other explainers' on this model")
    value = unit["signals"][signal]
    text = SIGNALS[signal][1 if standardised < 0 else 2]
    return text.format(value=figure(value), share=percent(value), typical=figure(typical),
                       typical_share=percent(typical), docs=f"{round(2 ** value):,}" if np.isfinite(value) else "—")


def _reliability(result: EvidenceResult, ctx: AuditContext, options: ConfidenceOptions, methods: list[str],
                 units: list[dict[str, Any]]) -> None:
    """Each explanation's estimated reliability, out of sample (auditor/checks/reliability.py); the flags are the
    estimates below `flag_below`, each with the two signals that pull it down most as the reason. The rule-based
    verdict stays in `rules` (shown beside the estimate, compared in docs/reproductions/confidence-flags.md)."""
    names = list(SIGNALS) + [f"explainer:{m}" for m in methods]
    signals = np.array([[u["signals"][n] for n in SIGNALS] + [float(u["method"] == m) for m in methods]
                        for u in units], dtype=np.float64)
    target = np.array([_reliable(u, options.thresholds) for u in units], dtype=int)
    groups = np.array([u["qi"] for u in units])
    found = estimate(signals, target, groups)
    pushes = found.contributions(signals)
    z = (np.where(np.isfinite(signals), signals, found.fill) - found.centre) / found.scale
    for u, p, push, zs, reliable in zip(units, found.probability, pushes, z, target, strict=True):
        flagged = bool(p < options.flag_below)
        # an explainer's indicator is a reason only for its own explanations, and a signal where more is better
        # only when it lies below the audit's typical value (a steady rerun is no reason for doubt)
        own = [j for j, n in enumerate(names)
               if (n == f"explainer:{u['method']}") or (not n.startswith("explainer:")
                                                        and (n not in BETTER_HIGH or zs[j] < 0))]
        down = sorted((j for j in own if push[j] < 0), key=lambda j: push[j])[:2] \
            if flagged and not found.constant else []
        reasons = [_reason(names[j], u, zs[j], found.centre[j]) for j in down] or \
            (["few explanations of this audit are reliable"] if flagged else [])
        u.update(reliability=float(p), reliable=bool(reliable),
                 verdict=Verdict(flagged, reasons, [signal_name(names[j]) for j in down]))
    m = result.metrics
    m["confidence.reliable_share"] = float(target.mean())
    m["confidence.rules.flagged_fraction"] = float(np.mean([u["rules"].flagged for u in units]))
    rng = ctx.rng("confidence/reliability")
    nan = float("nan")
    m.update(spelled("confidence.validation.auc", nan, nan, nan, always=True) if found.constant else  # too few of
             spelled("confidence.validation.auc", auc(target, found.probability),  # one outcome: nothing to test
                     *clustered_interval(target, found.probability, groups, rng, auc), always=True))
    ece, points = calibration(target, found.probability)
    m.update(spelled("confidence.validation.ece", ece, *clustered_interval(
        target, found.probability, groups, rng, lambda t, p: calibration(t, p)[0]), always=True))
    judged = read(m, "confidence.validation.auc")
    assert judged is not None  # written just above
    result.facts["estimate"] = {
        "constant": bool(found.constant),  # too few of one outcome: no model fitted, every estimate the rate
        # each signal, its push on the log-odds per standard deviation and its mean over the explanations
        "signals": [[n, _plain(c), _plain(float(np.nanmean(signals[:, j]))) if np.isfinite(signals[:, j]).any()
                     else None] for j, (n, c) in enumerate(zip(names, found.coefficients, strict=True))],
        # the reliability diagram: per non-empty bin, its middle, the mean estimate and the observed rate
        "calibration": [[mid, mean, rate] for mid, mean, rate, _ in points]}
    low = judged.low if judged.low is not None else nan
    if not np.isfinite(judged.value) or not np.isfinite(low) or low <= 0.5:
        result.detect(
            "reliability-not-predicted", "The reliability estimate does not tell reliable explanations apart"
            if not found.constant else "Too few explanations of one outcome to estimate reliability",
            (f"{counted(int(target.sum()), 'explanation')} of {len(target)} {'is' if target.sum() == 1 else 'are'} "
             f"reliable: fewer than {MIN_OUTCOME} of one outcome can neither train nor test an estimate, so every "
             f"explanation gets the audit's rate ({percent(float(target.mean()))}) and the flags follow it."
             if found.constant or not np.isfinite(judged.value) else
             f"Out of sample, the estimate ranks reliable above unreliable explanations with AUC "
             f"{with_interval(judged.value, low, judged.high)}, "
             "whose interval reaches chance (0.5): on this model no signal the audit measures predicts which "
             "explanations hold, so check each explanation's measured validity before quoting it."),
            severity="minor",
            citation="EU AI Act (Reg. 2024/1689) Art. 14(4)(b) — awareness of over-reliance on output",
            judged_by=("confidence.validation.auc",), value=judged.value, interval=judged.interval,
            subject="reliability")
    _alternatives(result, units)
    _widening(result, options, units)


def _widening(result: EvidenceResult, options: ConfidenceOptions, units: list[dict[str, Any]]) -> None:
    """Attributions below the validity floor under the held-out rows, widened: how many features each needs
    (chosen on the audit's masking) and whether the widened explanation holds under the held-out rows; their
    records in the order to list them (`facts.widened`)."""
    below = [i for i, u in enumerate(units) if registry.method(u["method"]).attribution
             and u["heldout_validity"] < options.thresholds.validity]
    reached = [i for i in below if units[i]["widened"] is not None]
    holding = [i for i in reached if units[i]["widened"]["heldout_validity"] >= options.thresholds.validity]
    m = result.metrics
    m["confidence.widened.explanations"] = float(len(below))
    m["confidence.widened.reached"] = float(len(reached))
    m["confidence.widened.reliable_share"] = float(len(holding) / len(below)) if below else float("nan")
    # the wider explanations to quote first, then those that reach the floor only where k' was chosen, then none
    first, then = set(holding), set(reached)
    result.facts["widened"] = sorted(below, key=lambda i: 0 if i in first else 1 if i in then else 2)


def _alternatives(result: EvidenceResult, units: list[dict[str, Any]]) -> None:
    """Queries on which no attribution explainer is reliable (measured): the explanation to show instead, the
    most valid under the held-out masking (a set search's, usually); their records in query order
    (`facts.alternatives`)."""
    queries: dict[int, list[int]] = {}
    for i, u in enumerate(units):
        queries.setdefault(u["qi"], []).append(i)
    chosen = []
    for mine in queries.values():
        attributions = [i for i in mine if registry.method(units[i]["method"]).attribution]
        if attributions and not any(units[i]["reliable"] for i in attributions):
            chosen.append(max(mine, key=lambda i: units[i]["heldout_validity"]))
    result.metrics["confidence.attribution_unreliable_queries"] = float(len(chosen))
    result.metrics["confidence.attribution_unreliable_queries_share"] = float(len(chosen) / max(len(queries), 1))
    result.facts["alternatives"] = chosen


def gap_sentence(label: str, found: FlagGap) -> str:
    """The detection's sentence: which way flagged explanations differ, by how much, the two means and the
    interval, in the words and numbers of the table's 'within explainer' row."""
    gap, low, high = _holding(found.gap, found.low, found.high)
    direction = (f"score {figure(abs(gap))} {'lower' if gap > 0 else 'higher'}" if gap != 0 else "score the same")
    return (f"Flagged explanations (by the other criteria) {direction} in {label} than unflagged explanations of the "
            f"same explainers: {figure(found.flagged_mean)} against {figure(found.unflagged_mean)} on average. The "
            f"95% interval of the difference (unflagged minus flagged) is {interval(low, high)}, which includes no "
            f"difference: the flags cannot be relied on to tell explanations of better {label} from worse ones "
            "here.")


def _holding(value: float, low: float, high: float) -> tuple[float, float, float]:
    """The interval widened to hold its point, as `numbers.with_interval` prints it (a percentile interval of a
    resampled statistic can miss the statistic)."""
    return value, min(low, value), max(high, value)


