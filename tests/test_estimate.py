"""The one query bootstrap (`checks.estimate`): each of its forms gives exactly the numbers of the bootstrap it
replaced (written out here as they were), and an estimate becomes metric names in one way."""

from __future__ import annotations

import numpy as np
import pytest

from auditor.checks.estimate import Estimate, estimate, metric_names
from auditor.checks.exposure import ratio


def _old_interval(values, rng, n_resamples=2000, level=0.95):  # checks.ranking.bootstrap_interval, before
    values = values[np.isfinite(values)]
    if len(values) < 2:
        return (float("nan"), float("nan"))
    means = values[rng.integers(0, len(values), size=(n_resamples, len(values)))].mean(axis=1)
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(means, [tail, 1.0 - tail])
    return float(low), float(high)


def _old_clustered(values, owner, n_queries, rng, n_resamples=2000):  # decision_path_accuracy.query_bootstrap
    finite = np.isfinite(values)
    if finite.sum() < 2 or n_queries < 2:
        return float("nan"), float("nan")
    sums = np.bincount(owner[finite], weights=values[finite], minlength=n_queries)
    counts = np.bincount(owner[finite], minlength=n_queries).astype(np.float64)
    take = rng.integers(0, n_queries, size=(n_resamples, n_queries))
    with np.errstate(invalid="ignore", divide="ignore"):
        means = sums[take].sum(axis=1) / counts[take].sum(axis=1)
    low, high = np.nanquantile(means, [0.025, 0.975])
    return float(low), float(high)


def _old_of_means(values, statistic, rng, n_resamples=2000, level=0.95):  # checks.exposure.bootstrap_of_means
    value = float(statistic(values.mean(axis=0)[None, :])[0]) if len(values) else float("nan")
    if len(values) < 2:
        return value, float("nan"), float("nan")
    means = values[rng.integers(0, len(values), size=(n_resamples, len(values)))].mean(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        draws = statistic(means)
    draws = draws[np.isfinite(draws)]
    if draws.size < n_resamples // 2:
        return value, float("nan"), float("nan")
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(draws, [tail, 1.0 - tail])
    return value, float(low), float(high)


@pytest.mark.parametrize("n", [0, 1, 2, 7, 150])
def test_each_form_reproduces_the_bootstrap_it_replaced_bit_for_bit(n: int) -> None:
    data = np.random.default_rng(n)
    values = data.normal(size=n)
    if n > 2:
        values[::5] = np.nan
    found = estimate(values, np.random.default_rng(4), n_resamples=300)
    assert (found.low, found.high) == pytest.approx(_old_interval(values, np.random.default_rng(4), 300), nan_ok=True,
                                                    abs=0, rel=0)
    docs = np.repeat(values, 3) + data.normal(size=3 * n)
    owner = np.repeat(np.arange(n), 3)
    clustered = estimate(docs, np.random.default_rng(5), clusters=owner, n_clusters=n, quantiles=(0.025, 0.975))
    assert (clustered.low, clustered.high) == pytest.approx(_old_clustered(docs, owner, n, np.random.default_rng(5)),
                                                            nan_ok=True, abs=0, rel=0)
    pairs = np.abs(data.normal(size=(n, 2)))
    of_means = estimate(pairs, np.random.default_rng(6), statistic=ratio)
    assert (of_means.mean, of_means.low, of_means.high) == pytest.approx(
        _old_of_means(pairs, ratio, np.random.default_rng(6)), nan_ok=True, abs=0, rel=0)


def test_an_estimate_becomes_metric_names_in_one_way() -> None:
    found = Estimate(0.5, 0.4, 0.6, 10)
    assert found.metrics("ranking_quality.ndcg@10") == {"ranking_quality.ndcg@10.mean": 0.5,
                                                        "ranking_quality.ndcg@10.ci95_low": 0.4,
                                                        "ranking_quality.ndcg@10.ci95_high": 0.6}
    assert found.metrics("x.share", mean="") == {"x.share": 0.5, "x.share.ci95_low": 0.4, "x.share.ci95_high": 0.6}
    assert metric_names("x.share", mean="") == tuple(found.metrics("x.share", mean=""))
