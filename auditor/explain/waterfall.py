"""One document's score taken apart, as shap's waterfall plot does, and the same rows in rank positions.

Score units: the document's contributions φ_f(d) − φ̄_f(q) (TreeSHAP minus the query's mean, so the base is the
query's mean score and the bars add up to s(d) − s̄(q) exactly), the `top` largest by |value| one row each, the
rest summed into one "other features" row.

Rank positions: for each row's features S (one feature, or all the "other" ones together), the positions the
document's actual values of S are worth, as `parameter_influence` defines them for one parameter: the rank it
would take with S masked (the audit's masking) while every other document keeps its score, minus its rank
(`checks.influence.rank_among_others`; 0-based, ties after earlier documents in file order). Unlike the score
contributions these do not add up: masking two features together can move a document more, or less, than the two
alone (docs/metrics.md, "One document's waterfall"). Nor need they agree in sign: a contribution compares the
document's value with the query's other documents, a position with the masked value (`opposed`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from auditor.checks.influence import rank_among_others
from auditor.models.base import CountingRanker
from auditor.models.masking import Masker


@dataclass(frozen=True)
class Waterfall:
    """The rows of one document's waterfall, top to bottom: `features` (largest |contribution| first) and, when
    any feature is left over, one row for the `n_other` others."""

    features: list[int]
    contributions: np.ndarray  # one per row: the features', then the others' sum
    n_other: int
    base: float
    score: float

    @property
    def sets(self) -> list[list[int]]:
        """Each row's features (the last row: every feature not shown)."""
        width = len(self.features) + self.n_other
        others = sorted(set(range(width)) - set(self.features))
        return [[f] for f in self.features] + ([others] if self.n_other else [])


def waterfall(contributions: np.ndarray, *, base: float, score: float, top: int = 8) -> Waterfall:
    """Rows for one document from its contributions (F,) which add up to `score` − `base`: the `top` largest by
    |value| (ties: lower index first), then the others summed."""
    phi = np.asarray(contributions, dtype=np.float64)
    order = np.lexsort((np.arange(len(phi)), -np.abs(phi)))
    shown = [int(f) for f in order[:top]]
    rest = order[top:]
    values = [float(phi[f]) for f in shown] + ([float(phi[rest].sum())] if rest.size else [])
    return Waterfall(features=shown, contributions=np.asarray(values), n_other=int(rest.size), base=float(base),
                     score=float(score))


def positions_worth(model: CountingRanker, masker: Masker, X: np.ndarray, scores: np.ndarray, doc: int,
                    sets: list[list[int]]) -> tuple[int, np.ndarray]:
    """The document `doc` of one query (rows X, scores `scores`): its 0-based rank, and for each feature set the
    positions its actual values are worth — rank with the set masked (alone: the others keep their scores) minus
    its rank; > 0 when the values lift it."""
    keep = np.ones((len(sets), X.shape[1]), dtype=bool)
    for row, chosen in enumerate(sets):
        keep[row, chosen] = False
    masked = masker.masked_scores(model, X[doc:doc + 1], keep)[:, 0]  # (sets,)
    candidates = np.tile(np.asarray(scores, dtype=np.float64), (len(sets) + 1, 1))
    candidates[1:, doc] = masked
    ranks = rank_among_others(scores, candidates)[:, doc]
    return int(ranks[0]), (ranks[1:] - ranks[0]).astype(np.float64)


def opposed(contributions: np.ndarray, worth: np.ndarray) -> list[int]:
    """The rows whose score push and rank positions point opposite ways (a push down worth places, or a push up
    that costs places): the contribution compares the document's value with the query's other documents (φ minus
    the query's mean), the positions compare it with the masked value, and a value can beat one and not the other."""
    phi, shift = np.asarray(contributions, dtype=np.float64), np.asarray(worth, dtype=np.float64)
    return [int(i) for i in np.flatnonzero(((phi < 0) & (shift > 0)) | ((phi > 0) & (shift < 0)))]
