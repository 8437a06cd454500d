"""What the documents say from the `exposure` evidence as stored: its report section (the summary, the table of
exposure against merit by group with the fair-ranking measures in its note, the table under each attention model
and whether each conclusion holds under all three, the dot plot of shares, the queries with the largest
over-exposure and the possible proxies), the key figures it offers page 2. Reads the stored item alone: every
figure from its metrics (`<key>.<measure>` with its interval, `<key>.attention.<model>.<measure>`), the over-exposed
queries and proxies from its records, and from its facts what neither holds (each measured group value's label,
the value each group column details, the cascade's largest grade, the surrogate's counts); so a run renders again
with this module's wording (`auditor render`)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from auditor.core.feature_names import metric_name
from auditor.core.numbers import figure, interval, percent, points, positions, with_interval
from auditor.evidence.base import Figure, Section, Table
from auditor.evidence.document import EvidenceItem
from auditor.evidence.kinds.exposure.options import ATTENTION_MEASURES, ATTENTION_MODELS, ExposureOptions
from auditor.evidence.registry import KeyFigure

Result = EvidenceItem  # the kind's result as evidence.json holds it (metrics, records, ...)
Stat = tuple[float, float, float]  # value, 95% interval (NaN: none)
Stats = dict[str, Stat]  # a group value's figures by measure

HOW_TO_READ = (
    "Exposure share: the share of a query's attention (by position) a group's documents get; merit share: the share "
    "they would get in the order by relevance; ratio 1: what its relevance earns. Re-ranking with the group feature "
    "set alike for every document shows what the feature itself is worth. \"Under each attention model\" repeats "
    "the ratio and that change for three models of how far down users look: a conclusion that holds under all three "
    "does not hang on that choice. 95% intervals over queries."
)
MEASURES = ("exposure_share", "merit_share", "ratio", "disparate_treatment", "counterfactual.exposure_share",
            "counterfactual.share_change", "counterfactual.ratio", "counterfactual.rank_shift.mean",
            "counterfactual.rank_shift.max")  # a group value's figures, as `measure._value_stats` names them
NUMBER = {1: "one", 2: "two", 3: "three"}
SHOWN_QUERIES = 3  # over-exposed queries a note names (evidence.json keeps `top_queries`)
FEW_NAMED = 8  # rare group values the table's note names


class Value:
    """A measured group value as the section shows it: its column, its value as written, its label and its
    figures read back from the metrics (the section's, and under each attention model)."""

    def __init__(self, column: str, value: str, label: str, metrics: Mapping[str, float | None]) -> None:
        self.column, self.value, self.label = column, value, label
        self.key = f"exposure.{metric_name(column)}.{value}"
        self.stats = {m: s for m in MEASURES if (s := stat(metrics, f"{self.key}.{m}")) is not None}
        self.sens = {f"{model}.{m}": s for model in ATTENTION_MODELS for m in ATTENTION_MEASURES
                     if (s := stat(metrics, f"{self.key}.attention.{model}.{m}")) is not None}
        self.queries = int(metrics.get(f"{self.key}.queries") or 0)


def section(result: Result, options: ExposureOptions) -> Section:
    facts = result.facts or {}
    # evidence.json holds null for what is not finite: an infinite ratio is said as such (`numbers.figure`)
    metrics = {**result.metrics, **{name: math.inf * sign for name, sign in facts.get("infinite", {}).items()}}
    columns: list[dict[str, Any]] = list(facts.get("groups", []))
    values = [Value(c["column"], v["value"], v["label"], metrics) for c in columns for v in c["values"]]
    focus = [v for c in columns for v in values if v.column == c["column"] and v.value == c["focus"]]
    tables = [_group_table(metrics, options, values, focus)]
    sensitivity = _attention_table(values, options, facts)
    if sensitivity is not None:
        tables.append(sensitivity)
    figures = [_share_figure(values, options)] if values else []
    notes = [*_over_exposed(result, columns, focus), *_proxies(result, options, facts.get("surrogate"))]
    return Section(summary=_summary(values, focus, options), how_to_read=HOW_TO_READ, tables=tables,
                   figures=figures, notes=notes)


# --- reading the stored figures ------------------------------------------------------------------------------

def stat(metrics: Mapping[str, float | None], name: str) -> Stat | None:
    """A measure and its 95% interval as the metrics hold them (`metric_names.spelled`: the interval under the
    stem of a `.mean`); None when not measured, NaN for a missing value or interval."""
    if name not in metrics:
        return None
    stem = name.removesuffix(".mean")
    return (_number(metrics[name]), _number(metrics.get(f"{stem}.ci95_low")),
            _number(metrics.get(f"{stem}.ci95_high")))


def _number(value: Any) -> float:
    """A stored number, NaN where evidence.json holds null (not measured or not finite)."""
    return math.nan if value is None else float(value)


def with_interval_of(found: Stat, show: Callable[[float], str], *, words: bool = True) -> str:
    """A value and its 95% interval as every sentence of the report writes them (`numbers.with_interval`:
    `1.73 (95% interval 1.55 to 1.94)`, the interval widened to hold the value); in a table cell, whose column
    already says "95% interval", `1.73 (1.55 to 1.94)`. Shares' changes keep their percentage points."""
    value, low, high = found
    if not math.isfinite(low) or not math.isfinite(high):
        return show(value) if show is points else figure(value)
    low, high = min(low, value), max(high, value)
    if show is points:
        inner = f"{points(low)} to {points(high)}"
        return f"{points(value)} ({'95% interval ' if words else ''}{inner})"
    if words:
        return with_interval(value, low, high)
    return f"{figure(value)} ({interval(low, high)})"


def _cell(found: Stat | None, show: Callable[[float], str]) -> str:
    """A table cell: the value and its 95% interval (`1.73 (1.55 to 1.94)`, `+10.7 pp (+9.0 pp to +12.5 pp)`)."""
    return "n/a" if found is None else with_interval_of(found, show, words=False)


def model_text(options: ExposureOptions) -> str:
    """The spec's attention model in words."""
    if isinstance(options.attention, list):
        return f"custom weights for ranks 1–{len(options.attention)}"
    return {"log": "1/log2(1 + rank)", "geometric": f"geometric, patience {options.patience:g}",
            "cascade": f"cascade, patience {options.patience:g}"}[options.attention]


# --- the section's own figures -------------------------------------------------------------------------------

def _group_table(metrics: Mapping[str, float | None], options: ExposureOptions, values: list[Value],
                 focus: list[Value]) -> Table:
    cut = f"none beyond position {options.cutoff}" if options.cutoff else "the whole ranking"
    merit = ("its share of the attention in the ideal order by relevance" if options.merit == "ideal" else
             "its share of the total relevance")
    relevance = f"'{options.relevance}'" if options.relevance else "the labels"
    columns = ["group", "exposure share", "merit share", "ratio (95% interval)"]
    if options.counterfactual:
        columns += ["change from the feature (95% interval)", "positions worth (worst)"]
    few = [v.label for v in values if v.queries < options.min_queries]
    measures = _fair_ranking(metrics, options, focus)
    counts = ", ".join(f"{v.label}: {v.queries} queries" for v in values)
    return Table(
        title="Exposure against merit, by group",
        columns=columns, rows=[_group_row(v)[:len(columns)] for v in values],
        note=(f"{int(_number(metrics.get('exposure.queries')))} queries; attention {model_text(options)}, {cut}; "
              f"merit: {merit} ({relevance}); a group counts where it competes with others ({counts}). Change, "
              "positions: what setting the group feature alike for every document takes from the group."
              # the table shows every group; the headline ratios and the detections leave out the rare ones (a
              # reader review found 1.52 and 0.206 here beside a largest ratio of 1.40, with nothing said)
              + (f" Met in fewer than {options.min_queries} queries, and so left out of the largest and smallest "
                 f"ratios and of the detections: {', '.join(few[:FEW_NAMED])}"
                 f"{' and more' if len(few) > FEW_NAMED else ''}." if few else "")
              + (" Fair-ranking measures: " + "; ".join(measures) + "." if measures else "")))


def _group_row(value: Value) -> list[str]:
    s = value.stats
    row = [value.label, percent(s["exposure_share"][0]), percent(s["merit_share"][0]),
           with_interval_of(s["ratio"], figure, words=False)]
    if "counterfactual.exposure_share" in s:
        worth, worst = s["counterfactual.rank_shift.mean"][0], s["counterfactual.rank_shift.max"][0]
        row += [with_interval_of(s["counterfactual.share_change"], points, words=False),
                f"{positions(worth)} ({int(worst)})"]
    return row


def _fair_ranking(metrics: Mapping[str, float | None], options: ExposureOptions, focus: list[Value]) -> list[str]:
    """Per group column: the disparate treatment of the value it details, AWRF and group expected exposure."""
    out = []
    for column in options.groups():
        shown = next((v for v in focus if v.column == column), None)
        if shown is not None:
            out.append(f"disparate treatment of {shown.label} "
                       f"{with_interval_of(shown.stats['disparate_treatment'], figure)} "
                       "(Singh & Joachims 2018; 1 = exposure in proportion to relevance)")
        key = f"exposure.{metric_name(column)}"
        fair = stat(metrics, f"{key}.awrf.mean")
        parts = [stat(metrics, f"{key}.expected_exposure.{part}.mean") for part in ("loss", "disparity", "relevance")]
        if fair is None or parts[0] is None or parts[1] is None or parts[2] is None:
            continue
        out += [f"AWRF of {column} {with_interval_of(fair, figure)} (TREC Fair Ranking 2021–22; 1 = attention shared "
                "as merit, floor 0.307)",
                f"expected exposure of {column} groups: loss {with_interval_of(parts[0], figure)}, "
                f"disparity {figure(parts[1][0])}, "
                f"relevance {figure(parts[2][0])} (Diaz et al. 2020; loss 0 = exposure as merit)"]
    return out


def _share_figure(values: list[Value], options: ExposureOptions) -> Figure:
    shown = [v.label for v in values]
    merit_shares = [v.stats["merit_share"][0] for v in values]
    exposure_shares = [v.stats["exposure_share"][0] for v in values]
    intervals = [v.stats["exposure_share"][1:] for v in values]
    cf = [v.stats["counterfactual.exposure_share"][0] for v in values] if options.counterfactual else None
    few = [v.queries < options.min_queries for v in values]
    # each group's shares are its mean over the queries it is met in, so the rows do not add to 100% (a reader
    # review: the wide run's summed to 136%, and a group met in 3 queries was drawn like the others)
    left_out = (f" Grey: met in fewer than {options.min_queries} queries, and so left out of the largest and smallest "
                "ratios and of the detections." if any(few) else "")
    return Figure(
        title="Exposure against merit, by group",
        chart="share_dots", data={"labels": shown, "merit": merit_shares, "exposure": exposure_shares,
                                  "intervals": intervals, "counterfactual": cf,
                                  **({"few": few} if any(few) else {})},
        caption="Circle: the share a group's relevance earns; dot: the share it gets (band: 95% interval)"
                + ("; diamond: with the group feature set alike for every document." if cf is not None else ".")
                + " Each group's shares are over the queries it is met in, so they do not add to 100%." + left_out,
        description="Dot plot of exposure and merit shares per group: " + "; ".join(
            f"{label} gets {percent(e)} of the attention against a merit share of {percent(m)}"
            + (f", {percent(c)} with the group feature set alike" if cf is not None else "")
            for label, m, e, c in zip(shown, merit_shares, exposure_shares, cf or [math.nan] * len(shown),
                                      strict=True)) + ".")


def _over_exposed(result: Result, columns: list[dict[str, Any]], focus: list[Value]) -> list[str]:
    """Per group column, the queries with the largest over-exposure of the value it details: the first few named
    (their shares kept in full in the facts), all of them in the records."""
    notes = []
    for value in focus:
        column = next(c for c in columns if c["column"] == value.column)
        listed = [r for r in result.records if r.get("kind") == "over_exposed_query" and r.get("group") == value.column]
        if not listed:
            continue
        notes.append(f"Largest over-exposure of {value.label}: " + "; ".join(
            f"query {q['query']}, {percent(q['exposure_share'])} of the attention against a merit share of "
            f"{percent(q['merit_share'])}" for q in column["largest"][:SHOWN_QUERIES])
            + f" (the {len(listed)} largest in evidence.json).")
    return notes


def _summary(values: list[Value], focus: list[Value], options: ExposureOptions) -> str:
    over = [v for v in values if math.isfinite(v.stats["ratio"][1]) and v.stats["ratio"][1] > 1]
    uses = [v for v in values if "counterfactual.share_change" in v.stats
            and math.isfinite(change := v.stats["counterfactual.share_change"][1]) and change > 0]
    if over:
        parts = [f"{v.label} gets {percent(v.stats['exposure_share'][0])} of the attention against a merit share of "
                 f"{percent(v.stats['merit_share'][0])} (ratio {with_interval_of(v.stats['ratio'], figure)})"
                 for v in over]
        text = "Over-exposed beyond merit: " + "; ".join(parts) + "."
    else:
        text = "No group's exposure lies above its merit over the whole 95% interval."
    if uses:
        text += " The model's use of the group feature accounts for " + "; ".join(
            f"{points(v.stats['counterfactual.share_change'][0])} of {v.label}'s share" for v in uses) + "."
    elif options.counterfactual:
        text += " Setting the group feature alike for every document moves no group's share beyond sampling noise."
    sentences = [t for v in focus if v.sens
                 for t in (ratio_sentence(v.label, v.sens), change_sentence(v.column, v.label, v.sens))]
    said = " ".join(t for t in sentences if t)
    return f"{text} {said}".strip() if said else text


# --- under each attention model ------------------------------------------------------------------------------

def side(found: Stat, null: float) -> int:
    """+1: the whole 95% interval above `null`; −1: below; 0: it holds `null`. Without an interval, the value's
    side (0 at `null`)."""
    value, low, high = found
    if math.isfinite(low):
        return 1 if low > null else -1 if high < null else 0
    return 0 if value == null else (1 if value > null else -1)


def verdict(sens: Stats, measure: str, null: float) -> tuple[int | None, dict[str, int]]:
    """The side under each model that has `measure`, and the common side (None: the models disagree)."""
    sides = {m: side(sens[f"{m}.{measure}"], null) for m in ATTENTION_MODELS
             if f"{m}.{measure}" in sens and math.isfinite(sens[f"{m}.{measure}"][0])}
    common = set(sides.values())
    return (common.pop() if len(common) == 1 else None), sides


def _all(n: int) -> str:
    """"all three", "both", "the one": the models measured (a model is left out where it has under two queries)."""
    return {1: "the one", 2: "both"}.get(n, f"all {NUMBER.get(n, n)}")


def ratio_sentence(label: str, sens: Stats) -> str:
    """Whether the group value's over- or under-exposure holds under every attention model, from the intervals."""
    common, sides = verdict(sens, "ratio", 1.0)
    if not sides:
        return ""
    models_n = f"{_all(len(sides))} attention model{'s' if len(sides) > 1 else ''}"
    if common is None:
        # an interval that holds 1 fails to exclude it: "in line with merit" overstated it (reader review W8)
        words = {1: "above merit", 0: "not shown to differ from merit", -1: "below merit"}
        return (f"For {label} the conclusion depends on the attention model — ratio "
                + ", ".join(f"{figure(sens[f'{m}.ratio'][0])} ({m}, {words[s]})" for m, s in sides.items()) + ".")
    listed = ", ".join(f"{figure(sens[f'{m}.ratio'][0])} ({m})" for m in sides)
    stats = [sens[f"{m}.ratio"] for m in sides]
    if common == 0:
        return (f"The exposure of {label} is not shown to differ from its merit under {models_n} (each 95% interval "
                f"holds 1) — "
                f"{listed}.")
    lows, highs = [s[1] for s in stats], [s[2] for s in stats]
    if common > 0:
        bound = (f"lowest 95% bound {figure(min(lows))}" if all(map(math.isfinite, lows)) else
                 f"smallest {figure(min(s[0] for s in stats))}")
        return f"The exposure ratio of {label} stays above 1 under {models_n} — {listed}; {bound}."
    bound = (f"highest 95% bound {figure(max(highs))}" if all(map(math.isfinite, highs)) else
             f"largest {figure(max(s[0] for s in stats))}")
    return f"The exposure ratio of {label} stays below 1 under {models_n} — {listed}; {bound}."


def change_sentence(column: str, label: str, sens: Stats) -> str:
    """Whether the share the group feature itself moves is above zero under every model."""
    common, sides = verdict(sens, "counterfactual.share_change", 0.0)
    if not sides:
        return ""
    listed = ", ".join(f"{points(sens[f'{m}.counterfactual.share_change'][0])} ({m})" for m in sides)
    what = f"the share of attention {column} itself gives {label}"
    if common is None:
        words = {1: "above zero", 0: "within noise of zero", -1: "below zero"}
        return (f"Whether {column} itself moves the share of {label} depends on the attention model — "
                + ", ".join(f"{points(sens[f'{m}.counterfactual.share_change'][0])} ({m}, {words[s]})"
                            for m, s in sides.items()) + ".")
    where = {1: "above zero", 0: "within sampling noise of zero", -1: "below zero"}[common]
    plural = "s" if len(sides) > 1 else ""
    return f"{what[0].upper()}{what[1:]} is {where} under {_all(len(sides))} model{plural} — {listed}."


def _attention_table(values: list[Value], options: ExposureOptions, facts: Mapping[str, Any]) -> Table | None:
    """The table "Under each attention model": every measured group value's ratio and share change under each
    model, and whether the conclusion holds under all three; None when no value has a figure under any."""
    measured = [v for v in values if v.sens]
    if not measured:
        return None
    rows = []
    ratio_words = {1: "above 1 under", 0: "holds 1 under", -1: "below 1 under"}
    change_words = {1: "above 0 under", 0: "holds 0 under", -1: "below 0 under"}
    for v in measured:
        s = v.sens
        common, sides = verdict(s, "ratio", 1.0)
        rows.append([v.label, "exposure ÷ merit share"]
                    + [_cell(s.get(f"{m}.ratio"), figure) for m in ATTENTION_MODELS]
                    + [_conclusion(common, sides, ratio_words)])
        if any(f"{m}.counterfactual.share_change" in s for m in ATTENTION_MODELS):
            common, sides = verdict(s, "counterfactual.share_change", 0.0)
            rows.append([v.label, "change from the feature"]
                        + [_cell(s.get(f"{m}.counterfactual.share_change"), points) for m in ATTENTION_MODELS]
                        + [_conclusion(common, sides, change_words)])
    cut = f"zero beyond position {options.cutoff}" if options.cutoff else "over the whole ranking"
    main, main_text = facts.get("main"), model_text(options)
    own = (f"the section's other figures use {main_text}, the {main} column" if main else
           f"the section's other figures use {main_text}, none of the three")
    return Table(
        title="Under each attention model",
        columns=["group", "measure", "log", "geometric", "cascade", "conclusion"],
        rows=rows,
        note=("Attention of position i, " + cut + " under all three: log 1/log₂(1 + i), the DCG discount "
              "(Järvelin & Kekäläinen 2002; Singh & Joachims 2018); geometric 0.8^(i − 1), rank-biased precision's "
              "patient user (Moffat & Zobel 2008, p = 0.8); cascade Π_{j<i} (1 − φ(r_j)) with φ(r) = (2^r − 1) / "
              f"2^{float(facts['max_grade']):g}, the stop probability of expected reciprocal rank (Chapelle et al. "
              "2009) in the cascade model (Craswell et al. 2008): users read down until a document satisfies them. "
              f"Merit share: the share of the same model's attention in the ideal order; {own}. 95% intervals over "
              "queries; conclusion: where every model's interval lies (above or below the line, or holding it), "
              "else \"depends on the model\"."))


def _conclusion(common: int | None, sides: dict[str, int], words: dict[int, str]) -> str:
    if not sides:
        return "n/a"
    if common is None:
        return "depends on the model"
    return f"{words[common]} {_all(len(sides))}"


# --- possible proxies, from the surrogate --------------------------------------------------------------------

def _proxies(result: Result, options: ExposureOptions, surrogate: Mapping[str, Any] | None) -> list[str]:
    """Per group column, the surrogate's feature pairs that hold it (the records `kind: possible_proxy`), or that
    none does; nothing when the surrogate was not passed in."""
    if surrogate is None:
        return []
    tau, pairs = surrogate["fidelity"], int(surrogate["pairs"])
    total, effects = float(surrogate["importance"]), int(surrogate["effects"])
    fidelity = (f" (ILMART; it ranks like the model with mean Kendall tau {figure(tau)})" if tau is not None else
                " (ILMART)")
    notes = []
    for column in options.groups():
        found = [r for r in result.records if r.get("kind") == "possible_proxy" and r.get("group") == column]
        if not found:
            notes.append(f"Possible proxies of {column}: none in the interpretable surrogate{fidelity}, none of "
                         f"whose {pairs} feature pair{'s' if pairs != 1 else ''} holds {column}.")
            continue
        parts = [f"{column} interacts with {r['feature']} (pair effect ranked {r.get('rank')} of {effects} effects, "
                 f"{percent(float(r.get('importance') or 0.0) / total)} of their importance)" for r in found]
        notes.append(f"Possible proxies of {column}, from the interpretable surrogate{fidelity}: " + "; ".join(parts)
                     + ". The group's treatment may also run through "
                     + ("that feature." if len(found) == 1 else "those features."))
    return notes


def key_figures(result: Result) -> list[KeyFigure]:
    """The own products' ratio, naming which documents are the own products (issue 56: page 2 said "own products"
    without saying how the audit told them apart), with the attention the own-product flag itself gives them as the
    same fact's other figure (page 2 shows the one a rule judges: a reader review found 1.73 shown while P2B-11
    judged +10.7 pp); else the largest ratio of a group, naming the group and the queries it was met in."""
    if result.metrics.get("exposure.own.ratio") is not None:
        own = (result.options or {}).get("own") or {}
        which = "; ".join(_label(result, column, value) for column, value in own.items())
        whose = f"own products: the documents with {which}; " if which else ""
        change = KeyFigure(50, "Own products' share of attention due to the own-product flag",
                           "exposure.own.counterfactual.share_change", whose + "0 = the flag moves none",
                           points=True, aside="share due to the flag")
        return [KeyFigure(50, "Own products' attention ÷ what their relevance earns", "exposure.own.ratio",
                          whose + "1 = attention in proportion to relevance",
                          also=(change,) if "exposure.own.counterfactual.share_change" in result.metrics else (),
                          aside="attention ÷ what relevance earns")]
    largest = extreme(result, "max")
    group = (f"the group: {largest['label']}, met in {largest['queries']} of {largest['of']} queries; "
             if largest else f"the group: {named}; " if (named := _largest_group(result)) else "")
    return [KeyFigure(50, "Largest exposure ratio of a group (attention ÷ what its relevance earns)",
                      "exposure.max.ratio", group + "1 = attention in proportion to relevance")]


def _label(result: Result, column: str, value: float) -> str:
    """A group value as the section labels it ("own_brand = yes"), else as the spec names it ("own_brand = 1")."""
    for group in (result.facts or {}).get("groups", []):
        for measured in group["values"] if group["column"] == column else []:
            try:
                if float(measured["value"]) == float(value):
                    return str(measured["label"])
            except ValueError:  # the missing values' group
                continue
    return f"{column} = {figure(value)}"


def extreme(result: Result, which: str) -> dict[str, Any] | None:
    """The group value holding the largest (`which` "max") or smallest ("min") ratio the packs judge, as the findings
    name it (a reader review: "the most favoured group gets 1.40 times …" named no group, and its interval ran from
    0): its label, the queries it was met in of those audited, how many groups were left out as met in fewer than
    `min_queries`, and whether its interval is unreliable (it reaches 0, or has no upper end). None when the stored
    result does not say (no such ratio, or written before its facts named the groups)."""
    metrics = result.metrics
    found = metrics.get(f"exposure.{which}.ratio")
    if found is None:
        return None
    least = int((result.options or {}).get("min_queries") or ExposureOptions.model_fields["min_queries"].default)
    holder, few = None, 0
    for column in (result.facts or {}).get("groups", []):
        for value in column["values"]:
            key = f"exposure.{metric_name(column['column'])}.{value['value']}"
            queries = int(metrics.get(f"{key}.queries") or 0)
            if queries < least:
                few += 1
            elif holder is None and metrics.get(f"{key}.ratio") == found:
                holder = {"label": str(value["label"]), "queries": queries}
    if holder is None:
        return None
    low, high = metrics.get(f"exposure.{which}.ratio.ci95_low"), metrics.get(f"exposure.{which}.ratio.ci95_high")
    unreliable = ("" if low is None else "its 95% interval reaches 0" if low <= 0 else
                  "its 95% interval has no upper end" if high is None or not math.isfinite(high) else "")
    return {**holder, "of": int(metrics.get("exposure.queries") or 0), "left_out": few, "min_queries": least,
            "unreliable": unreliable}


def _largest_group(result: Result) -> str:
    """Which group value has the largest ratio ("seller_tier = small"), or "" when the facts do not say."""
    largest = result.metrics.get("exposure.max.ratio")
    for column in (result.facts or {}).get("groups", []):
        for value in column["values"]:
            ratio = result.metrics.get(f"exposure.{metric_name(column['column'])}.{value['value']}.ratio")
            if largest is not None and ratio == largest:
                return str(value["label"])
    return ""
