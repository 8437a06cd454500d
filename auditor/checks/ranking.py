"""Ranking quality per query: nDCG@k and average precision, with the conventions stated.

Conventions (LightGBM's, so our numbers match its `ndcg@k` metric):
- gain of grade r: 2^r − 1 ("exponential"), or r ("linear");
- discount at rank i (1-based): 1 / log2(i + 1);
- documents are sorted by score, descending; documents with tied scores share their positions: a metric is its
  expected value over every order of the tied documents (McSherry & Najork 2008), so the file's order never decides
  it (LightGBM keeps the file order; without ties the two agree);
- a query whose labels are all zero has no ideal DCG: it counts as 1 ("one", LightGBM), 0 ("zero"), or is left
  out of the mean ("skip");
- k larger than the query: the cut-off is the query's length.
"""

from __future__ import annotations

import itertools
from typing import Literal

import numpy as np

from auditor.checks.estimate import interval

Gain = Literal["exponential", "linear"]
AllZero = Literal["one", "zero", "skip"]


def rank_order(scores: np.ndarray) -> np.ndarray:
    """Indices from best to worst score; ties keep input order."""
    return np.argsort(-scores, kind="stable")


def tie_groups(sorted_scores: np.ndarray) -> np.ndarray:
    """Start index of each run of equal scores in a descending array, with its end appended."""
    n = len(sorted_scores)
    starts = np.flatnonzero(np.r_[True, sorted_scores[1:] != sorted_scores[:-1]]) if n else np.zeros(0, int)
    bounds: np.ndarray = np.r_[starts, n]
    return bounds


