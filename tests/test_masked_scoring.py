"""Masked scores read off the trees equal the model's scores of the materialised masked rows, bit for bit."""

from __future__ import annotations

import json

import lightgbm as lgb
import numpy as np
import pytest

from auditor.masked_scoring import masked_ensemble, masked_scores
from auditor.models.base import CountingRanker
from auditor.models.lightgbm import LightGBMRanker
from auditor.trees import MISSING_NAN, MISSING_ZERO, TreeEnsemble, probe_rows

N_FEATURES = 8


def awkward_data(seed: int = 0, n: int = 800) -> tuple[np.ndarray, np.ndarray]:
    """Columns with NaN, exact zeros and -0.0, tiny values (±1e-40, below LightGBM's zero threshold), negative
    values, two constant columns (3.0 and 0.0) and counts; graded labels that depend on all of it."""
    rng = np.random.default_rng(seed)
    X = np.empty((n, N_FEATURES))
    X[:, 0] = rng.normal(size=n)
    X[:, 1] = np.where(rng.random(n) < 0.2, np.nan, rng.normal(size=n))
    X[:, 2] = np.where(rng.random(n) < 0.3, 0.0, rng.normal(size=n))
    X[:, 2][(X[:, 2] == 0) & (rng.random(n) < 0.5)] = -0.0
    X[:, 3] = np.where(rng.random(n) < 0.3, rng.choice([1e-40, -1e-40, 0.0], size=n), rng.normal(size=n) * 1e-3)
    X[:, 4] = -np.exp(rng.normal(2, 1, size=n))
    X[:, 5] = 3.0
    X[:, 6] = 0.0
    X[:, 7] = rng.poisson(1.0, size=n)
    signal = (np.nan_to_num(X[:, 0]) + np.isnan(X[:, 1]) + 0.8 * (X[:, 2] == 0) + 500 * X[:, 3] + 0.1 * X[:, 4]
              + 0.3 * X[:, 7] + 0.3 * rng.normal(size=n))
    labels = np.digitize(signal, np.quantile(signal, [0.5, 0.8, 0.95]))
    return X, labels


