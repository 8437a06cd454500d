"""Pairwise explanations (paper 003): ASIPair against the TreeSHAP oracle, efficiency, RAIPair's recovery."""

from __future__ import annotations

import os
import platform
import subprocess
import sys

import numpy as np
import pytest
import shap

from auditor.explain.pairwise import AsiPair, ConditionalFill, PairGame, RaiPair, exact_shapley, l1_recovery
from auditor.models.base import CountingRanker
from auditor.models.lightgbm import LightGBMRanker


@pytest.fixture(scope="module")
def ranker(lambdamart):
    booster, X, _, _ = lambdamart
    return booster, CountingRanker(LightGBMRanker(booster)), X


def test_masking_fill_gives_the_difference_of_interventional_treeshap_values(ranker):
    booster, model, X = ranker
    background = X[::17][:25]
    explainer = AsiPair(ConditionalFill(background, "masking"))
    oracle = shap.TreeExplainer(booster, data=background, feature_perturbation="interventional")
    for a, b in [(0, 1), (5, 40), (100, 7)]:
        pair = explainer.explain(model, X[a], X[b], np.random.default_rng(0))
        assert pair.exact
        expected = oracle.shap_values(X[[a, b]])
        np.testing.assert_allclose(pair.phi, expected[0] - expected[1], atol=1e-6)
        assert pair.value == pytest.approx(float(model.predict(X[[a]])[0] - model.predict(X[[b]])[0]), abs=1e-12)
        assert pair.base == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("kind", ["adaptive", "masking"])
@pytest.mark.parametrize("function", ["margin", "probability"])
def test_asipair_is_efficient_exact_and_sampled(ranker, kind, function):
    _, model, X = ranker
    fill = ConditionalFill(X[:200], kind)  # type: ignore[arg-type]
    for exact_max in (10, 0):  # all coalitions, then permutation sampling
        pair = AsiPair(fill, function=function, exact_max_features=exact_max, permutations=16).explain(
            model, X[3], X[11], np.random.default_rng(1))
        assert pair.exact == (exact_max == 10)
        assert pair.efficiency_error < 1e-9
        assert abs(pair.phi.sum()) > 0  # the pair is not trivially tied


def test_prefix_weights_equal_the_weights_of_each_coalition(ranker):
    _, _, X = ranker
    fill = ConditionalFill(X[:150], "adaptive")
    order = np.array([4, 1, 5, 0, 3, 2])
    prefix = fill.prefix_log_weights(X[9], order)
    assert np.all(prefix[0] == 0)
    for j in range(1, 7):
        known = np.zeros(6, dtype=bool)
        known[order[:j]] = True
        np.testing.assert_allclose(prefix[j], fill._log_weights(X[9], known), rtol=1e-9, atol=1e-9)


def test_distances_are_whitened_mahalanobis_and_equal_rows_tie_exactly(ranker):
    """Q is the whitened distance of Eq. 5 (checked against LAPACK's factor and solve), and reference rows equal on
    the known features get bit-equal distances wherever they sit, so a tie goes to the lower index on any machine."""
    _, _, X = ranker
    reference = X[:300].copy()
    reference[::7, :3] = reference[5, :3]  # many rows equal to row 5 on features 0-2, unequal elsewhere
    fill = ConditionalFill(reference, "adaptive")
    order = np.array([2, 0, 1, 5, 3, 4])
    prefix = fill.prefix_log_weights(X[9], order)
    z = np.nan_to_num((X[9] - fill._mean) / fill._std)
    whitened = np.linalg.solve(np.linalg.cholesky(fill._cov[np.ix_(order, order)]), (fill._z[:, order] - z[order]).T)
    expected = -np.cumsum(whitened ** 2, axis=0) / np.arange(1, 7)[:, None] / (2 * fill.sigma ** 2)
    np.testing.assert_allclose(prefix[1:], expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(fill._cov, np.cov(fill._z, rowvar=False) + 1e-3 * np.eye(6), rtol=1e-12, atol=1e-14)
    for j in (1, 2, 3):  # the equal rows, on a prefix of the equal features
        assert len(set(prefix[j, ::7].tolist()) | {prefix[j, 5]}) == 1
    assert len(set(prefix[4, ::7].tolist())) > 1  # and apart once a feature they differ on is known


_KERNEL_PROBE = """
import hashlib, numpy as np
from auditor.explain.pairwise import ConditionalFill
X = np.random.default_rng(0).normal(size=(500, 12))
X[:, :4] = np.round(X[:, :4])
fill = ConditionalFill(X, "adaptive")
print(hashlib.sha256(fill._cov.tobytes() + fill.prefix_log_weights(X[3], np.arange(12)[::-1]).tobytes()).hexdigest())
"""


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="OpenBLAS's x86 kernels are compared")
def test_distances_are_the_same_bits_under_any_blas_kernel():
    """The neighbours a coalition takes are decided by the order of near-equal distances, so the distances must not
    depend on the machine: with numpy's covariance and LAPACK's factor and solve they differ in their last bits
    between OpenBLAS's Sandybridge and Haswell kernels (and the bookstore's pair values moved by 18% between two
    kernels); our loops give the same bits under both."""
    if "openblas" not in str(np.show_config(mode="dicts")).lower():
        pytest.skip("numpy is not built on OpenBLAS: its kernel cannot be chosen")
    runs = [subprocess.Popen([sys.executable, "-c", _KERNEL_PROBE], stdout=subprocess.PIPE, text=True,
                             env={**os.environ, "OPENBLAS_CORETYPE": core}) for core in ("Sandybridge", "Haswell")]
    digests = [run.communicate(timeout=120)[0].strip() for run in runs]
    assert all(run.returncode == 0 for run in runs) and digests[0]
    assert digests[0] == digests[1]


