"""Evidence `ranking_quality`: how well the model ranks, per query, against the relevance labels — measured only:
numbers, per-query records and the groups' facts; `present.py` says what they mean."""

from __future__ import annotations

import numpy as np

from auditor.checks.estimate import estimate
from auditor.checks.group_accuracy import group_accuracy, pair_counts
from auditor.checks.ranking import per_query_ap, per_query_ndcg
from auditor.core.errors import InputError
from auditor.core.feature_names import metric_name
from auditor.core.metric_names import spelled
from auditor.core.numbers import stored
from auditor.evidence.base import AuditContext, EvidenceResult
from auditor.evidence.kinds.ranking_quality.options import RankingQualityOptions
from auditor.inputs.data import RankingData


def check(options: RankingQualityOptions, data: RankingData) -> None:
    """The group columns are columns the data keeps beside the features."""
    for index, column in enumerate(options.groups or []):
        if column not in data.attributes:
            raise InputError(f"'{column}' is not an attribute column of the data", where=f"groups.{index}",
                             fix=f"add '{column}' to `dataset.attribute_columns`, or name one of "
                                 f"{', '.join(data.attributes) or '(none: the data keeps no attribute column)'}")


def run(ctx: AuditContext, options: RankingQualityOptions) -> EvidenceResult:
    data = ctx.data
    result = EvidenceResult(name="ranking_quality")
    if data.y is None:
        result.status = "error"
        result.error = "the dataset has no relevance labels, so ranking quality cannot be measured"
        return result
    scores = ctx.scores()
    ndcg = per_query_ndcg(scores, data.y, data.query_ptr, options.cutoffs, gain=options.gain,
                          all_zero=options.all_zero_queries)
    ap = per_query_ap(scores, data.y, data.query_ptr, relevant_from=options.relevant_from)
    sizes = data.query_sizes()
    single = sizes < 2  # one document cannot be misranked: its perfect 1.0 would only flatter the mean
    ndcg[single] = np.nan
    ap[single] = np.nan
    rng = ctx.rng("ranking_quality")
    for j, k in enumerate(options.cutoffs):
        _summarise(result.metrics, f"ranking_quality.ndcg@{k}", ndcg[:, j], rng, options.low_threshold)
    _summarise(result.metrics, "ranking_quality.map", ap, rng, options.low_threshold)
    relevant = np.array([int(np.sum(data.y[data.query_slice(i)] >= 1)) for i in range(data.n_queries)])
    result.metrics["ranking_quality.queries"] = float(data.n_queries)
    result.metrics["ranking_quality.all_zero_label_queries"] = float(np.sum(relevant == 0))
    result.metrics["ranking_quality.single_doc_queries"] = float(np.sum(sizes == 1))
    result.records = [
        {"query": data.query_ids[i], "docs": int(sizes[i]), "relevant": int(relevant[i]),
         **{f"ndcg@{k}": stored(ndcg[i, j]) for j, k in enumerate(options.cutoffs)}, "ap": stored(ap[i])}
        for i in range(data.n_queries)
    ]
    for j, k in enumerate(options.cutoffs):  # per-query values for per-query policy rules
        result.per_query[f"ranking_quality.ndcg@{k}"] = {data.query_ids[i]: stored(ndcg[i, j])
                                                         for i in range(data.n_queries) if not single[i]}
    _by_group(result, ctx, options, scores)
    return result


def _by_group(result: EvidenceResult, ctx: AuditContext, options: RankingQualityOptions, scores: np.ndarray) -> None:
    """Accuracy for each group of persons the data record (AI Act Annex IV point 3): pairwise accuracy of the pairs
    a group's document should lead, pooled over queries, with the gap between the best and the worst group."""
    data = ctx.data
    columns = list(data.attributes) if options.groups is None else list(options.groups)
    if not columns or data.y is None:
        result.unmeasured["ranking_quality.group.gap"] = (
            "accuracy by group of persons needs the groups' columns (e.g. sex, age band) beside the data "
            "(`dataset.attribute_columns`), which this audit's data do not keep" if options.groups is None else
            "the spec asks for no accuracy by group of persons (`ranking_quality.groups`)")
        return
    unknown = {None if v is None else v.strip().casefold() for v in options.unknown_values}
    rng = ctx.rng("ranking_quality.groups")
    facts: list[dict[str, object]] = []
    gaps: list[tuple[float, float, float, str]] = []
    for column in columns:
        cells: list[str | None] = [None if v is None else str(v) for v in data.attributes[column]]
        groups = ["missing" if v is None else v for v in cells]  # a group read as its label
        kept = [(None if v is None else v.strip().casefold()) not in unknown for v in cells]
        values = sorted({g for g, keep in zip(groups, kept, strict=True) if keep})
        index = {value: i for i, value in enumerate(values)}
        codes = np.array([index[g] if keep else -1 for g, keep in zip(groups, kept, strict=True)], dtype=np.int64)
        correct, pairs = pair_counts(scores, data.y, data.query_ptr, codes, len(values))
        sizes = np.bincount(codes[codes >= 0], minlength=len(values))
        large = sizes >= options.group_min_share * max(int(sizes.sum()), 1)
        found = group_accuracy(correct, pairs, rng, min_pairs=options.group_min_pairs, large=large)
        segments: dict[str, str] = {}
        for value in values:
            segment = metric_name(str(value))
            segments[value] = segment if segment not in segments.values() else ""
        key = f"ranking_quality.group.{metric_name(column)}"
        column_facts: dict[str, object] = {"column": column, "groups": []}
        for g, value in enumerate(values):
            measured = bool(np.isfinite(found.accuracy[g]))
            if measured and segments[value]:
                result.metrics.update(spelled(f"{key}.{segments[value]}.pairwise_accuracy", found.accuracy[g],
                                              found.low[g], found.high[g]))
            column_facts["groups"].append(  # type: ignore[attr-defined]
                {"group": value, "pairs": int(found.pairs[g]), "accuracy": stored(found.accuracy[g], 12),
                 "low": stored(found.low[g], 12), "high": stored(found.high[g], 12),
                 "left_out": None if measured else "share" if not large[g] else "pairs"})
        if np.isfinite(found.gap):
            result.metrics.update(spelled(f"{key}.gap", found.gap, found.gap_low, found.gap_high))
            gaps.append((found.gap, found.gap_low, found.gap_high, column))
            column_facts.update(gap=stored(found.gap, 12), gap_low=stored(found.gap_low, 12),
                                gap_high=stored(found.gap_high, 12))
        facts.append(column_facts)
    result.metrics["ranking_quality.group.columns"] = float(len(columns))
    if gaps:
        gap, low, high, _ = max(gaps)
        result.metrics.update(spelled("ranking_quality.group.gap", gap, low, high))
    result.facts["group_accuracy"] = facts


def _summarise(metrics: dict[str, float], name: str, values: np.ndarray, rng: np.random.Generator,
               low: float) -> None:
    found = estimate(values, rng)
    finite = found.values
    stats = {
        "std": finite.std(ddof=1) if len(finite) > 1 else np.nan,
        "min": finite.min() if len(finite) else np.nan,
        "p10": np.quantile(finite, 0.1) if len(finite) else np.nan,
        "median": np.median(finite) if len(finite) else np.nan,
        "max": finite.max() if len(finite) else np.nan,
        "share_low": float(np.mean(finite < low)) if len(finite) else np.nan,
        "queries": float(len(finite)),
    }
    metrics.update(found.metrics(name))
    for key, value in stats.items():
        metrics[f"{name}.{key}"] = float(value)
