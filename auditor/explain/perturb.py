"""The LIME-tabular perturbation sampler and kernel shared by LIRME and EXS (paper 001, RESEARCH.md).

Why a sampler of our own: LIRME and EXS only differ in the surrogate they fit; the samples and their weights must
be the same for a fair comparison. The reference LIME implementation reseeds the random state per column, which
correlates every column of the samples; here ONE `numpy.random.Generator` draws all columns at once, so the
columns are independent draws and a run is reproducible from one seed.

Per feature, the background (e.g. the training set) is cut at its quartiles (duplicate edges collapsed, so binary
and discrete features get 2-3 bins instead of 4). A sample draws, for every feature independently, a bin with the
background's frequency, then a value from a normal with the bin's background mean and std, truncated to the bin's
background [min, max] (std 0: the bin mean). Missing values (NaN) in the background are ignored; the sampler never
produces NaN. A bin value `v` belongs to bin j when edge[j-1] < v <= edge[j] (LIME's `searchsorted`, side left).

One uniform per value does both draws: it falls in bin j's share of [0, 1) with the bin's frequency, and its
position inside that share is uniform and independent of j, so it is the CDF position of the value inside the
bin's truncated normal (inverse-CDF sampling, Φ⁻¹ compiled in `inverse_normal.py`). Half the random numbers of
drawing the bin and the value separately, and the whole draw is one compiled pass straight into the rows to score.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

import numpy as np
from numba import njit
from scipy.special import ndtr

from auditor.core.threads import blas_limit, threads_here
from auditor.explain.inverse_normal import CENTRAL, central, tail
from auditor.models.base import CountingRanker

if TYPE_CHECKING:
    from auditor.explain.base import QueryView

T = TypeVar("T")
R = TypeVar("R")


def single_threaded_blas() -> AbstractContextManager[object]:
    """BLAS limited to one thread for the block (the surrogate fits are small: threads only add overhead)."""
    return blas_limit(1)

MAX_BINS = 4


@njit(cache=True, nogil=True, error_model="numpy")  # no zero-division branch: the Φ⁻¹ pass vectorises
def _draw(rng: np.random.Generator, x: np.ndarray, cumulative: np.ndarray, bin_start: np.ndarray, bin_mean: np.ndarray,
          bin_std: np.ndarray, clip_low: np.ndarray, clip_high: np.ndarray, cdf_low: np.ndarray, cdf_scale: np.ndarray,
          out: np.ndarray) -> None:  # pragma: no cover - compiled
    """out[0] = x; then, row by row and feature by feature, ONE uniform u from `rng` per value: its bin j is the one
    with cumulative[j-1] <= u < cumulative[j] (empty bins have zero width and are skipped), and its position in
    that interval, itself uniform given j, is the CDF position of the value inside the bin's truncated normal:
    p = Φ(a) + (u − start_j)·(Φ(b) − Φ(a))/width_j, value = mean + std·Φ⁻¹(p), clipped to the bin's range
    (against rounding at the ends). A bin without spread has p = 0.5, std 0 and range [mean, mean]: its mean.

    A row is done in passes over its F values, without branches where they can be avoided (the bin of a value
    is random, so branching on it is mispredicted): the uniforms and bins, then Φ⁻¹'s central formula for every
    value (a loop the compiler vectorises), then the tail formula for the few values beyond it, then the values."""
    n_rows, n_features = out.shape
    for f in range(n_features):  # not out[0, :] = x: a slice assignment compiles a shape-error message (~4 s)
        out[0, f] = x[f]
    p = np.empty(n_features)
    z = np.empty(n_features)
    chosen = np.empty(n_features, dtype=np.int64)
    for i in range(1, n_rows):
        for f in range(n_features):
            u = rng.random()
            b = (u >= cumulative[f, 0]) + (u >= cumulative[f, 1]) + (u >= cumulative[f, 2])  # MAX_BINS = 4
            chosen[f] = b
            p[f] = cdf_low[f, b] + (u - bin_start[f, b]) * cdf_scale[f, b]
        for f in range(n_features):
            z[f] = central(p[f] - 0.5)
        for f in range(n_features):
            if abs(p[f] - 0.5) > CENTRAL:
                z[f] = tail(p[f])
        for f in range(n_features):
            b = chosen[f]
            out[i, f] = min(max(bin_mean[f, b] + bin_std[f, b] * z[f], clip_low[f, b]), clip_high[f, b])


class QuartileSampler:
    """Quartile-bin sampler built once from background data (n × F). Per-bin statistics are kept as (F × 4)
    arrays padded with empty bins (frequency 0, never drawn), so sampling is vectorised over features."""

    def __init__(self, background: np.ndarray) -> None:
        data = np.asarray(background, dtype=np.float64)
        if data.ndim != 2 or data.shape[0] == 0:
            raise ValueError(f"background must be a non-empty 2-D array, got shape {data.shape}")
        n_features = data.shape[1]
        self.n_features = n_features
        self.mean = np.zeros(n_features)
        self.std = np.ones(n_features)  # 1 where the background std is 0 (or undefined): no rescaling
        self.edges: list[np.ndarray] = []
        counts = np.zeros((n_features, MAX_BINS), dtype=np.int64)
        self.bin_mean = np.zeros((n_features, MAX_BINS))
        self.bin_std = np.zeros((n_features, MAX_BINS))
        self.bin_min = np.zeros((n_features, MAX_BINS))
        self.bin_max = np.zeros((n_features, MAX_BINS))
        for f in range(n_features):
            column = data[:, f]
            column = column[np.isfinite(column)]
            if column.size == 0:  # nothing known about the feature: a constant 0 (the standardised "mean")
                self.edges.append(np.zeros(0))
                counts[f, 0] = 1
                continue
            self.mean[f] = column.mean()
            std = column.std()
            self.std[f] = std if std > 0 else 1.0
            edges = np.unique(np.percentile(column, [25, 50, 75]))
            self.edges.append(edges)
            bins = np.searchsorted(edges, column, side="left")
            for b in range(edges.size + 1):
                values = column[bins == b]
                if values.size == 0:
                    continue
                counts[f, b] = values.size
                self.bin_mean[f, b] = values.mean()
                self.bin_std[f, b] = values.std()
                self.bin_min[f, b] = values.min()
                self.bin_max[f, b] = values.max()
        self.bin_counts = counts
        # Cumulative frequencies from integer counts, so the last non-empty bin ends at exactly 1.0.
        totals = counts.sum(axis=1, keepdims=True)
        self.bin_freq = counts / totals
        self._cumulative = np.cumsum(counts, axis=1) / totals
        # What a draw needs per bin: where its share of [0, 1) starts, the normal CDF at its low end and the CDF
        # span per unit of share (bins without spread: CDF position 0.5 and span 0, so Φ⁻¹ = 0 and the value is the
        # mean). The bin mean lies inside [min, max], so a <= 0 <= b: the CDF values stay away from the far tails
        # where the quantile function would lose precision.
        self._bin_start = np.hstack([np.zeros((n_features, 1)), self._cumulative[:, :-1]])
        spread = self.bin_std > 0
        safe_std = np.where(spread, self.bin_std, 1.0)
        width = self._cumulative - self._bin_start
        spread_drawn = spread & (width > 0)  # empty bins are never drawn
        self._cdf_low = np.where(spread_drawn, ndtr((self.bin_min - self.bin_mean) / safe_std), 0.5)
        self._cdf_scale = np.zeros((n_features, MAX_BINS))
        self._cdf_scale[spread_drawn] = (ndtr((self.bin_max - self.bin_mean) / safe_std)[spread_drawn]
                                         - self._cdf_low[spread_drawn]) / width[spread_drawn]
        self._clip_low = np.where(spread, self.bin_min, self.bin_mean)
        self._clip_high = np.where(spread, self.bin_max, self.bin_mean)

    def bin_of(self, X: np.ndarray) -> np.ndarray:
        """The bin index of every value of X (rows × F), by the background's quartile edges."""
        X = np.asarray(X, dtype=np.float64)
        out = np.zeros(X.shape, dtype=np.int64)
        for f, edges in enumerate(self.edges):
            out[:, f] = np.searchsorted(edges, X[:, f], side="left")
        return out

    def sample(self, x: np.ndarray, n_samples: int, rng: np.random.Generator, out: np.ndarray | None = None
               ) -> np.ndarray:
        """(n_samples × F): row 0 is `x` itself, the others are independent draws per feature (see module doc).
        Written into `out` (C-contiguous float64, n_samples × F) when given: a slice of a larger block of rows."""
        x = np.ascontiguousarray(x, dtype=np.float64).reshape(-1)  # one kernel signature, here and in workers
        if x.shape[0] != self.n_features:
            raise ValueError(f"document has {x.shape[0]} features, the background {self.n_features}")
        if n_samples < 1:
            raise ValueError("n_samples must be at least 1")
        if out is None:
            out = np.empty((n_samples, self.n_features))
        elif out.shape != (n_samples, self.n_features) or out.dtype != np.float64 or not out.flags.c_contiguous:
            raise ValueError(f"out must be a C-contiguous float64 array of shape {(n_samples, self.n_features)}")
        _draw(rng, x, self._cumulative, self._bin_start, self.bin_mean, self.bin_std, self._clip_low, self._clip_high,
              self._cdf_low, self._cdf_scale, out)
        return out

    def standardise(self, X: np.ndarray) -> np.ndarray:
        """(X − μ)/σ with background mean/std (σ = 0 → 1); missing values become 0, i.e. the background mean."""
        Z = (np.asarray(X, dtype=np.float64) - self.mean) / self.std
        return np.nan_to_num(Z, nan=0.0, posinf=0.0, neginf=0.0)


