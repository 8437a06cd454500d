"""Set searches on a model of known structure, tau-b rules, and the greedy family's mechanics."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats as st

from auditor.checks.validity import has_order, kendall_tau_b, measure_sets
from auditor.explain.base import QueryView, set_from_attributions
from auditor.explain.greedy import Greedy, concordant_pairs
from auditor.explain.screen import SetScores
from auditor.explain.search import Exhaustive, RandomSet, ValiditySearch
from auditor.models.base import CountingRanker
from auditor.models.callable import CallableRanker
from auditor.models.masking import Masker, keep_masks

N_FEATURES = 8


def known_structure() -> tuple[CountingRanker, QueryView, Masker]:
    """A ranker whose score depends only on features 0 and 3 (0 more than 3)."""
    model = CountingRanker(CallableRanker(lambda X: 2.0 * X[:, 0] + X[:, 3], "test:f", N_FEATURES))
    rng = np.random.default_rng(3)
    X = rng.random((25, N_FEATURES))
    background = rng.random((200, N_FEATURES))
    query = QueryView(X=X, scores=model.predict(X), query_id="q", background=background)
    return model, query, Masker.from_background(background, "mean")


SEARCHES = [Greedy("greedy"), Greedy("greedy_cover"), Greedy("greedy_cover_eps"), ValiditySearch(),
            Exhaustive()]


@pytest.mark.parametrize("search", SEARCHES, ids=lambda s: s.name)
def test_every_search_finds_the_two_used_features(search) -> None:
    model, query, masker = known_structure()
    chosen = search.select(model, query, 2, masker, np.random.default_rng(0))
    assert set(chosen) == {0, 3}
    validity, completeness = measure_sets(model, query.X, query.scores, masker, [chosen])
    assert validity[0] == pytest.approx(1.0)
    assert completeness[0] == pytest.approx(0.0)  # masking both ties every score: tau := 0


def test_masking_both_used_features_ties_every_score_and_tau_is_zero() -> None:
    model, query, masker = known_structure()
    masked = masker.masked_scores(model, query.X, keep_masks([(0, 3)], N_FEATURES, complement=True))
    assert np.ptp(masked) == 0
    assert kendall_tau_b(query.scores, masked)[0] == 0.0
    assert not has_order(masked[0])


def test_tau_b_matches_scipy_with_ties() -> None:
    rng = np.random.default_rng(0)
    for _ in range(100):
        n = int(rng.integers(2, 30))
        a = rng.integers(0, 4, n).astype(float)
        if np.ptp(a) == 0:
            continue
        b = rng.integers(0, 4, (3, n)).astype(float)
        expected = [0.0 if np.isnan(t := st.kendalltau(a, row).statistic) else t for row in b]
        np.testing.assert_allclose(kendall_tau_b(a, b), expected, atol=1e-12)


def test_greedy_utility_uses_rank_difference_weights() -> None:
    scores = np.array([3.0, 1.0, 2.0, 2.0])
    upper, lower, weight = concordant_pairs(scores, None, np.random.default_rng(0))
    # order: 0, 2, 3, 1 (2 and 3 tie: that pair is left out)
    pairs = set(zip(upper.tolist(), lower.tolist(), weight.tolist(), strict=True))
    assert pairs == {(0, 2, 1.0), (0, 3, 2.0), (0, 1, 3.0), (2, 1, 2.0), (3, 1, 1.0)}
    sampled = concordant_pairs(np.arange(30.0), 50, np.random.default_rng(1))
    assert len(sampled[0]) == 50


def test_greedy_stops_when_utility_stops_increasing() -> None:
    model, query, masker = known_structure()
    chosen = Greedy("greedy").select(model, query, 6, masker, np.random.default_rng(0))
    assert set(chosen) == {0, 3}  # adding a third feature cannot raise the utility


def test_cover_stops_when_every_pair_is_covered() -> None:
    model = CountingRanker(CallableRanker(lambda X: X[:, 1], "test:g", N_FEATURES))
    X = np.random.default_rng(5).random((10, N_FEATURES))
    query = QueryView(X=X, scores=model.predict(X), query_id="q", background=X)
    chosen = Greedy("greedy_cover").select(model, query, 4, Masker.from_background(X), np.random.default_rng(0))
    assert chosen == (1,)


def test_batched_calls_count_rows() -> None:
    model, query, masker = known_structure()
    before = model.rows_evaluated
    Greedy("greedy", seeds=1).select(model, query, 1, masker, np.random.default_rng(0))
    assert model.rows_evaluated - before == N_FEATURES * query.n_docs  # one batch: every feature alone



class CallCounting(CountingRanker):
    def __init__(self, ranker) -> None:
        super().__init__(ranker)
        self.calls = 0

    def predict(self, X: np.ndarray) -> np.ndarray:
        self.calls += 1
        return super().predict(X)


@pytest.mark.parametrize("variant", ["greedy", "greedy_cover", "greedy_cover_eps"])
def test_seed_runs_in_lockstep_equal_runs_one_after_another(variant: str) -> None:
    """The three seed runs share one model call per step; each run's set is the one it finds alone, no run picks a
    feature twice, and once a run ends it stays ended while the others go on."""
    rng = np.random.default_rng(8)
    weights = rng.normal(size=N_FEATURES)
    model = CallCounting(CallableRanker(lambda X: np.tanh(X @ weights) + 0.3 * X[:, 0] * X[:, 5], "t:h", N_FEATURES))
    masker = Masker.from_background(rng.random((100, N_FEATURES)), "mean")
    greedy = Greedy(variant)
    pool = list(range(N_FEATURES))
    for q in range(6):
        X = rng.random((int(rng.integers(5, 30)), N_FEATURES))
        query = QueryView(X=X, scores=model.predict(X), query_id=str(q), background=X)
        upper, lower, weight = concordant_pairs(query.scores, greedy.n_pairs, np.random.default_rng(q))
        first = greedy._preference(SetScores(model, X, masker), [((), pool)], upper, lower, weight)[0]
        seeds = [int(s) for s in np.lexsort((np.arange(N_FEATURES), -first.sum(axis=1)))[:3]]
        for k in (2, 4, 7):
            model.calls = 0
            together = greedy._runs(SetScores(model, X, masker), pool, k, seeds, first, upper, lower, weight)
            calls_together = model.calls
            alone, calls_alone = [], []
            for seed in seeds:
                model.calls = 0
                alone.append(greedy._runs(SetScores(model, X, masker), pool, k, [seed], first, upper, lower,
                                          weight)[0])
                calls_alone.append(model.calls)
            assert together == alone
            assert all(len(set(run)) == len(run) <= k for run in together)
            assert calls_together == max(calls_alone)  # one call per step of the longest run

def test_validity_search_respects_budget_and_beats_random() -> None:
    model, query, masker = known_structure()
    before = model.rows_evaluated
    chosen = ValiditySearch(beam=3, max_rows=2_000).select(model, query, 3, masker, np.random.default_rng(0))
    assert {0, 3} <= set(chosen)
    assert model.rows_evaluated - before <= 2_000 + N_FEATURES * query.n_docs


def test_random_and_set_from_attributions() -> None:
    model, query, masker = known_structure()
    a = RandomSet().select(model, query, 3, masker, np.random.default_rng(1))
    assert a == RandomSet().select(model, query, 3, masker, np.random.default_rng(1)) and len(set(a)) == 3
    attributions = np.array([[0.1, -0.9, 0.0, 0.5], [2.0, 0.0, 0.0, 0.0]])
    assert set_from_attributions(attributions, 2, docs=1) == (1, 3)
    assert set_from_attributions(attributions, 2, docs=2) == (0, 1)


def test_background_masking_averages_fill_rows() -> None:
    model, query, _ = known_structure()
    masker = Masker.from_background(query.background, "background", samples=7, rng=np.random.default_rng(0))
    before = model.rows_evaluated
    scores = masker.masked_scores(model, query.X, keep_masks([(0,)], N_FEATURES))
    assert model.rows_evaluated - before == 7 * query.n_docs
    expected = 2.0 * query.X[:, 0] + masker.fill[:, 3].mean()
    np.testing.assert_allclose(scores[0], expected)


def test_compiled_tau_b_is_bit_identical_to_numpy(monkeypatch) -> None:
    """Large calls use the compiled τ_b (auditor/checks/tau_kernel.py): the same floats as the numpy form, ties,
    reversed and all-tied rows included; non-finite scores stay on the numpy form."""
    from auditor.checks import validity

    rng = np.random.default_rng(4)
    for n, levels in [(2, 2), (7, 3), (40, 5), (120, 1000)]:
        reference = rng.integers(0, levels, n).astype(float)
        reference[0], reference[-1] = 0.0, 1.0  # never all tied
        candidates = rng.integers(0, levels, (50, n)) * rng.choice([0.5, -1e-300, 3.0], size=(50, 1))
        candidates[0], candidates[1], candidates[2] = 7.0, reference, -reference
        monkeypatch.setattr(validity, "COMPILED_MIN_ELEMENTS", 10 ** 18)
        expected = validity.kendall_tau_b(reference, candidates)
        monkeypatch.setattr(validity, "COMPILED_MIN_ELEMENTS", 0)
        np.testing.assert_array_equal(validity.kendall_tau_b(reference, candidates), expected)
        assert expected[0] == 0.0 and expected[1] == 1.0 and expected[2] == -1.0
    with_nan = np.vstack([reference, reference])
    with_nan[1, 0] = np.nan
    assert np.isnan(validity.kendall_tau_b(reference, with_nan)[1])  # numpy's NaN, as before
