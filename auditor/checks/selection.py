"""Scoring (selection) rates and impact ratios of categories of individuals, as NYC Local Law 144's bias audit
defines them for a tool that scores (6 RCNY §5-300, §5-301(c)), with percentile-bootstrap intervals.

Pure functions of arrays: no files, no spec. An individual is one document of one query (a candidate for one job
posting). Definitions:

- **selected** (`selected`): `median` — the individual's score is above the median score of the whole sample
  (strictly above; LL144's "scoring rate"); `top_k` — the individual is among the first k of its query in the order
  by score (ties keep file order, as in `checks.ranking`), i.e. shown on a ranked list's first page;
- **rate** of a category: its selected individuals ÷ its individuals;
- **impact ratio** of a category: its rate ÷ the highest rate among the categories reported (those not excluded);
- the smallest impact ratio over the reported categories of a table, and over all tables.

Intervals (`bootstrap`): resample the units — whole queries (default: a posting's candidates are scored together)
or individuals — with replacement; in each draw recompute the median cutoff (for `median`: the weighted median of the
drawn scores), each category's rate, the highest rate and every ratio; the 95% interval is the 2.5th–97.5th
percentile of the draws where the figure is defined (fewer than half defined: no interval). The excluded categories
stay as the full sample decides them.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

import numpy as np

Cutoff = Literal["median", "top_k"]
# The EEO-1 Component 1 categories, which 6 RCNY §5-300 makes LL144's categories: sex, and race/ethnicity (its
# race categories are of individuals not Hispanic or Latino). A value matches ignoring case and outer spaces.
EEO1_SEX = ("Male", "Female")
EEO1_RACE_ETHNICITY = ("Hispanic or Latino", "White", "Black or African American",
                       "Native Hawaiian or Other Pacific Islander", "Asian", "American Indian or Alaska Native",
                       "Two or More Races")
EEO1_COMPONENTS = {"sex": EEO1_SEX, "race/ethnicity": EEO1_RACE_ETHNICITY}
NOT_HISPANIC = " (Not Hispanic or Latino)"  # how DCWP's examples label a race category (6 RCNY §5-301)


def _bare(value: str) -> str:
    """A category value as matched: case and outer spaces aside, with or without DCWP's "(Not Hispanic or Latino)"."""
    key = value.strip().casefold()
    return key.removesuffix(NOT_HISPANIC.casefold()).strip()


def eeo1_race_label(value: str) -> str:
    """A race/ethnicity category as the published summary names it: a race category with "(Not Hispanic or
    Latino)", as DCWP's examples do, so a reader knows the races count non-Hispanic individuals only; "Hispanic or
    Latino" and any other value as they are."""
    key = _bare(value)
    race = next((label for label in EEO1_RACE_ETHNICITY[1:] if label.casefold() == key), None)
    return race + NOT_HISPANIC if race is not None else value


def published_category(table: str, category: str, components: Mapping[str, str | None]) -> str:
    """A category as LL144's published summary prints it, in the report as in the summary: the race/ethnicity part
    with DCWP's "(Not Hispanic or Latino)" on a race (`eeo1_race_label`), in its own table and in an intersection
    (`Female × Black or African American (Not Hispanic or Latino)`). `components`: each column's EEO-1 component."""
    columns, parts = table.split(" × "), category.split(" × ")
    if len(columns) != len(parts):
        return category
    return " × ".join(eeo1_race_label(part) if components.get(column) == "race/ethnicity" else part
                      for column, part in zip(columns, parts, strict=True))


def eeo1_component(values: list[str]) -> tuple[str | None, list[str]]:
    """Which EEO-1 component a column's category values are (`sex`, `race/ethnicity`, or None), and the values that
    are no category of it: of the component sharing most values with the column, or every value when none does."""
    wanted = [_bare(value) for value in values]
    best, outside = None, list(values)
    for component, labels in EEO1_COMPONENTS.items():
        known = {label.casefold() for label in labels}
        rest = [value for value, key in zip(values, wanted, strict=True) if key not in known]
        if len(rest) < len(outside) or (best is None and len(rest) < len(values)):
            best, outside = component, rest
    return (best if not outside else None), outside

