"""Compact per-feature distributions, stored with every run's dataset facts, and the population stability index
(PSI) between two of them: what `auditor diff` and a spec's `baseline:` compare period over period."""

from __future__ import annotations

from typing import Any

import numpy as np

QUANTILES = 51  # stored per feature: the 0, 2, ..., 100th percentiles
CATEGORICAL_MAX = 20  # features with at most this many distinct values store exact counts
PSI_BINS = 10
PSI_FLOOR = 1e-4


def feature_distributions(X: np.ndarray, names: list[str]) -> list[dict[str, Any]]:
    """Compact per-feature distributions for evidence.json: exact value counts for features with few distinct
    values, else 51 quantiles (every 2nd percentile); the count of missing values either way."""
    out = []
    for f, name in enumerate(names):
        column = X[:, f]
        finite = column[np.isfinite(column)]
        entry: dict[str, Any] = {"feature": name, "n": int(finite.size), "missing": int(column.size - finite.size)}
        values, counts = np.unique(finite, return_counts=True)
        if len(values) <= CATEGORICAL_MAX:
            entry.update(values=[float(v) for v in values], counts=[int(c) for c in counts])
        else:
            entry["quantiles"] = [float(q) for q in np.quantile(finite, np.linspace(0, 1, QUANTILES))]
        out.append(entry)
    return out


def _cdf(entry: dict[str, Any], x: np.ndarray) -> np.ndarray:
    """Share of values ≤ x: exact for counted features, linear in the quantile function otherwise."""
    if "values" in entry:
        values, counts = np.asarray(entry["values"]), np.asarray(entry["counts"], dtype=float)
        total = counts.sum()
        return np.array([counts[values <= v].sum() / total if total else 0.0 for v in x])
    q = np.asarray(entry["quantiles"])
    p = np.linspace(0, 1, len(q))
    return np.asarray(np.interp(x, q, p, left=0.0, right=1.0), dtype=float)


def psi(old: dict[str, Any], new: dict[str, Any]) -> float:
    """Population stability index Σ (p_new − p_old)·ln(p_new / p_old) over bins set by the old run: its distinct
    values (cut at midpoints) when counted, else its deciles; shares floored at 1e-4."""
    if "values" in old:
        values = np.asarray(old["values"])
        edges = (values[:-1] + values[1:]) / 2
    else:
        q = np.asarray(old["quantiles"])
        edges = np.unique(np.interp(np.linspace(0, 1, PSI_BINS + 1)[1:-1], np.linspace(0, 1, len(q)), q))

    def shares(entry: dict[str, Any]) -> np.ndarray:
        cdf = np.concatenate([[0.0], _cdf(entry, edges), [1.0]])
        return np.maximum(np.diff(cdf), PSI_FLOOR)
    a, b = shares(old), shares(new)
    return float(np.sum((b - a) * np.log(b / a)))
