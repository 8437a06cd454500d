"""What the documents say from the `confidence` evidence as stored: its report section (the summary, the flags per
explainer and the flagged explanations, the reliability estimate's accuracy and signals with its reliability
diagram, the queries no attribution explains, the attributions that need more features, the near ties and the check
that the flags earn their keep), the key figures it offers page 2, and the names and reason sentences of the
estimate's signals that `measure.py` writes into each flagged explanation's record. Reads the stored item alone
(metrics, records, facts), so a run renders again with this module's wording (`auditor render`)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from auditor.checks.reliability import MIN_OUTCOME
from auditor.core.metric_names import read
from auditor.core.numbers import figure, interval, percent, stored, with_interval
from auditor.core.words import counted
from auditor.evidence.base import Figure, Section, Table, size_notes
from auditor.evidence.document import EvidenceItem
from auditor.evidence.kinds.confidence.options import WIDEN_TO, ConfidenceOptions, widest
from auditor.evidence.registry import KeyFigure
from auditor.explain import registry

Result = EvidenceItem  # the kind's result as evidence.json holds it (metrics, records, ...)
Metrics = Mapping[str, float | None]
Record = Mapping[str, Any]

HOW_TO_READ = (
    "Each explanation gets an estimated reliability: the probability that it reproduces the query's ranking under "
    "masking it was not chosen on (held-out background rows) and, for tree models, that it names the features the "
    "trees actually used. The estimate reads signals every explanation has — its validity on the audit's masking, "
    "its validity with a few other background rows, its overlap with the query's most valid explanation and with "
    "TreeSHAP's, a second run's agreement, near ties, the query's size "
    "and score spread, the explainer — and is fitted leaving whole queries out, so no explanation judges itself. "
    "An explanation is flagged when its estimate is below one half, with the two signals that pull it down most. "
    "A flagged explanation is not necessarily wrong; it needs a second look before it is quoted. The estimate's "
    "own accuracy (AUC, calibration) is measured and shown; where no attribution explainer is reliable on a query, "
    "the most valid explanation of that query is named instead. Rankings whose top documents are nearly tied are "
    "listed apart. The last table checks that the flags mean something: flagged explanations should have lower "
    "validity under the held-out masking and lower decision-path accuracy than unflagged ones."
)
WIDEN_LISTED = 8  # widened attributions the section shows; Appendix B lists up to `max_listed` (all in evidence.json)
VALIDATED = (("validity", "validity"), ("path_accuracy", "decision-path accuracy (top-K AUC)"))
SIGNALS = {  # the estimate's signals: a short name, and how each reads as a reason when low and when high
    "validity": ("validity", "validity {value} on the audit's masking (typical {typical})",
                 "validity {value} on the audit's masking, above the typical {typical}"),
    "robust_validity": ("validity on other rows", "validity {value} on other rows (typical {typical})",
                        "validity {value} on other rows, above the typical {typical}"),
    "agreement_best": ("agreement with the best", "shares {share} of its features with the query's best "
                                                  "(typical {typical_share})",
                       "shares {share} of its features with the query's best"),
    "agreement_tree": ("agreement with TreeSHAP", "shares {share} of its features with TreeSHAP's (typical "
                                                  "{typical_share})",
                       "shares {share} of its features with TreeSHAP's"),
    "stability": ("stability", "a rerun keeps {share} of its features (typical {typical_share})",
                  "a rerun keeps {share} of its features"),
    "margin": ("near tie", "the top documents are nearly tied", "the top documents are far apart"),
    "mass": ("attribution mass", "its features hold {share} of the attribution (typical {typical_share})",
             "its features hold {share} of the attribution"),
    "docs": ("query size", "a small query ({docs} documents)", "a large query ({docs} documents)"),
    "spread": ("score spread", "scores close together (spread {value})", "scores spread wide ({value})"),
}


def signal_name(signal: str) -> str:
    """A signal's short name for tables (an explainer indicator: the explainer's label)."""
    if signal.startswith("explainer:"):
        return "explainer " + registry.label(signal.removeprefix("explainer:"))
    return SIGNALS[signal][0]


def section(result: Result, options: ConfidenceOptions) -> Section:
    metrics, records, facts = result.metrics, result.records, result.facts or {}
    methods, criteria = list(facts.get("methods", [])), list(facts.get("criteria", []))
    notes = _notes(options, facts, methods, criteria)
    if not records:
        return Section(summary="No query with an order to explain.", how_to_read=HOW_TO_READ, notes=notes)
    queries = len(records) // len(methods)  # every judged query has one explanation of each method, in a row
    tables = [_per_method(metrics, records, options, methods, criteria, queries), _flagged(records, options),
              _prediction(metrics, records, options), _signals(facts["estimate"], options)]
    tables += _alternatives(metrics, records, facts, options, queries)
    tables += _widening(metrics, records, facts, options)
    if "margin" in criteria:
        tables.append(_fragile(records, options, len(methods)))
    tables += _validation_table(facts.get("validation", []))
    points = facts["estimate"]["calibration"]
    # one bin is no diagram: every explanation got the base rate (a reader review, W9: its caption described a
    # calibration the chart could not show)
    figures = [_diagram(points, metrics)] if len(points) > 1 else []
    return Section(summary=_summary(metrics, records, methods, criteria, queries), how_to_read=HOW_TO_READ,
                   tables=tables, figures=figures, notes=notes)


def _notes(options: ConfidenceOptions, facts: Mapping[str, Any], methods: list[str], criteria: list[str]) -> list[str]:
    """Explanations too large for the features, and what a model without trees left out."""
    notes = size_notes([options.k], int(facts.get("features", 0)))
    if len(methods) < len(options.methods):
        notes.append("TreeSHAP needs a tree model: not judged.")
    if "path_accuracy" in options.criteria and "path_accuracy" not in criteria:
        notes.append("Decision-path accuracy needs a tree model: that criterion is not applied.")
    return notes


def _per_method(metrics: Metrics, records: Sequence[Record], options: ConfidenceOptions, methods: list[str],
                criteria: list[str], queries: int) -> Table:
    excluded = int(metrics.get("confidence.excluded_queries") or 0)
    rows: list[list[Any]] = []
    for m in methods:
        mine = [r for r in records if r["method"] == m]
        reasons = Counter(c for r in mine for c in r["reason_signals"])
        rows.append([registry.label(m), len(mine), sum(bool(r["flagged"]) for r in mine),
                     stored(metrics.get(f"confidence.{m}.flagged_fraction")),
                     ", ".join(f"{c} {n}" for c, n in reasons.most_common()) or "—"])
    return Table(
        title=f"Flagged explanations per explainer (k = {options.k})",
        columns=["explainer", "explanations", "flagged", "share flagged", "reasons (count)"], rows=rows,
        note=f"{counted(queries, 'query')}; {excluded} left out (fewer than two documents or all scores tied). "
             "Thresholds: " + ", ".join(f"{c} {getattr(options.thresholds, c):g}" for c in criteria if c != "margin")
             + ".")


def _flagged(records: Sequence[Record], options: ConfidenceOptions) -> Table:
    flagged = [r for r in records if r["flagged"]]
    listed = flagged[:options.max_listed]
    cut = len(listed) < len(flagged)
    return Table(
        # a list cut at max_listed says so in its title: "every row is in Appendix B" then reads as the list's rows
        title="Explanations not to rely on, with the reasons" + (
            f" (the first {len(listed)} of {len(flagged)})" if cut else ""),
        columns=["query", "explainer", "explanation set", "estimated reliability", "validity", "reasons"],
        rows=[[r["query"], registry.label(r["method"]), ", ".join(r["selected"]), stored(r["reliability"]),
               stored(r["measures"]["validity"]), "; ".join(r["reasons"])] for r in listed],
        note=(f"The first {len(listed)} of {len(flagged)} flagged explanations, in query order (every one is in "
              "evidence.json)." if cut else f"All {len(listed)} flagged explanations, in query order."), body_rows=6)


def _prediction(metrics: Metrics, records: Sequence[Record], options: ConfidenceOptions) -> Table:
    """How well the estimate predicts what was measured: its AUC and calibration, the shares it and the rules flag."""
    path = any("path_accuracy" in r["measures"] for r in records)
    return Table(
        title="How well the reliability estimate predicts",
        columns=["measure", "value", "95% interval"],
        rows=[_estimate_row("AUC (out of sample)", metrics, "confidence.validation.auc"),
              _estimate_row("expected calibration error", metrics, "confidence.validation.ece"),
              ["share of explanations reliable (measured)", percent(metrics.get("confidence.reliable_share")), None],
              ["share flagged (estimate below " + figure(options.flag_below) + ")",
               percent(metrics.get("confidence.flagged_fraction")),
               _share_interval(metrics, "confidence.flagged_fraction")],
              ["share the rule-based criteria would flag", percent(metrics.get("confidence.rules.flagged_fraction")),
               None]],
        note=f"Reliable: validity at least {figure(options.thresholds.validity)} under {options.heldout_rows} "
             "held-out background rows" + (f" and decision-path accuracy at least "
                                           f"{figure(options.thresholds.path_accuracy)}" if path else "")
             + ". The estimate is a logistic regression on the signals below, fitted with leave-queries-out "
             "cross-validation (5 folds of whole queries): every explanation's estimate comes from a model that "
             "never saw its query. AUC 0.5 is chance, 1 a perfect ranking of reliable above unreliable; the "
             "calibration error is the mean gap between estimated and observed reliability over ten bins. "
             "Intervals resample queries (2000 bootstrap resamples).")


def _share_interval(metrics: Metrics, name: str) -> str | None:
    """A share's 95% interval as page 2 prints it (a reader review: page 2 gave the flagged share's interval, the
    section a dash), widened to hold its value; None where it has none."""
    found = read(metrics, name)
    if found is None or found.low is None or found.high is None:
        return None
    return interval(min(found.low, found.value), max(found.high, found.value), share=True)


def _estimate_row(label: str, metrics: Metrics, name: str) -> list[Any]:
    """A measure of the estimate with its interval ("—" where it has none)."""
    found = read(metrics, name)
    if found is None:
        return [label, None, interval(None, None)]
    return [label, stored(found.value), interval(found.low, found.high)]


def _signals(estimate: Mapping[str, Any], options: ConfidenceOptions) -> Table:
    """The estimate's signals, each with its push on the log-odds and its mean (measure.py's `facts.estimate`)."""
    return Table(
        title="What the estimate reads (its signals)",
        columns=["signal", "push on the log-odds per standard deviation", "mean"],
        rows=[[signal_name(name), stored(push, 4), stored(mean, 4)] for name, push, mean in estimate["signals"]],
        note="Positive: the signal raises the estimated reliability. validity: on the audit's masking; "
             f"validity on other rows: under {options.robustness_rows} background rows of their own draw; "
             "agreement with the best: top-k overlap with the query's most valid explanation; agreement with "
             "TreeSHAP: top-k overlap with TreeSHAP's explanation of the query (tree models; it reads the trees' "
             "paths); stability: overlap with a second seeded run (1 for deterministic explainers); near tie: "
             "log10 of the top documents' smallest score gap; attribution mass: the chosen features' share of the "
             "attribution (set searches: filled with the mean); query size: log2 of the query's documents; score "
             "spread: the standard deviation of its scores; explainer: which explainer gave it."
             + (f" Fewer than {MIN_OUTCOME} explanations had one of the two outcomes, so no model was fitted: the "
                "estimate is the observed rate." if estimate["constant"] else ""))


def _diagram(points: Sequence[Sequence[float]], metrics: Metrics) -> Figure:
    """The reliability diagram: per bin of estimates (its middle, the mean estimate, the observed rate)."""
    return Figure(
        title="Reliability diagram of the estimate",
        chart="line_chart", data={
            "x": [mid for mid, _, _ in points],
            "series": {"observed share reliable": [rate for _, _, rate in points],
                       "mean estimate (perfect calibration)": [mean for _, mean, _ in points]},
            "xlabel": "estimated reliability (bins of 0.1, by their middle)", "ylabel": "share reliable"},
        caption="Each point is a bin of explanations by their estimated reliability: on the diagonal, an "
                "estimate of 0.7 means 7 in 10 such explanations are reliable.",
        description=f"Reliability diagram over {len(points)} bins; expected calibration error "
                    f"{figure(metrics.get('confidence.validation.ece'))}.")


def _alternatives(metrics: Metrics, records: Sequence[Record], facts: Mapping[str, Any], options: ConfidenceOptions,
                  queries: int) -> list[Table]:
    """Queries on which no attribution is reliable, each with its most valid explanation (measure.py's choice)."""
    count = int(metrics.get("confidence.attribution_unreliable_queries") or 0)
    if not count:
        return []
    chosen = [records[i] for i in facts["alternatives"]]
    return [Table(
        title="Queries no attribution explains: the explanation to use instead",
        columns=["query", "use the explanation of", "features", "validity (held-out masking)", "reliable"],
        rows=[[r["query"], registry.label(r["method"]), ", ".join(r["selected"]), stored(r["heldout_validity"]),
               "yes" if r["reliable"] else "no"] for r in chosen[:options.max_listed]],
        note=f"{counted(count, 'query')} of {queries}: no attribution explainer's top {options.k} "
             "features reproduce the ranking under the held-out masking; the most valid explanation of the "
             "query is named instead." + (f" The first {options.max_listed} are listed."
                                          if count > options.max_listed else ""))]


def _widening(metrics: Metrics, records: Sequence[Record], facts: Mapping[str, Any],
              options: ConfidenceOptions) -> list[Table]:
    """Attributions below the validity floor, in measure.py's order (those to quote wider first), each with the
    features it needs and whether the wider explanation holds under the held-out rows."""
    below = int(metrics.get("confidence.widened.explanations") or 0)
    if not below:
        return []
    reached = int(metrics.get("confidence.widened.reached") or 0)
    share = _number(metrics.get("confidence.widened.reliable_share"))
    most = widest(options.k, int(facts["features"]))
    rows = [[r["query"], registry.label(r["method"]), stored(r["heldout_validity"]),
             r["widened"]["k"] if r["widened"] else None,
             ", ".join(r["widened"]["selected"][options.k:]) if r["widened"] else f"none within {most} features",
             stored(r["widened"]["heldout_validity"]) if r["widened"] else None]
            for r in (records[i] for i in facts["widened"][:options.max_listed])]
    return [Table(
        title="Attributions that need more features",
        columns=["query", "explainer", f"validity with {options.k} features (held-out masking)", "features needed",
                 "features added", "validity with them (held-out masking)"],
        rows=rows, body_rows=WIDEN_LISTED,  # the section shows the first; Appendix B them all
        note=f"{counted(below, 'attribution explanation')} fall below validity "
             f"{figure(options.thresholds.validity)} under the held-out masking with {options.k} features. Taking "
             f"more of the same attribution's top features (up to {most}: "
             f"{WIDEN_TO} × {options.k} and at most half the features; the fewest that reach "
             f"{figure(options.thresholds.validity)} on the audit's masking and with {options.robustness_rows} other "
             f"background rows), {reached} reach it there and "
             f"{round(share * below)} ({percent(share)}) also hold under the held-out rows, which did "
             "not choose the number: for those, quote the wider explanation."
             + (f" The first {options.max_listed} are listed (every one is in evidence.json)."
                if below > options.max_listed else ""))]


def _fragile(records: Sequence[Record], options: ConfidenceOptions, per_query: int) -> Table:
    """Rankings whose top documents are nearly tied: a tiny change reorders them, whatever explains them."""
    queries = [records[i + per_query - 1] for i in range(0, len(records), per_query)]
    fragile = [r for r in queries if r["fragile"]]
    listed = fragile[:options.max_listed]
    return Table(
        title="Rankings too close to call at the top",
        columns=["query", f"smallest score gap among the top {options.margin_docs} (share of the score spread)"],
        rows=[[r["query"], stored(r["measures"]["margin"])] for r in listed],
        note=f"{len(fragile)} of {len(queries)} queries have top documents whose scores differ by less than "
             f"{options.thresholds.margin:g} of the query's score spread: the model barely prefers one to the "
             "next, so any explanation of their order is fragile. This is a property of the ranking, not of an "
             "explainer, and does not flag explanations." + (f" The first {len(listed)} are listed."
                                                                 if len(listed) < len(fragile) else ""))


def _validation_table(rows: Sequence[Mapping[str, Any]]) -> list[Table]:
    """The flagged against the unflagged mean of each measure, within explainer and pooled (measure.py's rows)."""
    if not rows:
        return []
    labels = dict(VALIDATED)
    shown: list[list[Any]] = []
    for row in rows:
        gap, low, high = (_number(row[part]) for part in ("gap", "low", "high"))
        shown.append([labels[row["measure"]], "within explainer" if row["within"] else "pooled", row["flagged"],
                      row["unflagged"], stored(row["flagged_mean"], 6), stored(row["unflagged_mean"], 6),
                      stored(gap, 6), interval(min(low, gap), max(high, gap)) if math.isfinite(low) else None])
    return [Table(
        title="Do the flags earn their keep?",
        columns=["measure", "comparison", "flagged", "unflagged", "mean flagged", "mean unflagged",
                 "gap (unflagged − flagged)", "95% interval"],
        rows=shown,
        note="A positive gap whose interval excludes 0 means flagged explanations really are worse. Validity here "
             "is measured under the held-out masking (background rows no explanation was chosen on), not the "
             "audit's masking the estimate reads, so the gap is not true by construction. 'Within explainer', "
             "the headline figure, compares each flagged explanation with the unflagged explanations of its own "
             "explainer: 'mean unflagged' there is each explainer's unflagged mean, weighted by how many of its "
             "explanations are flagged (explainers with no flagged or no unflagged explanation are left out of "
             "the counts and means). 'Pooled' mixes explainers. In every row the gap is mean unflagged − mean "
             "flagged. Intervals resample queries (2000 bootstrap resamples).")]


def _summary(metrics: Metrics, records: Sequence[Record], methods: list[str], criteria: list[str],
             queries: int) -> str:
    """The flags' headline, then what the estimate, the alternatives and the widening add; opened by what limits
    the flags (no estimate, an estimate at chance, flags that do not single out worse explanations)."""
    flagged = sum(bool(r["flagged"]) for r in records)
    shares = {m: _number(metrics.get(f"confidence.{m}.flagged_fraction")) for m in methods}
    most = max(shares.values())
    worst = [registry.label(m) for m in methods if shares[m] == most]
    share = percent(metrics.get("confidence.flagged_fraction"))
    summary = (f"{flagged} of {len(records)} explanations flagged ({share}); most often {' and '.join(worst)} "
               f"({percent(most)}{' each' if len(worst) > 1 else ''})."
               if flagged else f"None of {len(records)} explanations is flagged.")
    if "margin" in criteria:
        summary += (f" {int(metrics.get('confidence.fragile_queries') or 0)} of {queries} rankings are near ties at "
                    "the top (listed apart).")
    judged = read(metrics, "confidence.validation.auc")
    if judged is not None and math.isfinite(judged.value):
        summary += (" The reliability estimate behind the flags ranks reliable above unreliable explanations with "
                    "AUC " + with_interval(judged.value, judged.low, judged.high) + " out of sample.")
    lost = int(metrics.get("confidence.attribution_unreliable_queries") or 0)
    if lost:
        summary += (f" On {counted(lost, 'query')} no attribution explainer is reliable: the table names the "
                    "explanation to show instead.")
    below = int(metrics.get("confidence.widened.explanations") or 0)
    if below:
        holding = round(_number(metrics.get("confidence.widened.reliable_share")) * below)
        summary += (f" Of {counted(below, 'attribution')} below the validity floor, {holding} "
                    f"{'holds' if holding == 1 else 'hold'} with a few more of the same top features (listed).")
    return _limits(metrics, judged) + summary


def _limits(metrics: Metrics, judged: Any) -> str:
    """What the summary opens with: why there is no estimate, or that it is at chance; then whether the flags
    single out worse explanations by each measure the check compares."""
    opening = ""
    auc_value, auc_low = (judged.value, judged.low) if judged is not None else (math.nan, math.nan)
    reliable = metrics.get("confidence.reliable_share")
    if "confidence.reliable_share" in metrics and not math.isfinite(auc_value):
        opening = (f"Reliability could not be estimated: measured on the held-out masking, "
                   f"{percent(reliable)} of the explanations are reliable, too few of one outcome (fewer than "
                   f"{MIN_OUTCOME}) to fit or test an estimate, so every explanation gets that rate. ")
    elif auc_low is not None and math.isfinite(auc_low) and auc_low <= 0.5:
        opening = ("No signal the audit measures predicts which explanations hold: the reliability estimate's "
                   f"AUC {with_interval(auc_value, auc_low, judged.high)} "
                   "reaches chance (0.5), so check each explanation's measured validity before quoting it. ")
    gap_low = {label: _low(metrics, f"confidence.validation.{measure}_gap") for measure, label in VALIDATED}
    unproven = [label for label, low in gap_low.items() if math.isfinite(low) and low <= 0]
    proven = [label for label, low in gap_low.items() if low > 0]
    if unproven and proven:
        return (f"The flags single out explanations of worse {' and '.join(proven)}, but not of worse "
                f"{' or '.join(unproven)} (that gap's 95% interval includes no difference): read a flag as "
                f"a warning about {' and '.join(proven)} only. " + opening)
    if unproven:
        return ("The flags do not single out worse explanations here: flagged and unflagged explanations "
                f"cannot be told apart by {' or '.join(unproven)} (the gap's 95% interval includes no "
                "difference), so treat the flags as hints, not as a verdict. " + opening)
    return opening


def _low(metrics: Metrics, name: str) -> float:
    """The lower end of `name`'s interval; NaN when it has none."""
    found = read(metrics, name)
    return found.low if found is not None and found.low is not None else math.nan


def _number(value: Any) -> float:
    """A stored number, NaN where evidence.json holds null (not measured)."""
    return math.nan if value is None else float(value)


def key_figures(result: Result) -> list[KeyFigure]:
    metrics = result.metrics
    scale = "explanations flagged for a second look before they are quoted"
    judged = read(metrics, "confidence.validation.auc")
    auc = judged.value if judged is not None else None
    reliable = metrics.get("confidence.reliable_share")
    if (auc is None or not math.isfinite(auc)) and reliable is not None and math.isfinite(reliable):
        scale += (f"; no reliability estimate: {percent(reliable)} of the explanations hold under held-out masking, "
                  "too few of one outcome to fit one")
    if judged is not None and auc is not None and math.isfinite(auc):
        scale += ("; the estimate behind the flags separates reliable from unreliable ones with AUC "
                  + with_interval(auc, judged.low, judged.high) + " (0.5 = chance)")
    lost = int(metrics.get("confidence.attribution_unreliable_queries", 0) or 0)
    if lost:
        scale += f"; on {counted(lost, 'query')} no attribution explainer is reliable (the section names what to use)"
    below = int(metrics.get("confidence.widened.explanations", 0) or 0)
    widened = metrics.get("confidence.widened.reliable_share")
    if below and widened is not None and math.isfinite(widened):
        # how the two sets overlap, counted (a reader review: "a set apart from the flagged" beside 35 of 46 in both)
        indices = (result.facts or {}).get("widened") or []
        both = sum(1 for i in indices if 0 <= i < len(result.records) and result.records[i].get("flagged"))
        overlap = f" ({both} of them also flagged)" if indices else ""
        scale += (f"; {counted(below, 'attribution')} fall below the validity floor{overlap}, and "
                  f"{round(widened * below)} of the {below} hold with a few more features (listed in the section)")
    return [KeyFigure(80, "Share of explanations flagged as low-confidence", "confidence.flagged_fraction", scale,
                      share=True)]
