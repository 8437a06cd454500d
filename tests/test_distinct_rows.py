"""Each distinct masked row of a query under fill rows scored once (auditor/explain/distinct_rows.py): the same bits as
scoring every row, fewer rows, and nothing scored twice."""

from __future__ import annotations

import numpy as np

from auditor.explain.distinct_rows import DistinctRows
from auditor.models.base import CountingRanker
from auditor.models.callable import CallableRanker
from auditor.models.lightgbm import LightGBMRanker


def _every_row(model: CountingRanker, X: np.ndarray, fill: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """(C × r × n) the model's predictions of every built row, the oracle."""
    rows = np.where(keep[:, None, None, :], X[None, None, :, :], fill[None, :, None, :])
    return model.inner.predict(rows.reshape(-1, X.shape[1])).reshape(keep.shape[0], fill.shape[0], X.shape[0])


def test_scores_are_those_of_every_row_for_fewer_rows_and_none_twice(lambdamart):
    booster, X, _, _ = lambdamart
    model = CountingRanker(LightGBMRanker(booster))
    rng = np.random.default_rng(3)
    docs, fill = X[:15].copy(), X[100:130].copy()
    fill[:, 2] = docs[0, 2]  # a feature every fill row shares with one document: kept or filled, the same row
    keep = rng.random((40, X.shape[1])) < 0.4
    distinct = DistinctRows(model, docs, fill)
    expected = _every_row(model, docs, fill, keep)
    first = distinct.scores(keep, np.arange(10))
    np.testing.assert_array_equal(first, expected[:, :10])  # bit for bit
    assert 0 < distinct.rows == model.rows_evaluated < keep.shape[0] * 10 * docs.shape[0]
    again = distinct.rows
    np.testing.assert_array_equal(distinct.scores(keep[::-1], np.arange(10)), expected[::-1, :10])
    assert distinct.rows == again  # every row already scored: nothing new
    np.testing.assert_array_equal(distinct.scores(keep, np.arange(5, 30)), expected[:, 5:])
    assert distinct.rows < keep.shape[0] * 30 * docs.shape[0]


def test_a_model_without_trees_shares_only_rows_equal_value_for_value():
    rng = np.random.default_rng(0)
    docs = np.round(rng.normal(size=(6, 4)), 1)
    fill = docs[[0, 3]].copy()
    fill[1, 1] = np.nan
    docs[2, 1] = np.nan
    model = CountingRanker(CallableRanker(lambda X: np.nan_to_num(X) @ np.array([1.0, -2.0, 0.5, 3.0]), "t:f", 4))
    keep = rng.random((12, 4)) < 0.5
    distinct = DistinctRows(model, docs, fill)
    np.testing.assert_array_equal(distinct.scores(keep, np.arange(2)), _every_row(model, docs, fill, keep))
    # a document's row under its own values as fill is the same row whatever is kept
    own = {tuple(np.where(k, docs[0], fill[0])) for k in keep}
    assert len(own) == 1 and distinct.rows < keep.shape[0] * 2 * docs.shape[0]


def test_past_the_scores_it_keeps_it_starts_again_with_the_same_scores(lambdamart, monkeypatch) -> None:
    from auditor.explain import distinct_rows

    booster, X, _, _ = lambdamart
    model = CountingRanker(LightGBMRanker(booster))
    docs, fill = X[:10], X[200:206]
    keep = np.random.default_rng(5).random((20, X.shape[1])) < 0.5
    monkeypatch.setattr(distinct_rows, "_KEPT", 30)
    distinct = DistinctRows(model, docs, fill)
    expected = _every_row(model, docs, fill, keep)
    np.testing.assert_array_equal(distinct.scores(keep, np.arange(3)), expected[:, :3])
    np.testing.assert_array_equal(distinct.scores(keep, np.arange(3, 6)), expected[:, 3:])  # too many: forgets
    before = distinct.rows
    np.testing.assert_array_equal(distinct.scores(keep, np.arange(3)), expected[:, :3])
    assert distinct.rows > before  # what it could not keep was scored again, and counted
    assert distinct.rows == model.rows_evaluated
