"""The `dataset` evidence kind's registry entry (light: the spec imports it)."""

from __future__ import annotations

from auditor.evidence.kinds.dataset.options import METRICS, DatasetOptions
from auditor.evidence.registry import EvidenceKind

ENTRY = EvidenceKind("dataset", DatasetOptions, f"{__name__}.measure", "Dataset",
    "Data facts: documents, queries, features, degenerate queries, the query sample.",
    "auditor.evidence.costs:none", metrics=METRICS,
    phrases=f"{__name__}.phrases", section=f"{__name__}.present:section")
