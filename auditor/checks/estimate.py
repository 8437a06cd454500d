"""Estimates over queries: a value, its 95% percentile-bootstrap interval and the values it was made from, with ONE
bootstrap that resamples whole queries (the sampling unit: the documents and explanations of one query are not
independent), and the one place where an estimate becomes metric names.

Three forms of the same resampling, each as its evidence has always computed it (so no reported number moved when
they were brought together here):

- per-query values (the default): the mean over queries; non-finite values are left out first;
- per-document values with `clusters` (the query of each document): the mean over documents of the resampled
  queries, i.e. a ratio of sums, so a query weighs by its documents;
- `statistic` of column means: `values` is (queries × m) and the estimate is a function of the m means (a ratio
  of two means, a ratio of ratios); draws where it is undefined are dropped, and fewer than half defined draws give
  no interval.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypedDict, Unpack

import numpy as np

from auditor.core import metric_names as convention

N_RESAMPLES = 2000
LEVEL = 0.95


@dataclass(frozen=True)
class Estimate:
    """A mean (or a statistic of means) over queries with its percentile-bootstrap interval. `values` are the finite
    values it was made from (one a query, or one a document with clusters) and `n` their count."""

    mean: float
    low: float
    high: float
    n: int
    values: np.ndarray = field(default_factory=lambda: np.empty(0), repr=False, compare=False)

    def metrics(self, name: str, *, mean: str = "mean") -> dict[str, float]:
        """The metric names of this estimate: `<name>.<mean>` (`<name>` itself when `mean` is ""), beside it
        `<name>.ci95_low` and `<name>.ci95_high` — what rules judge on (docs/policies.md)."""
        value, low, high = convention.names(name, mean=mean)
        return {value: self.mean, low: self.low, high: self.high}


def metric_names(name: str, *, mean: str = "mean") -> tuple[str, str, str]:
    """The names `Estimate.metrics(name, mean=mean)` writes (for the names a plugin declares)."""
    return convention.names(name, mean=mean)


def estimate(values: np.ndarray, rng: np.random.Generator, *, clusters: np.ndarray | None = None,
             n_clusters: int | None = None, statistic: Callable[[np.ndarray], np.ndarray] | None = None,
             n_resamples: int = N_RESAMPLES, level: float = LEVEL,
             quantiles: tuple[float, float] | None = None) -> Estimate:
    """The estimate of `values` over queries with a query-resampling percentile bootstrap (module docstring for
    the three forms). `quantiles` overrides the percentile points `((1 − level)/2, 1 − (1 − level)/2)`. Fewer than
    two queries (or values): the value and no interval (NaN), drawing nothing from `rng`."""
    values = np.asarray(values, dtype=np.float64)
    tail = (1.0 - level) / 2.0
    points = list(quantiles) if quantiles is not None else [tail, 1.0 - tail]
    if statistic is not None:
        return _of_means(values, statistic, rng, n_resamples, points)
    finite = np.isfinite(values)
    kept = values[finite]
    centre = float(kept.mean()) if kept.size else float("nan")
    if clusters is not None:
        return _clustered(values, finite, np.asarray(clusters), int(n_clusters or 0), rng, n_resamples, points,
                          centre)
    if len(kept) < 2:
        return Estimate(centre, float("nan"), float("nan"), int(kept.size), kept)
    means = kept[rng.integers(0, len(kept), size=(n_resamples, len(kept)))].mean(axis=1)
    low, high = np.quantile(means, points)
    return Estimate(centre, float(low), float(high), int(kept.size), kept)


class EstimateOptions(TypedDict, total=False):
    """`estimate`'s keyword arguments."""

    clusters: np.ndarray | None
    n_clusters: int | None
    statistic: Callable[[np.ndarray], np.ndarray] | None
    n_resamples: int
    level: float
    quantiles: tuple[float, float] | None


def interval(values: np.ndarray, rng: np.random.Generator, **options: Unpack[EstimateOptions]) -> tuple[float, float]:
    """`estimate(values, rng, **options)`'s interval only."""
    found = estimate(values, rng, **options)
    return found.low, found.high


def _clustered(values: np.ndarray, finite: np.ndarray, owner: np.ndarray, n_queries: int,
               rng: np.random.Generator, n_resamples: int, points: list[float], centre: float) -> Estimate:
    """Mean over documents, resampling whole queries: per resample, the documents' sum over the drawn queries
    divided by their count (a resample of queries without a finite value gives NaN, left out)."""
    kept = values[finite]
    if finite.sum() < 2 or n_queries < 2:
        return Estimate(centre, float("nan"), float("nan"), int(kept.size), kept)
    sums = np.bincount(owner[finite], weights=kept, minlength=n_queries)
    counts = np.bincount(owner[finite], minlength=n_queries).astype(np.float64)
    take = rng.integers(0, n_queries, size=(n_resamples, n_queries))
    with np.errstate(invalid="ignore", divide="ignore"):
        means = sums[take].sum(axis=1) / counts[take].sum(axis=1)
    low, high = np.nanquantile(means, points)
    return Estimate(centre, float(low), float(high), int(kept.size), kept)


def _of_means(values: np.ndarray, statistic: Callable[[np.ndarray], np.ndarray], rng: np.random.Generator,
              n_resamples: int, points: list[float]) -> Estimate:
    """A statistic of column means, resampling whole rows (queries); the rows are kept as they are (NaN rows make
    the statistic undefined in the draws that hold them)."""
    value = float(statistic(values.mean(axis=0)[None, :])[0]) if len(values) else float("nan")
    if len(values) < 2:
        return Estimate(value, float("nan"), float("nan"), len(values), values)
    means = values[rng.integers(0, len(values), size=(n_resamples, len(values)))].mean(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        draws = statistic(means)
    draws = draws[np.isfinite(draws)]
    if draws.size < n_resamples // 2:
        return Estimate(value, float("nan"), float("nan"), len(values), values)
    low, high = np.quantile(draws, points)
    return Estimate(value, float(low), float(high), len(values), values)
