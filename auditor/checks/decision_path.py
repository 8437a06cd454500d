"""Ground-truth feature importance from the decision paths of a tree ensemble (paper 001), and the similarity of an
explanation to it.

Ground truth, per document x (one row of X):

- **value change** (Saabas): walk every tree from the root to the leaf x reaches; each step from a split node p to
  its child c adds weight_t · (value(c) − value(p)) to p's split feature. The steps telescope, so
  bias + Σ_f g_f(x) = prediction(x) with bias = ensemble bias + Σ_t weight_t · value(root_t), whatever the node
  values of split nodes are. Two conventions for them (`node_values`):
  `count_weighted` (default) — the mean of the leaf values below the node, weighted by the training rows that
  reached each leaf (recomputed bottom-up from leaf values and counts). The root's value is then the tree's
  expected output over the training data, so the bias equals TreeSHAP's expected value (LightGBM `pred_contrib`'s
  last column; tested). For a scikit-learn regression tree it is the node's own `value` (the mean target).
  `internal` — the library's own value of the split node (LightGBM's `internal_value`: the regularised output the
  node would have as a leaf; about 0 at the root of a lambdarank tree, so the bias is about 0).
- **frequency**: in each tree, the share of the path's split nodes that split on f (a feature split on twice in a
  path of 4 splits gets 0.5), averaged over the trees. A tree that is a single leaf has no path and is left out of
  the average, so the frequencies of a document sum to 1 (0 for a model with no split at all).
- **depth**: the number of split nodes on the path, averaged over the same trees.

Similarity of an explanation e (one attribution per feature) to a ground truth g (both length F):

- `spearman`: Spearman's rank correlation of e and g (average ranks for ties); `spearman_abs` the same on |e|, |g|.
  Undefined (NaN) when either vector is constant — e.g. an all-zero explanation.
- `euclidean`: 1 / (1 + ‖ê − ĝ‖₂), where ê = e/‖e‖₂ and ĝ = g/‖g‖₂ (unit L2 norm, so the scale of an explainer's
  output — coefficients, Shapley values, frequencies — does not matter). A zero vector stays zero: both zero → 1,
  one zero → 0.5. Range [1/3, 1]: 1 = same direction, 1/3 = opposite.
- `auc` (top-K AUC, after Hsieh et al. as paper 001 uses it): the positives are the ground truth's top K features
  by |g| — every feature with fewer than K features strictly above it in |g| (so ties straddling the cut all count;
  the set can exceed K) and with g ≠ 0 (a feature the path never used is never a positive) — and |e| is the score;
  ROC AUC by the Mann-Whitney statistic with average ranks for ties (equal to scikit-learn's `roc_auc_score`,
  tested). Undefined (NaN) when there are no positives or no negatives.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from numba import njit, prange

from auditor.scoring.trees import TreeEnsemble

NodeValues = Literal["count_weighted", "internal"]
METRICS = ("spearman", "spearman_abs", "euclidean", "auc")


@dataclass(frozen=True)
class GroundTruth:
    """Per document (rows of X): value-change contributions and frequencies (n × F), path depth (n), the bias."""

    value_change: np.ndarray
    frequency: np.ndarray
    depth: np.ndarray
    bias: float
    node_values: NodeValues


def node_values(ensemble: TreeEnsemble, convention: NodeValues = "count_weighted") -> np.ndarray:
    """Every node's value under `convention` (leaves keep their value in both)."""
    if convention == "internal":
        values: np.ndarray = ensemble.value.astype(np.float64, copy=True)
        return values
    if convention != "count_weighted":
        raise ValueError(f"node_values must be 'count_weighted' or 'internal', not {convention!r}")
    internal = np.flatnonzero(ensemble.feature >= 0)
    if np.any(ensemble.left[internal] <= internal) or np.any(ensemble.right[internal] <= internal):
        raise ValueError("children must come after their parent in the node arrays")
    return _count_weighted(ensemble.feature, ensemble.left, ensemble.right, ensemble.value.astype(np.float64),
                           ensemble.count.astype(np.float64))


def ground_truth(ensemble: TreeEnsemble, X: np.ndarray, *, values: NodeValues = "count_weighted") -> GroundTruth:
    """Value-change and frequency ground truth and path depth for every row of X."""
    leaves = ensemble.leaf_indices(X)
    node_value = node_values(ensemble, values)
    n, n_features = leaves.shape[0], ensemble.n_features
    contrib, freq, depth = np.zeros((n, n_features)), np.zeros((n, n_features)), np.zeros(n)
    weight = np.asarray(ensemble.weight, dtype=np.float64)
    _paths(leaves, ensemble.feature, ensemble.parent, node_value, weight, contrib, freq, depth)
    bias = float(ensemble.bias) + float(np.sum(weight * node_value[ensemble.roots]))
    return GroundTruth(value_change=contrib, frequency=freq, depth=depth, bias=bias, node_values=values)


