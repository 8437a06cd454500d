"""Evidence `local_explanations`: every local explainer of the papers on each audited query, with the validity
and completeness of the explanation sets they produce (paper 000, Table 2 layout), the effect of k, and how close
each comes to the best possible set (exhaustive optimum) when that is affordable."""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from auditor.checks.ranking import bootstrap_interval
from auditor.checks.validity import has_order, measure_sets
from auditor.data import RankingData
from auditor.evidence.base import (
    AuditContext,
    EvidenceResult,
    Figure,
    Table,
    check_explanation_size,
    representative_query,
    representative_text,
    size_notes,
)
from auditor.evidence.explainers import (
    attributions,
    attributions_many,
    background_rows_masker,
    build,
    check_background_search,
    explanation_set,
    is_tree,
    narrowed_searches,
    played_masker,
    query_spreads,
)
from auditor.evidence.options.local_explanations import LocalExplanationsOptions
from auditor.executor import split
from auditor.explain import registry
from auditor.explain.base import Attributions, QueryView, set_from_attributions
from auditor.numbers import figure, interval, percent, with_interval

OPTIMUM_LABEL = "Exhaustive optimum"
BATCH_QUERIES = 64  # queries whose LIRME/EXS samples are drawn together and scored in few large model calls


def label(method: str) -> str:
    """A method's report label (the exhaustive optimum is not a method one chooses)."""
    return OPTIMUM_LABEL if method == "optimum" else registry.label(method)






HOW_TO_READ = (
    "An explanation set is the handful of features an explainer says the ranking rests on. Validity asks: if the "
    "model saw only these features (the others replaced by their average), would it still rank the query's "
    "documents the same way? It is Kendall's tau between the two orders: 1 = the same order, 0 = unrelated. "
    "Completeness asks the reverse: with these features removed, how much of the order is lost (higher = more "
    "lost, so the set really carries the ranking). It is minus Kendall's tau between the model's order and the "
    "order without the set, so it is negative when the remaining features still rank the documents much as the "
    "model does: the ranking does not rest on the set alone (common when features are correlated or many share "
    "the work). Each figure is computed per query, then averaged. The "
    "exhaustive optimum is the best validity any set of the same size can reach, where it was affordable."
)



@dataclass
class _Tally:
    """Per method and k: validity/completeness per query, chosen sets, rows and seconds."""

    validity: list[float] = field(default_factory=list)
    completeness: list[float] = field(default_factory=list)
    sets: list[tuple[int, ...]] = field(default_factory=list)
    rows: int = 0
    seconds: float = 0.0
    validity_rows: list[float] = field(default_factory=list)  # under the background rows (main k only)
    completeness_rows: list[float] = field(default_factory=list)

    def extend(self, other: _Tally) -> None:
        """Append another block's queries (blocks arrive in query order)."""
        self.validity.extend(other.validity)
        self.completeness.extend(other.completeness)
        self.validity_rows.extend(other.validity_rows)
        self.completeness_rows.extend(other.completeness_rows)
        self.sets.extend(other.sets)
        self.rows += other.rows
        self.seconds += other.seconds




def check(options: LocalExplanationsOptions, data: RankingData) -> None:
    """`k` and the sizes of the effect-of-k curve a user chose leave features out (the default curve is cut to the
    data's width in `run`, with a note)."""
    check_explanation_size(options.k, data.n_features, where="k")
    check_background_search(options)
    if "k_curve" in options.model_fields_set:
        for index, k in enumerate(options.k_curve):
            check_explanation_size(k, data.n_features, where=f"k_curve.{index}")


