"""How a feature is "removed" from a document: replaced by a background statistic, or by background rows.

Validity, completeness and the searches all ask "what does the model say without these features?". The answer
depends on what stands in for the removed values, so it is one object used everywhere, named in the spec:
- `mean` (default, as in the reference code of Singh et al.), `median`, `zero`: one replacement vector;
- `background`: `samples` rows drawn once from the background data; a document's masked score is the mean score
  over those rows (an interventional expectation, `samples`× the model rows).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from auditor.models.base import CountingRanker, rows_per_call

Strategy = Literal["mean", "median", "zero", "background"]


@dataclass(frozen=True)
class Masker:
    """Replacement values for masked features: `fill` is (n_fill_rows × n_features); one row unless `background`."""

    strategy: Strategy
    fill: np.ndarray

    @classmethod
    def from_background(cls, background: np.ndarray, strategy: Strategy = "mean", *, samples: int = 20,
                        rng: np.random.Generator | None = None) -> Masker:
        if strategy == "mean":
            fill = np.nanmean(background, axis=0, keepdims=True)
        elif strategy == "median":
            fill = np.nanmedian(background, axis=0, keepdims=True)
        elif strategy == "zero":
            fill = np.zeros((1, background.shape[1]))
        else:
            rng = rng or np.random.default_rng(0)
            take = rng.choice(background.shape[0], size=min(samples, background.shape[0]), replace=False)
            fill = background[np.sort(take)]
        return cls(strategy=strategy, fill=np.ascontiguousarray(fill, dtype=np.float64))

    @property
    def n_fill(self) -> int:
        return int(self.fill.shape[0])

    def masked_rows(self, X: np.ndarray, keep: np.ndarray) -> np.ndarray:
        """All rows to score for documents X (n × F) under each keep-mask (C × F, True = feature kept).

        Layout: candidate-major, then document, then fill row: shape (C·n·n_fill, F).
        """
        keep = np.asarray(keep, dtype=bool).reshape(-1, X.shape[1])
        rows = np.where(keep[:, None, None, :], X[None, :, None, :], self.fill[None, None, :, :])
        return rows.reshape(-1, X.shape[1])

    def masked_scores(self, model: CountingRanker, X: np.ndarray, keep: np.ndarray, *,
                      max_rows: int = 2_000_000) -> np.ndarray:
        """Scores (C × n) of the documents with only the kept features: read off the trees when the model's array
        form is bit-identical to it, else in as few predict calls as memory allows."""
        keep = np.asarray(keep, dtype=bool).reshape(-1, X.shape[1])
        per_fill = fill_scores(model, X, self.fill, keep)
        if per_fill is not None:
            return per_fill.mean(axis=2)
        n, per_candidate = X.shape[0], X.shape[0] * self.n_fill
        step = max(1, rows_per_call(X.shape[1], max_rows) // max(per_candidate, 1))
        out = np.empty((keep.shape[0], n))
        for start in range(0, keep.shape[0], step):
            block = keep[start:start + step]
            scores = model.predict(self.masked_rows(X, block))
            out[start:start + len(block)] = scores.reshape(len(block), n, self.n_fill).mean(axis=2)
        return out


def fill_scores(model: CountingRanker, X: np.ndarray, fill: np.ndarray, keep: np.ndarray) -> np.ndarray | None:
    """(C × n × fill rows) scores of the documents under each keep-mask and each fill row, read off the trees
    (`masked_scoring`, bit-identical to predicting the built rows, counted as model rows), or None when the
    model has no bit-identical array form. The layout is the one `masked_rows` + predict gives."""
    trees = model.exact_trees() if hasattr(model, "exact_trees") else None
    if trees is None:
        return None
    from auditor.models.base import check_scores
    from auditor.scoring.masked_scoring import masked_scores

    X = np.asarray(X, dtype=np.float64)
    out = np.stack([masked_scores(trees, X, row, keep) for row in np.atleast_2d(fill)], axis=2)
    model.count(out.size)
    check_scores(out.reshape(-1), out.size, file=getattr(model.inner, "source", None))
    return out


def fill_rows_scores(model: CountingRanker, X: np.ndarray, fills: np.ndarray, doc_of_row: np.ndarray,
                     fill_of_row: np.ndarray, keep: np.ndarray) -> np.ndarray | None:
    """(M,) scores of rows `where(keep[m], X[doc_of_row[m]], fills[fill_of_row[m]])`, each with its own fill row,
    read off the trees (`masked_scoring.masked_scores_rows`, bit-identical to predicting the built rows, counted as
    model rows), or None when the model has no bit-identical array form (KernelSHAP's coalitions, pairwise
    explanations, the background search's distinct rows)."""
    trees = model.exact_trees() if hasattr(model, "exact_trees") else None
    if trees is None:
        return None
    from auditor.models.base import check_scores
    from auditor.scoring.masked_scoring import masked_scores_rows

    scores = masked_scores_rows(trees, X, fills, doc_of_row, fill_of_row, keep)
    model.count(scores.shape[0])
    check_scores(scores, scores.shape[0], file=getattr(model.inner, "source", None))
    return scores


def keep_masks(sets: list[tuple[int, ...]] | list[list[int]], n_features: int, *, complement: bool = False
               ) -> np.ndarray:
    """Boolean keep-masks (len(sets) × F) from feature-index sets; `complement` keeps everything else."""
    masks = np.zeros((len(sets), n_features), dtype=bool)
    for row, chosen in enumerate(sets):
        masks[row, list(chosen)] = True
    return ~masks if complement else masks
