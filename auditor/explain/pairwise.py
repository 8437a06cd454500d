"""Pairwise explanations (paper 003): why the model puts document A above document B.

The explained quantity is a pair function g(A, B) of the two scores: `margin` s(A) − s(B) (the default; what a
ranking acts on) or `probability` σ(s(A) − s(B)) (RankNet's pairwise probability). A feature's importance is its
Shapley value in the game whose value for a coalition T of known features is E[g | x_A^T, x_B^T] (Eq. 2-3).

The conditional expectation is estimated one of two ways:
- `adaptive` (ASIPair, Eq. 4-6): reference instances weighted by exp(−Q/2σ²), Q the whitened (Mahalanobis) distance
  to the document on the known features divided by |T|; the unknown features are taken from the best-weighted
  instances until the product of the two weight shares reaches η (Eq. 6's K1). Each document gets its own fills.
- `masking` (non-adaptive): both documents share the audit's masking rows with equal weights; then the pair
  Shapley values are exactly φ(A) − φ(B) of interventional SHAP with the same background (the test oracle).

ASIPair is exact over all 2^D coalitions for small D (Eq. 8) and uses permutation sampling otherwise (Eq. 9).
RAIPair (Algorithm 1) compresses each permutation's marginal contributions with a Bernoulli ±1/√M matrix, averages
over H permutations and recovers the sparse deviation from the mean importance by L1 minimisation under the noise
level ε (FISTA on the Lagrangian, λ set by bisection so the residual meets ε).
Every coalition of a pair is scored in one batched predict (or a few large ones); rows are counted by the model.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Literal

import numba
import numpy as np

from auditor.models.base import CountingRanker, rows_per_call

PairFunction = Literal["margin", "probability"]
FillKind = Literal["adaptive", "masking"]
_MAX_ROWS = 1_000_000  # rows per predict call
_SELECT_CELLS = 500_000  # reference weights `select_many` handles in one pass


@dataclass
class PairExplanation:
    """Shapley values of g(A, B) per feature; `value` − `base` = Σ phi up to sampling (exactly for ASIPair)."""

    method: str
    phi: np.ndarray
    value: float  # g(A, B): all features known
    base: float  # E[g] with no feature known (0 for the margin with shared fills)
    exact: bool
    permutations: int = 0
    n_model_rows: int = 0
    seconds: float = 0.0
    info: dict[str, float] = field(default_factory=dict)

    @property
    def efficiency_error(self) -> float:
        """|Σφ − (g(A,B) − E[g])|: zero for ASIPair (exact and permutation); RAIPair's recovery may leave a gap."""
        return float(abs(self.phi.sum() - (self.value - self.base)))


def pair_value(score_a: np.ndarray, score_b: np.ndarray, function: PairFunction) -> np.ndarray:
    diff = np.asarray(score_a, dtype=np.float64) - np.asarray(score_b, dtype=np.float64)
    return diff if function == "margin" else 0.5 * (1.0 + np.tanh(0.5 * diff))  # a logistic that never overflows


