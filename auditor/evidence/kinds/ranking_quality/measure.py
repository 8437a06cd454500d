"""Evidence `ranking_quality`: how well the model ranks, per query, against the relevance labels."""

from __future__ import annotations

import numpy as np

from auditor.checks.estimate import estimate
from auditor.checks.group_accuracy import group_accuracy, pair_counts
from auditor.checks.ranking import per_query_ap, per_query_ndcg
from auditor.core.errors import InputError
from auditor.core.feature_names import metric_name
from auditor.core.metric_names import spelled
from auditor.core.numbers import figure, interval, percent, stored
from auditor.core.words import counted
from auditor.evidence.base import AuditContext, EvidenceResult, Figure, Table
from auditor.evidence.kinds.ranking_quality.options import RankingQualityOptions
from auditor.inputs.data import RankingData

HOW_TO_READ = (
    "nDCG@k compares the model's top k documents of a query with the best possible order of the same documents "
    "(1 = the labelled best order, 0 = no relevant document in the top k). Each query counts once; the table gives "
    "the mean over queries with a 95% bootstrap interval, the spread, and the weakest queries. MAP is the mean, "
    "over queries, of the precision at each relevant document."
)



def check(options: RankingQualityOptions, data: RankingData) -> None:
    """The group columns are columns the data keeps beside the features."""
    for index, column in enumerate(options.groups or []):
        if column not in data.attributes:
            raise InputError(f"'{column}' is not an attribute column of the data", where=f"groups.{index}",
                             fix=f"add '{column}' to `dataset.attribute_columns`, or name one of "
                                 f"{', '.join(data.attributes) or '(none: the data keeps no attribute column)'}")


def run(ctx: AuditContext, options: RankingQualityOptions) -> EvidenceResult:
    data = ctx.data
    result = EvidenceResult(name="ranking_quality", how_to_read=HOW_TO_READ)
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
    rows = []
    for j, k in enumerate(options.cutoffs):
        rows.append(_summarise(result.metrics, f"ranking_quality.ndcg@{k}", ndcg[:, j], rng, options.low_threshold))
    rows.append(_summarise(result.metrics, "ranking_quality.map", ap, rng, options.low_threshold))
    all_zero = np.array([not np.any(data.y[data.query_slice(i)] >= 1) for i in range(data.n_queries)])
    result.metrics["ranking_quality.queries"] = float(data.n_queries)
    result.metrics["ranking_quality.all_zero_label_queries"] = float(all_zero.sum())
    result.metrics["ranking_quality.single_doc_queries"] = float(np.sum(sizes == 1))
    result.tables.append(Table(
        title="Ranking quality over queries",
        columns=["metric", "mean", "95% interval", "std", "min", "median", "max", f"share < {options.low_threshold:g}",
                 "queries"],
        rows=rows,
        note=(f"Gain {options.gain}; queries whose labels are all 0 ({int(all_zero.sum())}) count as "
              f"{ {'one': '1', 'zero': '0', 'skip': 'left out'}[options.all_zero_queries] } for nDCG and are left out "
              f"of MAP; {_single_note(int(single.sum()))}documents with tied scores share their positions (the "
              "expected value over their orders, so the file's order decides nothing)."),
    ))
    headline = max(options.cutoffs)
    col = options.cutoffs.index(headline)
    worst = np.argsort(np.nan_to_num(ndcg[:, col], nan=np.inf), kind="stable")[:10]
    result.tables.append(Table(
        title=f"Ten weakest queries by nDCG@{headline}",
        columns=["query", "documents", "relevant documents", f"nDCG@{headline}"],
        rows=[[data.query_ids[i], int(sizes[i]), int(np.sum(data.y[data.query_slice(i)] >= 1)),
               stored(ndcg[i, col])] for i in worst],
    ))
    result.records = [
        {"query": data.query_ids[i], "docs": int(sizes[i]),
         **{f"ndcg@{k}": stored(ndcg[i, j]) for j, k in enumerate(options.cutoffs)}, "ap": stored(ap[i])}
        for i in range(data.n_queries)
    ]
    for j, k in enumerate(options.cutoffs):  # per-query values for per-query policy rules
        result.per_query[f"ranking_quality.ndcg@{k}"] = {data.query_ids[i]: stored(ndcg[i, j])
                                                         for i in range(data.n_queries) if not single[i]}
    result.figures.append(Figure(
        title=f"Distribution of nDCG@{headline} over queries",
        chart="histogram", data={"values": ndcg[:, col], "bins": np.linspace(0, 1, 21), "xlabel": f"nDCG@{headline}"},
        caption="Each bar counts queries; a long left tail means some users get poor rankings.",
        description=_histogram_text(ndcg[:, col], headline, options.low_threshold)))
    _by_group(result, ctx, options, scores)
    mean = result.metrics[f"ranking_quality.ndcg@{headline}.mean"]
    judged = int(result.metrics[f"ranking_quality.ndcg@{headline}.queries"])
    left = int(single.sum())
    result.summary = (f"Mean nDCG@{headline} is {figure(mean)} over {counted(judged, 'query')}; "
                      f"{percent(result.metrics[f'ranking_quality.ndcg@{headline}.share_low'])} of them score below "
                      f"{options.low_threshold:g}." + (f" {counted(left, 'single-document query')} "
                                                       f"{'is' if left == 1 else 'are'} left out (one document cannot "
                                                       "be misranked)." if left else ""))
    return result


