"""The explainer interface: one query in, one Explanation out.

Per-document explainers (TreeSHAP, KernelSHAP, LIRME, EXS) attribute each of the query's top documents; the
query's explanation set is then the top-k features by |attribution| of the top-ranked document ("-1") or by the
sum of |attribution| over the top 5 documents ("-5"), as in paper 000. Set explainers (GREEDY family, our
search, RANDOM, exhaustive) return the set directly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from auditor.checks.ranking import rank_order
from auditor.models.base import CountingRanker
from auditor.models.masking import Masker

if TYPE_CHECKING:
    from auditor.explain.screen import SharedScores


@dataclass(frozen=True)
class QueryView:
    """One query: its documents (n × F), the model's scores for them, and background data for samplers."""

    X: np.ndarray
    scores: np.ndarray
    query_id: str
    background: np.ndarray
    spread: np.ndarray | None = None  # per feature: within-query TreeSHAP spread, when a candidate screen needs it
    # masked scores of feature sets, shared by every search on this query (auditor.explain.screen.SetScores.of)
    scored: dict[tuple[int, int], SharedScores] = field(default_factory=dict, compare=False, repr=False)

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


@dataclass(frozen=True, eq=False)  # arrays inside: compare `values` (and the flags) explicitly
class Attributions:
    """What an attribution explainer returns for one query's documents: `values` (len(docs) × F), rows in the
    order of the documents asked; per document, whether it got no explanation (`degenerate`: its row is zeros) and
    whether a fallback solver fitted it (`fallback`); `diagnostics` holds explainer-specific checks with one entry
    per document along their first axis or as documents' values (KernelSHAP: its convergence). Values, not state
    kept on the explainer, so a result can be shared (memo, worker processes) and counted wherever it is used."""

    values: np.ndarray
    degenerate: np.ndarray | None = None  # bool per document; None: none
    fallback: np.ndarray | None = None  # bool per document; None: none
    diagnostics: dict[str, Any] | None = None

    @property
    def n_degenerate(self) -> int:
        return 0 if self.degenerate is None else int(np.sum(self.degenerate))

    @property
    def n_fallback(self) -> int:
        return 0 if self.fallback is None else int(np.sum(self.fallback))

    def head(self, count: int) -> Attributions:
        """The first `count` documents' attributions (an explainer's result for a document does not depend on the
        documents after it, where the registry says it is `reusable`)."""
        return Attributions(values=self.values[:count],
                            degenerate=None if self.degenerate is None else self.degenerate[:count],
                            fallback=None if self.fallback is None else self.fallback[:count],
                            diagnostics=None)


class AttributionExplainer(Protocol):
    """Attributes each given document's score to the features."""

    @property
    def name(self) -> str: ...

    def attribute(self, model: CountingRanker, query: QueryView, docs: np.ndarray, masker: Masker,
                  rng: np.random.Generator) -> Attributions: ...


class SetExplainer(Protocol):
    """Chooses an explanation set of (at most) k features for the whole query."""

    @property
    def name(self) -> str: ...

    def select(self, model: CountingRanker, query: QueryView, k: int, masker: Masker,
               rng: np.random.Generator) -> tuple[int, ...]: ...


# What a registry entry's factory builds (`auditor/explain/registry.py`): which of the two, its `kind` says.
LocalExplainer = AttributionExplainer | SetExplainer


def set_from_attributions(attributions: np.ndarray, k: int, *, docs: int) -> tuple[int, ...]:
    """Top-k features by |attribution| of the first document (docs=1) or by Σ|attribution| over the first `docs`
    rows; ties broken by feature index, so the choice is deterministic."""
    weight = np.abs(attributions[:docs]).sum(axis=0)
    order = np.lexsort((np.arange(weight.shape[0]), -weight))
    return tuple(int(f) for f in order[:k])
