"""Which features a set search needs to try for one query, and scoring each distinct set of useful features once.

**Inert features (exact).** Does keeping a feature the documents of a query share always leave their masked
ranking unchanged? No: a feature constant within the query still changes the scores when its value and the
masking value fall on different sides of a split, and through interactions that can reorder the documents (a tree
that splits on it before the features that order them; tests/test_search_screen.py has one for every masking
strategy). What IS exact: a feature whose every document value routes exactly like every masking row's value at
every split on that feature gives the very same leaves whether kept or masked, whatever else is kept. For such an
**inert** feature f, any set E ∪ {f} has bit-identical masked scores to E. For tree models (LightGBM, scikit-learn)
the routing is read from the model's thresholds (`Routing`: a value's bin among the feature's split thresholds,
read as the trees read it, with its own key for 0 under zero-as-missing splits and for NaN under NaN-routing
splits); features the model never splits on are always inert. For any other model a feature is inert only when
every document has exactly the masking value (every fill row's, for background masking).

`SetScores` gives the masked scores of a list of sets scoring each distinct set of non-inert features once per
query and masking (so also a set asked for twice, by two greedy seed runs, by a later step: E ∪ {inert f} after E,
or by another search of the query: the k curve's, the other greedy variants'); the searches ask it for every
candidate as before and each counts the rows of what it asked for in its own budget, so their choices, ties and
order are exactly those of scoring every set (bit-identical scores), for fewer model rows.

**Candidate screen (not exact, optional).** `candidate_features` ranks a query's non-inert features by their
within-query TreeSHAP spread Σ_d |φ_f(d) − mean_d φ_f| (what changes the order inside a query; path-dependent
TreeSHAP of the model itself) and keeps the top `count`. The searches then only consider those features. What it
changes on MQ2008 and on 136-feature data is measured in docs/benchmarks.md ("Set searches: which features they
try").
"""

from __future__ import annotations

import contextlib
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np

from auditor.models.base import CountingRanker
from auditor.models.masking import Masker, keep_masks
from auditor.scoring.trees import K_ZERO, LEAF, MISSING_NAN, MISSING_ZERO

if TYPE_CHECKING:
    from auditor.explain.base import QueryView
    from auditor.scoring.trees import TreeEnsemble

_ZERO_KEY, _NAN_KEY = -1, -2


@dataclass(frozen=True)
class Routing:
    """Per feature: the sorted thresholds of every split on it, whether some split sends 0 to its default side
    (zero-as-missing) and whether some split sends NaN there; `float32` when the trees read rows as float32."""

    cuts: tuple[np.ndarray, ...]
    zero_split: np.ndarray  # bool per feature
    nan_split: np.ndarray  # bool per feature
    float32: bool = False

    @classmethod
    def from_ensemble(cls, ensemble: TreeEnsemble) -> Routing:
        splits = ensemble.feature != LEAF
        features = ensemble.feature[splits]
        cuts = tuple(np.unique(ensemble.threshold[splits][features == f]) for f in range(ensemble.n_features))
        zero = np.zeros(ensemble.n_features, dtype=bool)
        nan = np.zeros(ensemble.n_features, dtype=bool)
        zero[features[ensemble.missing[splits] == MISSING_ZERO]] = True
        nan[features[ensemble.missing[splits] == MISSING_NAN]] = True
        return cls(cuts=cuts, zero_split=zero, nan_split=nan, float32=bool(ensemble.float32_inputs))

    def keys(self, f: int, values: np.ndarray) -> np.ndarray:
        """An integer per value: equal keys route alike at every split on feature f (module docstring). The value
        as the trees read it (float32 first for scikit-learn; |x| <= 1e-35 is 0); NaN is read as 0 unless some
        split routes NaN; 0 has its own key when some split sends it to the default side."""
        x = np.asarray(values, dtype=np.float32 if self.float32 else np.float64).astype(np.float64)
        x = np.where(np.abs(x) <= K_ZERO, 0.0, x)
        nan = np.isnan(x)
        if not self.nan_split[f]:
            x = np.where(nan, 0.0, x)
            nan = np.zeros_like(nan)
        key = np.searchsorted(self.cuts[f], np.where(nan, 0.0, x), side="left")
        if self.zero_split[f]:
            key = np.where(x == 0.0, _ZERO_KEY, key)
        return np.where(nan, _NAN_KEY, key)


