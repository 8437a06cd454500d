"""What the `surrogate` evidence will cost before it runs: queries, model rows, seconds beside the model
(auditor/run/cost.py; shared helpers in auditor/evidence/costs.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from auditor.evidence.kinds.surrogate.options import THREADED_CELLS

if TYPE_CHECKING:
    from auditor.run.cost import Shape


def estimate(options: Any, shape: Shape, earlier: Mapping[str, Any]) -> tuple[int, int, float, str]:
    rows = shape.background_docs + options.synthetic_per_document * shape.background_docs
    # boosting under interaction constraints: histogram building grows with rows × features, early stopping
    # typically stops near 200 rounds per phase
    rounds = min(options.max_rounds, 200) * 2
    boosting = 2.5e-9 * rows * shape.features * rounds * options.num_leaves / 8  # the wide set: 4.4 s on one thread
    if rows * shape.features >= THREADED_CELLS:  # trained on the audit's cores (measure._threads)
        boosting /= max(1.0, shape.workers)
    extra = 2.0 + boosting
    return shape.queries, rows, extra, f"ILMART on {shape.background_docs:,} background documents × " \
                                       f"{shape.features} features"
