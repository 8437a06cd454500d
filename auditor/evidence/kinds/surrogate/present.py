"""What the documents say from the `surrogate` evidence as stored: its report section (the summary, the fidelity and
effects tables, the main effects' small multiples and the pairs' heatmaps), the key figures it offers page 2 and its
Limitations sentences. Reads the stored item alone (metrics, records, facts), so a run renders again with this
module's wording (`auditor render`)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from auditor.core.numbers import figure, signed, stored
from auditor.core.words import counted
from auditor.evidence.base import Figure, Section, Table
from auditor.evidence.document import EvidenceItem
from auditor.evidence.figures import cell_limit, decode
from auditor.evidence.kinds.surrogate.options import SurrogateOptions
from auditor.evidence.registry import KeyFigure

Result = EvidenceItem  # the kind's result as evidence.json holds it (metrics, records, ...)

HOW_TO_READ = (
    "The surrogate is a simple model trained to rank like the audited one: its score is a sum of one curve per "
    "feature and a few two-feature tables, so every part can be drawn and read. First check fidelity: Kendall tau "
    "is 1 when the surrogate orders every query's documents exactly as the audited model does, 0 when there is no "
    "agreement; nDCG@10 against the audited ranking is 1 when it picks the same top 10 in the same order. Only when "
    "fidelity is high do the curves describe the audited model. Each curve shows how the surrogate's score moves "
    "with one feature's value (above 0 pushes a document up); the grey histogram under it shows where the "
    "documents actually are, so flat stretches with no documents mean little. Heatmaps show how two features "
    "work together beyond their separate curves (red pushes up, blue down). The effects table ranks the effects "
    "by how much they move the audited documents' scores on average."
)
YLABEL = "contribution to the surrogate's score (0 = average document)"
PAIRS_PER_FIGURE = 6  # three rows of two heatmaps: one page
IN_SAMPLE = ("No background data: the surrogate was trained on the audited data itself, so its fidelity is measured "
             "in-sample.")


def section(result: Result, options: SurrogateOptions) -> Section:
    metrics, records, facts = result.metrics, result.records, result.facts or {}
    top = [str(r["effect"]) for r in records[:3]]
    summary = (
        f"An ILMART surrogate with {_count(metrics, 'surrogate.n_main_effects')} main effects and "
        f"{_count(metrics, 'surrogate.n_interactions')} feature pairs ranks like the audited model with mean Kendall "
        f"tau {figure(metrics.get('surrogate.fidelity.kendall.mean'))} (nDCG@10 against its ranking "
        f"{figure(metrics.get('surrogate.fidelity.ndcg@10.mean'))}); its largest effects: {', '.join(top)}."
        + _drawn_sentence(facts.get("frontier"), metrics))
    effects = Table(
        title="Effects of the surrogate, by importance",
        columns=["rank", "effect", "kind", "importance", "share", "bins", "trees' leaves"],
        rows=[[r["rank"], r["effect"], "pair" if _is_pair(r) else "main", r["importance"], r["share"], _bins(r),
               r["leaves"]] for r in records],
        note=f"Importance = mean |effect| over the {facts['documents']} audited documents, each effect centred on "
             f"them. Bias + Σ effects = the surrogate's score to "
             f"{_number(metrics.get('surrogate.decomposition.max_abs_error')):.1e}.")
    mains = [r for r in records if not _is_pair(r)]
    pairs = [r for r in records if _is_pair(r)]
    return Section(summary=summary, how_to_read=HOW_TO_READ, tables=[_fidelity_table(facts, metrics), effects],
                   figures=[*_main_figure(facts["main_effects"], len(mains), options),
                            *_pair_figures(facts["pair_effects"], len(pairs), options),
                            *_frontier_figure(facts.get("frontier"))],  # last: a small figure after page-high ones
                   notes=[IN_SAMPLE] if facts.get("in_sample") else [])


def _fidelity_table(facts: Mapping[str, Any], metrics: Mapping[str, float | None]) -> Table:
    """Both surrogates against the audited model's rankings, with what the training selected and, when the data has
    labels, both models' nDCG@10 against them."""
    fidelity = facts["fidelity"]
    rows = [[label, *(stored(fidelity[which][part]) for part in ("kendall_mean", "kendall_p10", "ndcg_mean",
                                                                  "explained")), fidelity[which]["trees"]]
            for label, which in (("ILMART (main effects only)", "main"), ("ILMARTi (with pairs)", "full"))]
    note = (f"{counted(_count(metrics, 'surrogate.fidelity.queries'), 'query', 'queries')} with a ranking to compare. "
            f"Pairs selected: {fidelity['pairs']}; main-effect features: {fidelity['main_features']}. Training "
            f"queries held {_count(metrics, 'surrogate.training.synthetic_documents')} synthetic documents besides "
            "the real ones (features recombined within a query, scored by the audited model).")
    if "surrogate.labels.ndcg@10.model" in metrics:
        note += (f" Mean nDCG@10 against the labels, over the queries of two or more documents: audited model "
                 f"{figure(metrics['surrogate.labels.ndcg@10.model'])}, surrogate "
                 f"{figure(metrics.get('surrogate.labels.ndcg@10.surrogate'))}.")
    return Table(title="Fidelity to the audited model's ranking",
                 columns=["surrogate", "Kendall tau (mean)", "Kendall tau (p10)", "nDCG@10 vs model ranking",
                          "explained share", "trees"], rows=rows, note=note)


