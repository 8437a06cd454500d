"""TreeShap and KernelShap against shap itself (the oracle), plus what they cost in model rows."""

from __future__ import annotations

import lightgbm as lgb
import numpy as np
import pytest
import shap

from auditor.explain.base import QueryView
from auditor.explain.kernelshap import KernelShap, coalition_design, take_samples
from auditor.explain.treeshap import TreeShap
from auditor.models.base import CountingRanker
from auditor.models.callable import CallableRanker
from auditor.models.lightgbm import LightGBMRanker
from auditor.models.masking import Masker
from tests.conftest import make_queries

DOCS = np.arange(5)


def _query(X: np.ndarray, model: CountingRanker, background: np.ndarray) -> QueryView:
    scores = model.inner.predict(X[:10])
    return QueryView(X=X[:10], scores=scores, query_id="q", background=background)


def _raw(booster: lgb.Booster):
    return lambda A: booster.predict(A, raw_score=True)


class _CountCalls:
    """Wraps a ranker's predict to count how many times the model is called."""

    def __init__(self, model: CountingRanker) -> None:
        self.calls = 0
        inner_predict = model.inner.predict

        def predict(X: np.ndarray) -> np.ndarray:
            self.calls += 1
            return inner_predict(X)

        model.inner.predict = predict


@pytest.fixture(scope="module")
def twelve() -> tuple[lgb.Booster, np.ndarray]:
    """A LambdaMART on 12 features: 2^12 − 2 = 4094 coalitions, so nsamples=300 really samples."""
    rng = np.random.default_rng(5)
    X, y, sizes = make_queries(rng, 80, 12)
    params = {"objective": "lambdarank", "num_leaves": 15, "min_data_in_leaf": 10, "learning_rate": 0.2,
              "verbosity": -1, "seed": 1, "deterministic": True, "force_row_wise": True, "num_threads": 1}
    return lgb.train(params, lgb.Dataset(X, y, group=sizes), num_boost_round=30), X


# --- TreeShap ---------------------------------------------------------------------------------------------------


def test_treeshap_path_equals_shap(lambdamart):
    booster, X, _, _ = lambdamart
    model = CountingRanker(LightGBMRanker(booster))
    query = _query(X, model, X)
    ours = TreeShap().attribute(model, query, DOCS, Masker.from_background(X), np.random.default_rng(0)).values
    expected = shap.TreeExplainer(booster).shap_values(X[:5])
    assert ours.shape == (5, 6)
    np.testing.assert_allclose(ours, expected, atol=1e-6, rtol=0)
    assert model.rows_evaluated == 5


def test_treeshap_interventional_equals_shap_and_is_built_once(lambdamart):
    booster, X, _, _ = lambdamart
    model = CountingRanker(LightGBMRanker(booster))
    background = np.concatenate([X, X[:200]])  # 1131 rows: more than the 1000 TreeSHAP keeps
    query = _query(X, model, background)
    explainer = TreeShap(mode="interventional")
    ours = explainer.attribute(model, query, DOCS, Masker.from_background(X), np.random.default_rng(0)).values
    rows = explainer.background_rows(background)
    assert rows.shape == (1000, 6)
    # shap keeps only 100 rows of a bare-array background (`maskers.Independent`'s default max_samples): hand it
    # the masker so it uses all 1000, like ours does.
    assert shap.TreeExplainer(booster, data=rows, feature_perturbation="interventional").data.shape == (100, 6)
    masker = shap.maskers.Independent(rows, max_samples=1000)
    reference = shap.TreeExplainer(booster, data=masker, feature_perturbation="interventional")
    assert reference.data.shape == (1000, 6)
    np.testing.assert_allclose(ours, reference.shap_values(X[:5]), atol=1e-6, rtol=0)
    # Efficiency against the mean score over the same background.
    np.testing.assert_allclose(ours.sum(axis=1) + booster.predict(rows, raw_score=True).mean(),
                               booster.predict(X[:5], raw_score=True), atol=1e-6)
    # Built once (1000 background rows scored), then 5 documents × 1000 background rows per call.
    assert model.rows_evaluated == 1000 + 5 * 1000
    built = explainer._cache[2]
    explainer.attribute(model, query, DOCS[:2], Masker.from_background(X), np.random.default_rng(0))
    assert explainer._cache[2] is built
    assert model.rows_evaluated == 1000 + 7 * 1000


