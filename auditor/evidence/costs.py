"""The built-in evidence kinds' cost estimators (their registry entries name them): per item, from the cost model's
`Shape` (auditor/run/cost.py) and the item's options — the queries it audits, the model rows, the seconds of its work
beside the model, and what drives them. Work an earlier item shares through the memo (`earlier`: the items already
estimated in this audit, with their options) is not counted twice. The explainers' own rows and fits come from their
registry entries (auditor/explain/costs.py); the constants here were fitted as auditor/run/cost.py's module docstring
says.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from auditor.core.words import counted
from auditor.explain import registry

if TYPE_CHECKING:
    from auditor.run.cost import Shape

# Work on documents² per query, beside the model (a query of 20,000 documents has 200 million pairs), measured on
# this 2-core machine: Kendall's tau-b of a masked ranking (checks.validity, compiled for large calls) per document
# pair — 17 ms for 500 rankings of 180 documents —; ranks among the others (checks.influence) per document × document.
PAIR_SECONDS = 3e-9
CELL_SECONDS = 5e-9
BUILD_SECONDS = 2e-7  # × rows × √F: building masked rows to predict them (wide data, before scoring.masked_scoring)


def _local_rows(local: Any, methods: list[str], shape: Shape, n: float, ks: list[int], *,
                shared: bool) -> float:
    """Model rows of an explainer item for one query (`shared`: attributions already in the memo): each attribution
    explainer once for the most top documents its methods explain, each selection method's search, the exhaustive
    optimum, and the validity and completeness of every set — the explainers' own counts from their registry
    entries (auditor/explain/costs.py)."""
    chosen = [registry.method(name) for name in methods]
    docs: dict[str, int] = {}  # attribution explainer -> the most top documents its methods explain
    for method in chosen:
        if method.attribution:
            docs[method.explainer.name] = max(docs.get(method.explainer.name, 0), method.docs)
    rows = 0.0
    if not shared:
        rows += sum(registry.EXPLAINERS[name].cost(local, shape, top, n, ks) for name, top in docs.items())
    rows += sum(method.explainer.cost(local, shape, 0, n, ks) for method in chosen if not method.attribution)
    optimum = 0.0
    for k in ks:
        subsets = math.comb(shape.features, k)
        if 0 < subsets <= getattr(local, "optimum_max_subsets", 0):
            optimum += subsets * n
    sets = len(methods) + (1 if optimum else 0)
    return rows + optimum + n * sets * 2 * len(ks)  # validity and completeness of every set


def _fit_seconds(methods: list[str], local: Any, features: int) -> float:
    """Seconds per query of the explainers' own fits (KernelSHAP's weighted regression with its jackknife, LIRME's
    ridge, EXS's exact SVR) per document, for the most top documents any method explains."""
    docs: dict[str, int] = {}  # explainer -> the most top documents its methods explain
    for name in methods:
        method = registry.method(name)
        if method.explainer.fit is not None:
            docs[method.explainer.name] = max(docs.get(method.explainer.name, 0), method.docs)
    return sum(top * registry.EXPLAINERS[name].fit(local, features) for name, top in docs.items())  # type: ignore[misc]


def _building(rows: float, shape: Shape) -> float:
    """Seconds to build masked rows (copies of the document with the masked features filled) before the model
    scores them; none when they are read off the trees."""
    return 0.0 if shape.masks_off_trees else BUILD_SECONDS * rows * shape.features ** 0.5


def local_explanations(options: Any, shape: Shape, earlier: Mapping[str, Any]) -> tuple[int, int, float, str]:
    queries, n = shape.sample(options.queries)
    ks = sorted({options.k, *[k for k in options.k_curve if k < shape.features]})
    rows = queries * _local_rows(options, list(options.methods), shape, n, ks, shared=False)
    explain = _building(rows, shape) + queries * _fit_seconds(list(options.methods), options, shape.features)
    rankings = queries * _local_rows(options, list(options.methods), shape, n, ks, shared=True) / max(n, 1.0)
    explain += PAIR_SECONDS * rankings * shape.pairs()  # each masked ranking's tau against the model's
    return queries, int(rows), explain, (f"{queries} queries × ~{n:.0f} documents, {len(options.methods)} "
                                         f"explainers, k = {', '.join(map(str, ks))}")


