"""scikit-learn tree models: loaded with skops (no code runs on load), or pickle/joblib only when trusted."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from auditor.core.errors import InputError
from auditor.models.base import BOUND_FIX, MAX_SCORE, bound_problem

if TYPE_CHECKING:
    import shap

SUPPORTED = (
    "DecisionTreeRegressor", "ExtraTreeRegressor", "GradientBoostingRegressor", "RandomForestRegressor",
    "ExtraTreesRegressor",
)
# Types a skops file of a supported model may hold beyond skops' defaults; anything else needs `trust: true`.
_SKOPS_ALLOWED = {"sklearn.tree._tree.Tree", "sklearn._loss.loss.HalfSquaredError",
                  "sklearn._loss.link.IdentityLink", "sklearn.ensemble._gb.BinomialDeviance",
                  "sklearn.dummy.DummyRegressor"}


class SklearnTreeRanker:
    """A fitted scikit-learn tree model as a Ranker; TreeSHAP contributions through shap's TreeExplainer."""

    kind = "sklearn"
    concurrent_predict = True  # a fitted estimator's predict only reads it

    def __init__(self, estimator: Any) -> None:
        self.estimator = estimator
        self.n_features = int(estimator.n_features_in_)
        names = getattr(estimator, "feature_names_in_", None)
        self.feature_names = [str(n) for n in names] if names is not None else None
        self._explainer: shap.TreeExplainer | None = None

    def predict(self, X: np.ndarray) -> np.ndarray:
        return np.asarray(self.estimator.predict(self._named(X)), dtype=np.float64)

    def _named(self, X: np.ndarray):
        """Models fitted on a DataFrame warn on bare arrays; give them the column names they know."""
        if self.feature_names is None:
            return X
        import pandas as pd

        return pd.DataFrame(X, columns=self.feature_names, copy=False)

    def contributions(self, X: np.ndarray) -> np.ndarray:
        import shap

        if self._explainer is None:
            self._explainer = shap.TreeExplainer(self.estimator)
        phi = np.asarray(self._explainer.shap_values(self._named(X), check_additivity=False), dtype=np.float64)
        bias = np.full((X.shape[0], 1), float(np.ravel(self._explainer.expected_value)[0]))
        return np.hstack([phi, bias])

    contributions_method = "shap's TreeExplainer"

    def tree_ensemble(self) -> Any:
        from auditor.scoring.trees import TreeEnsemble

        return TreeEnsemble.from_sklearn(self.estimator)

    def describe(self) -> dict[str, Any]:
        import sklearn

        est = self.estimator
        trees = getattr(est, "estimators_", None)
        n_trees = 1 if trees is None else int(np.size(np.asarray(trees, dtype=object)))
        return {"kind": self.kind, "library": f"scikit-learn {sklearn.__version__}", "estimator": type(est).__name__,
                "n_features": self.n_features, "n_trees": int(n_trees)}


def load_sklearn(path: Path, *, trust: bool) -> SklearnTreeRanker:
    suffix = path.suffix.lower()
    if suffix == ".skops":
        estimator = _load_skops(path, trust=trust)
    elif suffix in {".pkl", ".pickle", ".joblib"}:
        if not trust:
            raise InputError("a pickle can run arbitrary code when loaded", file=path,
                             fix="save the model with skops (`skops.io.dump`), or set `model.trust: true` "
                                 "if you trust whoever made this file")
        estimator = _load_pickle(path)
    else:
        raise InputError(f"unknown scikit-learn model file type '{suffix}'", file=path,
                         fix="use a `.skops` file (or `.pkl`/`.joblib` with `model.trust: true`)")
    name = type(estimator).__name__
    if name not in SUPPORTED or not hasattr(estimator, "n_features_in_"):
        raise InputError(f"'{name}' is not a fitted scikit-learn tree regressor this tool audits", file=path,
                         fix=f"use one of: {', '.join(SUPPORTED)}")
    check_trees(estimator, path)
    return SklearnTreeRanker(estimator)


MAX_DEPTH = 512  # shap's TreeSHAP recurses once per level and allocates a path table quadratic in the depth