def run(ctx: AuditContext, options: LocalExplanationsOptions) -> EvidenceResult:
    data = ctx.data
    result = EvidenceResult(name="local_explanations", how_to_read=HOW_TO_READ)
    check(options, data)
    too_wide = [k for k in options.k_curve if k >= data.n_features]
    if too_wide:
        result.notes.append(f"The effect-of-k curve leaves out k = {', '.join(map(str, too_wide))}: the data has "
                            f"only {data.n_features} features.")
        options = options.model_copy(update={"k_curve": [k for k in options.k_curve if k < data.n_features]})
    result.notes += size_notes(sorted({options.k, *options.k_curve}), data.n_features)
    methods = [m for m in options.methods if not (registry.method(m).explainer.needs_trees and not is_tree(ctx))]
    skipped = [m for m in options.methods if m not in methods]
    if skipped:
        result.notes.append(f"Not run on a '{ctx.model.kind}' model (needs trees): {', '.join(skipped)}.")
    sizes = sorted({options.k, *options.k_curve})
    scores = ctx.scores()
    chosen = ctx.query_sample(options.queries, "local/queries")
    figure_query = representative_query(data.query_sizes(), chosen) if any(
        not registry.method(m).explainer.per_document for m in methods if registry.method(m).attribution) else None
    job = _Job(options=options, methods=methods, sizes=sizes, feature_names=data.feature_names,
               figure_query=figure_query)
    spread = _screen_spread(ctx, options, methods, chosen, result)
    blocks = split(chosen, ctx.workers, most=BATCH_QUERIES)
    payloads = ([(qi, data.X[data.query_slice(qi)], scores[data.query_slice(qi)], data.query_ids[qi],
                  None if spread is None else spread[qi]) for qi in block] for block in blocks)
    tallies: dict[tuple[str, int], _Tally] = {}
    records: list[dict[str, Any]] = []
    excluded = 0
    agreement: dict[str, list[float]] = {}
    coalitions: list[int] = []
    underdetermined: list[bool] = []
    listwise = _Block(excluded=0, records=[], tallies={})  # the listwise parts of every block, gathered
    with ctx.progress.task(f"Local explanations ({len(chosen)} queries)", len(chosen)) as ticker:
        outcomes = list(ctx.run_tasks(_explain_block, job, payloads, size=len(chosen), ticker=ticker))
    for block in outcomes:
        excluded += block.excluded
        records.extend(block.records)
        coalitions.extend(block.coalitions)
        underdetermined.extend(block.underdetermined)
        for method, values in block.agreement.items():
            agreement.setdefault(method, []).extend(values)
        for name, values in block.reference.items():
            listwise.reference.setdefault(name, []).extend(values)
        for name, count in block.reference_skipped.items():
            listwise.reference_skipped[name] = listwise.reference_skipped.get(name, 0) + count
        listwise.reference_rows += block.reference_rows
        listwise.figure.update(block.figure)
        for key, part in block.tallies.items():
            tallies.setdefault(key, _Tally()).extend(part)
    _report_counts(result, methods, tallies)
    _report(result, ctx, options, methods, sizes, tallies, excluded, len(chosen))
    _report_convergence(result, ctx, options, agreement, coalitions, underdetermined)
    _report_listwise(result, ctx, options, listwise, figure_query)
    result.records = records
    for record in records:  # per-query values at the evidence's k, for per-query policy rules
        result.per_query.setdefault(f"local.{record['method']}.validity", {})[record["query"]] = record["validity"]
    return result


@dataclass(frozen=True)
class _Job:
    """What every block of queries needs besides its rows (shipped with each task: small)."""

    options: LocalExplanationsOptions
    methods: list[str]
    sizes: list[int]
    feature_names: list[str]
    figure_query: int | None = None  # the query whose listwise attributions are drawn


@dataclass
class _Block:
    """One block's results: its queries' records and tallies in query order, for the audit to append."""

    excluded: int
    records: list[dict[str, Any]]
    tallies: dict[tuple[str, int], _Tally]
    agreement: dict[str, list[float]] = field(default_factory=dict)  # shap1/shap5: predicted rerun agreement a query
    coalitions: list[int] = field(default_factory=list)  # KernelSHAP's coalitions per explained document
    underdetermined: list[bool] = field(default_factory=list)  # per explained document (fewer coalitions than 2M)
    reference: dict[str, list[dict[str, float]]] = field(default_factory=dict)  # listwise: agreement per query
    reference_skipped: dict[str, int] = field(default_factory=dict)  # listwise: queries with too many players
    reference_rows: int = 0
    figure: dict[str, Any] = field(default_factory=dict)  # listwise results of the figure's query, by explainer


