"""One normalised array form for tree ensembles, and a compiled predictor over it.

`TreeEnsemble` flattens every tree of a model into node arrays (feature, threshold, children, parent, value,
count, missing-value routing), so anything that walks trees — prediction, decision-path ground truth, ILMART
decomposition — reads one layout whatever library trained the model.

`predict` is a numba kernel that follows LightGBM's numerical decision rule exactly (tree.h,
NumericalDecision), after the C API's input filter (|x| <= 1e-35 is read as 0): NaN becomes 0 unless the split
routes NaN; a split whose missing type is Zero sends 0 to the default side, one whose missing type is NaN sends NaN
there; otherwise x <= threshold goes left. Trees are summed in model order, as LightGBM does, so scores are
bit-identical (tests/test_trees.py). It is not faster than LightGBM's own predictor (0.7-1.1x measured), so the
LightGBM ranker keeps LightGBM's; the kernel is the executable proof that the array form is the model.

scikit-learn trees (`from_sklearn`: DecisionTreeRegressor, ExtraTreeRegressor, GradientBoostingRegressor,
RandomForestRegressor, ExtraTreesRegressor) use the same layout: a per-tree `weight` (1 for boosting, whose leaf
values are stored already multiplied by the learning rate; 1/n_trees for forests, which average) and a `bias` (the
boosting init prediction; 0 otherwise). scikit-learn reads X as float32 before comparing with its float64
thresholds, so such ensembles set `float32_inputs` and every traversal casts rows the same way; NaN goes to the
side scikit-learn's `missing_go_to_left` names. The score is bias + Σ_t weight_t · leaf value_t.

`leaf_indices` gives the leaf (absolute node index) each row reaches in each tree: what decision-path ground truth
(auditor/checks/decision_path.py) walks back to the root.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numba import njit, prange

LEAF = -1
MISSING_NONE, MISSING_ZERO, MISSING_NAN = 0, 1, 2
_MISSING = {"None": MISSING_NONE, "Zero": MISSING_ZERO, "NaN": MISSING_NAN}
_ZERO = float(np.float32(1e-35))  # LightGBM's kZeroThreshold (a float)


class UnsupportedModel(ValueError):
    """The model has a part the array form does not cover (categorical splits, linear trees, multiclass)."""


@dataclass(frozen=True)
class TreeEnsemble:
    """All trees' nodes in flat arrays; node `roots[t]` is tree t's root; `feature == -1` marks a leaf.

    `value` is the leaf value for leaves and the library's internal value for split nodes; `count` is the number
    (scikit-learn: the weighted number) of training rows that reached the node. A child's index is always larger
    than its parent's. `weight[t]` multiplies tree t's output and `bias` is added once (see the module doc).
    """

    feature: np.ndarray  # int32
    threshold: np.ndarray  # float64
    left: np.ndarray  # int32, absolute node index
    right: np.ndarray  # int32
    parent: np.ndarray  # int32, -1 for roots
    default_left: np.ndarray  # bool
    missing: np.ndarray  # int8: 0 none, 1 zero, 2 NaN
    value: np.ndarray  # float64
    count: np.ndarray  # float64
    roots: np.ndarray  # int32
    n_features: int
    weight: np.ndarray | None = None  # float64 per tree; None → all 1
    bias: float = 0.0
    float32_inputs: bool = False  # scikit-learn: rows are cast to float32 before the comparisons

    def __post_init__(self) -> None:
        if self.weight is None:
            object.__setattr__(self, "weight", np.ones(self.roots.shape[0]))

    @property
    def n_trees(self) -> int:
        return int(self.roots.shape[0])

    @classmethod
    def from_lightgbm(cls, dump: dict[str, Any]) -> TreeEnsemble:
        """From `Booster.dump_model()`; numerical splits of a single-output model only."""
        if dump.get("num_class", 1) != 1 or dump.get("num_tree_per_iteration", 1) != 1:
            raise UnsupportedModel("multi-output models")
        if dump.get("average_output"):
            raise UnsupportedModel("random-forest mode (averaged output)")
        nodes: dict[str, list[Any]] = {k: [] for k in ("feature", "threshold", "left", "right", "parent",
                                                       "default_left", "missing", "value", "count")}
        roots = []
        for info in dump["tree_info"]:
            roots.append(len(nodes["feature"]))
            _flatten(info["tree_structure"], -1, nodes)
        return cls(
            feature=np.array(nodes["feature"], dtype=np.int32),
            threshold=np.array(nodes["threshold"], dtype=np.float64),
            left=np.array(nodes["left"], dtype=np.int32), right=np.array(nodes["right"], dtype=np.int32),
            parent=np.array(nodes["parent"], dtype=np.int32),
            default_left=np.array(nodes["default_left"], dtype=np.bool_),
            missing=np.array(nodes["missing"], dtype=np.int8),
            value=np.array(nodes["value"], dtype=np.float64), count=np.array(nodes["count"], dtype=np.float64),
            roots=np.array(roots, dtype=np.int32), n_features=int(dump["max_feature_idx"]) + 1,
        )

    @classmethod
    def from_sklearn(cls, estimator: Any) -> TreeEnsemble:
        """From a fitted single-output scikit-learn tree regressor, forest or gradient-boosting regressor."""
        name = type(estimator).__name__
        if hasattr(estimator, "tree_"):
            trees, weights, bias = [estimator.tree_], [1.0], 0.0
        elif hasattr(estimator, "learning_rate") and hasattr(estimator, "init_"):  # gradient boosting
            stages = np.asarray(estimator.estimators_, dtype=object)
            if stages.ndim == 2 and stages.shape[1] != 1:
                raise UnsupportedModel(f"multi-output {name}")
            trees = [e.tree_ for e in stages.reshape(-1)]
            weights = [1.0] * len(trees)  # the learning rate is folded into the leaf values below
            n_features = int(estimator.n_features_in_)
            bias = float(np.ravel(estimator._raw_predict_init(np.zeros((1, n_features), dtype=np.float32)))[0])
        elif hasattr(estimator, "estimators_"):  # forest: the average of its trees
            trees = [e.tree_ for e in estimator.estimators_]
            weights, bias = [1.0 / len(trees)] * len(trees), 0.0
        else:
            raise UnsupportedModel(f"'{name}' is not a scikit-learn tree model")
        scale = float(getattr(estimator, "learning_rate", 1.0)) if hasattr(estimator, "init_") else 1.0
        parts: dict[str, list[np.ndarray]] = {k: [] for k in ("feature", "threshold", "left", "right", "parent",
                                                            "default_left", "value", "count")}
        roots, offset = [], 0
        for tree in trees:
            if tree.n_outputs != 1 or tree.value.shape[2] != 1:
                raise UnsupportedModel(f"multi-output {name}")
            n = int(tree.node_count)
            leaf = tree.children_left == -1
            internal = np.flatnonzero(~leaf)
            parent = np.full(n, -1, dtype=np.int64)
            parent[tree.children_left[internal]] = internal
            parent[tree.children_right[internal]] = internal
            roots.append(offset)
            parts["feature"].append(np.where(leaf, LEAF, tree.feature))
            parts["threshold"].append(np.where(leaf, 0.0, tree.threshold))
            parts["left"].append(np.where(leaf, LEAF, tree.children_left + offset))
            parts["right"].append(np.where(leaf, LEAF, tree.children_right + offset))
            parts["parent"].append(np.where(parent >= 0, parent + offset, -1))
            go_left = getattr(tree, "missing_go_to_left", None)
            parts["default_left"].append(np.zeros(n, dtype=bool) if go_left is None
                                         else (np.asarray(go_left) != 0) & ~leaf)
            parts["value"].append(tree.value[:, 0, 0] * scale)
            parts["count"].append(np.asarray(tree.weighted_n_node_samples, dtype=np.float64))
            offset += n
        joined = {k: np.concatenate(v) for k, v in parts.items()}
        return cls(
            feature=joined["feature"].astype(np.int32), threshold=joined["threshold"].astype(np.float64),
            left=joined["left"].astype(np.int32), right=joined["right"].astype(np.int32),
            parent=joined["parent"].astype(np.int32), default_left=joined["default_left"].astype(np.bool_),
            missing=np.where(joined["feature"] >= 0, MISSING_NAN, MISSING_NONE).astype(np.int8),
            value=joined["value"].astype(np.float64), count=joined["count"],
            roots=np.array(roots, dtype=np.int32), n_features=int(estimator.n_features_in_),
            weight=np.array(weights, dtype=np.float64), bias=bias, float32_inputs=True,
        )

    def rows(self, X: np.ndarray) -> np.ndarray:
        """X as the library reads it: float64, C order; through float32 first for scikit-learn models."""
        if self.float32_inputs:
            X = np.asarray(X, dtype=np.float32)
        return np.ascontiguousarray(X, dtype=np.float64)

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Raw scores: bias + the weighted sum of each tree's leaf value, trees in model order."""
        X = self.rows(X)
        out = np.empty(X.shape[0])
        kernel = _predict_parallel if X.shape[0] >= 2_000 else _predict_serial
        kernel(X, self.feature, self.threshold, self.left, self.right, self.default_left, self.missing, self.value,
               self.roots, self.weight, float(self.bias), out)
        return out

    def leaf_indices(self, X: np.ndarray) -> np.ndarray:
        """(rows × trees) absolute node index of the leaf each row reaches in each tree."""
        X = self.rows(X)
        out = np.empty((X.shape[0], self.n_trees), dtype=np.int32)
        _leaves(X, self.feature, self.threshold, self.left, self.right, self.default_left, self.missing, self.roots,
                out)
        return out