_ROUTING: weakref.WeakKeyDictionary[object, Routing | None] = weakref.WeakKeyDictionary()  # by the inner model


def routing_for(model: CountingRanker) -> Routing | None:
    """The model's routing when it is a tree model the array form covers, else None; built once per model."""
    inner = getattr(model, "inner", model)
    try:
        return _ROUTING[inner]
    except (KeyError, TypeError):
        pass
    from auditor.models.capabilities import tree_ensemble

    ensemble, _ = tree_ensemble(model)
    routing = Routing.from_ensemble(ensemble) if ensemble is not None else None
    with contextlib.suppress(TypeError):  # not weak-referenceable: computed again next time
        _ROUTING[inner] = routing
    return routing


class Fill(Protocol):
    """A masking's fill rows (`Masker`, or the listwise explainers' `RowMasker`)."""

    @property
    def fill(self) -> np.ndarray: ...


def inert_features(model: CountingRanker, X: np.ndarray, masker: Fill) -> np.ndarray:
    """Per feature: keeping it or masking it gives the same masked scores for these documents, whatever else is
    kept (module docstring)."""
    X = np.asarray(X, dtype=np.float64)
    fill = np.asarray(masker.fill, dtype=np.float64)
    routing = routing_for(model)
    inert = np.zeros(X.shape[1], dtype=bool)
    for f in range(X.shape[1]):
        if routing is not None and f < len(routing.cuts):
            keys = routing.keys(f, np.concatenate([X[:, f], fill[:, f]]))
            inert[f] = bool(np.all(keys == keys[0]))
        else:
            values = np.concatenate([X[:, f], fill[:, f]])
            inert[f] = bool(np.all(values == values[0]) or np.all(np.isnan(values)))
    return inert


STORE_BYTES = 256 * 2 ** 20  # the scores one query's searches keep: a query of 20,000 documents keeps ~1,700 sets


# What the searches of one query share under one model and masking (`QueryView.scored`, keyed by their ids): the
# model and masking themselves (an id may be reused once they are gone), the inert features and the scores by set.
SharedScores = tuple[CountingRanker, Masker, np.ndarray, dict[tuple[int, ...], np.ndarray]]


