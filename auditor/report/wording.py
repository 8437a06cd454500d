"""What a rule measured, as a sentence a compliance officer reads without the metric's key: "1 main ranking
parameter (sales_rank_log) orders the results but is not declared" instead of "disclosure.undeclared_main = 1".
The key stays beside it in small type for the technical reader (the findings' cards); a metric this table does not
know (an organisation's own pack) reads "<rule title>: measured <value>".

Each phrase takes the value already formatted by `auditor.core.numbers`, so the sentence and the section print the same
figure the same way.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, Any

from auditor.core.numbers import figure, percent, points, with_interval
from auditor.core.words import counted

if TYPE_CHECKING:
    from auditor.evidence.registry import EvidenceKind

Phrase = Callable[[float, str], str]  # (value, value as printed with its interval) → sentence


def _yes(stated: str, missing: str) -> Phrase:
    return lambda v, _: stated if v >= 1 else missing


PHRASES: dict[str, Phrase] = {
    "disclosure.undeclared_main": lambda v, _: (
        f"{counted(int(v), 'influential ranking parameter')} {'orders' if int(v) == 1 else 'order'} the results "
        f"but {'is' if int(v) == 1 else 'are'} not declared" if v else "every influential ranking parameter is "
                                                                      "declared"),
    "disclosure.undeclared_in_main": lambda v, _: (
        f"{counted(int(v), 'main ranking parameter')} {'is' if int(v) == 1 else 'are'} not declared, influential "
        "or not" if v else "every main ranking parameter is declared"),
    "disclosure.undeclared_share": lambda v, s: f"features the declaration does not name carry {s} of what orders "
                                                "documents within a query",
    "disclosure.rank_correlation": lambda v, s: f"the declared order of the main parameters against the measured "
                                                f"order: Kendall tau {s} (1 = the same order, 0 = unrelated, "
                                                "−1 = reversed)",
    "disclosure.per_query.rank_correlation.mean": lambda v, s: f"query by query, the declared order against the "
                                                               f"measured one: mean Kendall tau {s}",
    "disclosure.stability.main_set_overlap.mean": lambda v, s: f"resampling the queries, the measured main parameters "
                                                               f"stay the same set with mean overlap {s} — 1 means "
                                                               "always the same",
    "disclosure.stability.weighted_kendall.mean": lambda v, s: f"resampling the queries, the measured order of the "
                                                               f"parameters keeps a weighted Kendall tau of {s}",
    "disclosure.statement.false_claims": lambda v, _: (
        f"{counted(int(v), 'claim')} of the published ranking statement {'is' if int(v) == 1 else 'are'} contradicted "
        "by the measurement" if v else "every claim of the published ranking statement that could be checked holds "
        "or is within the measurement's uncertainty"),
    "global_importance.main_parameters": lambda v, _: f"{counted(int(v), 'feature')} carry 80% of what orders "
                                                      "documents within a query",
    "global_importance.top1_share": lambda v, s: f"the most important feature carries {s} of what orders documents "
                                                 "within a query",
    "global_importance.additivity.max_abs_error": lambda v, s: f"the attributions add up to the model's scores "
                                                               f"within {s} (largest error over documents)",
    "influence.max.topk_changed_share": lambda v, s: f"masking the most influential sensitive parameter changes "
                                                     f"which documents make the top results in {s} of queries",
    "influence.max.rank_shift.mean": lambda v, s: f"a document owes on average {s} positions to the most "
                                                  "influential sensitive parameter",
    "exposure.own.counterfactual.share_change": lambda v, s: f"own products' share of attention is {s} against the "
                                                             "share they would get if the own-product flag were set "
                                                             "alike for every document",
    "exposure.own.ratio": lambda v, s: f"own products get {s} times the attention their relevance earns — 1 means in "
                                       "proportion",
    "exposure.own.disparate_treatment": lambda v, s: f"own products' attention per unit of relevance is {s} times "
                                                     "that of the other products",
    "exposure.max.ratio": lambda v, s: f"the most favoured group gets {s} times the attention its relevance earns",
    "exposure.min.ratio": lambda v, s: f"the least favoured group gets {s} times the attention its relevance earns",
    "ranking_quality.ndcg@10.mean": lambda v, s: f"the mean nDCG@10 over queries is {s} — 1 means every query ideally "
                                                 "ordered",
    "ranking_quality.group.gap": lambda v, s: f"the best- and the worst-served group's pairwise accuracy differ "
                                              f"by {s} — 0 means every group's pairs are ordered alike",
    "ranking_quality.ndcg@10": lambda v, s: f"nDCG@10 over all queries is {s} — 1 means every query ideally ordered",
    "ranking_quality.ndcg@10.ci95_low": lambda v, s: f"the lower end of nDCG@10's 95% interval is {s}",
    "surrogate.fidelity.kendall.mean": lambda v, s: f"the interpretable surrogate orders documents like the model "
                                                    f"with mean Kendall tau {s} — 1 means the same order",
    "surrogate.decomposition.max_abs_error": lambda v, s: f"the surrogate's effects add up to its scores within {s}",
    "local.validity_search.validity.mean": lambda v, s: f"the best explanations (valid-explanation search) have "
                                                        f"mean validity {s} — 1 means the explanation alone keeps the "
                                                        "ranking",
    "local.validity_search.validity": lambda v, s: f"the best explanations (valid-explanation search) have validity "
                                                   f"{s} — 1 means the explanation alone keeps the ranking",
    "confidence.flagged_fraction": lambda v, s: f"{s} of explanations are flagged as low-confidence",
    "confidence.validation.validity_gap": lambda v, s: f"flagged explanations' validity differs from unflagged ones' "
                                                       f"by {s}",
    "dataset.n_queries": lambda v, _: f"the audited data has {counted(int(v), 'query')}",
    "dataset.all_zero_label_queries_share": lambda v, s: f"{s} of queries have no relevant document",
    "dataset.single_doc_queries_share": lambda v, s: f"{s} of queries have a single document",
    "dataset.tied_score_queries_share": lambda v, s: f"the model gives every document the same score in {s} of "
                                                     "queries",
    "governance.signed": _yes("the report is signed", "the report is not signed"),
    "governance.owner_stated": _yes("the model owner is stated", "the model owner is not stated"),
    "governance.period_stated": _yes("the period under review is stated", "the period under review is not stated"),
    "governance.purpose_stated": _yes("the purpose is stated", "the purpose is not stated"),
    "governance.intended_use_stated": _yes("the intended use is stated", "the intended use is not stated"),
    "governance.baseline_present": _yes("the audit is compared with a previous review",
                                        "no previous review is named to compare with"),
    "governance.limitations_recorded": lambda v, _: (f"{counted(int(v), 'limitation')} recorded by the owner"
                                                     if v else "no limitation is recorded by the owner"),
    "governance.distribution_date_stated": _yes("the tool's distribution date is stated",
                                                "the tool's distribution date is not stated"),
    "governance.days_audit_to_distribution": lambda v, _: (
        f"the tool is distributed {counted(int(v), 'day')} after this audit" if v >= 0 else
        f"the tool was distributed {counted(int(-v), 'day')} before this audit"),
    "governance.data_source_stated": _yes("the source of the audit's data is described",
                                          "the source of the audit's data is not described"),
    "governance.data_type_stated": _yes("whether the data are historical or test data is stated",
                                        "whether the data are historical or test data is not stated"),
    "selection.eeo1_components": lambda v, _: (f"{counted(int(v), 'EEO-1 component')} (sex, race/ethnicity) "
                                               f"{'is' if int(v) == 1 else 'are'} among the category columns"),
    "selection.non_eeo1": lambda v, _: (f"{counted(int(v), 'category value')} "
                                        f"{'is' if int(v) == 1 else 'are'} no EEO-1 component 1 category"
                                        if v else "every category is an EEO-1 component 1 category"),
    "selection.min_ratio": lambda v, s: f"the least selected category's scoring rate is {s} times the most selected "
                                        "category's — 1 means as often",
    "selection.columns": lambda v, _: (f"{counted(int(v), 'category column')} (sex, race/ethnicity) "
                                       f"{'is' if int(v) == 1 else 'are'} reported"),
    "selection.intersections": _yes("the intersectional categories are reported",
                                    "the intersectional categories are not reported"),
    "selection.reported": lambda v, _: f"{counted(int(v), 'category', 'categories')} have an impact ratio",
    "selection.unknown_reported": _yes("the number of individuals of unknown category is reported",
                                       "the number of individuals of unknown category is not reported"),
    "governance.retention_years": lambda v, _: (f"evidence is kept for {counted(int(v), 'year')}" if v else
                                                "no retention period is stated"),
}
PER_QUERY_NAMES = {  # a per-query value's name in a sentence ("80.0% of queries have an nDCG@10 >= 0.5")
    "ranking_quality.ndcg@10": "an nDCG@10",
    "local.validity_search.validity": "explanations (valid-explanation search) of validity",
    "disclosure.per_query.rank_correlation": "a Kendall tau between the declared and the measured order",
}
DATASET_FACTS = {  # the Scope's dataset facts in words (a fact not listed shows its key)
    "dataset.n_queries": "queries",
    "dataset.n_docs": "documents",
    "dataset.n_features": "features",
    "dataset.docs_per_query.min": "fewest documents in a query",
    "dataset.docs_per_query.mean": "documents per query (mean)",
    "dataset.docs_per_query.max": "most documents in a query",
    "dataset.missing_values": "missing values",
    "dataset.all_zero_label_queries": "queries with no relevant document",
    "dataset.all_zero_label_queries_share": "queries with no relevant document (share of all)",
    "dataset.single_doc_queries": "queries with one document",
    "dataset.single_doc_queries_share": "queries with one document (share of all)",
    "dataset.single_label_queries": "queries of 2+ documents all with one label",
    "dataset.single_label_queries_share": "queries all with one label (share of those of 2+ documents)",
    "dataset.tied_score_queries": "queries of 2+ documents all scored alike",
    "dataset.tied_score_queries_share": "queries all scored alike (share of those of 2+ documents)",
    "dataset.tied_docs_share": "share of a query's documents scored like another (mean)",
    "dataset.population.n_queries": "queries in the whole dataset (before sampling)",
    "dataset.population.n_docs": "documents in the whole dataset (before sampling)",
}
SHARES = re.compile(r"(share|fraction)$|_share\b")
PERCENTAGE_POINTS = {"exposure.own.counterfactual.share_change"}


def is_share(metric: str, value: float) -> bool:
    """Whether `metric` is a share, printed in % wherever it appears (named `…share`, `…fraction`, `…_share…`)."""
    return bool(SHARES.search(metric.removesuffix(".mean"))) and 0 <= value <= 1


def requirement_text(requirement: str, metric: str, value: float | None) -> str:
    """A rule's requirement in its measured value's unit: "WARN if > 30.0%" beside 1.2%, not "> 0.3" (issue 56)."""
    if value is None or not math.isfinite(value):
        return requirement
    if metric in PERCENTAGE_POINTS:  # "+10.7 pp … WARN if > 1.0 pp", not "> 0.01"
        return re.sub(r"(?<=[<>=] )(-?\d+(?:\.\d+)?)\b", lambda m: points(float(m.group(1))), requirement)
    return thresholds_in_percent(requirement) if is_share(metric, value) else requirement


def thresholds_in_percent(requirement: str) -> str:
    """"WARN if > 0.35" as "WARN if > 35.0%"."""
    return re.sub(r"(?<=[<>=] )(\d+(?:\.\d+)?)\b", lambda m: percent(float(m.group(1))), requirement)


def value_text(metric: str, value: float, interval: tuple[float, float] | None) -> str:
    """The value with its interval in the document's one style: a share in %, a change of share in pp."""
    if metric in PERCENTAGE_POINTS:
        return points(value) + (f" (95% interval {points(interval[0])} to {points(interval[1])})" if interval else "")
    low, high = interval if interval else (None, None)
    return with_interval(value, low, high, share=is_share(metric, value))


