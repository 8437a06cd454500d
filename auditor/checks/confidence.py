"""Low-confidence criteria for one explanation of one query's ranking, and the check that the flags mean something.

Each criterion is a measure a reviewer understands, compared with a threshold; an explanation is flagged when any
criterion fires, and every reason is kept. Definitions: docs/metrics.md (`confidence.*`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from auditor.checks.ranking import rank_order

# criterion → (measure name, how the reason reads); a criterion fires when its measure is below the threshold,
# except additivity, which fires above it.
CRITERIA: dict[str, str] = {
    "validity": "the set does not reproduce the ranking (validity {value:.2f} < {threshold:g})",
    "agreement": "other explainers pick different features (mean overlap {value:.2f} < {threshold:g})",
    "path_accuracy": "it misses the features the trees used (top-K AUC {value:.2f} < {threshold:g})",
    "stability": "a second run picks a different set (overlap {value:.2f} < {threshold:g})",
    "margin": "the top documents' scores are nearly tied (smallest gap {value:.3f} of the score spread < "
              "{threshold:g})",
    "additivity": "the attributions do not add up to the score (error {value:.2g} of the score range > "
                  "{threshold:g})",
}


def set_overlap(a: tuple[int, ...], b: tuple[int, ...]) -> float:
    """|A ∩ B| / max(|A|, |B|): 1 = the same features, 0 = none shared."""
    size = max(len(a), len(b))
    return len(set(a) & set(b)) / size if size else 1.0


def agreement(sets: list[tuple[int, ...]], validity: np.ndarray, i: int) -> float:
    """Mean overlap of explanation i with the explanations of the same query whose validity is at least its own:
    disagreeing with a weaker explainer is no reason for doubt. NaN (not applicable) when none is as valid."""
    peers = [set_overlap(sets[i], sets[j]) for j in range(len(sets)) if j != i and validity[j] >= validity[i]]
    return float(np.mean(peers)) if peers else float("nan")


def score_margin(scores: np.ndarray, top: int) -> float:
    """Smallest score gap between neighbours among the top `top` documents, over the query's score std (0 when the
    query's scores do not vary)."""
    scores = np.asarray(scores, dtype=np.float64)
    spread = float(np.std(scores))
    if len(scores) < 2 or spread == 0:
        return 0.0
    ordered = scores[rank_order(scores)][:max(top, 2)]
    return float(np.min(-np.diff(ordered)) / spread)


def set_weights(selected: tuple[int, ...], n_features: int) -> np.ndarray:
    """Feature weights of an ordered set (k for the first, 1 for the last, 0 outside), so set explainers can be
    compared with a ground truth by the same top-K AUC as attributions."""
    weights = np.zeros(n_features)
    for position, feature in enumerate(selected):
        weights[feature] = len(selected) - position
    return weights


@dataclass(frozen=True)
class Verdict:
    flagged: bool
    reasons: list[str]
    criteria: list[str]


def verdict(measures: dict[str, float], thresholds: dict[str, float]) -> Verdict:
    """Which criteria fire. A measure that is missing or not finite (not applicable) never fires."""
    reasons, fired = [], []
    for criterion, text in CRITERIA.items():
        value, threshold = measures.get(criterion), thresholds.get(criterion)
        if value is None or threshold is None or not np.isfinite(value):
            continue
        fires = value > threshold if criterion == "additivity" else value < threshold
        if fires:
            fired.append(criterion)
            reasons.append(text.format(value=value, threshold=threshold))
    return Verdict(bool(fired), reasons, fired)


class FlagGap(NamedTuple):
    """`flag_gap`'s answer: the gap (unflagged − flagged) with its 95% interval, and the two means it is the
    difference of (`unflagged_mean` − `flagged_mean` == `gap`, to rounding), so a table and a sentence can show the
    statistic they quote."""

    gap: float
    low: float
    high: float
    flagged_mean: float
    unflagged_mean: float


_NO_GAP = FlagGap(float("nan"), float("nan"), float("nan"), float("nan"), float("nan"))


def flag_gap(values: np.ndarray, flagged: np.ndarray, cluster: np.ndarray, rng: np.random.Generator, *,
             strata: np.ndarray | None = None, n_resamples: int = 2000) -> FlagGap:
    """Mean of `values` over unflagged units minus the mean over flagged ones, with a 95% bootstrap interval that
    resamples clusters (queries), since the explanations of one query are not independent.

    With `strata` (the explainer of each unit) the gap is taken within each stratum and averaged, weighted by the
    stratum's FLAGGED units: each flagged explanation is compared with the unflagged explanations of its own
    explainer, so an explainer that is both often flagged and good (or bad) on the measure cannot make the flags
    look better or worse than they are. The two means returned are then the flagged units' mean and the mean of
    their explainers' unflagged means (weighted alike), and the gap is exactly their difference. Weighting by the
    flagged units (not by all of a stratum's units) keeps the statistic smooth under resampling: an explainer with
    one flagged explanation weighs one explanation, not all of its own, so the draws that leave that query out do
    not jump, and the point estimate sits inside its bootstrap interval rather than at its edge.
    NaN values are left out; all NaN when no stratum has both flagged and unflagged units."""
    values, flagged = np.asarray(values, dtype=np.float64), np.asarray(flagged, dtype=bool)
    strata = np.zeros(len(values), dtype=np.int64) if strata is None else np.asarray(strata)
    keep = np.isfinite(values)
    values, flagged, cluster, strata = values[keep], flagged[keep], np.asarray(cluster)[keep], strata[keep]
    if len(values) == 0:
        return _NO_GAP
    ids, owner = np.unique(cluster, return_inverse=True)
    kinds, kind = np.unique(strata, return_inverse=True)
    sums = np.zeros((len(ids), len(kinds), 4))  # flagged sum, flagged count, unflagged sum, unflagged count
    np.add.at(sums[..., 0], (owner, kind), np.where(flagged, values, 0.0))
    np.add.at(sums[..., 1], (owner, kind), flagged.astype(float))
    np.add.at(sums[..., 2], (owner, kind), np.where(flagged, 0.0, values))
    np.add.at(sums[..., 3], (owner, kind), (~flagged).astype(float))
    flagged_mean, unflagged_mean = (float(m[0]) for m in _stratified_means(sums.sum(axis=0)[None]))
    point = unflagged_mean - flagged_mean
    if not np.isfinite(point):
        return _NO_GAP
    counts = rng.multinomial(len(ids), np.full(len(ids), 1.0 / len(ids)), size=n_resamples).astype(float)
    drawn_flagged, drawn_unflagged = _stratified_means(np.einsum("bq,qsk->bsk", counts, sums))
    gaps = drawn_unflagged - drawn_flagged
    gaps = gaps[np.isfinite(gaps)]
    low, high = np.quantile(gaps, [0.025, 0.975]) if len(gaps) else (float("nan"), float("nan"))
    return FlagGap(float(point), float(low), float(high), flagged_mean, unflagged_mean)


def _stratified_means(totals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(B × S × 4) totals → B flagged means and B unflagged means over the strata that have both, each stratum
    weighted by its flagged units (the flagged mean is then the plain mean of those strata's flagged units)."""
    usable = (totals[..., 1] > 0) & (totals[..., 3] > 0)
    weight = np.where(usable, totals[..., 1], 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        flagged = np.where(usable, totals[..., 0] / totals[..., 1], 0.0)
        unflagged = np.where(usable, totals[..., 2] / totals[..., 3], 0.0)
        total = weight.sum(axis=1)
        return (flagged * weight).sum(axis=1) / total, (unflagged * weight).sum(axis=1) / total
