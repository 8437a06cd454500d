"""Evidence `dataset` (always present): facts about the audited data as metrics, so rules can address `dataset.*`
(documents, queries, degenerate queries, the query sample), and the per-feature distributions a later run's
"since last review" section compares — measured only: metrics, records, detections and the facts no metric holds
(the reader's notes, the sample's strata); `present.py` says what they mean."""

from __future__ import annotations

import numpy as np

from auditor.core.numbers import percent
from auditor.evidence.base import AuditContext, EvidenceResult
from auditor.evidence.kinds.dataset.options import DatasetOptions

DEGENERATE_SHARE = 0.3  # share of degenerate queries beyond which the data is reported as a weakness
UNORDERED_SHARE = 0.5  # share of queries the model leaves without any order beyond which nothing it ranks is audited
CITATION = "EU AI Act (Reg. 2024/1689) Art. 10(3) — data sets relevant and sufficiently representative"


def run(ctx: AuditContext, options: DatasetOptions) -> EvidenceResult:
    from auditor.checks.distribution import feature_distributions

    data = ctx.data
    result = EvidenceResult(name="dataset", metrics=data.summary(),
                            records=feature_distributions(data.X, data.feature_names))
    result.facts["reader_notes"] = list(data.notes)  # what reading the data did to it, as the reader said it
    if data.sample is not None:  # how each stratum of the file's queries was sampled
        result.facts["strata"] = [dict(s) for s in data.sample.strata]
    metrics = result.metrics
    if metrics.get("dataset.all_zero_label_queries_share", 0.0) > DEGENERATE_SHARE:
        share = metrics["dataset.all_zero_label_queries_share"]
        result.detect("queries-without-relevant-documents", "Many audited queries have no relevant document",
                      f"{percent(share)} of the queries ({int(metrics['dataset.all_zero_label_queries'])}) have only "
                      "zero relevance labels: their ranking quality is set by convention, not measured.",
                      severity="minor", citation=CITATION, judged_by=("dataset.all_zero_label_queries_share",),
                      value=share)
    if metrics.get("dataset.single_label_queries_share", 0.0) > UNORDERED_SHARE:
        share, count = metrics["dataset.single_label_queries_share"], int(metrics["dataset.single_label_queries"])
        result.detect("labels-without-order", "The relevance labels do not tell a better ranking from a worse one",
                      f"In {percent(share)} of the queries with several documents ({count}) every document has the "
                      "same relevance label: any order of them is ideal, so nDCG and MAP "
                      "there are 1 or set by convention whatever the model does, and the ranking-quality figures "
                      "measure almost nothing.", severity="critical",
                      citation="EU AI Act (Reg. 2024/1689) Art. 15(1) — an appropriate level of accuracy",
                      judged_by=("dataset.single_label_queries_share",), value=share)
    if metrics["dataset.single_doc_queries_share"] > DEGENERATE_SHARE:
        share = metrics["dataset.single_doc_queries_share"]
        result.detect("single-document-queries", "Many audited queries hold a single document",
                      f"{percent(share)} of the queries ({int(metrics['dataset.single_doc_queries'])}) have one "
                      "document: they have no ranking and are left out of every within-query measure.",
                      severity="minor",
                      citation=CITATION, judged_by=("dataset.single_doc_queries_share",), value=share)
    return result


def add_score_facts(result: EvidenceResult, ctx: AuditContext) -> None:
    """How much order the model's scores give (added once the evidence items ran, so the scores are the ones they
    computed): a query whose documents all score alike has no ranking, and a model that leaves most queries so is
    degenerate whatever its nDCG (tie-aware, nDCG is then the random-order baseline). Multi-document queries only."""
    from auditor.checks.ranking import tied_share

    data, scores = ctx.data, ctx.scores()
    sizes = data.query_sizes()
    multi = [i for i in range(data.n_queries) if sizes[i] > 1]
    unordered = sum(1 for i in multi if np.ptp(scores[data.query_slice(i)]) == 0)
    share = unordered / len(multi) if multi else 0.0
    facts = result.metrics
    facts["dataset.tied_score_queries"] = float(unordered)
    facts["dataset.tied_score_queries_share"] = share
    facts["dataset.tied_docs_share"] = float(np.mean([tied_share(scores[data.query_slice(i)]) for i in multi])
                                             if multi else 0.0)
    if share > DEGENERATE_SHARE:
        result.detect("rankings-without-order",
                      "The model gives every document the same score in most queries" if share > UNORDERED_SHARE
                      else "The model gives every document the same score in many queries",
                      f"In {unordered} of {len(multi)} queries with several documents ({percent(share)}) every "
                      "document gets the same score: the model puts them in no order, so its rankings there are "
                      "decided by "
                      "whatever breaks the tie downstream, not by the model, and no figure of this report describes "
                      "them.", severity="critical" if share > UNORDERED_SHARE else "major",
                      citation="EU AI Act (Reg. 2024/1689) Art. 15(1) — an appropriate level of accuracy",
                      judged_by=("dataset.tied_score_queries_share",), value=share)