CHUNK_CELLS = 4_000_000  # draws × individuals held at once


def selected(scores: np.ndarray, query_ptr: np.ndarray, *, cutoff: Cutoff, k: int = 10) -> np.ndarray:
    """Whether each individual is selected: above the sample's median score (`median`), or among the first `k` of
    its query (`top_k`)."""
    scores = np.asarray(scores, dtype=np.float64)
    if cutoff == "median":
        out: np.ndarray = scores > np.median(scores)
        return out
    chosen = np.zeros(len(scores), dtype=bool)
    for start, end in itertools.pairwise(query_ptr):
        order = np.argsort(-scores[start:end], kind="stable")
        chosen[start + order[:k]] = True
    return chosen


@dataclass(frozen=True)
class Table:
    """One breakdown of the individuals into categories (a column, or the intersection of columns): each
    individual's category index in `codes` (-1: unknown, left out of the table) and which categories are reported
    with an impact ratio (`reported`; the others are excluded as too small)."""

    codes: np.ndarray
    reported: np.ndarray

    @property
    def size(self) -> int:
        return len(self.reported)


@dataclass(frozen=True)
class Rates:
    """A table's figures on the full sample: individuals, selected individuals, rate and impact ratio per category
    (NaN ratio for an excluded category), and the smallest impact ratio over the reported ones."""

    n: np.ndarray
    selected: np.ndarray
    rate: np.ndarray
    ratio: np.ndarray
    min_ratio: float


def rates(table: Table, chosen: np.ndarray) -> Rates:
    """The table's rates and impact ratios on the full sample (`chosen`: `selected`'s output)."""
    weights = np.ones((1, len(chosen)))
    n, hits = _counts(weights, np.asarray(chosen, dtype=bool)[None, :], [table])
    rate, ratio, low = _ratios(n, hits, [table])
    return Rates(n=n[0], selected=hits[0], rate=rate[0], ratio=ratio[0], min_ratio=float(low[0, 0]))


@dataclass(frozen=True)
class Intervals:
    """95% percentile-bootstrap intervals: per table, (categories × 2) arrays of the rates' and the impact ratios'
    ends (NaN where undefined). The smallest ratio is a category's: its interval is that category's (issue 56: one
    figure, one interval)."""

    rate: list[np.ndarray]
    ratio: list[np.ndarray]