def _explain_block(ctx: AuditContext, job: _Job, payload: list[tuple[Any, ...]]) -> _Block:
    """Every explainer on a block of queries (an executor task): attributions of the block's queries batched,
    then per query and k the sets, the optimum and their validity and completeness. Each query draws from its own
    streams, so the values do not depend on how queries are split into blocks."""
    options, methods, sizes = job.options, job.methods, job.sizes
    masker, background = ctx.masker(), ctx.reference_rows()
    rows_masker = background_rows_masker(ctx, options.background_rows)
    explainers = build(options)
    views = [(qi, QueryView(X=X, scores=scores, query_id=query_id, background=background, spread=spread))
             for qi, X, scores, query_id, spread in payload]
    tallies: dict[tuple[str, int], _Tally] = {}
    records: list[dict[str, Any]] = []
    block = _Block(excluded=0, records=records, tallies=tallies)
    _prefetch_attributions(ctx, options, views, methods, explainers, masker, tallies, sizes, rows_masker)
    for qi, query in views:
        if not has_order(query.scores):
            block.excluded += 1
            continue
        found = _attributions(ctx, options, query, methods, explainers, masker, qi, tallies, sizes, rows_masker)
        _convergence(options, methods, found, block)
        _listwise_reference(ctx, options, query, qi, found, rows_masker or masker, block, job.figure_query)
        for k in sizes:
            sets, names = [], []
            for name in methods:
                tally = tallies.setdefault((name, k), _Tally())
                method = registry.method(name)
                if method.attribution:
                    sets.append(set_from_attributions(found[method.explainer.name].values, k, docs=method.docs))
                else:
                    rows_before, start = ctx.model.rows_evaluated, time.perf_counter()
                    played = played_masker(name, masker, rows_masker)
                    sets.append(explanation_set(ctx, options, explainers, name, query, qi, k, played))
                    tally.rows += ctx.model.rows_evaluated - rows_before
                    tally.seconds += time.perf_counter() - start
                names.append(name)
            optimum = _optimum(ctx, query, k, masker, options, qi, tallies)
            if optimum is not None:
                sets.append(optimum)
                names.append("optimum")
            validity, completeness = measure_sets(ctx.model, query.X, query.scores, masker, sets)
            under_rows = None
            if rows_masker is not None and k == options.k:
                from auditor.explain.listwise import expected_validity

                under_rows = expected_validity(ctx.model, query.X, query.scores, rows_masker, sets)
            for i, (method, chosen_set, v, c) in enumerate(zip(names, sets, validity, completeness, strict=True)):
                tally = tallies.setdefault((method, k), _Tally())
                tally.validity.append(float(v))
                tally.completeness.append(float(c))
                tally.sets.append(chosen_set)
                if k == options.k:
                    record = {"query": query.query_id, "docs": query.n_docs, "k": k, "method": method,
                              "selected": [job.feature_names[f] for f in chosen_set],
                              "validity": round(float(v), 6), "completeness": round(float(c), 6)}
                    if under_rows is not None:
                        tally.validity_rows.append(float(under_rows[0][i]))
                        tally.completeness_rows.append(float(under_rows[1][i]))
                        record["validity_rows"] = round(float(under_rows[0][i]), 6)
                    records.append(record)
        query.scored.clear()  # the searches' shared scores: memory for one query at a time
        ctx.tick()  # progress: one query done (skipped ones count when the block returns)
    return block


def _convergence(options: LocalExplanationsOptions, methods: list[str], found: dict[str, Attributions],
                 block: _Block) -> None:
    """The convergence check of an explainer whose attributions carry jackknife replicates (KernelSHAP) for one
    query: per method (shap1, shap5), the mean over pairs of its pseudo-replicates of |S_g ∩ S_h| / k, the sets at
    the main k (the agreement two runs with fresh coalitions would have; 1 where every coalition was
    enumerated)."""
    for name, attrs in found.items():
        diagnostics = attrs.diagnostics or {}
        replicates = diagnostics.get("replicates")
        if replicates is None:
            continue
        for method in _methods_of(methods, name):
            docs = registry.method(method).docs
            sets = [set(set_from_attributions(r, options.k, docs=docs)) for r in replicates]
            pairs = [len(a & b) / max(len(a), 1) for i, a in enumerate(sets) for b in sets[i + 1:]]
            block.agreement.setdefault(method, []).append(float(np.mean(pairs)))
        block.coalitions.extend(int(c) for c in diagnostics["coalitions"])
        block.underdetermined.extend(bool(u) for u in diagnostics["underdetermined"])




