"""What the documents say from the `selection_rates` evidence as stored: its report section (the summary, a table per
category column and their intersection laid out as LL144's published summary asks, the notes on categories that are
no EEO-1 category, on those excluded and on the four-fifths comparison), the key figures it offers page 2 and its
Limitations sentences. Reads the stored item alone (metrics, records), so a run renders again with this module's
wording (`auditor render`)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from auditor.checks.selection import published_category
from auditor.core.numbers import figure, interval, percent, with_interval
from auditor.core.words import counted
from auditor.evidence.base import Section, Table
from auditor.evidence.document import EvidenceItem
from auditor.evidence.kinds.selection_rates.options import FOUR_FIFTHS, SelectionRatesOptions
from auditor.evidence.registry import KeyFigure

Result = EvidenceItem  # the kind's result as evidence.json holds it (metrics, records, ...)
Metrics = Mapping[str, float | None]

HOW_TO_READ = (
    "Scoring rate: the share of a category's individuals (a candidate for one posting is one individual) the tool "
    "selects — above the median score of the whole sample, or among the first k of their posting. Impact ratio: a "
    "category's rate ÷ the highest category's rate (1 = as often as the most favoured category). Individuals of "
    "unknown category are counted but not included; categories under the minimum share of the data get no ratio. "
    "95% intervals by resampling, with the median recomputed in every draw. LL144 sets no threshold; the "
    "four-fifths rule (0.8) is a comparison, not a verdict."
)


@dataclass
class _Breakdown:
    """One table of the summary as the records hold it: a column (or the intersection), its categories' records
    and the number of individuals of unknown category."""

    label: str
    categories: list[dict[str, Any]] = field(default_factory=list)
    unknown: int = 0

    @property
    def known(self) -> int:
        return sum(int(c["individuals"]) for c in self.categories)


def section(result: Result, options: SelectionRatesOptions) -> Section:
    metrics = result.metrics
    breakdowns = _breakdowns(result.records)
    rate_name = "scoring rate" if options.cutoff == "median" else f"selection rate (top {options.k})"
    rule = (f"scoring above the sample's median score ({figure(metrics.get('selection.median_score'))})"
            if options.cutoff == "median" else f"ranked among the first {options.k} of their query")
    tables = [_table(b, metrics, options, rate_name, rule) for b in breakdowns]
    notes = _components_note(result.records)
    excluded = [f"{b.label}: " + ", ".join(
        f"{c['shown']} ({int(c['individuals']):,.0f} individuals, {percent(int(c['individuals']) / b.known)} of "
        f"those of known {b.label}; {rate_name} {percent(metrics.get(c['metric'] + '.rate'))})"
        for c in b.categories if c["excluded"] and c["individuals"] > 0)
        for b in breakdowns if any(c["excluded"] and c["individuals"] > 0 for c in b.categories)]
    if excluded:
        notes.append(
            f"Excluded from the impact ratios as under {percent(options.min_share)} of the individuals of known "
            "category (6 RCNY §5-301 lets the independent auditor exclude a category under 2% of the data, stating "
            "why; such a category is too small for its ratio to be estimated): " + "; ".join(excluded) + ".")
    ratios = _ratios(breakdowns, metrics)
    below = [(b.label, c["shown"], ratio, metrics.get(f"{c['metric']}.ratio.ci95_high")) for b, c, ratio in ratios
             if ratio < FOUR_FIFTHS]
    surely = [item for item in below if item[3] is not None and max(item[3], item[2]) < FOUR_FIFTHS]
    notes.append(
        "For comparison only (LL144 sets no threshold): under the four-fifths rule of thumb (29 CFR §1607.4(D)), "
        + (f"{len(below)} categor{'y has' if len(below) == 1 else 'ies have'} an impact ratio below 0.8: "
           + "; ".join(f"{value} ({label}) {figure(r)}" for label, value, r, _ in below) + "."
           + (f" Of {'it' if len(below) == 1 else 'them'}, {len(surely)} lie{'s' if len(surely) == 1 else ''} below "
              "0.8 over the whole 95% interval (those the finding names); "
              + ("the other's interval reaches 0.8, so its" if len(below) - len(surely) == 1 else
                 "the others' intervals reach 0.8, so their") + " shortfall is not certain."
              if len(surely) < len(below) else "")
           if below else "no reported category has an impact ratio below 0.8."))
    if options.cutoff == "top_k":
        notes.append(f"Selected = among the first {options.k} of a query: a ranked list's first page, not "
                     "LL144's median split of the whole sample (`cutoff: median`).")
    return Section(summary=_summary(metrics, ratios, rule), how_to_read=HOW_TO_READ, tables=tables, notes=notes)


def _breakdowns(records: list[dict[str, Any]]) -> list[_Breakdown]:
    """The tables in the order measured: each table's category records, closed by its unknown count; each category
    with the name the published summary gives it (`shown`: a race with "(Not Hispanic or Latino)")."""
    components = {str(r["table"]): r.get("component") for r in records if r.get("kind") == "component"}
    out: list[_Breakdown] = []
    open_: list[dict[str, Any]] = []
    for record in records:
        if record.get("kind") == "category":
            open_.append({**record, "shown": published_category(str(record["table"]), str(record["category"]),
                                                                components)})
        elif record.get("kind") == "unknown":
            out.append(_Breakdown(str(record["table"]), open_, int(record["individuals"])))
            open_ = []
    return out


def _table(b: _Breakdown, metrics: Metrics, options: SelectionRatesOptions, rate_name: str, rule: str) -> Table:
    rows: list[list[Any]] = []
    for c in b.categories:
        ratio, band = (("excluded (under " + percent(options.min_share) + ")", "—") if c["excluded"] else
                       _ratio_cells(metrics, str(c["metric"])))
        rows.append([c["shown"], int(c["individuals"]), percent(metrics.get(c["metric"] + ".rate")), ratio, band])
    rows.append(["unknown (not included)", b.unknown, "—", "—", "—"])
    return Table(
        title=f"{rate_name.capitalize()} and impact ratio by {b.label}",
        columns=[b.label, "number of individuals", rate_name, "impact ratio", "95% interval"],
        rows=rows, body_rows=len(rows),
        note=(f"{b.known:,} individuals of known {b.label}, {b.unknown:,} of unknown {b.label} (not included); "
              f"selected: {rule}. Impact ratio: the category's {rate_name} ÷ the highest reported category's."))


def _ratio_cells(metrics: Metrics, metric: str) -> tuple[str, str]:
    """A reported category's impact ratio and its interval, widened to hold it; dashes where it has none."""
    ratio, low, high = (metrics.get(f"{metric}.ratio{end}") for end in ("", ".ci95_low", ".ci95_high"))
    if ratio is None or not math.isfinite(ratio):
        return "—", "—"
    if low is None or high is None:
        return figure(ratio), "—"
    return figure(ratio), interval(min(low, ratio), max(high, ratio))


