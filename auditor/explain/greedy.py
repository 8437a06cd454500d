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

All candidates of a step are scored in one batched call (F − |E| candidates × n documents rows), and the seed
runs advance in lockstep, so one call serves the step of every unfinished run. Candidates whose value routes like
the masking value for every document of the query (inert, auditor/explain/screen.py) are scored as E itself, and a
set several seed runs ask for is scored once: the same preferences bit for bit, so the same sets, for fewer rows.
With `candidates` = N (and more features than N) only the N features with the largest within-query TreeSHAP spread
are tried (not exact; docs/benchmarks.md measures what it changes).
"""

from __future__ import annotations

from itertools import pairwise
from typing import Literal

import numpy as np

from auditor.checks.ranking import rank_order
from auditor.checks.validity import kendall_tau_b
from auditor.explain.base import QueryView
from auditor.explain.screen import SetScores, candidate_features
from auditor.models.base import CountingRanker
from auditor.models.masking import Masker

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


class _Run:
    """One seed's run of Alg. 1/2: its picks so far, the pairs still uncovered and the last pick's preferences."""

    def __init__(self, seed: int, z_seed: np.ndarray) -> None:
        self.selected: list[int] = []
        self.active = np.ones(z_seed.shape[0], dtype=bool)
        self.previous_utility = -np.inf
        self.pick, self.utility, self.z_pick = seed, float(z_seed.sum()), z_seed
        self.candidates: list[int] = []
        self.done = False

    def advance(self, variant: Variant, k: int, pool: list[int]) -> bool:
        """Take the pending pick if the variant's rule allows; True when the run needs its next candidates scored
        (False: the run has ended, and stays ended)."""
        if self.done:
            return False
        self.done = True
        if variant == "greedy" and self.selected and self.utility <= self.previous_utility:
            return False  # Alg. 1: add only while the utility increases
        self.selected.append(self.pick)
        self.previous_utility = self.utility
        if variant != "greedy":
            epsilon = 0.0
            if variant == "greedy_cover_eps":
                positive = self.z_pick[self.active & (self.z_pick > 0)]
                epsilon = float(positive.mean()) if positive.size else 0.0
            self.active &= ~(self.z_pick > epsilon)
            if not self.active.any():
                return False  # every pair covered
        if len(self.selected) >= k:
            return False
        self.candidates = [f for f in pool if f not in self.selected]
        self.done = not self.candidates
        return not self.done

    def choose(self, z: np.ndarray) -> None:
        """The best candidate by utility over the uncovered pairs (ties to the lower feature index)."""
        utilities = z[:, self.active].sum(axis=1)
        best = int(np.lexsort((np.arange(len(self.candidates)), -utilities))[0])
        self.pick, self.utility, self.z_pick = self.candidates[best], float(utilities[best]), z[best]


class Greedy:
    """One of the three greedy variants; `select` returns the explanation set (possibly shorter than k)."""

    def __init__(self, variant: Variant = "greedy", *, n_pairs: int | None = 50, seeds: int = 3,
                 candidates: int | None = None) -> None:
        self.name = variant
        self.variant = variant
        self.n_pairs = n_pairs
        self.seeds = seeds
        self.candidates = candidates  # None: every feature (inert ones at no cost); N: the N screened

    def select(self, model: CountingRanker, query: QueryView, k: int, masker: Masker,
               rng: np.random.Generator) -> tuple[int, ...]:
        upper, lower, weight = concordant_pairs(query.scores, self.n_pairs, rng)
        if len(upper) == 0 or k <= 0:
            return ()
        scorer = SetScores.of(model, query, masker)
        pool = feature_pool(model, query, scorer.inert, self.candidates, k)
        first_z = self._preference(scorer, [((), pool)], upper, lower, weight)[0]
        first_u = first_z.sum(axis=1)
        seeds = np.lexsort((np.arange(len(pool)), -first_u))[: self.seeds]
        runs = self._runs(scorer, pool, k, [int(seed) for seed in seeds], first_z, upper, lower, weight)
        if len(runs) == 1:
            return runs[0]
        validity = kendall_tau_b(query.scores, scorer(runs))
        return runs[int(np.argmax(validity))]

    def _runs(self, scorer: SetScores, pool: list[int], k: int, seeds: list[int], first_z: np.ndarray,
              upper: np.ndarray, lower: np.ndarray, weight: np.ndarray) -> list[tuple[int, ...]]:
        """The run from each seed (an index into `pool`), in lockstep: at every step the candidates of all
        unfinished runs are scored in ONE batched call (the runs do not interact, so the sets are those of running
        them one after another, with a third of the model calls: calls of a few hundred rows cost LightGBM ~0.4 ms
        each before any row)."""
        runs = [_Run(pool[seed], first_z[seed]) for seed in seeds]
        while True:
            waiting = [run for run in runs if run.advance(self.variant, k, pool)]
            if not waiting:
                return [tuple(run.selected) for run in runs]
            z_all = self._preference(scorer, [(tuple(run.selected), run.candidates) for run in waiting],
                                     upper, lower, weight)
            for run, z in zip(waiting, z_all, strict=True):
                run.choose(z)

    @staticmethod
    def _preference(scorer: SetScores, requests: list[tuple[tuple[int, ...], list[int]]], upper: np.ndarray,
                    lower: np.ndarray, weight: np.ndarray) -> list[np.ndarray]:
        """For each (E, candidates) request, z (len(candidates) × pairs) with E ∪ {f} kept for every candidate f;
        all requests in one batched predict (each distinct set of non-inert features once)."""
        sets = [(*selected, f) for selected, candidates in requests for f in candidates]
        scores = scorer(sets)
        z = (scores[:, upper] - scores[:, lower]) * weight
        bounds = np.cumsum([0] + [len(candidates) for _, candidates in requests])
        return [z[a:b] for a, b in pairwise(bounds)]


def feature_pool(model: CountingRanker, query: QueryView, inert: np.ndarray, candidates: int | None, k: int
                 ) -> list[int]:
    """The features a search tries, ascending: every feature (`candidates` None, or not more non-inert features than
    `candidates`), else the `candidates` (at least k) non-inert features with the largest within-query TreeSHAP
    spread, and the inert ones (free, and kept so that a screen that drops nothing changes nothing, ties included)."""
    if candidates is None:
        return list(range(query.n_features))
    kept = set(candidate_features(model, query, inert, max(candidates, k)))
    return [f for f in range(query.n_features) if f in kept or inert[f]]
