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

from auditor.explain import registry

if TYPE_CHECKING:
    from auditor.run.cost import Shape

# Work on documents² per query, beside the model (a query of 20,000 documents has 200 million pairs), measured on
# this 2-core machine: Kendall's tau-b of a masked ranking (checks.validity, compiled for large calls) per document
# pair — 17 ms for 500 rankings of 180 documents —; ranks among the others (checks.influence) per document × document.
PAIR_SECONDS = 3e-9
CELL_SECONDS = 5e-9
BUILD_SECONDS = 2e-7  # × rows × √F: building masked rows to predict them (wide data, before scoring.masked_scoring)


def local_rows(local: Any, methods: list[str], shape: Shape, n: float, ks: list[int], *,
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


def step_rows(local: Any, methods: list[str], shape: Shape, n: float, ks: list[int]) -> float:
    """Of `local_rows`, a query's rows that come in search steps (the greedy family's and the validity search's:
    a set plus each candidate feature)."""
    return sum(registry.method(name).explainer.cost(local, shape, 0, n, ks) for name in methods
               if registry.method(name).explainer.steps)


def steps_saving(rows: float, shape: Shape) -> float:
    """Seconds search-step rows take less than the masked rows they are counted as: they score as families off
    the trees, at the probe's `search_rows_per_second` (≤ 0 added to an estimate's seconds beside the rows)."""
    masked, search = shape.masked_rows_per_second, shape.search_rows_per_second
    if not masked or not search or search <= masked:
        return 0.0
    return -rows * (1.0 / masked - 1.0 / search)


def fit_seconds(methods: list[str], local: Any, features: int) -> float:
    """Seconds per query of the explainers' own fits (KernelSHAP's weighted regression with its jackknife, LIRME's
    ridge, EXS's exact SVR) per document, for the most top documents any method explains."""
    docs: dict[str, int] = {}  # explainer -> the most top documents its methods explain
    for name in methods:
        method = registry.method(name)
        if method.explainer.fit is not None:
            docs[method.explainer.name] = max(docs.get(method.explainer.name, 0), method.docs)
    return sum(top * registry.EXPLAINERS[name].fit(local, features) for name, top in docs.items())  # type: ignore[misc]


def building(rows: float, shape: Shape) -> float:
    """Seconds to build masked rows (copies of the document with the masked features filled) before the model
    scores them; none when they are read off the trees."""
    return 0.0 if shape.masks_off_trees else BUILD_SECONDS * rows * shape.features ** 0.5


def attributed(local: Any) -> set[str]:
    """The attribution explainers an earlier local_explanations item ran (its methods' explainers); none without
    one. Their attributions for a query's top documents are in the memo for the items after it."""
    if local is None:
        return set()
    return {registry.method(m).explainer.name for m in local.methods if registry.method(m).attribution}


def scores_only(options: Any, shape: Shape, earlier: Mapping[str, Any]) -> tuple[int, int, float, str]:
    return shape.queries, 0, 0.2 + 1e-5 * shape.docs, "measures on the scores"


def none(options: Any, shape: Shape, earlier: Mapping[str, Any]) -> tuple[int, int, float, str]:
    """The items every audit has (dataset and record facts): no model rows, next to no time."""
    return shape.queries, 0, 0.0, "facts of the data and the spec"
