"""Scores of every document with one feature set to each value of a grid, for several features at once: the
counterfactual rows that `parameter_influence` (a sensitive parameter swept over its values) and `exposure` (a
group feature set alike for every document) score. Not a plugin: a helper both import."""

from __future__ import annotations

import numpy as np

from auditor.evidence.base import AuditContext

MAX_ROWS = 1_000_000  # rows per predict call, fewer on wide data: at most CELLS values (64 MB) built for one call
CELLS = 8_000_000


def swept_scores(ctx: AuditContext, X: np.ndarray, features: list[int], grids: list[np.ndarray]) -> list[np.ndarray]:
    """Per feature, scores (grid values × documents) with that feature set to each grid value for every row of
    `X`. The rows of a call are built when it is made: 19 values of a group column over 200 queries' 24k documents
    and 136 features, built at once and then stacked, held 1 GB, the peak of a 200-query audit. A model that scores
    each row on its own (every tree model) gives the same scores in any slices."""
    from auditor.models.base import rows_per_call

    n = X.shape[0]
    limit = rows_per_call(X.shape[1], MAX_ROWS, CELLS)
    out = []
    for feature, grid in zip(features, grids, strict=True):
        total, parts = len(grid) * n, []
        for start in range(0, total, limit):
            where = np.arange(start, min(start + limit, total))
            rows = X[where % n]  # row start + i is document (start + i) % n with the feature at value (start + i) // n
            rows[:, feature] = grid[where // n]
            parts.append(ctx.model.predict(rows))  # in the model's own dtype, as before
        out.append((np.concatenate(parts) if parts else np.empty(0)).reshape(len(grid), n))
    return out
