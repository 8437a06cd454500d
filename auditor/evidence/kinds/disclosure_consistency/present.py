"""What the documents say from the `disclosure_consistency` evidence as stored: its report section (the summary, the
table of declared and measured main parameters, the agreement of the declared order with each measured order and
its stability, the claims of the published statement, the notes on where the order was measured), the key figures
it offers page 2. Reads the stored item alone: the counts, correlations and stability from its metrics, the
parameters the table lists from its records, and from its facts the surrogate it measured on (a model without
TreeSHAP) and the statement's claims as judged; so a run renders again with this module's wording
(`auditor render`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from auditor.core.numbers import figure, percent, stored
from auditor.core.words import counted
from auditor.evidence.base import Section, Table
from auditor.evidence.document import EvidenceItem
from auditor.evidence.kinds.disclosure_consistency.options import DisclosureConsistencyOptions
from auditor.evidence.registry import KeyFigure

Result = EvidenceItem  # the kind's result as evidence.json holds it (metrics, records, ...)

HOW_TO_READ = (
    "The declared list is what the business tells users about how results are ordered. The measured order is how "
    "much each feature moves documents within their query (TreeSHAP; for a model without it, its surrogate's). "
    "Kendall's tau compares the two orders over "
    "the declared parameters (1: same order, 0: unrelated, −1: reversed). An undeclared influential parameter is a "
    "main parameter, with at least the stated share of the importance, that the declaration leaves out. Stability "
    "re-measures the order on bootstrap samples of queries: a low value means the order itself is uncertain."
)
FINDING = {"undeclared": "UNDECLARED influential parameter", "declared_not_main": "declared, not a main parameter"}
SOURCES = ("within_query", "per_query", "surrogate")  # the measured orders the declared one is compared with


def section(result: Result, options: DisclosureConsistencyOptions) -> Section:
    metrics, facts = result.metrics, result.facts or {}
    statement: Mapping[str, Any] | None = facts.get("statement")
    tables = [_parameters_table(result, options), _agreement_table(metrics, options)]
    notes = _measured_on(metrics, facts.get("surrogate"))
    summary = _summary(result, options)
    if statement is not None:
        tables.append(_claims_table(statement))
        if not statement["claims"]:
            notes.append(f"The statement {statement['file']} carries no claim markers, so none of its sentences could "
                         "be checked: mark each claim as docs/disclose.md shows (`auditor disclose` drafts them).")
        summary += (f" The published statement makes {counted(_count(metrics, 'claims'), 'checkable claim')}: "
                    f"{_count(metrics, 'false_claims')} false, {_count(metrics, 'uncertain_claims')} uncertain, "
                    f"{_count(metrics, 'unchecked_claims')} not checked.")
    return Section(summary=summary, how_to_read=HOW_TO_READ, tables=tables, notes=notes)


def _count(metrics: Mapping[str, float | None], name: str, prefix: str = "disclosure.statement.") -> int:
    """A count the metrics hold (0 when absent)."""
    return int(metrics.get(f"{prefix}{name}") or 0)


def _undeclared_in_main(metrics: Mapping[str, float | None], options: DisclosureConsistencyOptions) -> str:
    """How the influential count sits among the main parameters: on wide data most main parameters may be
    undeclared while only a few carry the minimum share each (issue 56: "2 undeclared" beside 37 of 42)."""
    undeclared, in_main, main = (_count(metrics, name, "disclosure.")
                                 for name in ("undeclared_main", "undeclared_in_main", "main_parameters"))
    if not in_main:
        return "Every main parameter is declared."
    rest = in_main - undeclared
    return (f"{in_main} of the {main} main parameters are not declared"
            + (f": {undeclared} influential, the other {rest} each under {options.min_share:.0%}." if rest else
               ", each of them influential."))


def _parameters_table(result: Result, options: DisclosureConsistencyOptions) -> Table:
    return Table(
        title="Declared and measured main parameters",
        columns=["parameter", "declared rank", "measured rank", "share of within-query importance", "main parameter",
                 "finding"],
        rows=[[r["feature"], "—" if r["declared_rank"] is None else r["declared_rank"], r["measured_rank"], r["share"],
               "yes" if r["main"] else "no", FINDING.get(r["finding"] or "", "")] for r in result.records],
        note=(f"Main parameters: the fewest features reaching {options.share_for_main:.0%} of the within-query "
              f"importance; an undeclared one is an influential parameter, and counts, when its share is at least "
              f"{options.min_share:.0%}. " + _undeclared_in_main(result.metrics, options)))


def _agreement_table(metrics: Mapping[str, float | None], options: DisclosureConsistencyOptions) -> Table:
    sources = [s for s in SOURCES if f"disclosure.rank_correlation.{s}" in metrics]
    return Table(
        title="Agreement of the declared order with each measured order (Kendall's tau over declared parameters)",
        columns=["measured by", "tau"],
        rows=[[source.replace("_", " "), stored(metrics[f"disclosure.rank_correlation.{source}"])]
              for source in sources]
        + [["per query (mean over queries)", stored(metrics.get("disclosure.per_query.rank_correlation.mean"))]],
        note=(f"Stability over {options.resamples} bootstrap samples of queries: importance-weighted tau with the "
              f"full order {figure(metrics.get('disclosure.stability.weighted_kendall.mean'))} on average (plain tau "
              f"over all features {figure(metrics.get('disclosure.stability.kendall.mean'))}); a sample's main set "
              f"holds {percent(metrics.get('disclosure.stability.main_set_overlap.mean'))} of the importance of the "
              "full one's and is exactly the same in "
              f"{percent(metrics.get('disclosure.stability.main_set_agreement'))} of samples."))


def _claims_table(statement: Mapping[str, Any]) -> Table:
    claims: list[Mapping[str, Any]] = statement["claims"]
    return Table(
        title="Claims of the published statement",
        columns=["line", "claim", "measured", "status", "why"],
        rows=[[c["line"], c["claim"], c["measured"], c["status"].upper() if c["status"] == "false" else c["status"],
               c["why"]] for c in claims],
        note=(f"{statement['file']}: {counted(len(claims), 'claim')}. A claim holds when the 95% interval of its "
              "metric lies inside the band it states, is false when the interval lies wholly outside, uncertain "
              "otherwise; an order claim compares neighbours' intervals. Not checked: the evidence it rests on was not "
              "requested or did not measure that feature (docs/disclose.md)."))


def _measured_on(metrics: Mapping[str, float | None], surrogate: Mapping[str, Any] | None) -> list[str]:
    """Where the measured order comes from, when not the model's own TreeSHAP beside a surrogate's."""
    if surrogate is not None:
        return [f"This '{surrogate['model']}' model has no exact TreeSHAP, so the measured order is the surrogate's: "
                "its exact contributions per document (a pair effect's split evenly between its two features). The "
                f"surrogate orders documents like the model with mean Kendall tau {figure(surrogate['fidelity'])} (the "
                "interpretable surrogate: `surrogate`): read the order only as far as that agreement goes."]
    if "disclosure.rank_correlation.surrogate" not in metrics:
        return ["No surrogate importance: request the interpretable surrogate too (`surrogate`) to compare the "
                "declaration with the surrogate's effects."]
    return []


def _summary(result: Result, options: DisclosureConsistencyOptions) -> str:
    metrics = result.metrics
    flagged = [str(r["feature"]) for r in result.records if r["finding"] == "undeclared"]
    in_main, undeclared = _count(metrics, "undeclared_in_main", "disclosure."), len(flagged)
    return (f"Declared order vs measured: Kendall tau {figure(metrics.get('disclosure.rank_correlation'))}; "
            + (f"undeclared influential {'parameter' if undeclared == 1 else 'parameters'}: "
               f"{', '.join(flagged)}." if flagged else
               "every influential parameter is declared.")
            + (" " + _undeclared_in_main(metrics, options) if in_main > undeclared else ""))


def key_figures(result: Result) -> list[KeyFigure]:
    """The order's agreement, saying it is over the declared parameters only and naming the undeclared main ones it
    leaves out (a reader review: "0.905, met" beside a FAIL for the undeclared sales volume read as an all-clear)."""
    declared = [r for r in result.records if r.get("declared_rank") is not None]
    undeclared = [str(r["feature"]) for r in result.records if r.get("finding") == "undeclared"]
    over = (f"; over the {len(declared)} declared parameters only"
            + (f", leaving out the undeclared {', '.join(undeclared)}" if undeclared else "") if declared else "")
    return [KeyFigure(70, "Declared vs measured order of main parameters (Kendall tau)", "disclosure.rank_correlation",
                      "1 = the declared order is the measured one" + over)]
