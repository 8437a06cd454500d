"""Exposure under each attention model (evidence `exposure`, issue 36): does the conclusion hang on how far down
the ranking users are assumed to look? Not a plugin: what `exposure.run` calls for its figures under each model —
measured only: the table, the sentences and the proxies' note are `present.py`'s.

Three position-attention models, side by side, each cut at the spec's `cutoff` (default 10, the first page) so that
only the shape of the attention curve differs (`auditor/checks/exposure.py` computes them):

- **log** 1/log₂(1 + i): the DCG discount (Järvelin & Kekäläinen 2002) as Singh & Joachims 2018 use it — the
  evidence's default, whose figures the section reports;
- **geometric** p^(i − 1), p = 0.8: rank-biased precision's patient user, who looks one position further with
  probability p (Moffat & Zobel 2008, whose examples use p = 0.5, 0.8, 0.95);
- **cascade** Π_{j<i} (1 − φ(r_j)), φ(r) = (2^r − 1) / 2^r_max: the cascade model (Craswell et al. 2008) — the user
  reads down until a document satisfies them — with the satisfaction (stop) probability of expected reciprocal
  rank (Chapelle et al. 2009), r_max the largest relevance of the audited queries; no abandonment otherwise
  (patience 1). For 0/1 labels φ is 0.5·r/r_max.

Each model gets its own merit share (the share of *its* attention in the ideal order), so a ranking by relevance
has ratio 1 under all three. Per group value, over the same queries as the section's figures: exposure share, merit
share, their ratio and, with the counterfactual, the share change, each with its 95% interval (stream
`exposure/attention`, so the section's other numbers do not move); the model the spec's `attention` names reuses
the section's figures. Then the least and most favourable ratio and share change over the models, and the
surrogate's feature pairs with a group column (possible proxies) when the `surrogate` evidence's result is passed
in.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from auditor.checks.exposure import (
    Attention,
    QueryGroups,
    bootstrap_of_means,
    exposure,
    mean,
    ratio,
    target_exposure,
)
from auditor.core.metric_names import spelled
from auditor.evidence.base import EvidenceResult
from auditor.evidence.kinds.exposure.options import ATTENTION_MEASURES as MEASURES
from auditor.evidence.kinds.exposure.options import ATTENTION_METRICS as METRICS  # noqa: F401 - declared there
from auditor.evidence.kinds.exposure.options import ATTENTION_MODELS as MODELS

GEOMETRIC_PATIENCE = 0.8  # Moffat & Zobel 2008
CASCADE_PATIENCE = 1.0  # a pure cascade: the user stops only when satisfied (Craswell et al. 2008; ERR)


Stat = tuple[float, float, float]  # value, 95% interval (NaN: none)


def models(cutoff: int | None, max_grade: float) -> dict[str, Attention]:
    """The three attention models, each cut at `cutoff`."""
    return {"log": Attention("log", cutoff=cutoff),
            "geometric": Attention("geometric", patience=GEOMETRIC_PATIENCE, cutoff=cutoff),
            "cascade": Attention("cascade", patience=CASCADE_PATIENCE, cutoff=cutoff, max_grade=max_grade)}


def matching(found: dict[str, Attention], attention: Attention) -> str | None:
    """The model that is the section's own attention (whose figures it reuses), if any."""
    for name, model in found.items():
        if model.kind != attention.kind or model.cutoff != attention.cutoff:
            continue
        if model.kind == "log" or (model.patience == attention.patience
                                   and (model.kind == "geometric" or model.max_grade == attention.max_grade)):
            return name
    return None


