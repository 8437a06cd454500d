"""What `local_explanations` reports from its tallies: the metrics per method and k, the tables and figures, the
how-to-read text, and the detections a reader must see (explainers that do not reproduce the rankings)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from auditor.checks.ranking import bootstrap_interval
from auditor.core.metric_names import read, spelled
from auditor.core.numbers import figure, interval, stored, with_interval
from auditor.evidence.base import AuditContext, EvidenceResult, Figure, Table
from auditor.evidence.document import EvidenceItem
from auditor.evidence.kinds.local_explanations.options import LocalExplanationsOptions
from auditor.evidence.registry import KeyFigure
from auditor.explain import registry


@dataclass
class Tally:
    """Per method and k: validity/completeness per query, chosen sets, rows and seconds."""

    validity: list[float] = field(default_factory=list)
    completeness: list[float] = field(default_factory=list)
    sets: list[tuple[int, ...]] = field(default_factory=list)
    rows: int = 0
    seconds: float = 0.0
    validity_rows: list[float] = field(default_factory=list)  # under the background rows (main k only)
    completeness_rows: list[float] = field(default_factory=list)

    def extend(self, other: Tally) -> None:
        """Append another block's queries (blocks arrive in query order)."""
        self.validity.extend(other.validity)
        self.completeness.extend(other.completeness)
        self.validity_rows.extend(other.validity_rows)
        self.completeness_rows.extend(other.completeness_rows)
        self.sets.extend(other.sets)
        self.rows += other.rows
        self.seconds += other.seconds


@dataclass
class QueryBlock:
    """One block's results: its queries' records and tallies in query order, for the audit to append."""

    excluded: int
    records: list[dict[str, Any]]
    tallies: dict[tuple[str, int], Tally]
    agreement: dict[str, list[float]] = field(default_factory=dict)  # shap1/shap5: predicted rerun agreement a query
    coalitions: list[int] = field(default_factory=list)  # KernelSHAP's coalitions per explained document
    underdetermined: list[bool] = field(default_factory=list)  # per explained document (fewer coalitions than 2M)
    reference: dict[str, list[dict[str, float]]] = field(default_factory=dict)  # listwise: agreement per query
    reference_skipped: dict[str, int] = field(default_factory=dict)  # listwise: queries with too many players
    reference_rows: int = 0
    figure: dict[str, Any] = field(default_factory=dict)  # listwise results of the figure's query, by explainer


def methods_of(methods: list[str], explainer: str) -> list[str]:
    """The chosen methods that use this attribution explainer (e.g. shap1 and shap5 for kernelshap)."""
    return [m for m in methods if registry.method(m).attribution and registry.method(m).explainer.name == explainer]



OPTIMUM_LABEL = "Exhaustive optimum"


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


def used_explainers(methods: list[str]) -> dict[str, list[str]]:
    """{attribution explainer: its chosen methods}, in registry order."""
    return {e.name: methods_of(methods, e.name) for e in registry.attribution_explainers()
            if methods_of(methods, e.name)}


def report_counts(result: EvidenceResult, methods: list[str], tallies: dict[tuple[str, int], Tally]) -> None:
    """Documents an attribution explainer left without explanation (`local.<name>.degenerate_docs`, when any) or
    fitted with its fallback solver (`local.<name>.fallback_docs`, whenever it ran), with a note when > 0."""
    for name in used_explainers(methods):
        entry = registry.EXPLAINERS[name]
        degenerate = tallies.pop((f"{name}:degenerate", 0), None)
        if degenerate is not None:
            result.notes.append(f"{entry.label} found no explanation ({entry.degenerate}) for {degenerate.rows} "
                                "document(s); their attributions are zero." + (f" {entry.degenerate_fix}"
                                                                               if entry.degenerate_fix else ""))
            result.metrics[f"local.{name}.degenerate_docs"] = float(degenerate.rows)
        fallback = tallies.pop((f"{name}:fallback", 0), None)
        if entry.fallback:
            count = fallback.rows if fallback is not None else 0
            result.metrics[f"local.{name}.fallback_docs"] = float(count)
            if count:
                result.notes.append(f"{entry.label} fitted {count} document(s) with its fallback solver "
                                    f"({entry.fallback}).")


