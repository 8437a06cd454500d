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
from typing import Any, Literal

import numpy as np
from pydantic import Field, field_validator

from auditor.checks.confidence import (
    CRITERIA,
    FlagGap,
    agreement,
    flag_gap,
    score_margin,
    set_overlap,
    set_weights,
    verdict,
)
from auditor.checks.ranking import bootstrap_interval
from auditor.checks.validity import has_order, measure_sets
from auditor.data import RankingData
from auditor.evidence.base import (
    AuditContext,
    EvidenceOptions,
    EvidenceResult,
    Table,
    check_explanation_size,
    size_notes,
)
from auditor.evidence.explainers import (
    attributions,
    build,
    explanation,
    explanation_set,
    judged_method_names,
    method_list,
    methods_validator,
    played_masker,
    with_sections,
)
from auditor.evidence.local_explanations import background_rows_masker, check_background_search
from auditor.executor import split
from auditor.explain import registry
from auditor.explain.base import Attributions, QueryView, set_from_attributions
from auditor.models.capabilities import tree_ensemble
from auditor.numbers import figure, interval, percent
from auditor.words import counted

Criterion = Literal["validity", "agreement", "path_accuracy", "stability", "margin", "additivity"]
HOW_TO_READ = (
    "An explanation is flagged when a reviewer should not rely on it, with every reason that applies: it does not "
    "reproduce the ranking (low validity), explainers that reproduce the ranking at least as well point at "
    "different features (disagreement; disagreeing with a weaker explainer is no reason for doubt), it misses the "
    "features the model's trees actually used for these documents (low decision-path accuracy), a second run of "
    "the same method picks other features (instability), or its numbers do not add up to the model's score "
    "(additivity). A flagged explanation is not necessarily wrong; it needs a second look before it is quoted. "
    "Rankings whose top documents are nearly tied are listed apart: any explanation of them is fragile, whichever "
    "explainer gave it. The last table checks that the flags mean something: explanations flagged for other "
    "reasons should have visibly lower validity and decision-path accuracy than unflagged ones."
)

METRICS = (  # what this kind can emit (EvidencePlugin.metrics; auditor.evidence.base.metric_pattern)
    "confidence.{explanations|excluded_queries|fragile_queries|fragile_queries_share|flagged_fraction}",
    "confidence.flagged_fraction.{ci95_low|ci95_high}",
    "confidence.reason.{criterion}.share",
    "confidence.validation.{measure}_gap",
    "confidence.validation.{measure}_gap.{ci95_low|ci95_high}",
    "confidence.{method}.flagged_fraction",
)


class Thresholds(EvidenceOptions):
    validity: float = Field(0.5, description="Flag when validity (Kendall tau) is below this.")
    agreement: float = Field(0.4, description="Flag when the mean top-k overlap with the other explainers is below.")
    path_accuracy: float = Field(0.6, description="Flag when the top-K AUC against the decision path is below.")
    stability: float = Field(0.6, description="Flag when the overlap with a second seeded run is below.")
    margin: float = Field(0.01, description="Flag when the smallest top-document score gap / score std is "
                                                 "below (a near tie).")
    additivity: float = Field(1e-3, description="Flag when |Σφ − (score − base)| / score range is above.")


class ConfidenceOptions(EvidenceOptions):
    methods: list[str] = method_list(["treeshap5", "lirme5", "exs5", "greedy_cover_eps", "validity_search"],
                                     allowed=judged_method_names,
                                     description="Explainers whose explanations are judged (the registry's "
                                                 "methods but baselines such as RANDOM).")
    k: int = Field(5, ge=1, description="Explanation size (as in local_explanations).")
    queries: int | None = Field(None, ge=1, description="Judge a seeded sample of this many queries (default all).")
    criteria: list[Criterion] = Field(list(Criterion.__args__), min_length=1, description="Criteria applied.")
    thresholds: Thresholds = Thresholds()
    margin_docs: int = Field(5, ge=2, description="Top documents whose score gaps make a ranking fragile.")
    path_top_k: int = Field(5, ge=1, description="K of the decision-path top-K AUC.")
    rerun_fraction: float = Field(1.0, gt=0, le=1, description="Sample size of the stability rerun, as a fraction "
                                                               "of the first run's (1: a new seed only).")
    max_listed: int = Field(30, ge=0, description="Flagged explanations listed in the report.")
    background_rows: int | None = Field(
        None, ge=1, le=1000, description="Background rows the listwise explainers and `background_search` play on "
                                         "(tau averaged over N masked rankings), as in local_explanations. Default: "
                                         "the spec's `masking.rows`; null: the audit's masking.")

    _methods = methods_validator("methods", judged_method_names)

    @field_validator("criteria")
    @classmethod
    def _unique(cls, value: list[Any]) -> list[Any]:
        return list(dict.fromkeys(value))


