"""Exposure of documents and groups of documents in rankings: who gets the attention, against what relevance earns.

Pure functions of arrays: no files, no spec. A query's order is by score, descending; tied scores keep file order
(a stable sort), as in `checks.ranking`. Positions are 1-based in the formulas, 0-based in arrays.

- **Attention** a_i of position i (`Attention.weights`): `log` 1/log₂(1 + i) (the DCG discount, Singh & Joachims
  2018), `geometric` γ^(i−1) (rank-biased precision's patient user, Moffat & Zobel 2008; Diaz et al. 2020),
  `cascade` γ^(i−1) Π_{j<i} (1 − φ(r_j)) with the stop probability φ(r) = (2^r − 1) / 2^r_max of expected
  reciprocal rank (Chapelle et al. 2009; Diaz et al. 2020's cascade browsing model), or a given vector (e.g.
  click-through rates by position). Zero beyond `cutoff`.
- **Exposure** ε(d): the attention of d's position. **Target (merit) exposure** ε*(d): d's expected attention
  under the ideal stochastic ranking of Diaz et al. 2020 — documents by relevance, equally relevant ones in a
  uniformly random order — i.e. the mean attention of the positions d's relevance tier occupies.
- Group shares, ratios, disparate treatment (Singh & Joachims 2018), expected exposure and its decomposition (Diaz
  et al. 2020) and attention-weighted rank fairness (TREC Fair Ranking 2021–22) are built on those two vectors.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from auditor.checks.estimate import estimate


@dataclass(frozen=True)
class Attention:
    """A position-weight (browsing) model. `kind`: log | geometric | cascade | custom (`vector`)."""

    kind: str = "log"
    patience: float = 0.5
    cutoff: int | None = None
    vector: tuple[float, ...] = ()
    max_grade: float = 1.0  # r_max of the cascade's stop probability

    def weights(self, relevance_in_order: np.ndarray) -> np.ndarray:
        """Attention of each position of a ranking whose documents, in rank order, have these relevance grades
        (only the cascade reads them)."""
        n = len(relevance_in_order)
        i = np.arange(1, n + 1, dtype=np.float64)
        if self.kind == "log":
            a = 1.0 / np.log2(1.0 + i)
        elif self.kind == "geometric":
            a = self.patience ** (i - 1.0)
        elif self.kind == "cascade":
            stop = (np.exp2(np.asarray(relevance_in_order, dtype=np.float64)) - 1.0) / np.exp2(self.max_grade)
            go_on = self.patience * (1.0 - np.clip(stop, 0.0, 1.0))
            a = np.concatenate([[1.0], np.cumprod(go_on[:-1])]) if n else np.zeros(0)
        elif self.kind == "custom":
            a = np.zeros(n)
            m = min(n, len(self.vector))
            a[:m] = self.vector[:m]
        else:
            raise ValueError(f"unknown attention model {self.kind!r}")
        if self.cutoff is not None:
            a[self.cutoff:] = 0.0
        return a


def ranks(scores: np.ndarray) -> np.ndarray:
    """0-based position of each document in the order by score (descending; ties keep file order)."""
    order = np.argsort(-np.asarray(scores, dtype=np.float64), kind="stable")
    out = np.empty(len(order), dtype=np.int64)
    out[order] = np.arange(len(order))
    return out


def exposure(scores: np.ndarray, relevance: np.ndarray, attention: Attention) -> np.ndarray:
    """ε(d) for the documents of one query: the attention of the position the scores give each document."""
    order = np.argsort(-np.asarray(scores, dtype=np.float64), kind="stable")
    out = np.empty(len(order))
    out[order] = attention.weights(np.asarray(relevance)[order])
    return out


def target_exposure(relevance: np.ndarray, attention: Attention) -> np.ndarray:
    """ε*(d): the expected attention of d under the ideal stochastic ranking of Diaz et al. 2020 — sorted by
    relevance, equally relevant documents in a uniformly random order — so every document of a relevance tier gets
    the mean attention of the positions the tier occupies. (Under the cascade, the attention of a position depends
    only on the grades above it, which the tiers fix, so the same holds.)"""
    relevance = np.asarray(relevance, dtype=np.float64)
    ideal = np.argsort(-relevance, kind="stable")
    a = attention.weights(relevance[ideal])
    tiers, codes = np.unique(relevance[ideal], return_inverse=True)
    means = np.bincount(codes, weights=a, minlength=len(tiers)) / np.bincount(codes, minlength=len(tiers))
    out = np.empty(len(relevance))
    out[ideal] = means[codes]
    return out


def expected_exposure(eps: np.ndarray, target: np.ndarray) -> tuple[float, float, float]:
    """(EE-L, EE-D, EE-R) of Diaz et al. 2020 for one query: loss ‖ε − ε*‖², disparity ‖ε‖², relevance ε·ε*, so
    that EE-L = EE-D − 2·EE-R + ‖ε*‖². Given group exposures (Σ over each group's documents), the group version."""
    eps, target = np.asarray(eps, dtype=np.float64), np.asarray(target, dtype=np.float64)
    diff = eps - target
    return float(diff @ diff), float(eps @ eps), float(eps @ target)


def js_divergence(p: np.ndarray, q: np.ndarray) -> float:
    """Jensen–Shannon divergence of two distributions, natural logarithm (scipy's `jensenshannon` squared, as the
    TREC Fair Ranking evaluation scripts use it): in [0, ln 2]."""
    p = np.asarray(p, dtype=np.float64) / np.sum(p)
    q = np.asarray(q, dtype=np.float64) / np.sum(q)
    m = (p + q) / 2.0

    def kl(a: np.ndarray) -> float:
        keep = a > 0
        return float(np.sum(a[keep] * np.log(a[keep] / m[keep])))

    return max((kl(p) + kl(q)) / 2.0, 0.0)


def awrf(exposure_shares: np.ndarray, target_shares: np.ndarray) -> float:
    """Attention-weighted rank fairness (Sapiezynski et al. 2019, as scored in TREC Fair Ranking 2021–22): 1 minus
    the Jensen–Shannon divergence between the groups' shares of attention and the target shares. 1 = attention
    is spread over the groups exactly as the target; the floor is 1 − ln 2 ≈ 0.307."""
    return 1.0 - js_divergence(exposure_shares, target_shares)


@dataclass(frozen=True)
class QueryGroups:
    """Per-query group figures of one ranking (arrays of queries × group values; NaN where not defined)."""

    exposure_share: np.ndarray  # Σ ε over the value's documents / Σ ε over the query
    merit_share: np.ndarray  # the same with ε* (merit `ideal`) or the relevance (merit `relevance`)
    mean_exposure: np.ndarray  # mean ε per document of the value (Singh & Joachims' Exposure(G))
    mean_relevance: np.ndarray  # mean relevance per document of the value (Singh & Joachims' U(G))
    rest_exposure: np.ndarray  # the same two over the query's other documents
    rest_relevance: np.ndarray
    count: np.ndarray  # documents of the value
    awrf: np.ndarray  # per query (queries,)
    group_ee: np.ndarray  # per query (queries × 3): EE-L, EE-D, EE-R on group exposures
    document_ee: np.ndarray  # per query (queries × 3): EE-L, EE-D, EE-R on documents


def group_exposure(scores: np.ndarray, relevance: np.ndarray, codes: np.ndarray, query_ptr: np.ndarray,
                   attention: Attention, *, n_values: int, merit: str = "ideal") -> QueryGroups:
    """Group figures per query for one ranking (`scores`) of documents whose group value is `codes` (0 … n_values
    − 1). Queries of one document, and queries without merit (Σ ε* = 0, or Σ relevance = 0 with `merit:
    relevance`), get NaN. Kernel per query, loop over queries, as `checks.ranking`."""
    n_queries = len(query_ptr) - 1
    shape = (n_queries, n_values)
    out = {name: np.full(shape, np.nan) for name in ("exposure_share", "merit_share", "mean_exposure",
                                                      "mean_relevance", "rest_exposure", "rest_relevance")}
    count = np.zeros(shape)
    fair = np.full(n_queries, np.nan)
    group_ee = np.full((n_queries, 3), np.nan)
    document_ee = np.full((n_queries, 3), np.nan)
    for q, (a, b) in enumerate(itertools.pairwise(query_ptr)):
        c = codes[a:b]
        count[q] = np.bincount(c, minlength=n_values)
        if b - a < 2:
            continue
        r = relevance[a:b]
        eps = exposure(scores[a:b], r, attention)
        target = target_exposure(r, attention)
        worth = target if merit == "ideal" else np.asarray(r, dtype=np.float64)
        if eps.sum() <= 0 or worth.sum() <= 0:
            continue
        by_value = np.bincount(c, weights=eps, minlength=n_values)
        merit_by_value = np.bincount(c, weights=worth, minlength=n_values)
        relevance_by_value = np.bincount(c, weights=r, minlength=n_values)
        present = count[q] > 0
        rest = (b - a) - count[q]
        with np.errstate(invalid="ignore", divide="ignore"):
            out["exposure_share"][q] = by_value / eps.sum()
            out["merit_share"][q] = merit_by_value / worth.sum()
            out["mean_exposure"][q] = np.where(present, by_value / count[q], np.nan)
            out["mean_relevance"][q] = np.where(present, relevance_by_value / count[q], np.nan)
            out["rest_exposure"][q] = np.where(rest > 0, (eps.sum() - by_value) / rest, np.nan)
            out["rest_relevance"][q] = np.where(rest > 0, (r.sum() - relevance_by_value) / rest, np.nan)
        fair[q] = awrf(by_value[present], merit_by_value[present])
        group_ee[q] = expected_exposure(by_value, np.bincount(c, weights=target, minlength=n_values))
        document_ee[q] = expected_exposure(eps, target)
    return QueryGroups(count=count, awrf=fair, group_ee=group_ee, document_ee=document_ee, **out)


def rank_shifts(scores: np.ndarray, counterfactual: np.ndarray, query_ptr: np.ndarray) -> np.ndarray:
    """Per document: its position under the counterfactual scores minus its position under the actual ones
    (whole queries re-ranked; > 0: the actual inputs lift the document)."""
    out = np.zeros(len(scores), dtype=np.int64)
    for a, b in itertools.pairwise(query_ptr):
        out[a:b] = ranks(counterfactual[a:b]) - ranks(scores[a:b])
    return out


def bootstrap_of_means(values: np.ndarray, statistic: Callable[[np.ndarray], np.ndarray],
                       rng: np.random.Generator, *, n_resamples: int = 2000,
                       level: float = 0.95) -> tuple[float, float, float]:
    """A statistic of column means (e.g. a ratio of two means) with its percentile-bootstrap interval, resampling
    whole rows (queries, the sampling unit). `values` is (queries × m); `statistic` maps an (…, m) array of means
    to (…). Fewer than two rows: the value and no interval (NaN). The `statistic` form of
    `checks.estimate.estimate`."""
    found = estimate(values, rng, statistic=statistic, n_resamples=n_resamples, level=level)
    return found.mean, found.low, found.high


def ratio(means: np.ndarray) -> np.ndarray:
    """First column mean ÷ second (exposure ÷ merit share)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        out: np.ndarray = means[..., 0] / means[..., 1]
    return out


def ratio_of_ratios(means: np.ndarray) -> np.ndarray:
    """(m₀ / m₁) ÷ (m₂ / m₃): Singh & Joachims' disparate treatment ratio from mean exposure and mean relevance of
    a group and of the rest."""
    with np.errstate(invalid="ignore", divide="ignore"):
        out: np.ndarray = (means[..., 0] / means[..., 1]) / (means[..., 2] / means[..., 3])
    return out


def mean(means: np.ndarray) -> np.ndarray:
    return means[..., 0]
