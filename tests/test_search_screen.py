"""Screening the features a set search tries (auditor/explain/screen.py): a feature constant within a query CAN
change its masked ranking (so it cannot simply be dropped), inert features never do, and the searches that score
each distinct set of non-inert features once choose exactly what they chose scoring every set."""

from __future__ import annotations

import lightgbm as lgb
import numpy as np
import pytest

import auditor.explain.screen as screen
from auditor.checks.validity import kendall_tau_b, measure_sets
from auditor.explain.base import QueryView
from auditor.explain.greedy import Greedy
from auditor.explain.screen import Routing, SetScores, candidate_features, inert_features
from auditor.explain.search import Exhaustive, ValiditySearch
from auditor.models.base import CountingRanker
from auditor.models.callable import CallableRanker
from auditor.models.lightgbm import LightGBMRanker
from auditor.models.masking import Masker, keep_masks
from auditor.scoring.trees import TreeEnsemble

PARAMS = {"num_leaves": 15, "min_data_in_leaf": 5, "learning_rate": 0.3, "verbosity": -1, "num_threads": 1,
          "seed": 1, "deterministic": True}


@pytest.fixture(scope="module")
def flip() -> lgb.Booster:
    """score ≈ x0 when x1 > 0.7, −x0 otherwise: x1 decides which way x0 ranks."""
    rng = np.random.default_rng(0)
    X = rng.random((4000, 3))
    y = np.where(X[:, 1] > 0.7, X[:, 0], -X[:, 0])
    return lgb.train({"objective": "regression", **PARAMS}, lgb.Dataset(X, y), 60)


@pytest.mark.parametrize("strategy", ["mean", "median", "zero", "background"])
def test_a_feature_constant_within_the_query_can_change_its_masked_ranking(flip, strategy):
    """The claim "constant features cannot change a ranking under masking" is false for every masking strategy:
    the query's documents all have x1 = 0.9, the masking value of x1 routes to the other side of the split."""
    model = CountingRanker(LightGBMRanker(flip))
    rng = np.random.default_rng(1)
    background = rng.random((500, 3))
    X = np.column_stack([rng.random(20), np.full(20, 0.9), rng.random(20)])
    masker = Masker.from_background(background, strategy, samples=20, rng=np.random.default_rng(2))
    scores = model.predict(X)
    without, with_x1 = measure_sets(model, X, scores, masker, [(0,), (0, 1)])[0]
    assert with_x1 > 0.9 and without < 0.5  # keeping the constant x1 restores the order
    assert not inert_features(model, X, masker)[1]


def _data(rng: np.random.Generator, n: int) -> np.ndarray:
    """Negative, zero-straddling, sparse and missing values, and a feature the model cannot use (constant)."""
    sparse = rng.exponential(size=n) * (rng.random(n) < 0.4)
    X = np.column_stack([rng.normal(size=n), np.round(rng.normal(size=n)), sparse, rng.random(n), rng.normal(size=n),
                         np.full(n, 3.0), rng.random(n), rng.normal(size=n)])
    X[rng.random(n) < 0.1, 7] = np.nan
    return X


@pytest.fixture(scope="module", params=[{}, {"zero_as_missing": True}, {"use_missing": False}],
            ids=["nan-missing", "zero-as-missing", "no-missing"])
def ranker(request):
    rng = np.random.default_rng(5)
    X = _data(rng, 3000)
    y = X[:, 0] + (X[:, 1] < 0) + 0.5 * (X[:, 2] > 0) * X[:, 3] + np.nan_to_num(X[:, 7], nan=-1) \
        + 0.3 * X[:, 4] * (X[:, 6] > 0.5) + 0.1 * rng.normal(size=3000)
    booster = lgb.train({"objective": "regression", **PARAMS, **request.param}, lgb.Dataset(X, y), 40)
    return CountingRanker(LightGBMRanker(booster)), X


def _queries(X: np.ndarray, rng: np.random.Generator, count: int) -> list[np.ndarray]:
    """Queries of 8–25 training rows where some features are constant (a query-level value) or all zero."""
    out = []
    for _ in range(count):
        Q = X[rng.choice(X.shape[0], size=int(rng.integers(8, 26)), replace=False)].copy()
        for f in rng.choice(8, size=3, replace=False):
            Q[:, f] = rng.choice([0.0, -0.0, float(np.nanmean(X[:, f])), float(X[rng.integers(len(X)), f])])
        out.append(Q)
    return out


@pytest.mark.parametrize("strategy", ["mean", "zero", "background"])
def test_inert_features_never_change_a_masked_score(ranker, strategy):
    model, X = ranker
    rng = np.random.default_rng(7)
    masker = Masker.from_background(X, strategy, samples=10, rng=np.random.default_rng(3))
    found = 0
    for Q in _queries(X, rng, 25):
        inert = inert_features(model, Q, masker)
        assert inert[5]  # never split on: always inert
        found += int(inert.sum()) - 1
        for _ in range(10):
            base = [int(f) for f in np.flatnonzero(rng.random(8) < 0.4)]
            with_inert = sorted(set(base) | {int(f) for f in np.flatnonzero(inert)})
            masked = masker.masked_scores(model, Q, keep_masks([tuple(base), tuple(with_inert)], 8))
            np.testing.assert_array_equal(masked[0], masked[1])  # bit-identical
    if strategy != "background":  # background rows spread over the bins: only the unused feature stays inert
        assert found > 10  # the queries do have inert features besides the unused one