def _listwise_reference(ctx: AuditContext, options: LocalExplanationsOptions, query: QueryView, qi: int,
                        found: dict[str, Attributions], masker: Any, block: _Block, figure_query: int | None) -> None:
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
            explainer = registry.EXPLAINERS[name].build(options)
            rows_before = ctx.model.rows_evaluated
            game = explainer.game(ctx.model, query, masker)
            reference = np.zeros_like(result.values)
            reference[game.players] = exact_shapley(game(coalition_masks(game.m)), game.m)
            block.reference_rows += ctx.model.rows_evaluated - rows_before
        else:
            block.reference_skipped[name] = block.reference_skipped.get(name, 0) + 1
            continue
        block.reference.setdefault(name, []).append(agreement(result.values, reference))


def _methods_of(methods: list[str], explainer: str) -> list[str]:
    """The chosen methods that use this attribution explainer (e.g. shap1 and shap5 for kernelshap)."""
    return [m for m in methods if registry.method(m).attribution and registry.method(m).explainer.name == explainer]


def _screen_spread(ctx: AuditContext, options: LocalExplanationsOptions, methods: list[str], chosen: list[int],
                   result: EvidenceResult) -> dict[int, np.ndarray] | None:
    """The within-query TreeSHAP spread of the audited queries (`query_spreads`), and a note naming the searches
    it narrowed."""
    found = query_spreads(ctx, options, methods, chosen)
    if found is None:
        return None
    narrowed = narrowed_searches(options, methods, ctx.data.n_features)
    labels = ", ".join(f"{label(m)} {count}" for m, count in narrowed.items())
    result.notes.append(f"On these {ctx.data.n_features} features the searches tried, per query, only the features "
                        f"with the largest within-query TreeSHAP spread ({labels}; `greedy.candidates` / "
                        "`search.candidates`: null tries all). On 136-feature benchmark data 60 candidates kept the "
                        "unscreened sets of every query up to k = 5 and of most at k = 7–10, with equal or higher "
                        "validity (docs/benchmarks.md).")
    return found


def _used_explainers(methods: list[str]) -> dict[str, list[str]]:
    """{attribution explainer: its chosen methods}, in registry order."""
    return {e.name: _methods_of(methods, e.name) for e in registry.attribution_explainers()
            if _methods_of(methods, e.name)}


def _attributions(ctx: AuditContext, options: LocalExplanationsOptions, query: QueryView, methods: list[str],
                  explainers: dict[str, Any], masker: Any, qi: int, tallies: dict[tuple[str, int], _Tally],
                  sizes: list[int], rows_masker: Any = None) -> dict[str, Attributions]:
    """Attribute the top documents once per explainer; its "-1" and "-5" methods share the work (and cost). The
    listwise explainers play on the item's background rows when it has them (`played_masker`)."""
    out: dict[str, Attributions] = {}
    for name, variants in _used_explainers(methods).items():
        docs = query.top_docs(max(registry.method(m).docs for m in variants))
        rows_before, start = ctx.model.rows_evaluated, time.perf_counter()
        out[name] = attributions(ctx, options, explainers, name, query, qi, docs,
                                 played_masker(name, masker, rows_masker))
        # counted per query, so the counts do not depend on which call computed the attributions
        for what, count in (("degenerate", out[name].n_degenerate), ("fallback", out[name].n_fallback)):
            if count:
                tallies.setdefault((f"{name}:{what}", 0), _Tally()).rows += count
        rows, seconds = ctx.model.rows_evaluated - rows_before, time.perf_counter() - start
        for method in variants:
            tally = tallies.setdefault((method, sizes[0]), _Tally())
            tally.rows += rows
            tally.seconds += seconds
    return out


