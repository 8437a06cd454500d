"""The normalised tree form: LightGBM models flatten to arrays whose traversal reproduces LightGBM bit for bit."""

from __future__ import annotations

from pathlib import Path

import lightgbm as lgb
import numpy as np
import pytest

from auditor.models.lightgbm import json_dump_to_model_string
from auditor.scoring.trees import TreeEnsemble, UnsupportedModel, probe_rows


def train(params: dict, X: np.ndarray, y: np.ndarray, rounds: int = 25) -> lgb.Booster:
    base = {"objective": "regression", "num_leaves": 15, "min_data_in_leaf": 5, "verbosity": -1, "seed": 0}
    return lgb.train({**base, **params}, lgb.Dataset(X, y), num_boost_round=rounds)


@pytest.mark.parametrize("params", [{}, {"zero_as_missing": True}, {"use_missing": False}],
                         ids=["nan-missing", "zero-as-missing", "no-missing"])
def test_traversal_is_bit_identical_to_lightgbm(params: dict) -> None:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 6))
    X[rng.random(X.shape) < 0.1] = np.nan
    X[rng.random(X.shape) < 0.2] = 0.0
    y = np.nan_to_num(X[:, 0]) * 2 + np.isnan(X[:, 1]) + (X[:, 2] == 0) + rng.normal(size=3000) * 0.1
    booster = train(params, X, y)
    ensemble = TreeEnsemble.from_lightgbm(booster.dump_model())
    rows = np.vstack([X, probe_rows(ensemble, rng, 2000)])
    assert np.array_equal(ensemble.predict(rows), booster.predict(rows))
    assert np.array_equal(ensemble.predict(rows[:50]), booster.predict(rows[:50]))  # serial kernel too
    # the JSON dump rebuilt as a text model (auditor.models.lightgbm) predicts the same, infinite thresholds included
    rebuilt = lgb.Booster(model_str=json_dump_to_model_string(booster.dump_model(), Path("m.json")))
    assert np.array_equal(rebuilt.predict(rows), booster.predict(rows))


def test_structure_links_and_counts(lambdamart) -> None:
    booster = lambdamart[0]
    ensemble = TreeEnsemble.from_lightgbm(booster.dump_model())
    assert ensemble.n_trees == booster.num_trees() and ensemble.n_features == 6
    internal = np.flatnonzero(ensemble.feature >= 0)
    assert np.all(ensemble.parent[ensemble.left[internal]] == internal)
    assert np.all(ensemble.parent[ensemble.right[internal]] == internal)
    assert np.all(ensemble.parent[ensemble.roots] == -1)
    # a split node's count is the sum of its children's
    np.testing.assert_allclose(ensemble.count[internal],
                               ensemble.count[ensemble.left[internal]] + ensemble.count[ensemble.right[internal]])


def test_categorical_splits_are_refused() -> None:
    rng = np.random.default_rng(1)
    X = np.column_stack([rng.integers(0, 6, 2000), rng.normal(size=2000)])
    y = (X[:, 0] == 3) * 2.0 + X[:, 1]
    booster = lgb.train({"objective": "regression", "verbosity": -1, "min_data_per_group": 5, "cat_smooth": 1},
                        lgb.Dataset(X, y, categorical_feature=[0]), num_boost_round=5)
    with pytest.raises(UnsupportedModel, match="categorical"):
        TreeEnsemble.from_lightgbm(booster.dump_model())
