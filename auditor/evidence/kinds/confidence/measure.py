"""Evidence `confidence`: which explanations a reviewer should not rely on, and why.

Per (query, explainer), five criteria (auditor/checks/confidence.py): validity below a threshold; disagreement with
the explainers that reproduce this query's ranking at least as well; decision-path accuracy below a threshold (tree
models); instability across a second seeded run; attributions that do not add up to the score. A fragile ranking
(the top documents' scores nearly tied) is a property of the query, not of an explanation: it is reported apart.
The explanations are the ones `local_explanations` shows (shared through the audit's memo when both run with the
same options). The section ends with the check that the flags earn their keep: flagged explanations should have
lower validity and decision-path accuracy than unflagged ones, measured with the criterion under test left out.
"""

from __future__ import annotations

from collections import Counter
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
from auditor.evidence.base import (
    AuditContext,
    EvidenceResult,
    Figure,
    Table,
    check_explanation_size,
    size_notes,
)
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
from auditor.evidence.kinds.confidence.options import ConfidenceOptions, Thresholds
from auditor.explain import registry
from auditor.explain.base import Attributions, QueryView, set_from_attributions
from auditor.inputs.data import RankingData
from auditor.models.capabilities import tree_ensemble

HOW_TO_READ = (
    "Each explanation gets an estimated reliability: the probability that it reproduces the query's ranking under "
    "masking it was not chosen on (held-out background rows) and, for tree models, that it names the features the "
    "trees actually used. The estimate reads signals every explanation has — its validity on the audit's masking, "
    "its validity with a few other background rows, its overlap with the query's most valid explanation and with "
    "TreeSHAP's, a second run's agreement, near ties, the query's size "
    "and score spread, the explainer — and is fitted leaving whole queries out, so no explanation judges itself. "
    "An explanation is flagged when its estimate is below one half, with the two signals that pull it down most. "
    "A flagged explanation is not necessarily wrong; it needs a second look before it is quoted. The estimate's "
    "own accuracy (AUC, calibration) is measured and shown; where no attribution explainer is reliable on a query, "
    "the most valid explanation of that query is named instead. Rankings whose top documents are nearly tied are "
    "listed apart. The last table checks that the flags mean something: flagged explanations should have lower "
    "validity under the held-out masking and lower decision-path accuracy than unflagged ones."
)









def check(options: ConfidenceOptions, data: RankingData) -> None:
    """Sets and top-K lists that leave features out (a set of every feature is valid whatever the explainer)."""
    check_explanation_size(options.k, data.n_features, where="k")
    check_explanation_size(options.path_top_k, data.n_features, where="path_top_k")
    check_background_search(options)


def run(ctx: AuditContext, options: ConfidenceOptions) -> EvidenceResult:
    result = EvidenceResult(name="confidence", how_to_read=HOW_TO_READ)
    data, scores, masker = ctx.data, ctx.scores(), ctx.masker()
    result.notes += size_notes([options.k], data.n_features)
    ensemble, _ = tree_ensemble(ctx.model)
    methods = [m for m in options.methods if ensemble is not None or not registry.method(m).explainer.needs_trees]
    if len(methods) < len(options.methods):
        result.notes.append("TreeSHAP needs a tree model: not judged.")
    criteria = set(options.criteria)
    if ensemble is None and "path_accuracy" in criteria:
        criteria.discard("path_accuracy")
        result.notes.append("Decision-path accuracy needs a tree model: that criterion is not applied.")
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
    before = 0
    if units:
        _reliability(result, ctx, options, methods, units)
        before = len(result.tables)
    _report(result, ctx, options, methods, units, excluded, criteria)
    if before:  # the estimate's tables after the flags per explainer and the flagged list, which readers look for first
        estimate_tables = result.tables[:before]
        del result.tables[:before]
        result.tables[2:2] = estimate_tables
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
    from auditor.explain.perturb import SamplerCache

    options, methods, criteria, ensemble = job.options, job.methods, job.criteria, job.ensemble
    masker, background = ctx.masker(), ctx.reference_rows()
    rows_masker = background_rows_masker(ctx, options.background_rows)
    explainers = build(options)
    rerun = build(options, scale=options.rerun_fraction)
    chosen = {m: registry.method(m) for m in methods}
    sampler = SamplerCache().get(background) if any(c.explainer.surrogate for c in chosen.values()) else None
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


