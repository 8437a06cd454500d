"""Kendall's τ_b of many candidate rankings against one, compiled: the searches score thousands of masked rankings
of queries with hundreds of documents, where numpy's vectorised form spends its time building C × pairs arrays.

Bit-identical to `auditor.checks.validity.kendall_tau_b`'s numpy form on finite scores: the concordance sum and the
untied counts are integers (exact in any order), and τ is the same one division and square root. Loaded only
when a call is large (`validity.COMPILED_MIN_ELEMENTS`), so small audits compile nothing.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def tau_b_rows(reference: np.ndarray, candidates: np.ndarray) -> np.ndarray:  # pragma: no cover - compiled
    """τ_b of each row of `candidates` (C × n, finite) against `reference` (n, finite, not all tied), clipped to
    [−1, 1]; 0 for a row that ties every document."""
    n = reference.shape[0]
    ref_untied = 0
    for a in range(n):
        for b in range(a + 1, n):
            if reference[a] != reference[b]:
                ref_untied += 1
    out = np.zeros(candidates.shape[0])
    for c in range(candidates.shape[0]):
        row = candidates[c]
        numerator = 0
        untied = 0
        for a in range(n):
            ra, xa = reference[a], row[a]
            for b in range(a + 1, n):
                d = xa - row[b]
                if d != 0.0:
                    untied += 1
                    r = ra - reference[b]
                    if r > 0.0:
                        numerator += 1 if d > 0.0 else -1
                    elif r < 0.0:
                        numerator += -1 if d > 0.0 else 1
        if untied > 0:
            tau = numerator / math.sqrt(float(ref_untied) * untied)
            out[c] = min(1.0, max(-1.0, tau))
    return out