class SetScores:
    """Masked scores of feature sets for one query, each distinct set of non-inert features scored once per search
    (kept: a later step that asks again, e.g. for E ∪ {inert f} after E, costs nothing) — and, made with `of`, once
    for every search of the query under the same model and masking: the k curve's searches and the greedy variants
    ask for many of the same sets. `rows` counts the rows of the sets new to THIS search, scored or found, so a
    search's row budget, and so its choices, do not depend on what other searches ran before it; the model rows
    actually evaluated (the CountingRanker's) are fewer."""

    def __init__(self, model: CountingRanker, X: np.ndarray, masker: Masker, inert: np.ndarray | None = None,
                 *, shared: dict[tuple[int, int], SharedScores] | None = None) -> None:
        self.model, self.X, self.masker = model, X, masker
        entry = None if shared is None else shared.get((id(model), id(masker)))
        if entry is None or entry[0] is not model or entry[1] is not masker:
            found = inert if inert is not None else inert_features(model, X, masker)
            entry = (model, masker, found, {})
            if shared is not None:
                shared[(id(model), id(masker))] = entry
        self.inert = inert if inert is not None else entry[2]
        self._inert = self.inert.tolist()  # Python bools: indexed once per feature of every set asked for
        self._scores: dict[tuple[int, ...], np.ndarray] = entry[3]
        self._known: set[tuple[int, ...]] = set()  # the sets this search asked for
        self.rows = 0  # rows of the sets this search asked for, for budgets

    @classmethod
    def of(cls, model: CountingRanker, query: QueryView, masker: Masker) -> SetScores:
        """A search's scorer on `query`, sharing scores with the query's other searches (`QueryView.scored`)."""
        return cls(model, query.X, masker, shared=query.scored)

    def active(self, chosen: tuple[int, ...] | list[int]) -> tuple[int, ...]:
        inert = self._inert
        return tuple(sorted([f for f in chosen if not inert[f]]))

    def __call__(self, sets: list[tuple[int, ...]]) -> np.ndarray:
        """(len(sets) × documents) masked scores, as `masker.masked_scores` of every set would give them."""
        keys = [self.active(chosen) for chosen in sets]
        distinct = list(dict.fromkeys(keys))
        new = [key for key in distinct if key not in self._known]
        if new:
            self.rows += len(new) * self.X.shape[0] * self.masker.n_fill
            self._known.update(new)
        unscored = [key for key in distinct if key not in self._scores]
        if unscored:
            if (len(self._scores) + len(unscored)) * self.X.shape[0] * 8 > STORE_BYTES:
                self._scores.clear()  # memory over speed: what is asked again is scored again, the same floats
                unscored = distinct
            scores = self.masker.masked_scores(self.model, self.X, keep_masks(unscored, self.X.shape[1]))
            self._scores.update(zip(unscored, scores, strict=True))
        if not keys:
            return np.zeros((0, self.X.shape[0]))
        return np.stack([self._scores[key] for key in keys])

    def cost(self, sets: list[tuple[int, ...]]) -> int:
        """Rows `self(sets)` adds to `rows` (the budget's count)."""
        new = {self.active(chosen) for chosen in sets} - self._known
        return len(new) * int(self.X.shape[0]) * self.masker.n_fill


def candidate_features(model: CountingRanker, query: QueryView, inert: np.ndarray, count: int | None) -> list[int]:
    """The non-inert features a search considers: all of them (`count` None), or the `count` with the largest
    within-query TreeSHAP spread (ties to the lower index) — `query.spread` when the evidence computed it for all
    its queries at once, else from the model's contributions. Models without TreeSHAP keep every feature."""
    active = np.flatnonzero(~inert)
    if count is None or count >= len(active):
        return [int(f) for f in active]
    spread = query.spread
    if spread is None:
        found = treeshap_spread(model, query.X, np.array([0, query.n_docs]))
        if found is None:
            return [int(f) for f in active]
        spread = found[0]
    order = np.lexsort((active, -np.asarray(spread)[active]))
    return sorted(int(f) for f in active[order[:count]])


def treeshap_spread(model: CountingRanker, X: np.ndarray, query_ptr: np.ndarray) -> np.ndarray | None:
    """(queries × F) Σ_d |φ_f(d) − mean_d φ_f| per query, φ the path-dependent TreeSHAP of the model (auditor's
    FastTreeShap for LightGBM where pred_contrib would be slow, else the model's own contributions; rows counted as
    model rows either way); None for a model without TreeSHAP."""
    from auditor.models.capabilities import fast_treeshap

    X = np.asarray(X, dtype=np.float64)
    fast = fast_treeshap(model, X.shape[0])
    if fast is not None:
        model.rows_evaluated += X.shape[0]  # as CountingRanker.contributions counts pred_contrib's
        contributions = fast.contributions(X)
    else:
        contributions = model.contributions(X)
    if contributions is None:
        return None
    return within_query_spread(np.asarray(contributions, dtype=np.float64)[:, :-1], query_ptr)


def within_query_spread(phi: np.ndarray, query_ptr: np.ndarray) -> np.ndarray:
    """(queries × F) Σ_d |φ_f(d) − mean_d φ_f| of each query's rows of φ (documents × F)."""
    out = np.zeros((len(query_ptr) - 1, phi.shape[1]))
    for q in range(len(query_ptr) - 1):
        part = phi[query_ptr[q]:query_ptr[q + 1]]
        out[q] = np.abs(part - part.mean(axis=0)).sum(axis=0)
    return out