def _drawn_sentence(frontier: Mapping[str, Any] | None, metrics: Mapping[str, float | None]) -> str:
    """How much of the model's ordering the drawn effects hold, read alone (runs before this measure: nothing)."""
    if not frontier or frontier.get("drawn_kendall") is None or not frontier["kendall"]:
        return ""
    total = len(frontier["kendall"])
    largest = (f"the {counted(_count(metrics, 'surrogate.fidelity.effects_for_95pct'), 'largest effect')} keep 95% "
               "of the whole surrogate's agreement.")
    if frontier["drawn"] >= total:
        return f" All its {total} effects are drawn below; {largest}"
    return (f" The {counted(frontier['drawn'], 'effect')} drawn, read alone, rank like the model with Kendall "
            f"tau {figure(frontier['drawn_kendall'])} (all {total}: {figure(frontier['kendall'][-1])}); {largest}")


def _frontier_figure(frontier: Mapping[str, Any] | None) -> list[Figure]:
    """Fidelity against size (none for runs made before it was measured, or a surrogate without effects)."""
    if not frontier or not frontier["kendall"]:
        return []
    total, drawn = len(frontier["kendall"]), frontier["drawn"]
    return [Figure(
        title="How much of the model's ordering the surrogate's largest effects hold",
        chart="frontier_chart",
        data={"kendall": frontier["kendall"], "pair": frontier["pair"], "drawn": drawn,
              "drawn_kendall": frontier["drawn_kendall"], "xlabel": "effects kept, largest first",
              "ylabel": "Kendall tau with the model"},
        caption="Each dot is the surrogate cut to its largest effects (the others held at their average, which moves "
                "no document within its query): mean Kendall tau with the model's rankings over the queries, as more "
                "effects are kept. A hollow dot adds a feature pair. The diamond is what the curves and heatmaps "
                "above show together; the dashed line is the whole surrogate.",
        description=f"Mean Kendall tau of the surrogate cut to its largest effects: "
                    f"{figure(frontier['kendall'][0])} with one, {figure(frontier['kendall'][-1])} with all {total}; "
                    f"the {drawn} drawn: {figure(frontier['drawn_kendall'])}.")]


def _main_figure(drawn: list[dict[str, Any]], total: int, options: SurrogateOptions) -> list[Figure]:
    """The small multiples of the largest main effects (none when the surrogate has none)."""
    if not drawn:
        return []
    panels = [decode(main["panel"]) for main in drawn]
    swings = [f"{main['feature']} from {figure(main['low'])} to {signed(main['high'])}" for main in drawn]
    left_out = total - len(drawn)
    return [Figure(
        title=f"Main effects: how each feature moves the score ({len(drawn)} of {total})",
        chart="step_curves", data={"panels": panels, "ylabel": YLABEL,
                                   "columns": 4 if len(panels) > 6 else 3 if len(panels) > 4 else 2},
        caption="Step curve: the surrogate's score change at each value of the feature (centred: 0 is the "
                "average document); grey histogram: where the audited documents' values lie. A yes/no feature "
                "is two bars, each with the share of documents that have that value."
                + (f" {left_out} smaller main effect(s) not drawn (top_effects = {options.top_effects})."
                   if left_out else ""),
        description=f"Small multiples of {len(drawn)} main effects in score units: "
                    + "; ".join(swings[:4]) + ("; and more." if len(swings) > 4 else "."))]