def measured_sentence(finding: Any, *, with_interval: bool = True) -> str:
    """The finding's measured value as a sentence (capitalised, no full stop); its message when it judged no
    value (evidence present, not requested, failed, not applicable). Without its interval: `fact`."""
    if finding.value is None:
        return _without_value(finding)
    interval = finding.interval if with_interval else None
    if finding.requirement.startswith("share of queries"):
        condition = finding.requirement.split(":", 1)[0].removeprefix("share of queries with value").strip()
        name = PER_QUERY_NAMES.get(finding.metric, "the measured value")
        text = f"{percent(finding.value)} of queries have {name} {condition}"
        if interval:
            text += f" (95% interval {percent(interval[0])} to {percent(interval[1])})"
        return _capital(text)
    phrase = PHRASES.get(finding.metric)
    shown = value_text(finding.metric, finding.value, interval)
    if phrase is None:
        return f"{finding.title.rstrip('.')}: measured {shown}"
    return _capital(phrase(finding.value, shown))


def fact(finding: Any) -> str:
    """What a verdict found, as the title of its finding (issue 56: facts first, the requirement after): the
    measured value in its rule's words, without the interval (the card gives it); the requirement's own title when
    the rule judged no value or is a pack's own whose metric has no words here."""
    worded = finding.metric in PHRASES or finding.requirement.startswith("share of queries")
    return measured_sentence(finding, with_interval=False) if finding.value is not None and worded else finding.title