def _flatten(node: dict[str, Any], parent: int, nodes: dict[str, list[Any]]) -> int:
    """Append `node` and its subtree (pre-order); returns the node's index."""
    index = len(nodes["feature"])
    for key in nodes:
        nodes[key].append(0)
    nodes["parent"][index] = parent
    if "leaf_index" in node or "split_feature" not in node:
        nodes["feature"][index] = LEAF
        nodes["threshold"][index] = 0.0
        nodes["left"][index] = nodes["right"][index] = LEAF
        nodes["default_left"][index] = False
        nodes["missing"][index] = MISSING_NONE
        nodes["value"][index] = float(node["leaf_value"])
        nodes["count"][index] = float(node.get("leaf_count", 0))
        return index
    if node.get("decision_type", "<=") != "<=":
        raise UnsupportedModel("categorical splits")
    nodes["feature"][index] = int(node["split_feature"])
    nodes["threshold"][index] = _threshold(node["threshold"])
    nodes["default_left"][index] = bool(node.get("default_left", True))
    nodes["missing"][index] = _MISSING[node.get("missing_type", "None")]
    nodes["value"][index] = float(node.get("internal_value", 0.0))
    nodes["count"][index] = float(node.get("internal_count", 0))
    nodes["left"][index] = _flatten(node["left_child"], index, nodes)
    nodes["right"][index] = _flatten(node["right_child"], index, nodes)
    return index


