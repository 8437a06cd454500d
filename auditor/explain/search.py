"""Set searches scored by validity itself: our beam + swap search, the exhaustive optimum, and RANDOM.

The greedy family optimises a proxy (score differences on sampled pairs). Here every candidate set is scored by
the quantity we report — Kendall tau-b between the model's ranking and the ranking with only the set kept — and
all candidates of a step go to the model in one batched call.

ValiditySearch:
1. beam search: keep the `beam` best sets of each size; extend each by every feature not in it; score all;
2. swap local search on the best set of size k: try replacing each member by each non-member, move to the best
   improvement, repeat until none improves;
3. a row budget per query bounds the cost: when the next batch would exceed it, the beam narrows (down to one,
   which is plain forward selection by validity) and the swap phase stops.

Sets whose only difference is an inert feature (its value routes like the masking value for every document of the
query: auditor/explain/screen.py) have bit-identical masked scores, so each distinct set of non-inert features is
scored once and the searches choose exactly as if every set had been scored; the row budget counts the rows
actually scored. `candidates` = N restricts the validity search to the N features with the largest within-query
TreeSHAP spread (not exact). The exhaustive optimum is the yardstick of the others and is never restricted that way.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from auditor.checks.validity import kendall_tau_b
from auditor.explain.base import QueryView
from auditor.explain.greedy import feature_pool
from auditor.explain.screen import SetScores
from auditor.models.base import CountingRanker
from auditor.models.masking import Masker


def _validity(scorer: SetScores, query: QueryView, sets: list[tuple[int, ...]]) -> np.ndarray:
    return kendall_tau_b(query.scores, scorer(sets))


def _best(sets: list[tuple[int, ...]], values: np.ndarray, count: int) -> list[int]:
    """Indices of the `count` highest values; ties to the lexicographically smaller sorted set (deterministic)."""
    keys = [tuple(sorted(s)) for s in sets]
    order = sorted(range(len(sets)), key=lambda i: (-values[i], keys[i]))
    return order[:count]


def extend_beam(beam: list[tuple[int, ...]], pool: list[int]) -> list[tuple[int, ...]]:
    """Every set of the beam with one more feature of the pool, each distinct set once (in first-found order)."""
    found: dict[frozenset[int], tuple[int, ...]] = {}
    for chosen in beam:
        for f in pool:
            if f not in chosen:
                found.setdefault(frozenset((*chosen, f)), (*chosen, f))
    return list(found.values())


class ValiditySearch:
    """Beam + swap search maximising validity directly (our method)."""

    name = "validity_search"

    def __init__(self, *, beam: int = 5, swaps: bool = True, max_rows: int = 500_000,
                 candidates: int | None = None) -> None:
        self.beam = beam
        self.swaps = swaps
        self.max_rows = max_rows
        self.candidates = candidates  # None: every feature (inert ones at no cost); N: the N screened

    def select(self, model: CountingRanker, query: QueryView, k: int, masker: Masker,
               rng: np.random.Generator) -> tuple[int, ...]:
        scorer = SetScores.of(model, query, masker)
        pool = feature_pool(model, query, scorer.inert, self.candidates, k)
        k = min(k, len(pool))
        rows_per_set = query.n_docs * masker.n_fill
        beam: list[tuple[int, ...]] = [()]
        best_values = np.zeros(1)
        for _ in range(k):
            sets = extend_beam(beam, pool)
            affordable = max(len(pool), (self.max_rows - scorer.rows) // max(rows_per_set, 1))
            if scorer.cost(sets) // max(rows_per_set, 1) > affordable:  # narrow the beam to fit the budget
                width = max(1, len(beam) * affordable // len(sets))
                sets = [s for s in sets if s[:-1] in set(beam[:width])]
            values = _validity(scorer, query, sets)
            keep = _best(sets, values, self.beam)
            beam = [sets[i] for i in keep]
            best_values = values[keep]
        current, value = beam[0], float(best_values[0])
        while self.swaps and 0 < len(current) < len(pool):
            swaps = [tuple(b if m == a else m for m in current)
                     for a in current for b in pool if b not in current]
            if scorer.rows + scorer.cost(swaps) > self.max_rows:
                break
            values = _validity(scorer, query, swaps)
            top = _best(swaps, values, 1)[0]
            if values[top] <= value + 1e-12:
                break
            current, value = swaps[top], float(values[top])
        return current


class Exhaustive:
    """All subsets of size k (the paper's brute-force optimum), batched; refuses when there are too many."""

    name = "exhaustive"

    def __init__(self, *, max_subsets: int = 20_000) -> None:
        self.max_subsets = max_subsets

    def affordable(self, n_features: int, k: int) -> bool:
        return math.comb(n_features, min(k, n_features)) <= self.max_subsets

    def select(self, model: CountingRanker, query: QueryView, k: int, masker: Masker,
               rng: np.random.Generator) -> tuple[int, ...]:
        k = min(k, query.n_features)
        if not self.affordable(query.n_features, k):
            raise ValueError(f"{math.comb(query.n_features, k)} subsets exceed max_subsets={self.max_subsets}")
        subsets = list(itertools.combinations(range(query.n_features), k))
        values = _validity(SetScores.of(model, query, masker), query, subsets)
        return subsets[_best(subsets, values, 1)[0]]


class RandomSet:
    """The paper's RANDOM baseline: k features drawn uniformly (seeded)."""

    name = "random"

    def select(self, model: CountingRanker, query: QueryView, k: int, masker: Masker,
               rng: np.random.Generator) -> tuple[int, ...]:
        return tuple(int(f) for f in rng.choice(query.n_features, size=min(k, query.n_features), replace=False))
