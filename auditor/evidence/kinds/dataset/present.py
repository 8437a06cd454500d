"""What the documents say from the `dataset` evidence as stored: its report section (the summary of documents,
queries and features, the table of the query sample by stratum, the data reader's notes). Reads the stored item alone
(metrics, facts), so a run renders again with this module's wording (`auditor render`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from auditor.evidence.base import Section, Table
from auditor.evidence.document import EvidenceItem
from auditor.evidence.kinds.dataset.options import DatasetOptions

Result = EvidenceItem  # the kind's result as evidence.json holds it (metrics, records, facts, ...)


def section(result: Result, options: DatasetOptions) -> Section:
    facts = result.facts or {}
    strata = facts.get("strata")
    notes = [str(note) for note in facts.get("reader_notes", [])]
    if strata is None:
        return Section(summary=_summary(result.metrics), how_to_read="", notes=notes)
    return Section(summary=_sampled_summary(result.metrics), how_to_read="", tables=[_strata_table(strata)],
                   notes=notes)


def _count(metrics: Mapping[str, float | None], name: str) -> int:
    """A count the data's metrics hold (stored as a float)."""
    return int(metrics.get(name) or 0)


def _summary(metrics: Mapping[str, float | None]) -> str:
    return (f"{_count(metrics, 'dataset.n_docs')} documents in {_count(metrics, 'dataset.n_queries')} queries, "
            f"{_count(metrics, 'dataset.n_features')} features.")


def _sampled_summary(metrics: Mapping[str, float | None]) -> str:
    """The summary of a stratified sample: what was audited against what the file holds."""
    docs, queries = _count(metrics, "dataset.n_docs"), _count(metrics, "dataset.n_queries")
    file_docs = _count(metrics, "dataset.population.n_docs")
    file_queries = _count(metrics, "dataset.population.n_queries")
    return (f"A stratified sample: {docs:,} documents in {queries:,} of the file's {file_queries:,} queries "
            f"({file_docs:,} documents), {_count(metrics, 'dataset.n_features')} features.")


def _strata_table(strata: list[dict[str, Any]]) -> Table:
    return Table(
        title="Query sample by stratum (query length × label mix)",
        columns=["stratum", "queries in the file", "sampled", "share sampled"],
        rows=[[s["stratum"], s["queries"], s["sampled"], round(s["sampled"] / max(s["queries"], 1), 4)]
              for s in strata],
        note="Proportional allocation (largest remainders), seeded by the spec's seed. Every query-level "
             "figure and interval in this report is estimated over the sampled queries.")
