"""NYC Local Law 144's summary of results, as data for a page an employer can post (`--document ll144-summary`).

Read from evidence.json alone (the `selection_rates` item, the audit's facts, the data's description), in the order
6 RCNY §5-303 lists what is published: the date of the most recent bias audit; its summary of results — the source
and explanation of the data (historical or test data, and for test data why historical data was not used and how
the test data were generated and obtained, §5-302), the number of individuals of unknown category, and the number of
individuals, the scoring (or selection) rates and the impact ratios of every category (sex, race/ethnicity and
their intersections, §5-301), with the categories under 2% left out of the ratios and the auditor's reason —; and the
tool's distribution date. A fact the spec does not state is printed "not stated (field)" and listed at the top: such
a page is not ready to post. Categories must be the EEO-1 component 1 categories (§5-300): a run whose categories are
not is refused, naming the values and the declared table that maps them (`selection_rates.labels`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from auditor.checks.selection import published_category
from auditor.core.errors import InputError
from auditor.core.numbers import interval
from auditor.evidence.document import EvidenceDocument

KIND = "selection_rates"
COMPONENT_ORDER = ("sex", "race/ethnicity")
WHY_TEST = {
    "no_historical_data": "The tool has not been used before, by this employer or by others, so no historical "
                          "data of its use exist.",
    "insufficient_historical_data": "Too little historical data of the tool's use exist for a statistically "
                                    "significant bias audit.",
}


@dataclass
class Row:
    """One category of a table: its number of individuals, its rate and its impact ratio (None when excluded)."""

    category: str
    individuals: int
    rate: float | None
    ratio: float | None
    low: float | None
    high: float | None
    excluded: bool
    share: float | None
    metric: str | None

    @property
    def top(self) -> bool:
        """The most selected category: its ratio is 1 by definition, so it has no interval to show."""
        return self.ratio == 1.0

    @property
    def interval_text(self) -> str:
        """The impact ratio's 95% interval, widened to hold the ratio."""
        if self.ratio is None or self.low is None or self.high is None:
            return "not estimated"
        return interval(min(self.low, self.ratio), max(self.high, self.ratio))


@dataclass
class Breakdown:
    """One table of the summary: a component (sex, race/ethnicity) or their intersection."""

    title: str
    column: str
    rows: list[Row]
    unknown: int


@dataclass
class Ll144Summary:
    """What the page prints, in §5-303's order; `missing` names the facts the spec does not state."""

    employer: str
    tool: str
    audit_date: str
    auditor: str | None
    independence: str | None
    data_type: str | None
    why_test: str | None
    how_test: str | None
    frame: str | None
    window: str | None
    individuals: int
    queries: int
    rate_name: str
    selected_when: str
    top_name: str  # the category an impact ratio divides by
    median_score: float | None
    min_share: float
    tables: list[Breakdown]
    excluded: list[tuple[str, Row]]
    above_reference: list[tuple[str, Row, float]]  # excluded categories whose rate exceeds the table's reference
    distribution_date: str | None
    evidence_sha256: str = ""
    missing: list[str] = field(default_factory=list)


def summary_of(document: EvidenceDocument) -> Ll144Summary:
    """The summary of results from a run's evidence; InputError when the run holds no bias audit to summarise, or
    one whose categories are not the EEO-1 categories."""
    item = document.evidence.get(KIND)
    if item is None:
        raise InputError("the run has no `selection_rates` evidence, which the LL144 summary of results reports",
                         where="evidence", fix="add `- selection_rates: {categories: [sex, race_ethnicity]}` to the "
                                               "spec's evidence and run the audit again")
    if item.status != "ok":
        raise InputError(f"the run's `selection_rates` evidence did not complete ({item.status}: "
                         f"{(item.error or '')[:160]})", where="evidence.selection_rates",
                         fix="fix what the report's selection_rates section says and run the audit again")
    records = item.records
    components = {str(r["table"]): r for r in records if r.get("kind") == "component"}
    outside = [f"{value} ({table})" for table, r in components.items() for value in r.get("outside") or []]
    if outside:
        raise InputError("categories that are no EEO-1 component 1 category (6 RCNY §5-300): " + ", ".join(outside[:8])
                         + (f" and {len(outside) - 8} more" if len(outside) > 8 else ""), where="selection_rates",
                         fix="map each value to the EEO-1 category it stands for, or to unknown, under "
                             "`selection_rates.labels` (e.g. {race: {Black: Black or African American}}) and run "
                             "the audit again")
    metric = item.value
    audit, described = document.audit, (document.inputs.get("dataset") or {}).get("description") or {}
    cutoff = _option(document, "cutoff") or "median"
    k = _option(document, "k") or 10
    min_share = float(_option(document, "min_share") or 0.02)
    tables = _tables(records, components)
    test = described.get("test_data") or {}
    summary = Ll144Summary(
        employer=str(audit.get("organisation") or ""),
        tool=_tool(document),
        audit_date=str(document.run.get("evaluated_on") or ""),
        auditor=_text(audit.get("auditor")), independence=_text(audit.get("independence")),
        data_type=_text(described.get("data_type")), why_test=WHY_TEST.get(str(test.get("why"))),
        how_test=_text(test.get("how")), frame=_text(described.get("frame")), window=_text(described.get("window")),
        individuals=int(metric("selection.individuals") or 0), queries=int(metric("selection.queries") or 0),
        rate_name="scoring rate" if cutoff == "median" else "selection rate",
        selected_when=("the share of a category's individuals who score above the median score of the whole "
                       "sample" if cutoff == "median" else
                       f"the share of a category's individuals ranked among the first {k} of their job posting"),
        top_name="highest scoring category" if cutoff == "median" else "most selected category",
        median_score=metric("selection.median_score"), min_share=min_share, tables=tables,
        excluded=[(t.title, row) for t in tables for row in t.rows if row.excluded and row.individuals],
        above_reference=_above_reference(tables),
        distribution_date=_text(audit.get("distribution_date")))
    summary.missing = [name for name, value in (
        ("audit.auditor", summary.auditor), ("dataset.description.data_type", summary.data_type),
        ("dataset.description.frame", summary.frame), ("audit.distribution_date", summary.distribution_date))
        if value is None]
    return summary