def kernel_weights(samples: np.ndarray, x: np.ndarray, mean: np.ndarray, std: np.ndarray,
                   width: float | None = None) -> np.ndarray:
    """LIME's exponential kernel exp(−d²/w²), d = Euclidean distance to `x` after standardising with the
    background mean/std (std 0 → 1; missing values count as the mean), w = 0.75·√F by default. The paper's
    Eq. 1 writes exp(−d²/h); RESEARCH.md fixes h = w² with LIME's default width."""
    samples = np.asarray(samples, dtype=np.float64)
    n_features = samples.shape[1]
    if width is None:
        width = 0.75 * np.sqrt(n_features)
    std = np.where(np.asarray(std, dtype=np.float64) > 0, std, 1.0)
    z_samples = np.nan_to_num((samples - mean) / std, nan=0.0)
    z_x = np.nan_to_num((np.asarray(x, dtype=np.float64).reshape(1, -1) - mean) / std, nan=0.0)
    d2 = np.sum((z_samples - z_x) ** 2, axis=1)
    weights: np.ndarray = np.exp(-d2 / width**2)
    return weights


class SamplerCache:
    """Keeps the sampler of the last background seen: queries of one audit share one background array, and the
    quartiles of a large training set are worth computing once (0.2 s at 136 features)."""

    def __init__(self) -> None:
        self._background: np.ndarray | None = None
        self._sampler: QuartileSampler | None = None
        self._lock = threading.Lock()  # the threads of `map_blocks` ask at once: one builds, the others wait

    def get(self, background: np.ndarray) -> QuartileSampler:
        with self._lock:
            if self._sampler is None or self._background is not background:
                self._sampler = QuartileSampler(background)
                self._background = background
            return self._sampler