def _threshold(value: float) -> float:
    """The dump writes ±inf thresholds as ±1e300 (LightGBM's AvoidInf); restore them, or values above 1e300
    would take the wrong branch."""
    value = float(value)
    return float(np.copysign(np.inf, value)) if abs(value) >= 1e300 else value


@njit(cache=True, inline="always")
def _leaf(x: np.ndarray, node: int, feature: np.ndarray, threshold: np.ndarray, left: np.ndarray,
          right: np.ndarray, default_left: np.ndarray, missing: np.ndarray) -> int:
    while feature[node] >= 0:
        value = x[feature[node]]
        if -_ZERO <= value <= _ZERO:
            value = 0.0  # LightGBM's C API drops |x| <= kZeroThreshold when it reads a dense row
        kind = missing[node]
        if np.isnan(value) and kind != MISSING_NAN:
            value = 0.0
        if (kind == MISSING_ZERO and -_ZERO <= value <= _ZERO) or (kind == MISSING_NAN and np.isnan(value)):
            node = left[node] if default_left[node] else right[node]
        elif value <= threshold[node]:
            node = left[node]
        else:
            node = right[node]
    return node


@njit(cache=True)
def _predict_serial(X, feature, threshold, left, right, default_left, missing, value, roots, weight, bias, out):
    for row in range(X.shape[0]):
        total = bias  # 0.0 for LightGBM, and 1.0 · v == v: LightGBM's sum, bit for bit
        for tree in range(roots.shape[0]):
            node = _leaf(X[row], roots[tree], feature, threshold, left, right, default_left, missing)
            total += weight[tree] * value[node]
        out[row] = total


@njit(cache=True, parallel=True)
def _predict_parallel(X, feature, threshold, left, right, default_left, missing, value, roots, weight, bias, out):
    for row in prange(X.shape[0]):
        total = bias
        for tree in range(roots.shape[0]):
            node = _leaf(X[row], roots[tree], feature, threshold, left, right, default_left, missing)
            total += weight[tree] * value[node]
        out[row] = total


@njit(cache=True, parallel=True)
def _leaves(X, feature, threshold, left, right, default_left, missing, roots, out):
    for row in prange(X.shape[0]):
        for tree in range(roots.shape[0]):
            out[row, tree] = _leaf(X[row], roots[tree], feature, threshold, left, right, default_left, missing)


def probe_rows(ensemble: TreeEnsemble, rng: np.random.Generator, n: int = 512) -> np.ndarray:
    """Rows that exercise every split: values at, just below and just above each threshold, 0, and NaN."""
    columns = []
    for f in range(ensemble.n_features):
        cuts = ensemble.threshold[ensemble.feature == f]
        candidates = np.concatenate([cuts, np.nextafter(cuts, -np.inf), np.nextafter(cuts, np.inf),
                                     [0.0, np.nan, -1.0, 1.0]])
        columns.append(rng.choice(candidates, size=n))
    return np.column_stack(columns)
