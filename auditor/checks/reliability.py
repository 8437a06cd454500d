"""How likely an explanation is to be reliable, estimated out of sample (issue 37).

An explanation (one explainer on one query) is *reliable* when it reproduces the query's ranking under masking draws
it was not chosen on — validity under held-out background rows at least the floor — and, for tree models, agrees
with the decision path the trees took. Whether it is can be measured in the audit, but not for the explanations a
user will be shown tomorrow; what the audit can give is a predictor of it from signals every explanation has
(validity on the audit's own masking, agreement with the best explainer of the query, stability, near ties, the
query's size and score spread, the explainer). The predictor is a regularised logistic regression on standardised
signals — small and readable: each signal's coefficient says which way it pushes — fitted with leave-queries-out
cross-validation, so every explanation's estimate comes from a model that never saw its query. Its AUC and
calibration (expected calibration error, reliability diagram) are measured on those out-of-sample estimates, with
intervals that resample queries.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

FOLDS = 5  # leave-queries-out folds (fewer when there are fewer queries)
MIN_OUTCOME = 10  # explanations of the rarer outcome needed to fit and test an estimate (else: the observed rate)
BINS = 10  # equal-width bins of the reliability diagram and the ECE
PENALTY = 1.0  # inverse L2 strength (sklearn's C) on standardised signals


@dataclass(frozen=True)
class Estimates:
    """Out-of-sample reliability estimates and the full-data model that explains them."""

    probability: np.ndarray  # per explanation, from a model fitted without its query
    coefficients: np.ndarray  # of the full-data model, per standardised signal
    intercept: float
    centre: np.ndarray  # the standardisation (mean, scale) of each signal
    scale: np.ndarray
    fill: np.ndarray  # the value a missing signal takes (its mean)
    constant: bool  # one class only: every estimate is the observed rate, no model was fitted

    def contributions(self, signals: np.ndarray) -> np.ndarray:
        """Each signal's push on the log-odds (coefficient × standardised value), per explanation."""
        pushes: np.ndarray = self.coefficients * ((_filled(signals, self.fill) - self.centre) / self.scale)
        return pushes


def _filled(signals: np.ndarray, fill: np.ndarray) -> np.ndarray:
    out = np.array(signals, dtype=np.float64, copy=True)
    rows, cols = np.nonzero(~np.isfinite(out))
    out[rows, cols] = fill[cols]
    return out


def _fit(signals: np.ndarray, target: np.ndarray) -> tuple[np.ndarray, float, np.ndarray, np.ndarray, np.ndarray]:
    from sklearn.linear_model import LogisticRegression

    finite = np.where(np.isfinite(signals), signals, np.nan)
    fill = np.nan_to_num(np.nanmean(finite, axis=0)) if finite.size else np.zeros(signals.shape[1])
    x = _filled(signals, fill)
    centre, scale = x.mean(axis=0), x.std(axis=0)
    scale = np.where(scale > 0, scale, 1.0)
    model = LogisticRegression(C=PENALTY, max_iter=1000)
    model.fit((x - centre) / scale, target)
    return model.coef_[0], float(model.intercept_[0]), centre, scale, fill


def _predict(signals: np.ndarray, fitted: tuple[np.ndarray, float, np.ndarray, np.ndarray, np.ndarray]) -> np.ndarray:
    coef, intercept, centre, scale, fill = fitted
    z = ((_filled(signals, fill) - centre) / scale) @ coef + intercept
    probability: np.ndarray = 1.0 / (1.0 + np.exp(-z))
    return probability


def estimate(signals: np.ndarray, target: np.ndarray, groups: np.ndarray) -> Estimates:
    """Leave-queries-out estimates: the queries split into FOLDS groups (in order of first appearance, so the split
    is deterministic), each fold predicted by a model fitted on the others. A training fold holding one class only
    predicts its observed rate; with fewer than MIN_OUTCOME explanations of either outcome nothing is fitted and
    every estimate is the observed rate (`constant`): one unreliable explanation in 215 can neither train nor test
    a model, and an AUC on it would be noise."""
    target = np.asarray(target, dtype=int)
    n = signals.shape[1]
    if min(int(target.sum()), int(len(target) - target.sum())) < MIN_OUTCOME:  # nothing to learn or test on
        return Estimates(np.full(len(target), target.mean() if len(target) else 0.0), np.zeros(n), 0.0,
                         np.zeros(n), np.ones(n), np.zeros(n), True)
    order = list(dict.fromkeys(groups.tolist()))
    folds = min(FOLDS, len(order))
    fold_of = {g: i % folds for i, g in enumerate(order)}
    fold = np.array([fold_of[g] for g in groups.tolist()])
    probability = np.empty(len(target))
    for f in range(folds):
        train, test = fold != f, fold == f
        if folds == 1 or len(np.unique(target[train])) < 2:
            probability[test] = target[train].mean() if folds > 1 else target.mean()
        else:
            probability[test] = _predict(signals[test], _fit(signals[train], target[train]))
    return Estimates(probability, *_fit(signals, target), False)


def auc(target: np.ndarray, probability: np.ndarray) -> float:
    """Area under the ROC curve (NaN with one class only), as the Mann-Whitney statistic on mid-ranks (ties count
    one half): sklearn's `roc_auc_score`, without its validation, since the bootstrap calls it 2,000 times."""
    from scipy.stats import rankdata

    target = np.asarray(target)
    positives = int(target.sum())
    negatives = len(target) - positives
    if positives == 0 or negatives == 0:
        return float("nan")
    ranks = rankdata(probability)
    return float((ranks[target == 1].sum() - positives * (positives + 1) / 2) / (positives * negatives))


def calibration(target: np.ndarray, probability: np.ndarray, bins: int = BINS
                ) -> tuple[float, list[tuple[float, float, float, int]]]:
    """Expected calibration error (the count-weighted mean |observed rate − mean estimate| over equal-width bins)
    and the diagram's points: (bin midpoint, mean estimate, observed rate, count) per non-empty bin."""
    edges = np.linspace(0, 1, bins + 1)
    index = np.clip(np.digitize(probability, edges[1:-1]), 0, bins - 1)
    points, error = [], 0.0
    for b in range(bins):
        inside = index == b
        if inside.any():
            mean, rate = float(probability[inside].mean()), float(target[inside].mean())
            points.append((float((edges[b] + edges[b + 1]) / 2), mean, rate, int(inside.sum())))
            error += inside.sum() * abs(rate - mean)
    return error / max(len(target), 1), points


def clustered_interval(target: np.ndarray, probability: np.ndarray, groups: np.ndarray, rng: np.random.Generator,
                       statistic: Callable[[np.ndarray, np.ndarray], float], n_resamples: int = 2000
                       ) -> tuple[float, float]:
    """95% percentile interval of `statistic(target, probability)` resampling whole queries; NaN when fewer than
    two queries or no resample is defined."""
    order = list(dict.fromkeys(groups.tolist()))
    if len(order) < 2:
        return float("nan"), float("nan")
    members = [np.flatnonzero(groups == g) for g in order]
    values = []
    for _ in range(n_resamples):
        rows = np.concatenate([members[i] for i in rng.integers(0, len(order), len(order))])
        value = statistic(target[rows], probability[rows])
        if np.isfinite(value):
            values.append(value)
    if not values:
        return float("nan"), float("nan")
    low, high = np.percentile(values, [2.5, 97.5])
    return float(low), float(high)
