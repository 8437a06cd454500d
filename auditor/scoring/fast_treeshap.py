"""Path-dependent TreeSHAP on a `TreeEnsemble`, compiled with numba: LightGBM's `pred_contrib`, faster.

Why a new implementation: shap's TreeExplainer on a LightGBM booster just calls `predict(pred_contrib=True)`,
Lundberg et al.'s Algorithm 2, which costs O(L·D²) per row and tree (L leaves, D path length). Global importance
on large data pays that for every document.

The idea (in the spirit of Fast TreeSHAP v2, Yang 2021): a leaf with value v whose root path tests the distinct
features K (|K| = k), with zero fractions z_j (the product of the cover ratios of its splits on j) and, for a row,
one fractions o_j ∈ {0, 1} (1 when the row follows the path at every split on j), adds to feature i

    φ_i = v (o_i − z_i) Σ_{S ⊆ K∖i} |S|!(k−|S|−1)!/k! Π_{j∈S} o_j Π_{j∈K∖i∖S} z_j.

Because o is 0/1, only the "hot" set O = {j : o_j = 1} matters. With G(M) = Σ_{S⊆M} w(|S|) Π_{j∈K∖S} z_j,
a cold feature (i ∉ O) gets −v·G(O) and a hot one gets v·(1 − z_i)/z_i · G(O∖i). G is tabulated once per leaf
for all 2^k masks (elementary symmetric polynomials, no cancellation: every term is positive), so a row costs one
pass over a tree's nodes to find each leaf's hot mask plus O(k) table reads per leaf: O(L·k), not O(L·k²).
Leaves with more than `max_table_bits` distinct path features (fewer when all tables would pass
`max_table_bytes`) use the same formula computed directly for each row, O(k³); exactness does not depend on it.

The cold terms cost no per-leaf work: write every path feature's share as −v·G(O) plus, for a hot one, the
correction v·(1 − z_i)/z_i · G(O∖i) + v·G(O). A feature f is on the path of exactly the leaves below the topmost
splits on f, so Σ_leaves −v·G(O) over those leaves is one subtree sum at each such split (`first`): one bottom-up
pass over the tree's nodes, then one add per topmost split, instead of k adds per leaf. What remains per leaf is
one read of G(O) and the hot corrections (3.6 of 5.9 path features on average for the benchmark's model; the loop
runs over all k bits, a cold one adding 0, because a branch-free loop over the block's rows beats skipping).

Layout, which is where the speed is (docs/benchmarks.md): rows go in blocks of `_BLOCK`, one prange task each;
inside a block trees are the outer loop and rows the inner one, so a tree's nodes and tables (72 kB on average for
the benchmark's model) are read from cache for every row of the block instead of from memory (all its tables: 36 MB)
for every row. The block's
rows are transposed (feature × row) and the contributions accumulated feature × row, so the inner loops over rows
are contiguous and branch-free: a split sets its children's hot masks for all rows at once, a leaf adds one
feature's correction for all rows at once.

Rows follow LightGBM's decision rule exactly as `TreeEnsemble` models it (|x| <= 1e-35 is 0 when the ensemble
has LightGBM's `zero_filter`, NaN becomes 0 unless the split routes NaN, default_left for the missing value;
XGBoost's and CatBoost's ensembles are stated in that form by `auditor.scoring.trees`), and the bias column is the
cover-weighted mean leaf value of every tree (LightGBM's `Tree::ExpectedValue`), times the tree weights, plus the
ensemble bias.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit, prange

from auditor.scoring.trees import K_ZERO, MISSING_NAN, MISSING_ZERO, TreeEnsemble, UnsupportedModel

_MAX_BITS = 63  # hot masks are int64 bit sets of a path's distinct features
_BLOCK = 128  # rows a prange task explains together (64-512 measured alike; 32 is slower)


@dataclass(frozen=True)
class _Tables:
    """Per-node and per-leaf arrays the kernel reads (absolute node indices, as in `TreeEnsemble`)."""

    node_bit: np.ndarray  # int32: bit of the node's split feature in its path's distinct features; -1 leaf
    first: np.ndarray  # bool per node: a split on a feature no ancestor splits on (where cold terms are summed)
    leaf_start: np.ndarray  # int64 per node: offset into leaf_feature / leaf_ratio; -1 for split nodes
    leaf_k: np.ndarray  # int32 per node: number of distinct path features of a leaf
    leaf_table: np.ndarray  # int64 per node: offset into `table`, -1 when the leaf is computed directly
    leaf_feature: np.ndarray  # int32, the features of each leaf's bits
    leaf_zero: np.ndarray  # float64, z_j of each leaf's bits
    leaf_ratio: np.ndarray  # float64, (1 − z_j)/z_j of each leaf's bits (0 where z_j = 0)
    table: np.ndarray  # float64, weight · value · G(M) of every tabulated leaf
    ends: np.ndarray  # int32 per tree: one past its last node
    expected: float  # the bias column


class FastTreeShap:
    """Exact path-dependent TreeSHAP of a `TreeEnsemble`; build once per model, then call `shap_values`.

    `contributions(X)` returns (rows × (F + 1)) like LightGBM's `pred_contrib` (last column: expected value).
    """

    def __init__(self, ensemble: TreeEnsemble, max_table_bits: int = 14, max_table_bytes: int = 512 << 20) -> None:
        self.ensemble = ensemble
        self.tables = _build(ensemble, max_table_bits, max_table_bytes)

    @property
    def expected_value(self) -> float:
        return self.tables.expected

    def contributions(self, X: np.ndarray) -> np.ndarray:
        X = self.ensemble.rows(X)
        if X.ndim != 2 or X.shape[1] < self.ensemble.n_features:
            raise ValueError(f"X must be 2-D with at least {self.ensemble.n_features} columns, got {X.shape}")
        e, t = self.ensemble, self.tables
        out = np.zeros((X.shape[0], e.n_features + 1))
        block = max(1, min(_BLOCK, -(-X.shape[0] // 8)))  # small inputs: still a task per thread
        _shap_rows(X, e.feature, e.threshold, e.left, e.right, e.default_left, e.missing, e.value, e.roots,
                   e.weight, t.ends, t.node_bit, t.first, t.leaf_start, t.leaf_k, t.leaf_table, t.leaf_feature,
                   t.leaf_zero, t.leaf_ratio, t.table, block, e.zero_filter, out)
        out[:, e.n_features] = t.expected
        return out

    def shap_values(self, X: np.ndarray) -> np.ndarray:
        """(rows × F): the contributions without the bias column, like `shap.TreeExplainer.shap_values`."""
        return self.contributions(X)[:, :-1]


def _build(e: TreeEnsemble, max_table_bits: int, max_table_bytes: int) -> _Tables:
    """Each node's bit, each leaf's distinct features and zero fractions, and the G tables."""
    assert e.weight is not None  # TreeEnsemble.__post_init__ fills it in
    n = e.feature.shape[0]
    ends = np.append(e.roots[1:], n).astype(np.int32)
    node_bit = np.full(n, -1, dtype=np.int32)
    first = np.zeros(n, dtype=np.bool_)
    leaf_start = np.full(n, -1, dtype=np.int64)
    leaf_k = np.zeros(n, dtype=np.int32)
    leaf_table = np.full(n, -1, dtype=np.int64)
    features: list[int] = []
    zeros: list[float] = []
    expected = float(e.bias)
    paths: dict[int, tuple[list[int], list[float]]] = {}
    tabulable: list[tuple[int, int]] = []
    for t in range(e.n_trees):
        root, end = int(e.roots[t]), int(ends[t])
        if e.feature[root] < 0:  # a single leaf: always its value
            expected += float(e.weight[t]) * float(e.value[root])
        else:
            expected += float(e.weight[t]) * _tree_expected(e, root, end)
        paths.clear()
        paths[root] = ([], [])
        for node in range(root, end):
            feats, zs = paths.pop(node)
            f = int(e.feature[node])
            if f < 0:
                leaf_start[node] = len(features)
                leaf_k[node] = len(feats)
                features.extend(feats)
                zeros.extend(zs)
                if all(z > 0.0 for z in zs):  # (1 − z)/z needs z > 0; a leaf no training row reached goes direct
                    tabulable.append((node, len(feats)))
                continue
            if f in feats:
                bit = feats.index(f)
            else:
                first[node] = True
                bit = len(feats)
                if bit >= _MAX_BITS:
                    raise UnsupportedModel(f"a tree path with more than {_MAX_BITS} distinct features")
                feats, zs = [*feats, f], [*zs, 1.0]
            node_bit[node] = bit
            parent_count = float(e.count[node])
            for child in (int(e.left[node]), int(e.right[node])):
                child_zs = list(zs)
                child_zs[bit] = child_zs[bit] * (float(e.count[child]) / parent_count if parent_count > 0 else 0.0)
                paths[child] = (list(feats), child_zs)
    bits = max_table_bits  # fewer bits when the tables would pass the memory budget
    while bits > 0 and sum(1 << k for _, k in tabulable if k <= bits) * 8 > max_table_bytes:
        bits -= 1
    table_size = 0
    for node, k in tabulable:
        if k <= bits:
            leaf_table[node] = table_size
            table_size += 1 << k
    leaf_feature = np.array(features, dtype=np.int32)
    leaf_zero = np.array(zeros, dtype=np.float64)
    leaf_ratio = np.divide(1.0 - leaf_zero, leaf_zero, out=np.zeros_like(leaf_zero), where=leaf_zero > 0)
    tree_of = np.repeat(np.arange(e.n_trees), np.diff(np.append(e.roots, n)))
    scale = e.weight[tree_of] * e.value  # folded into each leaf's table: one multiply less per read
    table = np.empty(table_size)
    _fill_tables(leaf_start, leaf_k, leaf_table, leaf_zero, scale, table)
    return _Tables(node_bit, first, leaf_start, leaf_k, leaf_table, leaf_feature, leaf_zero, leaf_ratio, table, ends,
                   expected)


def _tree_expected(e: TreeEnsemble, root: int, end: int) -> float:
    """LightGBM's Tree::ExpectedValue: Σ_leaves (leaf count / root count) · leaf value, in leaf order."""
    total = float(e.count[root])
    out = 0.0
    for node in range(root, end):
        if e.feature[node] < 0:
            out += (float(e.count[node]) / total) * float(e.value[node])
    return out