def _ratios(breakdowns: list[_Breakdown], metrics: Metrics) -> list[tuple[_Breakdown, dict[str, Any], float]]:
    """Every reported category that has an impact ratio, with it (full precision: the metric's), in table order."""
    out = []
    for b in breakdowns:
        for c in b.categories:
            ratio = metrics.get(f"{c['metric']}.ratio")
            if not c["excluded"] and ratio is not None and math.isfinite(ratio):
                out.append((b, c, float(ratio)))
    return out


def _summary(metrics: Metrics, ratios: list[tuple[_Breakdown, dict[str, Any], float]], rule: str) -> str:
    if "selection.min_ratio" not in metrics or not ratios:
        return ("No category could be given an impact ratio (no category is large enough, or none is ever "
                "selected).")
    b, lowest, _ = min(ratios, key=lambda item: item[2])
    shown = with_interval(metrics["selection.min_ratio"], metrics.get("selection.min_ratio.ci95_low"),
                          metrics.get("selection.min_ratio.ci95_high"))
    return (f"The smallest impact ratio is {lowest['shown']}'s ({b.label}): {shown}, over "
            f"{int(metrics.get('selection.individuals') or 0):,} individuals in "
            f"{int(metrics.get('selection.queries') or 0):,} queries, selected when {rule}.")


def _components_note(records: list[dict[str, Any]]) -> list[str]:
    """The category values that are no EEO-1 component 1 category, named with the declared table that maps them."""
    outside = [(str(r["table"]), str(value)) for r in records if r.get("kind") == "component"
               for value in r.get("outside") or []]
    if not outside:
        return []
    column, value = outside[0]
    return ["Not EEO-1 component 1 categories (6 RCNY §5-300 makes those LL144's categories): "
            + "; ".join(f"{value} ({column})" for column, value in outside)
            + f". Map each to the category it stands for, or to unknown, with `selection_rates.labels` (e.g. "
            f"labels: {{{column}: {{{value}: ...}}}})."]


def key_figures(result: Result) -> list[KeyFigure]:
    if result.metrics.get("selection.min_ratio") is None:
        return []
    ratios = [r for r in result.records if isinstance(r, dict) and not r.get("excluded")
              and isinstance(r.get("impact_ratio"), (int, float))]
    lowest = min(ratios, key=lambda r: r["impact_ratio"]) if ratios else None
    components = {str(r["table"]): r.get("component") for r in result.records if r.get("kind") == "component"}
    who = (f"the category: {published_category(str(lowest.get('table', '')), str(lowest['category']), components)} "
           f"({lowest.get('table', '')}); " if lowest is not None else "")
    # the category in the reference text, not the label: the history site follows a figure by its label
    return [KeyFigure(45, "Smallest impact ratio of a category (its scoring rate ÷ the highest category's)",
                      "selection.min_ratio", f"{who}1 = selected as often as the most favoured category; NYC LL144 "
                      "sets no level, 0.8 is the four-fifths rule of thumb")]


def limitations(metrics: Mapping[str, float], dataset: Mapping[str, float]) -> list[str]:
    if "selection.individuals" not in metrics:
        return []
    out = ["Scoring rates count each document of a query as an individual: the data name no person, so a person who "
           "applied to several postings would count once for each (the data's own description says whether anyone "
           "did), and the categories are those the data records (self-reported or inferred as its source says)."]
    excluded = int(metrics.get("selection.excluded", 0))
    if excluded:
        out.append(f"{counted(excluded, 'category')} under the minimum share of the data "
                   f"{'has' if excluded == 1 else 'have'} no impact ratio (the section names "
                   f"{'it' if excluded == 1 else 'them'}).")
    return out
