"""XGBoost boosters from XGBoost's JSON or UBJSON model files (`booster.save_model('model.json' | 'model.ubj')`).

Loading: the bytes are read once; JSON is checked (`xgboost_check.check_model`) before anything native sees it,
then loaded in a throw-away process that saves it back as JSON (UBJSON is checked in that form); this process's
XGBoost loads only JSON the checker passed. Scores are XGBoost's own (`inplace_predict`, margin: float32, as XGBoost
computes them). TreeSHAP, decision paths and the rest of the tree evidence read `auditor.scoring.trees.TreeEnsemble`
built from the same JSON, which reproduces XGBoost's scores bit for bit (checked on probe rows at load; when it
does not — an objective whose base margin we do not know — the tree evidence is SKIPPED with that reason).
"""

from __future__ import annotations

import json
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from auditor.core.errors import InputError
from auditor.core.files import MAX_MODEL_BYTES, read_bytes
from auditor.models.base import checked_ensemble, thread_count
from auditor.models.json_dump import check_json_size
from auditor.models.xgboost_check import SAVE_AGAIN, check_model, file_format, parse_json, rehearse_xgboost


def _xgboost() -> Any:
    try:
        import xgboost as xgb
    except ImportError:  # pragma: no cover - the extra is part of dev
        raise InputError("the model is an XGBoost model but xgboost is not installed",
                         fix="pip install 'auditor[xgboost]'") from None
    xgb.set_config(verbosity=0)  # XGBoost's own warnings stay off the terminal
    return xgb


class XGBoostRanker:
    """An XGBoost Booster as a Ranker. Predictions are raw margins (what a ranker sorts by)."""

    kind = "xgboost"
    # XGBoost's thread count is a parameter of the booster, set before each call: calls take turns.
    concurrent_predict = False
    SMALL_BATCH = 1_000  # below this, one thread (as for LightGBM: starting OpenMP threads costs more)

    def __init__(self, booster: Any, model: dict[str, Any]) -> None:
        from auditor.scoring.trees import TreeEnsemble

        learner = model["learner"]
        self.booster = booster
        self.n_features = int(learner["learner_model_param"]["num_feature"])
        names = learner.get("feature_names") or None
        self.feature_names = list(names) if names else None
        self.objective = str(learner.get("objective", {}).get("name", "unknown"))
        self.n_trees = len(learner["gradient_booster"]["model"]["trees"])
        self._lock = threading.Lock()
        self._threads = 0
        margin = _base_margin(model)
        self.trees, self.trees_problem = checked_ensemble(lambda: TreeEnsemble.from_xgboost(model, margin),
                                                          self._predict, library="XGBoost")
        self.categorical = any(t == "c" for t in learner.get("feature_types") or [])
        self.category_counts = _category_counts(model)
        if self.trees is None and self.categorical:  # the array form has no category sets: XGBoost's own TreeSHAP
            self.contributions_method = "XGBoost's pred_contribs (float32; its trees split on categories)"
        self._shap: Any = None

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state.pop("_lock", None)
        state["_shap"] = None  # rebuilt where it is used (its tables are large and cheap to make)
        state["_threads"] = 0
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()
        _xgboost()  # quiet in worker processes too

    def predict(self, X: np.ndarray) -> np.ndarray:
        with self._lock:
            return self._predict(X)

    def _predict(self, X: np.ndarray) -> np.ndarray:
        threads = 1 if X.shape[0] < self.SMALL_BATCH else thread_count()
        if threads != self._threads:
            self.booster.set_param({"nthread": threads})
            self._threads = threads
        X = np.ascontiguousarray(X, dtype=np.float64)
        return np.asarray(self.booster.inplace_predict(X, predict_type="margin", validate_features=False),
                          dtype=np.float64).reshape(-1)

    def contributions(self, X: np.ndarray) -> np.ndarray | None:
        """Path-dependent TreeSHAP on the array form (`FastTreeShap`, float64; equal to XGBoost's float32
        `pred_contribs` to 1e-6, tested); for a model with categorical splits, which the array form does not hold,
        XGBoost's own `pred_contribs`; None when the array form does not reproduce any other model."""
        if self.trees is None:
            return self._native_contributions(X) if self.categorical else None
        if self._shap is None:
            from auditor.scoring.fast_treeshap import FastTreeShap

            self._shap = FastTreeShap(self.trees)
        return self._shap.contributions(X)

    contributions_method = "auditor's FastTreeShap on XGBoost's trees (equal to XGBoost's pred_contribs to 1e-6)"

    def _native_contributions(self, X: np.ndarray) -> np.ndarray:
        xgb = _xgboost()
        with self._lock:
            threads = 1 if X.shape[0] < self.SMALL_BATCH else thread_count()
            if threads != self._threads:
                self.booster.set_param({"nthread": threads})
                self._threads = threads
            matrix = xgb.DMatrix(np.ascontiguousarray(X, dtype=np.float64), missing=np.nan, nthread=threads)
            values = self.booster.predict(matrix, pred_contribs=True, validate_features=False)
        return np.asarray(values, dtype=np.float64).reshape(X.shape[0], -1)

    def reference_scores(self, X: np.ndarray, scores: np.ndarray) -> np.ndarray:
        """What exact TreeSHAP adds up to: the exact (float64) sum of the trees XGBoost reached, when the array form
        summed in float32 reproduces `scores` (XGBoost's own, for the rows X) bit for bit — then the two differ by
        XGBoost's float32 rounding only; `scores` otherwise. XGBoost rounds every partial sum to float32, so its
        score is the exact sum up to ~n_trees · 2^-24 · |score| (1.3e-6 for the bookstore example's 80 trees),
        more than the 1e-6 additivity the policies ask of an explanation of the model itself."""
        if self.trees is None:
            return scores
        twin = self.trees.predict(X)
        if not np.array_equal(twin, np.asarray(scores, dtype=np.float64)):
            return scores
        return replace(self.trees, float32_sum=False).predict(X)

    def tree_ensemble(self) -> Any:
        from auditor.scoring.trees import UnsupportedModel

        if self.trees is None:
            raise UnsupportedModel(self.trees_problem)
        return self.trees

    def describe(self) -> dict[str, Any]:
        xgb = _xgboost()
        return {"kind": self.kind, "library": f"xgboost {xgb.__version__}", "n_features": self.n_features,
                "n_trees": self.n_trees, "objective": self.objective}


