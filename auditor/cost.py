"""Cost known before the run: model rows and seconds per evidence item, from the data's shape and the options.

Each evidence kind has an estimator (`ESTIMATORS`) that counts the model rows its options ask for — per audited
query from the query's documents n, the features F, the explanation sizes k, the samples and the trees — and the
seconds its work besides the model takes (tree passes, surrogate boosting, compiled kernels' first call).
Seconds = rows ÷ the model's scoring speed + that work. The speed is measured on the audited rows themselves by a
short probe (`probe_speed`, ~0.3 s: the same model, the same threads as the audit), so a slow 700-feature
ensemble and a small 12-feature one get their own rates. The constants below were fitted on the bookstore example
(12 features, 80 trees) and the wide synthetic data (136 features, 150 trees; benchmarks/wide_audit.py); how close
the estimates come is measured there and recorded in docs/benchmarks.md ("Wide data").

The counts follow the code they estimate: KernelSHAP's 2M + 2048 coalitions per document (or 2^M − 2), LIME's
shared draws (samples + 4 per query), the exhaustive optimum's C(F, k) subsets, the masked scoring of every set
(validity and completeness, per k). The greedy searches and the beam search stop early and skip inert
features, so their counts are the worst case times a measured share (GREEDY_SHARE, SEARCH_SHARE).

`plan` is the whole audit: the items in spec order (work an earlier item shares through the memo is not counted
twice), the report rendering, and the budget's choices (auditor/budget.py).
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from auditor.data import RankingData
from auditor.executor import AUTO_MIN_QUERIES, AUTO_MIN_SECONDS
from auditor.models.base import bit_identical_trees
from auditor.threads import cpu_count
from auditor.words import counted

GREEDY_SHARE = 0.55  # of the worst case C·n·Σ_k(1 + seeds·(k − 1)) rows (bookstore 0.53, wide data 0.5)
SEARCH_SHARE = 0.6  # of beam·C·n·Σ_k k (bookstore 0.61)
RACED_ROWS = 11  # background rows a set of `background_search` is scored on, on average, when raced over more
# (MQ2008, 100 rows, beam 1: 3.4 M rows against 30.6 M for every set on every row; benchmarks/background_search.py)
MASKED_KINDS = ("local_explanations", "confidence", "decision_path_accuracy", "pairwise")  # rows mostly masked
PROBE_KEEP = 5  # features a masked probe row keeps (the searches' sets: k ≤ 10); the rest at the mean
POOL_START = 4.0  # seconds to start worker processes (docs/architecture.md, "Executors")
POOLED_KINDS = ("local_explanations", "confidence", "pairwise")  # their queries go to the executor's pool...
POOL_EFFICIENCY = 0.9  # ...which runs them this close to `workers` times as fast (wide data: 1.96 with 2 workers)
RENDER_SECONDS = {"html": 3.0, "pdf": 15.0}  # judging, rendering and writing after the evidence: 13 s for the
# bookstore (29 pages), 22 s for the wide data's 39 pages (2026-11-26)
# Work on documents² per query, beside the model (a query of 20,000 documents has 200 million pairs), measured on
# this 2-core machine: Kendall's tau-b of a masked ranking (checks.validity, compiled for large calls) per document
# pair — 17 ms for 500 rankings of 180 documents —; ranks among the others (checks.influence) per document × document.
PAIR_SECONDS = 3e-9
CELL_SECONDS = 5e-9
BUILD_SECONDS = 2e-7  # × rows × √F: building masked rows to predict them (wide data, before auditor.masked_scoring)


@dataclass(frozen=True)
class Shape:
    """What the estimators read: the audited data, the background, the model and the machine."""

    sizes: np.ndarray  # documents per audited query
    features: int
    trees: int
    background_docs: int
    background_queries: int
    rows_per_second: float
    workers: float = 1  # worker processes' worth of free cores (free_workers)
    masked_rows_per_second: float | None = None  # rows with most features at the mean (None: as documents)
    masks_off_trees: bool = False  # masked rows read off the trees (auditor.masked_scoring): none is built
    feature_names: tuple[str, ...] = ()
    reference: np.ndarray | None = field(default=None, repr=False)  # the background rows (sweep grids)

    def distinct(self, name: str, most: int) -> int:
        """Distinct background values of feature `name`, at most `most` (a sweep's grid, a group's values)."""
        if self.reference is None or name not in self.feature_names:
            return most
        column = self.reference[:, self.feature_names.index(name)]
        return int(min(most, np.unique(column[np.isfinite(column)]).size))

    @property
    def queries(self) -> int:
        return len(self.sizes)

    @property
    def docs(self) -> int:
        return int(self.sizes.sum())

    def pairs(self, *, rankable: bool = True) -> float:
        """Mean document pairs n(n − 1)/2 of a query: documents² work grows with it, not with the mean n."""
        pool = self.sizes[self.sizes >= 2] if rankable else self.sizes
        return float(np.mean(pool * (pool - 1.0) / 2)) if pool.size else 0.0

    def sample(self, queries: int | None, *, rankable: bool = True) -> tuple[int, float]:
        """(queries audited, mean documents of the audited queries) for a `queries:` option."""
        pool = self.sizes[self.sizes >= 2] if rankable else self.sizes
        if pool.size == 0:
            return 0, 0.0
        count = pool.size if queries is None else min(queries, pool.size)
        return int(count), float(pool.mean())


@dataclass
class ItemCost:
    """One evidence item's estimate: queries it audits, model rows, seconds, and what drives them."""

    name: str
    queries: int
    rows: int
    seconds: float
    basis: str = ""
    serial_seconds: float | None = None  # in this process alone (`auto` starts the pool from AUTO_MIN_SECONDS)

    @property
    def heavy(self) -> bool:
        """Long enough for `auto` to run its queries in worker processes (auditor/executor.py)."""
        return (self.serial_seconds if self.serial_seconds is not None else self.seconds) >= AUTO_MIN_SECONDS

    def to_json(self) -> dict[str, Any]:
        return {"queries": self.queries, "rows": int(self.rows), "seconds": round(self.seconds, 1),
                "basis": self.basis}