def shares(scores: np.ndarray, relevance: np.ndarray, codes: np.ndarray, ptr: np.ndarray,
           cf_scores: np.ndarray | None, *, n_values: int, merit: str, found: dict[str, Attention],
           main: tuple[str | None, QueryGroups, dict[str, np.ndarray] | None]) -> dict[str, dict[str, np.ndarray]]:
    """Per model: exposure and merit shares (queries × values) of the actual ranking and the exposure share with
    the group feature set alike for every document (mean over its values; absent without the counterfactual).
    `main`: (the model the section's figures use, its group figures and counterfactual), reused."""
    out: dict[str, dict[str, np.ndarray]] = {}
    for name, attention in found.items():
        if name == main[0]:
            actual, cf = main[1], main[2]
            out[name] = {"exposure": actual.exposure_share, "merit": actual.merit_share}
            if cf is not None:
                out[name]["counterfactual"] = cf["share"]
            continue
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):  # cascade: a huge `relevance` column
            out[name] = group_shares(scores, relevance, codes, ptr, attention, cf_scores, n_values=n_values,
                                     merit=merit)
    return out


def group_shares(scores: np.ndarray, relevance: np.ndarray, codes: np.ndarray, ptr: np.ndarray,
                 attention: Attention, cf_scores: np.ndarray | None, *, n_values: int,
                 merit: str) -> dict[str, np.ndarray]:
    """The shares of `checks.exposure.group_exposure` (`exposure_share`, `merit_share`, NaN in the same queries)
    and its exposure share averaged over the counterfactual rankings, without the figures this table does not
    use (AWRF, expected exposure, per-document means): the target exposure is computed once a query for the
    actual and every counterfactual ranking (tested equal to `group_exposure`)."""
    n_queries = len(ptr) - 1
    out = {"exposure": np.full((n_queries, n_values), np.nan), "merit": np.full((n_queries, n_values), np.nan)}
    if cf_scores is not None:
        out["counterfactual"] = np.full((n_queries, n_values), np.nan)
    for q in range(n_queries):
        a, b = ptr[q], ptr[q + 1]
        if b - a < 2:
            continue
        r, c = relevance[a:b], codes[a:b]
        eps = exposure(scores[a:b], r, attention)
        worth = target_exposure(r, attention) if merit == "ideal" else np.asarray(r, dtype=np.float64)
        if not (eps.sum() > 0 and worth.sum() > 0):
            continue
        out["exposure"][q] = np.bincount(c, weights=eps, minlength=n_values) / eps.sum()
        out["merit"][q] = np.bincount(c, weights=worth, minlength=n_values) / worth.sum()
        if cf_scores is not None:
            shares_cf = []
            for s in cf_scores:
                e = exposure(s[a:b], r, attention)
                shares_cf.append(np.bincount(c, weights=e, minlength=n_values) / e.sum())
            out["counterfactual"][q] = np.mean(shares_cf, axis=0)
    return out


def value_stats(result: EvidenceResult, key: str, by_model: dict[str, dict[str, np.ndarray]], v: int,
                contested: np.ndarray, rng: np.random.Generator, resamples: int,
                reuse: tuple[str | None, dict[str, Stat]]) -> dict[str, Stat]:
    """One group value's figures under each model (`<model>.<measure>`) and their envelopes, over the queries
    where it competes (`contested`); written to `result.metrics` as `<key>.attention.<name>`. The model named in
    `reuse` takes the section's figures."""
    out: dict[str, Stat] = {}
    for name, found in by_model.items():
        if name == reuse[0]:
            out.update({f"{name}.{m}": reuse[1][m] for m in MEASURES if m in reuse[1]})
            continue
        keep = contested & np.isfinite(found["exposure"][:, v])
        if keep.sum() < 2:
            continue
        es, ms = found["exposure"][keep, v], found["merit"][keep, v]
        out[f"{name}.exposure_share"] = bootstrap_of_means(es[:, None], mean, rng, n_resamples=resamples)
        out[f"{name}.merit_share"] = bootstrap_of_means(ms[:, None], mean, rng, n_resamples=resamples)
        out[f"{name}.ratio"] = bootstrap_of_means(np.column_stack([es, ms]), ratio, rng, n_resamples=resamples)
        if "counterfactual" in found:
            change = es - found["counterfactual"][keep, v]
            out[f"{name}.counterfactual.share_change"] = bootstrap_of_means(change[:, None], mean, rng,
                                                                           n_resamples=resamples)
    for envelope, measure in (("ratio", "ratio"), ("share_change", "counterfactual.share_change")):
        per_model = [out[f"{m}.{measure}"] for m in MODELS
                     if f"{m}.{measure}" in out and math.isfinite(out[f"{m}.{measure}"][0])]
        if per_model:
            out[f"min_{envelope}"] = _envelope(per_model, min)
            out[f"max_{envelope}"] = _envelope(per_model, max)
    for name, stat in out.items():
        put(result, f"{key}.attention.{name}", stat)
    return out


