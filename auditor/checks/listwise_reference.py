"""Ground truth for listwise attributions, and the peers' agreement metrics (issue 26).

A listwise game gives one value per coalition of features for a whole query (RankingSHAP: Kendall's tau-b between
the model's ranking and the ranking with the features outside the coalition masked; RankSHAP: an nDCG of that
ranking). Its Shapley values are the attributions every listwise explainer estimates. Here:

- `exact_shapley`: the exact Shapley values from the value of every coalition (2^M of them, indexed by bit code:
  bit i set = player i kept). Pure arithmetic on the value table.
- `reference_shapley`: the reference for one query from a game (a function keep-masks (C × M) → values (C,)):
  exact when 2^M coalitions are affordable (`max_exact` players), otherwise a high-sample estimate (antithetic
  permutation sampling, `permutations` of them, with a 95% interval per player). This is what the RankingSHAP paper
  calls "ground truth" attributions estimated with many samples.
- `footrule_at` and `l1_normalised`: the peers' agreement metrics between an estimate and the reference —
  Spearman's footrule over the reference's top-k features (3, 10, all) and the L1 distance of the two vectors
  each divided by its L1 norm.

Definitions chosen here (the RankingSHAP paper names the metrics without formulas):
- features are ranked by attribution value, descending (signed, as both papers rank "most important first"),
  ties to the lower feature index;
- footrule@k = Σ over the reference's top-k features f of |position of f in the estimate − position in the
  reference| (positions 0-based over all features); 0 = the same order on those features. "all" is k = M;
- L1 = Σ_f |a_f/‖a‖₁ − b_f/‖b‖₁| in [0, 2]; a zero vector stays zero (so L1 to it is 1 for any non-zero vector).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from math import factorial

import numpy as np

Game = Callable[[np.ndarray], np.ndarray]  # keep-masks (C × M, True = kept) → value per coalition (C,)


def coalition_masks(m: int) -> np.ndarray:
    """All 2^m coalitions as keep-masks, row c = bit code c (bit i set = player i kept)."""
    codes = np.arange(2 ** m, dtype=np.int64)
    return ((codes[:, None] >> np.arange(m, dtype=np.int64)) & 1).astype(bool)


def exact_shapley(values: np.ndarray, m: int) -> np.ndarray:
    """Shapley values of the m players from `values[c]` = v(coalition with bit code c), c = 0 … 2^m − 1:
    φ_i = Σ_{S ∌ i} |S|!(m − |S| − 1)!/m! · (v(S ∪ {i}) − v(S))."""
    values = np.asarray(values, dtype=np.float64)
    if values.shape != (2 ** m,):
        raise ValueError(f"need 2^{m} = {2 ** m} coalition values, got {values.shape}")
    if m == 0:
        return np.zeros(0)
    codes = np.arange(2 ** m, dtype=np.int64)
    size = np.zeros(2 ** m, dtype=np.int64)
    for i in range(m):
        size += (codes >> i) & 1
    weight = np.array([factorial(s) * factorial(m - s - 1) / factorial(m) for s in range(m)])
    phi = np.empty(m)
    for i in range(m):
        without = codes[((codes >> i) & 1) == 0]
        phi[i] = float(np.sum(weight[size[without]] * (values[without | (1 << i)] - values[without])))
    return phi


@dataclass(frozen=True)
class Reference:
    """Reference Shapley values of one query's game: `values` (M,), `exact` or sampled, the 95% interval half-width
    per player (0 when exact), v(∅) and v(all), and the coalitions evaluated."""

    values: np.ndarray
    exact: bool
    half_width: np.ndarray
    empty_value: float
    full_value: float
    coalitions: int


def permutation_design(m: int, permutations: int, rng: np.random.Generator) -> np.ndarray:
    """Antithetic permutations (P × m, P even): each drawn order followed by its reverse."""
    pairs = max(1, (permutations + 1) // 2)
    orders = np.argsort(rng.random((pairs, m)), axis=1)
    return np.stack([orders, orders[:, ::-1]], axis=1).reshape(-1, m)


def permutation_shapley(game: Game, m: int, permutations: int, rng: np.random.Generator, *,
                        batch_coalitions: int = 4096) -> tuple[np.ndarray, np.ndarray, float, float, int]:
    """Antithetic permutation sampling: mean marginal contributions along P orders (each with its reverse).

    Returns (φ (m,), half-width of the 95% interval (m,), v(∅), v(all), distinct coalitions evaluated). The interval
    is 1.96 × the standard error over antithetic pairs (a pair is one independent unit). Every order's contributions
    sum to v(all) − v(∅), so the estimate is exactly efficient. Coalitions shared by several orders (∅, all, and
    repeats) are evaluated once; the game is called on batches of at most `batch_coalitions` distinct coalitions.
    """
    orders = permutation_design(m, permutations, rng)
    n_orders = orders.shape[0]
    prefixes = np.zeros((n_orders, m + 1, m), dtype=bool)
    for step in range(1, m + 1):
        prefixes[:, step] = prefixes[:, step - 1]
        prefixes[np.arange(n_orders), step, orders[:, step - 1]] = True
    flat = prefixes.reshape(-1, m)
    packed = np.packbits(flat, axis=1)
    unique, inverse = np.unique(packed, axis=0, return_inverse=True)
    masks = np.unpackbits(unique, axis=1, count=m).astype(bool)
    values = np.concatenate([game(masks[s:s + batch_coalitions]) for s in range(0, masks.shape[0], batch_coalitions)])
    prefix_values = values[inverse.reshape(-1)].reshape(n_orders, m + 1)
    contributions = np.zeros((n_orders, m))
    np.put_along_axis(contributions, orders, np.diff(prefix_values, axis=1), axis=1)
    per_pair = contributions.reshape(-1, 2, m).mean(axis=1)
    phi = per_pair.mean(axis=0)
    n_pairs = per_pair.shape[0]
    se = per_pair.std(axis=0, ddof=1) / np.sqrt(n_pairs) if n_pairs > 1 else np.full(m, np.inf)
    return phi, 1.96 * se, float(prefix_values[0, 0]), float(prefix_values[0, -1]), int(masks.shape[0])


def reference_shapley(game: Game, m: int, rng: np.random.Generator, *, max_exact: int = 14,
                      permutations: int = 4000) -> Reference:
    """Exact Shapley values when m ≤ `max_exact` (all 2^m coalitions), else antithetic permutation sampling."""
    if m <= max_exact:
        masks = coalition_masks(m)
        values = np.concatenate([game(masks[s:s + 4096]) for s in range(0, masks.shape[0], 4096)])
        return Reference(exact_shapley(values, m), True, np.zeros(m), float(values[0]), float(values[-1]),
                         int(masks.shape[0]))
    phi, half, empty, full, count = permutation_shapley(game, m, permutations, rng)
    return Reference(phi, False, half, empty, full, count)


def feature_order(values: np.ndarray) -> np.ndarray:
    """Feature indices by value, descending; ties to the lower index."""
    values = np.asarray(values, dtype=np.float64)
    return np.lexsort((np.arange(values.shape[0]), -values))


def footrule_at(estimate: np.ndarray, reference: np.ndarray, k: int | None = None) -> float:
    """Spearman's footrule over the reference's top-k features (k None: all): Σ |pos_est(f) − pos_ref(f)|."""
    m = len(reference)
    k = m if k is None else min(k, m)
    pos_est = np.empty(m, dtype=np.int64)
    pos_est[feature_order(estimate)] = np.arange(m)
    ref_order = feature_order(reference)
    top = ref_order[:k]
    return float(np.abs(pos_est[top] - np.arange(k)).sum())


def l1_normalised(estimate: np.ndarray, reference: np.ndarray) -> float:
    """L1 distance of the two vectors, each divided by its own L1 norm (a zero vector stays zero)."""
    def unit(v: np.ndarray) -> np.ndarray:
        v = np.asarray(v, dtype=np.float64)
        norm = np.abs(v).sum()
        return v / norm if norm > 0 else v

    return float(np.abs(unit(estimate) - unit(reference)).sum())


def agreement(estimate: np.ndarray, reference: np.ndarray) -> dict[str, float]:
    """The peers' table for one query: footrule at 3, 10 and all features, and normalised L1."""
    return {"footrule@3": footrule_at(estimate, reference, 3), "footrule@10": footrule_at(estimate, reference, 10),
            "footrule@all": footrule_at(estimate, reference), "l1": l1_normalised(estimate, reference)}
