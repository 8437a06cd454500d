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
K_ZERO = float(np.float32(1e-35))  # LightGBM's kZeroThreshold (a float)


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
    float32_inputs: bool = False  # scikit-learn, XGBoost, CatBoost: rows are cast to float32 before the comparisons
    zero_filter: bool = True  # LightGBM's C API reads |x| <= 1e-35 as 0; XGBoost and CatBoost do not
    float32_sum: bool = False  # XGBoost: the score is summed in float32, tree by tree, from the bias

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

    @classmethod
    def from_xgboost(cls, model: dict[str, Any], base_margin: float | None = None) -> TreeEnsemble:
        """From XGBoost's JSON model (`Booster.save_raw("json")`), checked by `auditor.models.xgboost_check`.

        XGBoost reads rows as float32 and sends x left when x < split_condition (both float32), the missing value
        (NaN) to the side `default_left` names; leaves hold their value (learning rate applied) in
        `split_conditions`, split nodes their weight in `base_weights`, every node its cover in `sum_hessian`
        (TreeSHAP's counts). `x < c` is `x <= c′` for c′ the float32 just below c, so the thresholds are stored
        that way and the LightGBM-style kernel routes rows as XGBoost does. The score is summed in float32 from the
        base margin, tree by tree, as XGBoost's CPU predictor does: bit-identical scores (tests/test_rankers.py).
        The base margin is XGBoost's own when given (`auditor.models.xgboost` asks XGBoost for it), else
        `base_score` through the objective's link (`xgboost_base_margin`, an ulp off for logistic objectives)."""
        learner = model["learner"]
        booster = learner["gradient_booster"]
        if booster.get("name") != "gbtree":
            raise UnsupportedModel(f"booster '{booster.get('name')}'")
        trees = booster["model"]["trees"]
        parts: list[dict[str, np.ndarray]] = []
        for tree in trees:
            if any(tree.get("split_type", [])):  # a node testing a set of categories
                raise UnsupportedModel("categorical splits")
            left = np.asarray(tree["left_children"], dtype=np.int64)
            leaf = left == -1
            cond = np.asarray(tree["split_conditions"], dtype=np.float32)
            below = np.nextafter(cond, np.float32(-np.inf))
            parts.append({
                "left": left, "right": np.asarray(tree["right_children"], dtype=np.int64),
                "feature": np.where(leaf, LEAF, np.asarray(tree["split_indices"], dtype=np.int64)),
                "threshold": np.where(leaf, 0.0, below.astype(np.float64)),
                "default_left": (np.asarray(tree["default_left"], dtype=np.int64) != 0) & ~leaf,
                "value": np.where(leaf, cond.astype(np.float64),
                                  np.asarray(tree["base_weights"], dtype=np.float32).astype(np.float64)),
                "count": np.asarray(tree["sum_hessian"], dtype=np.float32).astype(np.float64),
            })
        n_features = int(learner["learner_model_param"]["num_feature"])
        bias = xgboost_base_margin(learner) if base_margin is None else float(np.float32(base_margin))
        return cls._from_node_lists(parts, n_features, bias=bias, float32_inputs=True, zero_filter=False,
                                    float32_sum=True)

    @classmethod
    def from_catboost(cls, model: dict[str, Any]) -> TreeEnsemble:
        """From CatBoost's JSON export (`save_model(..., format="json")`), checked by
        `auditor.models.catboost_check`: float features only (categorical, text and embedding features are refused
        before this).

        CatBoost reads rows as float32 and a split sends x right when x > border (float32); NaN goes left unless
        the feature's `nan_value_treatment` is `AsTrue`. An oblivious tree of depth d (`oblivious_trees`) uses its
        i-th split at level i of every path, and the leaf a row reaches is Σ_i bit_i · 2^i: it becomes a full
        binary tree here (split i at depth i, left = bit 0), leaves counted by `leaf_weights`, split nodes valued
        at the weighted mean of their leaves. Non-symmetric trees (`trees`, grow policies Depthwise and Lossguide)
        are read as they are. Score = scale · Σ leaf values + bias (`scale_and_bias`), summed in float64."""
        features = model["features_info"]["float_features"]
        column = {int(f["feature_index"]): int(f["flat_feature_index"]) for f in features}
        nan_left = {int(f["feature_index"]): f.get("nan_value_treatment", "AsIs") != "AsTrue" for f in features}
        scale, bias = catboost_scale_and_bias(model)
        parts = []
        for tree in model.get("oblivious_trees", []):
            parts.append(_oblivious_nodes(tree, column, nan_left))
        for tree in model.get("trees", []):
            parts.append(_catboost_nodes(tree, column, nan_left))
        n_features = max(column.values(), default=-1) + 1
        return cls._from_node_lists(parts, n_features, bias=bias, weight=scale, float32_inputs=True,
                                    zero_filter=False)

    @classmethod
    def _from_node_lists(cls, parts: list[dict[str, np.ndarray]], n_features: int, *, bias: float,
                         weight: float = 1.0, **flags: bool) -> TreeEnsemble:
        """Join trees given as node arrays (root = node 0, children by index, -1 for none) into the array form,
        every tree's nodes renumbered in pre-order so that children come after their parent. Nodes no path
        reaches (XGBoost's deleted nodes) are left out."""
        joined: dict[str, list[np.ndarray]] = {k: [] for k in ("feature", "threshold", "left", "right", "parent",
                                                               "default_left", "value", "count")}
        roots, offset = [], 0
        for part in parts:
            order = _preorder(part["left"], part["right"])
            new = np.full(part["left"].shape[0], -1, dtype=np.int64)
            new[order] = np.arange(order.size) + offset
            left, right = part["left"][order], part["right"][order]
            internal = left >= 0
            parent = np.full(order.size, -1, dtype=np.int64)
            here = np.arange(order.size) + offset
            parent[new[left[internal]] - offset] = here[internal]
            parent[new[right[internal]] - offset] = here[internal]
            joined["feature"].append(part["feature"][order])
            joined["threshold"].append(part["threshold"][order])
            joined["left"].append(np.where(internal, new[np.maximum(left, 0)], LEAF))
            joined["right"].append(np.where(internal, new[np.maximum(right, 0)], LEAF))
            joined["parent"].append(parent)
            joined["default_left"].append(part["default_left"][order])
            joined["value"].append(part["value"][order])
            joined["count"].append(part["count"][order])
            roots.append(offset)
            offset += order.size
        arrays = {k: np.concatenate(v) if v else np.zeros(0) for k, v in joined.items()}
        feature = arrays["feature"].astype(np.int32)
        return cls(
            feature=feature, threshold=arrays["threshold"].astype(np.float64),
            left=arrays["left"].astype(np.int32), right=arrays["right"].astype(np.int32),
            parent=arrays["parent"].astype(np.int32), default_left=arrays["default_left"].astype(np.bool_),
            missing=np.where(feature >= 0, MISSING_NAN, MISSING_NONE).astype(np.int8),
            value=arrays["value"].astype(np.float64), count=arrays["count"].astype(np.float64),
            roots=np.array(roots, dtype=np.int32), n_features=int(n_features),
            weight=np.full(len(roots), float(weight)), bias=float(bias), **flags,
        )

    def depths(self) -> np.ndarray:
        """Each node's depth (a root's is 0), in one pass: a child's index is always larger than its parent's."""
        depth = np.zeros(len(self.feature))
        for node in range(len(self.feature)):
            if self.parent[node] >= 0:
                depth[node] = depth[self.parent[node]] + 1
        return depth

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
               self.roots, self.weight, float(self.bias), self.zero_filter, self.float32_sum, out)
        return out

    def leaf_indices(self, X: np.ndarray) -> np.ndarray:
        """(rows × trees) absolute node index of the leaf each row reaches in each tree."""
        X = self.rows(X)
        out = np.empty((X.shape[0], self.n_trees), dtype=np.int32)
        _leaves(X, self.feature, self.threshold, self.left, self.right, self.default_left, self.missing, self.roots,
                self.zero_filter, out)
        return out