def test_treeshap_sklearn_both_modes():
    from sklearn.ensemble import GradientBoostingRegressor

    from auditor.models.sklearn import SklearnTreeRanker

    rng = np.random.default_rng(2)
    X = rng.random((300, 5))
    estimator = GradientBoostingRegressor(n_estimators=20, max_depth=3, random_state=0)
    estimator.fit(X, X[:, 0] + X[:, 1] * X[:, 2])
    model = CountingRanker(SklearnTreeRanker(estimator))
    query = QueryView(X=X[:10], scores=estimator.predict(X[:10]), query_id="q", background=X[:100])
    masker = Masker.from_background(X)
    path = TreeShap().attribute(model, query, DOCS, masker, rng).values
    np.testing.assert_allclose(path, shap.TreeExplainer(estimator).shap_values(X[:5]), atol=1e-6, rtol=0)
    interventional = TreeShap("interventional").attribute(model, query, DOCS, masker, rng).values
    reference = shap.TreeExplainer(estimator, data=X[:100], feature_perturbation="interventional")
    np.testing.assert_allclose(interventional, reference.shap_values(X[:5]), atol=1e-6, rtol=0)


def test_treeshap_refuses_a_non_tree_model():
    model = CountingRanker(CallableRanker(lambda A: A.sum(axis=1), "m:f", 3))
    X = np.random.default_rng(0).random((6, 3))
    query = QueryView(X=X, scores=X.sum(axis=1), query_id="q", background=X)
    for mode in ("path", "interventional"):
        with pytest.raises(ValueError, match="TreeSHAP needs a tree model"):
            TreeShap(mode=mode).attribute(model, query, DOCS, Masker.from_background(X), np.random.default_rng(0))


# --- KernelShap: exact regime (M = 6, 62 coalitions) ---------------------------------------------------------------


@pytest.mark.parametrize("nsamples", [62, 200])
def test_kernelshap_exact_with_mean_row_equals_shap(lambdamart, nsamples):
    booster, X, _, _ = lambdamart
    model = CountingRanker(LightGBMRanker(booster))
    query = _query(X, model, X)
    masker = Masker.from_background(X)  # one mean row
    result = KernelShap(nsamples=nsamples).explain(model, query, DOCS, masker, np.random.default_rng(0))
    reference = shap.KernelExplainer(_raw(booster), masker.fill)
    expected = reference.shap_values(X[:5], nsamples=nsamples, l1_reg=False, silent=True)
    np.testing.assert_allclose(result.values, expected, atol=1e-6, rtol=0)
    assert result.base_value == pytest.approx(float(reference.expected_value), abs=1e-12)
    fx = booster.predict(X[:5], raw_score=True)
    np.testing.assert_allclose(result.values.sum(axis=1) + result.base_value, fx, atol=1e-9, rtol=0)


def test_kernelshap_exact_with_sampled_background_equals_shap(lambdamart):
    booster, X, _, _ = lambdamart
    model = CountingRanker(LightGBMRanker(booster))
    query = _query(X, model, X)
    masker = Masker.from_background(X)
    explainer = KernelShap(nsamples=100, background="sample", background_size=20)
    result = explainer.explain(model, query, DOCS, masker, np.random.default_rng(7))
    background = explainer.background_rows(query, masker, np.random.default_rng(7))  # the same draw
    assert background.shape == (20, 6)
    expected = shap.KernelExplainer(_raw(booster), background).shap_values(X[:5], nsamples=100, l1_reg=False,
                                                                           silent=True)
    np.testing.assert_allclose(result.values, expected, atol=1e-6, rtol=0)
    fx = booster.predict(X[:5], raw_score=True)
    np.testing.assert_allclose(result.values.sum(axis=1) + result.base_value, fx, atol=1e-9, rtol=0)


def test_kernelshap_exact_batched_equals_one_document_at_a_time(lambdamart):
    booster, X, _, _ = lambdamart
    model = CountingRanker(LightGBMRanker(booster))
    query = _query(X, model, X)
    masker = Masker.from_background(X)
    explainer = KernelShap(nsamples=62)
    together = explainer.attribute(model, query, DOCS, masker, np.random.default_rng(0)).values
    for d in DOCS:
        alone = explainer.attribute(model, query, np.array([d]), masker, np.random.default_rng(0)).values
        np.testing.assert_allclose(together[d], alone[0], atol=1e-12, rtol=0)