@njit(cache=True)
def _shapley_weights(k: int) -> np.ndarray:
    """w(s) = s!(k−s−1)!/k! for s = 0..k−1, as a product of ratios (no factorial overflow)."""
    w = np.empty(max(k, 1))
    for s in range(k):
        value = 1.0 / k
        # s!(k-1-s)!/(k-1)! = 1 / C(k-1, s)
        for j in range(1, s + 1):
            value *= j / (k - s - 1 + j)
        w[s] = value
    return w


@njit(cache=True)
def _fill_tables(leaf_start, leaf_k, leaf_table, leaf_zero, scale, table):
    """scale · G(M) for every tabulated leaf and mask M, with G(M) = Q(K∖M) · Σ_s w(s) e_{|M|−s}(z_M)."""
    for node in range(leaf_k.shape[0]):
        offset = leaf_table[node]
        if offset < 0:
            continue
        k = leaf_k[node]
        z = leaf_zero[leaf_start[node]: leaf_start[node] + k]
        size = 1 << k
        if k == 0:
            table[offset] = 0.0
            continue
        w = _shapley_weights(k)
        poly = np.zeros((size, k + 1))  # elementary symmetric polynomials of z over M
        prod = np.ones(size)  # Π_{j∈M} z_j
        poly[0, 0] = 1.0
        popcount = np.zeros(size, dtype=np.int64)
        j = -1
        for m in range(1, size):
            if m == 1 << (j + 1):
                j += 1  # the highest set bit of m
            base = m ^ (1 << j)
            popcount[m] = popcount[base] + 1
            prod[m] = prod[base] * z[j]
            poly[m, 0] = 1.0
            for d in range(1, popcount[m] + 1):
                poly[m, d] = poly[base, d] + z[j] * poly[base, d - 1]
        full = size - 1
        for m in range(size):
            c = popcount[m]
            total = 0.0
            for s in range(c + 1):
                if s < k:
                    total += w[s] * poly[m, c - s]
            table[offset + m] = scale[node] * (prod[full ^ m] * total)