_SHARED = SamplerCache()


def shared_samplers() -> SamplerCache:
    """The process's sampler cache, shared by every explainer and evidence item: each executor task builds its own
    explainers, and with a cache each they drew the quartiles again for every block of queries (0.2 s each at 136
    features; several seconds of a wide audit). The background array is the same object in every task of a process
    (`reference_rows`); the last one stays referenced until another replaces it."""
    return _SHARED


@dataclass(frozen=True)
class Perturbed:
    """What LIRME and EXS fit on, per explained document d (rows of the first axis, in `docs` order): the
    standardised samples Z[d] (n_samples × F, row 0 = the document), their kernel weights and their scores."""

    docs: np.ndarray
    sampler: QuartileSampler
    Z: np.ndarray
    weights: np.ndarray
    scores: np.ndarray


def standardised_kernel(Z: np.ndarray, width: float | None = None) -> np.ndarray:
    """`kernel_weights` for standardised samples whose row 0 is the document, over the last two axes of Z
    (… × n × F): exp(−‖z − z₀‖²/w²). The same floating-point operations as `kernel_weights` (tested equal)."""
    if width is None:
        width = 0.75 * np.sqrt(Z.shape[-1])
    if Z.ndim == 3 and Z.shape[-1] <= _PAIRWISE_BLOCK and Z.flags.c_contiguous:
        d2 = np.empty(Z.shape[:2])
        _squared_distances(Z, d2)
    else:
        d2 = np.sum((Z - Z[..., :1, :]) ** 2, axis=-1)
    return np.exp(-d2 / width**2)


_PAIRWISE_BLOCK = 128  # numpy sums rows of at most this many values with 8 accumulators, no recursion