def test_kernelshap_counts_rows_and_calls_predict_once(lambdamart, twelve, monkeypatch):
    """Built and predicted (AUDITOR_MASKED_ROWS=predict): one call, in several past max_rows. Read off the trees:
    the same rows counted and the same values, bit for bit, with one call for the background and the documents."""
    monkeypatch.setenv("AUDITOR_MASKED_ROWS", "predict")
    booster, X, _, _ = lambdamart
    model = CountingRanker(LightGBMRanker(booster))
    query = _query(X, model, X)
    masker = Masker.from_background(X)
    counter = _CountCalls(model)
    KernelShap(nsamples=100).attribute(model, query, DOCS, masker, np.random.default_rng(0))
    # 1 background row (φ0) + 5 documents (f(x)) + 5 documents × 62 coalitions × 1 background row.
    assert (model.rows_evaluated, counter.calls) == (1 + 5 + 5 * 62, 1)

    booster12, X12 = twelve
    model = CountingRanker(LightGBMRanker(booster12))
    query = _query(X12, model, X12)
    counter = _CountCalls(model)
    explainer = KernelShap(nsamples=300, background="sample", background_size=20)
    masker = Masker.from_background(X12)
    first = explainer.attribute(model, query, DOCS, masker, np.random.default_rng(3)).values
    assert (model.rows_evaluated, counter.calls) == (20 + 5 + 5 * 300 * 20, 1)
    # Past max_rows the same rows go in several calls, with the same result.
    small = KernelShap(nsamples=300, background="sample", background_size=20, max_rows=7000)
    again = small.attribute(model, query, DOCS, masker, np.random.default_rng(3)).values
    np.testing.assert_array_equal(first, again)
    assert counter.calls == 1 + 5

    monkeypatch.delenv("AUDITOR_MASKED_ROWS")
    model = CountingRanker(LightGBMRanker(booster12))
    assert model.exact_trees() is not None
    counter = _CountCalls(model)
    off_trees = explainer.attribute(model, query, DOCS, masker, np.random.default_rng(3)).values
    np.testing.assert_array_equal(off_trees, first)
    assert (model.rows_evaluated, counter.calls) == (20 + 5 + 5 * 300 * 20, 1)


def test_kernelshap_is_deterministic_given_rng(twelve):
    booster, X = twelve
    model = CountingRanker(LightGBMRanker(booster))
    query = _query(X, model, X)
    masker = Masker.from_background(X)
    explainer = KernelShap(nsamples=150, background="sample", background_size=10)
    a = explainer.attribute(model, query, DOCS, masker, np.random.default_rng(42)).values
    b = explainer.attribute(model, query, DOCS, masker, np.random.default_rng(42)).values
    c = explainer.attribute(model, query, DOCS, masker, np.random.default_rng(43)).values
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_kernelshap_gives_nothing_to_features_the_model_ignores():
    X = np.random.default_rng(4).random((40, 12))

    def interacting(A: np.ndarray) -> np.ndarray:
        return np.sin(3 * A[:, 0]) * A[:, 3] + A[:, 3] ** 2

    def additive(A: np.ndarray) -> np.ndarray:
        return np.sin(3 * A[:, 0]) + A[:, 3] ** 2

    # Exact regime (6 features): a null player gets exactly 0 whatever the model does with features 0 and 3.
    model = CountingRanker(CallableRanker(interacting, "m:interacting", 6))
    query = QueryView(X=X[:10, :6], scores=interacting(X[:10]), query_id="q", background=X[:, :6])
    phi = KernelShap(nsamples=62, background="sample", background_size=15).attribute(
        model, query, DOCS, Masker.from_background(X[:, :6]), np.random.default_rng(0)).values
    others = [1, 2, 4, 5]
    assert np.abs(phi[:, others]).max() <= 1e-9
    assert np.abs(phi[:, [0, 3]]).min() > 1e-3
    # Sampling regime (12 features): v(S) is then exactly linear in the coalition, so least squares fits it exactly
    # from any sample (with an interaction it would not, and the others would get sampling noise).
    model = CountingRanker(CallableRanker(additive, "m:additive", 12))
    query = QueryView(X=X[:10], scores=additive(X[:10]), query_id="q", background=X)
    phi = KernelShap(nsamples=100).attribute(model, query, DOCS, Masker.from_background(X),
                                             np.random.default_rng(0)).values
    others = [f for f in range(12) if f not in (0, 3)]
    assert np.abs(phi[:, others]).max() <= 1e-9


