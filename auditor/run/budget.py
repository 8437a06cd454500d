"""A time budget for the evidence (spec `budget: {minutes: N}`): the engine samples queries and drops optional
work so the cost model's estimate (auditor/run/cost.py) fits, and says what it chose and why.

The choice never depends on the machine's load or on luck: it is planned at a *reference* scoring speed computed
from the model itself — the tree nodes one row visits (the ensemble's path lengths weighted by its training
counts) and the features a row carries, at the rates of the 2-core machine the cost model was calibrated on — so
the same spec, data and seed always make the same choice, and the choice is recorded in evidence.json. What this
machine measured (the probe) is reported beside it. Models without trees are planned at FALLBACK_ROWS_PER_SECOND.

What it changes, in order, only as far as needed:
1. the kinds whose registry entry says `sampled` (today the per-query explainers: local explanations, confidence,
   decision paths, pairwise) audit a seeded sample of Q queries, the largest Q that fits (never below MIN_QUERIES;
   an item's own smaller `queries` is kept). The explainer items sample from one stream, so they judge the same
   queries;
2. if Q = MIN_QUERIES does not fit: each kind's `reduced` option values are set (local explanations leave out the
   effect-of-k curve and the exhaustive optimum), and Q is searched again;
3. if that does not fit either: the audit runs at that minimum and the report says the budget could not be met.
KernelSHAP's sample count is never cut: too few coalitions made its explanations no better than random on wide
data (issue 28), and the convergence check would only flag it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from auditor.evidence.registry import KINDS
from auditor.run.cost import Shape, estimate_items

# Reference rates, fitted on the bookstore (80 trees, 12 features, 328 nodes a row: 300k rows/s, masked 320k) and
# the wide data (150 trees, 136 features, 869 nodes a row: 105k rows/s, masked 265k) on the quiet 2-core machine.
NODE_SECONDS = 9.95e-9  # a document: per tree node it visits...
FEATURE_SECONDS = 6.4e-9  # ...and per feature it carries
MASKED_ROW_SECONDS = 3.1e-6  # a masked row (features at the mean take the same paths again): mostly fixed cost...
MASKED_NODE_SECONDS = 0.75e-9  # ...and a little per node
FALLBACK_ROWS_PER_SECOND = 50_000.0
MIN_QUERIES = 10


@dataclass
class Choice:
    """What the budget chose: the items to run, whether the estimate fits, and the sentences that say why."""

    items: list[tuple[str, Any]]
    minutes: float
    reference_rows_per_second: float
    estimated_seconds: float  # at the reference speed, after the choice
    full_seconds: float  # at the reference speed, the spec as written
    fits: bool
    queries: int | None = None  # the sample of the per-query explainers; None: unchanged
    reduced_sizes: bool = False
    sentences: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"minutes": self.minutes, "fits": self.fits, "queries": self.queries,
                "reduced_sizes": self.reduced_sizes,
                "reference_rows_per_second": round(self.reference_rows_per_second),
                "estimated_minutes": round(self.estimated_seconds / 60, 1),
                "full_minutes": round(self.full_seconds / 60, 1), "choices": self.sentences}


def reference_speed(model: Any, n_features: int) -> tuple[float, float]:
    """Rows per second at the reference rates (module docstring), documents and masked rows: deterministic, from
    the model file."""
    from auditor.evidence.kinds.decision_path_accuracy.measure import tree_ensemble

    ensemble, _ = tree_ensemble(model)
    if ensemble is None:
        return FALLBACK_ROWS_PER_SECOND, FALLBACK_ROWS_PER_SECOND
    depth = ensemble.depths()
    leaf = ensemble.feature == -1
    reached = float(np.sum(ensemble.count[ensemble.roots]))
    if reached <= 0:
        nodes = float(np.sum(depth[leaf])) / max(int(np.sum(leaf)), 1) * len(ensemble.roots)
    else:
        nodes = float(np.sum(ensemble.count[leaf] * depth[leaf])) / reached * len(ensemble.roots)
    nodes = max(nodes, 1.0)
    return 1.0 / (NODE_SECONDS * nodes + FEATURE_SECONDS * n_features), \
        1.0 / (MASKED_ROW_SECONDS + MASKED_NODE_SECONDS * nodes)


def _with(items: list[tuple[str, Any]], queries: int | None, reduce: bool) -> list[tuple[str, Any]]:
    """The items with the sampled kinds at `queries` queries (an item's own smaller sample kept) and, with
    `reduce`, the option values each kind's registry entry gives for a budget that queries alone cannot meet."""
    out = []
    for name, options in items:
        update: dict[str, Any] = {}
        kind = KINDS.get(name)
        if queries is not None and kind is not None and kind.sampled:
            own = getattr(options, "queries", None)
            update["queries"] = queries if own is None else min(own, queries)
        if reduce and kind is not None:
            update.update(dict(kind.reduced))
        out.append((name, options.model_copy(update=update) if update else options))
    return out


def choose(items: list[tuple[str, Any]], shape: Shape, *, minutes: float, render_seconds: float) -> Choice:
    """The largest audit (module docstring, steps 1–3) whose estimate at `shape`'s speed fits `minutes`."""
    budget = minutes * 60.0

    def seconds(candidate: list[tuple[str, Any]]) -> float:
        return sum(c.seconds for c in estimate_items(candidate, shape)) + render_seconds

    full = seconds(items)
    rankable = int(np.sum(shape.sizes >= 2))
    choice = Choice(items=items, minutes=minutes, reference_rows_per_second=shape.rows_per_second,
                    estimated_seconds=full, full_seconds=full, fits=full <= budget)
    if choice.fits:
        choice.sentences.append(f"The whole audit as specified fits the budget of {minutes:g} minutes (estimated "
                                f"{full / 60:.1f} minutes): nothing was reduced.")
        return choice
    sampled = [name for name, _ in items if name in KINDS and KINDS[name].sampled]
    floor = min(MIN_QUERIES, rankable)
    for reduce in (False, True):
        low, high = floor, rankable
        if seconds(_with(items, low, reduce)) > budget:
            continue
        while low < high:  # the largest Q that fits (the estimate grows with Q)
            middle = (low + high + 1) // 2
            if seconds(_with(items, middle, reduce)) <= budget:
                low = middle
            else:
                high = middle - 1
        return _chosen(choice, items, low, reduce, sampled, rankable, seconds, fits=True)
    return _chosen(choice, items, floor, True, sampled, rankable, seconds, fits=False)


def _chosen(choice: Choice, items: list[tuple[str, Any]], queries: int, reduce: bool, sampled: list[str],
            rankable: int, seconds: Any, *, fits: bool) -> Choice:
    choice.items = _with(items, queries, reduce)
    choice.estimated_seconds = seconds(choice.items)
    choice.queries, choice.reduced_sizes, choice.fits = queries, reduce, fits
    why = (f"the audit as specified was estimated at {choice.full_seconds / 60:.1f} minutes against a budget of "
           f"{choice.minutes:g}")
    changed = [name for (name, before), (_, after) in zip(items, choice.items, strict=True)
               if name in sampled and getattr(before, "queries", None) != getattr(after, "queries", None)]
    if changed:
        choice.sentences.append(f"{', '.join(changed)} audit a seeded sample of {queries} of the {rankable} "
                                f"rankable queries: {why}.")
    for name in dict(items) if reduce else ():
        if name in KINDS and KINDS[name].reduced:
            choice.sentences.append(f"{name} leaves out {KINDS[name].reduced_text}: {why}, and {queries} queries "
                                    "alone did not fit.")
    if not fits:
        choice.sentences.append(f"The budget of {choice.minutes:g} minutes cannot be met even at the minimum "
                                f"({queries} queries, no effect-of-k curve): the audit was estimated at "
                                f"{choice.estimated_seconds / 60:.1f} minutes and runs at that minimum.")
    return choice
