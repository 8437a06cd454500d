"""Accuracy for groups of persons in a ranking: pairwise accuracy conditioned on the group of the document that
should come first (Beutel et al., KDD 2019, "Fairness in Recommendation Ranking through Pairwise Comparisons": the
probability that a more relevant item is ranked above a less relevant one, given the more relevant item's group).

For a group g: over every pair (i, j) of documents of one query with label(i) > label(j) and i in g, the share the
model orders correctly — score(i) > score(j), a tie counting one half. Pairs are pooled over queries (a query with
more pairs weighs more, as in the paper); the 95% interval resamples whole queries, recomputing every group's
accuracy and the gap (the highest group's accuracy minus the lowest's) in each draw. Groups with fewer than
`min_pairs` pairs get no accuracy. Pure functions of arrays: no files, no spec.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

CHUNK = 200  # bootstrap draws at once
ROWS = 1_000  # documents of one query compared with all the others at once (a 10,000-document query: 80 MB, not 800)


@dataclass(frozen=True)
class GroupAccuracy:
    """Per group: correctly ordered pairs, pairs, accuracy (NaN below `min_pairs`) and its interval; the gap between
    the highest and the lowest accuracy with its interval (NaN with fewer than two groups measured)."""

    correct: np.ndarray
    pairs: np.ndarray
    accuracy: np.ndarray
    low: np.ndarray
    high: np.ndarray
    gap: float
    gap_low: float
    gap_high: float


def pair_counts(scores: np.ndarray, labels: np.ndarray, query_ptr: np.ndarray, codes: np.ndarray,
                n_groups: int) -> tuple[np.ndarray, np.ndarray]:
    """(correct, pairs), each queries × groups: per query, the pairs led by a document of each group (its label
    above the other's) and how many of them the scores order correctly (ties: one half)."""
    n_queries = len(query_ptr) - 1
    correct = np.zeros((n_queries, n_groups))
    pairs = np.zeros((n_queries, n_groups))
    for q in range(n_queries):
        lo, hi = query_ptr[q], query_ptr[q + 1]
        group = codes[lo:hi]
        if hi - lo < 2 or not np.any(group >= 0):
            continue
        y, s = labels[lo:hi], scores[lo:hi]
        led, won = np.empty(hi - lo), np.empty(hi - lo)
        for a in range(0, hi - lo, ROWS):
            above = y[a:a + ROWS, None] > y[None, :]  # row document should come first
            right = np.where(s[a:a + ROWS, None] > s[None, :], 1.0,
                             np.where(s[a:a + ROWS, None] == s[None, :], 0.5, 0.0))
            led[a:a + ROWS] = above.sum(axis=1)
            won[a:a + ROWS] = (right * above).sum(axis=1)
        known = group >= 0
        np.add.at(pairs[q], group[known], led[known])
        np.add.at(correct[q], group[known], won[known])
    return correct, pairs


def group_accuracy(correct: np.ndarray, pairs: np.ndarray, rng: np.random.Generator, *, min_pairs: int = 30,
                   large: np.ndarray | None = None, n_resamples: int = 2000) -> GroupAccuracy:
    """Each group's pooled pairwise accuracy and the gap, with 95% intervals by resampling queries; `large` marks
    the groups big enough to be measured (default: all)."""
    total_correct, total_pairs = correct.sum(axis=0), pairs.sum(axis=0)
    measured = total_pairs >= max(min_pairs, 1)
    if large is not None:
        measured &= large
    with np.errstate(invalid="ignore", divide="ignore"):
        accuracy = np.where(measured, total_correct / np.where(total_pairs > 0, total_pairs, 1), np.nan)
    n_queries = correct.shape[0]
    draws_acc = []
    for start in range(0, n_resamples, CHUNK):
        size = min(CHUNK, n_resamples - start)
        weights = rng.multinomial(n_queries, np.full(n_queries, 1 / n_queries), size=size).astype(float)
        drawn_pairs = weights @ pairs
        with np.errstate(invalid="ignore", divide="ignore"):
            draws_acc.append(np.where(drawn_pairs > 0, (weights @ correct) / np.where(drawn_pairs > 0,
                                                                                       drawn_pairs, 1), np.nan))
    drawn = np.vstack(draws_acc) if draws_acc else np.empty((0, len(accuracy)))
    low, high = np.full(len(accuracy), np.nan), np.full(len(accuracy), np.nan)
    for g in np.flatnonzero(measured):
        column = drawn[:, g][np.isfinite(drawn[:, g])]
        if column.size >= n_resamples / 2:
            low[g], high[g] = np.quantile(column, [0.025, 0.975])
    gap = gap_low = gap_high = float("nan")
    if measured.sum() >= 2:
        values = accuracy[measured]
        gap = float(values.max() - values.min())
        chosen = drawn[:, measured]
        ok = np.all(np.isfinite(chosen), axis=1)
        if ok.sum() >= n_resamples / 2:
            spread = chosen[ok].max(axis=1) - chosen[ok].min(axis=1)
            gap_low, gap_high = (float(v) for v in np.quantile(spread, [0.025, 0.975]))
    return GroupAccuracy(correct=total_correct, pairs=total_pairs, accuracy=accuracy, low=low, high=high, gap=gap,
                         gap_low=gap_low, gap_high=gap_high)
