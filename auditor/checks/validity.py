"""Validity and completeness of an explanation set (Singh et al., paper 000), with Kendall's tau-b.

validity V(E)     = τ_b(scores, scores with every feature outside E masked)    higher is better
completeness C(E) = −τ_b(scores, scores with the features of E masked)         higher is better

Masking creates ties, so tau-b (ties in either ranking shrink the denominator). Rule for an all-tied side: when
the masked ranking ties every document (e.g. E = ∅) it orders nothing, so τ := 0 (no agreement, no
disagreement); when the model's own ranking ties every document the query has nothing to explain and is left
out (callers skip queries where `has_order` is False). Queries with fewer than two documents are left out too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from auditor.models.base import CountingRanker
    from auditor.models.masking import Masker

_MAX_ELEMENTS = 20_000_000  # candidates × pairs per block, to bound memory
COMPILED_MIN_ELEMENTS = 250_000  # candidates × pairs from which the compiled form (tau_kernel) is used


def has_order(scores: np.ndarray) -> bool:
    """At least two documents with different scores: there is a ranking to explain."""
    return scores.shape[0] >= 2 and bool(np.ptp(scores) > 0)


def kendall_tau_b(reference: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    """τ_b between `reference` (n,) and each row of `candidates` (C × n), vectorised over pairs and rows."""
    candidates = np.atleast_2d(candidates)
    n = reference.shape[0]
    if n < 2:
        return np.zeros(candidates.shape[0])
    i, j = np.triu_indices(n, k=1)
    ref = np.sign(reference[i] - reference[j])
    ref_untied = np.count_nonzero(ref)
    out = np.zeros(candidates.shape[0])
    if ref_untied == 0:
        return out
    if candidates.shape[0] * len(i) >= COMPILED_MIN_ELEMENTS and np.isfinite(candidates).all() \
            and np.isfinite(reference).all():
        from auditor.checks.tau_kernel import tau_b_rows

        return tau_b_rows(np.ascontiguousarray(reference, dtype=np.float64),
                          np.ascontiguousarray(candidates, dtype=np.float64))
    step = max(1, _MAX_ELEMENTS // len(i))
    for start in range(0, candidates.shape[0], step):
        block = candidates[start:start + step]
        signs = np.sign(block[:, i] - block[:, j])
        untied = np.count_nonzero(signs, axis=1)
        numerator = signs @ ref
        with np.errstate(invalid="ignore", divide="ignore"):
            tau = numerator / np.sqrt(float(ref_untied) * untied)
        out[start:start + step] = np.where(untied > 0, tau, 0.0)
    return np.clip(out, -1.0, 1.0)


def measure_sets(model: CountingRanker, X: np.ndarray, scores: np.ndarray, masker: Masker,
                 sets: list[tuple[int, ...]]) -> tuple[np.ndarray, np.ndarray]:
    """Validity and completeness of each explanation set, from one batched call (sets and their complements)."""
    from auditor.models.masking import keep_masks

    if not sets:
        return np.zeros(0), np.zeros(0)
    n_features = X.shape[1]
    masks = np.vstack([keep_masks(sets, n_features), keep_masks(sets, n_features, complement=True)])
    masked = masker.masked_scores(model, X, masks)
    tau = kendall_tau_b(scores, masked)
    return tau[: len(sets)], -tau[len(sets):]
