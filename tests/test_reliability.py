"""The reliability estimate behind the confidence flags (issue 37): out of sample by construction (leave whole queries
out), its AUC and calibration measured honestly, and the constant answer when every explanation had one outcome."""

from __future__ import annotations

import numpy as np
import pytest

from auditor.checks.reliability import auc, calibration, clustered_interval, estimate


def _data(seed: int = 0, queries: int = 40, per_query: int = 5) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    groups = np.repeat(np.arange(queries), per_query)
    signal = rng.normal(size=len(groups))
    noise = rng.normal(size=len(groups))
    target = (signal + 0.5 * rng.normal(size=len(groups)) > 0).astype(int)
    return np.column_stack([signal, noise]), target, groups


def test_a_predictive_signal_gives_a_high_out_of_sample_auc_and_the_right_sign() -> None:
    signals, target, groups = _data()
    found = estimate(signals, target, groups)
    assert auc(target, found.probability) > 0.8
    assert found.coefficients[0] > 1.0 and abs(found.coefficients[1]) < 0.5  # the signal, not the noise
    low, high = clustered_interval(target, found.probability, groups, np.random.default_rng(1), auc)
    assert 0.7 < low <= auc(target, found.probability) <= high


def test_noise_alone_predicts_nothing() -> None:
    signals, target, groups = _data(seed=2)
    found = estimate(signals[:, 1:], target, groups)  # only the noise column
    low, _ = clustered_interval(target, found.probability, groups, np.random.default_rng(3), auc)
    assert low < 0.5 and auc(target, found.probability) < 0.65


def test_a_query_never_judges_itself() -> None:
    """An explanation's estimate comes from a model fitted without its query: changing that query's outcomes
    leaves its own estimates unchanged."""
    signals, target, groups = _data(seed=4)
    before = estimate(signals, target, groups).probability
    flipped = target.copy()
    flipped[groups == 0] = 1 - flipped[groups == 0]
    after = estimate(signals, flipped, groups).probability
    assert np.array_equal(before[groups == 0], after[groups == 0])
    assert not np.array_equal(before[groups != 0], after[groups != 0])  # the other folds learnt from it


def test_one_outcome_only_gives_its_rate_and_no_auc() -> None:
    signals, _, groups = _data(seed=5)
    target = np.zeros(len(groups), dtype=int)
    found = estimate(signals, target, groups)
    assert found.constant and np.all(found.probability == 0) and np.isnan(auc(target, found.probability))


def test_calibration_error_of_a_calibrated_and_of_an_overconfident_estimate() -> None:
    rng = np.random.default_rng(6)
    p = rng.random(20_000)
    target = (rng.random(20_000) < p).astype(int)
    error, points = calibration(target, p)
    assert error < 0.02 and len(points) == 10
    assert sum(n for _, _, _, n in points) == 20_000 and points[0][0] == pytest.approx(0.05)
    overconfident, _ = calibration(target, np.where(p > 0.5, 1.0, 0.0))
    assert overconfident == pytest.approx(0.25, abs=0.02)


def test_missing_signals_are_filled_not_fatal() -> None:
    signals, target, groups = _data(seed=7)
    signals[::3, 1] = np.nan  # a signal some explainers do not have (attribution mass of a set search)
    found = estimate(signals, target, groups)
    assert np.all(np.isfinite(found.probability)) and np.all(np.isfinite(found.contributions(signals)))


def test_too_few_of_one_outcome_fits_nothing() -> None:
    """One unreliable explanation in 200 can neither train nor test a model (an AUC on it would be noise)."""
    signals, _, groups = _data(seed=8)
    target = np.ones(len(groups), dtype=int)
    target[:9] = 0  # fewer than MIN_OUTCOME
    found = estimate(signals, target, groups)
    assert found.constant and np.allclose(found.probability, target.mean())
    target[:10] = 0
    assert not estimate(signals, target, groups).constant


def test_auc_is_sklearns() -> None:
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(9)
    target = rng.integers(0, 2, 300)
    p = np.round(rng.random(300), 1)  # ties
    assert auc(target, p) == pytest.approx(roc_auc_score(target, p), abs=1e-12)
