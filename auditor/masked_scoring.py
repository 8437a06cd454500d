"""Scores of masked documents read straight off the trees, without building the masked rows.

Most of an audit's model time goes to masked rows: a document x with every feature outside a keep-mask replaced by
one fill vector (`auditor.masking.Masker`: mean, median, zero). Building C masks × n documents rows for a predictor
walks every tree from the root for every row, deciding again and again splits no mask can change: a split sends x's
own value one way and the fill value one way, and where the two agree the mask does not matter.

So each document gets a jump table: from a node, follow the directions x and the fill agree on down to the first
leaf or split the mask decides. A mask then visits only those splits (2.6 nodes a tree instead of 8 on the wide
benchmark model). Directions are `auditor.trees._leaf`'s rule, one step at a time (`_child`), on the values as the
library reads them (float32 for scikit-learn, XGBoost and CatBoost; LightGBM's zero filter; NaN read as 0 unless the
split routes it; missing types Zero and NaN to the default side), and leaves are summed as `_score` sums them (tree
order, float64 from the bias, or XGBoost's float32 sum): scores are bit-identical to `TreeEnsemble.predict` of the
rows `np.where(keep, x, fill)`, and so to LightGBM's predict.

The table is built top-down, tree by tree, into a compact link table (`_masked`): only splits some mask can reach
are decided (2 in 5 on that model), and a walk reads two small arrays. The same table built bottom-up over
node-sized arrays is 2x slower, and walking every path with precomputed directions 5x
(benchmarks/masked_scoring.py). Documents run in parallel and masks inside, so a document's table serves all its
masks; each parallel task reuses four node-sized arrays.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import get_num_threads, njit, prange

from auditor.trees import _ZERO, MISSING_NAN, MISSING_ZERO, TreeEnsemble, UnsupportedModel


def masked_ensemble(model: Any) -> TreeEnsemble | None:
    """The array form `masked_scores` can use for `model` (a TreeEnsemble, or a ranker, counted or not, with
    `tree_ensemble()`), or None: not a tree model, or a part the array form does not cover (categorical splits,
    linear trees, multi-output). Any TreeEnsemble can be used. A ranker's `tree_ensemble()` may rebuild the
    arrays on every call (LightGBM dumps its model): keep the result."""
    if isinstance(model, TreeEnsemble):
        return model
    model = getattr(model, "inner", model)  # CountingRanker
    build = getattr(model, "tree_ensemble", None)
    if build is None:
        return None
    try:
        ensemble = build()
    except UnsupportedModel:
        return None
    return ensemble if isinstance(ensemble, TreeEnsemble) else None


def masked_scores(ensemble: TreeEnsemble, X: np.ndarray, fill: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """(C × n) scores of documents X (n × F) under keep-masks (C × F, True = the document's own value), every other
    feature set to `fill` (F values): `ensemble.predict(np.where(keep[:, None], X[None], fill))`, bit for bit.
    One fill row: a `background` Masker's several rows are one call each."""
    X = ensemble.rows(np.atleast_2d(X))
    fill = ensemble.rows(np.reshape(fill, (1, -1)))[0]
    keep = np.ascontiguousarray(np.atleast_2d(keep), dtype=np.bool_)
    if X.shape[1] < ensemble.n_features or fill.shape[0] != X.shape[1] or keep.ndim != 2 or keep.shape[1] != X.shape[1]:
        raise ValueError(f"X {X.shape}, fill {fill.shape} and keep {keep.shape} need the same columns, at least "
                         f"{ensemble.n_features}")
    e = ensemble
    by_fill = _fill_children(fill, e.feature, e.threshold, e.left, e.right, e.default_left, e.missing, e.zero_filter)
    out = np.empty((keep.shape[0], X.shape[0]))
    tasks = min(X.shape[0], 4 * get_num_threads())  # a few per thread: one slowed by other work holds up less
    if X.shape[0] and keep.shape[0]:
        _masked(X, keep, by_fill, e.feature, e.threshold, e.left, e.right, e.default_left, e.missing, e.value,
                e.roots, e.weight, float(e.bias), e.zero_filter, e.float32_sum, tasks, out)
    return out


@njit(cache=True, inline="always")
def _child(value, node, threshold, left, right, default_left, missing, zero_filter):
    """The child `auditor.trees._leaf` sends `value` to from split `node` (the same rule, one step)."""
    if zero_filter and -_ZERO <= value <= _ZERO:
        value = 0.0
    kind = missing[node]
    if np.isnan(value) and kind != MISSING_NAN:
        value = 0.0
    if (kind == MISSING_ZERO and -_ZERO <= value <= _ZERO) or (kind == MISSING_NAN and np.isnan(value)):
        return left[node] if default_left[node] else right[node]
    if value <= threshold[node]:
        return left[node]
    return right[node]


@njit(cache=True)
def _fill_children(fill, feature, threshold, left, right, default_left, missing, zero_filter):
    """Where the fill value goes at every split (-1 at leaves): the same for every document."""
    out = np.full(feature.shape[0], -1, dtype=np.int32)
    for node in range(feature.shape[0]):
        if feature[node] >= 0:
            out[node] = _child(fill[feature[node]], node, threshold, left, right, default_left, missing, zero_filter)
    return out


@njit(cache=True, inline="always")
def _leaf_under(link, feat, kept, n_trees, tree):
    """The leaf tree `tree` gives the document under keep-mask `kept`, through its link table (see `_masked`)."""
    k = link[tree]
    while k >= 0:
        k = link[n_trees + 2 * k + (0 if kept[feat[k]] else 1)]
    return -k - 1


@njit(cache=True, parallel=True)
def _masked(X, keep, by_fill, feature, threshold, left, right, default_left, missing, value, roots, weight, bias,
            zero_filter, float32_sum, n_tasks, out):
    """out[c, doc] = the score of document doc under mask c.

    Per document, the jump table is built depth-first, one tree at a time, as a link table over the mask-decided
    splits only, numbered k = 0, 1, ... as they are met: `link[t]` is where tree t starts, `link[n_trees + 2k]` and
    `link[n_trees + 2k + 1]` where split k leads when its feature `feat[k]` is kept and when it is filled; an entry
    is a split number k >= 0 or -(leaf + 1). Splits no mask can reach are never decided. Bounds: k < n_nodes, and
    the stack holds at most one entry more than the depth of a tree."""
    n_docs, n_nodes, n_trees = X.shape[0], feature.shape[0], roots.shape[0]
    for task in prange(n_tasks):
        link = np.empty(n_trees + 2 * n_nodes, dtype=np.int32)
        feat = np.empty(n_nodes, dtype=np.int32)
        slots = np.empty(n_nodes, dtype=np.int32)  # the depth-first stack: link entry to write, node it starts from
        starts = np.empty(n_nodes, dtype=np.int32)
        for doc in range(task * n_docs // n_tasks, (task + 1) * n_docs // n_tasks):
            x = X[doc]
            k = 0
            for tree in range(n_trees):
                slots[0], starts[0], top = tree, roots[tree], 1
                while top > 0:
                    top -= 1
                    slot, node = slots[top], starts[top]
                    own = node
                    while feature[node] >= 0:  # follow the splits x and the fill agree on
                        own = _child(x[feature[node]], node, threshold, left, right, default_left, missing,
                                     zero_filter)
                        if own != by_fill[node]:
                            break
                        node = own
                    if feature[node] < 0:
                        link[slot] = -(node + 1)
                        continue
                    link[slot], feat[k] = k, feature[node]
                    slots[top], starts[top] = n_trees + 2 * k, own
                    slots[top + 1], starts[top + 1] = n_trees + 2 * k + 1, by_fill[node]
                    top += 2
                    k += 1
            for c in range(keep.shape[0]):  # summed as auditor.trees._score sums
                kept = keep[c]
                if float32_sum:
                    small = np.float32(bias)
                    for tree in range(n_trees):
                        leaf = _leaf_under(link, feat, kept, n_trees, tree)
                        small = np.float32(small + np.float32(weight[tree] * value[leaf]))
                    out[c, doc] = np.float64(small)
                else:
                    total = bias
                    for tree in range(n_trees):
                        total += weight[tree] * value[_leaf_under(link, feat, kept, n_trees, tree)]
                    out[c, doc] = total
