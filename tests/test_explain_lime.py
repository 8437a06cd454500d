"""LIRME, EXS and their LIME-tabular sampler (RESEARCH.md, "LIRME and EXS"): the sampler's distribution and
independence, the kernel, recovery of known models, the per-std convention, and the cost (one model call)."""

from __future__ import annotations

import time
from collections.abc import Callable
from itertools import pairwise

import numpy as np
import pytest

from auditor.explain.base import QueryView
from auditor.explain.exs import Exs, exs_labels
from auditor.explain.lirme import Lirme, contributions, weighted_ridge
from auditor.explain.perturb import QuartileSampler, kernel_weights
from auditor.models.base import CountingRanker
from auditor.models.callable import CallableRanker
from auditor.models.lightgbm import LightGBMRanker
from auditor.models.masking import Masker
from tests.conftest import make_bookstore_context

F = 6
UNIFORM, NORMAL, BINARY, SIGNED, DISCRETE, CONSTANT = range(F)


def make_background(rng: np.random.Generator, n: int) -> np.ndarray:
    """Mixed feature types: continuous, binary (70 % zeros), discrete 0..3 and a constant column."""
    X = np.empty((n, F))
    X[:, UNIFORM] = rng.random(n)
    X[:, NORMAL] = rng.normal(5.0, 2.0, n)
    X[:, BINARY] = (rng.random(n) < 0.3).astype(float)
    X[:, SIGNED] = rng.uniform(-1.0, 1.0, n)
    X[:, DISCRETE] = rng.integers(0, 4, n)
    X[:, CONSTANT] = 7.0
    return X


@pytest.fixture(scope="module")
def background() -> np.ndarray:
    return make_background(np.random.default_rng(0), 3000)


@pytest.fixture(scope="module")
def sampler(background: np.ndarray) -> QuartileSampler:
    return QuartileSampler(background)


class CallCounter(CountingRanker):
    """Counts `predict` calls as well as rows."""

    def __init__(self, function: Callable[[np.ndarray], np.ndarray]) -> None:
        super().__init__(CallableRanker(function, "tests:function", F))
        self.calls = 0

    def predict(self, X: np.ndarray) -> np.ndarray:
        self.calls += 1
        return super().predict(X)


def query_of(model: CountingRanker, background: np.ndarray, n_docs: int = 12, seed: int = 5) -> QueryView:
    X = make_background(np.random.default_rng(seed), n_docs)
    return QueryView(X=X, scores=model.predict(X), query_id="q", background=background)


def only_0_and_3(X: np.ndarray) -> np.ndarray:
    return 4.0 * X[:, UNIFORM] + X[:, SIGNED] + 0.5 * X[:, SIGNED] ** 2


def two_largest(attributions: np.ndarray) -> set[int]:
    return {int(f) for f in np.argsort(-np.abs(attributions))[:2]}


# --- sampler ---------------------------------------------------------------------------------------------------

def test_row_zero_is_the_document_and_samples_stay_in_range(sampler: QuartileSampler, background: np.ndarray):
    x = np.array([2.0, -40.0, 1.0, 0.3, 9.0, 7.0])  # outside the background on purpose
    samples = sampler.sample(x, 5000, np.random.default_rng(1))
    assert samples.shape == (5000, F)
    np.testing.assert_array_equal(samples[0], x)
    assert np.all(samples[1:] >= background.min(axis=0)) and np.all(samples[1:] <= background.max(axis=0))
    assert not np.isnan(samples).any()


def test_bin_frequencies_match_the_background(sampler: QuartileSampler, background: np.ndarray):
    samples = sampler.sample(background[0], 20_001, np.random.default_rng(2))[1:]
    for f in range(F):
        n_bins = sampler.edges[f].size + 1
        expected = np.bincount(sampler.bin_of(background)[:, f], minlength=n_bins) / background.shape[0]
        observed = np.bincount(sampler.bin_of(samples)[:, f], minlength=n_bins) / samples.shape[0]
        np.testing.assert_allclose(observed, expected, atol=0.015, err_msg=f"feature {f}")


def test_discrete_features_keep_their_values(sampler: QuartileSampler, background: np.ndarray):
    samples = sampler.sample(background[3], 20_000, np.random.default_rng(3))[1:]
    assert set(np.unique(samples[:, BINARY])) == {0.0, 1.0}
    assert set(np.unique(samples[:, CONSTANT])) == {7.0}
    # 0..3 in equal shares: edges 1, 2, 3, so the bins are {0, 1}, {2}, {3}. One-value bins (std 0) give exactly
    # their value; the bin {0, 1} gives continuous values in [0, 1], as LIME-tabular does.
    discrete = samples[:, DISCRETE]
    np.testing.assert_array_equal(sampler.edges[DISCRETE], [1.0, 2.0, 3.0])
    assert set(np.unique(discrete[discrete > 1])) == {2.0, 3.0}
    assert discrete.min() >= 0.0 and 0.2 < np.mean(discrete <= 1) < 0.8
    assert sampler.bin_counts[BINARY, 2:].sum() == 0  # duplicate edges collapsed: two non-empty bins


def test_sampler_is_deterministic_per_seed(sampler: QuartileSampler, background: np.ndarray):
    one = sampler.sample(background[0], 300, np.random.default_rng(7))
    again = sampler.sample(background[0], 300, np.random.default_rng(7))
    other = sampler.sample(background[0], 300, np.random.default_rng(8))
    np.testing.assert_array_equal(one, again)
    assert not np.array_equal(one[1:], other[1:])
    block = np.full((2 * 300, background.shape[1]), np.nan)  # drawn in place into a slice of a larger block
    sampler.sample(background[0], 300, np.random.default_rng(7), out=block[300:])
    np.testing.assert_array_equal(block[300:], one)
    assert np.isnan(block[:300]).all()
    with pytest.raises(ValueError, match="out must be"):
        sampler.sample(background[0], 300, np.random.default_rng(7), out=block[:299])


