"""Evidence `parameter_influence`: how much parameters the spec marks as sensitive (paid placement, commission,
a sponsored flag) move documents in the ranking.

For each sensitive parameter and each document, alone (the other documents keep their scores):
- masked: the parameter replaced as every other evidence item removes a feature (`masking`, `ctx.masker()`);
  the positions the document's actual value is worth;
- swept: the parameter set to each of `sweep_points` values over its range (quantiles of the background data,
  or every value of a parameter with few); the positions gained from its lowest to its highest value (signed: a
  paid boost shows as a gain, a parameter with no effect as about zero) and the worst-case range.
Masking the parameter for every document of a query at once tells whether the query's top-k set changes. All
rows of all queries and parameters are scored in a few `predict` calls; intervals are bootstrap over queries.

Measured only: metrics, per-query values, detections and the facts no metric holds (each parameter's swept values,
the queries with an order to change, the masking); `present.py` says what they mean.
"""

from __future__ import annotations

import numpy as np

from auditor.checks.estimate import Estimate, estimate
from auditor.checks.influence import per_query_influence
from auditor.core.feature_names import check_feature_names, metric_name
from auditor.core.numbers import figure, held, interval, percent, stored
from auditor.core.words import counted
from auditor.evidence.base import AuditContext, EvidenceResult
from auditor.evidence.kinds.parameter_influence.options import ParameterInfluenceOptions
from auditor.evidence.sweeps import swept_scores
from auditor.inputs.data import RankingData

_MAX_ROWS = 1_000_000


def sweep_values(column: np.ndarray, points: int) -> np.ndarray:
    """Increasing values to sweep a parameter over: every distinct value when it has at most `points`, else
    `points` quantiles from the minimum to the maximum."""
    finite = column[np.isfinite(column)]
    distinct = np.unique(finite)
    if len(distinct) <= points:
        return distinct
    return np.unique(np.quantile(finite, np.linspace(0.0, 1.0, points)))


def check(options: ParameterInfluenceOptions, data: RankingData) -> None:
    """Every sensitive parameter is a feature of the data (bad input, found before any evidence runs)."""
    check_feature_names(options.sensitive, data.feature_names, key="sensitive")


