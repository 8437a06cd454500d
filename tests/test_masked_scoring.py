"""Masked scores read off the trees equal the model's scores of the materialised masked rows, bit for bit."""

from __future__ import annotations

import importlib.util
import json

import lightgbm as lgb
import numpy as np
import pytest

import auditor.scoring.masked_scoring as masked_scoring
from auditor.models.base import CountingRanker
from auditor.models.lightgbm import LightGBMRanker
from auditor.scoring.masked_scoring import masked_ensemble, masked_scores, masked_scores_rows
from auditor.scoring.trees import MISSING_NAN, MISSING_ZERO, TreeEnsemble, probe_rows

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
    """All kept, none kept, each feature alone, each feature left out, random masks, and the searches' shapes: a
    beam step (two chosen sets, each with every other feature added), a swap step (each member of a set replaced
    by each non-member) and repeated masks."""
    eye = np.eye(N_FEATURES, dtype=bool)
    beam = [np.isin(np.arange(N_FEATURES), [*chosen, f]) for chosen in ([0, 2], [1, 2, 6]) for f in
            range(N_FEATURES) if f not in chosen]
    member = [1, 3, 4]
    swaps = [np.isin(np.arange(N_FEATURES), [m for m in member if m != out] + [f]) for out in member
             for f in range(N_FEATURES) if f not in member]
    shaped = np.array(beam + swaps)
    return np.vstack([np.ones((1, N_FEATURES), bool), np.zeros((1, N_FEATURES), bool), eye, ~eye,
                      rng.random((n, N_FEATURES)) < 0.5, shaped, shaped[::3]])