def confidence(options: Any, shape: Shape, earlier: Mapping[str, Any]) -> tuple[int, int, float, str]:
    from auditor.evidence.options.local_explanations import LocalExplanationsOptions

    queries, n = shape.sample(options.queries)
    local = LocalExplanationsOptions(methods=options.methods, k=options.k, kernelshap=options.kernelshap,
                                     lime=options.lime, greedy=options.greedy, search=options.search,
                                     optimum_max_subsets=0)  # confidence judges no optimum
    earlier_local = earlier.get("local_explanations")
    ran = set(earlier_local.methods) if earlier_local is not None else set()
    fresh = [m for m in options.methods if m not in ran]  # methods whose first runs local_explanations did not make
    reused = len(fresh) < len(options.methods)
    first = _local_rows(local, fresh, shape, n, [options.k], shared=False) if fresh else 0.0
    rerun_methods = [m for m in options.methods if not registry.method(m).explainer.deterministic]
    rerun = options.rerun_fraction * _local_rows(local, rerun_methods, shape, n, [options.k], shared=False)
    # each set and its complement under the held-out and the robustness rows (the estimate's target and signal)
    heldout = n * len(options.methods) * 2 * (options.heldout_rows + options.robustness_rows)
    rows = queries * (first + rerun + n * len(options.methods) + heldout)
    fits = queries * (options.rerun_fraction * _fit_seconds(rerun_methods, local, shape.features)
                      + _fit_seconds(fresh, local, shape.features))
    ranked = options.rerun_fraction * _local_rows(local, rerun_methods, shape, n, [options.k], shared=True)
    if fresh:
        ranked += _local_rows(local, fresh, shape, n, [options.k], shared=True)
    fits += PAIR_SECONDS * queries * ranked / max(n, 1.0) * shape.pairs()  # masked rankings' tau
    return queries, int(rows), _building(rows, shape) + fits, (
        f"{queries} queries, {len(options.methods)} explainers rerun for stability"
        + ("; first runs shared with local_explanations" if reused else ""))


def decision_path_accuracy(options: Any, shape: Shape, earlier: Mapping[str, Any]) -> tuple[int, int, float, str]:
    queries, _ = shape.sample(options.queries)
    local = options  # its explainer sections (kernelshap, lime...) are those of local_explanations (the registry's)
    shared = _attributed(earlier.get("local_explanations"))  # explainers whose attributions are in the memo
    own = [e for e in options.explainers if e not in shared]
    rows = queries * sum(registry.EXPLAINERS[e].cost(local, shape, options.docs_per_query, 0.0, []) for e in own)
    # ground truth over every document (additivity) and the explained ones (1.7 s bookstore, 2.0 s wide data)
    extra = 1.5 + 1e-6 * shape.docs * shape.trees + 2e-7 * rows * shape.features ** 0.5
    reused = len(own) < len(options.explainers)
    return queries, int(rows), extra, (f"{queries} queries × {options.docs_per_query} documents, "
                                       f"{len(options.explainers)} explainers"
                                       + ("; attributions shared with local_explanations" if reused else ""))


def _attributed(local: Any) -> set[str]:
    """The attribution explainers an earlier local_explanations item ran (its methods' explainers); none without
    one. Their attributions for a query's top documents are in the memo for the items after it."""
    if local is None:
        return set()
    return {registry.method(m).explainer.name for m in local.methods if registry.method(m).attribution}


def pairwise(options: Any, shape: Shape, earlier: Mapping[str, Any]) -> tuple[int, int, float, str]:
    queries, _ = shape.sample(options.queries)
    pairs = queries * (options.top - 1)
    f = shape.features
    if options.method == "raipair":
        per_pair = options.raipair.permutations * 2 * f * 2 * (options.raipair.measurements or
                                                                 max(2, int(2 * 5 * math.log(max(f, 2)))))
    elif f <= options.exact_max_features:
        per_pair = 2 ** f * 2
    else:
        per_pair = options.permutations * f * 2
    fill = 23 if options.fill == "adaptive" else 1  # adaptive: weighted training neighbours per coalition
    rows = pairs * per_pair * fill
    # beside the model: each coalition's reference rows and weights (3.3e-6 s a row measured on the wide data)
    return queries, int(rows), 3.5e-6 * rows, f"{pairs} pairs × {options.permutations} permutations of " \
                                                       f"{f} features"