def check_trees(estimator: Any, path: Path) -> None:
    """Raise InputError unless every tree of `estimator` is a tree over its own `n_features_in_` features.

    scikit-learn's tree walk does not check its arrays: a file whose node splits on a feature beyond the data's
    reads memory past the row, a child index out of range reads past the tree, and a cycle never ends. A skops
    file carries these arrays as data, so they are checked here, once, before any prediction."""
    fix = "save the fitted model again with `skops.io.dump`; the file is damaged or was edited"
    n_features = estimator.n_features_in_
    if isinstance(n_features, bool) or not isinstance(n_features, int | np.integer) or not 1 <= n_features < 2**31:
        raise InputError(f"n_features_in_ is {str(n_features)[:20]}, not a feature count", file=path, fix=fix)
    names = getattr(estimator, "feature_names_in_", None)
    if names is not None and len(names) != n_features:
        raise InputError(f"feature_names_in_ has {len(names)} names for {n_features} features", file=path, fix=fix)
    if hasattr(estimator, "tree_"):
        members = [("tree_", estimator)]
    else:
        stages = np.asarray(getattr(estimator, "estimators_", []), dtype=object).reshape(-1)
        members = [(f"estimators_.{i}", member) for i, member in enumerate(stages)]
        if not members:
            raise InputError("the ensemble has no trees (estimators_ is empty)", file=path, fix=fix)
    bound = 0.0  # the sum of each tree's largest |value| bounds a score (forests average, boosting shrinks)
    for where, member in members:
        tree = getattr(member, "tree_", None)
        if tree is None or getattr(member, "n_features_in_", n_features) != n_features:
            raise InputError(f"member is not a fitted tree over the model's {n_features} features", file=path,
                             where=where, fix=fix)
        problem = _tree_problem(tree, int(n_features))
        if problem is not None:
            raise InputError(problem, file=path, where=where, fix=fix)
        bound += float(np.abs(np.asarray(tree.value)).max())
        if not bound <= MAX_SCORE:
            raise InputError(bound_problem(bound, f"the largest value of each tree up to {where}, summed"),
                             file=path, where=where, fix=BOUND_FIX)


def _tree_problem(tree: Any, n_features: int) -> str | None:
    """What is wrong with one fitted `sklearn.tree._tree.Tree`, or None."""
    n = int(tree.node_count)
    left, right = np.asarray(tree.children_left), np.asarray(tree.children_right)
    feature, value = np.asarray(tree.feature), np.asarray(tree.value)
    if n < 1 or not left.shape == right.shape == feature.shape == (n,) or value.shape[0] != n:
        return "the tree's node arrays do not match its node count"
    if int(tree.n_outputs) != 1 or value.ndim != 3 or value.shape[1:] != (1, 1):
        return "a multi-output tree gives several scores per document; a ranker gives one"
    if int(tree.n_features) != n_features:
        return f"the tree is over {int(tree.n_features)} features, the model over {n_features}"
    if not np.isfinite(value).all():
        return "a node value is not a finite number"
    internal = left != -1
    if not np.array_equal(internal, right != -1):
        return "a node has one child"
    beyond = np.flatnonzero(internal & ((feature < 0) | (feature >= n_features)))
    if beyond.size:
        return f"node {beyond[0]} splits on feature {feature[beyond[0]]}, beyond the model's {n_features} features"
    children = np.concatenate([left[internal], right[internal]])
    if children.size and (children.min() < 1 or children.max() >= n):
        return "a child index is out of range"
    if children.size != n - 1 or np.bincount(children, minlength=n)[1:].max(initial=1) != 1:
        return "the children do not form a tree (a node has two parents, or none)"
    # Every node but the root has one parent, so a walk from the root, level by level, meets each node once.
    level, reached = np.array([0]), 1
    for _ in range(MAX_DEPTH):
        inner = level[internal[level]]
        level = np.concatenate([left[inner], right[inner]])
        if not level.size:
            break
        reached += level.size
    else:
        if internal[level].any():
            return f"the tree is deeper than {MAX_DEPTH} levels"
    if reached != n:
        return "a node is not reachable from the root (the children form a cycle)"
    return None


def _load_skops(path: Path, *, trust: bool) -> Any:
    import skops.io as sio

    try:
        untrusted = sio.get_untrusted_types(file=path)
        unexpected = sorted(set(untrusted) - _SKOPS_ALLOWED)
        if unexpected and not trust:
            raise InputError(f"the skops file holds types that are not known to be safe ({', '.join(unexpected[:3])})",
                             file=path, fix="check where it came from; set `model.trust: true` to load it anyway")
        return sio.load(path, trusted=list(untrusted))
    except InputError:
        raise
    except Exception as exc:
        raise InputError(f"cannot read this skops file ({type(exc).__name__}: {str(exc)[:100]})", file=path,
                         fix="save the model with `skops.io.dump(model, path)`") from None


def _load_pickle(path: Path) -> Any:
    import joblib

    try:
        return joblib.load(path)
    except Exception as exc:
        raise InputError(f"cannot unpickle this file ({type(exc).__name__})", file=path,
                         fix="check it is a joblib or pickle file of a scikit-learn model") from None