def test_adaptive_fill_uses_neighbours_and_the_eta_cutoff(ranker):
    _, _, X = ranker
    fill = ConditionalFill(X[:200], "adaptive", eta=0.5, max_neighbours=200)
    known = np.array([True, False, False, False, False, False])
    idx_a, w_a, idx_b, _w_b = fill.select(X[0], X[1], known)
    assert len(idx_a) == len(idx_b) < 200
    share = (w_a.sum() / np.exp(fill._log_weights(X[0], known) - fill._log_weights(X[0], known).max()).sum())
    assert share > 0.5 ** 0.5 - 1e-9 or len(idx_a) == 1
    # the chosen neighbours of A are the training documents closest to A on the known feature
    distance = np.abs(X[:200, 0] - X[0, 0])
    assert distance[idx_a].max() <= np.sort(distance)[len(idx_a) - 1] + 1e-12


def test_raipair_error_shrinks_as_measurements_and_permutations_grow(ranker):
    _, model, X = ranker
    fill = ConditionalFill(X[:60], "adaptive", max_neighbours=20)
    exact = AsiPair(fill).explain(model, X[3], X[11], np.random.default_rng(0)).phi

    def error(m: int, h: int) -> float:
        runs = [RaiPair(fill, measurements=m, permutations=h).explain(model, X[3], X[11],
                                                                       np.random.default_rng(s)).phi
                for s in range(3)]
        return float(np.mean([np.linalg.norm(r - exact) for r in runs]) / np.linalg.norm(exact))

    assert error(6, 32) < error(2, 32)
    assert error(6, 32) < error(6, 2)
    assert error(6, 32) < 0.35


def test_raipair_efficiency_option_restores_the_sum(ranker):
    _, model, X = ranker
    fill = ConditionalFill(X[:150], "adaptive")
    pair = RaiPair(fill, measurements=3, permutations=4, efficiency=True).explain(
        model, X[3], X[11], np.random.default_rng(0))
    assert pair.efficiency_error < 1e-9


def test_l1_recovery_finds_a_sparse_vector_and_meets_the_noise_level():
    rng = np.random.default_rng(3)
    d, m = 40, 20
    truth = np.zeros(d)
    truth[[3, 17]] = [2.0, -1.5]
    matrix = rng.choice([-1.0, 1.0], size=(m, d)) / np.sqrt(m)
    target = matrix @ truth
    recovered = l1_recovery(matrix, target, 1e-6)
    np.testing.assert_allclose(recovered, truth, atol=1e-3)
    noisy = target + rng.normal(scale=0.05, size=m)
    eps = 0.3
    v = l1_recovery(matrix, noisy, eps)
    assert np.linalg.norm(noisy - matrix @ v) <= eps + 1e-9
    assert np.count_nonzero(np.abs(v) > 1e-6) <= 6
    assert np.all(l1_recovery(matrix, noisy, 10.0) == 0)  # ε above ‖b‖: nothing to explain


@pytest.fixture()
def predicted(ranker, monkeypatch):
    """The model with masked rows built and predicted (a model without a bit-identical array form scores so)."""
    booster, _, X = ranker
    monkeypatch.setenv("AUDITOR_MASKED_ROWS", "predict")
    return booster, CountingRanker(LightGBMRanker(booster)), X


def test_every_coalition_of_a_pair_is_scored_in_one_predict(predicted):
    _, model, X = predicted
    calls = []
    original = model.inner.predict
    model.inner.predict = lambda rows: (calls.append(len(rows)), original(rows))[1]  # type: ignore[method-assign]
    try:
        game = PairGame(model, X[0], X[1], ConditionalFill(X[:50], "adaptive"))
        exact_shapley(game)
    finally:
        model.inner.predict = original  # type: ignore[method-assign]
    assert len(calls) == 1 and calls[0] > 64