WIDEN_TO = 3  # an attribution below the validity floor is widened up to this many times k features
WIDEN_LISTED = 8  # widened attributions the section shows; Appendix B lists up to `max_listed` (all in evidence.json)


def widest(k: int, n_features: int) -> int:
    """The most features a widened explanation may name: WIDEN_TO·k, and never more than half the features (an
    explanation naming most of them explains nothing)."""
    return min(WIDEN_TO * k, n_features // 2)


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


def _low(metrics: dict[str, float], name: str) -> float:
    """The lower end of `name`'s interval; NaN when it has none."""
    found = read(metrics, name)
    return found.low if found is not None and found.low is not None else float("nan")


def _report(result: EvidenceResult, ctx: AuditContext, options: ConfidenceOptions, methods: list[str],
            units: list[dict[str, Any]], excluded: int, criteria: set[str]) -> None:
    metrics = result.metrics
    metrics["confidence.explanations"] = float(len(units))
    metrics["confidence.excluded_queries"] = float(excluded)
    if not units:
        result.summary = "No query with an order to explain."
        return
    names = ctx.data.feature_names
    flagged = np.array([u["verdict"].flagged for u in units])
    by_query = [float(np.mean([u["verdict"].flagged for u in units if u["qi"] == qi]))
                for qi in dict.fromkeys(u["qi"] for u in units)]
    low, high = bootstrap_interval(np.asarray(by_query), ctx.rng("confidence/flagged"))
    metrics.update(spelled("confidence.flagged_fraction", flagged.mean(), low, high, always=True))
    per_method = []
    for m in methods:
        mine = np.array([u["verdict"].flagged for u in units if u["method"] == m])
        metrics[f"confidence.{m}.flagged_fraction"] = float(mine.mean())
        reasons = Counter(c for u in units if u["method"] == m for c in u["verdict"].criteria)
        per_method.append([registry.label(m), len(mine), int(mine.sum()), stored(mine.mean()),
                           ", ".join(f"{c} {n}" for c, n in reasons.most_common()) or "—"])
    for criterion in CRITERIA:
        if criterion in criteria and criterion != "margin":
            metrics[f"confidence.reason.{criterion}.share"] = float(np.mean(
                [criterion in u["verdict"].criteria for u in units]))
    result.tables.append(Table(
        title=f"Flagged explanations per explainer (k = {options.k})",
        columns=["explainer", "explanations", "flagged", "share flagged", "reasons (count)"], rows=per_method,
        note=f"{counted(len({u['qi'] for u in units}), 'query')}; {excluded} left out (fewer than two documents or "
             f"all scores tied). Thresholds: " + ", ".join(f"{c} {getattr(options.thresholds, c):g}" for c in CRITERIA
                                                if c in criteria and c != "margin") + "."))
    listed = [u for u in units if u["verdict"].flagged][:options.max_listed]
    result.tables.append(Table(
        # a list cut at max_listed says so in its title: "every row is in Appendix B" then reads as the list's rows
        title="Explanations not to rely on, with the reasons" + (
            f" (the first {len(listed)} of {int(flagged.sum())})" if len(listed) < int(flagged.sum()) else ""),
        columns=["query", "explainer", "explanation set", "estimated reliability", "validity", "reasons"],
        rows=[[u["query"], registry.label(u["method"]), ", ".join(names[f] for f in u["set"]),
               stored(u.get("reliability")), stored(u["measures"]["validity"]), "; ".join(u["verdict"].reasons)]
              for u in listed],
        note=(f"The first {len(listed)} of {int(flagged.sum())} flagged explanations, in query order (every one is "
              "in evidence.json)." if len(listed) < int(flagged.sum()) else
              f"All {len(listed)} flagged explanations, in query order."), body_rows=6))
    result.records = [{"query": u["query"], "method": u["method"], "selected": [names[f] for f in u["set"]],
                       "flagged": u["verdict"].flagged, "reasons": u["verdict"].reasons, "fragile": u["fragile"],
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
        _fragile(result, options, units)
    _validation(result, ctx, units)
    most = max(metrics[f"confidence.{m}.flagged_fraction"] for m in methods)
    worst = [registry.label(m) for m in methods if metrics[f"confidence.{m}.flagged_fraction"] == most]
    result.summary = (f"{int(flagged.sum())} of {len(units)} explanations flagged ({percent(flagged.mean())}); most "
                      f"often {' and '.join(worst)} ({percent(most)}{' each' if len(worst) > 1 else ''})."
                      if flagged.any() else f"None of {len(units)} explanations is flagged.")
    if "margin" in criteria:
        result.summary += (f" {int(metrics['confidence.fragile_queries'])} of {len({u['qi'] for u in units})} "
                           "rankings are near ties at the top (listed apart).")
    judged = read(metrics, "confidence.validation.auc")
    if judged is not None and np.isfinite(judged.value):
        result.summary += (" The reliability estimate behind the flags ranks reliable above unreliable explanations "
                           "with AUC " + with_interval(judged.value, judged.low, judged.high) + " out of sample.")
    lost = int(metrics.get("confidence.attribution_unreliable_queries", 0))
    if lost:
        result.summary += (f" On {counted(lost, 'query')} no attribution explainer is reliable: the table names "
                           "the explanation to show instead.")
    below = int(metrics.get("confidence.widened.explanations", 0))
    if below:
        holding = round(metrics["confidence.widened.reliable_share"] * below)
        result.summary += (f" Of {counted(below, 'attribution')} below the validity floor, {holding} "
                           f"{'holds' if holding == 1 else 'hold'} with a few more of the same top features (listed).")
    auc_value, auc_low, auc_high = (judged.value, judged.low, judged.high) if judged is not None else \
        (np.nan, np.nan, np.nan)
    if "confidence.reliable_share" in metrics and not np.isfinite(auc_value):
        reliable = metrics["confidence.reliable_share"]
        result.summary = (f"Reliability could not be estimated: measured on the held-out masking, "
                          f"{percent(reliable)} of the explanations are reliable, too few of one outcome (fewer than "
                          f"{MIN_OUTCOME}) to fit or test an estimate, so every explanation gets that rate. "
                          + result.summary)
    elif auc_low is not None and np.isfinite(auc_low) and auc_low <= 0.5:
        result.summary = ("No signal the audit measures predicts which explanations hold: the reliability estimate's "
                          f"AUC {with_interval(auc_value, auc_low, auc_high)} "
                          "reaches chance (0.5), so check each explanation's measured validity before quoting it. "
                          + result.summary)
    gap_low = {label: _low(metrics, f"confidence.validation.{measure}_gap") for measure, label in VALIDATED}
    unproven = [label for label, low in gap_low.items() if np.isfinite(low) and low <= 0]
    proven = [label for label, low in gap_low.items() if low > 0]
    if unproven and proven:
        result.summary = (f"The flags single out explanations of worse {' and '.join(proven)}, but not of worse "
                          f"{' or '.join(unproven)} (that gap's 95% interval includes no difference): read a flag as "
                          f"a warning about {' and '.join(proven)} only. " + result.summary)
    elif unproven:
        result.summary = ("The flags do not single out worse explanations here: flagged and unflagged explanations "
                          f"cannot be told apart by {' or '.join(unproven)} (the gap's 95% interval includes no "
                          "difference), so treat the flags as hints, not as a verdict. " + result.summary)


VALIDATED = (("validity", "validity"), ("path_accuracy", "decision-path accuracy (top-K AUC)"))


def _fragile(result: EvidenceResult, options: ConfidenceOptions, units: list[dict[str, Any]]) -> None:
    """Rankings whose top documents are nearly tied: a tiny change reorders them, whatever explains them."""
    queries = {u["qi"]: u for u in units}
    fragile = [u for u in queries.values() if u["fragile"]]
    result.metrics["confidence.fragile_queries"] = float(len(fragile))
    result.metrics["confidence.fragile_queries_share"] = float(len(fragile) / len(queries))
    listed = fragile[:options.max_listed]
    result.tables.append(Table(
        title="Rankings too close to call at the top",
        columns=["query", f"smallest score gap among the top {options.margin_docs} (share of the score spread)"],
        rows=[[u["query"], stored(u["measures"]["margin"])] for u in listed],
        note=f"{len(fragile)} of {len(queries)} queries have top documents whose scores differ by less than "
             f"{options.thresholds.margin:g} of the query's score spread: the model barely prefers one to the "
             "next, so any explanation of their order is fragile. This is a property of the ranking, not of an "
             "explainer, and does not flag explanations." + (f" The first {len(listed)} are listed."
                                                                 if len(listed) < len(fragile) else "")))


def _validation(result: EvidenceResult, ctx: AuditContext, units: list[dict[str, Any]]) -> None:
    """Flags earn their keep: unflagged minus flagged mean of what makes an explanation reliable, measured apart
    from every signal the estimate uses — validity under the held-out masking, and decision-path accuracy (tree
    models) — within each explainer (the headline) and pooled, with query-clustered bootstrap intervals. Every row
    shows the two means its gap is the difference of, and the detection quotes that same row."""
    rng = ctx.rng("confidence/validation")
    cluster = np.array([u["qi"] for u in units])
    method = np.array([u["method"] for u in units])
    flags = np.array([u["verdict"].flagged for u in units])
    rows = []
    for measure, label in VALIDATED:
        values = np.array([u["heldout_validity"] if measure == "validity" else
                           u["measures"].get(measure, float("nan")) for u in units], dtype=np.float64)
        if not np.isfinite(values).any():
            continue
        keep = np.isfinite(values)
        for strata, comparison in ((method, "within explainer"), (None, "pooled")):
            found = flag_gap(values, flags, cluster, rng, strata=strata)
            gap, low, high = found.gap, found.low, found.high
            if comparison == "within explainer" and not np.isfinite(gap):  # nothing to compare: not measured
                result.unmeasured[f"confidence.validation.{measure}_gap"] = (
                    f"no explainer had both flagged and unflagged explanations on these {len(set(cluster))} "
                    "queries, so the flags cannot be compared with the rest (audit more queries: "
                    "`queries` of confidence)")
            elif comparison == "within explainer":
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
            rows.append([label, comparison, int((used & flags).sum()), int((used & ~flags).sum()),
                         stored(found.flagged_mean, 6), stored(found.unflagged_mean, 6), stored(gap, 6),
                         interval(*_holding(gap, low, high)[1:]) if np.isfinite(low) else None])
    if rows:
        result.tables.append(Table(
            title="Do the flags earn their keep?",
            columns=["measure", "comparison", "flagged", "unflagged", "mean flagged", "mean unflagged",
                     "gap (unflagged − flagged)", "95% interval"],
            rows=rows,
            note="A positive gap whose interval excludes 0 means flagged explanations really are worse. Validity here "
                 "is measured under the held-out masking (background rows no explanation was chosen on), not the "
                 "audit's masking the estimate reads, so the gap is not true by construction. 'Within explainer', "
                 "the headline figure, compares each flagged explanation with the unflagged explanations of its own "
                 "explainer: 'mean unflagged' there is each explainer's unflagged mean, weighted by how many of its "
                 "explanations are flagged (explainers with no flagged or no unflagged explanation are left out of "
                 "the counts and means). 'Pooled' mixes explainers. In every row the gap is mean unflagged − mean "
                 "flagged. Intervals resample queries (2000 bootstrap resamples)."))


SIGNALS = {  # the estimate's signals: a short name, and how each reads as a reason when low and when high
    "validity": ("validity", "validity {value} on the audit's masking (typical {typical})",
                 "validity {value} on the audit's masking, above the typical {typical}"),
    "robust_validity": ("validity on other rows", "validity {value} on other rows (typical {typical})",
                        "validity {value} on other rows, above the typical {typical}"),
    "agreement_best": ("agreement with the best", "shares {share} of its features with the query's best "
                                                  "(typical {typical_share})",
                       "shares {share} of its features with the query's best"),
    "agreement_tree": ("agreement with TreeSHAP", "shares {share} of its features with TreeSHAP's (typical "
                                                  "{typical_share})",
                       "shares {share} of its features with TreeSHAP's"),
    "stability": ("stability", "a rerun keeps {share} of its features (typical {typical_share})",
                  "a rerun keeps {share} of its features"),
    "margin": ("near tie", "the top documents are nearly tied", "the top documents are far apart"),
    "mass": ("attribution mass", "its features hold {share} of the attribution (typical {typical_share})",
             "its features hold {share} of the attribution"),
    "docs": ("query size", "a small query ({docs} documents)", "a large query ({docs} documents)"),
    "spread": ("score spread", "scores close together (spread {value})", "scores spread wide ({value})"),
}


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


def signal_name(signal: str) -> str:
    """A signal's short name for tables (an explainer indicator: the explainer's label)."""
    if signal.startswith("explainer:"):
        return "explainer " + registry.label(signal.removeprefix("explainer:"))
    return SIGNALS[signal][0]


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
    ece_read = read(m, "confidence.validation.ece")
    assert judged is not None and ece_read is not None  # written just above
    result.tables.append(Table(
        title="How well the reliability estimate predicts",
        columns=["measure", "value", "95% interval"],
        rows=[["AUC (out of sample)", stored(judged.value), interval(judged.low, judged.high)],
              ["expected calibration error", stored(ece), interval(ece_read.low, ece_read.high)],
              ["share of explanations reliable (measured)", percent(m["confidence.reliable_share"]), None],
              ["share flagged (estimate below " + figure(options.flag_below) + ")",
               percent(float(np.mean([u["verdict"].flagged for u in units]))), None],
              ["share the rule-based criteria would flag", percent(m["confidence.rules.flagged_fraction"]), None]],
        note=f"Reliable: validity at least {figure(options.thresholds.validity)} under {options.heldout_rows} "
             "held-out background rows" + (f" and decision-path accuracy at least "
                                           f"{figure(options.thresholds.path_accuracy)}"
                                           if any("path_accuracy" in u["measures"] for u in units) else "")
             + ". The estimate is a logistic regression on the signals below, fitted with leave-queries-out "
             "cross-validation (5 folds of whole queries): every explanation's estimate comes from a model that "
             "never saw its query. AUC 0.5 is chance, 1 a perfect ranking of reliable above unreliable; the "
             "calibration error is the mean gap between estimated and observed reliability over ten bins. "
             "Intervals resample queries (2000 bootstrap resamples)."))
    result.tables.append(Table(
        title="What the estimate reads (its signals)",
        columns=["signal", "push on the log-odds per standard deviation", "mean"],
        rows=[[signal_name(n), stored(c, 4),
               stored(float(np.nanmean(signals[:, j])) if np.isfinite(signals[:, j]).any() else None, 4)]
              for j, (n, c) in enumerate(zip(names, found.coefficients, strict=True))],
        note="Positive: the signal raises the estimated reliability. validity: on the audit's masking; "
             f"validity on other rows: under {options.robustness_rows} background rows of their own draw; "
             "agreement_best: top-k overlap with the query's most valid explanation; agreement with TreeSHAP: "
             "top-k overlap with TreeSHAP's explanation of the query (tree models; it reads the trees' paths); "
             "stability: overlap with a "
             "second seeded run (1 for deterministic explainers); margin: log10 of the top documents' smallest "
             "score gap; mass: the chosen features' share of the attribution (set searches: filled with the "
             "mean); docs: log2 of the query's documents; spread: the standard deviation of its scores; "
             "explainer: which explainer gave it." + (f" Fewer than {MIN_OUTCOME} explanations had one of the two "
                                                      "outcomes, so no model was fitted: the estimate is the "
                                                      "observed rate." if found.constant else "")))
    if points:
        result.figures.append(Figure(
            title="Reliability diagram of the estimate",
            chart="line_chart", data={
                "x": [mid for mid, _, _, _ in points],
                "series": {"observed share reliable": [rate for _, _, rate, _ in points],
                           "mean estimate (perfect calibration)": [mean for _, mean, _, _ in points]},
                "xlabel": "estimated reliability (bins of 0.1, by their middle)", "ylabel": "share reliable"},
            caption="Each point is a bin of explanations by their estimated reliability: on the diagonal, an "
                    "estimate of 0.7 means 7 in 10 such explanations are reliable.",
            description=f"Reliability diagram over {len(points)} bins; expected calibration error {figure(ece)}."))
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
    _alternatives(result, ctx, options, units)
    _widening(result, ctx, options, units)


def _widening(result: EvidenceResult, ctx: AuditContext, options: ConfidenceOptions,
              units: list[dict[str, Any]]) -> None:
    """Attributions below the validity floor under the held-out rows, widened: how many features each needs
    (chosen on the audit's masking) and whether the widened explanation holds under the held-out rows."""
    below = [u for u in units if registry.method(u["method"]).attribution
             and u["heldout_validity"] < options.thresholds.validity]
    reached = [u for u in below if u["widened"] is not None]
    holding = [u for u in reached if u["widened"]["heldout_validity"] >= options.thresholds.validity]
    m = result.metrics
    m["confidence.widened.explanations"] = float(len(below))
    m["confidence.widened.reached"] = float(len(reached))
    m["confidence.widened.reliable_share"] = float(len(holding) / len(below)) if below else float("nan")
    if not below:
        return
    names = ctx.data.feature_names
    # the wider explanations to quote first, then those that reach the floor only where k' was chosen, then none
    below.sort(key=lambda u: 2 if u["widened"] is None else
               0 if u["widened"]["heldout_validity"] >= options.thresholds.validity else 1)
    rows = [[u["query"], registry.label(u["method"]), stored(u["heldout_validity"]),
             u["widened"]["k"] if u["widened"] else None,
             ", ".join(names[f] for f in u["widened"]["set"][options.k:]) if u["widened"] else "none within "
             f"{widest(options.k, ctx.data.n_features)} features",
             stored(u["widened"]["heldout_validity"]) if u["widened"] else None] for u in below]
    result.tables.append(Table(
        title="Attributions that need more features",
        columns=["query", "explainer", f"validity with {options.k} features (held-out masking)", "features needed",
                 "features added", "validity with them (held-out masking)"],
        rows=rows[:options.max_listed], body_rows=WIDEN_LISTED,  # the section shows the first; Appendix B them all
        note=f"{counted(len(below), 'attribution explanation')} fall below validity "
             f"{figure(options.thresholds.validity)} under the held-out masking with {options.k} features. Taking "
             f"more of the same attribution's top features (up to {widest(options.k, ctx.data.n_features)}: "
             f"{WIDEN_TO} × {options.k} and at most half the features; the fewest that reach "
             f"{figure(options.thresholds.validity)} on the audit's masking and with {options.robustness_rows} other "
             f"background rows), {len(reached)} reach it there and "
             f"{len(holding)} ({percent(len(holding) / len(below))}) also hold under the held-out rows, which did "
             "not choose the number: for those, quote the wider explanation."
             + (f" The first {options.max_listed} are listed (every one is in evidence.json)."
                if len(below) > options.max_listed else "")))


def _alternatives(result: EvidenceResult, ctx: AuditContext, options: ConfidenceOptions,
                  units: list[dict[str, Any]]) -> None:
    """Queries on which no attribution explainer is reliable (measured): the explanation to show instead, the
    most valid under the held-out masking (a set search's, usually)."""
    names = ctx.data.feature_names
    queries: dict[int, list[dict[str, Any]]] = {}
    for u in units:
        queries.setdefault(u["qi"], []).append(u)
    rows = []
    for mine in queries.values():
        attributions = [u for u in mine if registry.method(u["method"]).attribution]
        if attributions and not any(u["reliable"] for u in attributions):
            best = max(mine, key=lambda u: u["heldout_validity"])
            rows.append([best["query"], registry.label(best["method"]), ", ".join(names[f] for f in best["set"]),
                         stored(best["heldout_validity"]), "yes" if best["reliable"] else "no"])
    result.metrics["confidence.attribution_unreliable_queries"] = float(len(rows))
    result.metrics["confidence.attribution_unreliable_queries_share"] = float(len(rows) / max(len(queries), 1))
    if rows:
        result.tables.append(Table(
            title="Queries no attribution explains: the explanation to use instead",
            columns=["query", "use the explanation of", "features", "validity (held-out masking)", "reliable"],
            rows=rows[:options.max_listed],
            note=f"{counted(len(rows), 'query')} of {len(queries)}: no attribution explainer's top {options.k} "
                 "features reproduce the ranking under the held-out masking; the most valid explanation of the "
                 "query is named instead." + (f" The first {options.max_listed} are listed."
                                              if len(rows) > options.max_listed else "")))


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


