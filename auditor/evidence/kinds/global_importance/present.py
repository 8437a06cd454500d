"""What the documents say from the `global_importance` evidence as stored: its report section (the summary, the
table of importance in three views, the chart of the main parameters, the summary and dependence plots, and of one
query the waterfall of its top document and the decision plot of its top documents), the key figures it offers page
2. Reads the stored item alone (metrics, records, facts), so a run renders again with this module's wording
(`auditor render`)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from auditor.core.numbers import figure, percent, positions, signed
from auditor.core.words import counted
from auditor.evidence.base import Figure, Section, Table, representative_text
from auditor.evidence.document import EvidenceItem
from auditor.evidence.figures import axis_label, decode, value_text
from auditor.evidence.kinds.global_importance.options import GlobalImportanceOptions
from auditor.evidence.registry import KeyFigure
from auditor.inputs.feature_dictionary import is_yes_no

Result = EvidenceItem  # the kind's result as evidence.json holds it (metrics, records, ...)

HOW_TO_READ = (
    "Each feature's importance is how much it moves the model's score, averaged per query. The 'within query' "
    "column keeps only what changes the order of documents inside a query — the part that matters for a ranking. "
    "Shares add up to 100% per column. The main ranking parameters are the fewest features that together reach "
    "the stated share of the within-query importance."
)
_MASKING = {"mean": "replaced by its mean in the background data", "median": "replaced by its median in the "
            "background data", "zero": "set to 0", "background": "replaced by background rows, scores averaged"}
DECISION_FEATURES = 10  # features the decision plot steps through (the rest summed)
MAIN_NAMED = 6  # main parameters page 2 names one by one; more are the three largest "and N more"


def section(result: Result, options: GlobalImportanceOptions) -> Section:
    facts, records = result.facts or {}, result.records
    names = [str(r["feature"]) for r in records]
    main_count = int(facts["main_count"])
    main = ", ".join(names[:main_count][:5])
    summary = (f"{counted(main_count, 'feature')} {'carries' if main_count == 1 else 'carry'} "
               f"{options.share_for_main:.0%} of the within-query importance; "
               f"the main ones: {main}{'…' if main_count > 5 else ''}.")
    figures = [_main_chart(names, facts, options), *_plots(facts)]
    if "query" in facts:
        figures.extend(_query_figures(facts, options))
    return Section(summary=summary, how_to_read=HOW_TO_READ, tables=[_table(result, options)], figures=figures)


def _table(result: Result, options: GlobalImportanceOptions) -> Table:
    """The `top` features by within-query importance, each view's mean |φ| and share (every feature in
    evidence.json), with how TreeSHAP was computed and how exactly it adds up."""
    facts, metrics, records = result.facts or {}, result.metrics, result.records
    rounding = ""
    if facts.get("float32_sums"):
        gap = _number(metrics.get("global_importance.score_rounding.max_abs"))
        rounding = (f" (to the exact sum of the trees; {facts['float32_sums']} sums them in float32, so its scores "
                    f"differ from that sum by up to {gap:.1e})")
    views = ("within_query", "per_query", "global")
    return Table(
        title="Feature importance (mean |SHAP value|)",
        columns=["rank", "feature", "within query", "share", "per query", "share", "global", "share"],
        rows=[[r["rank"], r["feature"], *(r[f"{view}.{part}"] for view in views for part in ("mean_abs", "share"))]
              for r in records[: options.top]],
        note=("Sorted by the within-query view"
              + (f"; {counted(len(records) - options.top, 'more feature')} in evidence.json"
                 if len(records) > options.top else "")
              + f". Additivity (Σφ + bias = score) holds to "
                f"{_number(metrics.get('global_importance.additivity.max_abs_error')):.1e}{rounding}. "
                f"TreeSHAP by {facts['method']}."))


def _main_chart(names: list[str], facts: Mapping[str, Any], options: GlobalImportanceOptions) -> Figure:
    """The shown features' shares of the within-query importance, the main parameters above a dashed line."""
    shares = [float(s) for s in facts["within_shares"]]
    top, main_count = names[: len(shares)], int(facts["main_count"])
    return Figure(
        title="Main ranking parameters",
        chart="bar_chart", data={"labels": top, "values": shares,
                                 "xlabel": "share of within-query importance", "percent": True, "cut": main_count,
                                 "cut_label": f"above the line: the main parameters ({options.share_for_main:.0%} "
                                              "of the importance)"},
        caption="Share of each feature in what moves documents against each other inside a query"
                + (f"; the features above the dashed line are the main parameters, the fewest that carry "
                   f"{options.share_for_main:.0%} of it (grey: the others)." if main_count < len(top) else
                   f"; all {len(top)} shown are main parameters (together they carry less than "
                   f"{options.share_for_main:.0%} of it)." if main_count > len(top) else "."),
        description="Bar chart of the features' shares of the within-query importance, largest first: "
                    + ", ".join(f"{name} {percent(share)}" for name, share in zip(top[:5], shares, strict=False))
                    + (f", and {len(top) - 5} more." if len(top) > 5 else "."))


