"""What the documents say from the `local_explanations` evidence as stored: its report section (the notes on the
sizes and explainers, the table of validity and completeness in the layout of Singh et al. 2020 Table 2, the effect
of k, the validity per query, the features the best explainer names, the listwise explainers against exact Shapley
values and the representative query's listwise attributions), the key figures it offers page 2 and its Limitations
sentences. Reads the stored item alone (metrics, records' neighbours in `facts`), so a run renders again with this
module's wording (`auditor render`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from auditor.core.numbers import figure, held, interval, percent, signed, stored
from auditor.evidence.base import Figure, Section, Table, representative_text, size_notes
from auditor.evidence.document import EvidenceItem
from auditor.evidence.kinds.local_explanations.options import LocalExplanationsOptions
from auditor.evidence.kinds.local_explanations.tallies import used_explainers
from auditor.evidence.registry import KeyFigure
from auditor.explain import registry

OPTIMUM_LABEL = "Exhaustive optimum"
TOP_FEATURES = 10  # features the table of the best explainer's sets lists
REFERENCE_METRICS = {"footrule@3": "footrule3", "footrule@10": "footrule10", "footrule@all": "footrule_all",
                     "l1": "l1"}


def label(method: str) -> str:
    """A method's report label (the exhaustive optimum is not a method one chooses)."""
    return OPTIMUM_LABEL if method == "optimum" else registry.label(method)


HOW_TO_READ = (
    "An explanation set is the handful of features an explainer says the ranking rests on. Validity asks: if the "
    "model saw only these features (the others replaced by their average), would it still rank the query's "
    "documents the same way? It is Kendall's tau between the two orders: 1 = the same order, 0 = unrelated. "
    "Completeness asks the reverse: with these features removed, how much of the order is lost (higher = more "
    "lost, so the set really carries the ranking). It is minus Kendall's tau between the model's order and the "
    "order without the set, so it is negative when the remaining features still rank the documents much as the "
    "model does: the ranking does not rest on the set alone (common when features are correlated or many share "
    "the work). Each figure is computed per query, then averaged. The "
    "exhaustive optimum is the best validity any set of the same size can reach, where it was affordable."
)


def section(result: EvidenceItem, options: LocalExplanationsOptions) -> Section:
    facts = result.facts or {}
    methods: list[str] = list(facts["methods"])
    sizes: list[int] = list(facts["sizes"])
    notes = _setup_notes(facts, methods) + _fit_notes(result.metrics, methods)
    tables = [_validity_table(result.metrics, facts, options, methods)]
    figures: list[Figure] = []
    if len(sizes) > 1:
        _k_curve(result.metrics, methods, sizes, tables, figures)
    rows_k = _rows_k(result.metrics, methods)
    if rows_k:
        validity = facts["validity"]
        figures.append(Figure(
            title=f"Validity per query, k = {options.k}",
            chart="box_plot", data={"groups": {label(m): validity[m] for m in rows_k},
                                    "ylabel": "validity (Kendall tau-b)"},
            caption="Each box spans the middle half of the queries; the line is the median. A long left whisker "
                    "means some queries' explanations do not reproduce their ranking.",
            description=f"Box plot of validity per query at k = {options.k}, medians: "
                        + ", ".join(f"{label(m)} {figure(np.median(validity[m]))}" for m in rows_k
                                    if validity[m]) + "."))
    summary = ""
    best = facts.get("best_sets")
    if best is not None:
        method = best["method"]
        tables.append(Table(
            title=f"Features most often in the {label(method)} explanation sets (k = {options.k})",
            columns=["feature", "queries", "share of queries"],
            rows=[[name, n, stored(n / best["sets"])] for name, n in best["features"]]))
        optimum = result.metrics.get("local.optimum.validity.mean")
        summary = (f"At k = {options.k}, {label(method)} gives the most valid explanations (mean validity "
                   f"{figure(result.metrics[f'local.{method}.validity.mean'])})"
                   + (f"; the best possible is {figure(optimum)}." if optimum else "."))
    notes += _convergence_notes(result.metrics, options, methods)
    _listwise(result.metrics, facts, options, notes, tables, figures)
    return Section(summary=summary, how_to_read=HOW_TO_READ, tables=tables, figures=figures, notes=notes)