@njit(cache=True)
def _count_weighted(feature: np.ndarray, left: np.ndarray, right: np.ndarray, value: np.ndarray, count: np.ndarray
                    ) -> np.ndarray:
    """Bottom-up (children have larger indices): count-weighted mean of the children, counts summed. If both
    children have count 0 (a model saved without counts) the plain mean of the two children is used."""
    v = value.copy()
    c = count.copy()
    for node in range(feature.shape[0] - 1, -1, -1):
        if feature[node] >= 0:
            a, b = left[node], right[node]
            total = c[a] + c[b]
            v[node] = (c[a] * v[a] + c[b] * v[b]) / total if total > 0 else 0.5 * (v[a] + v[b])
            c[node] = total
    return v


@njit(cache=True, parallel=True)
def _paths(leaves: np.ndarray, feature: np.ndarray, parent: np.ndarray, value: np.ndarray, weight: np.ndarray,
           contrib: np.ndarray, freq: np.ndarray, depth: np.ndarray) -> None:
    n_rows, n_trees = leaves.shape
    for row in prange(n_rows):
        used = 0
        total_depth = 0.0
        for tree in range(n_trees):
            node = leaves[row, tree]
            up = parent[node]
            length = 0
            while up >= 0:
                contrib[row, feature[up]] += weight[tree] * (value[node] - value[up])
                length += 1
                node = up
                up = parent[node]
            if length > 0:
                share = 1.0 / length
                up = parent[leaves[row, tree]]
                while up >= 0:
                    freq[row, feature[up]] += share
                    up = parent[up]
                used += 1
                total_depth += length
        if used > 0:
            for f in range(freq.shape[1]):
                freq[row, f] /= used
            depth[row] = total_depth / used


# --- similarity ---------------------------------------------------------------------------------------------------

def rank_vector(x: np.ndarray, method: str = "average") -> np.ndarray:
    """`scipy.stats.rankdata` of a vector, same values (average or min ranks, ties by equality; a NaN anywhere makes
    every rank NaN), without its per-call overhead: a run ranks tens of thousands of short vectors."""
    x = np.asarray(x, dtype=np.float64).reshape(-1)
    if np.isnan(x).any():
        return np.full(x.shape, np.nan)
    order = np.argsort(x, kind="stable")
    ordered = x[order]
    starts = np.flatnonzero(np.concatenate([[True], ordered[1:] != ordered[:-1]])) if x.size else np.zeros(0, int)
    counts = np.diff(np.append(starts, x.size))
    lowest = starts + 1.0
    ranks = lowest + (counts - 1) / 2.0 if method == "average" else lowest
    out = np.empty(x.size)
    out[order] = np.repeat(ranks, counts)
    return out


def spearman(e: np.ndarray, g: np.ndarray) -> float:
    """Spearman's rho with average ranks; NaN if either vector is constant (or not finite)."""
    e, g = np.asarray(e, dtype=np.float64), np.asarray(g, dtype=np.float64)
    if not (np.all(np.isfinite(e)) and np.all(np.isfinite(g))) or np.ptp(e) == 0 or np.ptp(g) == 0:
        return float("nan")
    a, b = rank_vector(e), rank_vector(g)
    a, b = a - a.mean(), b - b.mean()
    return float(np.clip((a @ b) / np.sqrt((a @ a) * (b @ b)), -1.0, 1.0))


def euclidean_similarity(e: np.ndarray, g: np.ndarray) -> float:
    """1 / (1 + ‖e/‖e‖ − g/‖g‖‖₂); a zero vector stays zero."""
    return float(1.0 / (1.0 + np.linalg.norm(_unit(e) - _unit(g))))


def _unit(v: np.ndarray) -> np.ndarray:
    v = np.asarray(v, dtype=np.float64)
    norm = np.linalg.norm(v)
    return v / norm if norm > 0 else v


def top_k_positives(g: np.ndarray, k: int) -> np.ndarray:
    """Boolean mask of the ground truth's top-k features by |g| (ties at the cut all in; g = 0 never in)."""
    magnitude = np.abs(np.asarray(g, dtype=np.float64))
    strictly_above = rank_vector(-magnitude, method="min") - 1  # features strictly more important
    return (strictly_above < k) & (magnitude > 0)


def top_k_auc(e: np.ndarray, g: np.ndarray, k: int) -> float:
    """ROC AUC of |e| against the top-k positives of g; NaN if all or none are positive."""
    return float(auc_curve(e, g, [k])[0])


def auc_curve(e: np.ndarray, g: np.ndarray, ks: list[int] | range) -> np.ndarray:
    """Top-K AUC for each K in `ks` (|e| ranked once)."""
    ranks = rank_vector(np.abs(np.asarray(e, dtype=np.float64)))
    out = np.full(len(ks), np.nan)
    for i, k in enumerate(ks):
        positive = top_k_positives(g, int(k))
        n_pos = int(positive.sum())
        n_neg = positive.size - n_pos
        if n_pos and n_neg:
            out[i] = (ranks[positive].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg)
    return out


def similarity(e: np.ndarray, g: np.ndarray, *, top_k: int = 5) -> dict[str, float]:
    """All four measures of one explanation against one ground truth."""
    e, g = np.asarray(e, dtype=np.float64), np.asarray(g, dtype=np.float64)
    return {"spearman": spearman(e, g), "spearman_abs": spearman(np.abs(e), np.abs(g)),
            "euclidean": euclidean_similarity(e, g), "auc": top_k_auc(e, g, top_k)}