def report_results(result: EvidenceResult, ctx: AuditContext, options: LocalExplanationsOptions, methods: list[str],
            sizes: list[int], tallies: dict[tuple[str, int], Tally], excluded: int, n_chosen: int) -> None:
    k = options.k
    names = ctx.data.feature_names
    rows_k = [m for m in [*methods, "optimum"] if (m, k) in tallies and tallies[(m, k)].validity]
    metrics = result.metrics
    metrics["local.queries"] = float(n_chosen - excluded)
    metrics["local.excluded_queries"] = float(excluded)
    metrics["local.k"] = float(k)
    rng = ctx.rng("local/intervals")
    optimum_mean = np.mean(tallies[("optimum", k)].validity) if ("optimum", k) in tallies and \
        tallies[("optimum", k)].validity else None
    table_rows = []
    for method in rows_k:
        tally = tallies[(method, k)]
        v, c = np.array(tally.validity), np.array(tally.completeness)
        v_low, v_high = bootstrap_interval(v, rng)
        c_low, c_high = bootstrap_interval(c, rng)
        name = f"local.{method}"
        metrics.update(spelled(f"{name}.validity.mean", v.mean(), v_low, v_high, always=True))
        metrics[f"{name}.validity.median"] = float(np.median(v))
        metrics.update(spelled(f"{name}.completeness.mean", c.mean(), c_low, c_high, always=True))
        metrics[f"{name}.completeness.median"] = float(np.median(c))
        metrics[f"{name}.set_size.mean"] = float(np.mean([len(s) for s in tally.sets]))
        share = float(v.mean() / optimum_mean) if optimum_mean else None
        if share is not None:
            metrics[f"local.{method}.share_of_optimum"] = share
        row = [label(method), stored(v.mean()), interval(v_low, v_high), stored(np.median(v)),
               stored(c.mean()), interval(c_low, c_high), stored(share) if share is not None else None]
        if options.background_rows is not None:  # in place of the median (in evidence.json): the table stays narrow
            row[3] = rows_stats(metrics, ctx, method, tally)
        table_rows.append(row)
    rows_column = [] if options.background_rows is None else [
        f"validity, {options.background_rows} background rows"]
    rows_note = "" if options.background_rows is None else (
        f" Column 4: tau averaged over {options.background_rows} masked rankings, one per background row (the "
        "listwise peers' validity).")
    result.tables.append(Table(
        title=f"Validity and completeness of explanation sets, k = {k} (layout of Singh et al. 2020, Table 2)",
        columns=["method", "validity", "95% interval", *(rows_column or ["median"]), "completeness", "95% interval",
                 "share of optimum"],
        rows=table_rows,
        note=(f"{n_chosen - excluded} queries; {excluded} left out (fewer than two documents or all scores tied). "
              f"Masking: {ctx.masking} of the background data; Kendall tau-b; a masked ranking that ties every "
              "document counts as tau = 0. Per-document explainers use the top document (-1) or the sum of "
              "|attributions| over the top 5 (-5); listwise ones the query's one row."
              + rows_note),
    ))
    for method in [*methods, "optimum"]:
        rows = sum(tallies[(method, s)].rows for s in sizes if (method, s) in tallies)
        metrics[f"local.{method}.rows"] = float(rows)
    result.tables.append(Table(
        title="Cost per method (all sizes of k)",
        columns=["method", "model rows", "rows per query", "seconds"],
        rows=[[label(m), int(metrics[f"local.{m}.rows"]), stored(metrics[f"local.{m}.rows"] / max(n_chosen, 1), 1),
               stored(sum(tallies[(m, s)].seconds for s in sizes if (m, s) in tallies), 3)]
              for m in [*methods, "optimum"] if metrics.get(f"local.{m}.rows")],
        note="-1 and -5 variants share one attribution run, so both show its cost. Seconds are wall time.",
        volatile=True,
    ))
    if len(sizes) > 1:
        curve = {m: [float(np.mean(tallies[(m, s)].validity)) if (m, s) in tallies and tallies[(m, s)].validity
                     else float("nan") for s in sizes] for m in [*methods, "optimum"]
                 if any((m, s) in tallies and tallies[(m, s)].validity for s in sizes)}
        for m, values in curve.items():
            for s, value in zip(sizes, values, strict=True):
                if np.isfinite(value):
                    metrics[f"local.{m}.validity.mean@k{s}"] = value
        drawn = _drawn_lines(curve)
        left = len(curve) - len(drawn)
        result.tables.append(Table(
            title="Effect of k on mean validity",
            columns=["method", *[f"k = {s}" for s in sizes]],
            rows=[[label(m), *[stored(v) if np.isfinite(v) else None for v in values]] for m, values in curve.items()],
            note="The exhaustive optimum appears only for the sizes where it was affordable.",
            body_rows=0 if not left else None))  # the figure below draws it, unless it leaves methods out
        result.figures.append(Figure(
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
    if rows_k:
        result.figures.append(Figure(
            title=f"Validity per query, k = {k}",
            chart="box_plot", data={"groups": {label(m): tallies[(m, k)].validity for m in rows_k},
                                    "ylabel": "validity (Kendall tau-b)"},
            caption="Each box spans the middle half of the queries; the line is the median. A long left whisker "
                    "means some queries' explanations do not reproduce their ranking.",
            description=f"Box plot of validity per query at k = {k}, medians: "
                        + ", ".join(f"{label(m)} {figure(np.median(tallies[(m, k)].validity))}" for m in rows_k
                                    if tallies[(m, k)].validity) + "."))
    detect(result, options, [m for m in rows_k if m != "optimum"])
    contenders = [m for m in rows_k if m != "optimum"]
    best = max(contenders, key=lambda m: metrics[f"local.{m}.validity.mean"]) if contenders else None
    if best is not None:
        counts = Counter(f for s in tallies[(best, k)].sets for f in s)
        result.tables.append(Table(
            title=f"Features most often in the {label(best)} explanation sets (k = {k})",
            columns=["feature", "queries", "share of queries"],
            rows=[[names[f], n, stored(n / len(tallies[(best, k)].sets))] for f, n in
                  sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:10]]))
        result.summary = (f"At k = {k}, {label(best)} gives the most valid explanations (mean validity "
                          f"{figure(metrics[f'local.{best}.validity.mean'])})"
                          + (f"; the best possible is {figure(optimum_mean)}." if optimum_mean else "."))


def rows_stats(metrics: dict[str, float], ctx: AuditContext, method: str, tally: Tally) -> float | None:
    """Validity and completeness under the background rows (`local.<method>.validity_rows.*`); the mean shown."""
    if not tally.validity_rows:
        return None
    v, c = np.array(tally.validity_rows), np.array(tally.completeness_rows)
    low, high = bootstrap_interval(v, ctx.rng(f"local/intervals/rows/{method}"))
    metrics.update(spelled(f"local.{method}.validity_rows.mean", v.mean(), low, high, always=True))
    metrics[f"local.{method}.completeness_rows.mean"] = float(c.mean())
    return stored(v.mean())


def detect(result: EvidenceResult, options: LocalExplanationsOptions, methods: list[str]) -> None:
    """Explainers whose sets do not reproduce the rankings (whole interval below the floor), and explainers no
    better than RANDOM sets: a reader must not take their explanations at face value."""
    metrics = result.metrics
    citation = "EU AI Act (Reg. 2024/1689) Art. 13(1) — output interpretable; Reg. (EU) 2019/1150 Art. 5(1)"
    random = read(metrics, "local.random.validity.mean") if "random" in methods else None
    random_mean, random_high = (random.value, random.high) if random is not None else (None, None)
    for method in methods:
        if method == "random":
            continue
        found = read(metrics, f"local.{method}.validity.mean")
        assert found is not None and found.low is not None and found.high is not None  # written by `report` above
        mean, low, high = found.value, found.low, found.high
        shown = f"mean validity {with_interval(mean, low, high)}" if np.isfinite(low) and np.isfinite(high) else \
            f"mean validity {figure(mean)}"
        judged_by = (f"local.{method}.validity.mean", f"local.{method}.validity")
        if random_high is not None and np.isfinite(random_high) and mean <= random_high:
            result.detect(
                "explainer-no-better-than-random", f"{label(method)} explanations are no better than random "
                f"feature sets", f"At k = {options.k}, {label(method)} has {shown}; RANDOM sets reach "
                f"{figure(random_mean)} (up to {figure(random_high)}). Its explanations should not be shown to users "
                "or reviewers as the reasons for a ranking.", severity="major", citation=citation,
                judged_by=judged_by, value=mean, interval=(low, high), subject=method)
        elif np.isfinite(high) and high < options.validity_floor:
            result.detect(
                "explanations-below-validity-floor", f"{label(method)} explanations do not reproduce the rankings",
                f"At k = {options.k}, {label(method)} has {shown}, below the floor of {options.validity_floor:g}: "
                "the features it names keep too few document pairs in order to explain the ranking.",
                severity="minor", citation=citation, judged_by=judged_by, value=mean, interval=(low, high),
                subject=method)


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