def _without_value(finding: Any) -> str:
    """A verdict on no value, in words: the evidence was not requested, does not apply, failed or is present."""
    from auditor.evidence import REGISTRY

    plugins: dict[str, EvidenceKind] = REGISTRY  # typed here: the evidence package makes it on first use
    plugin = plugins.get(finding.evidence)
    name = plugin.title if plugin is not None else "the evidence it needs"
    message = finding.message
    if "was not requested" in message:
        return f"{name}, which this requirement needs, was not requested in the spec"
    if "does not apply" in message:
        return f"{name}, which this requirement needs, does not apply to this audit"
    if finding.status == "ERROR":
        return f"It could not be judged: {name} gave no value to judge"
    if finding.status == "PASS":
        return f"{name} is present"
    return _capital(message)


def technical(finding: Any) -> str:
    """The same measurement for the technical reader: `metric = value` and the rule's requirement; the verdict's
    own message when it judged no value."""
    if finding.value is None:
        return finding.message
    return f"{finding.metric} = {figure(finding.value, 4)}; {finding.requirement}"


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def remedy_for(remedy: str, ran: set[str], kinds: Collection[str]) -> str:
    """A rule's remedy as this audit can follow it (issue 56: only what ran): the evidence kinds it names (`kind`)
    that this audit did not run are said so, with where to add them."""
    missing = [kind for kind in kinds if kind not in ran and f"`{kind}`" in remedy]
    if not missing:
        return remedy
    listed = " and ".join(f"`{kind}`" for kind in missing)
    them = "it" if len(missing) == 1 else "them"
    return f"{remedy.rstrip()} This audit did not run {listed}: add {them} to the spec's evidence to use {them}."