def _prefetch_attributions(ctx: AuditContext, options: LocalExplanationsOptions, block: list[tuple[int, QueryView]],
                           methods: list[str], explainers: dict[str, Any], masker: Any,
                           tallies: dict[tuple[str, int], _Tally], sizes: list[int], rows_masker: Any = None) -> None:
    """Attribute the top documents of a block of queries at once where the explainer `batches` (the samples of
    many queries scored in one model call), into the memo `attributions` reads: same keys, same values (each query
    still draws from its own stream). Rows and seconds go to the same tallies as `_attributions`."""
    views = [(qi, view) for qi, view in block if has_order(view.scores)]
    for name, variants in _used_explainers(methods).items():
        if not registry.EXPLAINERS[name].batches:
            continue
        count = max(registry.method(m).docs for m in variants)
        rows_before, start = ctx.model.rows_evaluated, time.perf_counter()
        attributions_many(ctx, options, explainers, name, [(view, qi, view.top_docs(count)) for qi, view in views],
                          played_masker(name, masker, rows_masker))
        rows, seconds = ctx.model.rows_evaluated - rows_before, time.perf_counter() - start
        for method in variants:
            tally = tallies.setdefault((method, sizes[0]), _Tally())
            tally.rows += rows
            tally.seconds += seconds


def _report_counts(result: EvidenceResult, methods: list[str], tallies: dict[tuple[str, int], _Tally]) -> None:
    """Documents an attribution explainer left without explanation (`local.<name>.degenerate_docs`, when any) or
    fitted with its fallback solver (`local.<name>.fallback_docs`, whenever it ran), with a note when > 0."""
    for name in _used_explainers(methods):
        entry = registry.EXPLAINERS[name]
        degenerate = tallies.pop((f"{name}:degenerate", 0), None)
        if degenerate is not None:
            result.notes.append(f"{entry.label} found no explanation ({entry.degenerate}) for {degenerate.rows} "
                                "document(s); their attributions are zero." + (f" {entry.degenerate_fix}"
                                                                               if entry.degenerate_fix else ""))
            result.metrics[f"local.{name}.degenerate_docs"] = float(degenerate.rows)
        fallback = tallies.pop((f"{name}:fallback", 0), None)
        if entry.fallback:
            count = fallback.rows if fallback is not None else 0
            result.metrics[f"local.{name}.fallback_docs"] = float(count)
            if count:
                result.notes.append(f"{entry.label} fitted {count} document(s) with its fallback solver "
                                    f"({entry.fallback}).")


def _optimum(ctx: AuditContext, query: QueryView, k: int, masker: Any, options: LocalExplanationsOptions, qi: int,
             tallies: dict[tuple[str, int], _Tally]) -> tuple[int, ...] | None:
    from auditor.explain.search import Exhaustive

    search = Exhaustive(max_subsets=options.optimum_max_subsets)
    if options.optimum_max_subsets == 0 or not search.affordable(query.n_features, k):
        return None
    tally = tallies.setdefault(("optimum", k), _Tally())
    rows_before, start = ctx.model.rows_evaluated, time.perf_counter()
    chosen = search.select(ctx.model, query, k, masker, ctx.rng(f"local/optimum/{k}/{qi}"))
    tally.rows += ctx.model.rows_evaluated - rows_before
    tally.seconds += time.perf_counter() - start
    return chosen


