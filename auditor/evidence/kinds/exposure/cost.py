"""What the `exposure` evidence will cost before it runs: queries, model rows, seconds beside the model
(auditor/run/cost.py; shared helpers in auditor/evidence/costs.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from auditor.run.cost import Shape


def estimate(options: Any, shape: Shape, earlier: Mapping[str, Any]) -> tuple[int, int, float, str]:
    queries, n = shape.sample(options.queries, rankable=False)
    groups = len(options.groups())
    values = sum(shape.distinct(g, options.max_values) for g in options.groups())
    rows = int(queries * n * values) if options.counterfactual else 0
    return queries, rows, 0.3 + 2e-6 * options.resamples * queries * max(groups, 1), \
        f"{groups} group column(s), {options.resamples} bootstrap samples"
