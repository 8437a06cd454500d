"""The `dataset` evidence kind's spec options and the metrics it can emit (the spec loads this)."""

from __future__ import annotations

from auditor.evidence.options import EvidenceOptions

METRICS = (  # what this kind can emit (EvidenceKind.metrics; auditor.evidence.registry.metric_pattern)
    "dataset.{n_queries|n_docs|n_features|single_doc_queries|single_doc_queries_share|missing_values"
    "|all_zero_label_queries|all_zero_label_queries_share|single_label_queries|single_label_queries_share"
    "|sample_share|tied_score_queries|tied_score_queries_share|tied_docs_share}",
    "dataset.docs_per_query.{min|mean|max}",
    "dataset.population.{n_queries|n_docs}",
)


class DatasetOptions(EvidenceOptions):
    """No options: the data is the spec's `dataset:`."""