@pytest.mark.parametrize("shared", [False, True])
def test_rows_drawn_into_a_block_equal_fresh_ones(sampler: QuartileSampler, background: np.ndarray, shared: bool):
    """`draw_rows(out=)` (how a block of queries is drawn straight into the array the model scores) gives the rows
    of a fresh call, both layouts, and touches nothing outside its slice."""
    from auditor.explain.perturb import _rows_of, draw_rows

    docs = np.array([3, 0, 5])
    fresh = draw_rows(sampler, background, docs, 50, np.random.default_rng(4), shared=shared)
    size = _rows_of(docs.size, 50, shared)
    assert fresh.shape == (size, background.shape[1])
    block = np.full((size + 10, background.shape[1]), np.nan)
    draw_rows(sampler, background, docs, 50, np.random.default_rng(4), shared=shared, out=block[5:5 + size])
    np.testing.assert_array_equal(block[5:5 + size], fresh)
    assert np.isnan(block[:5]).all() and np.isnan(block[5 + size:]).all()
    np.testing.assert_array_equal(fresh[:docs.size] if shared else fresh[::50], background[docs])
    with pytest.raises(ValueError, match="out must have shape"):
        draw_rows(sampler, background, docs, 50, np.random.default_rng(4), shared=shared, out=block[:size - 1])


def test_columns_are_independent(sampler: QuartileSampler, background: np.ndarray):
    """RESEARCH.md: a reference implementation reseeds per column and so correlates every column."""
    samples = sampler.sample(background[0], 20_001, np.random.default_rng(4))[1:]
    varying = [f for f in range(F) if f != CONSTANT]
    corr = np.corrcoef(samples[:, varying], rowvar=False)
    off_diagonal = corr[~np.eye(len(varying), dtype=bool)]
    assert np.abs(off_diagonal).max() < 0.05


# --- kernel ----------------------------------------------------------------------------------------------------

def test_kernel_is_one_at_the_document_and_falls_with_distance(sampler: QuartileSampler):
    x = np.array([0.5, 5.0, 0.0, 0.0, 1.0, 7.0])
    steps = np.arange(6)[:, None] * np.array([0.2, 0.5, 0.0, 0.1, 0.0, 0.0])
    weights = kernel_weights(x + steps, x, sampler.mean, sampler.std)
    assert weights[0] == 1.0
    assert np.all(np.diff(weights) < 0)
    # exp(−d²/w²) with w = 0.75·√F on standardised distances; the constant column (std 0) is not rescaled.
    d2 = np.sum((steps[1] / sampler.std) ** 2)
    assert weights[1] == pytest.approx(np.exp(-d2 / (0.75**2 * F)))
    assert sampler.std[CONSTANT] == 1.0


# --- recovery of known models ----------------------------------------------------------------------------------

@pytest.mark.parametrize("explainer", [Lirme(), Lirme(penalty="lasso", alpha=0.01)], ids=["ridge", "lasso"])
def test_lirme_finds_the_two_features_the_model_uses(explainer: Lirme, background: np.ndarray):
    model = CallCounter(only_0_and_3)
    query = query_of(model, background)
    docs = query.top_docs(3)
    attributions = explainer.attribute(model, query, docs, Masker.from_background(background),
                                       np.random.default_rng(0)).values
    assert attributions.shape == (3, F)
    for row in attributions:
        assert two_largest(row) == {UNIFORM, SIGNED}


@pytest.mark.parametrize("label", ["score", "topk", "rank"])
def test_exs_finds_the_two_features_the_model_uses(label: str, background: np.ndarray):
    # The doc at the top-k boundary (k = half the query): about half of its samples enter the top-k, so even the
    # L1 (median) SVR on 0/1 labels has a non-constant solution.
    model = CallCounter(only_0_and_3)
    query = query_of(model, background)
    explainer = Exs(label=label, top_k=6)  # type: ignore[arg-type]
    doc = query.top_docs(6)[-1:]
    found = explainer.attribute(model, query, doc, Masker.from_background(background), np.random.default_rng(0))
    attributions = found.values
    assert found.n_degenerate == 0 and found.n_fallback == 0
    assert two_largest(attributions[0]) == {UNIFORM, SIGNED}
    assert attributions[0, UNIFORM] > 0  # a higher label means better placed, as the score


@pytest.mark.parametrize("label", ["topk", "rank"])
def test_exs_squared_loss_explains_the_top_document(label: str, background: np.ndarray):
    model = CallCounter(only_0_and_3)
    query = query_of(model, background)
    explainer = Exs(label=label, top_k=3, loss="squared_epsilon_insensitive")  # type: ignore[arg-type]
    attributions = explainer.attribute(model, query, query.top_docs(2), Masker.from_background(background),
                                       np.random.default_rng(0)).values
    for row in attributions:
        assert two_largest(row) == {UNIFORM, SIGNED}


def test_exs_l1_on_rare_positive_labels_is_reported_as_degenerate(background: np.ndarray):
    """Few samples of the last doc beat the top doc: the weighted-median fit is the constant 0 → zeros, counted."""
    model = CallCounter(only_0_and_3)
    query = query_of(model, background)
    explainer = Exs(n_samples=1000, label="topk", top_k=1)
    last = query.top_docs(query.n_docs)[-1:]
    found = explainer.attribute(model, query, last, Masker.from_background(background), np.random.default_rng(0))
    assert found.n_degenerate == 1 and found.degenerate.tolist() == [True]
    np.testing.assert_array_equal(found.values, 0.0)
    assert found.head(1).n_degenerate == 1 and found.head(0).n_degenerate == 0


