"""Evidence `local_explanations`: every local explainer of the papers on each audited query, with the validity
and completeness of the explanation sets they produce (paper 000, Table 2 layout), the effect of k, and how close
each comes to the best possible set (exhaustive optimum) when that is affordable. This module runs the explainers
over the queries (in blocks, through the executor); `stats.py` and `diagnostics.py` measure from what they gather,
and `present.py` says it."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from auditor.checks.validity import has_order, measure_sets
from auditor.core.numbers import stored
from auditor.evidence.base import (
    ATTRIBUTION_VALUES,
    AuditContext,
    EvidenceResult,
    check_explanation_size,
    representative_query,
)
from auditor.evidence.executor import split
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
from auditor.evidence.kinds.local_explanations.diagnostics import (
    convergence,
    listwise_reference,
    measure_convergence,
    measure_listwise,
)
from auditor.evidence.kinds.local_explanations.options import LocalExplanationsOptions
from auditor.evidence.kinds.local_explanations.stats import count_fallbacks, measure_results
from auditor.evidence.kinds.local_explanations.tallies import QueryBlock, Tally, used_explainers
from auditor.explain import registry
from auditor.explain.base import Attributions, QueryView, set_from_attributions
from auditor.inputs.data import RankingData

BATCH_QUERIES = 64  # queries whose LIRME/EXS samples are drawn together and scored in few large model calls


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
    result = EvidenceResult(name="local_explanations")
    check(options, data)
    too_wide = [k for k in options.k_curve if k >= data.n_features]
    if too_wide:  # the default curve, cut to the data's width
        options = options.model_copy(update={"k_curve": [k for k in options.k_curve if k < data.n_features]})
    methods = [m for m in options.methods if not (registry.method(m).explainer.needs_trees and not is_tree(ctx))]
    skipped = [m for m in options.methods if m not in methods]
    result.facts.update(methods=methods, sizes=sorted({options.k, *options.k_curve}), n_features=data.n_features,
                        masking=ctx.masking, too_wide=too_wide, skipped=skipped, model_kind=ctx.model.kind)
    sizes = sorted({options.k, *options.k_curve})
    scores = ctx.scores()
    chosen = ctx.query_sample(options.queries, "local/queries")
    figure_query = representative_query(data.query_sizes(), chosen) if any(
        not registry.method(m).explainer.per_document for m in methods if registry.method(m).attribution) else None
    job = _Job(options=options, methods=methods, sizes=sizes, feature_names=data.feature_names,
               figure_query=figure_query, keep=frozenset(_kept(chosen, methods, data.n_features,
                                                              options.keep_queries)))
    spread = _screen_spread(ctx, options, methods, chosen, result)
    blocks = split(chosen, ctx.workers, most=BATCH_QUERIES)
    payloads = ([(qi, data.X[data.query_slice(qi)], scores[data.query_slice(qi)], data.query_ids[qi],
                  None if spread is None else spread[qi]) for qi in block] for block in blocks)
    tallies: dict[tuple[str, int], Tally] = {}
    records: list[dict[str, Any]] = []
    excluded = 0
    agreement: dict[str, list[float]] = {}
    coalitions: list[int] = []
    underdetermined: list[bool] = []
    listwise = QueryBlock(excluded=0, records=[], tallies={})  # the listwise parts of every block, gathered
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
            tallies.setdefault(key, Tally()).extend(part)
    count_fallbacks(result, methods, tallies)
    measure_results(result, ctx, options, methods, sizes, tallies, excluded, len(chosen))
    measure_convergence(result, ctx, options, agreement, coalitions, underdetermined)
    measure_listwise(result, ctx, listwise, figure_query)
    result.attributions = _kept_attributions(records, data, job.keep, min(options.keep_queries, len(chosen)))
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
    keep: frozenset[int] = frozenset()  # queries whose attributions evidence.json keeps (`keep_queries`)


def _kept(chosen: list[int], methods: list[str], n_features: int, wanted: int) -> list[int]:
    """The first `wanted` audited queries whose attribution values fit in ATTRIBUTION_VALUES."""
    per_query = n_features * sum(registry.method(m).docs for m in methods if registry.method(m).attribution)
    if wanted <= 0 or per_query == 0:
        return []
    return list(chosen[:min(wanted, ATTRIBUTION_VALUES // per_query)])


def _kept_attributions(records: list[dict[str, Any]], data: RankingData, kept: frozenset[int],
                       wanted: int) -> dict[str, Any] | None:  # wanted: of the audited queries
    """The kept queries' attributions, taken out of the records (which stay as they were): per query and method,
    the top documents' values with the explanation's validity and completeness — what `AuditResult.explanations`
    turns into a shap.Explanation, from a saved run too."""
    where = {data.query_ids[qi]: qi for qi in kept}
    out = []
    for record in records:
        found = record.pop("attributions", None)
        if found is None:
            continue
        rows = data.query_slice(where[record["query"]])
        docs = [str(data.doc_ids[rows.start + int(i)]) for i in found["rows"]]
        out.append({"query": record["query"], "method": record["method"], "docs": docs, "phi": found["phi"],
                    "values": [[None if not np.isfinite(v) else float(v) for v in data.X[rows.start + int(i)]]
                               for i in found["rows"]],
                    "validity": record["validity"], "completeness": record["completeness"]})
    if not out and wanted <= 0:
        return None
    return {"method": "local_explanations", "feature_names": list(data.feature_names), "explanations": out,
            "left_out": max(0, wanted - len(kept))}  # over ATTRIBUTION_VALUES


def _explain_block(ctx: AuditContext, job: _Job, payload: list[tuple[Any, ...]]) -> QueryBlock:
    """Every explainer on a block of queries (an executor task): attributions of the block's queries batched,
    then per query and k the sets, the optimum and their validity and completeness. Each query draws from its own
    streams, so the values do not depend on how queries are split into blocks."""
    options, methods, sizes = job.options, job.methods, job.sizes
    masker, background = ctx.masker(), ctx.reference_rows()
    rows_masker = background_rows_masker(ctx, options.background_rows)
    explainers = build(options)
    views = [(qi, QueryView(X=X, scores=scores, query_id=query_id, background=background, spread=spread))
             for qi, X, scores, query_id, spread in payload]
    tallies: dict[tuple[str, int], Tally] = {}
    records: list[dict[str, Any]] = []
    block = QueryBlock(excluded=0, records=records, tallies=tallies)
    _prefetch_attributions(ctx, options, views, methods, explainers, masker, tallies, sizes, rows_masker)
    for qi, query in views:
        if not has_order(query.scores):
            block.excluded += 1
            continue
        found = _attributions(ctx, options, query, methods, explainers, masker, qi, tallies, sizes, rows_masker)
        convergence(options, methods, found, block)
        listwise_reference(ctx, options, query, qi, found, rows_masker or masker, block, job.figure_query)
        for k in sizes:
            sets, names = [], []
            for name in methods:
                tally = tallies.setdefault((name, k), Tally())
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
                tally = tallies.setdefault((method, k), Tally())
                tally.validity.append(float(v))
                tally.completeness.append(float(c))
                tally.sets.append(chosen_set)
                if k == options.k:
                    record = {"query": query.query_id, "docs": query.n_docs, "k": k, "method": method,
                              "selected": [job.feature_names[f] for f in chosen_set],
                              "validity": round(float(v), 6), "completeness": round(float(c), 6)}
                    if qi in job.keep and method != "optimum" and registry.method(method).attribution:
                        count = registry.method(method).docs
                        record["attributions"] = {  # taken out by `_kept_attributions`: not a record's part
                            "rows": [int(i) for i in query.top_docs(count)],
                            "phi": [[stored(x, 6) for x in row] for row in
                                    found[registry.method(method).explainer.name].values[:count]]}
                    if under_rows is not None:
                        tally.validity_rows.append(float(under_rows[0][i]))
                        tally.completeness_rows.append(float(under_rows[1][i]))
                        record["validity_rows"] = round(float(under_rows[0][i]), 6)
                    records.append(record)
        query.scored.clear()  # the searches' shared scores: memory for one query at a time
        ctx.tick()  # progress: one query done (skipped ones count when the block returns)
    return block


def _screen_spread(ctx: AuditContext, options: LocalExplanationsOptions, methods: list[str], chosen: list[int],
                   result: EvidenceResult) -> dict[int, np.ndarray] | None:
    """The within-query TreeSHAP spread of the audited queries (`query_spreads`), and as a fact the searches it
    narrowed, with their candidates."""
    found = query_spreads(ctx, options, methods, chosen)
    if found is None:
        return None
    result.facts["narrowed"] = narrowed_searches(options, methods, ctx.data.n_features)
    return found


def _attributions(ctx: AuditContext, options: LocalExplanationsOptions, query: QueryView, methods: list[str],
                  explainers: dict[str, Any], masker: Any, qi: int, tallies: dict[tuple[str, int], Tally],
                  sizes: list[int], rows_masker: Any = None) -> dict[str, Attributions]:
    """Attribute the top documents once per explainer; its "-1" and "-5" methods share the work (and cost). The
    listwise explainers play on the item's background rows when it has them (`played_masker`)."""
    out: dict[str, Attributions] = {}
    for name, variants in used_explainers(methods).items():
        docs = query.top_docs(max(registry.method(m).docs for m in variants))
        rows_before, start = ctx.model.rows_evaluated, time.perf_counter()
        out[name] = attributions(ctx, options, explainers, name, query, qi, docs,
                                 played_masker(name, masker, rows_masker))
        # counted per query, so the counts do not depend on which call computed the attributions
        for what, count in (("degenerate", out[name].n_degenerate), ("fallback", out[name].n_fallback)):
            if count:
                tallies.setdefault((f"{name}:{what}", 0), Tally()).rows += count
        rows, seconds = ctx.model.rows_evaluated - rows_before, time.perf_counter() - start
        for method in variants:
            tally = tallies.setdefault((method, sizes[0]), Tally())
            tally.rows += rows
            tally.seconds += seconds
    return out


