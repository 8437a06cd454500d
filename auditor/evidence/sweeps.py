"""Scores of every document with one feature set to each value of a grid, for several features at once: the
counterfactual rows that `parameter_influence` (a sensitive parameter swept over its values) and `exposure` (a
group feature set alike for every document) score. Not a plugin: a helper both import."""

from __future__ import annotations

import numpy as np

from auditor.evidence.base import AuditContext

MAX_ROWS = 1_000_000  # rows per predict call: the stacked block of a wide grid is scored in slices


def swept_scores(ctx: AuditContext, X: np.ndarray, features: list[int], grids: list[np.ndarray]) -> list[np.ndarray]:
    """Per feature, scores (grid values × documents) with that feature set to each grid value for every row of
    `X`; all rows stacked and scored in as few predict calls as `MAX_ROWS` allows."""
    blocks = []
    for feature, grid in zip(features, grids, strict=True):
        block = np.repeat(X[None, :, :], len(grid), axis=0)
        block[:, :, feature] = grid[:, None]
        blocks.append(block.reshape(-1, X.shape[1]))
    stacked = np.concatenate(blocks)
    scores = np.concatenate([ctx.model.predict(stacked[i:i + MAX_ROWS]) for i in range(0, len(stacked), MAX_ROWS)])
    out, start = [], 0
    for grid in grids:
        size = len(grid) * X.shape[0]
        out.append(scores[start:start + size].reshape(len(grid), X.shape[0]))
        start += size
    return out
