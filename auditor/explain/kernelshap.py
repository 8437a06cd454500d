"""KernelSHAP for one document's score (SHAP-1 / SHAP-5 of paper 000), batched into one model call.

Why our own and not `shap.KernelExplainer`: shap scores the perturbed rows of one document at a time, and it
cannot use the masker the rest of the audit uses. Here every perturbed row of every requested document is built
into one matrix and scored by a single `model.predict` (so `CountingRanker` counts exactly what was spent), while
the estimator itself is shap's, step for step, so the numbers agree with shap's statistically:

- value of a coalition S for document x: v(S) = mean over background rows b of f(x_S, b_rest); φ0 = v(∅) is the mean
  score of the background, v(all) = f(x);
- features whose value equals every background row's cannot change any v(S): they get φ = 0 and are left out of
  M, as shap does (shap tests `np.allclose`; we test exact equality, which is exactly the null-player case);
- if 2^M − 2 ≤ nsamples every coalition is enumerated with the Shapley kernel weight, which gives the exact
  Shapley values; otherwise coalitions are sampled the way `KernelExplainer.explain` does it (whole subset sizes
  enumerated while the budget allows, smallest and largest first, then the kernel distribution over the remaining
  sizes with complements paired, repeats adding weight, and the sampled weights rescaled to what is left);
- weighted least squares with the efficiency constraint Σφ = f(x) − φ0 imposed by eliminating the last feature,
  as `KernelExplainer.solve` does, with no l1 regularisation.

Samples per document: `nsamples="auto"` (the default) is shap's own rule, 2M + 2048 coalitions for a document with
M varying features (all 2^M − 2 coalitions, i.e. exact Shapley values, when that is fewer: M ≤ 11). The paper's fixed
200 is no better than random feature sets at 136 features (docs/benchmarks.md, "KernelSHAP on wide data").

Convergence (`KernelShapResult.replicates`): how much would the estimate move if its coalitions were drawn again? A
delete-a-group jackknife over the sampled coalitions answers it without scoring more rows. The sampling units (a
draw and its paired complement) are dealt into `JACKKNIFE_GROUPS` groups (unit mod 10); leaving one group out
(the remaining sampled weights rescaled to the sampled total, the enumerated coalitions kept) and solving again
gives φ_(g); φ̂ + √(G − 1)·(φ_(g) − mean_g φ_(g)) are G pseudo-replicates with the estimate's own sampling spread,
so two of them differ as two independent runs would. Measured against real reruns (two seeds) on MQ2008 and the
136-feature data, the sets of two replicates agree about as often as the sets of two runs (docs/benchmarks.md).
Like every resampling check of a regression it is optimistic when the coalitions barely outnumber the features,
so documents with fewer than 2M sampled coalitions are reported as underdetermined instead (`underdetermined`).
Where every coalition was enumerated the estimate is exact: the replicates equal it.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from math import comb
from typing import Literal

import numpy as np

from auditor.explain.base import Attributions, QueryView
from auditor.explain.perturb import single_threaded_blas
from auditor.models.base import CountingRanker, rows_per_call
from auditor.models.masking import Masker, fill_rows_scores

_OFF_TREE_ROWS = 250_000  # coalition rows read off the trees at once (their keep-masks: F bytes each)

BackgroundKind = Literal["masking", "sample"]
JACKKNIFE_GROUPS = 10


@dataclass(frozen=True)
class CoalitionDesign:
    """Coalitions over M features (K × M, True = feature taken from the document) and their regression weights.

    The first `n_fixed` rows are the fully enumerated subset sizes (deterministic); the rest were sampled.
    """

    masks: np.ndarray
    weights: np.ndarray
    n_fixed: int
    unit: np.ndarray | None = None  # per row: its sampling unit (a draw and its complement), −1 if enumerated


@dataclass(frozen=True)
class KernelShapResult:
    """φ (docs × F), the base value φ0 = mean background score, and f(x) for each document; `replicates`
    (G × docs × F) the jackknife pseudo-replicates of the estimate (module docstring; equal to `values` where
    nothing was sampled), `coalitions` the coalitions each document's regression used and `underdetermined` the
    documents whose sampled regression had fewer coalitions than twice its features."""

    values: np.ndarray
    base_value: float
    scores: np.ndarray
    replicates: np.ndarray | None = None
    coalitions: np.ndarray | None = None
    underdetermined: np.ndarray | None = None


class KernelShap:
    """Batched KernelSHAP: `attribute` returns (len(docs) × F) Shapley value estimates of each document's score."""

    name = "kernelshap"

    def __init__(self, nsamples: int | Literal["auto"] = "auto", background: BackgroundKind = "masking",
                 background_size: int = 100, *, max_rows: int = 2_000_000, scale: float = 1.0) -> None:
        if nsamples != "auto" and (isinstance(nsamples, bool) or not isinstance(nsamples, int) or nsamples < 1):
            raise ValueError(f"nsamples must be 'auto' or an integer of at least 1, got {nsamples!r}")
        if not 0 < scale <= 1:
            raise ValueError(f"scale must be in (0, 1], got {scale}")
        if background not in ("masking", "sample"):
            raise ValueError(f"background must be 'masking' or 'sample', got {background!r}")
        if background_size < 1:
            raise ValueError(f"background_size must be at least 1, got {background_size}")
        self.nsamples = nsamples
        self.scale = float(scale)  # a share of the samples (confidence's shorter stability rerun)
        self.background = background
        self.background_size = int(background_size)
        self.max_rows = int(max_rows)

    def samples_for(self, m: int) -> int:
        """Coalitions for a document with m varying features: 2m + 2048 for "auto" (shap's rule), else `nsamples`;
        times `scale`. (coalition_design enumerates all 2^m − 2 instead when that is not more.)"""
        n = 2 * m + 2048 if self.nsamples == "auto" else int(self.nsamples)
        return n if self.scale >= 1 else max(10, int(n * self.scale))

    def attribute(self, model: CountingRanker, query: QueryView, docs: np.ndarray, masker: Masker,
                  rng: np.random.Generator) -> Attributions:
        """φ of each document, with the convergence check as diagnostics: `replicates` (G × docs × F, the
        jackknife pseudo-replicates), `coalitions` and `underdetermined` per document."""
        result = self.explain(model, query, docs, masker, rng)
        return Attributions(values=result.values, diagnostics={
            "replicates": result.replicates, "coalitions": result.coalitions,
            "underdetermined": result.underdetermined})

    def background_rows(self, query: QueryView, masker: Masker, rng: np.random.Generator) -> np.ndarray:
        """The rows that stand in for absent features: the masker's fill, or a sample of the query's background."""
        if self.background == "masking":
            return np.asarray(masker.fill, dtype=np.float64)
        pool = np.asarray(query.background, dtype=np.float64)
        take = rng.choice(pool.shape[0], size=min(self.background_size, pool.shape[0]), replace=False)
        rows: np.ndarray = pool[take]
        return rows

    def explain(self, model: CountingRanker, query: QueryView, docs: np.ndarray, masker: Masker,
                rng: np.random.Generator) -> KernelShapResult:
        docs = np.asarray(docs, dtype=np.intp).reshape(-1)
        X = np.asarray(query.X, dtype=np.float64)[docs]
        n_docs, n_features = X.shape
        bg = self.background_rows(query, masker, rng)
        n_bg = bg.shape[0]

        # One design per document: only the features where the document differs from some background row play.
        varying = [np.flatnonzero(_differs(x, bg)) for x in X]
        designs = [coalition_design(len(v), self.samples_for(len(v)), rng) for v in varying]

        # Every coalition of every document as a full-width keep-mask, documents one after another.
        keep_blocks, owner_blocks = [], []
        for d, (v, design) in enumerate(zip(varying, designs, strict=True)):
            keep = np.zeros((design.masks.shape[0], n_features), dtype=bool)
            keep[:, v] = design.masks
            keep_blocks.append(keep)
            owner_blocks.append(np.full(keep.shape[0], d, dtype=np.intp))
        keep = np.concatenate(keep_blocks) if keep_blocks else np.zeros((0, n_features), dtype=bool)
        owner = np.concatenate(owner_blocks) if owner_blocks else np.zeros(0, dtype=np.intp)

        head, coalition_scores = self._score(model, X, bg, keep, owner)
        base_value = float(head[:n_bg].mean())
        fx = head[n_bg:]
        ey = coalition_scores.reshape(-1, n_bg).mean(axis=1)

        phi = np.zeros((n_docs, n_features))
        replicates = np.zeros((JACKKNIFE_GROUPS, n_docs, n_features))
        start = 0
        with single_threaded_blas():  # M × M systems: BLAS threads only add overhead (and fight the workers')
            for d, (v, design) in enumerate(zip(varying, designs, strict=True)):
                k = design.masks.shape[0]
                diff = float(fx[d] - base_value)
                if len(v) == 1:
                    phi[d, v] = replicates[:, d, v] = diff
                elif len(v) > 1:
                    phi[d, v], replicates[:, d][:, v] = solve_with_jackknife(
                        design, ey[start:start + k] - base_value, diff)
                start += k
        coalitions = np.array([design.masks.shape[0] for design in designs], dtype=np.int64)
        underdetermined = np.array([design.n_fixed < design.masks.shape[0] and design.masks.shape[0] < 2 * len(v)
                                    for v, design in zip(varying, designs, strict=True)], dtype=bool)
        return KernelShapResult(values=phi, base_value=base_value, scores=fx, replicates=replicates,
                                coalitions=coalitions, underdetermined=underdetermined)

    def _score(self, model: CountingRanker, X: np.ndarray, bg: np.ndarray, keep: np.ndarray, owner: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:
        """Scores of [background; documents] and of every coalition × background row, in as few calls as fit.

        Layout of the coalition scores: coalition-major, then background row. With fewer than `max_rows` rows in all
        this is exactly one `model.predict`; a coalition row is a masked row (the document where kept, a background
        row elsewhere), so when the model's array form is exact they are read off the trees instead (the same
        scores, bit for bit: `_score_off_trees`).
        """
        if hasattr(model, "exact_trees") and model.exact_trees() is not None:
            return self._score_off_trees(model, X, bg, keep, owner)
        n_bg, n_features = bg.shape
        n_head = n_bg + X.shape[0]  # the first call also scores the background (φ0) and the documents (f(x))
        max_rows = rows_per_call(n_features, self.max_rows)
        per_batch = max(1, (max_rows - n_head) // n_bg)
        head = None
        out = np.empty(keep.shape[0] * n_bg)
        start = 0
        while head is None or start < keep.shape[0]:
            stop = min(start + per_batch, keep.shape[0])
            lead = n_head if head is None else 0
            rows = np.empty((lead + (stop - start) * n_bg, n_features))
            if head is None:
                rows[:n_bg], rows[n_bg:n_head] = bg, X
            body = rows[lead:].reshape(stop - start, n_bg, n_features)
            body[:] = bg[None, :, :]
            np.copyto(body, X[owner[start:stop], None, :], where=keep[start:stop, None, :])
            scores = model.predict(rows)
            if head is None:
                head = scores[:n_head]
            out[start * n_bg:stop * n_bg] = scores[lead:]
            start = stop
            per_batch = max(1, max_rows // n_bg)
        return head, out

    def _score_off_trees(self, model: CountingRanker, X: np.ndarray, bg: np.ndarray, keep: np.ndarray,
                         owner: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """`_score`'s scores with the coalition rows read off the trees (`fill_rows_scores`: rows of one document
        and one background row share a jump table), counted as model rows: 4-8x faster than building and predicting
        them at 136 features."""
        head = model.predict(np.concatenate([bg, X]))
        n_bg = bg.shape[0]
        out = np.empty(keep.shape[0] * n_bg)
        step = max(1, _OFF_TREE_ROWS // n_bg)
        for start in range(0, keep.shape[0], step):
            block = keep[start:start + step]
            scores = fill_rows_scores(model, X, bg, np.repeat(owner[start:start + step], n_bg),
                                      np.tile(np.arange(n_bg), block.shape[0]), np.repeat(block, n_bg, axis=0))
            assert scores is not None  # the model's exact trees were found above
            out[start * n_bg:start * n_bg + scores.shape[0]] = scores
        return head, out


def _differs(x: np.ndarray, bg: np.ndarray) -> np.ndarray:
    """Per feature: does some background row hold a different value than x (NaN equals NaN)?"""
    same = (bg == x[None, :]) | (np.isnan(bg) & np.isnan(x)[None, :])
    differs: np.ndarray = ~same.all(axis=0)
    return differs


def coalition_design(m: int, nsamples: int, rng: np.random.Generator) -> CoalitionDesign:
    """The coalitions and weights KernelSHAP regresses on for M = m features, as `shap.KernelExplainer.explain`.

    Exact regime (2^m − 2 ≤ nsamples): all non-trivial coalitions with the Shapley kernel weight
    (m−1) / (C(m,|z|)·|z|·(m−|z|)), whose weighted least squares solution is the exact Shapley values.
    """
    if m < 2:
        return CoalitionDesign(np.zeros((0, m), dtype=bool), np.zeros(0), 0)
    if m <= 30 and nsamples >= 2 ** m - 2:
        codes = np.arange(1, 2 ** m - 1, dtype=np.int64)
        masks = ((codes[:, None] >> np.arange(m, dtype=np.int64)) & 1).astype(bool)
        size = masks.sum(axis=1)
        weights = (m - 1) / (np.array([comb(m, int(s)) for s in range(m + 1)], dtype=np.float64)[size]
                             * size * (m - size))
        return CoalitionDesign(masks, weights, masks.shape[0], np.full(masks.shape[0], -1))

    nsamples = min(nsamples, 2 ** 30)  # shap's cap when the space cannot be enumerated
    n_sizes = (m - 1 + 1) // 2  # ceil((m-1)/2): sizes 1..n_sizes, the larger ones come as complements
    n_paired = (m - 1) // 2  # sizes whose complement has another size (the middle size of an even m has not)
    sizes = np.arange(1, n_sizes + 1, dtype=np.float64)
    weight_vector = (m - 1.0) / (sizes * (m - sizes))
    weight_vector[:n_paired] *= 2
    weight_vector /= weight_vector.sum()

    masks_out: list[np.ndarray] = []
    weights_out: list[np.ndarray] = []
    units_out: list[np.ndarray] = []
    n_full = 0
    left = float(nsamples)
    remaining = weight_vector.copy()
    for size in range(1, n_sizes + 1):
        paired = size <= n_paired
        n_subsets = comb(m, size) * (2 if paired else 1)
        if left * remaining[size - 1] / n_subsets < 1.0 - 1e-8:
            break
        n_full += 1
        left -= n_subsets
        if remaining[size - 1] < 1.0:
            remaining /= 1 - remaining[size - 1]
        w = weight_vector[size - 1] / comb(m, size) / (2.0 if paired else 1.0)
        combos = np.array(list(itertools.combinations(range(m), size)), dtype=np.intp)
        block = np.zeros((combos.shape[0], m), dtype=bool)
        np.put_along_axis(block, combos, True, axis=1)
        if paired:  # shap's order: each subset followed by its complement
            block = np.stack([block, ~block], axis=1).reshape(-1, m)
        masks_out.append(block)
        weights_out.append(np.full(block.shape[0], w))
        units_out.append(np.full(block.shape[0], -1))
    n_fixed = int(sum(b.shape[0] for b in masks_out))

    samples_left = nsamples - n_fixed
    if n_full != n_sizes and samples_left > 0:
        probs = weight_vector.copy()
        probs[:n_paired] /= 2  # a paired draw adds two samples
        probs = probs[n_full:] / probs[n_full:].sum()
        n_draws = 4 * samples_left
        draw_sizes = rng.choice(len(probs), size=n_draws, p=probs) + n_full + 1
        masks, weights, units = _draw_samples(rng, draw_sizes, draw_sizes <= n_paired, m, samples_left)
        weights *= weight_vector[n_full:].sum() / weights.sum()
        masks_out.append(masks)
        weights_out.append(weights)
        units_out.append(units)

    masks = np.concatenate(masks_out) if masks_out else np.zeros((0, m), dtype=bool)
    weights = np.concatenate(weights_out) if weights_out else np.zeros(0)
    unit = np.concatenate(units_out) if units_out else np.zeros(0, dtype=np.int64)
    return CoalitionDesign(masks, weights, n_fixed, unit)


def _draw_samples(rng: np.random.Generator, draw_sizes: np.ndarray, paired: np.ndarray, m: int, samples_left: int
                  ) -> tuple[np.ndarray, ...]:
    """A uniform random subset of each drawn size (the first `size` features of a random order: the argsort of one
    row of uniform keys), turned into samples by `take_samples`.

    The budget is usually filled by the first few draws of the 4 × samples_left drawn (most are new, and a new
    paired draw adds two samples), so the keys are generated in growing prefixes until the prefix fills it, and the
    generator is then advanced past the keys of the unused draws (PCG64 `advance`: one 64-bit output per key). The
    samples and the stream's next values are exactly those of generating and sorting every draw's keys at once
    (draws after the budget is filled are never looked at), at a fraction of the sorting: at 136 features and 2,320
    samples, ~1,100 rows of keys sorted instead of 8,200."""
    n_draws = len(draw_sizes)
    bit_generator = rng.bit_generator
    lazy = isinstance(bit_generator, np.random.PCG64)
    take = min(n_draws, samples_left) if lazy else n_draws
    keys = rng.random((take, m))
    while True:
        order = np.argsort(keys, axis=1)
        draw_masks = np.zeros((take, m), dtype=bool)
        np.put_along_axis(draw_masks, order, np.arange(m)[None, :] < draw_sizes[:take, None], axis=1)
        masks, weights, units = take_samples(draw_masks, paired[:take], samples_left, units=True)
        if take == n_draws or masks.shape[0] >= samples_left:
            break
        more = min(n_draws - take, take)
        keys = np.vstack([keys, rng.random((more, m))])
        take += more
    if isinstance(bit_generator, np.random.PCG64) and take < n_draws:  # (only PCG64 draws lazily)
        bit_generator.advance((n_draws - take) * m)
    return masks, weights, units


def take_samples(draw_masks: np.ndarray, paired: np.ndarray, samples_left: int, *, units: bool = False
                 ) -> tuple[np.ndarray, ...]:
    """Turn random draws into samples exactly as shap's sampling loop does, without the loop (with `units`, also
    each row's sampling unit: the number of its new draw, shared by the draw's complement).

    In draw order: a new coalition is added with weight 1 (then its complement, if its size is paired and the
    budget is not yet spent); a repeated one adds 1 to the weight of its first copy and of that copy's complement.
    Stops when `samples_left` samples exist or the draws run out. (A drawn coalition never equals an earlier
    complement: drawn sizes are at most ceil((M−1)/2), complements of paired sizes are larger.)
    """
    n_draws, m = draw_masks.shape
    if n_draws == 0 or samples_left <= 0:  # (otherwise the first draw is always new and taken)
        empty = (np.zeros((0, m), dtype=bool), np.zeros(0))
        return (*empty, np.zeros(0, dtype=np.int64)) if units else empty
    packed = np.packbits(draw_masks, axis=1)
    packed = np.pad(packed, ((0, 0), (0, -packed.shape[1] % 8)))
    keys = np.ascontiguousarray(packed).view(np.uint64)  # one 64-bit word per 64 features: cheap to sort
    if keys.shape[1] == 1:
        _, first, inverse = np.unique(keys[:, 0], return_index=True, return_inverse=True)
    else:
        _, first, inverse = np.unique(keys, axis=0, return_index=True, return_inverse=True)
    first_of = first[inverse.reshape(-1)]
    is_new = first_of == np.arange(n_draws)
    cost = is_new * (1 + paired.astype(np.int64))
    before = np.cumsum(cost) - cost
    processed = before < samples_left

    new = np.flatnonzero(processed & is_new)
    with_complement = paired[new] & (before[new] + 1 < samples_left)
    counts = np.bincount(first_of[processed], minlength=n_draws)[new].astype(np.float64)

    n_rows = len(new) + int(with_complement.sum())
    masks = np.zeros((n_rows, m), dtype=bool)
    weights = np.zeros(n_rows)
    row = np.arange(len(new)) + np.concatenate([[0], np.cumsum(with_complement)[:-1]])
    masks[row] = draw_masks[new]
    weights[row] = counts
    comp_rows = row[with_complement] + 1
    masks[comp_rows] = ~draw_masks[new[with_complement]]
    weights[comp_rows] = counts[with_complement]
    if not units:
        return masks, weights
    unit = np.empty(n_rows, dtype=np.int64)
    unit[row] = np.arange(len(new))
    unit[comp_rows] = np.flatnonzero(with_complement)
    return masks, weights, unit


def solve_constrained(masks: np.ndarray, weights: np.ndarray, ey_adj: np.ndarray, diff: float) -> np.ndarray:
    """Weighted least squares of v(S) − φ0 on the coalition masks with Σφ = diff, as `KernelExplainer.solve`.

    The constraint is imposed by eliminating the last feature: φ_M = diff − Σ_{j<M} φ_j.
    """
    z = masks.astype(np.float64)
    last = z[:, -1]
    y = ey_adj - last * diff
    design = z[:, :-1] - last[:, None]
    weighted = weights[:, None] * design
    try:
        w = np.linalg.solve(design.T @ weighted, weighted.T @ y)
    except np.linalg.LinAlgError:
        root = np.sqrt(weights)
        w = np.linalg.lstsq(root[:, None] * design, root * y, rcond=None)[0]
    return np.append(w, diff - w.sum())


def solve_with_jackknife(design: CoalitionDesign, ey_adj: np.ndarray, diff: float, *,
                         groups: int = JACKKNIFE_GROUPS) -> tuple[np.ndarray, np.ndarray]:
    """`solve_constrained` on the whole design, and the jackknife pseudo-replicates (groups × M) of the module
    docstring, from one pass over the rows: the normal equations of the enumerated rows and of each group of
    sampling units add up to the whole design's, and leaving a group out subtracts its part."""
    unit = design.unit if design.unit is not None else np.full(design.masks.shape[0], -1)
    z = design.masks.astype(np.float64)
    last = z[:, -1]
    y = ey_adj - last * diff
    x = z[:, :-1] - last[:, None]
    fixed = unit < 0
    weighted = design.weights[:, None] * x
    g_fixed, r_fixed = x[fixed].T @ weighted[fixed], weighted[fixed].T @ y[fixed]
    parts = []
    for g in range(groups):
        rows = (unit >= 0) & (unit % groups == g)
        parts.append((x[rows].T @ weighted[rows], weighted[rows].T @ y[rows], float(design.weights[rows].sum()),
                      rows))
    g_sampled = sum((part[0] for part in parts), np.zeros_like(g_fixed))
    r_sampled = sum((part[1] for part in parts), np.zeros_like(r_fixed))
    whole = _solve_normal(g_fixed + g_sampled, r_fixed + r_sampled, x, design.weights, y, diff)
    total = sum(part[2] for part in parts)
    if total == 0:  # every coalition enumerated: exact, nothing to resample
        return whole, np.tile(whole, (groups, 1))
    left_out = []
    for gram, rhs, weight, rows in parts:
        if weight == 0:
            left_out.append(whole)
            continue
        scale = total / (total - weight) if total > weight else 0.0
        use = fixed | ((unit >= 0) & ~rows)
        left_out.append(_solve_normal(g_fixed + scale * (g_sampled - gram), r_fixed + scale * (r_sampled - rhs),
                                      x[use], np.where(fixed, 1.0, scale)[use] * design.weights[use], y[use], diff))
    leave = np.array(left_out)
    return whole, whole + np.sqrt(groups - 1) * (leave - leave.mean(axis=0))


def _solve_normal(gram: np.ndarray, rhs: np.ndarray, x: np.ndarray, weights: np.ndarray, y: np.ndarray,
                  diff: float) -> np.ndarray:
    """The constrained solution from the normal equations; least squares on the rows when they are singular."""
    try:
        w = np.linalg.solve(gram, rhs)
    except np.linalg.LinAlgError:
        root = np.sqrt(weights)
        w = np.linalg.lstsq(root[:, None] * x, root * y, rcond=None)[0]
    return np.append(w, diff - w.sum())
