"""Model rows and fit seconds of each registered explainer, for the cost model (auditor/run/cost.py) before a run: one
function an explainer, named by its registry entry (`Explainer.cost`, `Explainer.fit`), so the cost model never
branches on an explainer's name and a new explainer cannot go uncosted.

`rows(settings, shape, docs, n, ks)`: model rows for one query — an attribution explainer for its `docs` top
documents (a listwise one plays the whole query of `n` documents), a selection explainer's search for the sizes
`ks` over `n` documents. `settings` is the evidence item's options (they hold every explainer section), `shape` the
cost model's `Shape` (features, ...). `fit(settings, features)`: seconds of an attribution explainer's own fit per
document, beside the model (they grow faster than the rows on very wide data).

The counts follow the code they estimate: KernelSHAP's 2M + 2048 coalitions per document (or 2^M − 2), LIME's shared
draws (samples + 4 per query), the searches' worst case times a measured share (they stop early and skip inert
features). Pure arithmetic: importing this loads nothing.
"""

from __future__ import annotations

from typing import Any

GREEDY_SHARE = 0.55  # of the worst case C·n·Σ_k(1 + seeds·(k − 1)) rows (bookstore 0.53, wide data 0.5)
SEARCH_SHARE = 0.6  # of beam·C·n·Σ_k k (bookstore 0.61)
RACED_ROWS = 8  # background rows' worth of distinct rows a set of `background_search` costs, on average, raced over
# more (MQ2008, 100 rows, beam 1: 2.4 M rows against 21 M for every set on every row; benchmarks/background_search.py)

# Seconds of the explainers' own fits per document, fitted on the wide synthetic data at 136 and 700 features
# (benchmarks/local_wide.py, serial, one thread):
KERNELSHAP_FIT = 2.4e-10  # × coalitions × F²: the normal equations (BLAS) and their 11 solves — 0.4 s at 700
LIRME_FIT = (1.4e-10, 0.001)  # × samples × F², + per document: the ridge fit, the top documents batched — 1 ms at
# 12 features, 6 ms at 136
EXS_FIT = (3.3e-10, 1.1e-10)  # × samples × F², × F³: the exact L1 SVR's Newton steps and finish — 0.012 s at 136,
# 0.37 s at 700 (LAPACK's Cholesky, the Hessian updated by the rows entering and leaving the zone; the finish's
# active-set steps on an updated factorisation)


def coalitions(options: Any, features: int) -> int:
    """KernelSHAP's (and the listwise explainers') sample count: `auto` is 2M + 2048, at most 2^M − 2."""
    if options.nsamples != "auto":
        return int(options.nsamples)
    return int(min(2 * features + 2048, 2 ** min(features, 40) - 2))


def no_rows(settings: Any, shape: Any, docs: int, n: float, ks: list[int]) -> float:
    """An explainer that scores nothing itself (RANDOM: its sets' validity is counted with every set's)."""
    return 0.0


def kernelshap(settings: Any, shape: Any, docs: int, n: float, ks: list[int]) -> float:
    o = settings.kernelshap
    fill = o.background_size if o.background == "sample" else 1
    return float(docs * coalitions(o, shape.features) * fill)


def treeshap(settings: Any, shape: Any, docs: int, n: float, ks: list[int]) -> float:
    return float(docs)  # pred_contrib counts a row a document (the trees' own walk)


def lime(settings: Any, shape: Any, docs: int, n: float, ks: list[int]) -> float:
    """LIRME and EXS: the query's shared draws (samples + 4), or per-document draws."""
    o = settings.lime
    return float((o.samples + 4) * (1 if o.shared_samples else docs))


def listwise(section: str) -> Any:
    """RankingSHAP / RankSHAP: every coalition of the query's game, each a masked ranking of its `n` documents (under
    each of the item's background rows)."""
    def rows(settings: Any, shape: Any, docs: int, n: float, ks: list[int]) -> float:
        o = getattr(settings, section)
        m = shape.features
        exact = o.estimator == "exact" or (o.estimator == "auto" and m <= o.max_exact)
        samples = 2 * m + 2048 if o.nsamples == "auto" else int(o.nsamples)
        played = 2 ** min(m, 40) if exact else samples + 2
        return float(played * n * (getattr(settings, "background_rows", None) or 1))
    return rows


def _candidates(section: Any, features: int) -> int:
    return min(features, section.candidates or features)


def greedy(settings: Any, shape: Any, docs: int, n: float, ks: list[int]) -> float:
    """The greedy family at the largest k: a query's searches share their sets (auditor.explain.screen)."""
    k = max(ks, default=0)
    o = settings.greedy
    return GREEDY_SHARE * _candidates(o, shape.features) * n * (1 + o.seeds * (k - 1)) if k else 0.0


def validity_search(settings: Any, shape: Any, docs: int, n: float, ks: list[int]) -> float:
    k = max(ks, default=0)
    o = settings.search
    return float(min(SEARCH_SHARE * o.beam * _candidates(o, shape.features) * n * k, o.max_rows))


def background_search(settings: Any, shape: Any, docs: int, n: float, ks: list[int]) -> float:
    """Every feature, each set's rows under the item's background rows, raced (explain/listwise.py); it shares no
    set with the other searches: every k."""
    o = settings.search
    raced = min(getattr(settings, "background_rows", None) or 1, RACED_ROWS)
    return float(sum(min(SEARCH_SHARE * o.beam * shape.features * n * size * raced, o.max_rows) for size in ks))


def kernelshap_fit(settings: Any, features: int) -> float:
    return float(KERNELSHAP_FIT * coalitions(settings.kernelshap, features) * float(features) ** 2)


def lirme_fit(settings: Any, features: int) -> float:
    return float(LIRME_FIT[0] * settings.lime.samples * float(features) ** 2 + LIRME_FIT[1])


def exs_fit(settings: Any, features: int) -> float:
    f2 = float(features) ** 2
    return float(EXS_FIT[0] * settings.lime.samples * f2 + EXS_FIT[1] * f2 * features)