@njit(cache=True, inline="always")
def _split(xs, nb, kind, threshold, default_left, bit, mask, here, lo, hi):
    """Children's hot masks for the block's rows at one split: the side a row does not take loses `bit`.

    LightGBM's NumericalDecision on values already read through its C API filter (|x| <= 1e-35 is 0, done when
    the block is transposed): NaN becomes 0 unless the split routes NaN; the missing value goes `default_left`;
    otherwise x <= threshold goes left. The same rule as `trees._leaf`, one loop per missing type so each
    loop is branch-free.
    """
    dl = np.int64(default_left)
    if kind == MISSING_NAN:
        for r in range(nb):
            x = xs[r]
            go = dl if np.isnan(x) else np.int64(x <= threshold)
            m = mask[here, r]
            mask[lo, r] = m & ~(bit * (1 - go))
            mask[hi, r] = m & ~(bit * go)
    elif kind == MISSING_ZERO:
        for r in range(nb):
            x = xs[r]
            x = 0.0 if np.isnan(x) else x
            go = dl if x == 0.0 else np.int64(x <= threshold)
            m = mask[here, r]
            mask[lo, r] = m & ~(bit * (1 - go))
            mask[hi, r] = m & ~(bit * go)
    else:
        for r in range(nb):
            x = xs[r]
            go = np.int64((0.0 if np.isnan(x) else x) <= threshold)
            m = mask[here, r]
            mask[lo, r] = m & ~(bit * (1 - go))
            mask[hi, r] = m & ~(bit * go)