def test_lirme_coefficients_are_per_standard_deviation(background: np.ndarray):
    model = CallCounter(lambda X: 2.0 * X[:, UNIFORM] - X[:, NORMAL])
    query = query_of(model, background)
    explainer = Lirme()
    docs = query.top_docs(2)
    attributions = explainer.attribute(model, query, docs, Masker.from_background(background),
                                       np.random.default_rng(0)).values
    sigma = background.std(axis=0)
    for row, d in zip(attributions, docs, strict=True):
        assert row[UNIFORM] == pytest.approx(2.0 * sigma[UNIFORM], rel=0.05)
        assert row[NORMAL] == pytest.approx(-sigma[NORMAL], rel=0.05)
        assert np.abs(np.delete(row, [UNIFORM, NORMAL])).max() < 0.05 * sigma[NORMAL]
        # For a linear model the contributions add up to s(x) − s(μ).
        mu = background.mean(axis=0)
        share = contributions(row, query.X[d], mu, background.std(axis=0))
        expected = 2.0 * (query.X[d, UNIFORM] - mu[UNIFORM]) - (query.X[d, NORMAL] - mu[NORMAL])
        assert share.sum() == pytest.approx(expected, rel=0.05, abs=0.05)


def test_weighted_ridge_matches_scikit_learn():
    from sklearn.linear_model import Ridge

    rng = np.random.default_rng(0)
    Z = rng.standard_normal((500, 8))
    y = Z @ rng.standard_normal(8) + rng.standard_normal(500)
    w = rng.random(500)
    expected = Ridge(alpha=1.0).fit(Z, y, sample_weight=w).coef_
    np.testing.assert_allclose(weighted_ridge(Z, y, w, 1.0), expected, atol=1e-10)


# --- labels ----------------------------------------------------------------------------------------------------

def test_exs_labels():
    query = np.array([-3.0, -1.0, -2.0, 0.5])  # negative scores, as LambdaMART's often are
    samples = np.array([0.5, -1.0, -2.5, 2.0])
    score = exs_labels(samples, query, 0, "score", 2)
    assert score[0] == pytest.approx(1.0)  # as good as the top document
    assert np.all(np.diff(score[[2, 1, 0, 3]]) > 0)  # monotone in the sample's score
    # The paper's y′ = (s_max − s′)/s_max on the shifted scores is 1 − label.
    shifted_top = 0.5 - (-3.0) + 1e-6 + 1e-3 * 5.0
    paper = (shifted_top - (samples - (-3.0) + 1e-6 + 1e-3 * 5.0)) / shifted_top
    np.testing.assert_allclose(1.0 - score, paper)
    # topk: threshold = score of the 2nd ranked document (−1.0).
    np.testing.assert_array_equal(exs_labels(samples, query, 0, "topk", 2), [1, 1, 0, 1])
    # rank among the OTHER documents of doc 0 (−1, −2, 0.5): r = how many score strictly higher.
    np.testing.assert_allclose(exs_labels(samples, query, 0, "rank", 2), [1.0, 0.5, 0.0, 1.0])
    # A query shorter than k: the threshold is its last document.
    np.testing.assert_array_equal(exs_labels(np.array([-4.0, -3.0]), query, 0, "topk", 10), [0, 1])


def test_constant_model_gives_zero_attributions(background: np.ndarray):
    model = CallCounter(lambda X: np.ones(X.shape[0]))
    query = query_of(model, background)
    masker = Masker.from_background(background)
    for explainer in (Lirme(n_samples=200), Exs(n_samples=200, label="topk"), Exs(n_samples=200)):
        out = explainer.attribute(model, query, query.top_docs(2), masker, np.random.default_rng(0)).values
        np.testing.assert_array_equal(out, 0.0)


# --- cost and determinism --------------------------------------------------------------------------------------

@pytest.mark.parametrize("explainer", [Lirme(n_samples=300), Exs(n_samples=300, label="rank")], ids=["lirme", "exs"])
def test_one_model_call_per_attribute_call(explainer: Lirme | Exs, background: np.ndarray):
    model = CallCounter(only_0_and_3)
    query = query_of(model, background)
    model.rows_evaluated, model.calls = 0, 0
    explainer.attribute(model, query, query.top_docs(4), Masker.from_background(background),
                        np.random.default_rng(0))
    assert model.calls == 1
    assert model.rows_evaluated == 4 * 300
    empty = explainer.attribute(model, query, np.array([], dtype=int), Masker.from_background(background),
                                np.random.default_rng(0)).values
    assert empty.shape == (0, F) and model.calls == 1


@pytest.mark.parametrize("make", [lambda: Lirme(n_samples=300), lambda: Exs(n_samples=300)], ids=["lirme", "exs"])
def test_deterministic_for_a_seed(make: Callable[[], Lirme | Exs], background: np.ndarray):
    model = CallCounter(only_0_and_3)
    query = query_of(model, background)
    masker = Masker.from_background(background)
    docs = query.top_docs(3)
    one = make().attribute(model, query, docs, masker, np.random.default_rng(3)).values
    again = make().attribute(model, query, docs, masker, np.random.default_rng(3)).values
    other = make().attribute(model, query, docs, masker, np.random.default_rng(4)).values
    np.testing.assert_array_equal(one, again)
    assert not np.array_equal(one, other)


def test_real_lambdamart(lambdamart):
    """On a real LightGBM ranker whose labels depend mostly on feature 0, both methods rank feature 0 first."""
    booster, X, _, sizes = lambdamart
    model = CountingRanker(LightGBMRanker(booster))
    Xq = X[: sizes[0]]
    query = QueryView(X=Xq, scores=model.predict(Xq), query_id="q0", background=X)
    masker = Masker.from_background(X)
    for explainer in (Lirme(n_samples=1000), Exs(n_samples=1000)):
        out = explainer.attribute(model, query, query.top_docs(2), masker, np.random.default_rng(0)).values
        assert out.shape == (2, X.shape[1]) and np.isfinite(out).all()
        assert int(np.argmax(np.abs(out[0]))) == 0