def _by_group(result: EvidenceResult, ctx: AuditContext, options: RankingQualityOptions, scores: np.ndarray) -> None:
    """Accuracy for each group of persons the data record (AI Act Annex IV point 3): pairwise accuracy of the pairs
    a group's document should lead, pooled over queries, with the gap between the best and the worst group."""
    data = ctx.data
    columns = list(data.attributes) if options.groups is None else list(options.groups)
    if not columns or data.y is None:
        result.unmeasured["ranking_quality.group.gap"] = (
            "accuracy by group of persons needs the groups' columns beside the data (`dataset.attribute_columns`, "
            "e.g. sex, age band), which this audit's data do not keep" if options.groups is None else
            "`groups: []` asks for no accuracy by group of persons")
        return
    unknown = {None if v is None else v.strip().casefold() for v in options.unknown_values}
    rng = ctx.rng("ranking_quality.groups")
    rows: list[list[object]] = []
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
        for g, value in enumerate(values):
            measured = np.isfinite(found.accuracy[g])
            if measured and segments[value]:
                result.metrics.update(spelled(f"{key}.{segments[value]}.pairwise_accuracy", found.accuracy[g],
                                              found.low[g], found.high[g]))
            left_out = (f"under {percent(options.group_min_share)} of the individuals" if not large[g] else
                        f"too few pairs (< {options.group_min_pairs})")
            rows.append([column, value, int(found.pairs[g]), stored(found.accuracy[g]) if measured else left_out,
                         interval(min(found.low[g], found.accuracy[g]), max(found.high[g], found.accuracy[g]))
                         if measured and np.isfinite(found.low[g]) else "—"])
        if np.isfinite(found.gap):
            result.metrics.update(spelled(f"{key}.gap", found.gap, found.gap_low, found.gap_high))
            gaps.append((found.gap, found.gap_low, found.gap_high, column))
    result.metrics["ranking_quality.group.columns"] = float(len(columns))
    if gaps:
        gap, low, high, _ = max(gaps)
        result.metrics.update(spelled("ranking_quality.group.gap", gap, low, high))
    gap_words = "; ".join(f"{column} {figure(g)} ({interval(min(g_low, g), max(g_high, g))})"
                          for g, g_low, g_high, column in gaps)
    result.tables.append(Table(
        title="Accuracy by group of persons (pairwise)",
        columns=["column", "group", "pairs it leads", "pairwise accuracy", "95% interval"], rows=rows,
        note=("Pairwise accuracy of a group: of the pairs of one query where a document of the group has the higher "
              "label, the share the model orders correctly (a tie counts one half); pairs pooled over queries, "
              "95% interval by resampling queries (Beutel et al. 2019). The gap is the best group's accuracy minus "
              "the worst's, per column; unknown values are not a group, and a group under "
              f"{percent(options.group_min_share)} of the individuals of known group gets no accuracy."
              + (f" Gap per column: {gap_words}." if gap_words else ""))))


def _summarise(metrics: dict[str, float], name: str, values: np.ndarray, rng: np.random.Generator,
               low: float) -> list:
    found = estimate(values, rng)
    finite, low_ci, high_ci = found.values, found.low, found.high
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
    stats["mean"] = found.mean
    label = name.removeprefix("ranking_quality.")
    held = interval(min(low_ci, found.mean), max(high_ci, found.mean))  # the point inside its printed interval
    return [label, stored(stats["mean"]), held, stored(stats["std"]),
            stored(stats["min"]), stored(stats["median"]), stored(stats["max"]), stored(stats["share_low"]),
            int(stats["queries"])]


def _single_note(count: int) -> str:
    return f"{counted(count, 'single-document query')} {'is' if count == 1 else 'are'} left out of every mean (one " \
        "document cannot be misranked); " if count else ""




def _histogram_text(values: np.ndarray, k: int, low: float) -> str:

    kept = values[np.isfinite(values)]
    if not kept.size:
        return f"Histogram of nDCG@{k} over queries: no query has a value."
    return (f"Histogram of nDCG@{k} over {kept.size} queries: median {figure(np.median(kept))}, "
            f"{percent(np.mean(kept < low))} below {low:g}, lowest {figure(kept.min())}.")