def free_workers(workers: int) -> float:
    """How many worker processes' worth of cores this machine gives now: `workers`, less what other work kept busy
    over the last minute (load average), at least 1."""
    try:
        busy = os.getloadavg()[0]
    except (AttributeError, OSError):  # pragma: no cover - not on Unix
        busy = 0.0
    return max(1.0, min(float(workers), cpu_count() - busy))


@dataclass
class Plan:
    """The estimate of a whole audit: per item, the rendering, the probe, and what a budget changed."""

    items: list[ItemCost]
    render_seconds: float
    rows_per_second: float
    probe_seconds: float
    masked_rows_per_second: float | None = None
    budget_minutes: float | None = None
    choices: list[str] = field(default_factory=list)  # what the budget chose, one sentence each
    fits: bool = True  # within the budget (always True without one)

    @property
    def seconds(self) -> float:
        return sum(item.seconds for item in self.items) + self.render_seconds

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"items": {item.name: item.to_json() for item in self.items},
                               "render_seconds": round(self.render_seconds, 1),
                               "seconds": round(self.seconds, 1),
                               "rows_per_second": round(self.rows_per_second),
                               "masked_rows_per_second": round(self.masked_rows_per_second or 0)}
        if self.budget_minutes is not None:
            out["budget"] = {"minutes": self.budget_minutes, "fits": self.fits, "choices": self.choices}
        return out


