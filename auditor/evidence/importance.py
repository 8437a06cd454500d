"""Per-query TreeSHAP importance, computed once per audit and shared through the memo: `global_importance` reports
it, `disclosure_consistency` and `surrogate` read it. Not a plugin: plugins import it, never each other."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from auditor.evidence.base import AuditContext
from auditor.explain.screen import within_query_spread
from auditor.models.capabilities import fast_treeshap as _fast_treeshap
from auditor.models.capabilities import reference_scores

IMPORTANCE_KEY = ("treeshap_importance_by_query",)
# every query's within-query TreeSHAP spread from the pass over all documents: the narrowed searches' candidates
# (explainers.query_spreads), read instead of a second TreeSHAP pass over the same documents
ALL_SPREADS_KEY = ("treeshap_spread_of_every_query",)


@dataclass(frozen=True)
class ImportanceByQuery:
    """What the importance views need from the TreeSHAP values, per query: Q × F instead of documents × F, so it
    can be shared between evidence items (`ctx.memo`) without holding φ for the whole audit."""

    global_abs: np.ndarray  # mean |φ| over all documents (F)
    per_query_abs: np.ndarray  # mean |φ| per query (Q × F)
    within: np.ndarray  # mean |φ − query mean of φ| per query with ≥ 2 documents (Q' × F)

    def views(self) -> dict[str, np.ndarray]:
        zeros = np.zeros(len(self.global_abs))
        return {"within_query": self.within.mean(axis=0) if len(self.within) else zeros,
                "per_query": self.per_query_abs.mean(axis=0), "global": self.global_abs}


def summarize(phi: np.ndarray, query_ptr: np.ndarray) -> ImportanceByQuery:
    """Per-query summaries of φ (see the module docstring). Single-document queries have no within-query effect
    and are left out of that view."""
    summaries = _Summaries(phi.shape[1])
    for qa, qb in _query_chunks(query_ptr, 50_000):  # no |φ| temporary the size of φ
        summaries.add(phi[query_ptr[qa]:query_ptr[qb]], query_ptr[qa:qb + 1] - query_ptr[qa])
    return summaries.result()


class _Summaries:
    """Per-query summaries of φ accumulated chunk by chunk of whole queries: mean |φ| over all documents, and per
    query mean φ, mean |φ| and — for queries with ≥ 2 documents — mean |φ − the query's mean φ|."""

    def __init__(self, width: int) -> None:
        self.width = width
        self.abs_total = np.zeros(width)
        self.n_docs = 0
        self.means: list[np.ndarray] = []
        self.per_query: list[np.ndarray] = []
        self.within: list[np.ndarray] = []

    def add(self, phi: np.ndarray, offsets: np.ndarray) -> None:
        """φ of consecutive whole queries (rows offsets[i]:offsets[i+1])."""
        self.abs_total += np.abs(phi).sum(axis=0)
        self.n_docs += phi.shape[0]
        for a, b in itertools.pairwise(offsets):
            block = phi[a:b]
            mean = block.mean(axis=0)
            self.means.append(mean)
            self.per_query.append(np.abs(block).mean(axis=0))
            if b - a > 1:
                self.within.append(np.abs(block - mean).mean(axis=0))

    def query_means(self) -> np.ndarray:
        return np.asarray(self.means).reshape(-1, self.width)

    def result(self) -> ImportanceByQuery:
        return ImportanceByQuery(global_abs=self.abs_total / max(self.n_docs, 1),
                                 per_query_abs=np.asarray(self.per_query).reshape(-1, self.width),
                                 within=np.asarray(self.within).reshape(-1, self.width))


def importance_by_query(ctx: AuditContext) -> ImportanceByQuery | None:
    """The per-query TreeSHAP summaries, computed once per audit (by global_importance when it ran first); None for
    models without exact TreeSHAP."""
    def compute() -> ImportanceByQuery | None:
        passed = treeshap_pass(ctx, np.zeros(0, dtype=np.int64))
        return None if passed is None else passed.summary

    return ctx.memo(IMPORTANCE_KEY, compute)