def test_routing_keys_follow_lightgbms_reading_of_values():
    ensemble = TreeEnsemble(feature=np.array([0, -1, -1]), threshold=np.array([-1.0000000180025095e-35, 0, 0]),
                            left=np.array([1, -1, -1]), right=np.array([2, -1, -1]), parent=np.array([-1, 0, 0]),
                            default_left=np.array([True, False, False]), missing=np.array([0, 0, 0], dtype=np.int8),
                            value=np.array([0.0, 1.0, 2.0]), count=np.ones(3), roots=np.array([0]), n_features=2)
    routing = Routing.from_ensemble(ensemble)
    keys = routing.keys(0, np.array([-1.0, -1e-30, -1e-36, -0.0, 0.0, np.nan, 5e-36, 2.0]))
    assert keys.tolist() == [0, 0, 1, 1, 1, 1, 1, 1]  # |x| ≤ 1e-35 and NaN (missing type None) read as 0
    assert len(set(routing.keys(1, np.array([-5.0, np.nan, 7.0])).tolist())) == 1  # never split on


def test_a_callable_model_only_screens_features_equal_to_the_masking_value():
    model = CountingRanker(CallableRanker(lambda X: X[:, 0] * (X[:, 1] - 0.5), "t:f", 3))
    masker = Masker.from_background(np.array([[0.0, 0.2, 1.0], [1.0, 0.4, 1.0]]))  # mean row (0.5, 0.3, 1.0)
    X = np.array([[0.1, 0.3, 1.0], [0.7, 0.3, 1.0], [0.4, 0.9, 1.0]])
    assert inert_features(model, X, masker).tolist() == [False, False, True]


SEARCHES = [Greedy("greedy"), Greedy("greedy_cover"), Greedy("greedy_cover_eps"), ValiditySearch(),
            Exhaustive(max_subsets=100_000)]


@pytest.mark.parametrize("search", SEARCHES, ids=lambda s: s.name)
def test_searches_choose_what_scoring_every_set_chooses(ranker, search, monkeypatch):
    model, X = ranker
    rng = np.random.default_rng(11)
    masker = Masker.from_background(X)
    queries = _queries(X, rng, 12)

    def run() -> tuple[list[tuple[int, ...]], int]:
        before, chosen = model.rows_evaluated, []
        for q, Q in enumerate(queries):
            view = QueryView(X=Q, scores=model.predict(Q), query_id=str(q), background=X)
            before -= Q.shape[0]
            for k in (2, 3):
                chosen.append(search.select(model, view, k, masker, np.random.default_rng([q, k])))
        return chosen, model.rows_evaluated - before

    screened, rows = run()
    with monkeypatch.context() as patch:
        patch.setattr(screen, "inert_features", lambda model, X, masker: np.zeros(X.shape[1], dtype=bool))
        every, rows_every = run()
    assert screened == every
    assert rows < 0.9 * rows_every


def test_candidate_screen_keeps_the_largest_within_query_spread(ranker):
    model, X = ranker
    Q = _queries(X, np.random.default_rng(2), 1)[0]
    masker = Masker.from_background(X)
    inert = inert_features(model, Q, masker)
    phi = model.contributions(Q)[:, :-1]
    spread = np.abs(phi - phi.mean(axis=0)).sum(axis=0)
    spread[inert] = -1
    view = QueryView(X=Q, scores=model.predict(Q), query_id="q", background=X)
    assert candidate_features(model, view, inert, 3) == sorted(np.argsort(-spread, kind="stable")[:3].tolist())
    assert candidate_features(model, view, inert, None) == np.flatnonzero(~inert).tolist()
    given = QueryView(X=Q, scores=view.scores, query_id="q", background=X, spread=np.arange(8.0))
    assert candidate_features(model, given, inert, 2) == [f for f in (7, 6, 4, 3) if not inert[f]][:2][::-1]
    for search in (Greedy("greedy_cover_eps", candidates=3), ValiditySearch(candidates=3)):
        chosen = search.select(model, view, 4, masker, np.random.default_rng(0))  # the pool grows to k = 4
        allowed = set(candidate_features(model, view, inert, 4)) | set(np.flatnonzero(inert).tolist())
        assert len(chosen) <= 4 and set(chosen) <= allowed  # inert features cost nothing and stay candidates


