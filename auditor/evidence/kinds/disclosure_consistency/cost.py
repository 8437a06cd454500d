"""What the `disclosure_consistency` evidence will cost before it runs: queries, model rows, seconds beside the model
(auditor/run/cost.py; shared helpers in auditor/evidence/costs.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from auditor.run.cost import Shape


def estimate(options: Any, shape: Shape, earlier: Mapping[str, Any]) -> tuple[int, int, float, str]:
    shared = "global_importance" in earlier
    rows = 0 if shared else shape.docs
    extra = 0.3 + 1e-6 * options.resamples * shape.queries * shape.features
    if not shared:
        extra += 4e-8 * shape.docs * shape.trees * 31
    return shape.queries, rows, extra, f"{options.resamples} bootstrap samples of queries" + \
        ("; TreeSHAP shared with global_importance" if shared else "")