@pytest.fixture(params=["families", "plain"])
def kernel(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every mask through the family kernel (even families of one), or every mask walked on its own through tables
    built in two passes (counted, then built into exactly their room); no tables kept from other tests."""
    families = request.param == "families"
    monkeypatch.setattr(masked_scoring, "_FAMILY_MIN_ROWS", 0.0 if families else 1e9)
    monkeypatch.setattr(masked_scoring, "_FAMILY_MIN_MASKS", 0)
    monkeypatch.setattr(masked_scoring, "_ONE_PASS_BYTES", 16 << 20 if families else 0)
    monkeypatch.setattr(masked_scoring, "_table_cache", [])
    return str(request.param)


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
def test_lightgbm_lambdarank_bit_identical(params: dict, kernel: str) -> None:
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


def test_xgboost_float32_sum_and_inputs(kernel: str) -> None:
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


def test_sklearn_float32_inputs_and_tree_weights(kernel: str) -> None:
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


def test_families_group_the_search_steps_exactly(monkeypatch: pytest.MonkeyPatch) -> None:
    """A beam step is one family per chosen set, a swap step one per member left out; every mask is its family's
    base plus at most its one extra feature; repeated masks are scored once; masks of many sizes, or hashes that
    collide, give no families, and the same scores."""
    keep = masks(np.random.default_rng(7))

    def families(keep: np.ndarray) -> int:
        found = masked_scoring.mask_families(keep)
        assert found is not None
        bases, order, starts, extra, inverse = found
        distinct = np.unique(keep, axis=0)
        assert order.shape[0] == distinct.shape[0] and inverse.shape == (keep.shape[0],)
        rebuilt = np.empty_like(distinct)
        for family in range(bases.shape[0]):
            for place in range(starts[family], starts[family + 1]):
                row = bases[family].copy()
                if extra[place] >= 0:
                    assert not row[extra[place]]
                    row[extra[place]] = True
                rebuilt[order[place]] = row
        assert np.array_equal(rebuilt[inverse], keep)
        return bases.shape[0]

    assert families(keep[-35:-24]) == 2  # the two chosen sets' steps (before the swaps and the repeats)
    assert families(keep[-24:-9]) == 3  # the swaps: one family for each member left out
    assert families(keep[-35:]) == 5  # beam, swaps and repeats of them
    assert masked_scoring.mask_families(keep) is None  # masks of every size: not grouped
    X, y = awkward_data(5, 200)
    ensemble = TreeEnsemble.from_lightgbm(lambdarank(X, y).dump_model())
    fill = np.nanmean(X, axis=0)
    expected = ensemble.predict(materialised(X[:40], fill, keep))
    monkeypatch.setattr(masked_scoring, "_feature_codes", lambda n: np.ones(n, dtype=np.uint64))
    assert masked_scoring.mask_families(keep) is None  # masks of a size hash alike: caught, not merged
    assert masked_scoring.mask_families(np.eye(N_FEATURES, dtype=bool)[[0, 1]]) is None
    assert np.array_equal(masked_scores(ensemble, X[:40], fill, keep).ravel(), expected)


def test_tables_are_kept_by_content_not_by_object(monkeypatch: pytest.MonkeyPatch) -> None:
    """The second call on the same documents and fill reuses their tables; the same array changed in place, another
    fill or another model builds new ones; and the kept tables stay under their byte bound."""
    X, y = awkward_data(6, 200)
    ensemble = TreeEnsemble.from_lightgbm(lambdarank(X, y).dump_model())
    other = TreeEnsemble.from_lightgbm(lambdarank(X, y, seed=1, bagging_fraction=0.5, bagging_freq=1).dump_model())
    docs, fill, keep = X[:30].copy(), np.nanmean(X, axis=0), masks(np.random.default_rng(8))
    monkeypatch.setattr(masked_scoring, "_table_cache", [])

    def scores(model: TreeEnsemble, docs: np.ndarray, fill: np.ndarray) -> np.ndarray:
        ours = masked_scores(model, docs, fill, keep)
        assert np.array_equal(ours.ravel(), model.predict(materialised(docs, fill, keep)))
        return ours

    scores(ensemble, docs, fill)
    first = masked_scoring._table_cache[0]
    scores(ensemble, docs.copy(), fill)
    assert masked_scoring._table_cache == [first]
    docs[:, 0] = -docs[:, 0]  # same object, other values
    scores(ensemble, docs, fill)
    scores(ensemble, docs, np.zeros_like(fill))
    scores(other, docs, fill)
    assert len(masked_scoring._table_cache) == 4 and masked_scoring._table_cache[-1] is first
    monkeypatch.setattr(masked_scoring, "_TABLE_CACHE_BYTES", first.nbytes * 2)
    scores(ensemble, docs[:20], fill)
    assert sum(entry.nbytes for entry in masked_scoring._table_cache) <= first.nbytes * 2


def test_shapes_and_edges(kernel: str) -> None:
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
    from auditor.evidence.base import AuditContext
    from auditor.evidence.kinds.confidence import measure as confidence
    from auditor.evidence.kinds.local_explanations import measure as local_explanations
    from tests.conftest import bookstore_inputs

    model, data, background = bookstore_inputs()

    def run(path: str) -> tuple[str, int, bool]:
        monkeypatch.setenv("AUDITOR_MASKED_ROWS", path)
        ctx = AuditContext(data=data, model=CountingRanker(model), seed=3, background=background)
        local = local_explanations.run(ctx, local_explanations.LocalExplanationsOptions(
            methods=["treeshap5", "shap5", "exs5", "greedy_cover_eps", "validity_search", "rankingshap"], k=4,
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


def pair_rows(rng: np.random.Generator, docs: np.ndarray, fill_rows: np.ndarray, m: int = 400
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows in random order: random documents, fill rows and masks (random sizes), all-kept and none-kept masks, a
    pair that appears once (the last document with the last fill row) and pairs with many rows."""
    doc = rng.integers(0, len(docs) - 1, m)
    fill = rng.integers(0, len(fill_rows) - 1, m)
    doc[: m // 4], fill[: m // 4] = 0, 0  # one pair with many rows: its table serves them all
    doc[-1], fill[-1] = len(docs) - 1, len(fill_rows) - 1
    keep = rng.random((m, N_FEATURES)) < rng.random((m, 1))
    keep[1::7], keep[2::7] = True, False
    order = rng.permutation(m)
    return doc[order], fill[order], keep[order]


def pair_materialised(docs: np.ndarray, fill_rows: np.ndarray, doc: np.ndarray, fill: np.ndarray,
                      keep: np.ndarray) -> np.ndarray:
    return np.where(keep, docs[doc], fill_rows[fill])


@pytest.mark.parametrize("min_rows", [1, 3, 10**9], ids=["tables", "default", "walks"])
@pytest.mark.parametrize("params", [{}, {"use_missing": True, "zero_as_missing": True}, {"use_missing": False}],
                         ids=["nan-missing", "zero-as-missing", "no-missing"])
def test_rows_lightgbm_bit_identical(params: dict, min_rows: int, monkeypatch) -> None:
    """Each row's own (document, fill row) pair, through a table or walked directly: equal to the rows predicted."""
    monkeypatch.setattr(masked_scoring, "_TABLE_MIN_ROWS", min_rows)
    X, y = awkward_data()
    booster = lambdarank(X, y, **params)
    ensemble = TreeEnsemble.from_lightgbm(booster.dump_model())
    docs = documents(X, ensemble)[::6]
    fill_rows = np.vstack([*fills(X, ensemble), X[100:110]])
    doc, fill, keep = pair_rows(np.random.default_rng(7), docs, fill_rows)
    ours = masked_scores_rows(ensemble, docs, fill_rows, doc, fill, keep)
    rows = pair_materialised(docs, fill_rows, doc, fill, keep)
    assert ours.shape == (keep.shape[0],)
    assert np.array_equal(ours, ensemble.predict(rows))
    assert np.array_equal(ours, booster.predict(rows, raw_score=True))


def test_rows_xgboost_and_sklearn() -> None:
    """float32 inputs and XGBoost's float32 sum; scikit-learn's per-tree weights."""
    from sklearn.ensemble import RandomForestRegressor

    X, y = awkward_data(1, 600)
    rng = np.random.default_rng(8)
    models = [TreeEnsemble.from_sklearn(RandomForestRegressor(n_estimators=5, max_depth=5, random_state=0).fit(
        np.nan_to_num(X, nan=-1.0), y))]
    xgb = None
    if importlib.util.find_spec("xgboost") is not None:
        import xgboost as xgb

        booster = xgb.train({"objective": "rank:pairwise", "max_depth": 4, "eta": 0.3, "nthread": 1, "seed": 0},
                            xgb.DMatrix(X, y, qid=np.repeat(np.arange(30), 20)), 15)
        models.append(TreeEnsemble.from_xgboost(json.loads(booster.save_raw("json"))))
        assert models[-1].float32_sum
    for ensemble in models:
        docs = documents(X, ensemble)[::10]
        fill_rows = np.vstack(fills(X, ensemble))
        doc, fill, keep = pair_rows(rng, docs, fill_rows, 300)
        ours = masked_scores_rows(ensemble, docs, fill_rows, doc, fill, keep)
        rows = pair_materialised(docs, fill_rows, doc, fill, keep)
        assert np.array_equal(ours, ensemble.predict(rows))
        if ensemble.float32_sum:
            assert np.array_equal(ours, booster.predict(xgb.DMatrix(rows), output_margin=True).astype(np.float64))


def test_rows_agree_with_one_fill() -> None:
    """One fill row for every row: `masked_scores`'s scores, in the rows' order."""
    X, y = awkward_data(5, 200)
    ensemble = TreeEnsemble.from_lightgbm(lambdarank(X, y).dump_model())
    docs, fill, keep = X[:4], np.nanmean(X, axis=0), masks(np.random.default_rng(9), 10)
    doc = np.tile(np.arange(4), keep.shape[0])
    ours = masked_scores_rows(ensemble, docs, fill[None], doc, np.zeros_like(doc), np.repeat(keep, 4, axis=0))
    assert np.array_equal(ours, masked_scores(ensemble, docs, fill, keep).ravel())


def test_rows_shapes_and_errors() -> None:
    X, y = awkward_data(3, 200)
    ensemble = TreeEnsemble.from_lightgbm(lambdarank(X, y).dump_model())
    docs, fill_rows, keep = X[:3], X[10:15], np.ones((4, N_FEATURES), bool)
    doc, fill = np.array([0, 1, 2, 0]), np.array([4, 0, 1, 4])
    none = np.zeros(0, dtype=np.int64)
    assert masked_scores_rows(ensemble, docs, fill_rows, none, none, keep[:0]).shape == (0,)
    one = masked_scores_rows(ensemble, X[7], fill_rows[0], [0], [0], keep[0])  # one row, 1-D inputs
    assert np.array_equal(one, ensemble.predict(X[7:8]))
    with pytest.raises(ValueError, match="columns"):
        masked_scores_rows(ensemble, docs[:, :5], fill_rows[:, :5], doc, fill, keep[:, :5])
    with pytest.raises(ValueError, match="columns"):
        masked_scores_rows(ensemble, docs, fill_rows[:, :4], doc, fill, keep)
    with pytest.raises(ValueError, match="columns"):
        masked_scores_rows(ensemble, docs, fill_rows, doc, fill, keep[:, :4])
    with pytest.raises(ValueError, match="doc_of_row"):
        masked_scores_rows(ensemble, docs, fill_rows, doc[:3], fill, keep)
    with pytest.raises(ValueError, match="doc_of_row"):
        masked_scores_rows(ensemble, docs, fill_rows, doc.astype(float), fill, keep)
    with pytest.raises(ValueError, match="doc_of_row"):
        masked_scores_rows(ensemble, docs, fill_rows, np.array([0, 1, 3, 0]), fill, keep)
    with pytest.raises(ValueError, match="fill_of_row"):
        masked_scores_rows(ensemble, docs, fill_rows, doc, np.array([4, 0, -1, 4]), keep)
    with pytest.raises(ValueError, match="fill_of_row"):
        masked_scores_rows(ensemble, docs, fill_rows, doc, np.array([5, 0, 1, 4]), keep)