@njit(cache=True, nogil=True)
def _squared_distances(Z: np.ndarray, out: np.ndarray) -> None:  # pragma: no cover - compiled
    """out[d, i] = Σ_f (Z[d, i, f] − Z[d, 0, f])², summed in numpy's order for a row of ≤ 128 values (8 partial
    sums, combined pairwise, then the remainder), so the result equals `np.sum(..., axis=-1)` bit for bit (tested)
    without the (docs × n × F) temporaries."""
    n_docs, n, n_features = Z.shape
    a = np.empty(n_features)
    tail = n_features - n_features % 8
    for d in range(n_docs):
        for i in range(n):
            for f in range(n_features):
                t = Z[d, i, f] - Z[d, 0, f]
                a[f] = t * t
            if n_features < 8:
                s = 0.0
                for f in range(n_features):
                    s += a[f]
            else:
                r0, r1, r2, r3, r4, r5, r6, r7 = a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]
                for f in range(8, tail, 8):
                    r0 += a[f]
                    r1 += a[f + 1]
                    r2 += a[f + 2]
                    r3 += a[f + 3]
                    r4 += a[f + 4]
                    r5 += a[f + 5]
                    r6 += a[f + 6]
                    r7 += a[f + 7]
                s = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
                for f in range(tail, n_features):
                    s += a[f]
            out[d, i] = s


@njit(cache=True, nogil=True)
def _standardise_shared(rows: np.ndarray, n_docs: int, mean: np.ndarray, std: np.ndarray,
                        Z: np.ndarray) -> None:  # pragma: no cover - compiled
    """Z[d, 0] = the standardised document d (rows[d]); Z[d, 1:] = the standardised shared draws (rows[n_docs:]),
    for every d: `QuartileSampler.standardise`'s operations ((x − μ)/σ, then NaN and ±inf → 0) in one pass."""
    n_features = rows.shape[1]
    for i in range(rows.shape[0]):
        for f in range(n_features):
            v = (rows[i, f] - mean[f]) / std[f]
            if not np.isfinite(v):
                v = 0.0
            if i < n_docs:
                Z[i, 0, f] = v
            else:
                for d in range(n_docs):
                    Z[d, i - n_docs + 1, f] = v


@njit(cache=True, nogil=True)
def _standardise_rows(rows: np.ndarray, mean: np.ndarray, std: np.ndarray,
                      out: np.ndarray) -> None:  # pragma: no cover - compiled
    """out = `QuartileSampler.standardise(rows)` ((x − μ)/σ, then NaN and ±inf → 0) in one pass, no temporaries."""
    n_features = rows.shape[1]
    for i in range(rows.shape[0]):
        for f in range(n_features):
            v = (rows[i, f] - mean[f]) / std[f]
            out[i, f] = v if np.isfinite(v) else 0.0


def draw_rows(sampler: QuartileSampler, X: np.ndarray, docs: np.ndarray, n_samples: int, rng: np.random.Generator,
              *, shared: bool = False, out: np.ndarray | None = None) -> np.ndarray:
    """The rows to score for `docs` (rows of X), unscored, in the layout `split_scored` reads: per document its
    n_samples samples (row 0 the document), or with `shared` and several documents the documents first, then
    the n_samples − 1 shared draws. Draws from `rng` exactly as `perturb_and_score` does. Written into `out`
    (C-contiguous float64, `_rows_of(...)` × F: a slice of a block of rows to score) when given."""
    n_docs, shape = len(docs), (_rows_of(len(docs), n_samples, shared), X.shape[1])
    rows = np.empty(shape) if out is None else out
    if rows.shape != shape:
        raise ValueError(f"out must have shape {shape}")
    if not shared or n_docs <= 1:
        for i, d in enumerate(docs):  # each document's samples drawn in place
            sampler.sample(X[d], n_samples, rng, out=rows[i * n_samples:(i + 1) * n_samples])
        return rows
    sampler.sample(X[docs[0]], n_samples, rng, out=rows[n_docs - 1:])  # its row 0 is overwritten just below
    rows[:n_docs] = X[docs]
    return rows


