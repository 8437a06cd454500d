"""Exact decomposition of a tree ensemble whose root-to-leaf paths each use at most two features (ILMART).

A tree's output is Σ_leaves value · 1[x reaches the leaf], and the indicator of a leaf depends only on the
features of its path. So grouping leaves by their path's feature set — not trees by their features, since with
overlapping pairs one tree can hold {i, j} in one branch and {i, l} in another — splits the score into

    score(x) = bias + Σ_f m_f(x_f) + Σ_{i<j} p_ij(x_i, x_j)

exactly. Each effect is piecewise constant between the split thresholds of its own paths: a main effect is a table
over the bins (-inf, c₁], (c₁, c₂], …, (c_m, +inf) of its cuts, plus one entry for a missing value (NaN); a pair
is a 2-D table over both features' bins. Table entries are evaluated with the ensemble's own traversal at one
representative value per bin, so they follow LightGBM's decision rule, missing-value routing included. Single-leaf
trees (and LightGBM's boost-from-average offset held in them) go to the bias.

Exact for any thresholds. The traversal first reads the input as the library does (`read_inputs`: through float32
for scikit-learn; |x| ≤ 1e-35, −0.0 included, as 0, LightGBM's kZeroThreshold filter), so a bin's representative
must be a value that is still inside the bin once read: LightGBM writes "≤ 0" on a feature with negative values as
the threshold −1.0000000180025095e-35, and that cut itself is read as 0, which lies in the next bin. Candidates are
the upper cut, 0, the value just above the lower cut and the values just outside ±1e-35; the first one read inside
the bin is used (all of them route alike through every split: they compare alike with every cut). A bin no input
can reach (e.g. (−1e-35, 0) or (0, 1e-35], which only hold values read as 0) holds the value at its upper cut and is
never looked up. Lookups read x the same way before finding its bin. With a split whose missing type is `Zero`
(LightGBM's `zero_as_missing`), 0 goes to the default side whatever the threshold, so the feature gets the cuts
−1e-35 and 0 as well: 0 then has its own bin (−1e-35, 0]. NaN has its own entry: each split routes it as LightGBM
does (to the default side with missing type NaN or Zero, else as 0).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from auditor.scoring.trees import K_ZERO, LEAF, MISSING_ZERO, TreeEnsemble, UnsupportedModel


@dataclass(frozen=True)
class Effect:
    """One main effect (one feature) or pair effect (two features) as a table over bins.

    `cuts[a]` are feature `features[a]`'s sorted thresholds; `values` has one axis per feature, of length
    len(cuts[a]) + 2: the bins in order, then the missing-value (NaN) entry.
    """

    features: tuple[int, ...]
    cuts: tuple[np.ndarray, ...]
    values: np.ndarray
    n_leaves: int
    float32_inputs: bool = False  # the ensemble reads rows through float32 (scikit-learn)

    @property
    def is_pair(self) -> bool:
        return len(self.features) == 2

    def bin_index(self, axis: int, x: np.ndarray) -> np.ndarray:
        """The table index of each value on one axis: x read as the traversal reads it (`read_inputs`), then
        x <= cut goes left; NaN to the missing entry."""
        x = read_inputs(x, self.float32_inputs)
        cuts = self.cuts[axis]
        index = np.searchsorted(cuts, x, side="left")
        return np.where(np.isnan(x), len(cuts) + 1, index)

    def __call__(self, X: np.ndarray) -> np.ndarray:
        """The effect's value for every row of X (all features, model order)."""
        index = tuple(self.bin_index(a, X[:, f]) for a, f in enumerate(self.features))
        return self.values[index]


def read_inputs(x: np.ndarray, float32_inputs: bool = False) -> np.ndarray:
    """Values as the tree traversal reads them (auditor/scoring/trees.py `_leaf`): through float32 for scikit-learn
    ensembles, then |x| <= 1e-35 (LightGBM's kZeroThreshold, −0.0 included) as 0. NaN stays NaN."""
    x = np.asarray(x, dtype=np.float32 if float32_inputs else np.float64).astype(np.float64)
    return np.where(np.abs(x) <= K_ZERO, 0.0, x)


