"""How far one document moves in its query's ranking when only its own score changes.

Pure functions of arrays: no files, no spec. Ranks are 0-based positions (0 = top); tied scores keep file order
(a stable sort), as in `checks.ranking`.
"""

from __future__ import annotations

import itertools

import numpy as np


def rank_among_others(scores: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    """Position each document d of one query would take if its score were `candidates[..., d]` and every other
    document kept its score in `scores`: #{j ≠ d: s_j > c} + #{j < d: s_j = c} (file order breaks ties).

    `candidates` is (..., n); the result has its shape. With `candidates = scores` this is the ranking's own
    position of each document."""
    scores = np.asarray(scores, dtype=np.float64)
    candidates = np.asarray(candidates, dtype=np.float64)
    n = scores.shape[0]
    others = scores[None, :]  # j along the last axis
    c = candidates[..., :, None]  # d along the second-to-last axis
    above = others > c
    tied_before = (others == c) & (np.arange(n)[None, :] < np.arange(n)[:, None])
    not_self = ~np.eye(n, dtype=bool)
    ranks: np.ndarray = np.sum((above | tied_before) & not_self, axis=-1)
    return ranks


def top_k_changed(before: np.ndarray, after: np.ndarray, k: int) -> bool:
    """Whether the set of the top-k documents differs between two score vectors of one query."""
    k = min(k, len(before))
    first = set(np.argsort(-before, kind="stable")[:k].tolist())
    second = set(np.argsort(-after, kind="stable")[:k].tolist())
    return first != second


def per_query_influence(scores: np.ndarray, masked: np.ndarray, swept: np.ndarray, query_ptr: np.ndarray, *,
                        k: int) -> dict[str, np.ndarray]:
    """Per-query measures of one parameter's influence on the ranking.

    `masked` (n,) are the documents' scores with the parameter masked, `swept` (m × n) their scores with the
    parameter set to each of m values in increasing order. Per document d: the mask shift g = rank(masked) −
    rank(actual) (positions the actual value is worth, > 0 when it lifts d), the sweep gain = rank at the lowest
    value − rank at the highest (positions gained by moving the parameter from its lowest to its highest value)
    and the sweep range (highest − lowest position over the sweep). Each is averaged over the query's documents;
    `max_shift` keeps the query's worst document; `topk_changed` is 1 when masking the parameter for every
    document changes the top-k set. Queries of one document get NaN."""
    out: dict[str, list[float]] = {key: [] for key in (
        "rank_shift", "max_shift", "sweep_gain", "sweep_range", "max_range", "topk_changed", "affected")}
    for a, b in itertools.pairwise(query_ptr):
        if b - a < 2:
            for values in out.values():
                values.append(np.nan)
            continue
        s = scores[a:b]
        own = rank_among_others(s, s)
        shift = rank_among_others(s, masked[a:b]) - own
        ranks = rank_among_others(s, swept[:, a:b])  # (m × n)
        span = ranks.max(axis=0) - ranks.min(axis=0)
        out["rank_shift"].append(np.abs(shift).mean())
        out["max_shift"].append(np.abs(shift).max())
        out["sweep_gain"].append((ranks[0] - ranks[-1]).mean())
        out["sweep_range"].append(span.mean())
        out["max_range"].append(span.max())
        out["topk_changed"].append(float(top_k_changed(s, masked[a:b], k)))
        out["affected"].append(np.mean((shift != 0) | (span > 0)))
    return {key: np.asarray(values, dtype=np.float64) for key, values in out.items()}
