"""Evidence `selection_rates`: does the ranker score some categories of people above the median less often than
others — NYC Local Law 144's bias audit of an automated employment decision tool that scores (6 RCNY §5-301(c)).

Per category column (sex, race/ethnicity: columns the data keeps beside the features, `dataset.attribute_columns`,
never the model's) and their intersection: each category's number of individuals, its scoring rate (the share of its
individuals scoring above the median score of the whole sample; or, with `cutoff: top_k`, the share among the first k
of their query) and its impact ratio (its rate ÷ the highest category's rate), laid out as the published summary of
results asks (6 RCNY §5-303). Individuals of unknown category are counted and left out; categories under `min_share`
(2%) of the individuals with a known category are excluded from the ratios with the reason stated, their number and
rate still shown. Intervals: a bootstrap over queries (or individuals) recomputing the median, the rates, the highest
rate and the ratios in every draw (`auditor/checks/selection.py`). The four-fifths rule (0.8) is given as an
informative comparison only: LL144 sets no threshold. One model call: the scores every item shares.

Measured only: metrics, a record per category column (its EEO-1 component), per category and per table's unknown
count, and the detection; `present.py` lays them out as the published summary.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from auditor.checks.selection import (
    Intervals,
    Rates,
    Table,
    bootstrap,
    eeo1_component,
    published_category,
    rates,
    selected,
)
from auditor.core.errors import InputError
from auditor.core.feature_names import metric_name
from auditor.core.metric_names import spelled
from auditor.core.numbers import figure, percent, stored, with_interval
from auditor.evidence.base import AuditContext, EvidenceResult
from auditor.evidence.kinds.selection_rates.options import FOUR_FIFTHS, INTERSECTION, SelectionRatesOptions
from auditor.inputs.data import RankingData

# Categories over every table. LL144's tables hold about 25 (2-3 sexes, 7 races/ethnicities, their intersections); a
# column of thousands of values is an id named by mistake, and 20,000 of them took 16 GB and a minute.
MAX_CATEGORIES = 1_000
# `selection.<word>` names the kind's own figures: a column whose metric segment is one of them would put its
# categories' metrics beside (or over) them (`selection.unknown.<column>` is also a column "unknown"'s table).
RESERVED = ("individuals", "queries", "columns", "intersections", "reported", "excluded", "unknown_reported",
            "below_four_fifths", "min_ratio", "unknown", "eeo1_components", "non_eeo1", "median_score")
CITATION = ("NYC Local Law 144 of 2021 (Admin. Code §20-871); 6 RCNY §5-301(c) — scoring rates and impact ratios of "
            "sex, race/ethnicity and intersectional categories")


@dataclass(frozen=True)
class _Breakdown:
    """One table of the summary: a column (or the columns' intersection), its categories and who is unknown."""

    key: str  # metric segment: `sex`, `sex_x_race_ethnicity`
    label: str  # as the report writes it: `sex`, `sex × race_ethnicity`
    values: list[str]  # category labels, sorted, distinct (a label two categories would share gets ` [2]`)
    names: list[str]  # their metric segments
    codes: np.ndarray  # each individual's category index, -1 unknown
    unknown: int
    columns: int = 1  # columns this table breaks down by: 1, or more for the intersection


def categories_of(options: SelectionRatesOptions, data: RankingData) -> list[str]:
    """The category columns: `categories`, or every attribute column of the data."""
    return list(options.categories) if options.categories is not None else list(data.attributes)


def check(options: SelectionRatesOptions, data: RankingData) -> None:
    """The category columns are columns the data keeps beside the features (bad input before any evidence runs)."""
    import difflib

    columns = categories_of(options, data)
    if not columns:
        raise InputError("the data keeps no category column beside its features", where="categories",
                         fix="list the columns of sex and race/ethnicity under `dataset.attribute_columns` (e.g. "
                             "[sex, race_ethnicity]); they are read as text and never given to the model")
    for index, column in enumerate(columns):
        if column in columns[:index]:
            raise InputError(f"'{column}' is listed twice", where=f"categories.{index}", fix="list each column once")
        if column not in data.attributes:
            near = difflib.get_close_matches(column, list(data.attributes), n=1)
            fix = (f"did you mean '{near[0]}'?" if near else
                   f"add '{column}' to `dataset.attribute_columns`, so it is read as text beside the data")
            raise InputError(f"'{column}' is not an attribute column of the data", where=f"categories.{index}",
                             fix=fix)
    for column in options.labels:
        if column not in columns:
            raise InputError(f"`labels` maps the values of '{column}', which is not a category column",
                             where=f"labels.{column}", fix=f"map the values of one of {', '.join(columns)}")
    _check_names(columns)
    _check_sizes(columns, data, options)


def _check_names(columns: list[str]) -> None:
    """Each table's metric segment is its own: two columns spelled alike (`race ethnicity`, `race-ethnicity`) would
    write their categories' metrics over each other, and a segment of the kind's own figures would sit among them."""
    seen: dict[str, str] = {}
    for index, column in enumerate(columns):
        segment = metric_name(column)
        if segment in RESERVED:
            raise InputError(f"'{column}' would name its metrics like the kind's own figure selection.{segment}",
                             where=f"categories.{index}", fix="rename the column in the data (e.g. 'group')")
        if segment in seen:
            raise InputError(f"'{column}' and '{seen[segment]}' would share the metric name selection.{segment}",
                             where=f"categories.{index}", fix="rename one of the two columns in the data")
        seen[segment] = column


def _check_sizes(columns: list[str], data: RankingData, options: SelectionRatesOptions) -> None:
    """At most MAX_CATEGORIES categories over every table, before the scores and the bootstrap (whose arrays grow
    with them) are computed."""
    tables = [(f"'{column}'", len({k for k in _keys([column], data, options) if k is not None}))
              for column in columns]
    if options.intersections and len(columns) > 1:
        tables.append(("their intersection", len({k for k in _keys(columns, data, options) if k is not None})))
    total = sum(n for _, n in tables)
    if total > MAX_CATEGORIES:
        name, most = max(tables, key=lambda table: table[1])
        raise InputError(f"{total:,} categories to report ({name}: {most:,}), more than {MAX_CATEGORIES:,}",
                         where="categories",
                         fix="set `intersections: false`, or name fewer columns" if name == "their intersection"
                         else "name the columns of sex and race/ethnicity, not an id or a score")


def run(ctx: AuditContext, options: SelectionRatesOptions) -> EvidenceResult:
    data = ctx.data
    result = EvidenceResult(name="selection_rates")
    check(options, data)
    columns = categories_of(options, data)
    scores = ctx.scores()
    chosen = selected(scores, data.query_ptr, cutoff=options.cutoff, k=options.k)
    breakdowns = [_breakdown([column], data, options) for column in columns]
    if options.intersections and len(columns) > 1:
        breakdowns.append(_breakdown(columns, data, options))
    tables = [Table(codes=b.codes, reported=_reported(b, options.min_share)) for b in breakdowns]
    full = [rates(table, chosen) for table in tables]
    units = (np.repeat(np.arange(data.n_queries), data.query_sizes()) if options.resample_unit == "query"
             else np.arange(data.n_docs))
    spread = bootstrap(scores, chosen, tables, units, ctx.rng("selection_rates"), cutoff=options.cutoff,
                       n_resamples=options.resamples)
    _metrics(result, breakdowns, tables, full, spread, data)
    result.metrics["selection.intersections"] = float(any(b.columns > 1 for b in breakdowns))
    if options.cutoff == "median":
        result.metrics["selection.median_score"] = float(np.median(scores))
    _components(result, breakdowns)
    _records(result, breakdowns, tables, full, spread)
    _detect(result, breakdowns, tables, full, spread, options)
    return result


def _normal(value: str | None) -> str | None:
    return None if value is None else value.strip().casefold()


def _shown(value: str | None) -> str:
    """A category value as a table row names it: an empty cell not counted as unknown reads "(empty)"."""
    return "missing" if value is None else value if value.strip() else "(empty)"


Key = tuple[str | None, ...]


def _keys(columns: list[str], data: RankingData, options: SelectionRatesOptions) -> list[Key | None]:
    """Each individual's category: the tuple of its values in `columns` (None when one of them is unknown). A
    category is its values, never its label: `F × A` with `B` and `F` with `A × B` read alike joined, and a missing
    cell reads like the value "missing". Cells of spaces alone are one category, "(empty)"."""
    unknown = {_normal(v) for v in options.unknown_values}
    tables = [{_normal(value): label for value, label in options.labels.get(c, {}).items()} for c in columns]
    out: list[Key | None] = []
    for cells in zip(*(data.attributes[c] for c in columns), strict=True):
        row = tuple(table.get(_normal(v), v) if table and v is not None else v
                    for table, v in zip(tables, cells, strict=True))
        if any(_normal(v) in unknown for v in row):
            out.append(None)
        else:
            out.append(tuple(v if v is None or v.strip() else "" for v in row))
    return out


def _breakdown(columns: list[str], data: RankingData, options: SelectionRatesOptions) -> _Breakdown:
    keys = _keys(columns, data, options)

    def label(key: Key) -> str:
        return " × ".join(_shown(v) for v in key)

    found = sorted({k for k in keys if k is not None}, key=lambda k: (label(k), [(v is None, v or "") for v in k]))
    index = {key: i for i, key in enumerate(found)}
    codes = np.array([index[k] if k is not None else -1 for k in keys], dtype=np.int64)
    values: list[str] = []
    shown_as: set[str] = set()
    for key in found:  # a label two categories would share names the later one apart
        text, n = label(key), 2
        while text in shown_as:
            text, n = f"{label(key)} [{n}]", n + 1
        shown_as.add(text)
        values.append(text)
    names: list[str] = []
    taken: set[str] = set()
    last: dict[str, int] = {}
    for key in found:  # metric segments, made distinct where two values read alike (`a b` and `a-b`)
        stem = INTERSECTION.join(metric_name(_shown(v)) for v in key)
        name, n = stem, last.get(stem, 2)
        while name in taken:
            name, n = f"{stem}_{n}", n + 1
        last[stem] = n
        taken.add(name)
        names.append(name)
    return _Breakdown(key=INTERSECTION.join(metric_name(c) for c in columns), label=" × ".join(columns),
                      values=values, names=names, codes=codes, unknown=sum(k is None for k in keys),
                      columns=len(columns))


def _components(result: EvidenceResult, breakdowns: list[_Breakdown]) -> None:
    """Which EEO-1 component each category column is (6 RCNY §5-300 makes them LL144's categories), and the values
    that are no EEO-1 category: a record per column and two metrics (the section names the values and the fix)."""
    found, outside = set(), []
    for b in breakdowns:
        if b.columns == 1:
            component, rest = eeo1_component(b.values)
            result.records.append({"kind": "component", "table": b.label, "component": component, "outside": rest})
            found |= {component} - {None}
            outside += [(b.label, value) for value in rest]
    result.metrics["selection.eeo1_components"] = float(len(found))
    result.metrics["selection.non_eeo1"] = float(len(outside))


def outside_eeo1(options: SelectionRatesOptions, data: RankingData) -> list[str]:
    """The category values (after `labels`) that are no EEO-1 component 1 category, as "value (column)": what the
    LL144 summary refuses before any evidence runs."""
    out = []
    for column in categories_of(options, data):
        _, rest = eeo1_component(_breakdown([column], data, options).values)
        out += [f"{value} ({column})" for value in rest]
    return out


def _reported(breakdown: _Breakdown, min_share: float) -> np.ndarray:
    """Categories with an impact ratio: those with at least `min_share` of the individuals of known category."""
    n = np.bincount(breakdown.codes[breakdown.codes >= 0], minlength=len(breakdown.values)).astype(np.float64)
    total = n.sum()
    return (n > 0) & (n >= min_share * total) if total > 0 else np.zeros(len(n), dtype=bool)


def _metrics(result: EvidenceResult, breakdowns: list[_Breakdown], tables: list[Table], full: list[Rates],
             spread: Intervals, data: RankingData) -> None:
    metrics = result.metrics
    smallest: list[tuple[float, float, float]] = []  # each table's smallest ratio with its category's interval
    for b, table, figures, rate_ci, ratio_ci in zip(breakdowns, tables, full, spread.rate, spread.ratio, strict=True):
        for j, name in enumerate(b.names):
            key = f"selection.{b.key}.{name}"
            metrics[f"{key}.n"] = float(figures.n[j])
            metrics.update(spelled(f"{key}.rate", figures.rate[j], *rate_ci[j]))
            if table.reported[j] and math.isfinite(figures.ratio[j]):
                metrics.update(spelled(f"{key}.ratio", figures.ratio[j], *ratio_ci[j]))
        reported = [int(i) for i in np.flatnonzero(table.reported) if math.isfinite(figures.ratio[i])]
        if reported:  # the smallest ratio is one category's: its interval is that category's own
            least = min(reported, key=lambda i: figures.ratio[i])
            smallest.append((float(figures.ratio[least]), float(ratio_ci[least][0]), float(ratio_ci[least][1])))
            metrics.update(spelled(f"selection.{b.key}.min_ratio", *smallest[-1]))
        metrics[f"selection.unknown.{b.key}"] = float(b.unknown)
    if smallest:
        metrics.update(spelled("selection.min_ratio", *min(smallest)))
    ratios = [f.ratio[j] for f, t in zip(full, tables, strict=True) for j in np.flatnonzero(t.reported)
              if math.isfinite(f.ratio[j])]
    metrics["selection.reported"] = float(len(ratios))
    metrics["selection.below_four_fifths"] = float(sum(r < FOUR_FIFTHS for r in ratios))
    metrics["selection.excluded"] = float(sum(int((~t.reported & (f.n > 0)).sum()) for t, f in zip(tables, full,
                                                                                                  strict=True)))
    metrics["selection.individuals"] = float(data.n_docs)
    metrics["selection.queries"] = float(data.n_queries)
    metrics["selection.columns"] = float(sum(b.columns == 1 for b in breakdowns))  # not by the key's spelling
    metrics["selection.unknown_reported"] = 1.0  # every table states its unknown count (6 RCNY §5-301(c))


def _records(result: EvidenceResult, breakdowns: list[_Breakdown], tables: list[Table], full: list[Rates],
             spread: Intervals) -> None:
    """A record per category (its counts, rate, impact ratio and interval, whether it was excluded) and one per
    table for its unknown count: what the LL144 summary and the section lay out, in the tables' order."""
    for b, table, figures, ratio_ci in zip(breakdowns, tables, full, spread.ratio, strict=True):
        known = int(figures.n.sum())
        for j, value in enumerate(b.values):
            result.records.append({
                "kind": "category", "table": b.label, "category": value, "metric": f"selection.{b.key}.{b.names[j]}",
                "individuals": int(figures.n[j]),
                "selected": int(figures.selected[j]), "rate": stored(figures.rate[j]),
                "impact_ratio": stored(figures.ratio[j]) if table.reported[j] else None,
                "ci95_low": stored(ratio_ci[j][0]) if table.reported[j] else None,
                "ci95_high": stored(ratio_ci[j][1]) if table.reported[j] else None,
                "share": stored(figures.n[j] / known) if known else None, "excluded": not bool(table.reported[j])})
        result.records.append({"kind": "unknown", "table": b.label, "individuals": b.unknown})


def _detect(result: EvidenceResult, breakdowns: list[_Breakdown], tables: list[Table], full: list[Rates],
            spread: Intervals, options: SelectionRatesOptions) -> None:
    """One detection when the smallest impact ratio lies below `warn_below` over its whole interval, naming the
    category that has it and every other reported category whose own interval lies below."""
    metrics = result.metrics
    value, high = metrics.get("selection.min_ratio"), metrics.get("selection.min_ratio.ci95_high")
    if value is None or high is None or not math.isfinite(high) or max(high, value) >= options.warn_below:
        return
    low = min(metrics["selection.min_ratio.ci95_low"], value)
    found = [(b, j, f.ratio[j], ci[j]) for b, t, f, ci in zip(breakdowns, tables, full, spread.ratio, strict=True)
             for j in np.flatnonzero(t.reported) if math.isfinite(f.ratio[j])]
    b, j, _, _ = min(found, key=lambda item: item[2])
    below = [(o, i, r, ci) for o, i, r, ci in found
             if (o, i) != (b, j) and math.isfinite(ci[1]) and max(ci[1], r) < options.warn_below]
    components = {str(r["table"]): r.get("component") for r in result.records if r.get("kind") == "component"}

    def shown(o: _Breakdown, i: Any) -> str:  # as the published summary and the section name it
        return published_category(o.label, str(o.values[i]), components)

    others = [f"{shown(o, i)} ({o.label}) {with_interval(r, min(ci[0], r), max(ci[1], r))}" for o, i, r, ci in below]
    named = [f"{shown(b, j)} ({b.label})", *(f"{shown(o, i)} ({o.label})" for o, i, _, _ in
                                             sorted(below, key=lambda item: item[2]))]
    # page 2 names every category whose ratio lies below the level over its whole interval (issue 56), not the
    # smallest alone
    who = named[0] if len(named) == 1 else \
        (", ".join(named[:3]) + (f" and {len(named) - 3} more categories" if len(named) > 3 else "")
         if len(named) > 3 else ", ".join(named[:-1]) + " and " + named[-1])
    verb = "scores" if len(named) == 1 else "score"
    # the categories the data cannot place: their interval crosses the level (a reader review: never called so)
    crossing = [f"{shown(o, i)} ({o.label}) {with_interval(r, min(ci[0], r), max(ci[1], r))}" for o, i, r, ci in found
                if math.isfinite(ci[0]) and math.isfinite(ci[1]) and min(ci[0], r) < options.warn_below
                <= max(ci[1], r)]
    criterion = (f", {'its' if len(named) == 1 else 'each with an'} impact ratio below {options.warn_below:g} over "
                 "its whole 95% interval")
    result.detect(
        "impact-ratio-below-level",
        f"{who} {verb} above the median less often than the highest scoring category{criterion}"
        if options.cutoff == "median" else
        f"{who} {'is' if len(named) == 1 else 'are'} among the first {options.k} less often than the most selected "
        f"category{criterion}",
        f"The smallest impact ratio, {shown(b, j)}'s ({b.label}, {percent(full[breakdowns.index(b)].rate[j])} of "
        f"{full[breakdowns.index(b)].n[j]:,.0f} individuals selected), is {with_interval(value, low, max(high, value))}"
        f": below {figure(options.warn_below)} over its whole interval"
        + (f"; also below it over their own interval: {'; '.join(others)}" if others else "")
        + (f"; inconclusive, as their interval crosses {options.warn_below:g}: {'; '.join(crossing)}"
           if crossing else "") + ".",
        severity="major", citation=CITATION, subject=f"{b.label} = {b.values[j]}", value=float(value),
        interval=(float(low), float(max(high, value))),
        judged_by=("selection.min_ratio", f"selection.{b.key}.min_ratio", f"selection.{b.key}.{b.names[j]}.ratio"))
