"""What the `pairwise` evidence will cost before it runs: queries, model rows, seconds beside the model
(auditor/run/cost.py; shared helpers in auditor/evidence/costs.py)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from auditor.run.cost import Shape


def estimate(options: Any, shape: Shape, earlier: Mapping[str, Any]) -> tuple[int, int, float, str]:
    queries, _ = shape.sample(options.queries)
    pairs = queries * (options.top - 1)
    f = shape.features
    if options.method == "raipair":
        per_pair = options.raipair.permutations * 2 * f * 2 * (options.raipair.measurements or
                                                                 max(2, int(2 * 5 * math.log(max(f, 2)))))
    elif f <= options.exact_max_features:
        per_pair = 2 ** f * 2
    else:
        per_pair = options.permutations * f * 2
    fill = 23 if options.fill == "adaptive" else 1  # adaptive: weighted training neighbours per coalition
    rows = pairs * per_pair * fill
    # beside the model: each coalition's reference rows and weights, which grow with the features (one core, on the
    # wide data: ~2.2e-6 s a row at 136 features, ~5.6e-6 at 700)
    beside = (1.4e-6 + 6e-9 * f) * rows
    return queries, int(rows), beside, f"{pairs} pairs × {options.permutations} permutations of {f} features"