# XGBoost stores `base_score` in the objective's output space; the margin the trees start from is its link.
_XGB_LOGIT = {"binary:logistic", "reg:logistic"}
_XGB_LOG = {"count:poisson", "reg:gamma", "reg:tweedie", "survival:cox"}


def xgboost_base_margin(learner: dict[str, Any]) -> float:
    """The float32 margin XGBoost starts every score from: `base_score` through the objective's link
    (logit for the logistic objectives, log for Poisson, gamma, Tweedie and Cox, identity otherwise, rankers
    included). Stored as `[x]` (XGBoost 3) or `x` (earlier)."""
    text = str(learner["learner_model_param"]["base_score"]).strip().strip("[]")
    base = float(text.split(",")[0])
    objective = learner.get("objective", {}).get("name", "")
    if objective in _XGB_LOGIT:
        base = float(np.log(base / (1.0 - base)))
    elif objective in _XGB_LOG:
        base = float(np.log(base))
    return float(np.float32(base))


def catboost_scale_and_bias(model: dict[str, Any]) -> tuple[float, float]:
    """CatBoost's `scale_and_bias`: `[scale, [bias]]` (or `[scale, bias]` from older versions); (1, 0) if absent."""
    pair = model.get("scale_and_bias", [1.0, [0.0]])
    bias = pair[1][0] if isinstance(pair[1], list) else pair[1]
    return float(pair[0]), float(bias)


