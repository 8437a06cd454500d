"""What the documents say from the `decision_path_accuracy` evidence as stored: its report section (the summary, the
table laid out like Rahnama & Bütepage 2022's Table 3, the surrogates' two forms, accuracy by path depth, the top-K
AUC by K and its figure, the notes on the ground truth and on documents left without explanation). Reads the stored
item alone (metrics, facts), so a run renders again with this module's wording (`auditor render`); the wall-clock
cost table is the run's own (`measure.py`, never stored)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from auditor.core.numbers import figure, stored
from auditor.evidence.base import Figure, Section, Table
from auditor.evidence.document import EvidenceItem
from auditor.evidence.kinds.decision_path_accuracy.options import DecisionPathOptions, compared_form
from auditor.explain import registry

Result = EvidenceItem  # the kind's result as evidence.json holds it (metrics, records, facts, ...)
Metrics = Mapping[str, float | None]

HOW_TO_READ = (
    "A tree model's score is made by the splits on each document's path through its trees, so the path is a ground "
    "truth for which features mattered to that document. Two readings of it: value change (how much each split "
    "feature moved the score along the path; they add up to the score) and frequency (how often a feature is split "
    "on along the path). Each explainer's attributions for the top documents of each query are compared with both: "
    "Spearman correlation of the feature rankings (1 = same order, 0 = unrelated), Euclidean similarity of the "
    "normalised vectors (1 = same, 0.5 = unrelated in direction, 1/3 = opposite) and top-K AUC (1 = the explainer's "
    "most important features are exactly the path's top K; 0.5 = chance). Cells are mean ± standard deviation over "
    "documents. A low figure means the explanation points at features the model did not use for that document."
)
GT_LABELS = {"value_change": "GT value change", "frequency": "GT frequency"}
ROW_ORDER = ("auc", "spearman", "spearman_abs", "euclidean")  # the paper's Table 3 order, |·| added (the keys of
# `checks.decision_path.similarity`; tests/test_decision_path.py keeps them equal)
BY_DEPTH = ("auc", "spearman", "euclidean")  # the similarities the depth tables show (measure.py keeps their means)


def section(result: Result, options: DecisionPathOptions) -> Section:
    metrics, facts = result.metrics, result.facts or {}
    notes = [] if facts.get("reproduces_scores", True) else [_additivity_note(metrics)]
    n_docs = int(metrics.get("decision_path.docs") or 0)
    if n_docs == 0:
        return Section(summary="No documents to explain.", how_to_read=HOW_TO_READ, notes=notes)
    n_queries = int(metrics.get("decision_path.queries") or 0)
    tables = [_accuracy_table(metrics, options, n_docs, n_queries)]
    if any(registry.EXPLAINERS[n].surrogate for n in options.explainers):
        tables.append(_surrogate_table(metrics, options))
    tables += [_depth_table(metrics, options, kind, facts.get("depth_bins", []), n_docs)
               for kind in options.ground_truth]
    figures = []
    ks = _curve_ks(metrics, options)
    if ks:
        tables.append(_curve_table(metrics, options, ks))
        figures.append(_curve_figure(metrics, options, ks))
    return Section(summary=_summary(metrics, options, n_docs, n_queries), how_to_read=HOW_TO_READ, tables=tables,
                   figures=figures, notes=notes + _count_notes(metrics, options))


def _additivity_note(metrics: Metrics) -> str:
    error = _number(metrics.get("decision_path.additivity.max_abs_error"))
    return (f"The tree arrays do not reproduce the model's scores (max error {error:.3g}): the ground truth may not "
            "describe this model.")


def _count_notes(metrics: Metrics, options: DecisionPathOptions) -> list[str]:
    """Documents an explainer left without explanation, and those its fallback solver fitted (when > 0)."""
    notes = []
    for name in options.explainers:
        entry = registry.EXPLAINERS[name]
        count = int(metrics.get(f"decision_path.{name}.degenerate_docs") or 0)
        if entry.degenerate and count:
            notes.append(f"{entry.label} found no explanation ({entry.degenerate}) for {count} document(s): their "
                         "attributions are zero, so Spearman is undefined for them.")
        count = int(metrics.get(f"decision_path.{name}.fallback_docs") or 0)
        if entry.fallback and count:
            notes.append(f"{entry.label} fitted {count} document(s) with its fallback solver ({entry.fallback}).")
    return notes


def _metric_labels(top_k: int) -> dict[str, str]:
    return {"auc": f"AUC (top-{top_k})", "spearman": "Spearman", "spearman_abs": "Spearman |·|",
            "euclidean": "Euclidean"}


def _cell(metrics: Metrics, name: str, kind: str, metric: str) -> str | None:
    """Mean ± standard deviation over documents; None where no document had a value."""
    mean = metrics.get(f"decision_path.{name}.{kind}.{metric}.mean")
    std = metrics.get(f"decision_path.{name}.{kind}.{metric}.std")
    if mean is None or not math.isfinite(mean):
        return None
    return f"{figure(mean)} ± {figure(std)}" if std is not None and math.isfinite(std) else f"{figure(mean)}"


def _accuracy_table(metrics: Metrics, options: DecisionPathOptions, n_docs: int, n_queries: int) -> Table:
    names, labels = options.explainers, _metric_labels(options.top_k)
    return Table(
        title="Explanation accuracy against decision-path ground truth (layout of Rahnama & Bütepage 2022, Table 3)",
        columns=["ground truth", "similarity", *[registry.label(n) for n in names]],
        rows=[[GT_LABELS[kind], labels[metric], *[_cell(metrics, n, kind, metric) for n in names]]
              for kind in options.ground_truth for metric in ROW_ORDER],
        note=(f"Mean ± standard deviation over {n_docs} documents (the top {options.docs_per_query} of each of "
              f"{n_queries} queries" + (", all of a query's documents where it has fewer"
                                        if n_docs < options.docs_per_query * n_queries else "")
              + f"). Node values: {options.node_values.replace('_', '-')}. LIRME/EXS: "
              + ("contributions coef·(x−μ)/σ against value change, |coefficients| against frequency"
                 if options.surrogate_form == "auto" else f"{options.surrogate_form} for both")
              + "; every explainer is compared by |attribution| with frequency (which has no sign). Undefined "
                "values (a constant vector) are left out; evidence.json counts them per explainer."))


def _surrogate_table(metrics: Metrics, options: DecisionPathOptions) -> Table:
    """LIRME/EXS compared in both forms, the one the table above used marked."""
    labels = _metric_labels(options.top_k)
    rows: list[list[Any]] = []
    for name in (n for n in options.explainers if registry.EXPLAINERS[n].surrogate):
        for form in ("coefficients", "contributions"):
            for kind in options.ground_truth:
                used = compared_form(name, kind, options.surrogate_form) == form
                rows.append([registry.label(name), form, GT_LABELS[kind], "yes" if used else "",
                             *[stored(metrics.get(f"decision_path.{name}.{form}.{kind}.{m}.mean"))
                               for m in ROW_ORDER]])
    return Table(
        title="Surrogate explainers: coefficient form against contribution form",
        columns=["explainer", "form", "ground truth", "used above", *[labels[m] for m in ROW_ORDER]],
        rows=rows,
        note="Coefficients are per background standard deviation; contributions are coef·(x−μ)/σ, the "
             "surrogate's additive share of the document (μ, σ: background mean and std).", body_rows=0)


def _depth_table(metrics: Metrics, options: DecisionPathOptions, kind: str, bins: list[dict[str, Any]],
                 n_docs: int) -> Table:
    """Mean accuracy per bin of path depth (measure.py's bins and means), then its Spearman ρ with depth."""
    names, labels = options.explainers, _metric_labels(options.top_k)
    rows: list[list[Any]] = [[_bin_label(b), b["docs"], *[stored(b[kind][n][m]) for n in names for m in BY_DEPTH]]
                             for b in bins]
    rows.append(["all: Spearman ρ with depth", n_docs,
                 *[stored(metrics.get(f"decision_path.{n}.{kind}.{m}.depth_spearman")) for n in names
                   for m in BY_DEPTH]])
    return Table(
        title=f"Accuracy by decision-path depth, {GT_LABELS[kind]}",
        columns=["path depth", "docs", *[f"{registry.label(n)} {labels[m]}" for n in names for m in BY_DEPTH]],
        rows=rows,
        note="Depth: split nodes on the document's path, averaged over the trees. Mean per bin; the last row "
             "gives the Spearman correlation between depth and accuracy over all documents "
             "(Rahnama & Bütepage 2022, section 5.5).", body_rows=0)


def _bin_label(depth_bin: Mapping[str, Any]) -> str:
    """One depth value (a single tree's few depths) or a quantile bin's two ends."""
    if "depth" in depth_bin:
        return f"{depth_bin['depth']:g}"
    return f"{depth_bin['low']:.2f} – {depth_bin['high']:.2f}"


def _curve_ks(metrics: Metrics, options: DecisionPathOptions) -> list[int]:
    """The K of the top-K AUC curve, as measured (none when the data has too few features for one)."""
    stem = f"decision_path.{options.explainers[0]}.{options.ground_truth[0]}.auc.mean@k"
    return sorted(int(name.removeprefix(stem)) for name in metrics if name.startswith(stem))


def _curve(metrics: Metrics, name: str, kind: str, ks: list[int]) -> list[float]:
    return [_number(metrics.get(f"decision_path.{name}.{kind}.auc.mean@k{k}")) for k in ks]


def _curve_table(metrics: Metrics, options: DecisionPathOptions, ks: list[int]) -> Table:
    return Table(
        title="Top-K AUC by K (mean over documents)",
        columns=["explainer", "ground truth", *[f"K = {k}" for k in ks]],
        rows=[[registry.label(n), GT_LABELS[kind], *[stored(v) for v in _curve(metrics, n, kind, ks)]]
              for kind in options.ground_truth for n in options.explainers], body_rows=0)  # the figure shows it


def _curve_figure(metrics: Metrics, options: DecisionPathOptions, ks: list[int]) -> Figure:
    series = {f"{registry.label(n)} · {GT_LABELS[kind]}": _curve(metrics, n, kind, ks)
              for kind in options.ground_truth for n in options.explainers}
    return Figure(
        title="Top-K AUC against decision-path ground truth",
        chart="line_chart", data={"x": ks, "series": series, "xlabel": "K (ground-truth features counted as important)",
                                  "ylabel": "mean top-K AUC"},
        caption=k_curve_caption(series),
        description=f"Line chart of mean top-K AUC for K = {ks[0]} to {ks[-1]}, one line per explainer and "
                    f"ground truth; at K = {ks[-1]}: "
                    + ", ".join(f"{name} {figure(values[-1])}" for name, values in series.items()) + ".")


def k_curve_caption(series: dict[str, list[float]]) -> str:
    """The top-K AUC figure's caption, saying which way this run's lines go before what the paper reports (issue
    56: a caption's direction claim is the data's, never only the paper's)."""
    from auditor.evidence.figures import line_trend

    trend, rising, lines = line_trend(series)
    ends = {name: (v[0], v[-1]) for name, v in series.items()
            if len(v) >= 2 and math.isfinite(v[0]) and math.isfinite(v[-1])}
    if trend.startswith("neither"):
        said = f"neither rises nor falls on balance as K grows ({rising} of {lines} lines end higher than they start)"
    else:  # the lines that go the other way, by name (a reader review, D6: two lines climbed from below chance)
        against = [name for name, (a, b) in ends.items() if (b < a if trend == "rises" else b > a)]
        said = f"{trend} as K grows for {lines - len(against)} of {lines} lines" + (
            f"; it {'falls' if trend == 'rises' else 'rises'} for {_names(against)}" if against else "")
    below = [name for name, (a, _) in ends.items() if a < 0.5]
    start = f"; {_names(below)} start{'s' if len(below) == 1 else ''} below chance" if below else ""
    return (f"0.5 = chance. Here AUC {said}{start}. Rahnama & Bütepage 2022 (Figures 3-4) report that it falls.")


def _names(lines: list[str], most: int = 3) -> str:
    shown = lines[:most] + ([f"{len(lines) - most} more"] if len(lines) > most else [])
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " and " + shown[-1]


def _summary(metrics: Metrics, options: DecisionPathOptions, n_docs: int, n_queries: int) -> str:
    """Per ground truth, the explainer that agrees best by Spearman, and the one by top-K AUC when another."""
    names, parts = options.explainers, []
    for kind in options.ground_truth:
        best, by_auc = _best(metrics, names, kind, "spearman"), _best(metrics, names, kind, "auc")
        spearman = figure(metrics.get(f"decision_path.{best}.{kind}.spearman.mean"))
        parts.append(f"against {GT_LABELS[kind].replace('GT ', '')} {registry.label(best)} agrees best by Spearman "
                     f"({spearman})" + ("" if by_auc == best else
                                        f", {registry.label(by_auc)} by top-K AUC "
                                        f"({figure(metrics.get(f'decision_path.{by_auc}.{kind}.auc.mean'))})"))
    return f"On {n_docs} documents of {n_queries} queries, " + "; ".join(parts) + "."


def _best(metrics: Metrics, names: list[str], kind: str, similarity: str) -> str:
    """The explainer of the highest mean (the first of equals; one without a value ranks last)."""
    return max(names, key=lambda n: _nan_low(metrics.get(f"decision_path.{n}.{kind}.{similarity}.mean")))


def _nan_low(value: float | None) -> float:
    return -math.inf if value is None or not math.isfinite(value) else float(value)


def _number(value: Any) -> float:
    """A stored number, NaN where evidence.json holds null (not measured)."""
    return math.nan if value is None else float(value)