def _spec(document: EvidenceDocument) -> dict[str, Any]:
    """The spec as the run recorded it (what it set, defaults left out)."""
    content = document.spec.get("content") if isinstance(document.spec, dict) else None
    return content if isinstance(content, dict) else {}


def _tool(document: EvidenceDocument) -> str:
    """The audited tool as its owner names it: the model's name and version."""
    model = _spec(document).get("model") or {}
    version = (document.inputs.get("model") or {}).get("version") or model.get("version")
    return " ".join(str(part) for part in (model.get("name"), version) if part) or "the tool"


def _above_reference(tables: list[Breakdown]) -> list[tuple[str, Row, float]]:
    """Excluded categories whose rate is above the highest included category's, with that rate: left out, they leave
    every impact ratio of their table higher than it would be with them as the reference (the summary says so)."""
    out = []
    for table in tables:
        included = [r.rate for r in table.rows if not r.excluded and r.rate is not None]
        if included:
            top = max(included)
            out += [(table.title, r, top) for r in table.rows if r.excluded and r.rate is not None and r.rate > top]
    return out


def _option(document: EvidenceDocument, name: str) -> Any:
    """An option of the run's `selection_rates` item as its spec set it (None: the default)."""
    for entry in _spec(document).get("evidence") or []:
        if isinstance(entry, dict) and isinstance(entry.get(KIND), dict):
            return entry[KIND].get(name)
    return None


def _text(value: Any) -> str | None:
    return str(value).strip() or None if value is not None else None


def _shown(table: str, category: str, components: dict[str, dict[str, Any]]) -> str:
    """A category as the summary prints it (`published_category`: DCWP's "(Not Hispanic or Latino)" on a race)."""
    return published_category(table, category, {column: r.get("component") for column, r in components.items()})


def _tables(records: list[dict[str, Any]], components: dict[str, dict[str, Any]]) -> list[Breakdown]:
    """The tables in the rules' order: sex, race/ethnicity, then their intersection."""
    unknown = {str(r["table"]): int(r["individuals"]) for r in records if r.get("kind") == "unknown"}
    columns: dict[str, list[Row]] = {}
    for r in records:
        if r.get("kind") == "category":
            columns.setdefault(str(r["table"]), []).append(Row(
                category=_shown(str(r["table"]), str(r["category"]), components), individuals=int(r["individuals"]),
                rate=r.get("rate"),
                ratio=r.get("impact_ratio"), low=r.get("ci95_low"), high=r.get("ci95_high"),
                excluded=bool(r.get("excluded")), share=r.get("share"), metric=r.get("metric")))

    def title(column: str) -> str:
        component = (components.get(column) or {}).get("component")
        if component is not None:
            return str(component).capitalize()
        parts = column.split(" × ")
        named = [str((components.get(p) or {}).get("component") or p) for p in parts]
        return "Intersectional: " + " × ".join(named) if len(parts) > 1 else column

    def order(column: str) -> tuple[int, str]:
        component = (components.get(column) or {}).get("component")
        return (COMPONENT_ORDER.index(component) if component in COMPONENT_ORDER else 2, column)

    return [Breakdown(title=title(column), column=column, rows=rows, unknown=unknown.get(column, 0))
            for column, rows in sorted(columns.items(), key=lambda item: order(item[0]))]
