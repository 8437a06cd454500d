"""Surrogate targets made from a black box's scores, and how faithfully a surrogate ranks like the black box.

Targets (per query, so only the order inside a query is learned):
- `grades`: integer grades 0..levels−1 from the document's rank in its query, for a lambdarank surrogate:
  grade = ⌈levels · (1 − r/n)⌉ − 1, with r the number of documents of the query scored strictly higher and n the
  query's size. The top document gets levels−1; tied scores get the same grade.
- `standardised`: (s − mean_q(s)) / std_q(s), for a regression surrogate (0 where a query's scores are all equal).

Fidelity, per query with at least two documents and a non-constant black-box score:
- Kendall τ_b between the surrogate's and the black box's scores (auditor/checks/validity.py; an all-tied
  surrogate counts as τ = 0);
- nDCG@10 of the surrogate's ranking against the black box's ranking: the black box's rank-i document (i = 1..10)
  gets grade 11 − i, every other document 0, with linear gain; so 1 means the same top-10 in the same order;
- explained share (one number for the data): 1 − Σ(c_b − a·c_s)² / Σ c_b², with c the within-query centred scores
  and a the least-squares scale (scores of a surrogate and its black box need not share a unit).
"""

from __future__ import annotations

import itertools

import numpy as np

from auditor.checks.ranking import ndcg_at
from auditor.checks.validity import has_order, kendall_tau_b


def rank_grades(scores: np.ndarray, query_ptr: np.ndarray, *, levels: int = 10) -> np.ndarray:
    """Per-query integer grades from scores (module docstring)."""
    if levels < 2:
        raise ValueError(f"levels must be >= 2; got {levels}")
    out = np.zeros(scores.shape[0])
    for a, b in itertools.pairwise(query_ptr):
        s = scores[a:b]
        n = b - a
        higher = n - np.searchsorted(np.sort(s), s, side="right")  # documents scored strictly higher
        out[a:b] = np.ceil(levels * (1.0 - higher / n)) - 1
    return np.clip(out, 0, levels - 1)


def standardised(scores: np.ndarray, query_ptr: np.ndarray) -> np.ndarray:
    """Per-query z-scores (module docstring)."""
    out = np.zeros(scores.shape[0])
    for a, b in itertools.pairwise(query_ptr):
        s = scores[a:b]
        sd = s.std()
        out[a:b] = (s - s.mean()) / sd if sd > 0 else 0.0
    return out


def rank_gains(blackbox: np.ndarray, *, depth: int = 10) -> np.ndarray:
    """Grades of one query's documents from the black box's ranking: depth + 1 − rank in its top `depth`."""
    order = np.argsort(-blackbox, kind="stable")
    grades = np.zeros(blackbox.shape[0])
    top = order[:depth]
    grades[top] = depth - np.arange(len(top))
    return grades


def fidelity(surrogate: np.ndarray, blackbox: np.ndarray, query_ptr: np.ndarray, *, depth: int = 10
             ) -> dict[str, np.ndarray | float]:
    """Per-query Kendall τ_b and nDCG@depth against the black box (NaN for queries left out), explained share."""
    n_queries = len(query_ptr) - 1
    tau = np.full(n_queries, np.nan)
    ndcg = np.full(n_queries, np.nan)
    for q, (a, b) in enumerate(itertools.pairwise(query_ptr)):
        ref = blackbox[a:b]
        if not has_order(ref):
            continue
        tau[q] = kendall_tau_b(ref, surrogate[a:b][None, :])[0]
        ndcg[q] = ndcg_at(surrogate[a:b], rank_gains(ref, depth=depth), [depth], gain="linear")[0]
    return {"kendall": tau, f"ndcg@{depth}": ndcg, "explained": explained_share(surrogate, blackbox, query_ptr)}


def explained_share(surrogate: np.ndarray, blackbox: np.ndarray, query_ptr: np.ndarray) -> float:
    cs, cb = _centred(surrogate, query_ptr), _centred(blackbox, query_ptr)
    denominator = float(cb @ cb)
    if denominator == 0:
        return float("nan")
    scale = float(cs @ cb) / float(cs @ cs) if float(cs @ cs) > 0 else 0.0
    residual = cb - scale * cs
    return 1.0 - float(residual @ residual) / denominator


def _centred(scores: np.ndarray, query_ptr: np.ndarray) -> np.ndarray:
    out = scores.astype(np.float64).copy()
    for a, b in itertools.pairwise(query_ptr):
        out[a:b] -= out[a:b].mean()
    return out