def probe_speed(model: Any, X: np.ndarray, *, rows: int = 4000, repeats: int = 3) -> tuple[float, float, float]:
    """The model's scoring speed (rows per second) on the audited rows and on masked rows like the explainers'
    (PROBE_KEEP features of each row kept, seeded; the rest at the column mean), and the probe's own seconds: the
    best of `repeats` calls on `rows` rows (tiled when the data has fewer), after one warm-up call. Masked rows
    take the same paths again and again: on the wide data they score ~2-3x faster than documents."""
    if X.shape[0] == 0:
        return 1e6, 1e6, 0.0
    sample = X[np.resize(np.arange(X.shape[0]), rows)]
    with np.errstate(all="ignore"):
        mean = np.nan_to_num(np.nanmean(X, axis=0))
    keep = np.random.default_rng(0).random(sample.shape).argsort(axis=1) < min(PROBE_KEEP, X.shape[1])
    masked = np.where(keep, sample, mean)
    started = time.perf_counter()
    model.predict(sample[:64])
    trees = bit_identical_trees(getattr(model, "inner", model))
    if trees is not None:  # masked rows are read off the trees (auditor.masked_scoring): many masks a document
        from auditor.masked_scoring import masked_scores

        docs, masks = sample[:40], keep[:max(1, rows // 40)]
        masked_scores(trees, docs[:1], mean, masks[:1])  # compiled or loaded once, not timed
    speeds = []
    for rows_ in (sample, masked):
        best = math.inf
        for _ in range(repeats):
            begin = time.perf_counter()
            if rows_ is masked and trees is not None:
                masked_scores(trees, docs, mean, masks)
            else:
                model.predict(rows_)
            best = min(best, time.perf_counter() - begin)
        speeds.append(rows / max(best, 1e-6))
    return speeds[0], speeds[1], time.perf_counter() - started


# --- per evidence kind ------------------------------------------------------------------------------------------

Estimator = Callable[[Any, Shape, set[str]], tuple[int, int, float, str]]  # -> queries, rows, extra seconds, basis


def _coalitions(options: Any, features: int) -> int:
    if options.nsamples != "auto":
        return int(options.nsamples)
    return int(min(2 * features + 2048, 2 ** min(features, 40) - 2))


def _explainer_rows(name: str, local: Any, shape: Shape, docs: int, query_docs: float = 0.0) -> int:
    """Model rows of one attribution explainer for one query's `docs` top documents (listwise explainers play the
    whole query: `query_docs` documents)."""
    fill = local.kernelshap.background_size if local.kernelshap.background == "sample" else 1
    if name == "kernelshap":
        return docs * _coalitions(local.kernelshap, shape.features) * fill
    if name in ("lirme", "exs"):
        return (local.lime.samples + 4) * (1 if local.lime.shared_samples else docs)
    if name == "treeshap":
        return docs
    if name in ("rankingshap", "rankshap"):  # every coalition of the game, each a masked ranking of the query
        listwise = getattr(local, name)
        m = shape.features
        exact = listwise.estimator == "exact" or (listwise.estimator == "auto" and m <= listwise.max_exact)
        samples = 2 * m + 2048 if listwise.nsamples == "auto" else int(listwise.nsamples)
        coalitions = 2 ** min(m, 40) if exact else samples + 2
        return int(coalitions * query_docs * (getattr(local, "background_rows", None) or 1))
    return 0


def _search_rows(method: str, local: Any, shape: Shape, n: float, ks: list[int]) -> float:
    """Worst case × measured share of the searches (module docstring), per query, at the largest k: a query's
    searches share the sets they score (auditor.explain.screen), and those of a smaller k are mostly among them."""
    k = max(ks, default=0)
    if method in ("greedy", "greedy_cover", "greedy_cover_eps"):
        c = min(shape.features, local.greedy.candidates or shape.features)
        return GREEDY_SHARE * c * n * (1 + local.greedy.seeds * (k - 1)) if k else 0.0
    if method == "validity_search":
        c = min(shape.features, local.search.candidates or shape.features)
        return min(SEARCH_SHARE * local.search.beam * c * n * k, local.search.max_rows)
    if method == "background_search":  # every feature, each set's rows under the item's background rows; it
        rows = getattr(local, "background_rows", None) or 1  # shares no set with the other searches: every k
        raced = min(rows, RACED_ROWS)  # each step's sets raced over the rows (explain/listwise.py)
        return sum(min(SEARCH_SHARE * local.search.beam * shape.features * n * size * raced, local.search.max_rows)
                   for size in ks)
    return 0.0


def _local_rows(local: Any, methods: list[str], shape: Shape, n: float, ks: list[int], *,
                shared: bool) -> float:
    """Model rows of local explanations for one query (`shared`: attributions already in the memo)."""
    from auditor.explain import registry

    rows = 0.0
    docs: dict[str, int] = {}  # attribution explainer -> the most top documents its methods explain
    for name in methods:
        chosen = registry.methods().get(name)
        if chosen is not None and chosen.attribution:
            docs[chosen.explainer.name] = max(docs.get(chosen.explainer.name, 0), chosen.docs)
    if not shared:
        rows += sum(_explainer_rows(explainer, local, shape, top, n) for explainer, top in docs.items())
    for method in methods:
        rows += _search_rows(method, local, shape, n, ks)
    optimum = 0.0
    for k in ks:
        subsets = math.comb(shape.features, k)
        if 0 < subsets <= getattr(local, "optimum_max_subsets", 0):
            optimum += subsets * n
    sets = len(methods) + (1 if optimum else 0)
    return rows + optimum + n * sets * 2 * len(ks)  # validity and completeness of every set


# Seconds of the explainers' own fits per document (they grow faster than the model rows and dominate on very wide
# data), fitted on the wide synthetic data at 136 and 700 features (benchmarks/local_wide.py, serial, one thread):
KERNELSHAP_FIT = 2.4e-10  # × coalitions × F²: the normal equations (BLAS) and their 11 solves — 0.4 s at 700
LIRME_FIT = (1.4e-10, 0.001)  # × samples × F², + per document: the ridge fit, the top documents batched — 1 ms at
# 12 features, 6 ms at 136
EXS_FIT = (1.15e-9, 1.1e-10)  # × samples × F², × F³: the exact L1 SVR's Newton steps and finish — 0.043 s at 136,
# 1.2 s at 700 (LAPACK's Cholesky, the Hessian updated by the rows entering and leaving the zone)


def _fit_seconds(methods: list[str], local: Any, features: int) -> float:
    """Seconds per query of the explainers' own fits: KernelSHAP's weighted regression per document (with its
    jackknife), LIRME's ridge and EXS's exact SVR per document, for the most top documents any method explains."""
    from auditor.explain import registry

    f2, n = float(features) ** 2, local.lime.samples
    per_fit = {"kernelshap": KERNELSHAP_FIT * _coalitions(local.kernelshap, features) * f2,
               "lirme": LIRME_FIT[0] * n * f2 + LIRME_FIT[1],
               "exs": EXS_FIT[0] * n * f2 + EXS_FIT[1] * f2 * features}
    docs: dict[str, int] = {}  # explainer -> the most top documents its methods explain
    for name in methods:
        chosen = registry.methods().get(name)
        if chosen is not None and chosen.explainer.name in per_fit:
            docs[chosen.explainer.name] = max(docs.get(chosen.explainer.name, 0), chosen.docs)
    return sum(n_docs * per_fit[explainer] for explainer, n_docs in docs.items())


def _building(rows: float, shape: Shape) -> float:
    """Seconds to build masked rows (copies of the document with the masked features filled) before the model
    scores them; none when they are read off the trees."""
    return 0.0 if shape.masks_off_trees else BUILD_SECONDS * rows * shape.features ** 0.5


def _local_explanations(options: Any, shape: Shape, earlier: set[str]) -> tuple[int, int, float, str]:
    queries, n = shape.sample(options.queries)
    ks = sorted({options.k, *[k for k in options.k_curve if k < shape.features]})
    rows = queries * _local_rows(options, list(options.methods), shape, n, ks, shared=False)
    explain = _building(rows, shape) + queries * _fit_seconds(list(options.methods), options,
                                                                            shape.features)
    rankings = queries * _local_rows(options, list(options.methods), shape, n, ks, shared=True) / max(n, 1.0)
    explain += PAIR_SECONDS * rankings * shape.pairs()  # each masked ranking's tau against the model's
    return queries, int(rows), explain, (f"{queries} queries × ~{n:.0f} documents, {len(options.methods)} "
                                                f"explainers, k = {', '.join(map(str, ks))}")


def _confidence(options: Any, shape: Shape, earlier: set[str]) -> tuple[int, int, float, str]:
    from auditor.evidence.local_explanations import LocalExplanationsOptions

    queries, n = shape.sample(options.queries)
    local = LocalExplanationsOptions(methods=options.methods, k=options.k, kernelshap=options.kernelshap,
                                     lime=options.lime, greedy=options.greedy, search=options.search,
                                     optimum_max_subsets=0)  # confidence judges no optimum
    reused = "local_explanations" in earlier
    first = 0.0 if reused else _local_rows(local, list(options.methods), shape, n, [options.k], shared=False)
    from auditor.explain import registry

    rerun_methods = [m for m in options.methods if not registry.method(m).explainer.deterministic]
    rerun = options.rerun_fraction * _local_rows(local, rerun_methods, shape, n, [options.k], shared=False)
    # each set and its complement under the held-out and the robustness rows (the estimate's target and signal)
    heldout = n * len(options.methods) * 2 * (options.heldout_rows + options.robustness_rows)
    rows = queries * (first + rerun + n * len(options.methods) + heldout)
    fits = queries * (options.rerun_fraction * _fit_seconds(rerun_methods, local, shape.features)
                      + (0.0 if reused else _fit_seconds(list(options.methods), local, shape.features)))
    ranked = options.rerun_fraction * _local_rows(local, rerun_methods, shape, n, [options.k], shared=True)
    if not reused:
        ranked += _local_rows(local, list(options.methods), shape, n, [options.k], shared=True)
    fits += PAIR_SECONDS * queries * ranked / max(n, 1.0) * shape.pairs()  # masked rankings' tau
    return queries, int(rows), _building(rows, shape) + fits, (
        f"{queries} queries, {len(options.methods)} explainers rerun for stability"
        + ("; first runs shared with local_explanations" if reused else ""))


def _decision_path(options: Any, shape: Shape, earlier: set[str]) -> tuple[int, int, float, str]:
    queries, _ = shape.sample(options.queries)
    local = options  # its explainer sections (kernelshap, lime...) are those of local_explanations (the registry's)
    reused = "local_explanations" in earlier
    rows = 0 if reused else queries * sum(_explainer_rows(e, local, shape, options.docs_per_query)
                                          for e in options.explainers)
    # ground truth over every document (additivity) and the explained ones (1.7 s bookstore, 2.0 s wide data)
    extra = 1.5 + 1e-6 * shape.docs * shape.trees + 2e-7 * rows * shape.features ** 0.5
    return queries, int(rows), extra, f"{queries} queries × {options.docs_per_query} documents, " \
                                      f"{len(options.explainers)} explainers" + ("; attributions shared with " \
                                                                                 "local_explanations" if reused else "")


def _pairwise(options: Any, shape: Shape, earlier: set[str]) -> tuple[int, int, float, str]:
    queries, _ = shape.sample(options.queries)
    pairs = queries * (options.top - 1)
    f = shape.features
    if options.method == "raipair":
        per_pair = options.raipair.permutations * 2 * f * 2 * (options.raipair.measurements or
                                                                 max(2, int(2 * 5 * math.log(max(f, 2)))))
    elif f <= options.exact_max_features:
        per_pair = 2 ** f * 2
    else:
        per_pair = options.permutations * f * 2
    fill = 23 if options.fill == "adaptive" else 1  # adaptive: weighted training neighbours per coalition
    rows = pairs * per_pair * fill
    # beside the model: each coalition's reference rows and weights (3.3e-6 s a row measured on the wide data)
    return queries, int(rows), 3.5e-6 * rows, f"{pairs} pairs × {options.permutations} permutations of " \
                                                       f"{f} features"


def _global_importance(options: Any, shape: Shape, earlier: set[str]) -> tuple[int, int, float, str]:
    rows = shape.docs + 20
    extra = 1.5 + 4e-8 * shape.docs * shape.trees * 31  # TreeSHAP passes (compiled), plots
    longest = float(shape.sizes.max()) if shape.sizes.size else 0.0  # the waterfall's query: ranks among others
    extra += CELL_SECONDS * (options.waterfall_features + 1) * longest ** 2
    return shape.queries, rows, extra, f"TreeSHAP of {shape.docs:,} documents"


def _surrogate(options: Any, shape: Shape, earlier: set[str]) -> tuple[int, int, float, str]:
    rows = shape.background_docs + options.synthetic_per_document * shape.background_docs
    # boosting under interaction constraints: histogram building grows with rows × features, early stopping
    # typically stops near 200 rounds per phase
    rounds = min(options.max_rounds, 200) * 2
    extra = 2.0 + 6e-9 * rows * shape.features * rounds * options.num_leaves / 8  # bookstore 4 s, wide 7-31 s
    return shape.queries, rows, extra, f"ILMART on {shape.background_docs:,} background documents × " \
                                       f"{shape.features} features"


def _disclosure(options: Any, shape: Shape, earlier: set[str]) -> tuple[int, int, float, str]:
    shared = "global_importance" in earlier
    rows = 0 if shared else shape.docs
    extra = 0.3 + 1e-6 * options.resamples * shape.queries * shape.features
    if not shared:
        extra += 4e-8 * shape.docs * shape.trees * 31
    return shape.queries, rows, extra, f"{options.resamples} bootstrap samples of queries" + \
        ("; TreeSHAP shared with global_importance" if shared else "")


def _parameter_influence(options: Any, shape: Shape, earlier: set[str]) -> tuple[int, int, float, str]:
    queries, n = shape.sample(options.queries, rankable=False)
    rows = int(queries * n * sum(1 + shape.distinct(f, options.sweep_points) for f in options.sensitive))
    rankings = sum(2 + shape.distinct(f, options.sweep_points) for f in options.sensitive)  # own, masked, swept
    cells = queries * CELL_SECONDS * rankings * 2 * shape.pairs(rankable=False)  # ranks among the others: n² each
    return queries, rows, 0.1 + 1e-6 * options.resamples * queries + cells, \
        f"{counted(len(options.sensitive), 'parameter')} masked and swept over {options.sweep_points} values"


def _exposure(options: Any, shape: Shape, earlier: set[str]) -> tuple[int, int, float, str]:
    queries, n = shape.sample(options.queries, rankable=False)
    groups = len(options.groups())
    values = sum(shape.distinct(g, options.max_values) for g in options.groups())
    rows = int(queries * n * values) if options.counterfactual else 0
    return queries, rows, 0.3 + 2e-6 * options.resamples * queries * max(groups, 1), \
        f"{groups} group column(s), {options.resamples} bootstrap samples"


def _cheap(options: Any, shape: Shape, earlier: set[str]) -> tuple[int, int, float, str]:
    return shape.queries, 0, 0.2 + 1e-5 * shape.docs, "measures on the scores"


ESTIMATORS: dict[str, Estimator] = {
    "ranking_quality": _cheap,
    "global_importance": _global_importance,
    "local_explanations": _local_explanations,
    "decision_path_accuracy": _decision_path,
    "pairwise": _pairwise,
    "confidence": _confidence,
    "surrogate": _surrogate,
    "disclosure_consistency": _disclosure,
    "parameter_influence": _parameter_influence,
    "exposure": _exposure,
}


def estimate_item(name: str, options: Any, shape: Shape, earlier: set[str]) -> ItemCost:
    """One evidence item's estimate (an unknown kind: its scores only, flagged in `basis`)."""
    estimator = ESTIMATORS.get(name)
    if estimator is None:
        return ItemCost(name=name, queries=shape.queries, rows=shape.docs, seconds=shape.docs / shape.rows_per_second,
                        basis="no cost model for this kind: its scores only")
    queries, rows, extra, basis = estimator(options, shape, earlier)
    speed = shape.masked_rows_per_second if name in MASKED_KINDS and shape.masked_rows_per_second else \
        shape.rows_per_second
    serial = rows / speed + extra
    seconds = serial
    pooled = (serial >= AUTO_MIN_SECONDS and queries >= 2) or queries >= AUTO_MIN_QUERIES
    if name in POOLED_KINDS and pooled and shape.workers > 1:
        share = max(1.0, min(shape.workers, queries) * POOL_EFFICIENCY)
        seconds = serial / share + POOL_START
        basis += f"; worker processes, {share:.1f}× as fast"
    return ItemCost(name=name, queries=queries, rows=rows, seconds=seconds, basis=basis, serial_seconds=serial)


def estimate_items(items: list[tuple[str, Any]], shape: Shape) -> list[ItemCost]:
    """Every item in spec order; the first also scores the whole dataset (shared by all, `ctx.scores`)."""
    out, earlier = [], set()
    for index, (name, options) in enumerate(items):
        cost = estimate_item(name, options, shape, earlier)
        if index == 0:
            cost.rows += shape.docs
            cost.seconds += shape.docs / shape.rows_per_second
        out.append(cost)
        earlier.add(name)
    return out


def shape_of(data: RankingData, background: RankingData | None, model: Any, *, rows_per_second: float,
             masked_rows_per_second: float | None = None, workers: int = 1) -> Shape:
    reference = background if background is not None else data
    trees = int((model.describe() or {}).get("n_trees") or 100)
    off_trees = bit_identical_trees(getattr(model, "inner", model)) is not None
    return Shape(sizes=np.asarray(data.query_sizes()), features=data.n_features, trees=trees,
                 background_docs=reference.n_docs, background_queries=reference.n_queries,
                 rows_per_second=rows_per_second, masked_rows_per_second=masked_rows_per_second, workers=workers,
                 masks_off_trees=off_trees,
                 feature_names=tuple(data.feature_names),
                 reference=reference.X)


def render_seconds(formats: list[str], n_items: int) -> float:
    return sum(RENDER_SECONDS.get(f, 0.0) for f in formats) * max(1.0, n_items / 10)


def plan_audit(prepared: Any, items: list[tuple[str, Any]] | None = None, *, workers: int = 1,
               speed: tuple[float, float, float] | None = None) -> Plan:
    """The estimate of a prepared audit (engine.PreparedAudit) on this machine: the probe's speed, every item in
    spec order (or `items`, e.g. as a budget changed them), the rendering."""
    rows_per_second, masked, probe_seconds = speed or probe_speed(prepared.model, prepared.data.X)
    items = prepared.spec.evidence_items() if items is None else items
    shape = shape_of(prepared.data, prepared.background, prepared.model, rows_per_second=rows_per_second,
                     masked_rows_per_second=masked, workers=free_workers(workers))
    return Plan(items=estimate_items(items, shape),
                render_seconds=render_seconds(list(prepared.spec.output.formats), len(items)),
                rows_per_second=rows_per_second, masked_rows_per_second=masked, probe_seconds=probe_seconds)


def compared(plan: Plan, seconds: dict[str, float], rows: dict[str, int]) -> list[dict[str, Any]]:
    """Estimate against actual per item (the run block of evidence.json and the report's record of the audit)."""
    out = []
    for item in plan.items:
        actual = seconds.get(item.name)
        out.append({"evidence": item.name, "queries": item.queries, "estimated_rows": int(item.rows),
                    "rows": int(rows.get(item.name, 0)), "estimated_seconds": round(item.seconds, 1),
                    "seconds": actual,
                    "ratio": round(actual / item.seconds, 2) if actual is not None and item.seconds > 0 else None})
    return out


def plan_lines(plan: Plan) -> list[str]:
    """What `auditor validate` prints: one line per item, the rendering, the total."""
    width = max([len(item.name) for item in plan.items] + [10])
    lines = [f"estimated cost on this machine (model scores {plan.rows_per_second:,.0f} rows/s, masked rows "
             f"{plan.masked_rows_per_second or plan.rows_per_second:,.0f}/s; probe {plan.probe_seconds:.1f} s):"]
    for item in plan.items:
        lines.append(f"  {item.name:<{width}}  {_minutes(item.seconds):>7}  {item.rows:>13,} model rows  "
                     f"({item.basis})")
    lines.append(f"  {'report':<{width}}  {_minutes(plan.render_seconds):>7}  (rendering)")
    lines.append(f"  {'total':<{width}}  {_minutes(plan.seconds):>7}")
    return lines


def _minutes(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.1f} min"