def test_shared_samples_score_fewer_rows_and_match_for_one_document(lambdamart) -> None:
    """Common random numbers across a query's documents: len(docs) + n − 1 rows; a single document is unchanged."""
    from auditor.explain.base import QueryView
    from auditor.explain.lirme import Lirme
    from auditor.models.base import CountingRanker
    from auditor.models.lightgbm import LightGBMRanker
    from auditor.models.masking import Masker

    booster, X, _, sizes = lambdamart
    model = CountingRanker(LightGBMRanker(booster))
    query = QueryView(X=X[: sizes[0]], scores=model.predict(X[: sizes[0]]), query_id="q", background=X)
    masker = Masker.from_background(X)
    docs = query.top_docs(3)
    before = model.rows_evaluated
    shared = Lirme(n_samples=300, shared_samples=True).attribute(model, query, docs, masker,
                                                                 np.random.default_rng(4)).values
    assert model.rows_evaluated - before == len(docs) + 300 - 1
    assert shared.shape == (3, X.shape[1]) and np.abs(shared).sum() > 0
    one_shared = Lirme(n_samples=300, shared_samples=True).attribute(model, query, docs[:1], masker,
                                                                     np.random.default_rng(4)).values
    one_plain = Lirme(n_samples=300).attribute(model, query, docs[:1], masker, np.random.default_rng(4)).values
    np.testing.assert_array_equal(one_shared, one_plain)



@pytest.mark.parametrize("shared", [True, False], ids=["shared", "per-document"])
@pytest.mark.parametrize("make", [lambda s: Lirme(n_samples=400, shared_samples=s),
                                  lambda s: Exs(n_samples=400, shared_samples=s)], ids=["lirme", "exs"])
def test_attribute_many_equals_one_call_per_query(lambdamart, make, shared: bool, monkeypatch) -> None:
    """Many queries at once (each with its own generator): bit-identical to one `attribute` call per query, with
    the rows of a block of queries scored in one model call; an empty document list gives an empty result, and no
    queries no results."""
    from auditor.explain import perturb

    booster, X, _, sizes = lambdamart
    starts = np.concatenate([[0], np.cumsum(sizes)])
    model = CallCounter(lambda A: booster.predict(A, raw_score=True))
    queries = [QueryView(X=X[a:b], scores=booster.predict(X[a:b], raw_score=True), query_id=str(i), background=X)
               for i, (a, b) in enumerate(pairwise(starts[:6]))]
    docs = [q.top_docs(3) for q in queries]
    docs[2] = np.array([], dtype=int)
    masker = Masker.from_background(X)
    explainer = make(shared)
    found = [explainer.attribute(model, q, d, masker, np.random.default_rng([7, i]))
             for i, (q, d) in enumerate(zip(queries, docs, strict=True))]
    single = [one.values for one in found]
    rows, model.rows_evaluated, model.calls = model.rows_evaluated, 0, 0
    monkeypatch.setattr(perturb, "BLOCK_ROWS", 10**9)
    batched = make(shared)
    returned = batched.attribute_many(model, queries, docs, masker,
                                      [np.random.default_rng([7, i]) for i in range(len(queries))])
    # the per-document counts travel with each query's values (no state left on the explainer)
    assert [(r.n_degenerate, r.n_fallback) for r in returned] == [(f.n_degenerate, f.n_fallback) for f in found]
    many = [r.values for r in returned]
    assert model.calls == 1 and model.rows_evaluated == rows
    assert [m.shape for m in many] == [s.shape for s in single] and many[2].shape == (0, X.shape[1])
    for one, batch in zip(single, many, strict=True):
        np.testing.assert_array_equal(batch, one)
    # A small row budget splits the queries into several model calls; the results do not change.
    model.calls = 0
    monkeypatch.setattr(perturb, "BLOCK_ROWS", 900)
    blocks = [r.values for r in make(shared).attribute_many(
        model, queries, docs, masker, [np.random.default_rng([7, i]) for i in range(len(queries))])]
    assert model.calls > 1
    for one, batch in zip(single, blocks, strict=True):
        np.testing.assert_array_equal(batch, one)
    # Wide data: the byte budget, not the row budget, sets the block (900 rows of these features).
    model.calls = 0
    monkeypatch.setattr(perturb, "BLOCK_ROWS", 10**9)
    monkeypatch.setattr(perturb, "BLOCK_BYTES", 900 * 8 * X.shape[1])
    wide = [r.values for r in make(shared).attribute_many(
        model, queries, docs, masker, [np.random.default_rng([7, i]) for i in range(len(queries))])]
    assert model.calls > 1
    for one, batch in zip(single, wide, strict=True):
        np.testing.assert_array_equal(batch, one)
    assert make(shared).attribute_many(model, [], [], masker, []) == []  # no queries at all



class ThreadRecorder(CountingRanker):
    """A LightGBM ranker that records, per predict call, the calling thread and the num_threads LightGBM gets."""

    def __init__(self, booster) -> None:
        super().__init__(LightGBMRanker(booster))
        self.seen: list[tuple[int, dict]] = []

    def predict(self, X: np.ndarray) -> np.ndarray:
        import threading

        from auditor.models.lightgbm import _threads

        self.seen.append((threading.get_ident(), _threads()))
        time.sleep(0.05)  # a block holds its thread a while: a fast first thread cannot take every block before the
        return super().predict(X)  # pool starts its second (it starts one only when none is idle)


@pytest.mark.parametrize("make", [lambda: Lirme(n_samples=400, shared_samples=True),
                                  lambda: Exs(n_samples=400, shared_samples=True)], ids=["lirme", "exs"])