def representatives(cuts: np.ndarray, float32_inputs: bool = False) -> np.ndarray:
    """One value per bin (-inf, c₁], (c₁, c₂], …, (c_m, +inf) that is still inside its bin once read
    (`read_inputs`), then NaN for the missing entry (module docstring)."""
    below, above = np.nextafter(-K_ZERO, -np.inf), np.nextafter(K_ZERO, np.inf)
    out = []
    for i in range(len(cuts) + 1):
        low = cuts[i - 1] if i > 0 else None
        high = cuts[i] if i < len(cuts) else None
        candidates = [c for c in (high, 0.0, None if low is None else np.nextafter(low, np.inf), below, above)
                      if c is not None]
        if float32_inputs:  # the float32 values nearest each candidate, from below and above
            singles = np.asarray(candidates, dtype=np.float32)
            candidates += [*np.nextafter(singles, np.float32(-np.inf)).tolist(),
                           *np.nextafter(singles, np.float32(np.inf)).tolist(), *singles.tolist()]
        read = read_inputs(np.asarray(candidates, dtype=np.float64), float32_inputs)
        inside = (read > -np.inf if low is None else read > low) & (read <= np.inf if high is None else read <= high)
        if inside.any():
            out.append(float(np.asarray(candidates, dtype=np.float64)[np.argmax(inside)]))
        elif high is not None:  # no input can reach this bin: any value will do, it is never looked up
            out.append(float(high))
        else:  # the last bin, (c_m, +inf) (the one bin (-inf, +inf) holds 0.0)
            assert low is not None
            out.append(float(np.nextafter(low, np.inf)))
    return np.array([*out, np.nan])


@dataclass(frozen=True)
class Decomposition:
    bias: float
    effects: list[Effect]  # main effects first (by feature), then pairs (by feature pair)

    def contributions(self, X: np.ndarray) -> np.ndarray:
        """(rows × effects) table lookups; bias + row sums reproduce the model's raw score."""
        X = np.asarray(X, dtype=np.float64)
        if not self.effects:
            return np.zeros((X.shape[0], 0))
        return np.column_stack([effect(X) for effect in self.effects])

    def predict(self, X: np.ndarray) -> np.ndarray:
        return self.bias + self.contributions(X).sum(axis=1)

    @property
    def main_effects(self) -> list[Effect]:
        return [e for e in self.effects if not e.is_pair]

    @property
    def pair_effects(self) -> list[Effect]:
        return [e for e in self.effects if e.is_pair]


def path_feature_sets(ensemble: TreeEnsemble) -> dict[int, tuple[int, ...]]:
    """For every leaf (absolute node index), the sorted features of its root-to-leaf path."""
    out: dict[int, tuple[int, ...]] = {}
    for leaf in np.flatnonzero(ensemble.feature == LEAF):
        features = set()
        node = int(ensemble.parent[leaf])
        while node >= 0:
            features.add(int(ensemble.feature[node]))
            node = int(ensemble.parent[node])
        out[int(leaf)] = tuple(sorted(features))
    return out


def max_path_features(ensemble: TreeEnsemble) -> int:
    sets = path_feature_sets(ensemble)
    return max((len(s) for s in sets.values()), default=0)


