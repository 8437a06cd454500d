"""What the `selection_rates` evidence will cost before it runs: queries, model rows, seconds beside the model
(auditor/run/cost.py; shared helpers in auditor/evidence/costs.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from auditor.run.cost import Shape


def estimate(options: Any, shape: Shape, earlier: Mapping[str, Any]) -> tuple[int, int, float, str]:
    """No model rows beyond the shared scores; the bootstrap's weighted medians and counts per draw and individual."""
    per_draw = shape.docs * (12.0 if options.cutoff == "median" else 4.0)
    return shape.queries, 0, 0.2 + 4e-9 * options.resamples * per_draw, \
        f"{options.resamples} bootstrap samples of {shape.docs:,} individuals"
