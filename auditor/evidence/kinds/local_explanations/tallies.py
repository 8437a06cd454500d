"""What `local_explanations` gathers per block of queries before anything is measured from it: the tallies per
method and k, a block's records and diagnostics (the executor ships blocks back in query order)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

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


def used_explainers(methods: list[str]) -> dict[str, list[str]]:
    """{attribution explainer: its chosen methods}, in registry order."""
    return {e.name: methods_of(methods, e.name) for e in registry.attribution_explainers()
            if methods_of(methods, e.name)}
