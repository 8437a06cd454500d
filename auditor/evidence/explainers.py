"""What the explainer evidence shares (`local_explanations`, `confidence`, `decision_path_accuracy`): the spec's
method lists and option sections taken from the explainer registry (`auditor/explain/registry.py`), and the
attributions and explanation sets computed once per audit through the memo. Not a plugin: plugins import it, never
each other.

Memo keys name everything a value depends on: ("attributions", explainer, its options, masking, query, documents)
and ("set", method, its options, masking, query, k); each draws from the stream `local/<name>/<query>` (sets:
`local/<method>/<k>/<query>`), so whichever item computes it first, the value is the same.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from auditor.evidence.base import AuditContext
from auditor.evidence.importance import ALL_SPREADS_KEY
from auditor.evidence.options.sections import (  # noqa: F401 - their home before the spec became light
    attribution_names,
    default_method_names,
    judged_method_names,
    method_list,
    method_names,
    methods_validator,
    with_sections,
)
from auditor.explain import registry
from auditor.explain.base import Attributions, QueryView

# How many top documents `reusable_attributions` looks for beyond the ones asked (local_explanations asks for 5).
REUSE_MAX_DOCS = 10


# --- explainers and shared work ----------------------------------------------------------------------------------

class Explainers(dict):  # type: ignore[type-arg]
    """The registered explainers configured by an item's options, by name, each built on first use (so a worker
    imports only the explainers it runs, and an item need not hold the sections of explainers it does not run)."""

    def __init__(self, settings: Any, scale: float) -> None:
        super().__init__()
        self.settings, self.scale = settings, scale

    def __missing__(self, name: str) -> Any:
        built = self[name] = registry.EXPLAINERS[name].build(self.settings, scale=self.scale)
        return built


def build(settings: Any, *, scale: float = 1.0) -> dict[str, Any]:
    """The registered explainers configured by `settings` (an item's options, which hold the sections), by name;
    `scale` < 1: shorter runs with that share of the samples (confidence's stability rerun)."""
    return Explainers(settings, scale)


def is_tree(ctx: AuditContext) -> bool:
    """Whether the model has exact TreeSHAP: tree models have an array form, and XGBoost and CatBoost models say why
    not (`trees_problem`) when theirs does not reproduce them."""
    inner = getattr(ctx.model, "inner", ctx.model)
    return hasattr(inner, "tree_ensemble") and not getattr(inner, "trees_problem", "")


def attribution_key(settings: Any, ctx: AuditContext, name: str, qi: int, docs: np.ndarray,
                    masker: Any = None) -> tuple[Any, ...]:
    """A listwise explainer's row does not depend on the documents asked: one entry a query."""
    entry = registry.EXPLAINERS[name]
    return ("attributions", name, entry.config(settings), masking_key(ctx, masker), qi,
            tuple(int(d) for d in docs) if entry.per_document else ())


def played_masker(name: str, masker: Any, rows_masker: Any) -> Any:
    """The masking an explainer plays on: an item's background rows (value-averaged, `background_rows: N`) for
    the explainers whose game is the peers' — the listwise attributions (RankingSHAP's published game averages
    tau over the rows) and the background-rows search — else the audit's masking."""
    entry = registry.EXPLAINERS[name]
    if rows_masker is not None and (entry.background_rows or (entry.kind == "attribution" and
                                                              not entry.per_document)):
        return rows_masker
    return masker


def attributions(ctx: AuditContext, settings: Any, explainers: dict[str, Any], name: str, query: QueryView, qi: int,
                 docs: np.ndarray, masker: Any) -> Attributions:
    """One attribution explainer on one query's top documents, computed once per audit."""
    return ctx.memo(attribution_key(settings, ctx, name, qi, docs, masker),
                    lambda: explainers[name].attribute(ctx.model, query, docs, masker, ctx.rng(f"local/{name}/{qi}")))


def attributions_many(ctx: AuditContext, settings: Any, explainers: dict[str, Any], name: str,
                      items: list[tuple[QueryView, int, np.ndarray]], masker: Any) -> None:
    """Fill the memo of `attributions` for many (query, qi, docs) at once with the explainer's `attribute_many`
    (same streams, same values: only the model calls are batched); entries already there are not recomputed."""
    todo = [(query, qi, docs) for query, qi, docs in items
            if not ctx.memoized(attribution_key(settings, ctx, name, qi, docs, masker))]
    if not todo:
        return
    values = explainers[name].attribute_many(ctx.model, [q for q, _, _ in todo], [d for _, _, d in todo], masker,
                                             [ctx.rng(f"local/{name}/{qi}") for _, qi, _ in todo])
    for (_, qi, docs), value in zip(todo, values, strict=True):
        ctx.memo(attribution_key(settings, ctx, name, qi, docs, masker), lambda value=value: value)


def reusable_attributions(ctx: AuditContext, settings: Any, name: str, query: QueryView, qi: int,
                          count: int) -> Attributions | None:
    """The attributions of the query's top `count` documents taken from an entry the memo already holds for MORE
    top documents (same explainer, options, masking and stream), or None. Valid where the registry says the
    explainer is `reusable` with these options (tested per explainer)."""
    entry = registry.EXPLAINERS[name]
    if not entry.reusable(entry.settings(settings)):
        return None
    wanted = query.top_docs(count)
    for more in range(count + 1, min(query.n_docs, REUSE_MAX_DOCS) + 1):
        docs = query.top_docs(more)
        key = attribution_key(settings, ctx, name, qi, docs)
        if np.array_equal(docs[:count], wanted) and ctx.memoized(key):
            return ctx.memo(key, lambda: None).head(count)
    return None


def masking_key(ctx: AuditContext, masker: Any = None) -> str:
    """The masking part of a memo key: the audit's (or None), or the background rows a value-averaged measure
    uses."""
    if getattr(masker, "strategy", "") == "background_rows":
        return f"background_rows:{masker.n_fill}"
    return ctx.masking


def explanation_set(ctx: AuditContext, settings: Any, explainers: dict[str, Any], method: str, query: QueryView,
                    qi: int, k: int, masker: Any) -> tuple[int, ...]:
    """One selection explainer's set for one query and k, computed once per audit."""
    key = ("set", method, registry.EXPLAINERS[method].config(settings), masking_key(ctx, masker), qi, k)
    return ctx.memo(key, lambda: explainers[method].select(ctx.model, query, k, masker,
                                                           ctx.rng(f"local/{method}/{k}/{qi}")))


def explanation(raw: np.ndarray, x: np.ndarray, sampler: Any, kind: str, form: str) -> np.ndarray:
    """The vector compared with decision-path ground truth `kind`: contributions keep their sign for value change;
    frequency has no sign, so it is compared with |attribution|."""
    e = raw
    if form == "contributions":
        from auditor.explain.lirme import contributions

        e = contributions(raw, x, sampler.mean, sampler.std)
    return np.abs(e) if kind == "frequency" else e


def narrowed_searches(settings: Any, methods: list[str], n_features: int) -> dict[str, int]:
    """{chosen selection method: its `candidates`} for the searches that try fewer than every feature."""
    narrowed = {}
    for m in [m for m in registry.methods() if m in methods]:
        entry = registry.method(m).explainer
        count = getattr(entry.settings(settings), "candidates", None) if entry.kind == "selection" else None
        if count is not None and count < n_features:
            narrowed[m] = count
    return narrowed


def query_spreads(ctx: AuditContext, settings: Any, methods: list[str], chosen: list[int]
                  ) -> dict[int, np.ndarray] | None:
    """The within-query TreeSHAP spread of the chosen queries when a search narrows its candidates (tree model),
    else None: the queries not yet known computed in one pass and kept for the audit (`ctx.memo`), so the
    searches of every evidence item read it instead of scoring TreeSHAP per query and search."""
    from auditor.explain.screen import treeshap_spread

    if not narrowed_searches(settings, methods, ctx.data.n_features) or not is_tree(ctx) or not chosen:
        return None
    todo = [qi for qi in chosen if not ctx.memoized(("spread", qi))]
    if len(todo) == ctx.data.n_queries and ctx.memoized(ALL_SPREADS_KEY):
        # global_importance's pass scored TreeSHAP on these same documents, all of them in one call as here, so
        # by the same implementation (capabilities.fast_treeshap chooses it by the row count): the same values
        every: np.ndarray = ctx.memo(ALL_SPREADS_KEY, lambda: np.empty(0))
        for qi in todo:
            ctx.memo(("spread", qi), lambda qi=qi: every[qi])
        todo = []
    if todo:
        rows = np.concatenate([np.arange(*ctx.data.query_ptr[qi:qi + 2]) for qi in todo])
        sizes = [int(np.diff(ctx.data.query_ptr[qi:qi + 2])[0]) for qi in todo]
        found = treeshap_spread(ctx.model, ctx.data.X[rows], np.concatenate([[0], np.cumsum(sizes)]))
        if found is None:
            return None
        for i, qi in enumerate(todo):
            ctx.memo(("spread", qi), lambda i=i: found[i])
    return {qi: ctx.memo(("spread", qi), lambda: None) for qi in chosen}


def check_background_search(options: Any) -> None:
    """`background_search` plays validity under the item's background rows: they must be set."""
    if "background_search" in options.methods and options.background_rows is None:
        from auditor.core.errors import InputError

        raise InputError("`background_search` optimises validity under background rows, and none are set",
                         where="methods", fix="set `background_rows: N` here, or the spec's `masking: {strategy: "
                                              "background, rows: N}`")


def background_rows_masker(ctx: AuditContext, rows: int | None) -> Any:
    """The value-averaged masking of `background_rows` (None when not asked): N background rows drawn from the
    stream `masking` — the very rows `masking: {strategy: background, rows: N}` gives the audit's masking."""
    if rows is None:
        return None
    from auditor.explain.listwise import BackgroundMasking

    return BackgroundMasking(rows=rows).draw(ctx.reference_rows(), ctx.rng("masking"))