def test_set_scores_score_each_distinct_set_of_useful_features_once():
    model = CountingRanker(CallableRanker(lambda X: X[:, 0] + 2 * X[:, 1], "t:f", 3))
    masker = Masker.from_background(np.array([[0.0, 0.0, 5.0], [2.0, 2.0, 5.0]]))
    X = np.array([[0.5, 2.0, 5.0], [1.5, 0.0, 5.0]])
    scorer = SetScores(model, X, masker)
    assert scorer.inert.tolist() == [False, False, True]
    scores = scorer([(0,), (0, 2), (2,), (), (0, 1)])
    assert model.rows_evaluated == 3 * 2 and scorer.rows == 6  # {0}, {}, {0, 1}
    np.testing.assert_array_equal(scores[0], scores[1])
    assert kendall_tau_b(model.predict(X), scores[[4]])[0] == 1.0


@pytest.mark.parametrize("variant", ["greedy", "greedy_cover", "greedy_cover_eps", "validity_search"])
def test_a_candidate_count_above_the_useful_features_changes_nothing(ranker, variant):
    """With no more non-inert features than `candidates`, the pool is every feature (inert ones included), so
    the sets and their ties are those of `candidates: null`."""
    model, X = ranker
    masker = Masker.from_background(X)

    def make(candidates):
        return ValiditySearch(candidates=candidates) if variant == "validity_search" else \
            Greedy(variant, candidates=candidates)

    for q, Q in enumerate(_queries(X, np.random.default_rng(13), 10)):
        view = QueryView(X=Q, scores=model.predict(Q), query_id=str(q), background=X)
        for k in (2, 4):
            assert make(60).select(model, view, k, masker, np.random.default_rng([q, k])) == \
                make(None).select(model, view, k, masker, np.random.default_rng([q, k]))


def test_searches_sharing_a_querys_scores_choose_what_each_alone_chooses(ranker):
    """The k curve's searches and the greedy variants share one query's scored sets (`QueryView.scored`); each
    search still counts in its own row budget what it asked for, so a budget that binds binds alike and every
    choice is that of the search run alone — for fewer model rows."""
    model, X = ranker
    masker = Masker.from_background(X)
    searches = [Greedy("greedy"), Greedy("greedy_cover"), Greedy("greedy_cover_eps"),
                ValiditySearch(max_rows=1_500), ValiditySearch()]
    for q, Q in enumerate(_queries(X, np.random.default_rng(17), 6)):
        scores = model.predict(Q)
        shared_view = QueryView(X=Q, scores=scores, query_id=str(q), background=X)
        before, shared = model.rows_evaluated, []
        for search in searches:
            for k in (2, 3, 4, 5):
                shared.append(search.select(model, shared_view, k, masker, np.random.default_rng([q, k])))
        rows_shared, before, alone = model.rows_evaluated - before, model.rows_evaluated, []
        for search in searches:
            for k in (2, 3, 4, 5):
                view = QueryView(X=Q, scores=scores, query_id=str(q), background=X)  # nothing shared
                alone.append(search.select(model, view, k, masker, np.random.default_rng([q, k])))
        assert shared == alone
        assert rows_shared < 0.5 * (model.rows_evaluated - before)
        assert shared_view.scored  # the store the searches shared


def test_a_shared_store_follows_the_masking():
    """Two maskings of one query never read each other's scores."""
    model = CountingRanker(CallableRanker(lambda X: X[:, 0] + 2 * X[:, 1], "t:f", 2))
    X = np.array([[0.5, 2.0], [1.5, 0.0], [1.0, 1.0]])
    store: dict = {}
    low, high = Masker.from_background(np.zeros((1, 2))), Masker.from_background(np.full((1, 2), 9.0))
    a = SetScores(model, X, low, shared=store)([(0,)])
    b = SetScores(model, X, high, shared=store)([(0,)])
    np.testing.assert_array_equal(a[0], X[:, 0])
    np.testing.assert_array_equal(b[0], X[:, 0] + 18.0)
    assert SetScores(model, X, low, shared=store).cost([(0,)]) == 3  # a new search counts it in its budget
    rows = model.rows_evaluated
    SetScores(model, X, low, shared=store)([(0,)])
    assert model.rows_evaluated == rows  # ...but the model does not score it again


def test_a_full_store_is_emptied_and_the_sets_are_the_same(ranker, monkeypatch):
    """Past `STORE_BYTES` the shared scores are dropped and scored again when asked: more model rows, the same
    sets (a query of thousands of documents must not hold every set of every search)."""
    model, X = ranker
    masker = Masker.from_background(X)
    Q = _queries(X, np.random.default_rng(19), 1)[0]
    scores = model.predict(Q)

    def run() -> tuple[list[tuple[int, ...]], int]:
        view, before = QueryView(X=Q, scores=scores, query_id="q", background=X), model.rows_evaluated
        chosen = [search.select(model, view, k, masker, np.random.default_rng(k))
                  for search in (Greedy("greedy_cover"), ValiditySearch()) for k in (2, 3, 4)]
        return chosen, model.rows_evaluated - before

    roomy, rows_roomy = run()
    monkeypatch.setattr(screen, "STORE_BYTES", 5 * Q.shape[0] * 8)  # five sets at most
    tight, rows_tight = run()
    assert tight == roomy
    assert rows_tight > rows_roomy