def split_scored(sampler: QuartileSampler, rows: np.ndarray, scored: np.ndarray, n_docs: int, n_samples: int
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Z (docs × n_samples × F, standardised) and scores (docs × n_samples) from `draw_rows`' rows and their
    scores."""
    if rows.shape[0] == n_docs * n_samples:  # one block of n_samples per document (also: shared, one document)
        Z = np.empty((n_docs, n_samples, rows.shape[1]))
        _standardise_rows(np.ascontiguousarray(rows, dtype=np.float64), sampler.mean, sampler.std,
                          Z.reshape(-1, rows.shape[1]))
        return Z, scored.reshape(n_docs, n_samples)
    Z = np.empty((n_docs, n_samples, rows.shape[1]))
    _standardise_shared(np.ascontiguousarray(rows, dtype=np.float64), n_docs, sampler.mean, sampler.std, Z)
    scores = np.empty((n_docs, n_samples))
    scores[:, 0] = scored[:n_docs]
    scores[:, 1:] = scored[n_docs:]
    return Z, scores


def perturb_and_score(model: CountingRanker, sampler: QuartileSampler, X: np.ndarray, docs: np.ndarray,
                      n_samples: int, rng: np.random.Generator, *, shared: bool = False
                      ) -> tuple[np.ndarray, np.ndarray]:
    """Samples around each of `docs` (rows of X), standardised, and their scores from ONE model call. Returns
    Z (docs × n_samples × F) and scores (docs × n_samples); row 0 of each document's block is the document.

    The sampler's draws do not depend on the document (only row 0 and the kernel weights do), so with
    `shared=True` the documents of one call share the same n_samples − 1 draws (common random numbers): each
    document still gets n_samples samples from the same distribution, and the model scores
    len(docs) + n_samples − 1 rows instead of len(docs)·n_samples.
    """
    rows = draw_rows(sampler, X, docs, n_samples, rng, shared=shared)
    return split_scored(sampler, rows, model.predict(rows), len(docs), n_samples)


def sample_query(model: CountingRanker, samplers: SamplerCache, query: QueryView, docs: np.ndarray, n_samples: int,
                 rng: np.random.Generator, *, shared: bool) -> Perturbed | None:
    """What LIRME and EXS share: the query's sampler, the scored samples standardised, and their kernel weights.
    None when there is no document to explain."""
    docs = np.asarray(docs, dtype=np.int64).reshape(-1)
    if docs.size == 0:
        return None
    sampler = samplers.get(query.background)
    Z, scores = perturb_and_score(model, sampler, query.X, docs, n_samples, rng, shared=shared)
    return Perturbed(docs=docs, sampler=sampler, Z=Z, weights=standardised_kernel(Z), scores=scores)


# Rows scored in one model call when many queries are attributed at once: at most BLOCK_ROWS, and at most
# BLOCK_BYTES of float64 samples (150,000 rows at MQ2008's 46 features, ~50,000 at MSLR's 136), shared by the blocks
# in flight (one per thread). Large enough that LightGBM runs at its one-call speed (calls of ~2,000 rows cost
# 1.3-1.6× more per row with OpenMP threads; on one thread only ~1.1×, so blocks of 10,000 rows lose nothing),
# small enough to bound memory (the rows are drawn straight into the array the model scores: they exist once).
# With several threads the rows are cut into about BLOCKS_PER_THREAD blocks per thread (at least MIN_BLOCK_ROWS rows
# each), so the threads stay busy until the end.
BLOCK_ROWS = 150_000
BLOCK_BYTES = 55_000_000
MIN_BLOCK_ROWS = 10_000
BLOCKS_PER_THREAD = 8


@dataclass(frozen=True)
class Drawn:
    """One query's drawn rows and their scores, before standardising (see `map_blocks`)."""

    query: QueryView
    docs: np.ndarray
    sampler: QuartileSampler
    rows: np.ndarray
    scores: np.ndarray

    def perturbed(self, n_samples: int) -> Perturbed | None:
        """What `sample_query` returns for this query (None without documents)."""
        if self.docs.size == 0:
            return None
        Z, scores = split_scored(self.sampler, self.rows, self.scores, self.docs.size, n_samples)
        return Perturbed(docs=self.docs, sampler=self.sampler, Z=Z, weights=standardised_kernel(Z), scores=scores)


# A query in a block of `map_blocks`, with its documents to explain, its generator and its sampler.
_Job = tuple["QueryView", np.ndarray, np.random.Generator, QuartileSampler]


def map_blocks(model: CountingRanker, samplers: SamplerCache, queries: Sequence[QueryView], docs: Sequence[np.ndarray],
               n_samples: int, rngs: Sequence[np.random.Generator], work: Callable[[Drawn], R], *, shared: bool,
               block_rows: int | None = None) -> list[R]:
    """`work(drawn)` for every query, in query order: each query draws from its own generator exactly as
    `sample_query` would, and the rows of a block of queries are scored in ONE model call (per-query calls of
    ~2,000 rows cost LightGBM 1.3-1.6× more per row than large ones).

    With several `workers()`, whole blocks run concurrently, one thread each (draw, score, then `work` on every
    query of the block), and every model call runs on its block's one thread: one block's model call overlaps
    another's draws and fits instead of every phase waiting for the slowest thread (and on a busy machine one
    LightGBM thread per call wastes less than two OpenMP threads on one call). Models that do not declare
    `concurrent_predict` are called one block at a time. The results do not depend on the blocks or the threads:
    every query has its own generator and every row's score is its own (tested bit for bit)."""
    n_features = queries[0].n_features if len(queries) else 1
    cap = block_rows if block_rows is not None else min(BLOCK_ROWS, BLOCK_BYTES // (8 * max(1, n_features)))
    sizes = [_rows_of(np.asarray(chosen).size, n_samples, shared) for chosen in docs]
    threads = workers()
    if threads > 1 and block_rows is None:
        balanced = max(MIN_BLOCK_ROWS, -(-sum(sizes) // (BLOCKS_PER_THREAD * threads)))
        cap = min(max(1, cap // threads), balanced)
    blocks: list[list[_Job]] = [[]]
    count = 0
    for query, chosen, rng, size in zip(queries, docs, rngs, sizes, strict=True):
        if count >= max(1, cap):
            blocks.append([])
            count = 0
        # Samplers are looked up here, in the calling thread: the cache is not thread-safe.
        blocks[-1].append((query, np.asarray(chosen, dtype=np.int64).reshape(-1), rng, samplers.get(query.background)))
        count += size
    concurrent = threads > 1 and len(blocks) > 1
    one_at_a_time = threading.Lock() if concurrent and not getattr(model, "concurrent_predict", False) else None

    def run(block: list[_Job]) -> list[R]:
        with threads_here(1) if concurrent else nullcontext():
            return [work(drawn) for drawn in _score_block(model, block, n_samples, shared, one_at_a_time)]

    return [value for values in parallel_map(run, blocks) for value in values]


def _rows_of(n_docs: int, n_samples: int, shared: bool) -> int:
    """Rows `draw_rows` makes for a query's n_docs documents."""
    if n_docs == 0:
        return 0
    return n_docs + n_samples - 1 if shared and n_docs > 1 else n_docs * n_samples


def _score_block(model: CountingRanker, block: list[_Job], n_samples: int, shared: bool,
                 one_at_a_time: threading.Lock | None) -> list[Drawn]:
    """Draw every query of the block into one array (each query's rows a slice of it, no copy) and score it in
    one model call."""
    if not block:  # no queries at all
        return []
    sizes = [_rows_of(picked.size, n_samples, shared) for _, picked, _, _ in block]
    gathered = np.empty((sum(sizes), block[0][0].n_features))
    rows: list[np.ndarray] = []
    start = 0
    for (query, picked, rng, sampler), size in zip(block, sizes, strict=True):
        part = gathered[start:start + size]
        if picked.size:
            draw_rows(sampler, query.X, picked, n_samples, rng, shared=shared, out=part)
        rows.append(part)
        start += size
    if not gathered.shape[0]:
        scored = np.zeros(0)
    else:
        with one_at_a_time or nullcontext():  # only the model call waits for other blocks
            scored = model.predict(gathered)
    out: list[Drawn] = []
    start = 0
    for (query, picked, _, sampler), part in zip(block, rows, strict=True):
        out.append(Drawn(query=query, docs=picked, sampler=sampler, rows=part,
                         scores=scored[start:start + part.shape[0]]))
        start += part.shape[0]
    return out


def workers() -> int:
    """Threads for the per-query work of a batch (drawing, standardising, fitting): the CPUs this process may run
    on, at most 8 (one inside an executor's worker). LightGBM's predict uses every core as well."""
    from auditor.core.threads import thread_budget

    return max(1, min(8, thread_budget()))


def parallel_map(function: Callable[[T], R], items: Iterable[T]) -> list[R]:
    """[function(item) for item in items] on `workers()` threads, results in order. The work must release the
    GIL to gain (numpy, BLAS, nogil numba kernels) and must not share mutable state between items."""
    items = list(items)
    count = min(workers(), len(items))
    if count <= 1:
        return [function(item) for item in items]
    with ThreadPoolExecutor(count) as pool:
        return list(pool.map(function, items))