def test_blocks_run_concurrently_one_model_thread_each_with_the_same_results(lambdamart, make, monkeypatch) -> None:
    """With two threads and several blocks, blocks run on both threads, each model call on one LightGBM thread,
    rows are counted once, and the attributions equal the one-thread run bit for bit."""
    from auditor.explain import perturb

    booster, X, _, sizes = lambdamart
    starts = np.concatenate([[0], np.cumsum(sizes)])
    queries = [QueryView(X=X[a:b], scores=booster.predict(X[a:b], raw_score=True), query_id=str(i), background=X)
               for i, (a, b) in enumerate(pairwise(starts[:13]))]
    docs = [q.top_docs(3) for q in queries]
    masker = Masker.from_background(X)

    def run(threads: int) -> tuple[list[np.ndarray], ThreadRecorder]:
        monkeypatch.setattr(perturb, "workers", lambda: threads)
        model = ThreadRecorder(booster)
        out = [r.values for r in make().attribute_many(
            model, queries, docs, masker, [np.random.default_rng([7, i]) for i in range(len(queries))])]
        return out, model

    monkeypatch.setattr(perturb, "MIN_BLOCK_ROWS", 500)  # several blocks from this small data
    one, serial = run(1)
    two, concurrent = run(2)
    assert len(concurrent.seen) > 2 and len({ident for ident, _ in concurrent.seen}) == 2
    assert all(threads == {"num_threads": 1} for _, threads in concurrent.seen)
    assert concurrent.rows_evaluated == serial.rows_evaluated == sum(len(d) + 399 for d in docs)
    for a, b in zip(one, two, strict=True):
        np.testing.assert_array_equal(a, b)


def test_thread_budget_here_is_per_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    from auditor.core.threads import THREADS_ENV, thread_budget, threads_here

    monkeypatch.delenv(THREADS_ENV, raising=False)  # the suite's own budget (tests/conftest.py)
    seen = {}
    with threads_here(1):
        worker = threading.Thread(target=lambda: seen.setdefault("other", thread_budget(5)))
        worker.start()
        worker.join()
        seen["here"] = thread_budget(5)
    assert seen == {"here": 1, "other": 5} and thread_budget(5) == 5


# --- exactness of the fast paths -------------------------------------------------------------------------------

def _vectorised_sample(sampler: QuartileSampler, x: np.ndarray, n_samples: int, rng: np.random.Generator):
    """The sampler in numpy and scipy, the reference for the compiled one: one uniform per value picks the bin and,
    rescaled to [0, 1) inside the bin's share, the CDF position of the value in the bin's truncated normal."""
    from scipy.special import ndtr, ndtri

    n_draw, features = n_samples - 1, np.arange(sampler.n_features)
    u = rng.random((n_draw, sampler.n_features))
    bins = (u[:, :, None] >= sampler._cumulative[None, :, :3]).sum(axis=2)
    start = np.hstack([np.zeros((sampler.n_features, 1)), sampler._cumulative[:, :-1]])[features, bins]
    width = sampler._cumulative[features, bins] - start
    mean, std = sampler.bin_mean[features, bins], sampler.bin_std[features, bins]
    low, high = sampler.bin_min[features, bins], sampler.bin_max[features, bins]
    safe = np.where(sampler.bin_std > 0, sampler.bin_std, 1.0)
    cdf_low = ndtr((sampler.bin_min - sampler.bin_mean) / safe)[features, bins]
    cdf_high = ndtr((sampler.bin_max - sampler.bin_mean) / safe)[features, bins]
    spread = std > 0
    position = (u - start) / width  # uniform in [0, 1) given the bin
    values = mean + np.where(spread, std, 1.0) * ndtri(cdf_low + position * (cdf_high - cdf_low))
    values = np.where(spread, np.clip(values, low, high), mean)
    return np.vstack([x[None, :], values])


def test_compiled_sampler_equals_the_vectorised_one(sampler: QuartileSampler, background: np.ndarray):
    """The same draws as numpy + scipy's ndtri, to rounding (Φ⁻¹ is AS 241 here, Cephes in scipy)."""
    for seed in range(5):
        x = background[seed * 100]
        compiled = sampler.sample(x, 3000, np.random.default_rng(seed))
        reference = _vectorised_sample(sampler, x, 3000, np.random.default_rng(seed))
        np.testing.assert_allclose(compiled, reference, rtol=1e-13, atol=1e-13)
        assert np.mean(compiled == reference) > 0.5  # most values equal to the bit


def test_inverse_normal_matches_scipy_ndtri():
    """AS 241 against scipy's ndtri on (0, 1), both tails down to 1e-300, and the ends."""
    from scipy.special import ndtri

    from auditor.explain.inverse_normal import inverse_normal

    rng = np.random.default_rng(0)
    p = np.concatenate([rng.random(200_000), 10.0 ** -rng.uniform(1, 300, 20_000),
                        1 - 10.0 ** -rng.uniform(1, 16, 20_000), [0.5, 0.075, 0.925, 0.0, 1.0]])
    ours = np.array([inverse_normal(v) for v in p])
    reference = ndtri(p)
    finite = np.isfinite(reference)
    np.testing.assert_allclose(ours[finite], reference[finite], rtol=2e-15, atol=0)
    np.testing.assert_array_equal(ours[~finite], reference[~finite])


def test_within_a_bin_values_follow_the_truncated_normal(sampler: QuartileSampler, background: np.ndarray):
    """Given its bin, a value is the bin's normal truncated to the bin's range (Kolmogorov-Smirnov)."""
    from scipy import stats

    samples = sampler.sample(background[0], 40_001, np.random.default_rng(11))[1:]
    bins = sampler.bin_of(samples)
    tested = 0
    for f in range(F):
        for b in range(4):
            inside = samples[bins[:, f] == b, f]
            if sampler.bin_std[f, b] == 0 or inside.size < 500:
                continue
            mean, std = sampler.bin_mean[f, b], sampler.bin_std[f, b]
            a, c = (sampler.bin_min[f, b] - mean) / std, (sampler.bin_max[f, b] - mean) / std
            assert stats.kstest(inside, stats.truncnorm(a, c, loc=mean, scale=std).cdf).pvalue > 1e-3, (f, b)
            tested += 1
    assert tested >= 4