def _report(result: EvidenceResult, ctx: AuditContext, options: LocalExplanationsOptions, methods: list[str],
            sizes: list[int], tallies: dict[tuple[str, int], _Tally], excluded: int, n_chosen: int) -> None:
    from auditor.report.plots import fmt, line_chart  # here, not at import: worker processes never draw

    k = options.k
    names = ctx.data.feature_names
    rows_k = [m for m in [*methods, "optimum"] if (m, k) in tallies and tallies[(m, k)].validity]
    metrics = result.metrics
    metrics["local.queries"] = float(n_chosen - excluded)
    metrics["local.excluded_queries"] = float(excluded)
    metrics["local.k"] = float(k)
    rng = ctx.rng("local/intervals")
    optimum_mean = np.mean(tallies[("optimum", k)].validity) if ("optimum", k) in tallies and \
        tallies[("optimum", k)].validity else None
    table_rows = []
    for method in rows_k:
        tally = tallies[(method, k)]
        v, c = np.array(tally.validity), np.array(tally.completeness)
        v_low, v_high = bootstrap_interval(v, rng)
        c_low, c_high = bootstrap_interval(c, rng)
        stats = {"validity.mean": v.mean(), "validity.median": np.median(v), "validity.ci95_low": v_low,
                 "validity.ci95_high": v_high, "completeness.mean": c.mean(), "completeness.median": np.median(c),
                 "completeness.ci95_low": c_low, "completeness.ci95_high": c_high,
                 "set_size.mean": np.mean([len(s) for s in tally.sets])}
        for key, value in stats.items():
            metrics[f"local.{method}.{key}"] = float(value)
        share = float(v.mean() / optimum_mean) if optimum_mean else None
        if share is not None:
            metrics[f"local.{method}.share_of_optimum"] = share
        row = [label(method), _r(v.mean()), _interval(v_low, v_high), _r(np.median(v)),
               _r(c.mean()), _interval(c_low, c_high), _r(share) if share is not None else None]
        if options.background_rows is not None:  # in place of the median (in evidence.json): the table stays narrow
            row[3] = _rows_stats(metrics, ctx, method, tally)
        table_rows.append(row)
    rows_column = [] if options.background_rows is None else [
        f"validity, {options.background_rows} background rows"]
    rows_note = "" if options.background_rows is None else (
        f" Column 4: tau averaged over {options.background_rows} masked rankings, one per background row (the "
        "listwise peers' validity).")
    result.tables.append(Table(
        title=f"Validity and completeness of explanation sets, k = {k} (layout of Singh et al. 2020, Table 2)",
        columns=["method", "validity", "95% interval", *(rows_column or ["median"]), "completeness", "95% interval",
                 "share of optimum"],
        rows=table_rows,
        note=(f"{n_chosen - excluded} queries; {excluded} left out (fewer than two documents or all scores tied). "
              f"Masking: {ctx.masking} of the background data; Kendall tau-b; a masked ranking that ties every "
              "document counts as tau = 0. Per-document explainers use the top document (-1) or the sum of "
              "|attributions| over the top 5 (-5); listwise ones the query's one row."
              + rows_note),
    ))
    for method in [*methods, "optimum"]:
        rows = sum(tallies[(method, s)].rows for s in sizes if (method, s) in tallies)
        metrics[f"local.{method}.rows"] = float(rows)
    result.tables.append(Table(
        title="Cost per method (all sizes of k)",
        columns=["method", "model rows", "rows per query", "seconds"],
        rows=[[label(m), int(metrics[f"local.{m}.rows"]), _r(metrics[f"local.{m}.rows"] / max(n_chosen, 1), 1),
               _r(sum(tallies[(m, s)].seconds for s in sizes if (m, s) in tallies), 3)]
              for m in [*methods, "optimum"] if metrics.get(f"local.{m}.rows")],
        note="-1 and -5 variants share one attribution run, so both show its cost. Seconds are wall time.",
        volatile=True,
    ))
    if len(sizes) > 1:
        curve = {m: [float(np.mean(tallies[(m, s)].validity)) if (m, s) in tallies and tallies[(m, s)].validity
                     else float("nan") for s in sizes] for m in [*methods, "optimum"]
                 if any((m, s) in tallies and tallies[(m, s)].validity for s in sizes)}
        for m, values in curve.items():
            for s, value in zip(sizes, values, strict=True):
                if np.isfinite(value):
                    metrics[f"local.{m}.validity.mean@k{s}"] = value
        result.tables.append(Table(
            title="Effect of k on mean validity",
            columns=["method", *[f"k = {s}" for s in sizes]],
            rows=[[label(m), *[_r(v) if np.isfinite(v) else None for v in values]] for m, values in curve.items()],
            note="The exhaustive optimum appears only for the sizes where it was affordable.",
            body_rows=0))  # the figure below draws it
        result.figures.append(Figure(
            title="Mean validity by explanation size",
            svg=line_chart(sizes, {label(m): v for m, v in curve.items()}, xlabel="k (features in the set)",
                           ylabel="mean validity"),
            caption="Higher is better; a method that stays low needs many features to reproduce the ranking.",
            description=f"Line chart of mean validity against k = {', '.join(map(str, sizes))} for "
                        f"{len(curve)} methods; at k = {sizes[-1]}: "
                        + ", ".join(f"{label(m)} {fmt(v[-1])}" for m, v in curve.items() if np.isfinite(v[-1]))
                        + "."))
    if rows_k:
        from auditor.report.plots import box_plot

        result.figures.append(Figure(
            title=f"Validity per query, k = {k}",
            svg=box_plot({label(m): tallies[(m, k)].validity for m in rows_k}, ylabel="validity (Kendall tau-b)"),
            caption="Each box spans the middle half of the queries; the line is the median. A long left whisker "
                    "means some queries' explanations do not reproduce their ranking.",
            description=f"Box plot of validity per query at k = {k}, medians: "
                        + ", ".join(f"{label(m)} {fmt(np.median(tallies[(m, k)].validity))}" for m in rows_k
                                    if tallies[(m, k)].validity) + "."))
    _detect(result, options, [m for m in rows_k if m != "optimum"])
    contenders = [m for m in rows_k if m != "optimum"]
    best = max(contenders, key=lambda m: metrics[f"local.{m}.validity.mean"]) if contenders else None
    if best is not None:
        counts = Counter(f for s in tallies[(best, k)].sets for f in s)
        result.tables.append(Table(
            title=f"Features most often in the {label(best)} explanation sets (k = {k})",
            columns=["feature", "queries", "share of queries"],
            rows=[[names[f], n, _r(n / len(tallies[(best, k)].sets))] for f, n in
                  sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:10]]))
        result.summary = (f"At k = {k}, {label(best)} gives the most valid explanations (mean validity "
                          f"{figure(metrics[f'local.{best}.validity.mean'])})"
                          + (f"; the best possible is {figure(optimum_mean)}." if optimum_mean else "."))


