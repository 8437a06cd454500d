"""CatBoost models from `.cbm` files or CatBoost's JSON export (`model.save_model(path, format="json")`).

Loading: the bytes are read once; a JSON export is checked (`catboost_check.check_model`) before anything native
sees it; then CatBoost loads the bytes in a throw-away process and exports them as JSON (a `.cbm` file is checked
in that form). This process's CatBoost loads the same bytes only after both. Float features only: categorical,
text and embedding features are refused (docs/models.md). Scores are CatBoost's own (`RawFormulaVal`, float64).
TreeSHAP, decision paths and the rest of the tree evidence read `auditor.scoring.trees.TreeEnsemble` built from the JSON
export, checked at load to reproduce CatBoost's scores on probe rows (to 1e-9; measured: exactly).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from auditor.core.errors import InputError
from auditor.core.files import MAX_MODEL_BYTES, read_bytes
from auditor.models.base import checked_ensemble, thread_count
from auditor.models.catboost_check import SAVE_AGAIN, check_model, file_format, parse_json, rehearse_catboost
from auditor.models.json_dump import check_json_size


def _catboost() -> Any:
    try:
        import catboost
    except ImportError:  # pragma: no cover - the extra is part of dev
        raise InputError("the model is a CatBoost model but catboost is not installed",
                         fix="pip install 'auditor[catboost]'") from None
    return catboost


class CatBoostRanker:
    """A CatBoost model as a Ranker. Predictions are raw formula values (what a ranker sorts by)."""

    kind = "catboost"
    concurrent_predict = True  # CatBoost's applier only reads the model; each call gets its own thread count
    SMALL_BATCH = 1_000

    def __init__(self, model: Any, export: dict[str, Any]) -> None:
        from auditor.scoring.trees import TreeEnsemble

        self.model = model
        features = export["features_info"]["float_features"]
        self.n_features = len(features)
        names = [""] * self.n_features
        for feature in features:
            names[int(feature["flat_feature_index"])] = str(feature.get("feature_id", ""))
        self.feature_names = names if all(names) else None
        params = export.get("model_info", {}).get("params", {})
        self.objective = str(params.get("loss_function", {}).get("type", "unknown")) if isinstance(params, dict) \
            else "unknown"
        self.n_trees = len(export.get("oblivious_trees", [])) + len(export.get("trees", []))
        self.oblivious = bool(export.get("oblivious_trees"))
        self.trees, self.trees_problem = checked_ensemble(lambda: TreeEnsemble.from_catboost(export), self.predict,
                                                          library="CatBoost")
        self._shap: Any = None

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_shap"] = None
        return state

    def predict(self, X: np.ndarray) -> np.ndarray:
        threads = 1 if X.shape[0] < self.SMALL_BATCH else thread_count()
        X = np.ascontiguousarray(X, dtype=np.float64)
        return np.asarray(self.model.predict(X, prediction_type="RawFormulaVal", thread_count=threads),
                          dtype=np.float64).reshape(-1)

    def contributions(self, X: np.ndarray) -> np.ndarray | None:
        """Path-dependent TreeSHAP on the array form (`FastTreeShap`; equal to CatBoost's `ShapValues` to 1e-6,
        tested: 2e-15 on the bookstore ranker); None when the array form does not reproduce the model."""
        if self.trees is None:
            return None
        if self._shap is None:
            from auditor.scoring.fast_treeshap import FastTreeShap

            self._shap = FastTreeShap(self.trees)
        return self._shap.contributions(X)

    contributions_method = "auditor's FastTreeShap on CatBoost's trees (equal to CatBoost's ShapValues to 1e-6)"

    def tree_ensemble(self) -> Any:
        from auditor.scoring.trees import UnsupportedModel

        if self.trees is None:
            raise UnsupportedModel(self.trees_problem)
        return self.trees

    def describe(self) -> dict[str, Any]:
        catboost = _catboost()
        return {"kind": self.kind, "library": f"catboost {catboost.__version__}", "n_features": self.n_features,
                "n_trees": self.n_trees, "objective": self.objective,
                "trees": "oblivious" if self.oblivious else "non-symmetric"}


def load_catboost(path: Path) -> CatBoostRanker:
    """A CatBoost model from a .cbm file or its JSON export: checked, rehearsed, then loaded (module docstring)."""
    catboost = _catboost()
    data = read_bytes(path, limit=MAX_MODEL_BYTES, what="model file")
    fmt = file_format(data, file=path)
    if fmt == "json":
        check_json_size(len(data), file=path, library="CatBoost")
        check_model(parse_json(data, file=path), file=path)
    exported = rehearse_catboost(data, fmt, file=path)
    export = parse_json(exported, file=path, what="the model as CatBoost read it")
    try:
        check_model(export, file=path)
    except InputError as exc:
        raise InputError(f"{exc.problem}" + (" (in the model as CatBoost read it)" if fmt == "cbm" else ""),
                         file=path, where=exc.where, fix=exc.fix) from None
    model = catboost.CatBoost()
    try:
        if fmt == "cbm":
            model.load_model(blob=data)
        else:  # CatBoost reads JSON from a path only: the same bytes, from a private file
            with tempfile.TemporaryDirectory(prefix="auditor-catboost-") as folder:
                source = os.path.join(folder, "model.json")
                with open(source, "wb") as handle:
                    handle.write(data)
                model.load_model(source, format="json")
    except Exception as exc:  # the rehearsal loaded it; anything left is CatBoost's own refusal
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise InputError(f"CatBoost cannot load this model ({first[:200]})", file=path, fix=SAVE_AGAIN) from None
    return CatBoostRanker(model, export)