class ConditionalFill:
    """Reference instances and their weights for a coalition of known features (Eq. 4-6), or equal weights over a
    shared background when `kind` is `masking`."""

    def __init__(self, reference: np.ndarray, kind: FillKind = "adaptive", *, sigma: float = 0.2, eta: float = 0.9,
                 max_neighbours: int = 100, ridge: float = 1e-3) -> None:
        self.reference = np.ascontiguousarray(reference, dtype=np.float64)
        self.kind = kind
        self.sigma, self.eta, self.max_neighbours = sigma, eta, max_neighbours
        mean = np.nanmean(self.reference, axis=0)
        std = np.nanstd(self.reference, axis=0)
        self._mean, self._std = mean, np.where(std > 0, std, 1.0)
        self._z = np.nan_to_num((self.reference - mean) / self._std)
        # Correlation matrix with a small ridge: constant or duplicated features make Ω singular (MQ2008 has both).
        n_features = self.reference.shape[1]
        cov = _covariance(self._z) if self._z.shape[0] > 1 else np.zeros((n_features, n_features))
        self._cov = cov + ridge * np.eye(n_features)

    @property
    def adaptive(self) -> bool:
        return self.kind == "adaptive"

    @property
    def rows_per_side(self) -> int:
        """The most reference rows `select` gives one document of a coalition."""
        n = int(self.reference.shape[0])
        return n if self.kind == "masking" else min(self.max_neighbours, n)

    def select(self, x_a: np.ndarray, x_b: np.ndarray, known: np.ndarray,
               log_weights: tuple[np.ndarray, np.ndarray] | None = None
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(rows for A, weights for A, rows for B, weights for B): indices into the reference. `log_weights`, when
        given, are the two documents' log-weights for this coalition (see `prefix_log_weights`)."""
        n = self.reference.shape[0]
        if self.kind == "masking" or not known.any():
            # Equal weights: every instance when masking; Eq. 6's cut-off keeps the first ⌈√η·K⌉ otherwise (both
            # documents the same rows, so E[g] = 0 for the margin).
            take = n if self.kind == "masking" else min(self.max_neighbours, max(1, math.ceil(math.sqrt(self.eta) * n)))
            idx = np.arange(take)
            ones = np.ones(take)
            return idx, ones, idx, ones
        log_a, log_b = log_weights or (self._log_weights(x_a, known), self._log_weights(x_b, known))
        neg_a, neg_b = -log_a, -log_b
        sorted_a, sorted_b = np.sort(neg_a), np.sort(neg_b)  # the weights in descending order (values only)
        w_a = np.exp(-sorted_a + sorted_a[0])
        w_b = np.exp(-sorted_b + sorted_b[0])
        share = (np.cumsum(w_a) / w_a.sum()) * (np.cumsum(w_b) / w_b.sum())
        take = int(np.searchsorted(share, self.eta - 1e-12) + 1)
        take = max(1, min(take, self.max_neighbours, n))
        return _first(neg_a, sorted_a, take), w_a[:take], _first(neg_b, sorted_b, take), w_b[:take]

    def select_many(self, log_weights: list[tuple[np.ndarray, np.ndarray]]
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """`select` of many coalitions of an adaptive fill from their log-weights (each a coalition that knows some
        but not every feature), in a few array operations instead of a dozen a coalition: (rows, weights, take),
        the rows and weights of coalition 0's A, then its B, then coalition 1's A ..., `take` rows a side for each
        coalition. The same rows and weights as `select` one at a time (rows sort, sum and accumulate exactly as
        alone; ties in index order)."""
        n = self.reference.shape[0]
        batch = max(1, _SELECT_CELLS // (2 * n))  # coalitions a pass: its arrays stay ~32 MB each
        if len(log_weights) > batch:
            parts = [self.select_many(log_weights[start:start + batch]) for start in range(0, len(log_weights), batch)]
            return (np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]),
                    np.concatenate([p[2] for p in parts]))
        neg = -np.stack([pair for both in log_weights for pair in both])  # rows: A, B of coalition 0, then 1 …
        ordered = np.sort(neg, axis=1)
        w = np.exp(-ordered + ordered[:, :1])
        cumulative = np.cumsum(w, axis=1) / w.sum(axis=1)[:, None]
        share = cumulative[0::2] * cumulative[1::2]
        # share never decreases along a row, so searchsorted's position is the count below the cut
        take = np.clip(np.count_nonzero(share < self.eta - 1e-12, axis=1) + 1, 1, min(self.max_neighbours, n))
        per_row = np.repeat(take, 2)
        # each row's first `take` of a stable argsort: its values up to the take-th smallest, by value then index
        row, col = np.nonzero(neg <= ordered[np.arange(len(neg)), per_row - 1][:, None])
        order = np.lexsort((col, neg[row, col], row))
        row, col = row[order], col[order]
        rank = np.arange(len(row)) - np.searchsorted(row, row)
        chosen = rank < per_row[row]
        weights = w[np.arange(w.shape[1]) < per_row[:, None]]  # each row's first `take`, row after row
        return col[chosen], weights, take

    def prefix_log_weights(self, x: np.ndarray, permutation: np.ndarray) -> np.ndarray:
        """Log-weights (D+1 × K) for every prefix of a feature order, from one Cholesky factor: with Ω permuted
        into that order, the first j whitened coordinates depend only on the first j features, so the prefix
        distances are running sums of one triangular solve. Row 0 (nothing known) is all zeros."""
        q = self._distances(x, permutation)
        return np.vstack([np.zeros((1, q.shape[1])), -q / (2.0 * self.sigma ** 2)])

    def _log_weights(self, x: np.ndarray, known: np.ndarray) -> np.ndarray:
        log_weights: np.ndarray = -self._distances(x, np.flatnonzero(known))[-1] / (2.0 * self.sigma ** 2)
        return log_weights

    def _distances(self, x: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """Q of every reference row (columns) for each prefix of `cols` (rows): the squared Ω_T^{-1/2}-whitened
        differences to x over the first j features, summed and divided by j. Which neighbours a coalition takes is
        decided by the order of near-equal distances, so they are computed by our own loops in a fixed order, the
        same bits on every machine: with numpy's covariance and LAPACK's factor and solve they differed in their last
        bits between OpenBLAS's CPU kernels, and one bookstore pair took other neighbours and moved by 18%."""
        z = np.nan_to_num((x - self._mean) / self._std)
        diff = np.ascontiguousarray((self._z[:, cols] - z[cols]).T)
        return _prefix_distances(_cholesky(np.ascontiguousarray(self._cov[np.ix_(cols, cols)])), diff)


def _first(values: np.ndarray, ordered: np.ndarray, count: int) -> np.ndarray:
    """The first `count` indices of `np.argsort(values, kind="stable")` (ties in index order: deterministic),
    `ordered` being `np.sort(values)`: only the values up to the count-th are sorted by index."""
    candidates = np.flatnonzero(values <= ordered[count - 1])
    return candidates[np.argsort(values[candidates], kind="stable")[:count]]


class PairGame:
    """The coalition game of one pair: v(T) = E[g | x_A^T, x_B^T], many coalitions scored in one predict."""

    def __init__(self, model: CountingRanker, x_a: np.ndarray, x_b: np.ndarray, fill: ConditionalFill,
                 function: PairFunction = "margin") -> None:
        self.model, self.fill, self.function = model, fill, function
        self.x_a = np.asarray(x_a, dtype=np.float64)
        self.x_b = np.asarray(x_b, dtype=np.float64)
        self.n_features = self.x_a.shape[0]

    def values(self, masks: np.ndarray, log_weights: list[tuple[np.ndarray, np.ndarray]] | None = None
               ) -> np.ndarray:
        """v(T) for each boolean keep-mask (C × D); `log_weights` (per mask, for A and B) when already known. The
        masks are scored in chunks whose rows fit one predict call (`rows_per_call`): on wide data the rows of
        every coalition at once would not fit in memory."""
        masks = np.asarray(masks, dtype=bool).reshape(-1, self.n_features)
        out = np.empty(masks.shape[0])
        limit, start, rows = rows_per_call(self.n_features, _MAX_ROWS), 0, 0
        for i in range(masks.shape[0] + 1):
            width = 2 if i == masks.shape[0] or masks[i].all() else 2 * self.fill.rows_per_side
            if i == masks.shape[0] or (rows + width > limit and i > start):
                out[start:i] = self._chunk(masks[start:i], None if log_weights is None else log_weights[start:i])
                start, rows = i, 0
            rows += width
        return out

    def _chunk(self, masks: np.ndarray, log_weights: list[tuple[np.ndarray, np.ndarray]] | None) -> np.ndarray:
        """v(T) of each mask: every row a document (0: A, 1: B) under a coalition's mask, its unknown features from
        a reference row, weighted. Rows run in sides: coalition c's A side, then its B side; the coalitions that
        know some features of an adaptive fill are selected in one pass (`select_many`), the others one by one."""
        full = np.asarray(masks.all(axis=1), dtype=bool)
        batched = log_weights is not None and self.fill.adaptive
        some = np.flatnonzero(masks.any(axis=1) & ~full) if batched else np.empty(0, dtype=np.intp)
        coalitions, fills, weights, lengths = [some], [], [], []
        if some.size:
            rows, w, take = self.fill.select_many([log_weights[i] for i in some])  # type: ignore[index]
            fills.append(rows)
            weights.append(w)
            lengths.append(np.repeat(take, 2))
        alone = np.setdiff1d(np.arange(len(masks)), some)
        coalitions.append(alone)
        for i in alone.tolist():
            if bool(full[i]):  # everything known: the documents themselves (the fill row is never read)
                idx_a = idx_b = np.zeros(1, dtype=np.intp)
                w_a = w_b = np.ones(1)
            else:
                idx_a, w_a, idx_b, w_b = self.fill.select(self.x_a, self.x_b, masks[i],
                                                          log_weights[i] if log_weights is not None else None)
            fills += [idx_a, idx_b]
            weights += [w_a, w_b]
            lengths.append(np.array([len(idx_a), len(idx_b)]))
        order = np.concatenate(coalitions)  # the coalition of each side pair, in row order
        side_rows = np.concatenate(lengths)
        docs = np.repeat(np.tile(np.array([0, 1]), len(order)), side_rows)
        keep = masks[np.repeat(order, side_rows[0::2] + side_rows[1::2])]
        scores = self._score_rows(docs, np.concatenate(fills), keep)
        weight = np.concatenate(weights)
        out = np.empty(len(masks))
        starts = np.concatenate([[0], np.cumsum(side_rows)[:-1]])
        if self.function == "margin":  # Eq. 6's double sum separates for a difference of scores
            means = np.add.reduceat(weight * scores, starts) / np.add.reduceat(weight, starts)
            out[order] = means[0::2] - means[1::2]
            return out
        for c, coalition in enumerate(order.tolist()):
            a, b = starts[2 * c], starts[2 * c + 1]
            w_a, w_b = weight[a:b], weight[b:b + side_rows[2 * c + 1]]
            g = pair_value(scores[a:b][:, None], scores[b:b + len(w_b)][None, :], self.function)
            out[coalition] = w_a @ g @ w_b / (w_a.sum() * w_b.sum())
        return out

    def _score_rows(self, doc_of_row: np.ndarray, fill_of_row: np.ndarray, keep: np.ndarray) -> np.ndarray:
        """Scores of rows `where(keep, [x_A, x_B][doc], reference[fill])`: read off the trees when the model's array
        form is bit-identical to it (`scoring.masked_scoring`, counted as model rows), else built and predicted."""
        from auditor.models.masking import fill_rows_scores

        documents = np.stack([self.x_a, self.x_b])
        scores = fill_rows_scores(self.model, documents, self.fill.reference, doc_of_row, fill_of_row, keep)
        if scores is not None:
            return scores
        rows = np.where(keep, documents[doc_of_row], self.fill.reference[fill_of_row])
        return np.concatenate([self.model.predict(rows[s:s + _MAX_ROWS]) for s in range(0, len(rows), _MAX_ROWS)])


def exact_shapley(game: PairGame) -> tuple[np.ndarray, float, float]:
    """Eq. 8 over all 2^D coalitions: (phi, v(all), v(none))."""
    d = game.n_features
    codes = np.arange(2 ** d, dtype=np.int64)
    masks = ((codes[:, None] >> np.arange(d)) & 1).astype(bool)
    values = game.values(masks)
    sizes = masks.sum(axis=1)
    weight = np.array([math.factorial(s) * math.factorial(d - s - 1) / math.factorial(d) if s < d else 0.0
                       for s in range(d + 1)])
    phi = np.zeros(d)
    for f in range(d):
        without = ~masks[:, f]
        phi[f] = np.sum(weight[sizes[without]] * (values[codes[without] | (1 << f)] - values[without]))
    return phi, float(values[-1]), float(values[0])


def permutation_contributions(game: PairGame, permutations: np.ndarray) -> tuple[np.ndarray, float, float]:
    """Marginal contributions Δ (H × D) of each feature to its predecessors in each permutation (Eq. 9), with
    every distinct coalition scored once: (Δ, v(all), v(none))."""
    h, d = permutations.shape
    prefixes = np.zeros((h, d + 1, d), dtype=bool)
    for step in range(1, d + 1):
        prefixes[:, step] = prefixes[:, step - 1]
        prefixes[np.arange(h), step, permutations[:, step - 1]] = True
    flat = prefixes.reshape(-1, d)
    unique, inverse = np.unique(np.packbits(flat, axis=1), axis=0, return_inverse=True)
    inverse = inverse.reshape(-1)
    representative = np.zeros(len(unique), dtype=np.int64)
    representative[inverse] = np.arange(len(flat))
    log_weights = None
    if game.fill.adaptive:
        prefix_a = [game.fill.prefix_log_weights(game.x_a, p) for p in permutations]
        prefix_b = [game.fill.prefix_log_weights(game.x_b, p) for p in permutations]
        log_weights = [(prefix_a[r // (d + 1)][r % (d + 1)], prefix_b[r // (d + 1)][r % (d + 1)])
                       for r in representative]
    values = game.values(flat[representative], log_weights)[inverse].reshape(h, d + 1)
    delta = np.zeros((h, d))
    steps = np.diff(values, axis=1)
    delta[np.arange(h)[:, None], permutations] = steps
    return delta, float(values[0, -1]), float(values[0, 0])


class AsiPair:
    """ASIPair: exact Shapley values for D ≤ `exact_max_features`, else the mean over `permutations` samples."""

    name = "asipair"

    def __init__(self, fill: ConditionalFill, *, function: PairFunction = "margin", exact_max_features: int = 10,
                 permutations: int = 64) -> None:
        self.fill, self.function = fill, function
        self.exact_max_features, self.permutations = exact_max_features, permutations

    def explain(self, model: CountingRanker, x_a: np.ndarray, x_b: np.ndarray, rng: np.random.Generator
                ) -> PairExplanation:
        rows_before, start = model.rows_evaluated, time.perf_counter()
        game = PairGame(model, x_a, x_b, self.fill, self.function)
        if game.n_features <= self.exact_max_features:
            phi, value, base = exact_shapley(game)
            exact, count = True, 0
        else:
            perms = np.argsort(rng.random((self.permutations, game.n_features)), axis=1)
            delta, value, base = permutation_contributions(game, perms)
            phi, exact, count = delta.mean(axis=0), False, self.permutations
        return PairExplanation("asipair", phi, value, base, exact, count, model.rows_evaluated - rows_before,
                               time.perf_counter() - start)


class RaiPair:
    """RAIPair (Algorithm 1): H permutations, M Bernoulli measurements, sparse recovery of the deviation from the
    mean importance. `noise` ε: a number, or `auto` = the standard error of the measurements over permutations.
    `efficiency` (not in the paper) re-centres the recovered deviation so the values add up to g − E[g]."""

    name = "raipair"

    def __init__(self, fill: ConditionalFill, *, function: PairFunction = "margin", measurements: int | None = None,
                 permutations: int = 8, noise: float | Literal["auto"] = "auto", efficiency: bool = False) -> None:
        self.fill, self.function = fill, function
        self.measurements, self.permutations, self.noise = measurements, permutations, noise
        self.efficiency = efficiency

    def explain(self, model: CountingRanker, x_a: np.ndarray, x_b: np.ndarray, rng: np.random.Generator
                ) -> PairExplanation:
        rows_before, start = model.rows_evaluated, time.perf_counter()
        game = PairGame(model, x_a, x_b, self.fill, self.function)
        d = game.n_features
        m = self.measurements or default_measurements(d)
        perms = np.argsort(rng.random((self.permutations, d)), axis=1)
        delta, value, base = permutation_contributions(game, perms)  # steps 1-5
        matrix = rng.choice([-1.0, 1.0], size=(m, d)) / math.sqrt(m)  # the random Bernoulli measurement matrix
        y = matrix @ delta.T  # steps 6-8: Y[m, h]
        b = y.mean(axis=1)  # steps 10-12
        mean_importance = (value - base) / d
        target = b - mean_importance * matrix.sum(axis=1)
        if self.noise == "auto":
            eps = float(np.sqrt(y.var(axis=1, ddof=1).sum() / y.shape[1])) if y.shape[1] > 1 \
                else 1e-3 * float(np.linalg.norm(target))
        else:
            eps = float(self.noise)
        deviation = l1_recovery(matrix, target, eps)  # step 13
        if self.efficiency:  # our option: spread the recovery's efficiency gap evenly so that Σφ = g − E[g]
            deviation = deviation - deviation.mean()
        phi = mean_importance + deviation  # step 14
        return PairExplanation("raipair", phi, value, base, False, self.permutations,
                               model.rows_evaluated - rows_before, time.perf_counter() - start,
                               info={"measurements": float(m), "noise": eps})


def default_measurements(n_features: int) -> int:
    """M of the order s·log(D/s) with s = ⌈D/4⌉ expected discriminative features, at least 2 and at most D."""
    s = max(1, math.ceil(n_features / 4))
    return int(min(n_features, max(2, math.ceil(2 * s * math.log(max(n_features / (2 * s), 1.0) + 1.0) + 1))))


def l1_recovery(matrix: np.ndarray, target: np.ndarray, eps: float, *, iterations: int = 3000) -> np.ndarray:
    """argmin ‖v‖₁ s.t. ‖target − A v‖₂ ≤ ε (Eq. 11): FISTA on ½‖Av − b‖² + λ‖v‖₁ along a decreasing path of λ
    (each solve warm-started from the last) to the first λ whose solution meets ε, then bisection between that λ
    and the previous one: the largest λ (the sparsest solution) that meets the constraint."""
    if np.linalg.norm(target) <= eps:
        return np.zeros(matrix.shape[1])
    lipschitz = float(np.linalg.norm(matrix, 2) ** 2)
    high = float(np.max(np.abs(matrix.T @ target)))  # at this λ the solution is 0
    v = np.zeros(matrix.shape[1])
    lam = failed = high
    while True:
        lam *= 0.6
        v = _fista(matrix, target, lam, lipschitz, iterations, v)
        if np.linalg.norm(target - matrix @ v) <= eps:
            break
        if lam < high * 1e-10:  # ε below what any λ reaches (e.g. ε = 0 with noise): the least-norm-residual end
            return v
        failed = lam
    best, low, high = v, lam, failed
    for _ in range(12):
        mid = math.sqrt(low * high)
        trial = _fista(matrix, target, mid, lipschitz, iterations, best)
        if np.linalg.norm(target - matrix @ trial) <= eps:
            best, low = trial, mid
        else:
            high = mid
    return best


@numba.njit(cache=True, nogil=True)
def _covariance(z: np.ndarray) -> np.ndarray:  # pragma: no cover - compiled
    """np.cov(z, rowvar=False), its sums taken in row order (the same on every machine; BLAS's are not)."""
    n, d = z.shape
    mean = np.zeros(d)
    for i in range(n):
        for j in range(d):
            mean[j] += z[i, j]
    mean /= n
    centred = z - mean
    cov = np.zeros((d, d))
    for i in range(n):
        for j in range(d):
            c = centred[i, j]
            for k in range(j, d):
                cov[j, k] += c * centred[i, k]
    for j in range(d):
        for k in range(j, d):
            cov[j, k] /= n - 1
            cov[k, j] = cov[j, k]
    return cov


@numba.njit(cache=True, nogil=True)
def _cholesky(a: np.ndarray) -> np.ndarray:  # pragma: no cover - compiled
    """The lower Cholesky factor of a positive definite `a` (the ridge makes Ω so), in a fixed order."""
    d = a.shape[0]
    factor = np.zeros((d, d))
    for j in range(d):
        s = a[j, j]
        for k in range(j):
            s -= factor[j, k] * factor[j, k]
        factor[j, j] = math.sqrt(s)
        for i in range(j + 1, d):
            s = a[i, j]
            for k in range(j):
                s -= factor[i, k] * factor[j, k]
            factor[i, j] = s / factor[j, j]
    return factor


@numba.njit(cache=True, nogil=True)
def _prefix_distances(factor: np.ndarray, diff: np.ndarray) -> np.ndarray:  # pragma: no cover - compiled
    """(d × K) running mean of squared whitened differences: w solves factor · w = diff (d × K, a column per
    reference row) by forward substitution, every column by the same operations (the loop over columns innermost
    vectorises without reordering any column's sums); row j holds Σ_{i≤j} w_i² / (j + 1)."""
    d, rows = diff.shape
    w = np.empty((d, rows))
    out = np.empty((d, rows))
    total = np.zeros(rows)
    for j in range(d):
        for r in range(rows):
            w[j, r] = diff[j, r]
        for k in range(j):
            c = factor[j, k]
            for r in range(rows):
                w[j, r] -= c * w[k, r]
        for r in range(rows):
            w[j, r] /= factor[j, j]
            total[r] += w[j, r] * w[j, r]
            out[j, r] = total[r] / (j + 1)
    return out


@numba.njit(cache=True)
def _fista(matrix: np.ndarray, target: np.ndarray, lam: float, lipschitz: float, iterations: int,
           start: np.ndarray) -> np.ndarray:  # pragma: no cover - compiled
    gram, corr = matrix.T @ matrix, matrix.T @ target
    v = start.copy()
    z, t = v.copy(), 1.0
    step = 1.0 / max(lipschitz, 1e-12)
    for _ in range(iterations):
        u = z - step * (gram @ z - corr)
        v_next: np.ndarray = np.sign(u) * np.maximum(np.abs(u) - step * lam, 0.0)
        t_next = 0.5 * (1.0 + math.sqrt(1.0 + 4.0 * t * t))
        z = v_next + ((t - 1.0) / t_next) * (v_next - v)
        if np.max(np.abs(v_next - v)) <= 1e-10 * max(1.0, np.max(np.abs(v_next))):
            return v_next
        v, t = v_next, t_next
    return v