def test_kernelshap_skips_features_equal_to_the_background():
    X = np.random.default_rng(6).random((30, 5))
    X[:, 2] = 0.5  # constant: the mean row equals every document there

    def score(A: np.ndarray) -> np.ndarray:
        return A[:, 0] + 10 * A[:, 2] + A[:, 1] * A[:, 4]

    model = CountingRanker(CallableRanker(score, "m:score", 5))
    query = QueryView(X=X[:10], scores=score(X[:10]), query_id="q", background=X)
    masker = Masker.from_background(X)
    phi = KernelShap(nsamples=14).attribute(model, query, DOCS, masker, np.random.default_rng(0)).values
    assert np.all(phi[:, 2] == 0)
    # With feature 2 out, M = 4 and 14 = 2^4 − 2 coalitions enumerate everything (as in shap): exact values.
    expected = shap.KernelExplainer(score, masker.fill).shap_values(X[:5], nsamples=14, l1_reg=False, silent=True)
    np.testing.assert_allclose(phi, expected, atol=1e-9, rtol=0)
    assert model.rows_evaluated == 1 + 5 + 5 * 14


# --- KernelShap: sampling regime (M = 12, nsamples = 300) -----------------------------------------------------------


def test_kernelshap_sampling_matches_shap_statistically(twelve):
    """Both estimators against the exact values, and against each other.

    Tolerances, from 20 seeds of ours and 20 of shap's while writing this test: the RMSE to the exact values was
    0.0108 ± 0.0007 (ours) and 0.0110 ± 0.0011 (shap), with max |φ| ≈ 4.9; one run of each differed by at most
    ~0.05 anywhere, correlation > 0.9997. So we ask: mean RMSE of ours within 25% of shap's, every value of either
    within 2% of max |φ| of exact, the two within 3% of max |φ| of each other, correlation > 0.99.
    """
    booster, X = twelve
    model = CountingRanker(LightGBMRanker(booster))
    query = _query(X, model, X)
    masker = Masker.from_background(X)
    f = _raw(booster)

    exact = KernelShap(nsamples=4094).attribute(model, query, DOCS, masker, np.random.default_rng(0)).values
    shap_exact = shap.KernelExplainer(f, masker.fill).shap_values(X[:2], nsamples=4094, l1_reg=False, silent=True)
    np.testing.assert_allclose(exact[:2], shap_exact, atol=1e-6, rtol=0)
    scale = np.abs(exact).max()

    ours_rmse, shap_rmse = [], []
    for seed in range(12):
        ours = KernelShap(nsamples=300).attribute(model, query, DOCS, masker, np.random.default_rng(100 + seed)).values
        ours_rmse.append(np.sqrt(np.mean((ours - exact) ** 2)))
        assert np.abs(ours - exact).max() < 0.02 * scale
    for seed in range(6):
        np.random.seed(seed)  # shap samples with numpy's global generator
        theirs = shap.KernelExplainer(f, masker.fill).shap_values(X[:5], nsamples=300, l1_reg=False, silent=True)
        shap_rmse.append(np.sqrt(np.mean((theirs - exact) ** 2)))
        assert np.abs(theirs - exact).max() < 0.02 * scale
    assert np.abs(ours - theirs).max() < 0.03 * scale
    assert np.corrcoef(ours.ravel(), theirs.ravel())[0, 1] > 0.99
    assert 0.75 < np.mean(ours_rmse) / np.mean(shap_rmse) < 1.25


@pytest.mark.parametrize(("m", "nsamples"), [(12, 300), (8, 200), (10, 1000), (46, 200), (7, 50)])
def test_coalition_design_enumerated_part_is_shaps(m, nsamples):
    """The deterministic part (fully enumerated sizes, their order and weights) is exactly shap's."""
    reference = shap.KernelExplainer(lambda A: A @ np.arange(1.0, m + 1), np.zeros((1, m)))
    reference.shap_values(np.ones(m), nsamples=nsamples, l1_reg=False, silent=True)
    design = coalition_design(m, nsamples, np.random.default_rng(0))
    k = design.n_fixed
    assert design.masks.shape[0] == reference.nsamplesAdded == nsamples
    np.testing.assert_array_equal(design.masks[:k], reference.maskMatrix[:k].astype(bool))
    np.testing.assert_allclose(design.weights[:k], reference.kernelWeights[:k], rtol=1e-12)
    assert design.weights.sum() == pytest.approx(reference.kernelWeights.sum(), rel=1e-12)


