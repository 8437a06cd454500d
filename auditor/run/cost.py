"""Cost known before the run: model rows and seconds per evidence item, from the data's shape and the options.

Each evidence kind's registry entry (auditor/evidence/registry.py) names its estimator (auditor/evidence/costs.py
for the built-in kinds), which counts the model rows its options ask for — per audited query from the query's
documents n, the features F, the explanation sizes k, the samples and the trees — and the seconds its work besides
the model takes (tree passes, surrogate boosting, compiled kernels' first call); the explainers' rows and fits come
from their registry entries (auditor/explain/costs.py). Seconds = rows ÷ the model's scoring speed + that work: the
masked speed for kinds whose rows are mostly masked, shared among worker processes for pooled kinds — facts the
registry states, so this module never names a kind or an explainer. The speed is measured on the audited rows
themselves by a short probe (`probe_speed`, ~0.3 s: the same model, the same threads as the audit), so a slow
700-feature ensemble and a small 12-feature one get their own rates. The constants were fitted on the bookstore
example (12 features, 80 trees) and the wide synthetic data (136 features, 150 trees; benchmarks/wide_audit.py); how
close the estimates come is measured there and recorded in docs/benchmarks.md ("Wide data").

`plan` is the whole audit: the items in spec order (work an earlier item shares through the memo is not counted
twice), the report rendering, and the budget's choices (auditor/run/budget.py).
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from auditor.core.threads import cpu_count
from auditor.evidence.executor import pool_plan
from auditor.inputs.data import RankingData
from auditor.models.base import decided_trees

PROBE_KEEP = 5  # features a masked probe row keeps (the searches' sets: k ≤ 10); the rest at the mean
POOL_START = 4.0  # seconds to start worker processes (docs/architecture.md, "Executors"), paid by the first item
# that uses them
POOL_EFFICIENCY = 0.9  # worker processes run a pooled kind's queries this close to `workers` times as fast (wide
# data: 1.96 with 2 workers)
RENDER_SECONDS = {"html": 3.0, "pdf": 9.0}  # judging, rendering and writing after the evidence: 11 s for the
# bookstore (34 pages, signed), 12 s for the wide data's 43 pages (2026-11-30)


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
    search_rows_per_second: float | None = None  # a search step's masked rows, one set plus each other feature: they
    # score as families off the trees (auditor.scoring.masked_scoring), faster still (None: as masked rows)
    masks_off_trees: bool = False  # masked rows read off the trees (auditor.scoring.masked_scoring): none is built
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
    serial_seconds: float | None = None  # in this process alone (`auto` chooses the workers from it: pool_plan)

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


def probe_speed(model: Any, X: np.ndarray, *, rows: int = 4000, repeats: int = 3
                ) -> tuple[float, float, float, float]:
    """The model's scoring speed (rows per second) on the audited rows, on masked rows like the explainers'
    (PROBE_KEEP features of each row kept, seeded; the rest at the column mean) and on a search step's masked rows
    (PROBE_KEEP − 1 features kept plus each other feature, for 5 seeded sets: they score as families off the trees),
    and the probe's own seconds: the best of `repeats` calls on `rows` rows (tiled when the data has fewer), after
    one warm-up call. Masked rows take the same paths again and again: on the wide data they score ~2-3x faster
    than documents, and a search step's ~3-5x faster again. Without the trees' array form the search step's speed
    is the masked rows'."""
    if X.shape[0] == 0:
        return 1e6, 1e6, 1e6, 0.0
    sample = X[np.resize(np.arange(X.shape[0]), rows)]
    with np.errstate(all="ignore"):
        mean = np.nan_to_num(np.nanmean(X, axis=0))
    rng = np.random.default_rng(0)
    keep = rng.random(sample.shape).argsort(axis=1) < min(PROBE_KEEP, X.shape[1])
    masked = np.where(keep, sample, mean)
    started = time.perf_counter()
    model.predict(sample[:64])
    trees = decided_trees(getattr(model, "inner", model))
    if trees is not None:  # masked rows are read off the trees (auditor.scoring.masked_scoring): many masks a document
        from auditor.scoring.masked_scoring import masked_scores

        docs, masks = sample[:40], keep[:max(1, rows // 40)]
        steps = search_step_masks(X.shape[1], rng)
        masked_scores(trees, docs[:1], mean, masks[:1])  # compiled or loaded once, not timed
        masked_scores(trees, docs, mean, steps)  # the family kernel too, and the documents' tables
    speeds = []
    for rows_ in (sample, masked, None):
        best = math.inf
        for _ in range(repeats if rows_ is not None or trees is not None else 0):
            begin = time.perf_counter()
            if rows_ is None:
                masked_scores(trees, docs, mean, steps)
            elif rows_ is masked and trees is not None:
                masked_scores(trees, docs, mean, masks)
            else:
                model.predict(rows_)
            best = min(best, time.perf_counter() - begin)
        if not math.isfinite(best):  # no trees: a search step's rows are masked rows like the others
            speeds.append(speeds[-1])
            continue
        speeds.append((rows if rows_ is not None else docs.shape[0] * steps.shape[0]) / max(best, 1e-6))
    return speeds[0], speeds[1], speeds[2], time.perf_counter() - started


def search_step_masks(n_features: int, rng: np.random.Generator) -> np.ndarray:
    """Keep-masks like a beam step's: 5 seeded sets of PROBE_KEEP − 1 features, each with every other feature."""
    size = min(PROBE_KEEP - 1, max(n_features - 1, 0))
    masks = []
    for _ in range(5):
        chosen = rng.choice(n_features, size, replace=False)
        for feature in np.setdiff1d(np.arange(n_features), chosen):
            mask = np.zeros(n_features, dtype=bool)
            mask[chosen], mask[feature] = True, True
            masks.append(mask)
    return np.array(masks) if masks else np.ones((1, n_features), dtype=bool)


def estimate_item(name: str, options: Any, shape: Shape, earlier: Mapping[str, Any]) -> ItemCost:
    """One evidence item's estimate in this process alone, from its kind's estimator and facts in the registry (an
    unknown kind: its scores only, flagged in `basis`); `estimate_items` then divides the pooled items' among the
    workers."""
    from auditor.evidence.registry import KINDS

    kind = KINDS.get(name)
    if kind is None:
        return ItemCost(name=name, queries=shape.queries, rows=shape.docs, seconds=shape.docs / shape.rows_per_second,
                        basis="no cost model for this kind: its scores only")
    queries, rows, extra, basis = kind.estimator()(options, shape, earlier)
    speed = shape.masked_rows_per_second if kind.masked and shape.masked_rows_per_second else shape.rows_per_second
    serial = rows / speed + extra
    return ItemCost(name=name, queries=queries, rows=rows, seconds=serial, basis=basis, serial_seconds=serial)


def estimate_items(items: list[tuple[str, Any]], shape: Shape) -> list[ItemCost]:
    """Every item, estimated in the order the engine runs them (`evidence.run_order`: a kind after those it uses),
    returned in spec order; the first to run also scores the whole dataset (shared by all, `ctx.scores`). The items
    `auto` runs on worker processes (`executor.pool_plan`) are divided among them, the first paying their start."""
    from auditor.evidence import REGISTRY, run_order
    from auditor.evidence.registry import KINDS

    options = dict(items)
    known = [name for name, _ in items if name in REGISTRY]
    order = run_order(known) + [name for name, _ in items if name not in REGISTRY]
    costs: dict[str, ItemCost] = {}
    earlier: dict[str, Any] = {}  # the items estimated before, with their options (work they share)
    for index, name in enumerate(order):
        cost = estimate_item(name, options[name], shape, earlier)
        if index == 0:
            cost.rows += shape.docs
            cost.seconds += shape.docs / shape.rows_per_second
        costs[name] = cost
        earlier[name] = options[name]
    if shape.workers > 1:
        pooled = [name for name in order if name in KINDS and KINDS[name].pooled]
        started = False
        for name, use in zip(pooled, pool_plan([(costs[n].seconds, costs[n].queries) for n in pooled]), strict=True):
            if use:
                cost = costs[name]
                share = max(1.0, min(shape.workers, cost.queries) * POOL_EFFICIENCY)
                cost.seconds = cost.seconds / share + (0.0 if started else POOL_START)
                cost.basis += f"; worker processes, {share:.1f}× as fast"
                started = True
    return [costs[name] for name, _ in items]


def shape_of(data: RankingData, background: RankingData | None, model: Any, *, rows_per_second: float,
             masked_rows_per_second: float | None = None, search_rows_per_second: float | None = None,
             workers: int = 1) -> Shape:
    reference = background if background is not None else data
    trees = int((model.describe() or {}).get("n_trees") or 100)
    off_trees = decided_trees(getattr(model, "inner", model)) is not None
    return Shape(sizes=np.asarray(data.query_sizes()), features=data.n_features, trees=trees,
                 background_docs=reference.n_docs, background_queries=reference.n_queries,
                 rows_per_second=rows_per_second, masked_rows_per_second=masked_rows_per_second,
                 search_rows_per_second=search_rows_per_second, workers=workers,
                 masks_off_trees=off_trees,
                 feature_names=tuple(data.feature_names),
                 reference=reference.X)


def render_seconds(formats: list[str], n_items: int) -> float:
    return sum(RENDER_SECONDS.get(f, 0.0) for f in formats) * max(1.0, n_items / 10)


def plan_audit(prepared: Any, items: list[tuple[str, Any]] | None = None, *, workers: int = 1,
               speed: tuple[float, float, float, float] | None = None) -> Plan:
    """The estimate of a prepared audit (engine.PreparedAudit) on this machine: the probe's speed, every item in
    spec order (or `items`, e.g. as a budget changed them), the rendering."""
    rows_per_second, masked, search, probe_seconds = speed or probe_speed(prepared.model, prepared.data.X)
    items = prepared.spec.evidence_items() if items is None else items
    shape = shape_of(prepared.data, prepared.background, prepared.model, rows_per_second=rows_per_second,
                     masked_rows_per_second=masked, search_rows_per_second=search, workers=free_workers(workers))
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
