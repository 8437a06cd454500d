"""The ILMART decomposition (auditor/surrogate/decompose.py) is exact for any thresholds: features with negative
values (LightGBM's −1e-35 cut for "≤ 0"), zero-straddling features, −0.0, ±1e-35 and missing values under every
missing type (None, Zero, NaN) and both default sides. Oracle: bias + Σ effects = the model's own raw score to
1e-9 on data that includes every threshold, the values next to it, 0, −0.0 and NaN."""

from __future__ import annotations

import lightgbm as lgb
import numpy as np
import pytest

from auditor.scoring.trees import K_ZERO, MISSING_NAN, MISSING_NONE, MISSING_ZERO, TreeEnsemble, probe_rows
from auditor.surrogate.decompose import Effect, decompose, representatives

SPECIAL = np.array([0.0, -0.0, K_ZERO, -K_ZERO, 5e-36, -5e-36, np.nextafter(K_ZERO, 1.0), -np.nextafter(K_ZERO, 1.0),
                    np.nan, -1.0, 1.0, np.inf, -np.inf])


def _wide_signs(rng: np.random.Generator, n: int) -> np.ndarray:
    """Four features: normal (negative and positive), integers around 0 (many exact zeros), non-negative with a
    third exact zeros, and one with 15% missing values; every value besides the missing ones is finite."""
    X = np.column_stack([rng.normal(size=n), np.round(rng.normal(scale=1.5, size=n)), rng.exponential(size=n),
                         rng.normal(size=n)])
    X[rng.random(n) < 0.3, 2] = 0.0
    X[rng.random(n) < 0.15, 3] = np.nan
    X[rng.random(n) < 0.05, 1] = -0.0
    return X


def _target(X: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    x3 = np.nan_to_num(X[:, 3], nan=-2.0)
    return (X[:, 0] + 1.5 * (X[:, 1] < 0) - (X[:, 1] == 0) + 0.7 * (X[:, 2] == 0) + x3 + 0.8 * X[:, 0] * (X[:, 1] > 0)
            + 0.1 * rng.normal(size=len(X)))


def _probe(ensemble: TreeEnsemble, X: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The training rows, rows at / just below / just above every threshold, and rows of special values."""
    special = rng.choice(SPECIAL, size=(400, X.shape[1]))
    return np.vstack([X, probe_rows(ensemble, rng, n=600), special, np.tile(SPECIAL[:, None], (1, X.shape[1]))])


MISSING = [{}, {"zero_as_missing": True}, {"use_missing": False}]
MISSING_IDS = ["nan-missing", "zero-as-missing", "no-missing"]


@pytest.mark.parametrize("params", MISSING, ids=MISSING_IDS)
@pytest.mark.parametrize("constraints", [[[0], [1], [2], [3]], [[0, 1], [2, 3]]], ids=["mains", "pairs"])
def test_decomposition_is_the_raw_score_for_any_threshold(params, constraints):
    rng = np.random.default_rng(4)
    X = _wide_signs(rng, 3000)
    booster = lgb.train({"objective": "regression", "num_leaves": 4, "min_data_in_leaf": 5, "learning_rate": 0.3,
                         "interaction_constraints": constraints, "verbosity": -1, "num_threads": 1, "seed": 1,
                         "deterministic": True, **params}, lgb.Dataset(X, _target(X, rng)), num_boost_round=40)
    ensemble = TreeEnsemble.from_lightgbm(booster.dump_model())
    thresholds = ensemble.threshold[ensemble.feature >= 0]
    assert np.any(thresholds == -K_ZERO)  # the case of the issue: "≤ 0" on a feature with negative values
    splits = ensemble.feature >= 0
    kinds = set(ensemble.missing[splits].tolist())
    if params.get("zero_as_missing"):
        assert kinds == {MISSING_ZERO}
    elif params.get("use_missing") is False:
        assert kinds == {MISSING_NONE}
    else:
        assert MISSING_NAN in kinds
        assert set(ensemble.default_left[splits & (ensemble.missing == MISSING_NAN)].tolist()) == {False, True}
    parts = decompose(ensemble)
    probe = _probe(ensemble, X, rng)
    expected = booster.predict(probe, raw_score=True)
    assert np.max(np.abs(parts.predict(probe) - expected)) <= 1e-9
    assert (len(parts.pair_effects) > 0) == (len(constraints) == 2)


def test_decomposition_of_scikit_learn_trees_reads_float32():
    """scikit-learn compares float32(x) with float64 thresholds: bins and representatives follow that reading."""
    from sklearn.ensemble import RandomForestRegressor

    rng = np.random.default_rng(6)
    X = _wide_signs(rng, 1500)
    forest = RandomForestRegressor(n_estimators=20, max_depth=2, random_state=0).fit(X, _target(X, rng))
    ensemble = TreeEnsemble.from_sklearn(forest)
    parts = decompose(ensemble)
    probe = _probe(ensemble, X, rng)
    probe = probe[~np.isinf(probe).any(axis=1)]  # scikit-learn refuses infinite inputs
    assert np.max(np.abs(parts.predict(probe) - forest.predict(probe))) <= 1e-9


def test_representatives_stay_inside_their_bins_once_read():
    """LightGBM reads |x| <= 1e-35 as 0: the cut −1e-35 itself lies in the next bin, so it cannot stand for
    (c, −1e-35]; a bin that only holds values read as 0 elsewhere is unreachable."""
    cuts = np.array([-1.5, -K_ZERO, 0.0, K_ZERO, 2.0])
    reps = representatives(cuts)
    assert reps[0] == -1.5 and reps[-2] > 2.0 and np.isnan(reps[-1])
    assert reps[1] < -K_ZERO  # a negative value, not the cut that reads as 0
    assert reps[2] == 0.0  # (−1e-35, 0] holds exactly the values read as 0
    assert reps[4] == 2.0
    effect = Effect(features=(0,), cuts=(cuts,), values=np.arange(7.0), n_leaves=1)
    x = np.array([-2.0, -1.5, -1.0, -K_ZERO, -5e-36, -0.0, 0.0, 5e-36, K_ZERO, 1e-30, 2.0, 3.0, np.nan])
    assert effect.bin_index(0, x).tolist() == [0, 0, 1, 2, 2, 2, 2, 2, 2, 4, 4, 5, 6]
