"""The explainer interface: one query in, one Explanation out.

Per-document explainers (TreeSHAP, KernelSHAP, LIRME, EXS) attribute each of the query's top documents; the
query's explanation set is then the top-k features by |attribution| of the top-ranked document ("-1") or by the
sum of |attribution| over the top 5 documents ("-5"), as in paper 000. Set explainers (GREEDY family, our
search, RANDOM, exhaustive) return the set directly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from auditor.checks.ranking import rank_order
from auditor.masking import Masker
from auditor.models.base import CountingRanker


@dataclass(frozen=True)
class QueryView:
    """One query: its documents (n × F), the model's scores for them, and background data for samplers."""

    X: np.ndarray
    scores: np.ndarray
    query_id: str
    background: np.ndarray
    spread: np.ndarray | None = None  # per feature: within-query TreeSHAP spread, when a candidate screen needs it

    @property
    def n_docs(self) -> int:
        return int(self.X.shape[0])

    @property
    def n_features(self) -> int:
        return int(self.X.shape[1])

    def top_docs(self, count: int) -> np.ndarray:
        """Indices of the `count` best-scored documents (ties keep file order)."""
        return rank_order(self.scores)[:count]


@dataclass
class Explanation:
    """An explanation of one query's ranking. `selected` is ordered: most important first."""

    method: str
    selected: tuple[int, ...]
    attributions: np.ndarray | None = None  # (docs explained × F), rows in `explained_docs` order
    explained_docs: tuple[int, ...] = ()
    n_model_rows: int = 0
    seconds: float = 0.0
    info: dict[str, float] = field(default_factory=dict)


class AttributionExplainer(Protocol):
    """Attributes each given document's score to the features: (len(docs) × F)."""

    name: str

    def attribute(self, model: CountingRanker, query: QueryView, docs: np.ndarray, masker: Masker,
                  rng: np.random.Generator) -> np.ndarray: ...


class SetExplainer(Protocol):
    """Chooses an explanation set of (at most) k features for the whole query."""

    name: str

    def select(self, model: CountingRanker, query: QueryView, k: int, masker: Masker,
               rng: np.random.Generator) -> tuple[int, ...]: ...


def set_from_attributions(attributions: np.ndarray, k: int, *, docs: int) -> tuple[int, ...]:
    """Top-k features by |attribution| of the first document (docs=1) or by Σ|attribution| over the first `docs`
    rows; ties broken by feature index, so the choice is deterministic."""
    weight = np.abs(attributions[:docs]).sum(axis=0)
    order = np.lexsort((np.arange(weight.shape[0]), -weight))
    return tuple(int(f) for f in order[:k])