def decompose(ensemble: TreeEnsemble) -> Decomposition:
    """Group leaves by their path's feature set and tabulate each group (module docstring)."""
    leaf_sets = path_feature_sets(ensemble)
    too_wide = [s for s in leaf_sets.values() if len(s) > 2]
    if too_wide:
        raise UnsupportedModel(f"root-to-leaf paths with {len(too_wide[0])} features (at most 2 can be tabulated)")
    tree_of = np.empty(ensemble.feature.shape[0], dtype=np.int64)
    bounds = [*ensemble.roots.tolist(), ensemble.feature.shape[0]]
    for t in range(ensemble.n_trees):
        tree_of[bounds[t]:bounds[t + 1]] = t
    weight = np.asarray(ensemble.weight)
    bias = float(ensemble.bias)
    groups: dict[tuple[int, ...], list[int]] = {}
    for leaf, features in leaf_sets.items():
        if not features:
            bias += float(weight[tree_of[leaf]] * ensemble.value[leaf])
        else:
            groups.setdefault(features, []).append(leaf)
    effects = [_tabulate(ensemble, features, np.array(leaves), weight[tree_of[leaves]])
               for features, leaves in sorted(groups.items(), key=lambda kv: (len(kv[0]), kv[0]))]
    return Decomposition(bias=bias, effects=effects)


def _tabulate(ensemble: TreeEnsemble, features: tuple[int, ...], leaves: np.ndarray, weights: np.ndarray) -> Effect:
    cuts = tuple(_cuts(ensemble, leaves, f) for f in features)
    reps = [representatives(c, ensemble.float32_inputs) for c in cuts]
    grids = np.meshgrid(*reps, indexing="ij")
    rows = np.zeros((grids[0].size, ensemble.n_features))
    for f, grid in zip(features, grids, strict=True):
        rows[:, f] = grid.ravel()
    trees = np.unique(np.searchsorted(ensemble.roots, leaves, side="right") - 1)
    reached = _leaf_indices(ensemble, rows, trees)
    member = np.zeros(ensemble.feature.shape[0])
    member[leaves] = weights * ensemble.value[leaves]
    values = member[reached].sum(axis=1).reshape(grids[0].shape)
    return Effect(features=features, cuts=cuts, values=values, n_leaves=len(leaves),
                  float32_inputs=ensemble.float32_inputs)


def _cuts(ensemble: TreeEnsemble, leaves: np.ndarray, feature: int) -> np.ndarray:
    """The feature's split thresholds on the leaves' paths; with zero-as-missing routing also −1e-35 and 0, so
    that 0 (which such a split sends to its default side) has a bin of its own."""
    nodes = set()
    for leaf in leaves:
        node = int(ensemble.parent[leaf])
        while node >= 0:
            if ensemble.feature[node] == feature:
                nodes.add(node)
            node = int(ensemble.parent[node])
    nodes_list = sorted(nodes)
    cuts = ensemble.threshold[nodes_list]
    if np.any(ensemble.missing[nodes_list] == MISSING_ZERO):
        cuts = np.concatenate([cuts, [-K_ZERO, 0.0]])
    return np.unique(cuts + 0.0)  # + 0.0: a −0.0 threshold is the cut 0


def _leaf_indices(ensemble: TreeEnsemble, rows: np.ndarray, trees: np.ndarray) -> np.ndarray:
    """Leaves reached by each row in the given trees only (a sub-ensemble shares the node arrays)."""
    sub = replace(ensemble, roots=ensemble.roots[trees].astype(np.int32), weight=None, bias=0.0)
    return sub.leaf_indices(rows)


def effect_name(effect: Effect, names: list[str]) -> str:
    return " × ".join(names[f] for f in effect.features)


def effect_record(effect: Effect, names: list[str], **extra: Any) -> dict[str, Any]:
    """Plain data for evidence.json: cuts in feature units and the table (missing entry separate)."""
    if effect.is_pair:
        table = effect.values[:-1, :-1]
        return {"effect": effect_name(effect, names), "features": [names[f] for f in effect.features],
                "cuts": [[float(c) for c in cuts] for cuts in effect.cuts],
                "values": [[round(float(v), 9) for v in row] for row in table], **extra}
    return {"effect": effect_name(effect, names), "features": [names[effect.features[0]]],
            "cuts": [float(c) for c in effect.cuts[0]], "values": [round(float(v), 9) for v in effect.values[:-1]],
            "missing_value": round(float(effect.values[-1]), 9), **extra}
