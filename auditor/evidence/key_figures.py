"""What each built-in kind tells the report's first and last pages: the figures it offers the executive summary
(`EvidenceKind.key_figures`: which of its metrics a reader should remember, under what label, on what scale; the
summary prints them in `order`, most telling first, with their intervals and the applied rule's requirement) and
what Limitations must say about its figures (`EvidenceKind.limitations`). The report names no kind itself."""

from __future__ import annotations

import math
from collections.abc import Mapping

from auditor.core.numbers import figure, percent, with_interval
from auditor.core.words import counted
from auditor.evidence.document import EvidenceItem
from auditor.evidence.registry import KeyFigure

Result = EvidenceItem  # a kind's result as evidence.json holds it (metrics, records, ...)


def _metrics(result: Result) -> Mapping[str, float | None]:
    return result.metrics


def ranking_quality(result: Result) -> list[KeyFigure]:
    quality = _metrics(result)
    cutoffs = sorted(int(k.split("@")[1].split(".")[0]) for k in quality if k.startswith("ranking_quality.ndcg@")
                     and k.endswith(".mean"))
    if not cutoffs:
        return []
    figures = [KeyFigure(10, f"Ranking quality: mean nDCG@{cutoffs[-1]}", f"ranking_quality.ndcg@{cutoffs[-1]}.mean",
                         "1 = every query in its ideal order")]
    if quality.get("ranking_quality.group.gap") is not None:  # where the data keep groups of persons
        figures.append(KeyFigure(11, "Accuracy gap between the best- and the worst-served group (pairwise accuracy)",
                                 "ranking_quality.group.gap", _widest_gap(result)
                                 + "0 = every group's pairs ordered as well"))
    return figures


def _widest_gap(result: Result) -> str:
    """Between which groups the widest accuracy gap lies, from the groups' table ("race: Asian 0.831 against Black
    0.686; "), or "" when the table does not say."""
    table = next((t for t in result.tables if t.title.startswith("Accuracy by group of persons")), None)
    if table is None:
        return ""
    by_column: dict[str, dict[str, float]] = {}
    for column, group, _, accuracy, *_ in table.rows:
        if isinstance(accuracy, (int, float)) and math.isfinite(accuracy):
            by_column.setdefault(str(column), {})[str(group)] = float(accuracy)
    spans = [(max(a.values()) - min(a.values()), column, a) for column, a in by_column.items() if len(a) >= 2]
    if not spans:
        return ""
    _, column, accuracy = max(spans)
    best, worst = max(accuracy, key=accuracy.__getitem__), min(accuracy, key=accuracy.__getitem__)
    return f"{column}: {best} {figure(accuracy[best])} against {worst} {figure(accuracy[worst])}; "


MAIN_NAMED = 6  # main parameters page 2 names one by one; more are the three largest "and N more"


def global_importance(result: Result) -> list[KeyFigure]:
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


def local_explanations(result: Result) -> list[KeyFigure]:
    local = _metrics(result)
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


def parameter_influence(result: Result) -> list[KeyFigure]:
    """The figure the packs judge (issue 56: a key figure is what its rule judges): the share of queries whose top
    results change when the sensitive parameter that changes most of them is masked."""
    influence = _metrics(result)
    shares = sorted((k for k in influence if k.endswith(".topk_changed_share") and not k.startswith("influence.max.")
                     and influence[k] is not None), key=lambda k: -(influence[k] or 0.0))
    if not shares or influence.get("influence.max.topk_changed_share") is None:
        return []
    feature = shares[0].removeprefix("influence.").removesuffix(".topk_changed_share")
    others = f"; the largest of {counted(len(shares), 'sensitive parameter')}" if len(shares) > 1 else ""
    return [KeyFigure(40, f"Share of queries whose top results change when '{feature}' is masked",
                      "influence.max.topk_changed_share", "0 = no query's top results change" + others, share=True)]


def exposure(result: Result) -> list[KeyFigure]:
    if _metrics(result).get("exposure.own.ratio") is not None:
        return [KeyFigure(50, "Own products' attention ÷ what their relevance earns", "exposure.own.ratio",
                          "1 = attention in proportion to relevance")]
    return [KeyFigure(50, "Largest exposure ratio of a group (attention ÷ what its relevance earns)",
                      "exposure.max.ratio", "1 = attention in proportion to relevance")]


