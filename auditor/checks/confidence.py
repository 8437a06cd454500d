"""Low-confidence criteria for one explanation of one query's ranking, and the check that the flags mean something.

Each criterion is a measure a reviewer understands, compared with a threshold; an explanation is flagged when any
criterion fires, and every reason is kept. Definitions: docs/metrics.md (`confidence.*`).
"""

from __future__ import annotations

from dataclasses import dataclass

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


def flag_gap(values: np.ndarray, flagged: np.ndarray, cluster: np.ndarray, rng: np.random.Generator, *,
             strata: np.ndarray | None = None, n_resamples: int = 2000) -> tuple[float, float, float]:
    """Mean of `values` over unflagged units minus the mean over flagged ones, with a 95% bootstrap interval that
    resamples clusters (queries), since the explanations of one query are not independent.

    With `strata` (the explainer of each unit) the gap is taken within each stratum and averaged, weighted by the
    stratum's units: flagged LIRME explanations are compared with unflagged LIRME explanations, so an explainer that
    is both often flagged and good (or bad) on the measure cannot make the flags look better or worse than they are.
    NaN values are left out; (nan, nan, nan) when no stratum has both flagged and unflagged units."""
    values, flagged = np.asarray(values, dtype=np.float64), np.asarray(flagged, dtype=bool)
    strata = np.zeros(len(values), dtype=np.int64) if strata is None else np.asarray(strata)
    keep = np.isfinite(values)
    values, flagged, cluster, strata = values[keep], flagged[keep], np.asarray(cluster)[keep], strata[keep]
    if len(values) == 0:
        return float("nan"), float("nan"), float("nan")
    ids, owner = np.unique(cluster, return_inverse=True)
    kinds, kind = np.unique(strata, return_inverse=True)
    sums = np.zeros((len(ids), len(kinds), 4))  # flagged sum, flagged count, unflagged sum, unflagged count
    np.add.at(sums, (owner, kind, 0), np.where(flagged, values, 0.0))
    np.add.at(sums, (owner, kind, 1), flagged.astype(float))
    np.add.at(sums, (owner, kind, 2), np.where(flagged, 0.0, values))
    np.add.at(sums, (owner, kind, 3), (~flagged).astype(float))
    point = _stratified_gap(sums.sum(axis=0)[None])[0]
    if not np.isfinite(point):
        return float("nan"), float("nan"), float("nan")
    counts = rng.multinomial(len(ids), np.full(len(ids), 1.0 / len(ids)), size=n_resamples).astype(float)
    gaps = _stratified_gap(np.einsum("bq,qsk->bsk", counts, sums))
    gaps = gaps[np.isfinite(gaps)]
    low, high = np.quantile(gaps, [0.025, 0.975]) if len(gaps) else (float("nan"), float("nan"))
    return float(point), float(low), float(high)


def _stratified_gap(totals: np.ndarray) -> np.ndarray:
    """(B × S × 4) totals → B gaps: per stratum unflagged mean − flagged mean, averaged with weights = units."""
    with np.errstate(invalid="ignore", divide="ignore"):
        per = totals[..., 2] / totals[..., 3] - totals[..., 0] / totals[..., 1]
    usable = (totals[..., 1] > 0) & (totals[..., 3] > 0)
    weight = np.where(usable, totals[..., 1] + totals[..., 3], 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (np.where(usable, per, 0.0) * weight).sum(axis=1) / weight.sum(axis=1)