def _pair_figures(drawn: list[dict[str, Any]], total: int, options: SurrogateOptions) -> list[Figure]:
    """The heatmaps of the largest pairs, `PAIRS_PER_FIGURE` a figure, on one colour scale."""
    cells = [decode(pair["panel"]) for pair in drawn]
    limit = cell_limit(cells) if cells else 1.0  # one colour scale for every pair figure
    left_out = total - len(drawn)
    chunks = [range(i, min(i + PAIRS_PER_FIGURE, len(drawn))) for i in range(0, len(drawn), PAIRS_PER_FIGURE)]
    figures = []
    for number, chunk in enumerate(chunks, start=1):
        start, first = chunk.start, drawn[chunk.start]
        part = f" ({number} of {len(chunks)})" if len(chunks) > 1 else ""
        plural = "s" if total > 1 else ""
        figures.append(Figure(
            title=(f"Interactions: the surrogate's {total} feature pair{plural}"
                   if len(chunks) == 1 and not left_out else
                   f"Interactions{part}: pairs {start + 1}–{start + len(chunk)} by importance of the surrogate's "
                   f"{total}"),
            chart="pair_heatmaps", data={"panels": cells[start:start + len(chunk)],
                                         "colorbar": "pair effect (score units)", "limit": limit},
            caption="Each cell is the mean push of the pair's table on the audited documents whose two values fall "
                    "in it (red up, blue down; centred on the audited documents; grey: no document). Cells are "
                    "quantile bins of the documents' values, ticks in the features' units; a yes/no feature has one "
                    "cell per value. All pairs share one colour scale, so a pale panel is a small effect. As ILMART "
                    "learns it, a pair table also holds part of each feature's own effect."
                    + _scale_note(limit, [(drawn[i]["low"], drawn[i]["high"]) for i in chunk])
                    + (f" {counted(left_out, 'smaller pair')} not drawn (top_pairs = {options.top_pairs})."
                       if left_out and number == len(chunks) else ""),
            description=f"Heatmaps of {len(chunk)} pair effects on one colour scale from {figure(-limit)} to "
                        f"{signed(limit)}; the strongest here, {cells[start].title}, moves a document's score by "
                        f"{figure(first['low'])} to {signed(first['high'])} score units."))
    return figures


def _scale_note(limit: float, pushes: list[tuple[float, float]]) -> str:
    """The colour scale covers the cells' means; single documents reach further, and the caption says how far, so
    a reader does not take the scale's end for the largest push. `pushes`: each panel's lowest and highest push."""
    low = min(float(p[0]) for p in pushes)
    high = max(float(p[1]) for p in pushes)
    if max(-low, high) <= limit * (1 + 1e-9):
        return f" In these panels the shared scale ({figure(-limit)} to {signed(limit)}) covers every document's push."
    return (f" The shared scale ends at ±{figure(limit)}, the largest cell mean of all pairs; in these panels single "
            f"documents are pushed from {figure(low)} to {signed(high)}, the pushes beyond it at full colour.")


def _is_pair(record: Mapping[str, Any]) -> bool:
    return len(record["features"]) == 2


def _bins(record: Mapping[str, Any]) -> str:
    """The effect's bins per feature ("4 × 6" for a pair): one more than its cuts."""
    cuts = record["cuts"] if _is_pair(record) else [record["cuts"]]
    return " × ".join(str(len(c) + 1) for c in cuts)


def _count(metrics: Mapping[str, float | None], name: str) -> int:
    return int(metrics.get(name) or 0)


def _number(value: Any) -> float:
    """A stored number, NaN where evidence.json holds null (not finite)."""
    return math.nan if value is None else float(value)


def key_figures(result: Result) -> list[KeyFigure]:
    return [KeyFigure(60, "Surrogate fidelity (Kendall tau with the model's rankings)",
                      "surrogate.fidelity.kendall.mean", "1 = the surrogate orders documents as the model does")]


def limitations(metrics: Mapping[str, float], dataset: Mapping[str, float]) -> list[str]:
    if "surrogate.fidelity.kendall.mean" not in metrics:
        return []
    drawn = metrics.get("surrogate.fidelity.drawn.kendall.mean")
    every = (metrics.get("surrogate.fidelity.drawn.effects") or 0) >= (metrics.get("surrogate.n_main_effects") or 0) + \
        (metrics.get("surrogate.n_interactions") or 0)
    held = ("" if drawn is None or not math.isfinite(drawn) or every else
            f"; the {counted(int(metrics.get('surrogate.fidelity.drawn.effects') or 0), 'effect')} drawn, read "
            f"alone, reach a tau of {figure(drawn)}")
    return [f"The interpretable surrogate ranks like the model with Kendall's tau "
            f"{figure(metrics['surrogate.fidelity.kendall.mean'])} on held-out queries: its effect curves describe "
            f"the model only as far as that agreement goes{held}."]