def test_standardised_kernel_equals_kernel_weights(sampler: QuartileSampler, background: np.ndarray):
    from auditor.explain.perturb import standardised_kernel

    samples = np.stack([sampler.sample(background[d], 500, np.random.default_rng(d)) for d in range(3)])
    expected = np.stack([kernel_weights(s, s[0], sampler.mean, sampler.std) for s in samples])
    np.testing.assert_array_equal(standardised_kernel(sampler.standardise(samples)), expected)



@pytest.mark.parametrize("n_features", [5, 8, 13, 46, 127, 130])
def test_compiled_kernel_and_standardising_are_bit_identical(n_features: int):
    """The compiled squared distances sum in numpy's order (bit-identical, also past the 8-accumulator path's
    edges); the shared-draw Z equals the standardised rows copied per document."""
    from auditor.explain.perturb import split_scored

    rng = np.random.default_rng(n_features)
    Z = rng.standard_normal((3, 40, n_features)) * rng.uniform(0.1, 10.0, n_features)
    expected = np.exp(-np.sum((Z - Z[..., :1, :]) ** 2, axis=-1) / (0.75 * np.sqrt(n_features)) ** 2)
    from auditor.explain.perturb import standardised_kernel

    np.testing.assert_array_equal(standardised_kernel(Z), expected)
    background = rng.standard_normal((200, n_features))
    background[:, 0] = 3.0  # a constant feature: std 1
    sampler = QuartileSampler(background)
    rows = rng.standard_normal((3 + 39, n_features))
    rows[5, 1] = np.nan
    Zs, scores = split_scored(sampler, rows, np.arange(42.0), 3, 40)
    for d in range(3):
        np.testing.assert_array_equal(Zs[d, 0], sampler.standardise(rows[d]))
        np.testing.assert_array_equal(Zs[d, 1:], sampler.standardise(rows[3:]))
        np.testing.assert_array_equal(scores[d], np.r_[d, np.arange(3.0, 42.0)])
    block = rng.standard_normal((3 * 40, n_features))  # per-document draws: one block of 40 rows per document
    block[7, 2], block[50, 0] = np.nan, np.inf
    Zp, scores_p = split_scored(sampler, block, np.arange(120.0), 3, 40)
    np.testing.assert_array_equal(Zp, sampler.standardise(block.reshape(3, 40, n_features)))
    np.testing.assert_array_equal(scores_p, np.arange(120.0).reshape(3, 40))


def _svr_problem(seed: int, n: int = 1500, F: int = 10):
    """An EXS-like fit: standardised samples, kernel weights, labels in [0, 1] from a nonlinear score."""
    rng = np.random.default_rng(seed)
    Z = rng.standard_normal((n, F))
    Z[0] = 0.3 * rng.standard_normal(F)
    w = np.exp(-np.sum((Z - Z[0]) ** 2, axis=1) / (0.75**2 * F))
    score = Z @ rng.standard_normal(F) + 0.5 * np.tanh(Z[:, 0] * Z[:, 1]) + 0.1 * rng.standard_normal(n)
    y = (score - score.min()) / np.ptp(score)
    return Z, y, w


@pytest.mark.parametrize("seed", range(4))
def test_exact_l1_svr_is_the_liblinear_optimum(seed: int):
    """The exact solver's coefficients equal liblinear's run to a tight tolerance (tol 1e-10: within 1e-7 of the
    largest coefficient), are within liblinear's default-tolerance error (tol 1e-4: < 2 % of the largest) of what
    the default gives, and no point liblinear or a small perturbation reaches has a lower objective."""
    from sklearn.svm import LinearSVR

    from auditor.explain.exs import liblinear_svr
    from auditor.explain.svr import l1_svr, l2_svr

    Z, y, w = _svr_problem(seed)
    coef, ok = l1_svr(Z, y, w, l2_svr(Z, y, w))
    assert ok
    tight = LinearSVR(epsilon=0.0, C=1.0, dual=True, random_state=0, max_iter=3_000_000, tol=1e-10)
    tight.fit(Z, y, sample_weight=w)
    scale = np.abs(tight.coef_).max()
    np.testing.assert_allclose(coef[:-1], tight.coef_, atol=1e-7 * scale)
    assert coef[-1] == pytest.approx(tight.intercept_[0], abs=1e-7)
    default = liblinear_svr(Z, y, w, 1.0, "epsilon_insensitive", 20_000)
    np.testing.assert_allclose(coef[:-1], default, atol=0.02 * scale)

    def objective(v):
        return 0.5 * v @ v + np.sum(w * np.abs(y - Z @ v[:-1] - v[-1]))

    liblinear = np.append(tight.coef_, tight.intercept_)
    assert objective(coef) <= objective(liblinear) + 1e-12
    steps = np.random.default_rng(seed).standard_normal((20, coef.size)) * 1e-4
    assert all(objective(coef) <= objective(coef + step) for step in steps)  # and no nearby point does better


@pytest.mark.parametrize("seed", range(3))
def test_l1_svr_certifies_larger_problems(seed: int):
    """On a larger fit (2,000 rows, 30 features) the exact finish still certifies, and no nearby point does better."""
    from auditor.explain.svr import l1_svr, l2_svr

    Z, y, w = _svr_problem(seed, n=2000, F=30)
    coef, ok = l1_svr(Z, y, w, l2_svr(Z, y, w))
    assert ok

    def objective(v):
        return 0.5 * v @ v + np.sum(w * np.abs(y - Z @ v[:-1] - v[-1]))

    steps = np.random.default_rng(seed).standard_normal((20, coef.size)) * 1e-4
    assert all(objective(coef) <= objective(coef + step) for step in steps)