def lambdarank(X: np.ndarray, y: np.ndarray, **params: object) -> lgb.Booster:
    base = {"objective": "lambdarank", "num_leaves": 15, "min_data_in_leaf": 5, "learning_rate": 0.2,
            "verbosity": -1, "seed": 0, "deterministic": True, "num_threads": 1}
    return lgb.train({**base, **params}, lgb.Dataset(X, y, group=[20] * (len(X) // 20)), num_boost_round=30)


def masks(rng: np.random.Generator, n: int = 40) -> np.ndarray:
    """All kept, none kept, each feature alone, each feature left out, and random masks."""
    eye = np.eye(N_FEATURES, dtype=bool)
    return np.vstack([np.ones((1, N_FEATURES), bool), np.zeros((1, N_FEATURES), bool), eye, ~eye,
                      rng.random((n, N_FEATURES)) < 0.5])


def materialised(X: np.ndarray, fill: np.ndarray, keep: np.ndarray) -> np.ndarray:
    return np.where(keep[:, None, :], X[None], fill[None, None]).reshape(-1, X.shape[1])


def fills(X: np.ndarray, ensemble: TreeEnsemble) -> list[np.ndarray]:
    """The background mean; with NaN; zeros of both signs and 1e-40; values at, below and above thresholds."""
    mean = np.nanmean(X, axis=0)
    with_nan = mean.copy()
    with_nan[[0, 2, 3]] = np.nan
    zeros = np.array([0.0, -0.0, 1e-40, -1e-40, 0.0, -0.0, 1e-40, 0.0])
    cut = probe_rows(ensemble, np.random.default_rng(5), 3)
    return [mean, with_nan, zeros, *cut]


def documents(X: np.ndarray, ensemble: TreeEnsemble) -> np.ndarray:
    """Training rows and probe rows (values at, just below and just above every threshold, 0, NaN)."""
    return np.vstack([X[:60], probe_rows(ensemble, np.random.default_rng(6), 60)])


@pytest.mark.parametrize("params", [{}, {"use_missing": True, "zero_as_missing": True}, {"use_missing": False}],
                         ids=["nan-missing", "zero-as-missing", "no-missing"])
def test_lightgbm_lambdarank_bit_identical(params: dict) -> None:
    X, y = awkward_data()
    booster = lambdarank(X, y, **params)
    ensemble = TreeEnsemble.from_lightgbm(booster.dump_model())
    kinds = set(ensemble.missing[ensemble.feature >= 0].tolist())
    if params.get("zero_as_missing"):
        assert MISSING_ZERO in kinds  # the test exercises the missing type it is about
    elif not params:
        assert MISSING_NAN in kinds
    docs, keep = documents(X, ensemble), masks(np.random.default_rng(1))
    for fill in fills(X, ensemble):
        ours = masked_scores(ensemble, docs, fill, keep)
        rows = materialised(docs, fill, keep)
        assert ours.shape == (keep.shape[0], docs.shape[0])
        assert np.array_equal(ours.ravel(), ensemble.predict(rows))
        assert np.array_equal(ours.ravel(), booster.predict(rows, raw_score=True))
        assert np.array_equal(ours[0], booster.predict(docs, raw_score=True))  # all kept: the documents themselves


def test_xgboost_float32_sum_and_inputs() -> None:
    xgb = pytest.importorskip("xgboost")
    X, y = awkward_data(1, 600)
    data = xgb.DMatrix(X, y, qid=np.repeat(np.arange(30), 20))
    booster = xgb.train({"objective": "rank:pairwise", "max_depth": 4, "eta": 0.3, "nthread": 1, "seed": 0}, data,
                        15)
    ensemble = TreeEnsemble.from_xgboost(json.loads(booster.save_raw("json")))
    assert ensemble.float32_sum and ensemble.float32_inputs
    docs, keep = documents(X, ensemble), masks(np.random.default_rng(2))
    for fill in fills(X, ensemble):
        ours = masked_scores(ensemble, docs, fill, keep)
        rows = materialised(docs, fill, keep)
        assert np.array_equal(ours.ravel(), ensemble.predict(rows))
        theirs = booster.predict(xgb.DMatrix(rows), output_margin=True).astype(np.float64)
        assert np.array_equal(ours.ravel(), theirs)


def test_sklearn_float32_inputs_and_tree_weights() -> None:
    from sklearn.ensemble import GradientBoostingRegressor, RandomForestRegressor

    X, y = awkward_data(2, 500)
    X = np.nan_to_num(X, nan=-1.0)  # no NaN in training (scikit-learn's boosting refuses it); probe rows add NaN
    model = GradientBoostingRegressor(n_estimators=20, max_depth=3, random_state=0).fit(X, y)
    ensemble = TreeEnsemble.from_sklearn(model)
    assert ensemble.float32_inputs and not ensemble.float32_sum
    docs, keep = documents(X, ensemble), masks(np.random.default_rng(3))
    docs = docs[~np.isnan(docs).any(axis=1)]
    for fill in fills(X, ensemble)[:1] + fills(X, ensemble)[2:]:  # no NaN fill: scikit-learn refuses NaN rows
        ours = masked_scores(ensemble, docs, fill, keep)
        rows = materialised(docs, fill, keep)
        assert np.array_equal(ours.ravel(), ensemble.predict(rows))
        assert np.array_equal(ours.ravel(), model.predict(rows))
    forest = TreeEnsemble.from_sklearn(RandomForestRegressor(n_estimators=5, max_depth=5, random_state=0).fit(X, y))
    assert not np.all(forest.weight == 1.0)  # 1/n_trees: the per-tree weight is applied as `_score` applies it
    fill = np.nanmean(X, axis=0)
    ours = masked_scores(forest, docs, fill, keep)
    assert np.array_equal(ours.ravel(), forest.predict(materialised(docs, fill, keep)))


def test_shapes_and_edges() -> None:
    X, y = awkward_data(3, 200)
    ensemble = TreeEnsemble.from_lightgbm(lambdarank(X, y).dump_model())
    fill = np.nanmean(X, axis=0)
    keep = masks(np.random.default_rng(4), 5)
    assert masked_scores(ensemble, X[:0], fill, keep).shape == (keep.shape[0], 0)
    assert masked_scores(ensemble, X[:3], fill, keep[:0]).shape == (0, 3)
    one = masked_scores(ensemble, X[7], fill[None], keep[5])  # one document, one mask, a (1 × F) fill
    assert np.array_equal(one, ensemble.predict(materialised(X[7:8], fill, keep[5:6])).reshape(1, 1))
    with pytest.raises(ValueError, match="columns"):
        masked_scores(ensemble, X[:, :5], fill[:5], keep[:, :5])
    with pytest.raises(ValueError, match="columns"):
        masked_scores(ensemble, X, fill, keep[:, :4])  # not silently reshaped


def test_which_models_get_an_ensemble() -> None:
    X, y = awkward_data(4, 200)
    booster = lambdarank(X, y)
    ensemble = TreeEnsemble.from_lightgbm(booster.dump_model())
    assert masked_ensemble(ensemble) is ensemble
    found = masked_ensemble(CountingRanker(LightGBMRanker(booster)))
    assert found is not None and np.array_equal(found.predict(X), ensemble.predict(X))
    codes = np.column_stack([np.random.default_rng(0).integers(0, 6, 400), np.random.default_rng(1).normal(size=400)])
    categorical = lgb.train({"objective": "regression", "verbosity": -1, "min_data_per_group": 5, "cat_smooth": 1},
                            lgb.Dataset(codes, (codes[:, 0] == 3) * 2.0 + codes[:, 1], categorical_feature=[0]),
                            num_boost_round=5)
    assert masked_ensemble(LightGBMRanker(categorical)) is None
    assert masked_ensemble(object()) is None


def test_the_evidence_is_the_same_read_off_the_trees_or_predicted(monkeypatch) -> None:
    """Local explanations and confidence on the bookstore with masked rows read off the trees and with them built
    and predicted (AUDITOR_MASKED_ROWS=predict): the same records, metrics and model-row counts, exactly."""
    from auditor.data import load_ranking_data
    from auditor.evidence import confidence, local_explanations
    from auditor.evidence.base import AuditContext
    from auditor.models.lightgbm import load_lightgbm
    from tests.conftest import BOOKSTORE

    model = load_lightgbm(BOOKSTORE / "model.txt")
    kwargs = {"format": "csv", "n_features": model.n_features, "model_feature_names": model.feature_names,
              "query_column": "qid", "label_column": "label", "doc_id_column": "doc_id"}
    data = load_ranking_data(BOOKSTORE / "test.csv", **kwargs)
    background = load_ranking_data(BOOKSTORE / "train.csv", **kwargs)

    def run(path: str) -> tuple[str, int, bool]:
        monkeypatch.setenv("AUDITOR_MASKED_ROWS", path)
        ctx = AuditContext(data=data, model=CountingRanker(model), seed=3, background=background)
        local = local_explanations.run(ctx, local_explanations.LocalExplanationsOptions(
            methods=["treeshap5", "exs5", "greedy_cover_eps", "validity_search", "rankingshap"], k=4,
            k_curve=[3], queries=5, optimum_max_subsets=0))
        judged = confidence.run(ctx, confidence.ConfidenceOptions(
            methods=["treeshap5", "exs5", "greedy_cover_eps"], k=4, queries=5))
        text = json.dumps([[local.metrics, local.records, judged.metrics, judged.records]], sort_keys=True,
                          default=str)
        return text, ctx.model.rows_evaluated, ctx.model.exact_trees() is not None

    trees, trees_rows, used = run("trees")
    predicted, predicted_rows, off = run("predict")
    assert used and not off
    assert trees == predicted and trees_rows == predicted_rows