def test_wide_pairs_are_scored_in_chunks_that_fit_memory(predicted, monkeypatch):
    """On wide data the rows of every coalition at once would not fit (700 features: 11 GB, a worker was killed):
    with a small cell budget the game scores in several calls, none above the budget, and the values are the same."""
    import auditor.models.base as base

    _, model, X = predicted
    game = PairGame(model, X[0], X[1], ConditionalFill(X[:50], "adaptive"))
    masks = np.random.default_rng(0).random((40, X.shape[1])) < 0.5
    whole = game.values(masks)
    calls = []
    original = model.inner.predict
    monkeypatch.setattr(base, "MAX_CELLS", 250 * X.shape[1])  # 250 rows a call: two or so coalitions
    monkeypatch.setattr(model.inner, "predict", lambda rows: (calls.append(len(rows)), original(rows))[1])
    np.testing.assert_array_equal(game.values(masks), whole)
    assert len(calls) > 1 and max(calls) <= 250
    assert base.rows_per_call(700) * 700 <= base.MAX_CELLS


@pytest.mark.parametrize("kind", ["adaptive", "masking"])
@pytest.mark.parametrize("function", ["margin", "probability"])
def test_pair_values_are_the_same_read_off_the_trees_or_predicted(ranker, monkeypatch, kind, function):
    """Rows with a reference row of their own, scored by `masked_scores_rows`: the same values, bit for bit, and the
    same model-row counts as building the rows and predicting them."""
    booster, _, X = ranker
    masks = np.random.default_rng(1).random((60, X.shape[1])) < 0.4
    masks[0], masks[1] = True, False
    found = {}
    for path in ("trees", "predict"):
        monkeypatch.setenv("AUDITOR_MASKED_ROWS", path)
        model = CountingRanker(LightGBMRanker(booster))
        game = PairGame(model, X[3], X[7], ConditionalFill(X[:80], kind), function)
        found[path] = (game.values(masks), model.rows_evaluated, model.exact_trees() is not None)
    (trees, trees_rows, used), (predicted, predicted_rows, off) = found["trees"], found["predict"]
    assert used and not off
    np.testing.assert_array_equal(trees, predicted)
    assert trees_rows == predicted_rows > 60


def test_first_indices_are_those_of_a_stable_argsort():
    """`select` sorts the weights' values and sorts indices only up to the cut: the same rows, in the same order,
    as a stable argsort of every weight, ties (many) included."""
    from auditor.explain.pairwise import _first

    rng = np.random.default_rng(9)
    for _ in range(300):
        values = np.round(rng.normal(size=int(rng.integers(1, 60))), int(rng.integers(0, 3)))
        count = int(rng.integers(1, len(values) + 1))
        expected = np.argsort(values, kind="stable")[:count]
        np.testing.assert_array_equal(_first(values, np.sort(values), count), expected)


def test_selections_of_many_coalitions_at_once_are_those_one_at_a_time(monkeypatch):
    """`select_many` (the permutations' coalitions in one pass) gives `select`'s rows and weights bit for bit,
    with tied weights and with every weight equal."""
    rng = np.random.default_rng(12)
    reference = np.round(rng.normal(size=(300, 6)), 1)
    reference[:40] = reference[0]  # many tied weights
    for eta, neighbours in [(0.9, 50), (0.5, 3), (0.999, 300)]:
        fill = ConditionalFill(reference, "adaptive", eta=eta, max_neighbours=neighbours)
        x_a, x_b = reference[0] + 0.05, rng.normal(size=6)
        masks = [rng.random(6) < 0.5 for _ in range(40)]
        masks = [m for m in masks if m.any() and not m.all()]
        logs = [(fill._log_weights(x_a, m), fill._log_weights(x_b, m)) for m in masks]
        logs.append((np.zeros(300), np.zeros(300)))  # every weight equal
        masks.append(masks[0])
        with monkeypatch.context() as patch:
            patch.setattr("auditor.explain.pairwise._SELECT_CELLS", 7 * 2 * 300)  # passes of 7 coalitions
            in_passes = fill.select_many(logs)
        rows, weights, take = fill.select_many(logs)
        for a, b in zip(in_passes, (rows, weights, take), strict=True):
            np.testing.assert_array_equal(a, b)
        assert len(rows) == len(weights) == 2 * take.sum()
        ends = np.cumsum(np.repeat(take, 2))
        sides = [(rows[end - n:end], weights[end - n:end]) for end, n in zip(ends, np.repeat(take, 2), strict=True)]
        for c, (m, lw) in enumerate(zip(masks, logs, strict=True)):
            idx_a, w_a, idx_b, w_b = fill.select(x_a, x_b, m, lw)
            for one, batched in zip((idx_a, w_a, idx_b, w_b), (*sides[2 * c], *sides[2 * c + 1]), strict=True):
                np.testing.assert_array_equal(one, batched)
