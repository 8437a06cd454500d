"""What the `local_explanations` evidence will cost before it runs: queries, model rows, seconds beside the model
(auditor/run/cost.py; shared helpers in auditor/evidence/costs.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from auditor.evidence.costs import PAIR_SECONDS, building, fit_seconds, local_rows, step_rows, steps_saving

if TYPE_CHECKING:
    from auditor.run.cost import Shape


def estimate(options: Any, shape: Shape, earlier: Mapping[str, Any]) -> tuple[int, int, float, str]:
    queries, n = shape.sample(options.queries)
    ks = sorted({options.k, *[k for k in options.k_curve if k < shape.features]})
    rows = queries * local_rows(options, list(options.methods), shape, n, ks, shared=False)
    explain = building(rows, shape) + queries * fit_seconds(list(options.methods), options, shape.features)
    rankings = queries * local_rows(options, list(options.methods), shape, n, ks, shared=True) / max(n, 1.0)
    explain += PAIR_SECONDS * rankings * shape.pairs()  # each masked ranking's tau against the model's
    explain += steps_saving(queries * step_rows(options, list(options.methods), shape, n, ks), shape)
    return queries, int(rows), explain, (f"{queries} queries × ~{n:.0f} documents, {len(options.methods)} "
                                         f"explainers, k = {', '.join(map(str, ks))}")