ConfidenceOptions = with_sections(ConfidenceOptions)  # type: ignore[misc]  # the explainers' option sections


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
    blocks = split(chosen, ctx.workers, most=16)
    payloads = ([(qi, data.X[data.query_slice(qi)], scores[data.query_slice(qi)], data.query_ids[qi],
                  known.get(qi, {})) for qi in block] for block in blocks)
    units: list[dict[str, Any]] = []
    excluded = 0
    with ctx.progress.task(f"Confidence flags ({len(chosen)} queries)", len(chosen)) as ticker:
        outcomes = list(ctx.run_tasks(_judge_block, job, payloads, size=len(chosen), ticker=ticker))
    for block_units, block_excluded in outcomes:
        units.extend(block_units)
        excluded += block_excluded
    _report(result, ctx, options, methods, units, excluded, criteria)
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
    units: list[dict[str, Any]] = []
    excluded = 0
    for qi, X, scores, query_id, known in payload:
        for key, value in known.items():
            ctx.memo(key, lambda value=value: value)
        query = QueryView(X=X, scores=scores, query_id=query_id, background=background)
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
            units.append({"query": query.query_id, "qi": qi, "method": m, "set": sets[m], "measures": measures,
                          "verdict": judged, "fragile": fragile})
        ctx.tick()  # progress: one query done (skipped ones count when the block returns)
    return units, excluded


def _deterministic(method: Any, attrs: dict[str, Attributions]) -> bool:
    """No second run can differ: a deterministic explainer, or a listwise one that enumerated every coalition
    (its exact estimator: the values are the Shapley values themselves)."""
    if method.explainer.deterministic:
        return True
    found = attrs.get(method.explainer.name)
    result = (found.diagnostics or {}).get("listwise") if found is not None else None
    return result is not None and result.estimator == "exact"


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
    metrics["confidence.flagged_fraction"] = float(flagged.mean())
    by_query = [float(np.mean([u["verdict"].flagged for u in units if u["qi"] == qi]))
                for qi in dict.fromkeys(u["qi"] for u in units)]
    low, high = bootstrap_interval(np.asarray(by_query), ctx.rng("confidence/flagged"))
    metrics["confidence.flagged_fraction.ci95_low"], metrics["confidence.flagged_fraction.ci95_high"] = low, high
    per_method = []
    for m in methods:
        mine = np.array([u["verdict"].flagged for u in units if u["method"] == m])
        metrics[f"confidence.{m}.flagged_fraction"] = float(mine.mean())
        reasons = Counter(c for u in units if u["method"] == m for c in u["verdict"].criteria)
        per_method.append([registry.label(m), len(mine), int(mine.sum()), _r(mine.mean()),
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
        title="Explanations not to rely on, with the reasons",
        columns=["query", "explainer", "explanation set", "validity", "reasons"],
        rows=[[u["query"], registry.label(u["method"]), ", ".join(names[f] for f in u["set"]),
               _r(u["measures"]["validity"]), "; ".join(u["verdict"].reasons)] for u in listed],
        note=f"The first {len(listed)} of {int(flagged.sum())} flagged explanations, in query order.", body_rows=6))
    result.records = [{"query": u["query"], "method": u["method"], "selected": [names[f] for f in u["set"]],
                       "flagged": u["verdict"].flagged, "reasons": u["verdict"].reasons, "fragile": u["fragile"],
                       "measures": {k: _r(v, 6) for k, v in u["measures"].items()}} for u in units]
    if "margin" in criteria:
        _fragile(result, options, units)
    _validation(result, ctx, units, criteria)
    worst = max(methods, key=lambda m: metrics[f"confidence.{m}.flagged_fraction"])
    result.summary = (f"{int(flagged.sum())} of {len(units)} explanations flagged ({percent(flagged.mean())}); most "
                      f"often {registry.label(worst)} ({percent(metrics[f'confidence.{worst}.flagged_fraction'])}).")
    if "margin" in criteria:
        result.summary += (f" {int(metrics['confidence.fragile_queries'])} of {len({u['qi'] for u in units})} "
                           "rankings are near ties at the top (listed apart).")
    unproven = [label for measure, label in VALIDATED
                if np.isfinite(metrics.get(f"confidence.validation.{measure}_gap.ci95_low", np.nan))
                and metrics[f"confidence.validation.{measure}_gap.ci95_low"] <= 0]
    if unproven:
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
        rows=[[u["query"], _r(u["measures"]["margin"])] for u in listed],
        note=f"{len(fragile)} of {len(queries)} queries have top documents whose scores differ by less than "
             f"{options.thresholds.margin:g} of the query's score spread: the model barely prefers one to the "
             "next, so any explanation of their order is fragile. This is a property of the ranking, not of an "
             "explainer, and does not flag explanations." + (f" The first {len(listed)} are listed."
                                                                 if len(listed) < len(fragile) else "")))