def _plots(facts: Mapping[str, Any]) -> list[Figure]:
    """Summary (beeswarm) and dependence plots of within-query-centred SHAP values of the plotted documents."""
    plotted = facts["plotted"]
    names = [str(n) for n in plotted["features"]]
    phi, values = decode(plotted["phi"]), decode(plotted["values"])
    first, docs = names[0], len(phi)
    unit = (facts.get("units") or {}).get(first)
    spread = phi[:, 0]
    return [Figure(
        title=f"How the {len(names)} most important features move documents within their query (SHAP summary)",
        chart="beeswarm", data={"phi": phi, "values": values, "names": names,
                                "xlabel": "SHAP value minus the query's mean (score units)"},
        caption=f"Each dot is a document ({docs} shown); right of 0 it is pushed up within its query. Colour: "
                "the feature's value, low (blue) to high (red), as the colour bar shows.",
        description=f"Summary plot of {docs} documents for the {len(names)} main parameters; {first} "
                    f"spreads them most, from {figure(spread.min())} to {figure(spread.max())} score units around "
                    "their query's mean."),
        Figure(title=f"Dependence on {first}",
               chart="scatter", data={"x": values[:, 0], "y": spread, "xlabel": axis_label(first, unit),
                                      "ylabel": "SHAP value minus the query's mean", "yes_no": is_yes_no(unit)},
               caption="How the top parameter's value translates into a push up or down within the query.",
               description=f"Scatter plot of {docs} documents: {first}'s value against its push within "
                           "the query (SHAP value minus the query's mean).")]


def _query_figures(facts: Mapping[str, Any], options: GlobalImportanceOptions) -> list[Figure]:
    """The waterfall of the query's top document (score units and rank positions) and the decision plot of its
    top documents."""
    from auditor.explain.waterfall import waterfall

    query, units, names = facts["query"], facts.get("units") or {}, [str(n) for n in facts["features"]]
    qid, size, scores = query["query"], int(query["docs"]), [float(s) for s in query["scores"]]
    local, row, worth = decode(query["phi"]), decode(query["values"]), decode(query["positions"])
    which = (f"Query {qid} is the one the spec names (explain_query)." if options.explain_query is not None
             else f"By default {representative_text(qid, size)} (explain_query names another).")
    fall = waterfall(local[0], base=float(query["mean"]), score=scores[0], top=options.waterfall_features)
    labels = [value_text(names[f], row[f], units.get(names[f])) for f in fall.features]
    if fall.n_other:
        labels.append(f"{fall.n_other} other feature{'s' if fall.n_other > 1 else ''}")
    doc = query["top"][0]
    lead, rank = int(np.argmax(np.abs(worth))), int(query["rank"])
    figures = [Figure(
        title=f"Why document {doc} is first in query {qid} (waterfall)",
        chart="waterfall", data={"labels": labels, "contributions": fall.contributions, "base": fall.base,
                                 "score": fall.score, "base_label": "query's average score",
                                 "score_label": f"score of {doc}"[:44],
                                 "xlabel": "score (starts at the query's average)",
                                 "positions": worth, "positions_label": "positions its value is worth",
                                 "reference": ("#2's score", float(query["second"]))},
        caption=waterfall_caption(labels, fall.contributions, worth, _MASKING.get(query["masking"], query["masking"]),
                                  which, n_other=fall.n_other),
        description=(f"Waterfall of document {doc}, ranked {rank + 1} of {size} in query {qid}: its score "
                     f"{figure(fall.score)} is the query's average {figure(fall.base)} plus "
                     + "; ".join(f"{label} {signed(value)}" for label, value in
                                 zip(labels[:3], fall.contributions[:3], strict=False))
                     + f"{' and the rest' if len(labels) > 3 else ''}; "
                     + (f"{labels[lead]} is worth the most places ({positions(worth[lead])})." if worth[lead]
                        else "masking any one of these leaves it first.")))
    ]
    features = np.argsort(-np.abs(local).mean(axis=0), kind="stable")[:DECISION_FEATURES][::-1]
    steps = np.column_stack([local[:, features], local.sum(axis=1) - local[:, features].sum(axis=1)])
    docs = len(query["top"])
    figures.append(Figure(
        title=f"Why query {qid} is ranked as it is (decision plot)",
        chart="decision_plot", data={"phi": steps, "base": float(query["mean"]),
                                     "names": [*[names[f] for f in features], "other features"],
                                     "labels": [f"#{r + 1} {d}" for r, d in enumerate(query["top"])],
                                     "xlabel": "score (the query's average at the bottom)"},
        caption=f"Each line is one of the top {docs} documents of the query's {size}, climbing from the "
                "query's average score by each feature's push; lines end at the documents' scores, so their order "
                f"at the top is the ranking. {which}",
        description=f"Decision plot of the top {docs} documents of query {qid}: their paths from the query's "
                    f"average score {figure(query['mean'])} through the {len(features)} features that separate them "
                    f"most ({names[features[-1]]} first) to their scores, {figure(scores[0])} for the first."))
    return figures


