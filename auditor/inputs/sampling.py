"""Stratified query sampling: audit a few hundred queries of a web-scale dataset and still cover its variety.

Queries are grouped into strata by length (quartiles of documents per query) and label mix (no relevant document,
some, mostly relevant: at least half graded above 0), and each stratum gets its proportional share of the sample
(largest remainders), drawn without replacement from one seeded generator. Every query-level figure of the audit is
then an estimate over the sample; the intervals the evidence items report are bootstrap intervals over the sampled
queries, which is why the report states the sample next to them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

LABEL_MIX = ("no relevant document", "some relevant", "mostly relevant")


@dataclass(frozen=True)
class QuerySample:
    """Which queries of the population were taken (indices, ascending), and how each stratum was covered."""

    chosen: np.ndarray
    population_queries: int
    population_docs: int
    strata: list[dict[str, object]]  # {"stratum": name, "queries": population count, "sampled": count}

    def describe(self, sampled_docs: int) -> str:
        return (f"Audited a stratified sample of {len(self.chosen):,} of {self.population_queries:,} queries "
                f"({sampled_docs:,} of {self.population_docs:,} documents), strata by query length and label mix "
                "with proportional allocation; query-level intervals in this report are over the sampled queries.")


def label_mix(labels: np.ndarray, query_of_row: np.ndarray, n_queries: int) -> np.ndarray:
    """Per query: 0 no relevant document, 1 some (< half graded above 0), 2 mostly relevant."""
    docs = np.bincount(query_of_row, minlength=n_queries)
    relevant = np.bincount(query_of_row, weights=(labels > 0).astype(np.float64), minlength=n_queries)
    share = relevant / np.maximum(docs, 1)
    return np.where(relevant == 0, 0, np.where(share < 0.5, 1, 2)).astype(np.int64)


def stratified_sample(sizes: np.ndarray, mix: np.ndarray | None, count: int,
                      rng: np.random.Generator) -> QuerySample:
    """Sample `count` queries (all of them when count >= their number) stratified by length and label mix."""
    sizes = np.asarray(sizes, dtype=np.int64)
    n = len(sizes)
    edges = np.unique(np.quantile(sizes, [0.25, 0.5, 0.75])) if n else np.zeros(0)
    length_bin = np.searchsorted(edges, sizes, side="left")
    bounds = [int(sizes.min()) if n else 0, *(float(e) for e in edges), int(sizes.max()) if n else 0]
    mix = np.zeros(n, dtype=np.int64) if mix is None else np.asarray(mix, dtype=np.int64)
    key = length_bin * len(LABEL_MIX) + mix
    strata_keys = np.unique(key)
    members = {int(k): np.flatnonzero(key == k) for k in strata_keys}
    count = min(count, n)
    quota = {k: count * len(m) / n for k, m in members.items()} if n else {}
    taken = {k: int(np.floor(q)) for k, q in quota.items()}
    for k in sorted(quota, key=lambda k: (-(quota[k] - taken[k]), k))[:count - sum(taken.values())]:
        taken[k] += 1
    chosen = [rng.choice(members[k], size=taken[k], replace=False) for k in sorted(members) if taken[k]]
    picked = np.sort(np.concatenate(chosen)) if chosen else np.zeros(0, dtype=np.int64)
    strata = []
    for k in sorted(members):
        lb, mx = divmod(k, len(LABEL_MIX))
        low, high = bounds[lb], bounds[lb + 1]
        strata.append({"stratum": f"{_length_name(lb, low, high, len(edges))}, {LABEL_MIX[mx]}"
                                  if mix.any() else _length_name(lb, low, high, len(edges)),
                       "queries": len(members[k]), "sampled": int(taken[k])})
    return QuerySample(chosen=picked.astype(np.int64), population_queries=n, population_docs=int(sizes.sum()),
                       strata=strata)


def _length_name(index: int, low: float, high: float, n_edges: int) -> str:
    if n_edges == 0:
        return "all lengths"
    if index == 0:
        return f"≤ {high:g} docs"
    if index == n_edges:
        return f"> {low:g} docs"
    return f"{low:g}–{high:g} docs"
