"""Masked rows of one query under many fill rows, each distinct row scored once for a whole search.

A masked row keeps a feature set's values of one document and takes every other feature from one fill row. Where
the document and the fill row route alike at every split on a feature (`screen.Routing`: the same key), keeping the
feature or filling it reaches the same leaves, so the row scores bit for bit as the row of the set without that
feature. That is `screen`'s inert feature, decided for one (document, fill row) instead of for the whole query: the
background search under a `RowMasker`'s rows asks for sets that differ by one feature (a forward step extends one set
by each candidate; a swap exchanges one member), and for a given document and row most candidates route like the
fill. Each row is keyed by (fill row, document, the set's features on which they differ) and scored the first time
that key is asked for; the model counts only those rows (MQ2008, 40 queries, k = 5: 2.4 M rows for the search's 3.4
M, the same sets chosen: docs/benchmarks.md). A model the array form does not cover shares only rows equal value for
value.
"""

from __future__ import annotations

import numpy as np

from auditor.explain.screen import routing_for
from auditor.models.base import CountingRanker
from auditor.models.masking import fill_rows_scores

_CELLS = 4_000_000  # masked-row features one pass keys at once (bytes of its boolean array)
_KEPT = 1_000_000  # scores kept (~150 MB at 136 features), give or take one pass; past it they start again


class DistinctRows:
    """Scores of the documents X (n × F) under keep-masks and fill rows (R × F), distinct rows scored once."""

    def __init__(self, model: CountingRanker, X: np.ndarray, fill: np.ndarray) -> None:
        self.model = model
        self.X = np.asarray(X, dtype=np.float64)
        self.fill = np.asarray(fill, dtype=np.float64)
        self.differ = _differ(model, self.X, self.fill)  # R × n × F: the fill row and the document route apart
        self.known: dict[bytes, float] = {}
        self.rows = 0  # model rows scored

    def scores(self, keep: np.ndarray, fill_rows: np.ndarray) -> np.ndarray:
        """(C × r × n) scores of each keep-mask (C × F) under each of the fill rows `fill_rows` (r indices)."""
        keep = np.asarray(keep, dtype=bool)
        fill_rows = np.asarray(fill_rows, dtype=np.intp)
        n, features = self.X.shape
        out = np.empty((keep.shape[0], fill_rows.shape[0], n))
        step = max(1, _CELLS // max(fill_rows.shape[0] * n * features, 1))
        for start in range(0, keep.shape[0], step):
            out[start:start + step] = self._block(keep[start:start + step], fill_rows)
        return out

    def _block(self, keep: np.ndarray, fill_rows: np.ndarray) -> np.ndarray:
        n, features = self.X.shape
        shape = (keep.shape[0], fill_rows.shape[0], n)
        differing = keep[:, None, None, :] & self.differ[fill_rows][None]  # C × r × n × F
        where = np.broadcast_to(np.stack(np.meshgrid(fill_rows, np.arange(n), indexing="ij"), axis=-1), (*shape, 2))
        keys = np.concatenate([np.ascontiguousarray(where, dtype="<i4").view(np.uint8).reshape(*shape, 8),
                               np.packbits(differing, axis=-1)], axis=-1).reshape(-1, 8 + (features + 7) // 8)
        unique, first, inverse = np.unique(np.ascontiguousarray(keys).view(f"V{keys.shape[1]}").ravel(),
                                           return_index=True, return_inverse=True)
        names = unique.tolist()
        found = [self.known.get(name) for name in names]
        new = np.array([i for i, value in enumerate(found) if value is None], dtype=np.intp)
        values = np.array([0.0 if value is None else value for value in found])
        if new.size:
            cell = np.unravel_index(first[new], shape)
            values[new] = self._score(differing[cell], fill_rows[cell[1]], cell[2])
            if len(self.known) + new.size > _KEPT:  # a search under a large row budget: bounded memory, the same scores
                self.known.clear()
            self.known.update(zip([names[i] for i in new], values[new].tolist(), strict=True))
        return values[inverse].reshape(shape)

    def _score(self, keep: np.ndarray, fill_of_row: np.ndarray, doc_of_row: np.ndarray) -> np.ndarray:
        """Scores of rows where(keep, X[doc], fill[row]), off the trees when their array form is exact."""
        self.rows += keep.shape[0]
        scores = fill_rows_scores(self.model, self.X, self.fill, doc_of_row, fill_of_row, keep)
        if scores is None:
            predicted: np.ndarray = self.model.predict(np.where(keep, self.X[doc_of_row], self.fill[fill_of_row]))
            return predicted
        return scores


def _differ(model: CountingRanker, X: np.ndarray, fill: np.ndarray) -> np.ndarray:
    """(R × n × F) whether fill row r and document d could send feature f different ways at some split: their
    routing keys differ (tree models), else their values differ (NaN equal to NaN)."""
    routing = routing_for(model)
    differ = np.empty((fill.shape[0], X.shape[0], X.shape[1]), dtype=bool)
    for f in range(X.shape[1]):
        if routing is not None and f < len(routing.cuts):
            keys = routing.keys(f, np.concatenate([X[:, f], fill[:, f]]))
            differ[:, :, f] = keys[None, :X.shape[0]] != keys[X.shape[0]:, None]
        else:
            same = (X[None, :, f] == fill[:, None, f]) | (np.isnan(X[None, :, f]) & np.isnan(fill[:, None, f]))
            differ[:, :, f] = ~same
    return differ