def _setup_notes(facts: Mapping[str, Any], methods: list[str]) -> list[str]:
    """What the audit left out or narrowed before measuring: sizes beyond the data, explainers that need trees, the
    searches' candidates."""
    n_features = int(facts["n_features"])
    notes = []
    if facts.get("too_wide"):
        notes.append(f"The effect-of-k curve leaves out k = {', '.join(map(str, facts['too_wide']))}: the data has "
                     f"only {n_features} features.")
    notes += size_notes(list(facts["sizes"]), n_features)
    if facts.get("skipped"):
        notes.append(f"Not run on a '{facts['model_kind']}' model (needs trees): {', '.join(facts['skipped'])}.")
    narrowed = facts.get("narrowed")
    if narrowed:
        labels = ", ".join(f"{label(m)} {count}" for m, count in narrowed.items())
        notes.append(f"On these {n_features} features the searches tried, per query, only the features with the "
                     f"largest within-query TreeSHAP spread ({labels}; `greedy.candidates` / `search.candidates`: "
                     "null tries all). On 136-feature benchmark data 60 candidates kept the unscreened sets of every "
                     "query up to k = 5 and of most at k = 7–10, with equal or higher validity (docs/benchmarks.md).")
    return notes


def _fit_notes(metrics: Mapping[str, float | None], methods: list[str]) -> list[str]:
    """Documents an attribution explainer found no explanation for, or fitted with its fallback solver."""
    notes = []
    for name in used_explainers(methods):
        entry = registry.EXPLAINERS[name]
        degenerate = metrics.get(f"local.{name}.degenerate_docs")
        if degenerate is not None:
            notes.append(f"{entry.label} found no explanation ({entry.degenerate}) for {int(degenerate)} "
                         "document(s); their attributions are zero."
                         + (f" {entry.degenerate_fix}" if entry.degenerate_fix else ""))
        fallback = int(metrics.get(f"local.{name}.fallback_docs") or 0)
        if entry.fallback and fallback:
            notes.append(f"{entry.label} fitted {fallback} document(s) with its fallback solver ({entry.fallback}).")
    return notes


def _rows_k(metrics: Mapping[str, float | None], methods: list[str]) -> list[str]:
    """The methods measured at the evidence's k (the exhaustive optimum last, where it was affordable)."""
    return [m for m in [*methods, "optimum"] if f"local.{m}.validity.mean" in metrics]


def _validity_table(metrics: Mapping[str, float | None], facts: Mapping[str, Any], options: LocalExplanationsOptions,
                    methods: list[str]) -> Table:
    rows = []
    for method in _rows_k(metrics, methods):
        name = f"local.{method}"
        share = metrics.get(f"{name}.share_of_optimum")
        row = [label(method), stored(metrics[f"{name}.validity.mean"]),
               interval(metrics[f"{name}.validity.ci95_low"], metrics[f"{name}.validity.ci95_high"]),
               stored(metrics[f"{name}.validity.median"]), stored(metrics[f"{name}.completeness.mean"]),
               interval(metrics[f"{name}.completeness.ci95_low"], metrics[f"{name}.completeness.ci95_high"]),
               stored(share) if share is not None else None]
        if options.background_rows is not None:  # in place of the median (in evidence.json): the table stays narrow
            row[3] = stored(metrics.get(f"{name}.validity_rows.mean"))
        rows.append(row)
    rows_column = [] if options.background_rows is None else [f"validity, {options.background_rows} background rows"]
    rows_note = "" if options.background_rows is None else (
        f" Column 4: tau averaged over {options.background_rows} masked rankings, one per background row (the "
        "listwise peers' validity).")
    audited, excluded = int(metrics["local.queries"] or 0), int(metrics["local.excluded_queries"] or 0)
    return Table(
        title=f"Validity and completeness of explanation sets, k = {options.k} (layout of Singh et al. 2020, Table 2)",
        columns=["method", "validity", "95% interval", *(rows_column or ["median"]), "completeness", "95% interval",
                 "share of optimum"],
        rows=rows,
        note=(f"{audited} queries; {excluded} left out (fewer than two documents or all scores tied). "
              f"Masking: {facts['masking']} of the background data; Kendall tau-b; a masked ranking that ties every "
              "document counts as tau = 0. Per-document explainers use the top document (-1) or the sum of "
              "|attributions| over the top 5 (-5); listwise ones the query's one row." + rows_note))


def _k_curve(metrics: Mapping[str, float | None], methods: list[str], sizes: list[int], tables: list[Table],
             figures: list[Figure]) -> None:
    """The effect of k: a table of mean validity per size, and a chart of at most LINES lines."""
    curve: dict[str, list[float]] = {}
    for m in [*methods, "optimum"]:
        values = [metrics.get(f"local.{m}.validity.mean@k{s}") for s in sizes]
        if any(v is not None for v in values):
            curve[m] = [float("nan") if v is None else float(v) for v in values]
    drawn = _drawn_lines(curve)
    left = len(curve) - len(drawn)
    tables.append(Table(
        title="Effect of k on mean validity",
        columns=["method", *[f"k = {s}" for s in sizes]],
        rows=[[label(m), *[stored(v) if np.isfinite(v) else None for v in values]] for m, values in curve.items()],
        note="The exhaustive optimum appears only for the sizes where it was affordable.",
        body_rows=0 if not left else None))  # the figure below draws it, unless it leaves methods out
    figures.append(Figure(
        title="Mean validity by explanation size",
        chart="line_chart", data={"x": sizes, "series": {label(m): curve[m] for m in drawn},
                                  "xlabel": "k (features in the set)", "ylabel": "mean validity"},
        caption="Higher is better; a method that stays low needs many features to reproduce the ranking."
                + (f" Not drawn, for their lower validity at k = {sizes[-1]} (at most {LINES} lines a chart): "
                   f"{', '.join(label(m) for m in curve if m not in drawn)}; the table above gives every method."
                   if left else "") + _alike(curve, drawn),
        description=f"Line chart of mean validity against k = {', '.join(map(str, sizes))} for "
                    f"{len(drawn)} methods; at k = {sizes[-1]}: "
                    + ", ".join(f"{label(m)} {figure(curve[m][-1])}" for m in drawn if np.isfinite(curve[m][-1]))
                    + "."))