def _validation(result: EvidenceResult, ctx: AuditContext, units: list[dict[str, Any]], criteria: set[str]) -> None:
    """Flags earn their keep: unflagged minus flagged mean validity (flags from every criterion but validity) and
    mean decision-path accuracy (every criterion but path accuracy), compared within each explainer, with
    query-clustered bootstrap intervals; the pooled comparison and the all-criteria one are shown beside it. Every
    row of the table shows the two means its gap is the difference of, and the detection quotes that same row."""
    rng = ctx.rng("confidence/validation")
    cluster = np.array([u["qi"] for u in units])
    method = np.array([u["method"] for u in units])
    rows = []
    for measure, label in VALIDATED:
        values = np.array([u["measures"].get(measure, float("nan")) for u in units], dtype=np.float64)
        if not np.isfinite(values).any():
            continue
        keep = np.isfinite(values)
        independent = np.array([any(c != measure for c in u["verdict"].criteria) for u in units])
        every = np.array([u["verdict"].flagged for u in units])
        for flags, source, strata, comparison in (
                (independent, f"all criteria except {measure}", method, "within explainer"),
                (independent, f"all criteria except {measure}", None, "pooled"),
                (every, "all criteria", method, "within explainer")):
            found = flag_gap(values, flags, cluster, rng, strata=strata)
            gap, low, high = found.gap, found.low, found.high
            if source.startswith("all criteria except") and comparison == "within explainer":
                result.metrics[f"confidence.validation.{measure}_gap"] = gap
                result.metrics[f"confidence.validation.{measure}_gap.ci95_low"] = low
                result.metrics[f"confidence.validation.{measure}_gap.ci95_high"] = high
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
            rows.append([label, source, comparison, int((used & flags).sum()), int((used & ~flags).sum()),
                         _r(found.flagged_mean, 6), _r(found.unflagged_mean, 6), _r(gap, 6),
                         interval(*_holding(gap, low, high)[1:]) if np.isfinite(low) else None])
    if rows:
        result.tables.append(Table(
            title="Do the flags earn their keep?",
            columns=["measure", "flags from", "comparison", "flagged", "unflagged", "mean flagged",
                     "mean unflagged", "gap (unflagged − flagged)", "95% interval"],
            rows=rows,
            note="A positive gap whose interval excludes 0 means flagged explanations really are worse. Flags from "
                 "'all criteria except' the measure's own criterion, so the gap is not true by construction. "
                 "'Within explainer', the headline figure, compares each flagged explanation with the unflagged "
                 "explanations of its own explainer: 'mean unflagged' there is each explainer's unflagged mean, "
                 "weighted by how many of its explanations are flagged (explainers with no flagged or no unflagged "
                 "explanation are left out of the counts and means). 'Pooled' mixes explainers, so an explainer "
                 "that is often flagged yet strong on the measure pulls it down. In every row the gap is mean "
                 "unflagged − mean flagged. Intervals resample queries (2000 bootstrap resamples)."))


def gap_sentence(label: str, found: FlagGap) -> str:
    """The detection's sentence: which way flagged explanations differ, by how much, the two means and the
    interval, in the words and numbers of the table's 'within explainer' row."""
    gap, low, high = _holding(found.gap, found.low, found.high)
    direction = (f"score {figure(abs(gap))} {'lower' if gap > 0 else 'higher'}" if gap != 0 else "score the same")
    return (f"Flagged explanations (by the other criteria) {direction} in {label} than unflagged explanations of the "
            f"same explainers: {figure(found.flagged_mean)} against {figure(found.unflagged_mean)} on average. The "
            f"95% interval of the difference (unflagged minus flagged) is {interval(low, high)}, which includes no "
            "difference: the flags cannot be relied on to tell good explanations from bad ones here.")


def _holding(value: float, low: float, high: float) -> tuple[float, float, float]:
    """The interval widened to hold its point, as `numbers.with_interval` prints it (a percentile interval of a
    resampled statistic can miss the statistic)."""
    return value, min(low, value), max(high, value)


def _r(value: float | None, digits: int = 4) -> float | None:
    return None if value is None or not np.isfinite(value) else round(float(value), digits)
