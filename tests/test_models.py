"""Model loaders: LightGBM text and JSON, scikit-learn via skops, and the trust gates."""

from __future__ import annotations

import json
from pathlib import Path

import joblib
import numpy as np
import pytest
import skops.io as sio
from sklearn.ensemble import GradientBoostingRegressor, RandomForestRegressor
from sklearn.linear_model import LinearRegression
from sklearn.tree import DecisionTreeRegressor

from auditor.core.errors import InputError
from auditor.models.base import CountingRanker
from auditor.models.callable import load_callable
from auditor.models.lightgbm import load_lightgbm
from auditor.models.sklearn import load_sklearn


def test_lightgbm_text_and_json_predict_the_same(tmp_path: Path, lambdamart) -> None:
    booster, X, _, _ = lambdamart
    booster.save_model(str(tmp_path / "m.txt"))
    (tmp_path / "m.json").write_text(json.dumps(booster.dump_model()))
    expected = booster.predict(X, raw_score=True)
    for name in ("m.txt", "m.json"):
        ranker = load_lightgbm(tmp_path / name)
        np.testing.assert_array_equal(ranker.predict(X), expected)
        assert ranker.describe()["n_trees"] == booster.num_trees()


def test_lightgbm_contributions_add_up(lambdamart, tmp_path: Path) -> None:
    booster, X, _, _ = lambdamart
    booster.save_model(str(tmp_path / "m.txt"))
    ranker = CountingRanker(load_lightgbm(tmp_path / "m.txt"))
    contrib = ranker.contributions(X)
    np.testing.assert_allclose(contrib.sum(axis=1), ranker.predict(X), atol=1e-12)
    assert ranker.rows_evaluated == 2 * len(X)


def test_lightgbm_contributions_match_shap(lambdamart, tmp_path: Path) -> None:
    import shap

    booster, X, _, _ = lambdamart
    booster.save_model(str(tmp_path / "m.txt"))
    ours = load_lightgbm(tmp_path / "m.txt").contributions(X[:50])[:, :-1]
    np.testing.assert_allclose(ours, shap.TreeExplainer(booster).shap_values(X[:50]), atol=1e-9)


def test_not_a_model_file(tmp_path: Path) -> None:
    (tmp_path / "m.txt").write_text("hello\n")
    with pytest.raises(InputError, match="not a LightGBM model"):
        load_lightgbm(tmp_path / "m.txt")
    (tmp_path / "m.json").write_text("{broken")
    with pytest.raises(InputError, match="not valid JSON"):
        load_lightgbm(tmp_path / "m.json")


@pytest.mark.parametrize("estimator", [DecisionTreeRegressor(max_depth=3), GradientBoostingRegressor(n_estimators=5),
                                       RandomForestRegressor(n_estimators=3, random_state=0)])
def test_sklearn_trees_via_skops(tmp_path: Path, estimator, lambdamart) -> None:
    _, X, y, _ = lambdamart
    estimator.fit(X, y)
    sio.dump(estimator, tmp_path / "m.skops")
    ranker = load_sklearn(tmp_path / "m.skops", trust=False)
    np.testing.assert_allclose(ranker.predict(X), estimator.predict(X))
    contrib = ranker.contributions(X[:20])
    np.testing.assert_allclose(contrib.sum(axis=1), estimator.predict(X[:20]), atol=1e-6)


def test_pickle_needs_trust_and_unsupported_estimator(tmp_path: Path, lambdamart) -> None:
    _, X, y, _ = lambdamart
    joblib.dump(DecisionTreeRegressor(max_depth=2).fit(X, y), tmp_path / "m.pkl")
    with pytest.raises(InputError, match="trust: true"):
        load_sklearn(tmp_path / "m.pkl", trust=False)
    assert load_sklearn(tmp_path / "m.pkl", trust=True).n_features == X.shape[1]
    sio.dump(LinearRegression().fit(X, y), tmp_path / "lin.skops")
    with pytest.raises(InputError, match="not a fitted scikit-learn tree"):
        load_sklearn(tmp_path / "lin.skops", trust=True)


def test_callable_needs_trust(tmp_path: Path) -> None:
    (tmp_path / "mymodel.py").write_text("def score(X):\n    return X[:, 0] * 2\n")
    with pytest.raises(InputError, match="trust: true"):
        load_callable("mymodel:score", trust=False, search_path=tmp_path, n_features=None)
    ranker = load_callable("mymodel:score", trust=True, search_path=tmp_path, n_features=None)
    assert ranker.predict(np.array([[1.0], [3.0]])).tolist() == [2.0, 6.0]
    assert ranker.contributions(np.zeros((1, 1))) is None
    with pytest.raises(InputError, match="has no function"):
        load_callable("mymodel:nope", trust=True, search_path=tmp_path, n_features=None)