def noisy_reason(metrics: Mapping[str, float | None], options: LocalExplanationsOptions, method: str) -> str | None:
    """Why KernelSHAP's sets for `method` would still move with a fresh sample of coalitions (predicted agreement
    of two runs below the floor, or most regressions underdetermined); None when they would not."""
    agreement = metrics[f"local.{method}.convergence.agreement.mean"]
    share = metrics["local.kernelshap.underdetermined_share"]
    assert agreement is not None and share is not None  # written together by `diagnostics.measure_convergence`
    floor = options.kernelshap.agreement_floor  # type: ignore[attr-defined]  # a section added at run time
    if agreement >= floor and share <= 0.5:
        return None
    if share > 0.5:
        return (f"{share:.0%} of the documents had fewer coalitions than twice their features, too few to determine "
                f"the regression (predicted agreement of two runs' sets {percent(agreement)})")
    low = metrics[f"local.{method}.convergence.agreement.ci95_low"]
    high = metrics[f"local.{method}.convergence.agreement.ci95_high"]
    shown = interval(*held(agreement, low, high), share=True)
    return (f"two runs with fresh coalitions would choose sets sharing {percent(agreement)} of their features on "
            f"average (jackknife; 95% interval {shown}; floor {percent(floor)})")


def _convergence_notes(metrics: Mapping[str, float | None], options: LocalExplanationsOptions,
                       methods: list[str]) -> list[str]:
    if "local.kernelshap.coalitions.mean" not in metrics:
        return []
    samples = options.kernelshap.nsamples  # type: ignore[attr-defined]  # a section added at run time
    how = "auto, 2M + 2048" if samples == "auto" else f"{samples}"
    notes = []
    for method in methods:
        if f"local.{method}.convergence.agreement.mean" not in metrics:
            continue
        why = noisy_reason(metrics, options, method)
        if why is not None:
            notes.append(f"{label(method)}: the estimate is still noisy: {why}; coalitions per document: "
                         f"{metrics['local.kernelshap.coalitions.mean']:.0f} ({how}). Raise `kernelshap.nsamples`.")
    return notes


def _listwise(metrics: Mapping[str, float | None], facts: Mapping[str, Any], options: LocalExplanationsOptions,
              notes: list[str], tables: list[Table], figures: list[Figure]) -> None:
    """The listwise explainers against the exact Shapley values of their game, and the figure of the
    representative query's listwise attributions."""
    skipped: dict[str, int] = facts.get("reference_skipped", {})
    shown = [n for n in registry.EXPLAINERS if n in skipped]
    rows = []
    for name in shown:
        rows.append([registry.label(name), int(metrics[f"local.{name}.reference.queries"] or 0), skipped[name],
                     *[stored(metrics[f"local.{name}.reference.{short}.mean"], 3)
                       if f"local.{name}.reference.{short}.mean" in metrics else None
                       for short in REFERENCE_METRICS.values()]])
        if skipped[name]:
            notes.append(f"{registry.label(name)}: {skipped[name]} queries not compared with exact Shapley values "
                         f"(more than {options.reference_max_players} features play: 2^M coalitions too costly; "
                         "`reference_max_players`).")
    if rows and metrics.get("local.listwise.reference.rows") == 0 and not any(skipped.values()):
        notes.append(", ".join(registry.label(n) for n in shown) + ": exact on every query, so its own "
                     "reference (footrule and L1: 0).")
    elif rows:
        tables.append(Table(
            title="Listwise attributions against exact Shapley values",
            columns=["method", "queries", "skipped", "footrule@3", "footrule@10", "footrule@all", "L1"],
            rows=rows,
            note="Mean per query. Spearman's footrule over the reference's top 3, 10 and all features (features "
                 "ordered by signed value; 0 = the same order) and the L1 distance of the two vectors each divided "
                 "by its L1 norm (0–2). An exact estimate is its own reference (0 by construction)."))
    drawn = facts.get("listwise_figure")
    if drawn is not None:
        figures.append(_listwise_figure(drawn, options))


