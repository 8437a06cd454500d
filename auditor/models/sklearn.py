"""scikit-learn tree models: loaded with skops (no code runs on load), or pickle/joblib only when trusted."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from auditor.errors import InputError

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
        self._explainer = None

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
    return SklearnTreeRanker(estimator)


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