def _prefetch_attributions(ctx: AuditContext, options: LocalExplanationsOptions, block: list[tuple[int, QueryView]],
                           methods: list[str], explainers: dict[str, Any], masker: Any,
                           tallies: dict[tuple[str, int], Tally], sizes: list[int], rows_masker: Any = None) -> None:
    """Attribute the top documents of a block of queries at once where the explainer `batches` (the samples of
    many queries scored in one model call), into the memo `attributions` reads: same keys, same values (each query
    still draws from its own stream). Rows and seconds go to the same tallies as `_attributions`."""
    views = [(qi, view) for qi, view in block if has_order(view.scores)]
    for name, variants in used_explainers(methods).items():
        if not registry.EXPLAINERS[name].batches:
            continue
        count = max(registry.method(m).docs for m in variants)
        rows_before, start = ctx.model.rows_evaluated, time.perf_counter()
        attributions_many(ctx, options, explainers, name, [(view, qi, view.top_docs(count)) for qi, view in views],
                          played_masker(name, masker, rows_masker))
        rows, seconds = ctx.model.rows_evaluated - rows_before, time.perf_counter() - start
        for method in variants:
            tally = tallies.setdefault((method, sizes[0]), Tally())
            tally.rows += rows
            tally.seconds += seconds


def _optimum(ctx: AuditContext, query: QueryView, k: int, masker: Any, options: LocalExplanationsOptions, qi: int,
             tallies: dict[tuple[str, int], Tally]) -> tuple[int, ...] | None:
    from auditor.explain.search import Exhaustive

    search = Exhaustive(max_subsets=options.optimum_max_subsets)
    if options.optimum_max_subsets == 0 or not search.affordable(query.n_features, k):
        return None
    tally = tallies.setdefault(("optimum", k), Tally())
    rows_before, start = ctx.model.rows_evaluated, time.perf_counter()
    chosen = search.select(ctx.model, query, k, masker, ctx.rng(f"local/optimum/{k}/{qi}"))
    tally.rows += ctx.model.rows_evaluated - rows_before
    tally.seconds += time.perf_counter() - start
    return chosen