def test_cholesky_solve_solves_and_refuses_indefinite_matrices():
    """`_cholesky_solve` (the exact finish's and the Newton steps' solver) agrees with numpy on a Hessian-like
    matrix, and says so (ok False) when the matrix is not numerically positive definite, so the caller stops."""
    from auditor.explain.svr import _cholesky_solve

    rng = np.random.default_rng(3)
    rows = rng.standard_normal((40, 12)) * 2.0
    H = np.eye(12) + rows[:30].T @ rows[:30]
    b = rng.standard_normal(12)
    x, ok = _cholesky_solve(H, b)
    assert ok
    np.testing.assert_allclose(x, np.linalg.solve(H, b), rtol=1e-9)
    indefinite = H - 2.0 * np.abs(H).max() * np.outer(np.eye(12)[0], np.eye(12)[0])
    assert not _cholesky_solve(indefinite, b)[1]


@pytest.mark.parametrize("count", [0, 1, 5, 40, 41, 100])
def test_smallest_is_the_stable_argsort_cut(count: int):
    """`_smallest` (the exact finish's pattern, in place of a compiled argsort) names the `count` smallest values
    in increasing order, ties by index: the stable argsort's first `count`, also past the end and with ties."""
    from auditor.explain.svr import _smallest

    values = np.round(np.random.default_rng(count).standard_normal(41), 1)  # many ties
    assert list(_smallest(values, count)) == list(np.argsort(values, kind="stable")[:count])


def _huber(r: np.ndarray, c: np.ndarray, v: np.ndarray, mu: float) -> float:
    """The smoothed objective ½‖v‖² + Σ c·h_μ(r) (h_μ = r²/2μ inside ±μ, |r| − μ/2 beyond), the reference the
    compiled line search is checked against."""
    a = np.abs(r)
    return float(0.5 * v @ v + np.sum(c * np.where(a <= mu, a * a / (2.0 * mu), a - 0.5 * mu)))


def test_line_search_slope_is_the_derivative_of_the_smoothed_objective():
    """`_slope` is the derivative along d of ½‖v‖² + Σ c·h_μ(r): central differences of the objective agree, on
    every piece of ψ (rows inside and beyond ±μ)."""
    from auditor.explain.svr import _slope

    rng = np.random.default_rng(5)
    n, p, mu = 203, 6, 0.3
    r, q, c = rng.standard_normal(n), rng.standard_normal(n), rng.uniform(0.1, 2.0, n)
    v, d = rng.standard_normal(p), rng.standard_normal(p)
    assert 0 < np.sum(np.abs(r) <= mu) < n
    for t in (0.0, 0.37, 1.0, 2.5):
        h = 1e-6
        numeric = (_huber(r - (t + h) * q, c, v + (t + h) * d, mu)
                   - _huber(r - (t - h) * q, c, v + (t - h) * d, mu)) / (2 * h)
        slope = _slope(r, q, c, v, d, mu, t)
        assert abs(slope - numeric) <= 1e-5 * (1 + abs(numeric))


def test_line_search_finds_the_minimum_along_the_direction():
    """`_line_search` (bracketing, then false position on the piecewise linear slope) returns the minimiser of the
    smoothed objective along d: a dense grid around it finds nothing lower, and the slope vanishes there."""
    from auditor.explain.svr import _line_search, _slope

    rng = np.random.default_rng(11)
    n, p, mu = 401, 5, 0.2
    for trial in range(5):
        r, q, c = rng.standard_normal(n), rng.standard_normal(n), rng.uniform(0.1, 2.0, n)
        v, d = rng.standard_normal(p), rng.standard_normal(p)
        s_zero = _slope(r, q, c, v, d, mu, 0.0)
        if s_zero >= 0:
            d, q, s_zero = -d, -q, -s_zero  # a descent direction
        t = _line_search(r, q, c, v, d, mu)
        assert t > 0
        assert abs(_slope(r, q, c, v, d, mu, t)) <= 1e-8 * abs(s_zero)
        best = _huber(r - t * q, c, v + t * d, mu)
        grid = np.linspace(0.0, 3.0 * t, 301)
        assert min(_huber(r - u * q, c, v + u * d, mu) for u in grid) >= best - 1e-9 * abs(best), trial


def test_exact_l2_svr_is_the_liblinear_optimum():
    from sklearn.svm import LinearSVR

    from auditor.explain.svr import l2_svr

    Z, y, w = _svr_problem(9)
    tight = LinearSVR(epsilon=0.0, C=1.0, loss="squared_epsilon_insensitive", dual=False, random_state=0,
                      max_iter=100_000, tol=1e-12).fit(Z, y, sample_weight=w)
    coef = l2_svr(Z, y, w)
    np.testing.assert_allclose(coef[:-1], tight.coef_, atol=1e-7 * np.abs(tight.coef_).max())
    assert coef[-1] == pytest.approx(tight.intercept_[0], abs=1e-7)


def test_exs_uses_the_exact_solver_on_a_real_model(lambdamart):
    booster, X, _, sizes = lambdamart
    model = CountingRanker(LightGBMRanker(booster))
    query = QueryView(X=X[: sizes[0]], scores=model.predict(X[: sizes[0]]), query_id="q", background=X)
    explainer = Exs(n_samples=1000)
    found = explainer.attribute(model, query, query.top_docs(3), Masker.from_background(X), np.random.default_rng(0))
    assert found.n_fallback == 0 and found.fallback.shape == (3,)