def _rows_stats(metrics: dict[str, float], ctx: AuditContext, method: str, tally: _Tally) -> float | None:
    """Validity and completeness under the background rows (`local.<method>.validity_rows.*`); the mean shown."""
    if not tally.validity_rows:
        return None
    v, c = np.array(tally.validity_rows), np.array(tally.completeness_rows)
    low, high = bootstrap_interval(v, ctx.rng(f"local/intervals/rows/{method}"))
    for key, value in {"validity_rows.mean": v.mean(), "validity_rows.ci95_low": low,
                       "validity_rows.ci95_high": high, "completeness_rows.mean": c.mean()}.items():
        metrics[f"local.{method}.{key}"] = float(value)
    return _r(v.mean())


REFERENCE_METRICS = {"footrule@3": "footrule3", "footrule@10": "footrule10", "footrule@all": "footrule_all",
                     "l1": "l1"}


def _report_listwise(result: EvidenceResult, ctx: AuditContext, options: LocalExplanationsOptions, listwise: _Block,
                     figure_query: int | None) -> None:
    """The listwise explainers against the exact Shapley values of their game (a table and
    `local.<name>.reference.*`), and the figure of the representative query's attributions."""
    from auditor.report.plots import fmt_signed, listwise_bars

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
                     *[_r(means[key], 3) if key in means else None for key in REFERENCE_METRICS]])
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
        svg=listwise_bars([names[f] for f in top], series, xlabel="Shapley value of the ranking game"),
        caption=(f"Each bar is a feature's Shapley value in the game \"how much of the model's order of this query's "
                 f"{size} documents does keeping the feature reproduce\" (RankingSHAP: Kendall tau; RankSHAP: nDCG "
                 "of the model's own order; "
                 + ("the features left out masked as everywhere in this audit" if options.background_rows is None
                    else f"the features left out replaced by each of {options.background_rows} background rows in "
                         "turn, the value averaged, as published")
                 + "); the values sum to 1 − v(∅): "
                 + ", ".join(f"{registry.label(n)} {fmt_signed(1 - r.empty_value)}" for n, r in results.items())
                 + ". Error bars: 95% intervals of sampled estimates (none: exact). "
                 + representative_text(query_id, size).capitalize() + "."),
        description=(f"Bar chart of listwise attributions for query {query_id}, features by strength: "
                     + "; ".join(f"{registry.label(n)} " + ", ".join(f"{names[f]} {fmt_signed(r.values[f])}"
                                                                     for f in top[:4])
                                 for n, r in results.items()) + ".")))


