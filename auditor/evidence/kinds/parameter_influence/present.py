"""What the documents say from the `parameter_influence` evidence as stored: its report section (the summary and the
table of each sensitive parameter's influence on positions), and the key figure it offers page 2. Reads the stored
item alone (metrics, facts), so a run renders again with this module's wording (`auditor render`)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from auditor.core.numbers import figure, held, interval, stored
from auditor.core.words import counted
from auditor.evidence.base import Section, Table
from auditor.evidence.document import EvidenceItem
from auditor.evidence.kinds.parameter_influence.options import ParameterInfluenceOptions
from auditor.evidence.registry import KeyFigure

Result = EvidenceItem  # the kind's result as evidence.json holds it (metrics, records, ...)
Metrics = Mapping[str, float | None]

HOW_TO_READ = (
    "For each sensitive parameter, every document is re-scored with that parameter changed while the other "
    "documents keep their scores, and its new position is counted. 'Positions worth' is how many places the "
    "document's actual value moves it compared with the parameter masked; 'gain low → high' is how many places "
    "a document climbs when the parameter goes from its lowest to its highest value (positive: the parameter "
    "pushes documents up; about zero: no effect). Intervals are 95% bootstrap intervals over queries."
)
SHOWN_VALUES = 6  # swept values the table names before "…"


def section(result: Result, options: ParameterInfluenceOptions) -> Section:
    metrics, facts = result.metrics, result.facts or {}
    parameters: list[dict[str, Any]] = list(facts.get("parameters", []))
    queries, measured = int(metrics.get("influence.queries") or 0), int(facts.get("measured_queries", 0))
    over = counted(measured, "query") + (f" ({counted(queries - measured, 'single-document query')} of the "
                                         f"{queries} left out: no order to change)" if measured < queries else "")
    rows = [_row(p, metrics) for p in parameters]
    table = Table(
        title="Influence of the sensitive parameters on positions",
        columns=["parameter", "values swept", "positions worth (mean |shift|)", "95% interval", "worst |shift|",
                 "gain low → high", "95% interval", "worst range", f"share of queries whose top-{options.top_k} "
                 "changes", "effect detected"],
        rows=rows,
        note=(f"{over}; masking: {facts.get('masking')}. 'Effect detected' when the interval of the gain excludes "
              "zero."))
    found = [r[0] for r in rows if r[-1] == "yes"]
    summary = (f"Measured {counted(len(parameters), 'sensitive parameter')} over {over}; "
               + (f"a directional effect on positions is detected for {', '.join(found)}." if found else
                  "no directional effect on positions is detected."))
    return Section(summary=summary, how_to_read=HOW_TO_READ, tables=[table])


def _row(parameter: dict[str, Any], metrics: Metrics) -> list[Any]:
    """A parameter's line: what masking it is worth and what sweeping it gains, with their intervals. The mean shift
    is a string, so the table prints the figure the detection quotes (a "positions" column is otherwise cut to one
    decimal: 0.7 beside "0.679 positions")."""
    key = str(parameter["metric"])
    shift, gain = (_estimate(metrics, f"{key}.{measure}") for measure in ("rank_shift", "sweep_gain"))
    low, high = metrics.get(f"{key}.sweep_gain.ci95_low"), metrics.get(f"{key}.sweep_gain.ci95_high")
    detected = low is not None and math.isfinite(low) and (low > 0 or (high is not None and high < 0))
    return [parameter["parameter"], _values_text(parameter["swept"]), figure(shift[0]), _interval(shift),
            int(_number(metrics.get(f"{key}.rank_shift.max"))), stored(gain[0]), _interval(gain),
            int(_number(metrics.get(f"{key}.sweep_range.max"))), stored(metrics.get(f"{key}.topk_changed_share")),
            "yes" if detected else "no"]


def _estimate(metrics: Metrics, name: str) -> tuple[float, float, float]:
    """A measure's mean and interval as stored, NaN where evidence.json holds null (not measured)."""
    return (_number(metrics.get(f"{name}.mean")), _number(metrics.get(f"{name}.ci95_low")),
            _number(metrics.get(f"{name}.ci95_high")))


def _number(value: Any) -> float:
    return math.nan if value is None else float(value)


def _interval(stat: tuple[float, float, float]) -> str:
    """The table's interval cell, as every interval of the report reads (`numbers.interval`), holding its value."""
    return interval(*held(*stat))


def _values_text(values: list[float]) -> str:
    shown = ", ".join(f"{v:g}" for v in values[:SHOWN_VALUES])
    return shown + (" …" if len(values) > SHOWN_VALUES else "")


def key_figures(result: Result) -> list[KeyFigure]:
    """The figure the packs judge (issue 56: a key figure is what its rule judges): the share of queries whose top
    results change when the sensitive parameter that changes most of them is masked."""
    influence = result.metrics
    shares = sorted((k for k in influence if k.endswith(".topk_changed_share") and not k.startswith("influence.max.")
                     and influence[k] is not None), key=lambda k: -(influence[k] or 0.0))
    if not shares or influence.get("influence.max.topk_changed_share") is None:
        return []
    feature = shares[0].removeprefix("influence.").removesuffix(".topk_changed_share")
    others = f"; the largest of {counted(len(shares), 'sensitive parameter')}" if len(shares) > 1 else ""
    shift, most = influence.get(f"influence.{feature}.rank_shift.mean"), influence.get(
        f"influence.{feature}.rank_shift.max")
    # how far documents move beside how often the top changes (a reader review, D10: 44.3% alone pictured paid
    # placement reshaping half the result pages, where a document moves 0.68 places on average)
    moved = (f"; a document moves {figure(shift)} places on average" + (f" (at most {figure(most)})" if most else "")
             if shift is not None else "")
    return [KeyFigure(40, f"Share of queries whose top results change when '{feature}' is masked",
                      "influence.max.topk_changed_share", "0 = no query's top results change" + moved + others,
                      share=True)]