def _shap_sampling_loop(draw_masks: np.ndarray, paired: np.ndarray, samples_left: int
                        ) -> tuple[np.ndarray, np.ndarray]:
    """A transliteration of the sampling loop in shap's `KernelExplainer.explain` (shap 0.51)."""
    masks: list[np.ndarray] = []
    weights: list[float] = []
    used: dict[tuple[bool, ...], int] = {}
    for mask, is_paired in zip(draw_masks, paired, strict=True):
        if samples_left <= 0:
            break
        key = tuple(mask)
        new = key not in used
        if new:
            used[key] = len(masks)
            samples_left -= 1
            masks.append(mask.copy())
            weights.append(1.0)
        else:
            weights[used[key]] += 1.0
        if samples_left > 0 and is_paired:
            if new:
                samples_left -= 1
                masks.append(~mask)
                weights.append(1.0)
            else:
                weights[used[key] + 1] += 1.0
    return np.array(masks, dtype=bool).reshape(-1, draw_masks.shape[1]), np.array(weights)


def test_take_samples_is_shaps_loop():
    rng = np.random.default_rng(0)
    for _ in range(500):
        m = int(rng.integers(2, 9))
        n_draws, samples_left = int(rng.integers(1, 60)), int(rng.integers(1, 40))
        sizes = rng.integers(1, (m + 1) // 2 + 1, size=n_draws)
        order = np.argsort(rng.random((n_draws, m)), axis=1)
        draws = np.zeros((n_draws, m), dtype=bool)
        np.put_along_axis(draws, order, np.arange(m)[None, :] < sizes[:, None], axis=1)
        paired = sizes <= (m - 1) // 2
        masks, weights = take_samples(draws, paired, samples_left)
        ref_masks, ref_weights = _shap_sampling_loop(draws, paired, samples_left)
        np.testing.assert_array_equal(masks, ref_masks)
        np.testing.assert_array_equal(weights, ref_weights)


def test_kernelshap_exact_equals_interventional_treeshap_on_the_same_game(lambdamart):
    """With one background row, interventional TreeSHAP is the exact Shapley value of the game KernelSHAP plays."""
    booster, X, _, _ = lambdamart
    model = CountingRanker(LightGBMRanker(booster))
    masker = Masker.from_background(X)
    query = QueryView(X=X[:10], scores=booster.predict(X[:10], raw_score=True), query_id="q", background=masker.fill)
    kernel = KernelShap(nsamples=62).attribute(model, query, DOCS, masker, np.random.default_rng(0)).values
    tree = TreeShap(mode="interventional").attribute(model, query, DOCS, masker, np.random.default_rng(0)).values
    np.testing.assert_allclose(kernel, tree, atol=1e-6, rtol=0)


# --- KernelShap: sample count and convergence (issue 28) -----------------------------------------------------------


def test_kernelshap_default_is_shaps_auto_rule():
    """auto = 2M + 2048 coalitions (shap's `nsamples="auto"`), exact enumeration when 2^M − 2 is not more."""
    explainer = KernelShap()
    assert explainer.nsamples == "auto"
    assert explainer.samples_for(136) == 2 * 136 + 2048 and explainer.samples_for(700) == 3448
    design = coalition_design(11, explainer.samples_for(11), np.random.default_rng(0))
    assert design.masks.shape[0] == 2 ** 11 - 2 == design.n_fixed  # exact Shapley values
    assert KernelShap(scale=0.5).samples_for(136) == 1160 and KernelShap(nsamples=300, scale=0.5).samples_for(5) == 150
    with pytest.raises(ValueError, match="auto"):
        KernelShap(nsamples="many")


def test_lazy_draws_equal_sorting_every_draw_at_once():
    """`coalition_design` sorts keys only for the draws it needs and advances the generator past the rest: the same
    samples, weights and next values of the stream as drawing and sorting all 4 × samples_left at once."""
    from auditor.explain.kernelshap import _draw_samples

    for m, samples_left, seed in [(136, 2048, 0), (46, 1000, 1), (9, 40, 2), (12, 300, 3)]:
        n_paired = (m - 1) // 2
        eager_rng, lazy_rng = np.random.default_rng(seed), np.random.default_rng(seed)
        sizes = eager_rng.integers(1, (m + 1) // 2 + 1, size=4 * samples_left)
        lazy_rng.integers(1, (m + 1) // 2 + 1, size=4 * samples_left)
        order = np.argsort(eager_rng.random((len(sizes), m)), axis=1)
        draws = np.zeros((len(sizes), m), dtype=bool)
        np.put_along_axis(draws, order, np.arange(m)[None, :] < sizes[:, None], axis=1)
        expected = take_samples(draws, sizes <= n_paired, samples_left, units=True)
        got = _draw_samples(lazy_rng, sizes, sizes <= n_paired, m, samples_left)
        for a, b in zip(expected, got, strict=True):
            np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(eager_rng.random(4), lazy_rng.random(4))


def test_jackknife_replicates_are_leave_a_group_out_regressions():
    """Oracle: leaving group g out is `solve_constrained` on the enumerated rows plus the other groups' sampling
    units (a draw and its complement together), their weights rescaled to the sampled total; the replicates are
    φ̂ + √(G − 1)·(φ_(g) − mean φ_(·)); the whole equals `solve_constrained` on every row."""
    from auditor.explain.kernelshap import JACKKNIFE_GROUPS, solve_constrained, solve_with_jackknife

    rng = np.random.default_rng(3)
    m, groups = 14, JACKKNIFE_GROUPS
    design = coalition_design(m, 400, rng)
    assert 0 < design.n_fixed < design.masks.shape[0] and (design.unit[: design.n_fixed] == -1).all()
    assert np.bincount(design.unit[design.n_fixed:]).max() == 2  # complements share their draw's unit
    beta = rng.normal(size=m)
    ey = design.masks @ beta + 0.3 * np.sin(design.masks @ np.arange(m))
    diff = float(beta.sum())
    whole, replicates = solve_with_jackknife(design, ey, diff)
    np.testing.assert_allclose(whole, solve_constrained(design.masks, design.weights, ey, diff), atol=1e-9)
    sampled = design.unit >= 0
    leave = []
    for g in range(groups):
        rows = ~sampled | (design.unit % groups != g)
        weights = design.weights.copy()
        weights[sampled] *= design.weights[sampled].sum() / design.weights[sampled & rows].sum()
        leave.append(solve_constrained(design.masks[rows], weights[rows], ey[rows], diff))
    leave = np.array(leave)
    np.testing.assert_allclose(replicates, whole + np.sqrt(groups - 1) * (leave - leave.mean(axis=0)), atol=1e-9)
    np.testing.assert_allclose(replicates.sum(axis=1), diff)  # every replicate keeps efficiency
    assert replicates.std(axis=0).max() > 0


def test_kernelshap_replicates_spread_like_reruns(twelve):
    """The jackknife's spread is the estimate's own: close to the spread of independent reruns, and zero where
    every coalition is enumerated."""
    booster, X = twelve
    model = CountingRanker(LightGBMRanker(booster))
    query = _query(X, model, X)
    masker = Masker.from_background(X)
    for nsamples in (300, 1000):
        runs = [KernelShap(nsamples=nsamples).explain(model, query, DOCS, masker, np.random.default_rng(s))
                for s in range(12)]
        rerun_sd = np.std([r.values for r in runs], axis=0).mean()
        jackknife_sd = np.mean([r.replicates.std(axis=0).mean() for r in runs])
        assert 0.5 < jackknife_sd / rerun_sd < 2, (nsamples, jackknife_sd, rerun_sd)
        assert not any(r.underdetermined.any() for r in runs) and (runs[0].coalitions == nsamples).all()
    exact = KernelShap(nsamples=4094).explain(model, query, DOCS, masker, np.random.default_rng(0))
    np.testing.assert_array_equal(exact.replicates, np.broadcast_to(exact.values, exact.replicates.shape))
    few = KernelShap(nsamples=20).explain(model, query, DOCS, masker, np.random.default_rng(0))
    assert few.underdetermined.all()  # 20 coalitions for 12 features