def run(ctx: AuditContext, options: ParameterInfluenceOptions) -> EvidenceResult:
    data = ctx.data
    result = EvidenceResult(name="parameter_influence")
    if not options.sensitive:
        result.status = "unmeasured"
        result.error = ("the spec marks no parameter as sensitive: list the paid or otherwise sensitive parameters "
                        "under `parameter_influence: {sensitive: [...]}`")
        return result
    check(options, data)
    names = list(data.feature_names)
    features = [names.index(f) for f in options.sensitive]

    queries = ctx.query_sample(options.queries, "parameter_influence/queries")
    rows = np.concatenate([np.arange(data.query_ptr[q], data.query_ptr[q + 1]) for q in queries])
    ptr = np.concatenate([[0], np.cumsum([data.query_ptr[q + 1] - data.query_ptr[q] for q in queries])])
    X = data.X[rows]
    scores = ctx.scores()[rows]
    masker = ctx.masker()
    reference = ctx.reference().X
    keep = np.ones((len(features), X.shape[1]), dtype=bool)
    keep[np.arange(len(features)), features] = False
    masked = masker.masked_scores(ctx.model, X, keep, max_rows=_MAX_ROWS)  # (P × n), one call per block
    grids = [sweep_values(reference[:, f], options.sweep_points) for f in features]
    swept = swept_scores(ctx, X, features, grids)

    rng = ctx.rng("parameter_influence")
    # the queries every measure is over: one of a single document has no order to change (NaN, left out)
    measured = int(np.sum(np.diff(ptr) >= 2))
    result.facts.update(measured_queries=measured, masking=masker.strategy, parameters=[])
    metrics = result.metrics
    # the largest value over parameters, with the interval of the parameter that has it (rules judge with intervals)
    worst = {"rank_shift.mean": (0.0, 0.0, 0.0), "sweep_gain.max_abs": (0.0, 0.0, 0.0),
             "topk_changed_share": (0.0, 0.0, 0.0)}
    ticker = ctx.progress.task(f"Parameter influence ({len(queries)} queries)", len(features))
    for p, (feature, grid) in enumerate(zip(features, grids, strict=True)):
        ticker.advance()
        name = names[feature]
        key = f"influence.{metric_name(name)}"
        per_query = per_query_influence(scores, masked[p], swept[p], ptr, k=options.top_k)
        stats = {}
        for measure in ("rank_shift", "sweep_gain", "sweep_range", "topk_changed"):
            found = estimate(per_query[measure], rng, n_resamples=options.resamples)
            stats[measure] = (found.mean, found.low, found.high)
            if measure == "topk_changed":  # a share: the interval beside `<key>.topk_changed_share` itself
                metrics.update(found.metrics(f"{key}.topk_changed_share", mean=""))
            else:
                metrics.update(found.metrics(f"{key}.{measure}"))
        metrics[f"{key}.rank_shift.max"] = float(np.nanmax(per_query["max_shift"]))
        metrics[f"{key}.sweep_range.max"] = float(np.nanmax(per_query["max_range"]))
        metrics[f"{key}.affected_docs_share"] = float(np.nanmean(per_query["affected"]))
        result.per_query[f"{key}.rank_shift"] = _by_query(ctx, queries, per_query["rank_shift"])
        result.per_query[f"{key}.sweep_gain"] = _by_query(ctx, queries, per_query["sweep_gain"])
        for measure, stat in (("rank_shift.mean", stats["rank_shift"]),
                              ("sweep_gain.max_abs", _abs(stats["sweep_gain"])),
                              ("topk_changed_share", stats["topk_changed"])):
            if stat[0] > worst[measure][0]:
                worst[measure] = stat
        gain, g_low, g_high = stats["sweep_gain"]
        detected = np.isfinite(g_low) and (g_low > 0 or g_high < 0)
        shift, s_low, s_high = stats["rank_shift"]
        if detected or (np.isfinite(s_low) and s_low > 0):
            result.detect(
                "sensitive-parameter-effect", f"Sensitive parameter moves documents in the ranking: {name}",
                f"'{name}' is worth {figure(shift)} positions to a document on average (95% interval "
                f"{_interval(stats['rank_shift'])}); "
                f"from its lowest to its highest value a document {'climbs' if gain >= 0 else 'drops'} "
                f"{figure(abs(gain))} positions (95% interval of the climb {_interval(stats['sweep_gain'])}); "
                f"masking it changes the top {options.top_k} of {percent(stats['topk_changed'][0])} of the "
                f"{counted(measured, 'query')} with an order to change.",
                severity="major",
                citation="Reg. (EU) 2019/1150 (P2B) Art. 5(3) — remuneration that influences ranking, and its effects",
                judged_by=(f"{key}.rank_shift.mean", f"{key}.sweep_gain.mean", f"{key}.topk_changed_share",
                           "influence.max.rank_shift.mean", "influence.max.sweep_gain.max_abs",
                           "influence.max.topk_changed_share"),
                value=shift, interval=(s_low, s_high), subject=name)
        result.facts["parameters"].append({"parameter": name, "metric": key, "swept": [float(v) for v in grid]})
    ticker.close()
    for measure, (value, low, high) in worst.items():
        stem = measure.removesuffix(".mean")
        metrics.update(Estimate(float(value), low, high, len(queries)).metrics(
            f"influence.max.{stem}", mean="mean" if stem != measure else ""))
    metrics["influence.parameters"] = float(len(features))
    metrics["influence.queries"] = float(len(queries))
    return result


def _abs(stat: tuple[float, float, float]) -> tuple[float, float, float]:
    """|mean| with the interval of |x| over the mean's interval."""
    value, low, high = stat
    if not np.isfinite(low):
        return abs(value), low, high
    return abs(value), (0.0 if low <= 0 <= high else min(abs(low), abs(high))), max(abs(low), abs(high))


def _by_query(ctx: AuditContext, queries: list[int], values: np.ndarray) -> dict[str, float | None]:
    return {ctx.data.query_ids[q]: stored(v) for q, v in zip(queries, values, strict=True) if np.isfinite(v)}


def _interval(stat: tuple[float, float, float]) -> str:
    """An interval as every interval of the report reads (`numbers.interval`), holding its value."""
    return interval(*held(*stat))