def _preorder(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """Node indices reachable from node 0, in pre-order (iterative: no recursion on deep trees)."""
    order, stack = [], [0]
    while stack:
        node = stack.pop()
        order.append(node)
        if left[node] >= 0:
            stack.append(int(right[node]))
            stack.append(int(left[node]))
    return np.array(order, dtype=np.int64)


def _oblivious_nodes(tree: dict[str, Any], column: dict[int, int], nan_left: dict[int, bool]
                     ) -> dict[str, np.ndarray]:
    """A CatBoost oblivious tree as a full binary tree in heap order (node i has children 2i+1 and 2i+2).

    CatBoost's leaf index is Σ_i bit_i · 2^i with bit_i = [x > border of `splits[i]`]. The root tests the LAST
    split and level l tests `splits[d − 1 − l]`, so leaf j sits at heap position 2^d − 1 + j. The order matters
    for path-dependent TreeSHAP (the cover ratios along a path depend on which split comes first): this is the
    order CatBoost's own `ShapValues` use (with the first split at the root the values differ by up to 0.01 on
    the bookstore model; with this one they agree to 1e-15)."""
    splits = tree["splits"]
    depth = len(splits)
    n_leaves = 1 << depth
    n = 2 * n_leaves - 1
    first_leaf = n_leaves - 1
    node = np.arange(n)
    leaf = node >= first_leaf
    level = np.zeros(n, dtype=np.int64)
    for heap in range(1, n):
        level[heap] = level[(heap - 1) // 2] + 1
    left = np.where(leaf, -1, 2 * node + 1)
    right = np.where(leaf, -1, 2 * node + 2)
    feature = np.full(n, LEAF, dtype=np.int64)
    threshold = np.zeros(n)
    default_left = np.zeros(n, dtype=np.bool_)
    for i, split in enumerate(splits):
        at = (level == depth - 1 - i) & ~leaf
        f = int(split["float_feature_index"])
        feature[at] = column[f]
        threshold[at] = float(np.float32(split["border"]))
        default_left[at] = nan_left[f]
    value = np.zeros(n)
    count = np.zeros(n)
    value[first_leaf:] = np.asarray(tree["leaf_values"], dtype=np.float64)
    count[first_leaf:] = np.asarray(tree["leaf_weights"], dtype=np.float64)
    for heap in range(first_leaf - 1, -1, -1):  # split nodes: leaf weights summed, values weight-averaged
        a, b = 2 * heap + 1, 2 * heap + 2
        count[heap] = count[a] + count[b]
        value[heap] = (count[a] * value[a] + count[b] * value[b]) / count[heap] if count[heap] > 0 else 0.0
    return {"left": left, "right": right, "feature": feature, "threshold": threshold, "default_left": default_left,
            "value": value, "count": count}


def _catboost_nodes(tree: dict[str, Any], column: dict[int, int], nan_left: dict[int, bool]
                    ) -> dict[str, np.ndarray]:
    """A CatBoost non-symmetric tree (nested `split`/`left`/`right`, leaves `value`/`weight`) as node arrays."""
    nodes: list[dict[str, Any]] = []
    left: list[int] = []
    right: list[int] = []
    stack: list[tuple[dict[str, Any], int, int]] = [(tree, -1, 0)]
    while stack:
        node, parent, side = stack.pop()
        index = len(nodes)
        nodes.append(node)
        left.append(-1)
        right.append(-1)
        if parent >= 0:
            (left if side == 0 else right)[parent] = index
        if "split" in node:
            stack.append((node["right"], index, 1))
            stack.append((node["left"], index, 0))
    n = len(nodes)
    feature = np.full(n, LEAF, dtype=np.int64)
    threshold = np.zeros(n)
    default_left = np.zeros(n, dtype=np.bool_)
    value = np.zeros(n)
    count = np.zeros(n)
    for i, node in enumerate(nodes):
        if "split" in node:
            f = int(node["split"]["float_feature_index"])
            feature[i] = column[f]
            threshold[i] = float(np.float32(node["split"]["border"]))
            default_left[i] = nan_left[f]
        else:
            value[i] = float(node["value"])
            count[i] = float(node.get("weight", 0.0))
    left_a, right_a = np.array(left, dtype=np.int64), np.array(right, dtype=np.int64)
    for i in range(n - 1, -1, -1):  # pre-order: children after parents, so walk back for the sums
        if left_a[i] >= 0:
            a, b = left_a[i], right_a[i]
            count[i] = count[a] + count[b]
            value[i] = (count[a] * value[a] + count[b] * value[b]) / count[i] if count[i] > 0 else 0.0
    return {"left": left_a, "right": right_a, "feature": feature, "threshold": threshold,
            "default_left": default_left, "value": value, "count": count}


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
          right: np.ndarray, default_left: np.ndarray, missing: np.ndarray, zero_filter: bool) -> int:
    while feature[node] >= 0:
        value = x[feature[node]]
        if zero_filter and -K_ZERO <= value <= K_ZERO:
            value = 0.0  # LightGBM's C API drops |x| <= kZeroThreshold when it reads a dense row
        kind = missing[node]
        if np.isnan(value) and kind != MISSING_NAN:
            value = 0.0
        if (kind == MISSING_ZERO and -K_ZERO <= value <= K_ZERO) or (kind == MISSING_NAN and np.isnan(value)):
            node = left[node] if default_left[node] else right[node]
        elif value <= threshold[node]:
            node = left[node]
        else:
            node = right[node]
    return node


@njit(cache=True, inline="always")
def _score(x, feature, threshold, left, right, default_left, missing, value, roots, weight, bias, zero_filter,
           float32_sum):
    """One row's score. float64: bias + Σ weight·leaf in tree order (0.0 + 1.0·v == v: LightGBM's sum, bit for
    bit). float32 (XGBoost's CPU predictor): the bias, then each tree's leaf added and rounded to float32."""
    if float32_sum:
        small = np.float32(bias)
        for tree in range(roots.shape[0]):
            node = _leaf(x, roots[tree], feature, threshold, left, right, default_left, missing, zero_filter)
            small = np.float32(small + np.float32(weight[tree] * value[node]))
        return np.float64(small)
    total = bias
    for tree in range(roots.shape[0]):
        node = _leaf(x, roots[tree], feature, threshold, left, right, default_left, missing, zero_filter)
        total += weight[tree] * value[node]
    return total


@njit(cache=True)
def _predict_serial(X, feature, threshold, left, right, default_left, missing, value, roots, weight, bias,
                    zero_filter, float32_sum, out):
    for row in range(X.shape[0]):
        out[row] = _score(X[row], feature, threshold, left, right, default_left, missing, value, roots, weight, bias,
                          zero_filter, float32_sum)


@njit(cache=True, parallel=True)
def _predict_parallel(X, feature, threshold, left, right, default_left, missing, value, roots, weight, bias,
                      zero_filter, float32_sum, out):
    for row in prange(X.shape[0]):
        out[row] = _score(X[row], feature, threshold, left, right, default_left, missing, value, roots, weight, bias,
                          zero_filter, float32_sum)


@njit(cache=True, parallel=True)
def _leaves(X, feature, threshold, left, right, default_left, missing, roots, zero_filter, out):
    for row in prange(X.shape[0]):
        for tree in range(roots.shape[0]):
            out[row, tree] = _leaf(X[row], roots[tree], feature, threshold, left, right, default_left, missing,
                                   zero_filter)


def probe_rows(ensemble: TreeEnsemble, rng: np.random.Generator, n: int = 512) -> np.ndarray:
    """Rows that exercise every split: values at, just below and just above each threshold, 0, and NaN."""
    columns = []
    for f in range(ensemble.n_features):
        cuts = ensemble.threshold[ensemble.feature == f]
        candidates = np.concatenate([cuts, np.nextafter(cuts, -np.inf), np.nextafter(cuts, np.inf),
                                     [0.0, np.nan, -1.0, 1.0]])
        columns.append(rng.choice(candidates, size=n))
    return np.column_stack(columns)