def waterfall_caption(labels: list[str], contributions: np.ndarray, worth: np.ndarray, masking: str,
                      which: str, n_other: int = 0) -> str:
    """The waterfall's caption: what each panel measures against (the left the query's other documents, the right
    the masked value), when a row's two panels point opposite ways that row as the example of why, and when the
    features not named push more than any named one, that the named bars explain only part of the score (issue
    56: on wide data "128 other features" was the largest bar, unremarked)."""
    from auditor.explain.waterfall import opposed

    values = np.asarray(contributions, dtype=np.float64)
    rest = ""
    if n_other and len(values) > 1 and abs(values[-1]) > np.max(np.abs(values[:-1])):
        named = float(np.sum(np.abs(values[:-1])))
        share = named / float(np.sum(np.abs(values)))
        rest = (f" The {n_other} features not named push {signed(values[-1])} together, more than any feature named: "
                f"the named bars carry {percent(share)} of the pushes, so this document's score rests "
                f"{'mostly' if share < 0.5 else 'partly'} on many small ones.")

    rows = opposed(contributions, worth)
    if rows:
        r = rows[0]
        down = contributions[r] < 0
        example = (f": here {labels[r]} pushes the score {'down' if down else 'up'} ({signed(contributions[r])}) "
                   f"yet is worth {positions(worth[r])} positions, as the model rates that value "
                   f"{'below' if down else 'above'} the average of the query's documents but "
                   f"{'above' if down else 'below'} the masked value")
    else:
        example = ""
    return (f"Left: from the query's average score at the bottom, each bar adds one feature's push for this "
            f"document against the query's other documents (its SHAP value minus the query's mean; red up, blue "
            f"down) and the last bar ends at its score; the bars add up to score − average exactly; the dashed line "
            f"is the score of the document ranked second. Right: how many rank positions the document's own value "
            f"of that feature is worth against the masked value — its rank with that value masked ({masking}, as "
            f"everywhere in this audit), the other documents unchanged, minus its rank. The panels compare with "
            f"different things, the left with the query's other documents and the right with the masked value, so "
            f"a bar and its positions can point opposite ways{example}. As the document is first, masking can only "
            f"cost it places: 0 means it stays first without its value, because the masked value scores well enough "
            f"or its lead is large enough (a yes/no feature masked by its mean becomes a fraction, which the model "
            f"may read as yes). Positions do not add up.{rest} {which}")


def _number(value: Any) -> float:
    """A stored number, NaN where evidence.json holds null (not finite)."""
    return math.nan if value is None else float(value)


def key_figures(result: Result) -> list[KeyFigure]:
    records = result.records
    if not records:
        return []
    ranked = sorted(records, key=lambda r: r.get("rank", 0))
    main = result.metrics.get("global_importance.main_parameters")
    count = int(main) if isinstance(main, (int, float)) and math.isfinite(main) else 3
    # every main parameter when they are few (issue 56: page 2 named 3 of 5, leaving out the undeclared one), else
    # the largest shares and how many more
    shown = ranked[:count] if count <= MAIN_NAMED else ranked[:3]
    largest = (("" if count <= MAIN_NAMED else "largest shares: ")
               + ", ".join(f"{r['feature']} {percent(r.get('within_query.share'))}" for r in shown)
               + (f" and {count - len(shown)} more" if count > len(shown) else ""))
    return [KeyFigure(20, "Main ranking parameters (the fewest features carrying 80% of what orders documents within "
                          "a query)", "global_importance.main_parameters", largest)]
