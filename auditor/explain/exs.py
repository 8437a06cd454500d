"""EXS (Singh and Anand; evaluated in paper 001, section 3.3): a weighted linear SVR surrogate of a document's
standing in its query, adapted to tabular learning-to-rank data as RESEARCH.md describes.

Why this shape: EXS explains a label RELATIVE to the query's documents (its score against the top document, or
whether / where it would enter the top-k) rather than the raw score. It uses the same LIME-tabular sampler and
kernel as LIRME (`perturb.py`; RESEARCH.md replaces the paper's "set random features to their mean" sampler with
it, so the two methods differ only in the surrogate and the label), scores all samples of all requested
documents in ONE model call, and fits per document, on the standardised samples weighted by the kernel, the linear
SVR of scikit-learn's `LinearSVR(epsilon=0, C)` (intercept penalised, as liblinear does). The fit is solved
EXACTLY by `svr.py`, because liblinear stops at a tolerance (tol 1e-4) short of the optimum and costs more a fit;
liblinear remains the fallback when the exact L1 finish cannot be certified (marked per document in
`Attributions.fallback`). libsvm's `SVR(kernel="linear")` solves nearly the same problem (unpenalised intercept)
but, as a kernel solver, far more slowly.

Labels for a sample d′ of document d (`label=`):
- "score": 1 − (s_top − s(d′))/s_top, s_top the best score among the query's documents. LambdaMART scores are
  often negative, so first every score is shifted: s ← s − m + δ, m the minimum over the query's scores and the
  scores of all samples drawn in this call, δ = 1e-6 + 1e-3·(range of those scores) > 0, so s_top > 0. The
  paper's y′ = (s_max − s′)/s_max equals 1 − label: the same fit up to the sign of the coefficients (we keep
  "higher label = better placed", like the other modes). Since the label is s(d′)/s_top after the shift, the
  shift only scales the coefficients; one shift per call keeps the documents of one call on one scale.
- "topk": 1 if s(d′) ≥ the score of the k-th ranked document of the query (the last one if the query has fewer
  than k documents), else 0.
- "rank": 1 − r/k if d′ would enter the top-k at 0-based rank r among the query's OTHER documents (r = how many
  of them score strictly higher), else 0.
If a document's labels are all equal the surrogate is undefined: its attributions are zeros.

Loss: `loss="epsilon_insensitive"` (default) is the standard SVR of the paper (L1 loss; with epsilon 0 it is a
weighted median regression). On the 0/1 "topk" and graded "rank" labels it is often DEGENERATE: when the
kernel-weighted share of positive samples is well below (or above) one half, the constant 0 (or 1) is the optimal
fit and the coefficients come out as solver noise (~1e-12). Such fits are reported as zeros and marked in
`Attributions.degenerate`, so callers can see how many documents had no explanation.
`loss="squared_epsilon_insensitive"` (an L2-loss linear SVR, close to a ridge fit) does not degenerate; it is
offered, not the default.

Attributions are the SVR coefficients per background standard deviation, like LIRME's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np

from auditor.explain.base import Attributions, QueryView
from auditor.explain.perturb import (
    Perturbed,
    map_blocks,
    sample_query,
    shared_samplers,
    single_threaded_blas,
)
from auditor.explain.svr import l1_svr, l2_svr
from auditor.models.base import CountingRanker
from auditor.models.masking import Masker

Label = Literal["score", "topk", "rank"]
Loss = Literal["epsilon_insensitive", "squared_epsilon_insensitive"]

# Largest |coefficient| below which a fit counts as the constant function (labels are O(1), features standardised).
NULL_FIT = 1e-8


def exs_labels(sample_scores: np.ndarray, query_scores: np.ndarray, doc: int, label: Label, top_k: int,
               shift_min: float | None = None, shift_range: float | None = None) -> np.ndarray:
    """EXS labels of the samples of document `doc` (see the module doc). For "score", `shift_min` and
    `shift_range` give the per-call shift (default: from these samples and the query's scores)."""
    s = np.asarray(sample_scores, dtype=np.float64)
    q = np.asarray(query_scores, dtype=np.float64)
    if label == "score":
        if shift_min is None or shift_range is None:
            both = np.concatenate([s, q])
            shift_min, shift_range = float(both.min()), float(np.ptp(both))
        delta = 1e-6 + 1e-3 * shift_range
        top = q.max() - shift_min + delta
        labels: np.ndarray = 1.0 - (top - (s - shift_min + delta)) / top
        return labels
    if label == "topk":
        threshold: float = np.sort(q)[::-1][min(top_k, q.size) - 1]
        return (s >= threshold).astype(np.float64)
    if label == "rank":
        others = np.sort(np.delete(q, doc))
        higher = others.size - np.searchsorted(others, s, side="right")  # others scoring strictly higher
        return np.where(higher < top_k, 1.0 - higher / top_k, 0.0)
    raise ValueError(f"unknown EXS label {label!r}")


class Exs:
    """Weighted linear SVR surrogate on query-relative labels; attributions are coefficients per std."""

    name = "exs"

    def __init__(self, n_samples: int = 2000, label: Label = "score", top_k: int = 5, C: float = 1.0,
                 loss: Loss = "epsilon_insensitive", max_iter: int = 20_000, *, shared_samples: bool = False) -> None:
        if n_samples < 2:
            raise ValueError("n_samples must be at least 2")
        if label not in ("score", "topk", "rank"):
            raise ValueError(f"label must be 'score', 'topk' or 'rank', not {label!r}")
        if top_k < 1:
            raise ValueError("top_k must be at least 1")
        if loss not in ("epsilon_insensitive", "squared_epsilon_insensitive"):
            raise ValueError(f"loss must be 'epsilon_insensitive' or 'squared_epsilon_insensitive', not {loss!r}")
        self.n_samples = n_samples
        self.shared_samples = shared_samples
        self.label: Label = label
        self.top_k = top_k
        self.C = C
        self.loss: Loss = loss
        self.max_iter = max_iter

    def attribute(self, model: CountingRanker, query: QueryView, docs: np.ndarray, masker: Masker,
                  rng: np.random.Generator) -> Attributions:
        """(len(docs) × F) SVR coefficients per std, with the documents whose surrogate was constant (zeros) and
        those the exact L1 solver left to liblinear. `masker` is unused: EXS perturbs with background samples."""
        drawn = sample_query(model, shared_samplers(), query, docs, self.n_samples, rng, shared=self.shared_samples)
        with single_threaded_blas():  # tiny fits: BLAS threads only add overhead (see lirme.py)
            return self._fit_query(drawn, query)

    def attribute_many(self, model: CountingRanker, queries: Sequence[QueryView], docs: Sequence[np.ndarray],
                       masker: Masker, rngs: Sequence[np.random.Generator]) -> list[Attributions]:
        """`attribute` for many queries, each with its own generator: the same results, bit for bit, as one
        `attribute` call per query, but the samples of a block of queries are scored in ONE model call."""
        with single_threaded_blas():  # set once for all worker threads (the limit is process-wide)
            return map_blocks(model, shared_samplers(), queries, docs, self.n_samples, rngs,
                              lambda drawn: self._fit_query(drawn.perturbed(self.n_samples), drawn.query),
                              shared=self.shared_samples)

    def _fit_query(self, drawn: Perturbed | None, query: QueryView) -> Attributions:
        """The query's attributions, with its documents that were degenerate / left to liblinear."""
        if drawn is None:
            none = np.zeros(0, dtype=bool)
            return Attributions(values=np.zeros((0, query.n_features)), degenerate=none, fallback=none)
        out = np.zeros((drawn.docs.size, query.n_features))
        both = np.concatenate([drawn.scores.reshape(-1), query.scores])
        shift_min, shift_range = float(both.min()), float(np.ptp(both))
        degenerate = np.zeros(drawn.docs.size, dtype=bool)
        fallback = np.zeros(drawn.docs.size, dtype=bool)
        for i, d in enumerate(drawn.docs):
            y = exs_labels(drawn.scores[i], query.scores, int(d), self.label, self.top_k, shift_min, shift_range)
            coef = np.zeros(query.n_features)
            if np.ptp(y) > 0:
                coef, fallback[i] = self._fit(drawn.Z[i], y, drawn.weights[i])
            if np.abs(coef).max() < NULL_FIT:
                degenerate[i] = True
                coef = np.zeros(query.n_features)
            out[i] = coef
        return Attributions(values=out, degenerate=degenerate, fallback=fallback)

    def _fit(self, Z: np.ndarray, y: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, bool]:
        """The SVR's exact minimiser (`svr.py`), and whether liblinear had to be used (the L1 solver's exact
        finish failed)."""
        c = self.C * weights
        start = l2_svr(Z, y, c)
        if self.loss == "squared_epsilon_insensitive":
            return start[:-1], False
        coef, ok = l1_svr(Z, y, c, start)
        if ok:
            return coef[:-1], False
        return liblinear_svr(Z, y, weights, self.C, self.loss, self.max_iter), True


def liblinear_svr(Z: np.ndarray, y: np.ndarray, weights: np.ndarray, C: float, loss: Loss,
                  max_iter: int) -> np.ndarray:
    """scikit-learn's LinearSVR (liblinear, tol 1e-4): the reference the exact solvers are tested against."""
    from sklearn.svm import LinearSVR  # the rare fallback: workers need not import scikit-learn up front

    # The L1 loss is only solvable in the dual; the L2 loss is faster in the primal (n_samples >> F).
    surrogate = LinearSVR(epsilon=0.0, C=C, loss=loss, dual=loss == "epsilon_insensitive", random_state=0,
                          max_iter=max_iter)
    surrogate.fit(Z, y, sample_weight=weights)
    return np.asarray(surrogate.coef_, dtype=np.float64).reshape(-1)