@dataclass(frozen=True)
class TreeshapPass:
    """What one pass of TreeSHAP over the data leaves behind: never φ for every document (1M documents × 136
    features would be 1.1 GB), only per-query summaries and the φ of the rows the figures show."""

    summary: ImportanceByQuery
    additivity: float  # max |Σφ + bias − score| over all documents (score: `reference_scores`)
    query_means: np.ndarray  # Q × F: mean φ per query (to centre the plotted rows)
    kept: np.ndarray  # φ of the kept rows, in their (sorted) order
    method: str
    kept_bias: np.ndarray | None = None  # the bias (base value) of the kept rows
    rounding: float = 0.0  # max |exact sum of the trees − the library's score| (XGBoost's float32 sums)


def _query_chunks(query_ptr: np.ndarray, chunk: int) -> list[tuple[int, int]]:
    """Consecutive query ranges [qa, qb) of about `chunk` documents each (a larger query is a chunk alone)."""
    out, start = [], 0
    n_queries = len(query_ptr) - 1
    while start < n_queries:
        end = max(start + 1, int(np.searchsorted(query_ptr, query_ptr[start] + chunk, side="right")) - 1)
        end = min(end, n_queries)
        out.append((start, end))
        start = end
    return out


def contribution_chunks(ctx: AuditContext, chunk: int) -> tuple[Iterator[tuple[int, int, np.ndarray]], str] | None:
    """TreeSHAP (φ and bias columns) chunk by chunk of whole queries — (first query, end query, values) — and
    which implementation computes it; None for models without exact TreeSHAP. Chunks show progress, and every
    chunk counts its rows as model rows, whichever implementation ran."""
    X, ptr = ctx.data.X, ctx.data.query_ptr
    fast = _fast_treeshap(ctx.model, X.shape[0])
    chunks = _query_chunks(ptr, chunk)

    def compute(qa: int, qb: int) -> np.ndarray | None:
        rows = X[ptr[qa]:ptr[qb]]
        if fast is None:
            return ctx.model.contributions(rows)
        ctx.model.rows_evaluated += rows.shape[0]  # as CountingRanker.contributions counts pred_contrib's
        return fast.contributions(rows)

    first = compute(*chunks[0]) if chunks else None
    if first is None:
        return None

    def stream() -> Iterator[tuple[int, int, np.ndarray]]:
        yield (*chunks[0], first)
        for qa, qb in ctx.progress.track(chunks[1:], description="TreeSHAP contributions", total=len(chunks) - 1):
            yield qa, qb, compute(qa, qb)  # type: ignore[misc]

    if fast is not None:
        method = "auditor's FastTreeShap (equal to LightGBM's pred_contrib to 1e-9)"
    else:
        method = getattr(getattr(ctx.model, "inner", ctx.model), "contributions_method",
                         f"the '{ctx.model.kind}' model's own contributions")
    return stream(), method


def treeshap_pass(ctx: AuditContext, keep: np.ndarray, chunk: int = 20_000) -> TreeshapPass | None:
    """One streaming pass of TreeSHAP over the data: per-query summaries, additivity, query means, and φ of the
    sorted rows `keep`. Memory: one chunk of φ plus Q × F summaries. None for models without exact TreeSHAP."""
    streamed = contribution_chunks(ctx, chunk)
    if streamed is None:
        return None
    parts, method = streamed
    ptr, scores = ctx.data.query_ptr, ctx.scores()
    summaries = _Summaries(ctx.data.n_features)
    kept = np.empty((keep.size, ctx.data.n_features))
    kept_bias = np.empty(keep.size)
    additivity = rounding = 0.0
    reference = reference_scores(ctx.model)
    spreads = np.empty((ctx.data.n_queries, ctx.data.n_features))
    for qa, qb, part in parts:
        start, stop = ptr[qa], ptr[qb]
        phi = part[:, :-1]
        spreads[qa:qb] = within_query_spread(phi, ptr[qa:qb + 1] - start)
        target = reference(ctx.data.X[start:stop], scores[start:stop])
        rounding = max(rounding, float(np.max(np.abs(target - scores[start:stop]), initial=0.0)))
        additivity = max(additivity, float(np.max(np.abs(phi.sum(axis=1) + part[:, -1] - target), initial=0.0)))
        summaries.add(phi, ptr[qa:qb + 1] - start)
        here = np.flatnonzero((keep >= start) & (keep < stop))
        kept[here] = phi[keep[here] - start]
        kept_bias[here] = part[keep[here] - start, -1]
    ctx.memo(ALL_SPREADS_KEY, lambda: spreads)
    return TreeshapPass(summary=summaries.result(), additivity=additivity, query_means=summaries.query_means(),
                        kept=kept, method=method, rounding=rounding, kept_bias=kept_bias)
