"""Interpretable surrogates: ILMART (paper 002) trained on stock LightGBM, its exact decomposition into main and
pair effects, and fidelity to the audited ranker. `train.py` holds the two uses: a surrogate of any ranker, and
ILMART trained on labels as the audited model itself."""

from __future__ import annotations

from typing import Any

IMPORTANCE_KEY = ("surrogate", "feature_importance")


def feature_importance(ctx: Any) -> Any:
    """Per-feature importance of the surrogate the `surrogate` evidence fitted earlier in this audit (a pair effect's
    importance split evenly between its two features), or None when it has not run yet."""
    return ctx.memo(IMPORTANCE_KEY, lambda: None) if ctx.memoized(IMPORTANCE_KEY) else None