def _envelope(stats: list[Stat], pick: Any) -> Stat:
    """The least (`min`) or most (`max`) of the models' values and, bound by bound, of their intervals: so
    `min_ratio.ci95_low` > t exactly when every model's interval lies above t, and `max_ratio.ci95_high` < t when
    every model's lies below. No interval when a model has none."""
    value = pick(s[0] for s in stats)
    if not all(math.isfinite(s[1]) for s in stats):
        return value, math.nan, math.nan
    return value, pick(s[1] for s in stats), pick(s[2] for s in stats)


def put(result: EvidenceResult, name: str, stat: Stat) -> None:
    """A (value, low, high) statistic as `name` and its interval's metrics (`metric_names.spelled`)."""
    result.metrics.update(spelled(name, *stat))


def aggregates(result: EvidenceResult, sens: dict[tuple[str, str], dict[str, Stat]],
               own: tuple[str, str] | None) -> None:
    """What packs address without naming a shop's columns: the own products' figures under `exposure.own.attention`,
    and over every group value the largest and smallest ratio (the largest share change) under each model and of
    the envelopes, each with the interval of the value that has it (as `exposure.max.ratio`)."""
    measured = [s for s in sens.values() if s]
    ratios = [f"{m}.ratio" for m in MODELS] + ["min_ratio", "max_ratio"]
    changes = [f"{m}.counterfactual.share_change" for m in MODELS] + ["min_share_change", "max_share_change"]
    for name in ratios + changes:
        having = [s[name] for s in measured if name in s and math.isfinite(s[name][0])]
        if not having:
            continue
        put(result, f"exposure.max.attention.{name}", max(having, key=lambda s: s[0]))
        if name in ratios:
            put(result, f"exposure.min.attention.{name}", min(having, key=lambda s: s[0]))
    for name, stat in (sens.get(own) or {}).items() if own is not None else ():
        put(result, f"exposure.own.attention.{name}", stat)


# --- possible proxies, from the surrogate ----------------------------------------------------------------------

def proxies(result: EvidenceResult, surrogate: EvidenceResult | None, columns: list[str]) -> dict[str, Any] | None:
    """The surrogate's feature pairs that hold a group column (its `records`: one an effect, `features` its one or
    two columns, ranked by importance), as possible proxies in `records` (`kind: possible_proxy`): the group's
    treatment may also run through the other feature. Returns what the section's note says beside them (the
    surrogate's fidelity, its pairs and effects, their total importance); None when the surrogate did not run (it
    is passed in by the engine: `ctx.used("surrogate")`)."""

    if surrogate is None:
        return None
    effects = [r for r in surrogate.records if isinstance(r.get("features"), list)]
    pairs = [r for r in effects if len(r["features"]) == 2]
    total = sum(float(r.get("importance") or 0.0) for r in effects) or 1.0
    tau = surrogate.metrics.get("surrogate.fidelity.kendall.mean", math.nan)
    for column in columns:
        for r in (r for r in pairs if column in r["features"]):
            other = next(f for f in r["features"] if f != column) if r["features"][0] != r["features"][1] else column
            share = float(r.get("importance") or 0.0) / total
            result.records.append({"kind": "possible_proxy", "group": column, "feature": other,
                                   "effect": r.get("effect", " × ".join(r["features"])), "rank": r.get("rank"),
                                   "importance": r.get("importance"), "share": round(share, 6)})
    return {"fidelity": float(tau) if math.isfinite(tau) else None, "pairs": len(pairs), "effects": len(effects),
            "importance": total}