def _category_counts(model: dict[str, Any]) -> dict[int, int]:
    """Feature index → how many categories it had in training, as the model stores them (`cats`, XGBoost ≥ 3.1;
    empty for older models, which do not say)."""
    types = model["learner"].get("feature_types") or []
    cats = model["learner"]["gradient_booster"]["model"].get("cats") or {}
    segments = cats.get("feature_segments") or []
    if len(segments) != len(types) + 1 or not all(isinstance(v, int) for v in segments):
        return {}
    return {i: segments[i + 1] - segments[i] for i, t in enumerate(types) if t == "c" and segments[i + 1] > segments[i]}


def check_category_codes(X: np.ndarray, counts: dict[int, int]) -> tuple[int, int, float] | None:
    """The first (row, feature, value) where a categorical feature holds no category's code — not a whole number
    from 0 to its count − 1, nor missing — which XGBoost would route without a word; None when every code is one."""
    for feature, count in sorted(counts.items()):
        column = X[:, feature]
        bad = ~np.isnan(column) & ((column < 0) | (column >= count) | (column != np.floor(column)))
        if bad.any():
            row = int(np.argmax(bad))
            return row, feature, float(column[row])
    return None


def _base_margin(model: dict[str, Any]) -> float:
    """The float32 margin XGBoost starts every score from, asked of XGBoost itself: the checked model with its trees
    replaced by one leaf of value 0 scores exactly that. (`base_score` is stored in the objective's output space;
    XGBoost's own float32 link — logit, log — differs from numpy's by an ulp for the logistic objectives.)"""
    import copy

    xgb = _xgboost()
    learner = model["learner"]
    booster_model = learner["gradient_booster"]["model"]
    if not booster_model["trees"]:
        stub = model
    else:
        leaf = copy.deepcopy(booster_model["trees"][0])
        for key, value in (("left_children", -1), ("right_children", -1), ("parents", 2147483647), ("split_indices", 0),
                           ("split_conditions", 0.0), ("default_left", 0), ("base_weights", 0.0), ("sum_hessian", 1.0),
                           ("loss_changes", 0.0), ("split_type", 0)):
            leaf[key] = [value]
        leaf.update(id=0, categories=[], categories_nodes=[], categories_segments=[], categories_sizes=[])
        leaf["tree_param"] = {**leaf["tree_param"], "num_nodes": "1", "num_deleted": "0"}
        stub_model = {**booster_model, "trees": [leaf], "tree_info": [0], "iteration_indptr": [0, 1],
                      "gbtree_model_param": {**booster_model["gbtree_model_param"], "num_trees": "1",
                                             "num_parallel_tree": "1"}}
        stub = {**model, "learner": {**learner, "gradient_booster": {**learner["gradient_booster"],
                                                                     "model": stub_model}}}
    booster = xgb.Booster()
    booster.load_model(bytearray(json.dumps(stub).encode("utf-8")))
    booster.set_param({"nthread": 1})
    zeros = np.zeros((1, int(learner["learner_model_param"]["num_feature"])))
    return float(booster.inplace_predict(zeros, predict_type="margin").reshape(-1)[0])


def load_xgboost(path: Path) -> XGBoostRanker:
    """An XGBoost model from its JSON or UBJSON file: checked, rehearsed, then loaded (module docstring)."""
    xgb = _xgboost()
    data = read_bytes(path, limit=MAX_MODEL_BYTES, what="model file")
    fmt = file_format(data, file=path)
    if fmt == "json":
        check_json_size(len(data), file=path, library="XGBoost")
        model = parse_json(data, file=path)
        check_model(model, file=path)
        rehearse_xgboost(data, file=path)
        text = data
    else:
        text = rehearse_xgboost(data, file=path)
        model = parse_json(text, file=path, what="the model as XGBoost read it")
        try:
            check_model(model, file=path)
        except InputError as exc:
            raise InputError(f"{exc.problem} (in the model as XGBoost read it)", file=path, where=exc.where,
                             fix=exc.fix) from None
    booster = xgb.Booster()
    try:
        booster.load_model(bytearray(text))
    except Exception as exc:  # the rehearsal loaded it; anything left is XGBoost's own refusal
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise InputError(f"XGBoost cannot load this model ({first[:200]})", file=path, fix=SAVE_AGAIN) from None
    return XGBoostRanker(booster, model)
