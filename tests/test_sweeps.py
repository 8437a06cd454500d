"""The counterfactual sweep's scores do not depend on how many rows one predict call takes."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

import auditor.evidence.sweeps as sweeps


def test_swept_scores_are_the_same_in_any_slices(monkeypatch) -> None:
    """Each feature set to each grid value for every document, scored in slices built when called (the rows built
    at once held 1 GB on 200 queries): the same scores as the stacked rows scored in one call, whatever the slice."""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(23, 5))
    weights = rng.normal(size=5)
    calls: list[int] = []

    def predict(rows: np.ndarray) -> np.ndarray:
        calls.append(len(rows))
        return (np.tanh(rows) * weights).sum(axis=1)  # row by row, as a tree model scores (no BLAS blocking)

    ctx = SimpleNamespace(model=SimpleNamespace(predict=predict))
    features, grids = [1, 3], [np.array([-1.0, 0.0, 2.5]), np.array([7.0, np.nan])]
    expected = []
    for feature, grid in zip(features, grids, strict=True):
        block = np.repeat(X[None], len(grid), axis=0)
        block[:, :, feature] = grid[:, None]
        expected.append(predict(block.reshape(-1, X.shape[1])).reshape(len(grid), len(X)))
    for limit in (1_000_000, 10, 1):
        monkeypatch.setattr(sweeps, "MAX_ROWS", limit)
        calls.clear()
        found = sweeps.swept_scores(ctx, X, features, grids)
        for got, want in zip(found, expected, strict=True):
            np.testing.assert_array_equal(got, want)
        assert sum(calls) == sum(len(g) for g in grids) * len(X)  # every row scored once
        assert max(calls) <= limit