def _listwise_figure(drawn: Mapping[str, Any], options: LocalExplanationsOptions) -> Figure:
    query_id, size, names = drawn["query"], drawn["size"], drawn["features"]
    explainers = drawn["explainers"]
    series = {registry.label(e["name"]): (np.asarray(e["values"], dtype=np.float64),
                                          np.asarray(e["half_width"], dtype=np.float64)) for e in explainers}
    return Figure(
        title=f"What orders this query's results (query {query_id})",
        chart="listwise_bars", data={"names": names, "series": series,
                                     "xlabel": "Shapley value of the ranking game"},
        caption=(f"Each bar is a feature's Shapley value in the game \"how much of the model's order of this query's "
                 f"{size} documents does keeping the feature reproduce\" (RankingSHAP: Kendall tau; RankSHAP: nDCG "
                 "of the model's own order; "
                 + ("the features left out masked as everywhere in this audit" if options.background_rows is None
                    else f"the features left out replaced by each of {options.background_rows} background rows in "
                         "turn, the value averaged, as published")
                 + "); the values sum to 1 − v(∅): "
                 + ", ".join(f"{registry.label(e['name'])} {signed(1 - e['empty_value'])}" for e in explainers)
                 + ". Error bars: 95% intervals of sampled estimates (none: exact). "
                 + representative_text(query_id, size).capitalize() + "."),
        description=(f"Bar chart of listwise attributions for query {query_id}, features by strength: "
                     + "; ".join(f"{registry.label(e['name'])} " + ", ".join(
                         f"{name} {signed(value)}" for name, value in zip(names[:4], e["values"][:4], strict=False))
                                 for e in explainers) + "."))


LINES = 6  # lines a chart can show apart (issue 56): more are left to the table
ALIKE = 0.05  # drawn explainers whose mean validities stay this close at every k read as one line: the caption says so


def _alike(curve: dict[str, Any], drawn: list[str]) -> str:
    """A sentence for lines drawn on top of each other: the explainers (not the RANDOM and optimum references)
    whose mean validity differs by at most ALIKE at every k, so a reader does not take one line for several."""
    explainers = [m for m in drawn if m not in ("random", "optimum")]
    if len(explainers) < 3:
        return ""
    values = np.array([curve[m] for m in explainers], dtype=np.float64)
    spread = np.nanmax(values, axis=0) - np.nanmin(values, axis=0)
    if not np.isfinite(spread).any() or float(np.nanmax(spread)) > ALIKE:
        return ""
    return (f" The {len(explainers)} explainers drawn lie within {figure(float(np.nanmax(spread)))} of each other at "
            "every k, so their lines overlap: on this model they are alike.")


def _drawn_lines(curve: dict[str, Any]) -> list[str]:
    """The methods the k-curve draws: all of them up to LINES, else the optimum and RANDOM (the two references)
    and the best of the others by their validity at the largest k, in the table's order."""
    if len(curve) <= LINES:
        return list(curve)
    kept: set[str] = {m for m in ("optimum", "random") if m in curve}
    others = sorted((m for m in curve if m not in kept), key=lambda m: -np.nan_to_num(curve[m][-1], nan=-np.inf))
    kept |= set(others[:LINES - len(kept)])
    return [m for m in curve if m in kept]


# what page 2 and Limitations read from the stored result

Result = EvidenceItem

def key_figures(result: Result) -> list[KeyFigure]:
    local = result.metrics
    methods = [k.removeprefix("local.").removesuffix(".validity.mean") for k in local
               if k.endswith(".validity.mean") and k.count(".") == 3 and not k.startswith(("local.optimum.",
                                                                                          "local.random."))]
    if not methods:
        return []
    from auditor.explain import registry

    best = max(methods, key=lambda m: local[f"local.{m}.validity.mean"] or 0.0)
    floor = local.get("local.random.validity.mean")
    return [KeyFigure(30, f"Best explainer's validity ({registry.label(best)})", f"local.{best}.validity.mean",
                      "1 = the explanation alone keeps the ranking"
                      + (f"; random feature sets reach {figure(floor)}" if floor is not None else ""))]


def limitations(metrics: Mapping[str, float], dataset: Mapping[str, float]) -> list[str]:
    if "local.k" not in metrics:
        return []
    k, n_features = int(metrics["local.k"]), int(dataset["dataset.n_features"])
    if k > n_features / 2:
        return [f"Explanations name k = {k} of the {n_features} features, more than half: even random sets then "
                "reproduce much of a ranking, so validity figures say less than with a small k."]
    return [f"Explanations name k = {k} of {n_features} features; validity and completeness are measured at that size "
            "only (the effect-of-k curve shows other sizes where requested)."]