def global_importance(options: Any, shape: Shape, earlier: Mapping[str, Any]) -> tuple[int, int, float, str]:
    rows = shape.docs + 20
    extra = 1.5 + 4e-8 * shape.docs * shape.trees * 31  # TreeSHAP passes (compiled), plots
    longest = float(shape.sizes.max()) if shape.sizes.size else 0.0  # the waterfall's query: ranks among others
    extra += CELL_SECONDS * (options.waterfall_features + 1) * longest ** 2
    return shape.queries, rows, extra, f"TreeSHAP of {shape.docs:,} documents"


def surrogate(options: Any, shape: Shape, earlier: Mapping[str, Any]) -> tuple[int, int, float, str]:
    rows = shape.background_docs + options.synthetic_per_document * shape.background_docs
    # boosting under interaction constraints: histogram building grows with rows × features, early stopping
    # typically stops near 200 rounds per phase
    rounds = min(options.max_rounds, 200) * 2
    extra = 2.0 + 6e-9 * rows * shape.features * rounds * options.num_leaves / 8  # bookstore 4 s, wide 7-31 s
    return shape.queries, rows, extra, f"ILMART on {shape.background_docs:,} background documents × " \
                                       f"{shape.features} features"


def disclosure_consistency(options: Any, shape: Shape, earlier: Mapping[str, Any]) -> tuple[int, int, float, str]:
    shared = "global_importance" in earlier
    rows = 0 if shared else shape.docs
    extra = 0.3 + 1e-6 * options.resamples * shape.queries * shape.features
    if not shared:
        extra += 4e-8 * shape.docs * shape.trees * 31
    return shape.queries, rows, extra, f"{options.resamples} bootstrap samples of queries" + \
        ("; TreeSHAP shared with global_importance" if shared else "")


def parameter_influence(options: Any, shape: Shape, earlier: Mapping[str, Any]) -> tuple[int, int, float, str]:
    queries, n = shape.sample(options.queries, rankable=False)
    rows = int(queries * n * sum(1 + shape.distinct(f, options.sweep_points) for f in options.sensitive))
    rankings = sum(2 + shape.distinct(f, options.sweep_points) for f in options.sensitive)  # own, masked, swept
    cells = queries * CELL_SECONDS * rankings * 2 * shape.pairs(rankable=False)  # ranks among the others: n² each
    return queries, rows, 0.1 + 1e-6 * options.resamples * queries + cells, \
        f"{counted(len(options.sensitive), 'parameter')} masked and swept over {options.sweep_points} values"


def exposure(options: Any, shape: Shape, earlier: Mapping[str, Any]) -> tuple[int, int, float, str]:
    queries, n = shape.sample(options.queries, rankable=False)
    groups = len(options.groups())
    values = sum(shape.distinct(g, options.max_values) for g in options.groups())
    rows = int(queries * n * values) if options.counterfactual else 0
    return queries, rows, 0.3 + 2e-6 * options.resamples * queries * max(groups, 1), \
        f"{groups} group column(s), {options.resamples} bootstrap samples"


def selection_rates(options: Any, shape: Shape, earlier: Mapping[str, Any]) -> tuple[int, int, float, str]:
    """No model rows beyond the shared scores; the bootstrap's weighted medians and counts per draw and individual."""
    per_draw = shape.docs * (12.0 if options.cutoff == "median" else 4.0)
    return shape.queries, 0, 0.2 + 4e-9 * options.resamples * per_draw, \
        f"{options.resamples} bootstrap samples of {shape.docs:,} individuals"


def scores_only(options: Any, shape: Shape, earlier: Mapping[str, Any]) -> tuple[int, int, float, str]:
    return shape.queries, 0, 0.2 + 1e-5 * shape.docs, "measures on the scores"


def none(options: Any, shape: Shape, earlier: Mapping[str, Any]) -> tuple[int, int, float, str]:
    """The items every audit has (dataset and record facts): no model rows, next to no time."""
    return shape.queries, 0, 0.0, "facts of the data and the spec"
