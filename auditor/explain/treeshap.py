"""TreeSHAP for tree models: exact Shapley values of each document's score, without sampling.

Why two modes: "path" (default) is the tree-path-dependent TreeSHAP the model library computes itself
(`Ranker.contributions`, LightGBM's `pred_contrib`), fast and what shap's TreeExplainer returns for a booster;
"interventional" removes features by averaging over background rows, the same notion of "absent" KernelSHAP and
the validity measure use, through shap's `TreeExplainer(feature_perturbation="interventional")`.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Literal, TypedDict

import numpy as np

from auditor.explain.base import Attributions, QueryView
from auditor.models.base import CountingRanker
from auditor.models.masking import Masker

if TYPE_CHECKING:
    import shap

    from auditor.scoring.trees import TreeEnsemble

Mode = Literal["path", "interventional"]


class TreeShap:
    """`attribute` returns (len(docs) × F) TreeSHAP values; needs a tree model (LightGBM, scikit-learn trees,
    XGBoost, CatBoost)."""

    name = "treeshap"

    def __init__(self, mode: Mode = "path", background_size: int = 1000) -> None:
        if mode not in ("path", "interventional"):
            raise ValueError(f"mode must be 'path' or 'interventional', got {mode!r}")
        if not 1 <= background_size <= 1000:
            raise ValueError(f"background_size must be between 1 and 1000, got {background_size}")
        self.mode = mode
        self.background_size = int(background_size)
        # (model, fingerprint of the background, shap explainer, background rows): built once per audit.
        self._cache: tuple[CountingRanker, str, shap.TreeExplainer, int] | None = None

    def attribute(self, model: CountingRanker, query: QueryView, docs: np.ndarray, masker: Masker,
                  rng: np.random.Generator) -> Attributions:
        X = np.asarray(query.X, dtype=np.float64)[np.asarray(docs, dtype=np.intp).reshape(-1)]
        if self.mode == "path":
            contributions = model.contributions(X)
            if contributions is None:
                raise ValueError(f"TreeSHAP needs a tree model ({TREE_KINDS}); this model is '{model.kind}': use "
                                 "kernelshap instead")
            return Attributions(values=np.asarray(contributions, dtype=np.float64)[:, :-1])
        explainer, n_background = self._explainer(model, query.background)
        X = _rows_for_shap(model, X)
        phi = np.asarray(explainer.shap_values(X, check_additivity=False), dtype=np.float64).reshape(X.shape)
        # shap evaluates the trees itself here, not through `model.predict`: interventional TreeSHAP walks every
        # (document, background row) pair through every tree, so it costs as much as scoring that many rows.
        # Count them, so that the audit's model-row figures compare honestly with KernelSHAP's.
        model.rows_evaluated += X.shape[0] * n_background
        return Attributions(values=phi)

    def background_rows(self, background: np.ndarray) -> np.ndarray:
        """At most `background_size` rows, evenly spaced through the background (so not only its first queries)."""
        background = np.asarray(background, dtype=np.float64)
        if background.shape[0] <= self.background_size:
            return background
        take = np.linspace(0, background.shape[0] - 1, self.background_size).round().astype(np.intp)
        return background[take]

    def _explainer(self, model: CountingRanker, background: np.ndarray) -> tuple[shap.TreeExplainer, int]:
        import shap

        rows = np.ascontiguousarray(_rows_for_shap(model, self.background_rows(background)))
        fingerprint = hashlib.sha1(rows.tobytes() + str(rows.shape).encode()).hexdigest()
        if self._cache is not None and self._cache[0] is model and self._cache[1] == fingerprint:
            return self._cache[2], self._cache[3]
        # A bare array as `data` would be wrapped in `maskers.Independent(data)`, whose default max_samples=100
        # silently keeps only 100 random rows; pass the masker ourselves so all the rows we chose are used.
        masker = shap.maskers.Independent(rows, max_samples=rows.shape[0])
        explainer = shap.TreeExplainer(_tree_model(model), data=masker, feature_perturbation="interventional")
        n_background = int(np.asarray(explainer.data).shape[0])
        # Building it scores the background once (shap's expected value), again with shap's own tree walk.
        model.rows_evaluated += n_background
        self._cache = (model, fingerprint, explainer, n_background)
        return explainer, n_background


TREE_KINDS = "LightGBM, scikit-learn trees, XGBoost or CatBoost"


def _tree_model(model: CountingRanker) -> object:
    """What shap's TreeExplainer reads: a LightGBM Booster or a fitted scikit-learn estimator as they are; for
    XGBoost and CatBoost, shap's dictionary form of our array form (`scoring.trees.TreeEnsemble`), which scores as
    the library does (shap's own CatBoost reader fails in interventional mode with shap 0.51, and the array form
    keeps XGBoost's and CatBoost's float32 routing: rows are rounded by `_rows_for_shap`)."""
    inner = model.inner
    for attribute in ("booster", "estimator"):
        found = getattr(inner, attribute, None)
        if found is not None and inner.kind in ("lightgbm", "sklearn"):
            return found
    if hasattr(inner, "tree_ensemble"):
        from auditor.scoring.trees import UnsupportedModel

        try:
            return shap_model(inner.tree_ensemble())
        except UnsupportedModel as exc:
            raise ValueError(f"TreeSHAP cannot read this model: {exc}") from None
    raise ValueError(f"TreeSHAP needs a tree model ({TREE_KINDS}); this model is '{model.kind}': use kernelshap "
                     "instead")


def _rows_for_shap(model: CountingRanker, X: np.ndarray) -> np.ndarray:
    """Rows as the model reads them when shap walks our array form (float32 for XGBoost and CatBoost)."""
    inner = model.inner
    if inner.kind in ("lightgbm", "sklearn") or not hasattr(inner, "tree_ensemble"):
        return X
    ensemble: TreeEnsemble = inner.tree_ensemble()
    return ensemble.rows(X)


class ShapModel(TypedDict):
    """shap's dictionary form of a tree model (what `shap.TreeExplainer` reads besides the libraries' objects)."""

    trees: list[dict[str, np.ndarray]]
    base_offset: float
    tree_output: str
    input_dtype: type[np.float64]
    internal_dtype: type[np.float64]


def shap_model(ensemble: TreeEnsemble) -> ShapModel:
    """shap's dictionary model of a `TreeEnsemble` whose splits all send NaN to a default side (XGBoost, CatBoost):
    shap routes x <= threshold left and a missing value to `children_default`, as the array form does."""
    from auditor.scoring.trees import MISSING_NAN, UnsupportedModel

    internal = ensemble.feature >= 0
    if np.any(internal & (ensemble.missing != MISSING_NAN)) or ensemble.zero_filter:
        raise UnsupportedModel("splits whose missing-value routing shap's tree format cannot state")
    assert ensemble.weight is not None  # TreeEnsemble.__post_init__ fills it in
    bounds = [*ensemble.roots.tolist(), ensemble.feature.shape[0]]
    trees = []
    for t in range(ensemble.n_trees):
        a, b = bounds[t], bounds[t + 1]
        leaf = ensemble.feature[a:b] < 0
        left = np.where(leaf, -1, ensemble.left[a:b] - a)
        right = np.where(leaf, -1, ensemble.right[a:b] - a)
        trees.append({"children_left": left, "children_right": right,
                      "children_default": np.where(ensemble.default_left[a:b], left, right),
                      "features": np.where(leaf, -2, ensemble.feature[a:b]),
                      "thresholds": ensemble.threshold[a:b].astype(np.float64),
                      "values": (ensemble.value[a:b] * ensemble.weight[t]).reshape(-1, 1),
                      "node_sample_weight": ensemble.count[a:b].astype(np.float64)})
    return {"trees": trees, "base_offset": float(ensemble.bias), "tree_output": "raw_value",
            "input_dtype": np.float64, "internal_dtype": np.float64}