def bootstrap(scores: np.ndarray, chosen: np.ndarray, tables: list[Table], unit_of_row: np.ndarray,
              rng: np.random.Generator, *, cutoff: Cutoff, n_resamples: int = 2000,
              level: float = 0.95) -> Intervals:
    """Intervals of every table's rates and ratios, resampling the units `unit_of_row` names (queries or
    individuals) with replacement; `median` recomputes the cutoff in each draw, `top_k` keeps each individual's
    selection (it depends on its query alone)."""
    scores = np.asarray(scores, dtype=np.float64)
    units = np.asarray(unit_of_row, dtype=np.int64)
    n_units = int(units.max()) + 1 if units.size else 0
    order = np.argsort(scores, kind="stable")
    ordered = scores[order]
    chunk = max(1, CHUNK_CELLS // max(len(scores), 1))
    parts: list[tuple[np.ndarray, np.ndarray]] = []
    for start in range(0, n_resamples, chunk):
        size = min(chunk, n_resamples - start)
        take = rng.integers(0, n_units, size=(size, n_units))
        counts = np.bincount((take + (np.arange(size) * n_units)[:, None]).ravel(),
                             minlength=size * n_units).reshape(size, n_units).astype(np.float64)
        weights = counts[:, units]
        if cutoff == "median":
            cut = _weighted_medians(ordered, weights[:, order])
            hits = scores[None, :] > cut[:, None]
        else:
            hits = np.broadcast_to(np.asarray(chosen, dtype=bool)[None, :], weights.shape)
        n, picked = _counts(weights, hits, tables)
        parts.append((n, picked))
    n = np.concatenate([p[0] for p in parts])
    picked = np.concatenate([p[1] for p in parts])
    rate, ratio, _ = _ratios(n, picked, tables)
    tail = (1.0 - level) / 2.0
    points = [tail, 1.0 - tail]
    out_rate, out_ratio = [], []
    offset = 0
    for table in tables:
        span = slice(offset, offset + table.size)
        out_rate.append(np.array([_percentiles(rate[:, j], points) for j in range(span.start, span.stop)]))
        out_ratio.append(np.array([_percentiles(ratio[:, j], points) for j in range(span.start, span.stop)]))
        offset += table.size
    return Intervals(rate=out_rate, ratio=out_ratio)


def _weighted_medians(ordered: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The median of each row's sample, where row b holds score `ordered[i]` `weights[b, i]` times (integers): the
    mean of the values of ranks ⌈T/2⌉ and ⌊T/2⌋ + 1 of T drawn values, as `np.median` of the values repeated."""
    cumulative = np.cumsum(weights, axis=1)
    total = cumulative[:, -1]
    first = (cumulative < np.ceil(total / 2)[:, None]).sum(axis=1)
    second = (cumulative < (np.floor(total / 2) + 1)[:, None]).sum(axis=1)
    last = len(ordered) - 1
    out: np.ndarray = (ordered[np.minimum(first, last)] + ordered[np.minimum(second, last)]) / 2.0
    return out


def _counts(weights: np.ndarray, hits: np.ndarray, tables: list[Table]) -> tuple[np.ndarray, np.ndarray]:
    """Per draw (rows of `weights`) and category of every table (columns, tables one after another): individuals
    and selected individuals, each individual counted as often as its weight. Summed by `bincount` over (draw,
    category) cells: memory grows with draws × individuals (the chunk `bootstrap` holds anyway), never with
    individuals × categories as a one-hot matrix did."""
    draws = weights.shape[0]
    n = np.zeros((draws, sum(t.size for t in tables)))
    picked = np.zeros_like(n)
    offset = 0
    for table in tables:
        known = np.flatnonzero(table.codes >= 0)
        if table.size and known.size:
            cells = (np.arange(draws)[:, None] * table.size + table.codes[known][None, :]).ravel()
            held = weights[:, known]
            span = slice(offset, offset + table.size)
            n[:, span] = np.bincount(cells, weights=held.ravel(), minlength=draws * table.size).reshape(draws, -1)
            chosen = (held * hits[:, known]).ravel()
            picked[:, span] = np.bincount(cells, weights=chosen, minlength=draws * table.size).reshape(draws, -1)
        offset += table.size
    return n, picked


def _ratios(n: np.ndarray, picked: np.ndarray, tables: list[Table]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rates, impact ratios (NaN for excluded categories, and where the highest rate is 0) and, per table and over
    every table (last column), the smallest ratio of the reported categories — NaN in a draw where one of them has no
    individual."""
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = np.where(n > 0, picked / np.where(n > 0, n, 1.0), np.nan)
    ratio = np.full_like(rate, np.nan)
    lows = np.full((len(rate), len(tables) + 1), np.nan)
    offset, judged = 0, []
    for t, table in enumerate(tables):
        cols = offset + np.flatnonzero(table.reported)
        offset += table.size
        if cols.size == 0:
            continue
        judged.append(t)
        block = rate[:, cols]
        highest = np.max(np.where(np.isfinite(block), block, -np.inf), axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            ratio[:, cols] = np.where(highest[:, None] > 0, block / highest[:, None], np.nan)
        lows[:, t] = np.min(ratio[:, cols], axis=1)  # NaN when a reported category is missing from the draw
    if judged:  # tables without a reported category have no ratio to judge
        lows[:, -1] = np.min(lows[:, judged], axis=1)
    return rate, ratio, lows


def _percentiles(draws: np.ndarray, points: list[float]) -> tuple[float, float]:
    finite = draws[np.isfinite(draws)]
    if finite.size < max(len(draws) // 2, 1):
        return (math.nan, math.nan)
    low, high = np.quantile(finite, points)
    return (float(low), float(high))