def test_evidence_batches_queries_without_changing_anything(monkeypatch) -> None:
    """local_explanations draws LIRME/EXS samples for blocks of queries and scores each block in one model call:
    the memo entries (keys and values), records, metrics and rows are those of one call per query."""
    from auditor.evidence.kinds.local_explanations import measure as le

    options = le.LocalExplanationsOptions(methods=["lirme1", "lirme5", "exs5"], k=3, k_curve=[], queries=7,
                                          optimum_max_subsets=0, lime={"samples": 300})

    def audit(batched: bool):
        ctx = make_bookstore_context()
        calls = []  # counted on the model itself: executor tasks wrap it in counters of their own
        inner_predict = ctx.model.inner.predict
        ctx.model.inner.predict = lambda X: calls.append(len(X)) or inner_predict(X)
        if not batched:
            monkeypatch.setattr(le, "_prefetch_attributions", lambda *args, **kwargs: None)
        result = le.run(ctx, options)
        monkeypatch.undo()
        return ctx, result, len(calls)

    monkeypatch.setattr(le, "BATCH_QUERIES", 3)
    batched_ctx, batched, batched_calls = audit(True)
    plain_ctx, plain, plain_calls = audit(False)
    assert batched_calls < plain_calls
    keys = [k for k in plain_ctx._memo if k[0] == "attributions"]
    assert keys and sorted(keys, key=str) == sorted((k for k in batched_ctx._memo if k[0] == "attributions"), key=str)
    for key in keys:
        np.testing.assert_array_equal(batched_ctx._memo[key].values, plain_ctx._memo[key].values)
        assert batched_ctx._memo[key].n_degenerate == plain_ctx._memo[key].n_degenerate
    assert batched.records == plain.records
    assert batched.metrics == plain.metrics and batched.metrics["local.exs5.rows"] > 0


class CallCounterOf(CountingRanker):
    """Counts the `predict` calls of an existing CountingRanker's model (rows as well)."""

    def __init__(self, counting: CountingRanker) -> None:
        super().__init__(counting.inner)
        self.rows_evaluated = counting.rows_evaluated
        self.calls = 0

    def predict(self, X: np.ndarray) -> np.ndarray:
        self.calls += 1
        return super().predict(X)



@pytest.mark.parametrize("seed", range(3))
def test_exact_finish_reads_at_most_as_many_samples_as_coefficients(seed: int):
    """At a smoothing level wide enough to take two more samples in than the optimum interpolates (more than there
    are coefficients), the finish keeps the smallest residuals and certifies the same optimum (it used to give up
    and smooth further: on 700-feature fits, stage after stage)."""
    from auditor.explain.svr import _finish, _residuals, l1_svr, l2_svr

    Z, y, w = _svr_problem(seed, n=600, F=40)
    coef, ok = l1_svr(Z, y, w, l2_svr(Z, y, w))
    assert ok
    r = np.empty(len(y))
    _residuals(Z, y, coef, r)
    tight = 1e-9 * np.abs(y).max()
    assert np.sum(np.abs(r) <= tight) == Z.shape[1] + 1  # the optimum interpolates as many samples as coefficients
    wide = np.sort(np.abs(r[np.abs(r) > tight]))[1] * 1.0001
    again, certified = _finish(Z, np.hstack([Z, np.ones((len(y), 1))]), y, w, r, wide, 60)
    assert certified
    np.testing.assert_allclose(again, coef, atol=1e-9 * np.abs(coef).max())


def test_factor_updates_equal_a_fresh_cholesky():
    """`_drop` and `_append` (the exact finish's factor of X̃_E X̃_Eᵀ, updated at each active-set step) give the
    factor a fresh Cholesky gives: a sample removed from the middle, another added at the end; and a sample that
    is a copy of one already inside is refused (it would make the factor singular)."""
    from auditor.explain.svr import _append, _drop, _factor

    rng = np.random.default_rng(0)
    design = np.hstack([rng.standard_normal((30, 12)), np.ones((30, 1))])
    design[26] = design[5]
    state = np.ones(30, dtype=np.int64)
    state[[2, 5, 7, 11, 20]] = 0
    R, inside, u = np.zeros((13, 13)), np.empty(13, dtype=np.int64), np.empty(13)
    m, largest, ok = _factor(design, np.ones(30), state, R, inside, u)
    assert ok and m == 5
    _drop(R, inside, m, 2)  # sample 7
    assert _append(design, R, inside, m - 1, 25, largest)
    assert list(inside[:5]) == [2, 5, 11, 20, 25]
    XE = design[inside[:5]]
    np.testing.assert_allclose(np.triu(R[:5, :5]), np.linalg.cholesky(XE @ XE.T).T, atol=1e-12 * np.abs(R).max())
    assert not _append(design, R, inside, 5, 26, largest)


@pytest.mark.parametrize("seed", range(3))
def test_the_exact_finish_certifies_from_duals_far_from_the_optimum(seed: int):
    """The finish's active-set method raises the dual at every step, so it converges from any feasible duals:
    from no sample interpolated (every dual at the bound the L2 fit's residual sign gives) it certifies the
    optimum `l1_svr` finds. (The single pivots it replaced wandered on 700-feature fits and fell back to
    liblinear, 20 s a fit.)"""
    from auditor.explain.svr import _ascend, l1_svr, l2_svr

    Z, y, w = _svr_problem(seed, n=600, F=40)
    design = np.hstack([Z, np.ones((len(y), 1))])
    coef, ok = l1_svr(Z, y, w, l2_svr(Z, y, w))
    assert ok
    state = np.where(y - design @ l2_svr(Z, y, w) > 0, 1, -1).astype(np.int64)
    v, certified = _ascend(Z, design, y, w, state, w * state, 2000)
    assert certified
    np.testing.assert_allclose(v, coef, atol=1e-9 * np.abs(coef).max())