def expected_in_ties(values: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """`values` in rank order, each replaced by the mean over its tie group: at a position held by tied documents,
    the expected value when their order is drawn uniformly."""
    order = rank_order(scores)
    ranked: np.ndarray = values[order].astype(np.float64)
    bounds = tie_groups(scores[order])
    if len(bounds) - 1 == len(ranked):  # no ties
        return ranked
    sums = np.add.reduceat(ranked, bounds[:-1]) if len(ranked) else ranked
    sizes = np.diff(bounds)
    return np.repeat(sums / sizes, sizes)


def tied_share(scores: np.ndarray) -> float:
    """Share of documents whose score equals another document's in the query (0: a strict order)."""
    if len(scores) < 2:
        return 0.0
    sizes = np.diff(tie_groups(np.sort(scores)[::-1]))
    return float(np.sum(sizes[sizes > 1]) / len(scores))


def _gains(labels: np.ndarray, gain: Gain) -> np.ndarray:
    return np.exp2(labels) - 1.0 if gain == "exponential" else labels.astype(np.float64)


def ndcg_at(scores: np.ndarray, labels: np.ndarray, cutoffs: list[int], *, gain: Gain = "exponential",
            all_zero: AllZero = "one") -> np.ndarray:
    """nDCG at each cut-off for one query (NaN where `all_zero='skip'` leaves the query out); tie-aware: the
    expected DCG over the orders of tied documents (by linearity, each tied position gets its group's mean gain)."""
    gains = _gains(labels, gain)
    n = len(labels)
    discounts = 1.0 / np.log2(np.arange(2, n + 2))
    dcg = np.cumsum(expected_in_ties(gains, scores) * discounts)
    ideal = np.cumsum(np.sort(gains)[::-1] * discounts)
    out = np.empty(len(cutoffs))
    for j, k in enumerate(cutoffs):
        kk = min(k, n) - 1
        if ideal[kk] <= 0:
            out[j] = {"one": 1.0, "zero": 0.0, "skip": np.nan}[all_zero]
        else:
            out[j] = dcg[kk] / ideal[kk]
    return out


def average_precision(scores: np.ndarray, labels: np.ndarray, *, relevant_from: int = 1) -> float:
    """AP with documents of grade ≥ `relevant_from` relevant; NaN when the query has no relevant document.
    Tie-aware (McSherry & Najork 2008): the expected AP over the orders of tied documents. In a tie group of n
    documents, r of them relevant, after `before` documents of which `hits` relevant, position i is relevant with
    probability r/n and then has 1 + (i−1)(r−1)/(n−1) relevant documents of the group at or above it."""
    order = rank_order(scores)
    relevant = (labels[order] >= relevant_from).astype(np.float64)
    total: float = relevant.sum()
    if total == 0:
        return float("nan")
    bounds = tie_groups(scores[order])
    value, hits = 0.0, 0.0
    for start, end in itertools.pairwise(bounds):
        n, r = end - start, relevant[start:end].sum()
        if r:
            i = np.arange(1, n + 1)
            above = hits + 1 + (i - 1) * ((r - 1) / (n - 1) if n > 1 else 0.0)
            value += float(np.sum((r / n) * above / (start + i)))
        hits += r
    return value / total


def per_query_ndcg(scores: np.ndarray, labels: np.ndarray, query_ptr: np.ndarray, cutoffs: list[int], *,
                   gain: Gain = "exponential", all_zero: AllZero = "one") -> np.ndarray:
    """(n_queries × len(cutoffs)) nDCG; the dispatcher over queries."""
    return np.array([ndcg_at(scores[a:b], labels[a:b], cutoffs, gain=gain, all_zero=all_zero)
                     for a, b in itertools.pairwise(query_ptr)]).reshape(-1, len(cutoffs))


def per_query_ap(scores: np.ndarray, labels: np.ndarray, query_ptr: np.ndarray, *, relevant_from: int = 1
                 ) -> np.ndarray:
    return np.array([average_precision(scores[a:b], labels[a:b], relevant_from=relevant_from)
                     for a, b in itertools.pairwise(query_ptr)])


def bootstrap_interval(values: np.ndarray, rng: np.random.Generator, *, n_resamples: int = 2000,
                       level: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean over queries (queries are the sampling unit): the interval of
    `checks.estimate.estimate`, which evidence uses directly (kept for callers that want the interval only)."""
    return interval(values, rng, n_resamples=n_resamples, level=level)


def within_query_correlation(x: np.ndarray, y: np.ndarray, query_ptr: np.ndarray) -> np.ndarray:
    """Pearson's correlation of x and y inside each query (documents whose x is not finite left out): one value a
    query, NaN where the query has fewer than two such documents or x or y does not vary in it. Vectorised over
    queries (sums by query)."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    ptr = np.asarray(query_ptr, dtype=np.int64)
    if len(ptr) < 2:
        return np.empty(0)
    keep = np.isfinite(x) & np.isfinite(y)
    weight = keep.astype(np.float64)
    x, y = np.where(keep, x, 0.0), np.where(keep, y, 0.0)
    owner = np.repeat(np.arange(len(ptr) - 1), np.diff(ptr))

    def by_query(values: np.ndarray) -> np.ndarray:
        return np.bincount(owner, weights=values, minlength=len(ptr) - 1)

    n = by_query(weight)
    with np.errstate(invalid="ignore", divide="ignore"):
        x_mean, y_mean = by_query(x) / n, by_query(y) / n
        dx = np.where(keep, x - x_mean[owner], 0.0)  # centred first: no cancellation between large sums
        dy = np.where(keep, y - y_mean[owner], 0.0)
        sxx, syy, sxy = by_query(dx * dx), by_query(dy * dy), by_query(dx * dy)
        # a column that does not vary, up to rounding (its spread below 1e-12 of its size)
        flat = (n < 2) | (sxx <= 1e-24 * by_query(x * x)) | (syy <= 1e-24 * by_query(y * y)) | (sxx == 0) | (syy == 0)
        out: np.ndarray = np.where(flat, np.nan, sxy / np.sqrt(sxx * syy))
    clipped: np.ndarray = np.clip(out, -1.0, 1.0)
    return clipped
