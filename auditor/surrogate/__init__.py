"""Interpretable surrogates: ILMART (paper 002) trained on stock LightGBM, its exact decomposition into main and
pair effects, and fidelity to the audited ranker. `train.py` holds the two uses: a surrogate of any ranker, and
ILMART trained on labels as the audited model itself."""

from __future__ import annotations

from typing import Any

IMPORTANCE_KEY = ("surrogate", "feature_importance")
SUMMARY_KEY = ("surrogate", "importance_by_query")  # per-query |contribution| summaries, as global_importance's


def feature_importance(ctx: Any) -> Any:
    """Per-feature importance of the surrogate the `surrogate` evidence fitted earlier in this audit (a pair effect's
    importance split evenly between its two features), or None when it has not run yet."""
    return ctx.memo(IMPORTANCE_KEY, lambda: None) if ctx.memoized(IMPORTANCE_KEY) else None


def importance_by_query(ctx: Any) -> Any:
    """The surrogate's exact per-document contributions summarised per query (`ImportanceByQuery`, a pair effect's
    contribution split evenly between its two features) and its mean Kendall tau with the audited model, when the
    `surrogate` evidence ran earlier in this audit; None otherwise. What `disclosure_consistency` measures a model
    without exact TreeSHAP (ONNX, a Python function) by."""
    return ctx.memo(SUMMARY_KEY, lambda: None) if ctx.memoized(SUMMARY_KEY) else None
