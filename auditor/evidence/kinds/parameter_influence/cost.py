"""What the `parameter_influence` evidence will cost before it runs: queries, model rows, seconds beside the model
(auditor/run/cost.py; shared helpers in auditor/evidence/costs.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from auditor.core.words import counted
from auditor.evidence.costs import CELL_SECONDS

if TYPE_CHECKING:
    from auditor.run.cost import Shape


def estimate(options: Any, shape: Shape, earlier: Mapping[str, Any]) -> tuple[int, int, float, str]:
    queries, n = shape.sample(options.queries, rankable=False)
    rows = int(queries * n * sum(1 + shape.distinct(f, options.sweep_points) for f in options.sensitive))
    rankings = sum(2 + shape.distinct(f, options.sweep_points) for f in options.sensitive)  # own, masked, swept
    cells = queries * CELL_SECONDS * rankings * 2 * shape.pairs(rankable=False)  # ranks among the others: n² each
    return queries, rows, 0.1 + 1e-6 * options.resamples * queries + cells, \
        f"{counted(len(options.sensitive), 'parameter')} masked and swept over {options.sweep_points} values"
