"""What the `global_importance` evidence will cost before it runs: queries, model rows, seconds beside the model
(auditor/run/cost.py; shared helpers in auditor/evidence/costs.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from auditor.evidence.costs import CELL_SECONDS

if TYPE_CHECKING:
    from auditor.run.cost import Shape


def estimate(options: Any, shape: Shape, earlier: Mapping[str, Any]) -> tuple[int, int, float, str]:
    rows = shape.docs + 20
    extra = 1.5 + 4e-8 * shape.docs * shape.trees * 31  # TreeSHAP passes (compiled), plots
    longest = float(shape.sizes.max()) if shape.sizes.size else 0.0  # the waterfall's query: ranks among others
    extra += CELL_SECONDS * (options.waterfall_features + 1) * longest ** 2
    return shape.queries, rows, extra, f"TreeSHAP of {shape.docs:,} documents"
