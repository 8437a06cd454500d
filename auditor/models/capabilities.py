"""What a loaded ranker can do beyond scoring, asked the same way by every layer: its trees in array form, the
scores TreeSHAP adds up to, and auditor's own TreeSHAP for it. Evidence and explainers ask these, never kind
names."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

# LightGBM's pred_contrib costs about this per row · leaf · (leaf depth)² (Algorithm 2: O(L·D²) a row and tree;
# fitted on the bookstore's 80 × 15-leaf model and a 500 × 63-leaf one, docs/benchmarks.md). Our TreeSHAP is used
# when pred_contrib would take longer than compiling ours does on a first run (an empty numba cache: ~8 s), so a
# fresh install never pays more for it than it saves; the choice depends on the model and the rows only.
PRED_CONTRIB_SECONDS = 5.5e-9
FAST_TREESHAP_MIN_SECONDS = 10.0


def tree_ensemble(model: Any) -> tuple[Any, str]:
    """The model's trees in array form (`Ranker.tree_ensemble()`, which tree models have), or (None, why not)."""
    from auditor.scoring.trees import UnsupportedModel

    kind = getattr(model, "kind", "?")
    build = getattr(getattr(model, "inner", model), "tree_ensemble", None)
    if build is None:
        return None, (f"a '{kind}' model has no decision paths to take a ground truth from; decision-path accuracy "
                      "needs a tree model (LightGBM, scikit-learn trees, XGBoost or CatBoost)")
    try:
        return build(), ""
    except UnsupportedModel as exc:
        return None, f"this tree model has a part the decision-path ground truth does not cover: {exc}"


def reference_scores(model: Any) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """`(rows, scores) -> what TreeSHAP adds up to`: the model's own scores, or for a library that sums in float32
    (XGBoost) the exact sum of its trees, once the array form has reproduced the library's scores bit for bit
    (`XGBoostRanker.reference_scores`). The difference is reported as `global_importance.score_rounding.max_abs`."""
    method = getattr(getattr(model, "inner", model), "reference_scores", None)
    return method if method is not None else (lambda rows, scores: scores)


def fast_treeshap(model: Any, rows: int) -> Any:
    """Our TreeSHAP (`auditor.scoring.fast_treeshap.FastTreeShap`) for a LightGBM model the array form covers, when
    LightGBM's `pred_contrib` would take longer on `rows` rows than FAST_TREESHAP_MIN_SECONDS; None otherwise (the
    model's own is used)."""
    from auditor.scoring.fast_treeshap import FastTreeShap
    from auditor.scoring.trees import TreeEnsemble, UnsupportedModel

    booster = getattr(getattr(model, "inner", model), "booster", None)
    if model.kind != "lightgbm" or booster is None:
        return None
    try:
        ensemble = TreeEnsemble.from_lightgbm(booster.dump_model())
    except UnsupportedModel:  # categorical splits, multiclass: pred_contrib
        return None
    if pred_contrib_seconds(ensemble, rows) < FAST_TREESHAP_MIN_SECONDS:
        return None
    try:
        return FastTreeShap(ensemble)
    except UnsupportedModel:  # paths of more than 63 features: pred_contrib
        return None


def pred_contrib_seconds(ensemble: Any, rows: int) -> float:
    """LightGBM's pred_contrib time on `rows` rows, estimated from the trees' shape (PRED_CONTRIB_SECONDS)."""
    depth = ensemble.depths()
    leaves = ensemble.feature < 0
    return float(rows) * float(np.sum(depth[leaves] ** 2)) * PRED_CONTRIB_SECONDS
