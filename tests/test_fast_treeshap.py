"""Our numba TreeSHAP equals LightGBM's pred_contrib (and shap's TreeExplainer for scikit-learn) to 1e-9."""

from __future__ import annotations

import itertools
import json

import lightgbm as lgb
import numpy as np
import pytest
import shap
from sklearn.ensemble import GradientBoostingRegressor
from sklearn.tree import DecisionTreeRegressor

from auditor.scoring.fast_treeshap import FastTreeShap
from auditor.scoring.trees import TreeEnsemble, probe_rows


def ranking_data(rng: np.random.Generator, n: int = 2400, f: int = 12) -> tuple[np.ndarray, np.ndarray, list[int]]:
    X = rng.normal(size=(n, f))
    X[rng.random(X.shape) < 0.1] = np.nan
    X[rng.random(X.shape) < 0.15] = 0.0
    signal = np.nan_to_num(X[:, 0]) + np.isnan(X[:, 1]) + (X[:, 2] == 0) + 0.5 * np.nan_to_num(X[:, 3] * X[:, 4])
    y = np.digitize(signal + rng.normal(scale=0.5, size=n), [0.0, 1.0, 2.0]).astype(int)
    return X, y, [40] * (n // 40)


@pytest.mark.parametrize("params", [{}, {"zero_as_missing": True}, {"use_missing": False}],
                         ids=["nan-missing", "zero-as-missing", "no-missing"])
def test_lambdarank_equals_pred_contrib(params: dict) -> None:
    rng = np.random.default_rng(0)
    X, y, groups = ranking_data(rng)
    booster = lgb.train({"objective": "lambdarank", "num_leaves": 31, "min_data_in_leaf": 5, "verbosity": -1,
                         "num_threads": 1, "seed": 0, **params}, lgb.Dataset(X, y, group=groups), num_boost_round=40)
    ensemble = TreeEnsemble.from_lightgbm(booster.dump_model())
    rows = np.vstack([X[:800], probe_rows(ensemble, rng, 400)])
    reference = booster.predict(rows, pred_contrib=True)
    explainer = FastTreeShap(ensemble)
    ours = explainer.contributions(rows)
    assert ours.shape == reference.shape
    assert np.max(np.abs(ours - reference)) < 1e-9
    assert abs(explainer.expected_value - reference[0, -1]) < 1e-9
    # a row's values do not depend on the block it is explained in (blocks of 128 here, of 5 below)
    assert np.array_equal(explainer.contributions(rows[3:40]), ours[3:40])
    # every leaf computed without tables (the deep-leaf path) gives the same values
    direct = FastTreeShap(ensemble, max_table_bits=0).contributions(rows[:200])
    assert np.max(np.abs(direct - reference[:200])) < 1e-9
    budget = FastTreeShap(ensemble, max_table_bytes=4096)  # a memory budget: some leaves tabled, others direct
    assert (budget.tables.leaf_table >= 0).any() and ((budget.tables.leaf_table < 0) & (budget.tables.leaf_k > 6)).any()
    assert np.max(np.abs(budget.contributions(rows[:200]) - reference[:200])) < 1e-9


@pytest.mark.parametrize("make", [lambda: DecisionTreeRegressor(max_depth=8, random_state=0),
                                  lambda: GradientBoostingRegressor(n_estimators=30, max_depth=4, random_state=0)],
                         ids=["decision-tree", "gradient-boosting"])
def test_sklearn_equals_shap(make) -> None:
    rng = np.random.default_rng(1)
    X = rng.normal(size=(1500, 8))
    y = X[:, 0] * 2 + np.sin(X[:, 1] * 3) + X[:, 2] * X[:, 3] + rng.normal(scale=0.1, size=1500)
    model = make().fit(X, y)
    ensemble = TreeEnsemble.from_sklearn(model)
    explainer = shap.TreeExplainer(model)
    rows = X[:500]
    ours = FastTreeShap(ensemble).contributions(rows)
    assert np.max(np.abs(ours[:, :-1] - explainer.shap_values(rows))) < 1e-9
    assert abs(ours[0, -1] - float(np.ravel(explainer.expected_value)[0])) < 1e-9
    assert np.max(np.abs(ours.sum(axis=1) - model.predict(rows))) < 1e-9


def test_global_importance_uses_it_for_lightgbm_and_counts_the_same_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    from auditor.evidence import importance
    from auditor.evidence.base import AuditContext
    from auditor.evidence.kinds.global_importance import measure as global_importance
    from auditor.inputs.data import RankingData
    from auditor.models.base import CountingRanker
    from auditor.models.lightgbm import LightGBMRanker

    rng = np.random.default_rng(2)
    X, y, groups = ranking_data(rng, n=1200)
    params = {"objective": "lambdarank", "num_leaves": 15, "verbosity": -1, "num_threads": 1, "seed": 0}
    booster = lgb.train(params, lgb.Dataset(X, y, group=groups), num_boost_round=10)
    data = RankingData(X=X, y=y, query_ptr=np.cumsum([0, *groups]), query_ids=[str(q) for q in range(len(groups))],
                       doc_ids=[str(d) for d in range(len(X))], feature_names=[f"f{j}" for j in range(X.shape[1])])
    runs = []
    from auditor.models import capabilities

    for seconds in (float("inf"), 0.0):  # pred_contrib, then ours
        monkeypatch.setattr(capabilities, "FAST_TREESHAP_MIN_SECONDS", seconds)
        ctx = AuditContext(data=data, model=CountingRanker(LightGBMRanker(booster)), seed=0)
        contrib, method = global_importance._contributions(ctx, chunk=500)
        runs.append((contrib, method, ctx.model.rows_evaluated))
    (theirs, their_method, their_rows), (ours, our_method, our_rows) = runs
    assert "pred_contrib" in their_method and "FastTreeShap" in our_method
    assert np.max(np.abs(ours - theirs)) < 1e-9 and our_rows == their_rows == len(X)
    # a model the array form does not cover (a categorical split) keeps LightGBM's own
    X[:, 5] = rng.integers(0, 4, size=len(X))
    y = np.where(X[:, 5] == 2, 3, y)
    categorical = lgb.train(params, lgb.Dataset(X, y, group=groups, categorical_feature=[5]), num_boost_round=10)
    assert '"decision_type": "=="' in json.dumps(categorical.dump_model())
    assert importance._fast_treeshap(CountingRanker(LightGBMRanker(categorical)), 10 ** 9) is None


def test_global_importance_streams_treeshap_without_holding_every_row() -> None:
    """The evidence's one pass over the data (chunks of whole queries) leaves the same summaries, query means and
    plotted rows' φ as the full φ matrix would, so 1M documents never need φ in memory at once."""
    from auditor.evidence import importance
    from auditor.evidence.base import AuditContext
    from auditor.evidence.kinds.global_importance import measure as global_importance
    from auditor.inputs.data import RankingData
    from auditor.models.base import CountingRanker
    from auditor.models.lightgbm import LightGBMRanker

    rng = np.random.default_rng(3)
    X, y, _ = ranking_data(rng, n=1300)
    groups = list(rng.integers(1, 40, size=25))
    groups.append(len(X) - sum(groups))  # uneven queries, one of them larger than a chunk
    assert groups[-1] > 300
    params = {"objective": "lambdarank", "num_leaves": 7, "verbosity": -1, "num_threads": 1, "seed": 0}
    booster = lgb.train(params, lgb.Dataset(X, y, group=groups), num_boost_round=5)
    ptr = np.cumsum([0, *groups])
    data = RankingData(X=X, y=y, query_ptr=ptr, query_ids=[str(q) for q in range(len(groups))],
                       doc_ids=[str(d) for d in range(len(X))], feature_names=[f"f{j}" for j in range(X.shape[1])])
    ctx = AuditContext(data=data, model=CountingRanker(LightGBMRanker(booster)), seed=0)
    full, _ = global_importance._contributions(ctx)
    keep = np.sort(rng.choice(len(X), 50, replace=False))
    ctx.scores()  # shared with other evidence, counted once
    rows_before = ctx.model.rows_evaluated
    passed = importance.treeshap_pass(ctx, keep, chunk=300)
    assert ctx.model.rows_evaluated - rows_before == len(X)
    chunks = importance._query_chunks(ptr, 300)
    assert chunks[0][0] == 0 and chunks[-1][1] == len(groups)
    assert all(a[1] == b[0] for a, b in itertools.pairwise(chunks))
    reference = importance.summarize(full[:, :-1], ptr)
    assert np.allclose(passed.summary.global_abs, reference.global_abs, rtol=1e-12, atol=0)
    assert np.array_equal(passed.summary.per_query_abs, reference.per_query_abs)
    assert np.array_equal(passed.summary.within, reference.within)
    assert np.array_equal(passed.kept, full[keep, :-1])
    means = np.array([full[a:b, :-1].mean(axis=0) for a, b in itertools.pairwise(ptr)])
    assert np.array_equal(passed.query_means, means)
    assert passed.additivity < 1e-9


def test_ours_only_where_pred_contrib_would_take_longer_than_compiling_ours() -> None:
    """The choice is the model's and the rows' (never the cache's): a small model on the bookstore's rows keeps
    pred_contrib (measured 0.2 s, against ~8 s to compile ours), a thousand times the rows gets ours."""
    from auditor.models import capabilities
    from auditor.models.lightgbm import load_lightgbm
    from tests.conftest import BOOKSTORE

    model = load_lightgbm(BOOKSTORE / "model.txt")
    ensemble = model.tree_ensemble()
    assert 0.05 < capabilities.pred_contrib_seconds(ensemble, 1627) < 1.0  # measured: 0.20 s
    assert capabilities.fast_treeshap(model, 1627) is None
    assert capabilities.fast_treeshap(model, 1627 * 1000) is not None