def selection_rates(result: Result) -> list[KeyFigure]:
    if _metrics(result).get("selection.min_ratio") is None:
        return []
    ratios = [r for r in result.records if isinstance(r, dict) and not r.get("excluded")
              and isinstance(r.get("impact_ratio"), (int, float))]
    lowest = min(ratios, key=lambda r: r["impact_ratio"]) if ratios else None
    who = f"the category: {lowest['category']} ({lowest.get('table', '')}); " if lowest is not None else ""
    # the category in the reference text, not the label: the history site follows a figure by its label
    return [KeyFigure(45, "Smallest impact ratio of a category (its scoring rate ÷ the highest category's)",
                      "selection.min_ratio", f"{who}1 = selected as often as the most favoured category; NYC LL144 "
                      "sets no level, 0.8 is the four-fifths rule of thumb")]


def surrogate(result: Result) -> list[KeyFigure]:
    return [KeyFigure(60, "Surrogate fidelity (Kendall tau with the model's rankings)",
                      "surrogate.fidelity.kendall.mean", "1 = the surrogate orders documents as the model does")]


def disclosure_consistency(result: Result) -> list[KeyFigure]:
    return [KeyFigure(70, "Declared vs measured order of main parameters (Kendall tau)", "disclosure.rank_correlation",
                      "1 = the declared order is the measured one")]


def confidence(result: Result) -> list[KeyFigure]:
    from auditor.core.metric_names import read

    metrics = _metrics(result)
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
        scale += (f"; {round(widened * below)} of {counted(below, 'attribution')} below the validity floor (a set "
                  "apart from the flagged) hold with a few more features (listed in the section)")
    return [KeyFigure(80, "Share of explanations flagged as low-confidence", "confidence.flagged_fraction", scale,
                      share=True)]


def quality_limitations(metrics: Mapping[str, float], dataset: Mapping[str, float]) -> list[str]:
    zero = int(dataset.get("dataset.all_zero_label_queries", 0))
    if zero <= 0:
        return []
    return [f"{counted(zero, 'query')} {'has' if zero == 1 else 'have'} no relevant document; "
            f"{'its' if zero == 1 else 'their'} nDCG is set by convention (see the ranking-quality note), not "
            "measured."]


def local_limitations(metrics: Mapping[str, float], dataset: Mapping[str, float]) -> list[str]:
    if "local.k" not in metrics:
        return []
    k, n_features = int(metrics["local.k"]), int(dataset["dataset.n_features"])
    if k > n_features / 2:
        return [f"Explanations name k = {k} of the {n_features} features, more than half: even random sets then "
                "reproduce much of a ranking, so validity figures say less than with a small k."]
    return [f"Explanations name k = {k} of {n_features} features; validity and completeness are measured at that size "
            "only (the effect-of-k curve shows other sizes where requested)."]


def selection_limitations(metrics: Mapping[str, float], dataset: Mapping[str, float]) -> list[str]:
    if "selection.individuals" not in metrics:
        return []
    out = ["Scoring rates count each document of a query as an individual: a person who applied to several postings "
           "counts once per posting, and the categories are those the data records (self-reported or inferred "
           "as its source says)."]
    excluded = int(metrics.get("selection.excluded", 0))
    if excluded:
        out.append(f"{counted(excluded, 'category')} under the minimum share of the data "
                   f"{'has' if excluded == 1 else 'have'} no impact ratio (the section names "
                   f"{'it' if excluded == 1 else 'them'}).")
    return out


def surrogate_limitations(metrics: Mapping[str, float], dataset: Mapping[str, float]) -> list[str]:
    if "surrogate.fidelity.kendall.mean" not in metrics:
        return []
    return [f"The interpretable surrogate ranks like the model with Kendall's tau "
            f"{figure(metrics['surrogate.fidelity.kendall.mean'])} on held-out queries: its effect curves describe "
            "the model only as far as that agreement goes."]
