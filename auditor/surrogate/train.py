"""The two uses of ILMART: a surrogate of a black-box ranker (targets from its scores) and a model trained on
relevance labels (`auditor train-ilmart`), which a team can then audit and deploy as the interpretable ranker.

Validation queries for early stopping are a seeded share of the training queries (whole queries, never rows).

A surrogate needs only the black box's scores, so its training queries can be given more documents than exist:
`recombine` synthetic documents per real one, each a real document of the query whose features are, each with
probability `mix`, taken from another random document of the same query (MUNGE-style recombination, Buciluǎ et
al. 2006), scored by the black box. The validation queries stay real. It is an option, not the evidence's default:
on MQ2008 it raised fidelity with early stopping on a separate validation split (benchmarks/reproduce_ilmart.py,
docs/reproductions/ilmart.md) but not with the evidence's protocol of stopping on held-out training queries
(auditor/evidence/kinds/surrogate/measure.py).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np

from auditor.inputs.data import RankingData
from auditor.surrogate.fidelity import rank_grades, standardised
from auditor.surrogate.ilmart import IlmartConfig, IlmartFit, RankSet, fit_ilmart

Target = Literal["regression", "lambdarank"]


def split_queries(query_ptr: np.ndarray, rng: np.random.Generator, *, share: float = 0.2
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Query indices for training and for validation (at least one query each when there are two or more)."""
    n = len(query_ptr) - 1
    if n < 2:
        raise ValueError("a surrogate needs at least two queries to hold some out for early stopping")
    n_valid = min(max(1, round(share * n)), n - 1)
    order = rng.permutation(n)
    return np.sort(order[n_valid:]), np.sort(order[:n_valid])


def take_queries(X: np.ndarray, y: np.ndarray, query_ptr: np.ndarray, queries: np.ndarray) -> RankSet:
    """The rows of the given queries, queries kept contiguous and in the given order."""
    rows = np.concatenate([np.arange(query_ptr[q], query_ptr[q + 1]) for q in queries])
    return RankSet(X[rows], y[rows], np.diff(query_ptr)[queries])


@dataclass
class SurrogateFit:
    fit: IlmartFit
    target: Target
    n_train_queries: int
    n_valid_queries: int
    n_synthetic: int = 0  # synthetic documents added to the training queries


def recombine(X: np.ndarray, query_ptr: np.ndarray, queries: np.ndarray, rng: np.random.Generator, *,
              per_document: int, mix: float = 0.5) -> tuple[np.ndarray, np.ndarray]:
    """The given queries' real rows followed, query by query, by `per_document` synthetic rows per real one (module
    docstring); returns the rows and the new query pointer (the queries in the given order)."""
    if per_document < 0 or not 0.0 <= mix <= 1.0:
        raise ValueError(f"per_document must be >= 0 and mix in [0, 1]; got {per_document}, {mix}")
    blocks, sizes = [], []
    for q in queries:
        real = X[query_ptr[q]:query_ptr[q + 1]]
        n = real.shape[0]
        m = per_document * n
        base, donor = real[rng.integers(0, n, m)], real[rng.integers(0, n, m)]
        blocks.append(np.vstack([real, np.where(rng.random(base.shape) < mix, donor, base)]))
        sizes.append(n + m)
    return np.vstack(blocks), np.concatenate([[0], np.cumsum(sizes)])


def fit_surrogate(X: np.ndarray, blackbox: np.ndarray, query_ptr: np.ndarray, rng: np.random.Generator, *,
                  target: Target = "regression", levels: int = 10, validation_share: float = 0.2,
                  config: IlmartConfig | None = None, score: Callable[[np.ndarray], np.ndarray] | None = None,
                  synthetic_per_document: int = 0, mix: float = 0.5,
                  on_round: Callable[[], None] | None = None) -> SurrogateFit:
    """ILMART fitted to a black box's scores on (X, query_ptr): per-query standardised scores with a regression
    objective, or per-query rank grades with lambdarank (surrogate/fidelity.py). With `synthetic_per_document`
    > 0 and `score` (the black box), the training queries also get recombined synthetic documents (module
    docstring); validation queries stay real."""
    config = replace(config or IlmartConfig(), objective=target)

    def targets(scores: np.ndarray, ptr: np.ndarray) -> np.ndarray:
        return standardised(scores, ptr) if target == "regression" else rank_grades(scores, ptr, levels=levels)

    y = targets(blackbox, query_ptr)
    train_q, valid_q = split_queries(query_ptr, rng, share=validation_share)
    if synthetic_per_document > 0:
        if score is None:
            raise ValueError("synthetic documents need `score`, the black box to score them")
        X_train, ptr = recombine(X, query_ptr, train_q, rng, per_document=synthetic_per_document, mix=mix)
        train = RankSet.from_ptr(X_train, targets(np.asarray(score(X_train), dtype=np.float64), ptr), ptr)
    else:
        train = take_queries(X, y, query_ptr, train_q)
    fit = fit_ilmart(train, take_queries(X, y, query_ptr, valid_q), config=config, on_round=on_round)
    n_real = int(np.diff(query_ptr)[train_q].sum())
    return SurrogateFit(fit=fit, target=target, n_train_queries=len(train_q), n_valid_queries=len(valid_q),
                        n_synthetic=len(train.y) - n_real)


def fit_on_labels(data: RankingData, rng: np.random.Generator, *, validation_share: float = 0.2,
                  config: IlmartConfig | None = None) -> IlmartFit:
    """ILMART trained on relevance labels (lambdarank), validation queries held out of `data`."""
    if data.y is None:
        raise ValueError("training ILMART on labels needs a dataset with relevance labels")
    config = replace(config or IlmartConfig(), objective="lambdarank")
    train_q, valid_q = split_queries(data.query_ptr, rng, share=validation_share)
    return fit_ilmart(take_queries(data.X, data.y, data.query_ptr, train_q),
                      take_queries(data.X, data.y, data.query_ptr, valid_q), config=config,
                      feature_names=_lightgbm_names(data.feature_names))


def _lightgbm_names(names: list[str]) -> list[str]:
    """LightGBM refuses spaces and JSON special characters in feature names: replace them by '_'."""
    return [re.sub(r'[\s,:"\[\]{}]', "_", name) for name in names]