@njit(cache=True)
def _direct(k: int, hot: int, z: np.ndarray, feats: np.ndarray, v: float, phi: np.ndarray, r: int) -> None:
    """The leaf's whole contribution to row r of phi (feature × row) without a table, O(k³): deep leaves only."""
    w = _shapley_weights(k)
    poly = np.empty(k + 1)
    for i in range(k):
        # G over K∖i with hot set O∖i, times (o_i − z_i) · v; out of K∖i the cold ones contribute their z.
        poly[0] = 1.0
        size = 0
        cold = 1.0
        for j in range(k):
            if j == i:
                continue
            if (hot >> j) & 1:
                size += 1
                poly[size] = 0.0
                for d in range(size, 0, -1):
                    poly[d] += z[j] * poly[d - 1]
            else:
                cold *= z[j]
        total = 0.0
        for s in range(size + 1):
            total += w[s] * poly[size - s]
        o_i = 1.0 if (hot >> i) & 1 else 0.0
        phi[feats[i], r] += v * (o_i - z[i]) * cold * total


@njit(cache=True, parallel=True)
def _shap_rows(X, feature, threshold, left, right, default_left, missing, value, roots, weight, ends, node_bit, first,
               leaf_start, leaf_k, leaf_table, leaf_feature, leaf_zero, leaf_ratio, table, block, zero_filter, out):
    """out[:, :F] = the contributions of every row (see the module docstring for the loop order)."""
    n_rows = X.shape[0]
    n_features = out.shape[1] - 1
    n_blocks = (n_rows + block - 1) // block
    max_nodes = 1
    for t in range(roots.shape[0]):
        max_nodes = max(max_nodes, ends[t] - roots[t])
    for c in prange(n_blocks):
        r0 = c * block
        nb = min(n_rows, r0 + block) - r0
        xt = np.empty((n_features, block))  # the block's rows, feature × row, through LightGBM's zero filter
        for r in range(nb):
            for f in range(n_features):
                x = X[r0 + r, f]
                xt[f, r] = 0.0 if zero_filter and -K_ZERO <= x <= K_ZERO else x
        phi = np.zeros((n_features, block))
        mask = np.empty((max_nodes, block), dtype=np.int64)  # hot mask of each node of the tree, per row
        total = np.empty((max_nodes, block))  # Σ v·G(O) over each node's tabulated leaves, per row
        hots = np.empty(block, dtype=np.int64)
        cold = np.empty(block)
        for t in range(roots.shape[0]):
            root = roots[t]
            if feature[root] < 0:  # a single leaf: no contributions
                continue
            wt = weight[t]
            mask[0, :nb] = -1
            for node in range(root, ends[t]):
                here = node - root
                f = feature[node]
                if f >= 0:
                    _split(xt[f], nb, missing[node], threshold[node], default_left[node],
                           np.int64(1) << node_bit[node], mask, here, left[node] - root, right[node] - root)
                    continue
                k = leaf_k[node]
                start = leaf_start[node]
                offset = leaf_table[node]
                keep = (np.int64(1) << k) - 1
                if offset < 0 or wt * value[node] == 0.0:
                    total[here, :nb] = 0.0
                    if offset < 0 and wt * value[node] != 0.0:
                        for r in range(nb):
                            _direct(k, mask[here, r] & keep, leaf_zero[start: start + k],
                                    leaf_feature[start: start + k], wt * value[node], phi, r)
                    continue
                for r in range(nb):
                    hot = mask[here, r] & keep
                    hots[r] = hot
                    cold[r] = table[offset + hot]
                    total[here, r] = cold[r]
                for b in range(k):  # hot corrections, all rows at once; a cold bit adds 0
                    f = leaf_feature[start + b]
                    ratio = leaf_ratio[start + b]
                    for r in range(nb):
                        h = (hots[r] >> b) & 1
                        phi[f, r] += h * (ratio * table[offset + (hots[r] ^ (h << b))] + cold[r])
            for node in range(ends[t] - 1, root - 1, -1):  # children before parents: subtree sums
                f = feature[node]
                if f < 0:
                    continue
                here = node - root
                lo, hi = left[node] - root, right[node] - root
                for r in range(nb):
                    total[here, r] = total[lo, r] + total[hi, r]
                if first[node]:  # every leaf below has f on its path and this is its topmost split on f
                    for r in range(nb):
                        phi[f, r] -= total[here, r]
        for r in range(nb):
            for f in range(n_features):
                out[r0 + r, f] = phi[f, r]