def _report_convergence(result: EvidenceResult, ctx: AuditContext, options: LocalExplanationsOptions,
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
        metrics[f"{name}.mean"], metrics[f"{name}.ci95_low"], metrics[f"{name}.ci95_high"] = float(v.mean()), low, high
        if v.mean() >= floor and share <= 0.5:
            continue
        why = (f"two runs with fresh coalitions would choose sets sharing {percent(v.mean())} of their features on "
               f"average (jackknife; 95% interval {interval(*_held(v.mean(), low, high), share=True)}; floor "
               f"{percent(floor)})")
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


def _detect(result: EvidenceResult, options: LocalExplanationsOptions, methods: list[str]) -> None:
    """Explainers whose sets do not reproduce the rankings (whole interval below the floor), and explainers no
    better than RANDOM sets: a reader must not take their explanations at face value."""
    metrics = result.metrics
    citation = "EU AI Act (Reg. 2024/1689) Art. 13(1) — output interpretable; Reg. (EU) 2019/1150 Art. 5(1)"
    random_mean = metrics.get("local.random.validity.mean") if "random" in methods else None
    random_high = metrics.get("local.random.validity.ci95_high") if "random" in methods else None
    for method in methods:
        if method == "random":
            continue
        mean = metrics[f"local.{method}.validity.mean"]
        low, high = metrics[f"local.{method}.validity.ci95_low"], metrics[f"local.{method}.validity.ci95_high"]
        shown = f"mean validity {with_interval(mean, low, high)}" if np.isfinite(low) and np.isfinite(high) else \
            f"mean validity {figure(mean)}"
        judged_by = (f"local.{method}.validity.mean", f"local.{method}.validity")
        if random_high is not None and np.isfinite(random_high) and mean <= random_high:
            result.detect(
                "explainer-no-better-than-random", f"{label(method)} explanations are no better than random "
                f"feature sets", f"At k = {options.k}, {label(method)} has {shown}; RANDOM sets reach "
                f"{figure(random_mean)} (up to {figure(random_high)}). Its explanations should not be shown to users "
                "or reviewers as the reasons for a ranking.", severity="major", citation=citation,
                judged_by=judged_by, value=mean, interval=(low, high), subject=method)
        elif np.isfinite(high) and high < options.validity_floor:
            result.detect(
                "explanations-below-validity-floor", f"{label(method)} explanations do not reproduce the rankings",
                f"At k = {options.k}, {label(method)} has {shown}, below the floor of {options.validity_floor:g}: "
                "the features it names keep too few document pairs in order to explain the ranking.",
                severity="minor", citation=citation, judged_by=judged_by, value=mean, interval=(low, high),
                subject=method)


def _interval(low: float, high: float) -> str:
    """An interval cell as every interval of the report reads (`numbers.interval`: `0.424 to 0.494`)."""
    return interval(low, high) if np.isfinite(low) and np.isfinite(high) else "—"


def _held(value: float, low: float, high: float) -> tuple[float | None, float | None]:
    """The interval widened to hold its value, as `numbers.with_interval` prints it; None ends when there is none."""
    if not (np.isfinite(low) and np.isfinite(high)):
        return None, None
    return min(low, value), max(high, value)


def _r(value: float | None, digits: int = 6) -> float | None:
    return None if value is None or not np.isfinite(value) else round(float(value), digits)
