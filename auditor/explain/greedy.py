"""GREEDY, GREEDY-COVER and GREEDY-COVER-ε: valid-explanation search of Singh et al. (paper 000, Alg. 1 and 2).

Per query:
1. P = concordant pairs of the model's ranking π (i above j with s_i > s_j; tied pairs carry no order). All
   of them for short lists, else `n_pairs` sampled uniformly without replacement (50 for MQ2008 in the paper).
2. Preference matrix z[f, p] = (s'(i) − s'(j)) · w_p, where s' scores the documents with only E ∪ {f} kept
   (everything else masked) and w_p = rank(j) − rank(i), the rank difference.
3. Utility u(f) = Σ_{p ∈ P} z[f, p]; pick the argmax.
   - GREEDY (Alg. 1): P stays whole; stop when the best utility no longer increases on the previous step's.
   - GREEDY-COVER (Alg. 2, ε = 0): after each pick drop the pairs with z[f*, p] > 0 (now "covered"); stop when
     every pair is covered.
   - GREEDY-COVER-ε: drop pairs with z[f*, p] > ε, ε = mean of the positive z[f*, p] over the remaining pairs.
4. Seed restart: run from each of the 3 best first features and keep the set with the highest validity (the
   paper does not say how the best run is chosen; we measure each run's validity and keep the best, ties to the
   earlier seed).

All candidates of a step are scored in one batched call (F − |E| candidates × n documents rows).
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from auditor.checks.ranking import rank_order
from auditor.checks.validity import kendall_tau_b
from auditor.explain.base import QueryView
from auditor.masking import Masker, keep_masks
from auditor.models.base import CountingRanker

Variant = Literal["greedy", "greedy_cover", "greedy_cover_eps"]


def concordant_pairs(scores: np.ndarray, n_pairs: int | None, rng: np.random.Generator
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(upper, lower, weight): document indices of sampled concordant pairs and their rank-difference weights."""
    order = rank_order(scores)
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    a, b = np.triu_indices(len(order), k=1)
    upper, lower = order[a], order[b]  # upper is ranked above lower
    strict = scores[upper] > scores[lower]
    upper, lower = upper[strict], lower[strict]
    if n_pairs is not None and len(upper) > n_pairs:
        take = np.sort(rng.choice(len(upper), size=n_pairs, replace=False))
        upper, lower = upper[take], lower[take]
    return upper, lower, (rank[lower] - rank[upper]).astype(np.float64)


class Greedy:
    """One of the three greedy variants; `select` returns the explanation set (possibly shorter than k)."""

    def __init__(self, variant: Variant = "greedy", *, n_pairs: int | None = 50, seeds: int = 3) -> None:
        self.name = variant
        self.variant = variant
        self.n_pairs = n_pairs
        self.seeds = seeds

    def select(self, model: CountingRanker, query: QueryView, k: int, masker: Masker,
               rng: np.random.Generator) -> tuple[int, ...]:
        upper, lower, weight = concordant_pairs(query.scores, self.n_pairs, rng)
        n_features = query.n_features
        if len(upper) == 0 or k <= 0:
            return ()
        first_z = self._preference(model, query, masker, (), list(range(n_features)), upper, lower, weight)
        first_u = first_z.sum(axis=1)
        seeds = np.lexsort((np.arange(n_features), -first_u))[: self.seeds]
        runs = [self._run(model, query, masker, k, int(seed), first_z, upper, lower, weight) for seed in seeds]
        if len(runs) == 1:
            return runs[0]
        masked = masker.masked_scores(model, query.X, keep_masks(runs, n_features))
        validity = kendall_tau_b(query.scores, masked)
        return runs[int(np.argmax(validity))]

    def _run(self, model: CountingRanker, query: QueryView, masker: Masker, k: int, seed: int,
             first_z: np.ndarray, upper: np.ndarray, lower: np.ndarray, weight: np.ndarray) -> tuple[int, ...]:
        selected: list[int] = []
        active = np.ones(len(upper), dtype=bool)
        previous_utility = -np.inf
        z_pick = first_z[seed]
        utility = float(z_pick.sum())
        pick = seed
        while True:
            if self.variant == "greedy" and selected and utility <= previous_utility:
                break  # Alg. 1: add only while the utility increases
            selected.append(pick)
            previous_utility = utility
            if self.variant != "greedy":
                epsilon = 0.0
                if self.variant == "greedy_cover_eps":
                    positive = z_pick[active & (z_pick > 0)]
                    epsilon = float(positive.mean()) if positive.size else 0.0
                active &= ~(z_pick > epsilon)
                if not active.any():
                    break  # every pair covered
            if len(selected) >= k:
                break
            candidates = [f for f in range(query.n_features) if f not in selected]
            if not candidates:
                break
            z = self._preference(model, query, masker, tuple(selected), candidates, upper, lower, weight)
            utilities = z[:, active].sum(axis=1)
            best = int(np.lexsort((np.arange(len(candidates)), -utilities))[0])
            pick, utility, z_pick = candidates[best], float(utilities[best]), z[best]
        return tuple(selected)

    @staticmethod
    def _preference(model: CountingRanker, query: QueryView, masker: Masker, selected: tuple[int, ...],
                    candidates: list[int], upper: np.ndarray, lower: np.ndarray, weight: np.ndarray) -> np.ndarray:
        """z (len(candidates) × pairs) with E ∪ {f} kept, for every candidate f, in one batched predict."""
        masks = keep_masks([(*selected, f) for f in candidates], query.n_features)
        scores = masker.masked_scores(model, query.X, masks)
        return (scores[:, upper] - scores[:, lower]) * weight
