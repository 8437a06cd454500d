"""Ranking quality per query: nDCG@k and average precision, with the conventions stated.

Conventions (LightGBM's, so our numbers match its `ndcg@k` metric):
- gain of grade r: 2^r − 1 ("exponential"), or r ("linear");
- discount at rank i (1-based): 1 / log2(i + 1);
- documents are sorted by score, descending; tied scores keep the file order (a stable sort, as LightGBM);
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


def _gains(labels: np.ndarray, gain: Gain) -> np.ndarray:
    return np.exp2(labels) - 1.0 if gain == "exponential" else labels.astype(np.float64)


def ndcg_at(scores: np.ndarray, labels: np.ndarray, cutoffs: list[int], *, gain: Gain = "exponential",
            all_zero: AllZero = "one") -> np.ndarray:
    """nDCG at each cut-off for one query (NaN where `all_zero='skip'` leaves the query out)."""
    gains = _gains(labels, gain)
    n = len(labels)
    discounts = 1.0 / np.log2(np.arange(2, n + 2))
    dcg = np.cumsum(gains[rank_order(scores)] * discounts)
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
    """AP with documents of grade ≥ `relevant_from` relevant; NaN when the query has no relevant document."""
    relevant = labels[rank_order(scores)] >= relevant_from
    hits = np.cumsum(relevant)
    if hits[-1] == 0:
        return float("nan")
    precision = hits / np.arange(1, len(labels) + 1)
    return float(np.sum(precision[relevant]) / hits[-1])


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
