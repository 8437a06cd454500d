"""What the `confidence` evidence will cost before it runs: queries, model rows, seconds beside the model
(auditor/run/cost.py; shared helpers in auditor/evidence/costs.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from auditor.evidence.costs import PAIR_SECONDS, building, fit_seconds, local_rows, step_rows, steps_saving
from auditor.explain import registry

if TYPE_CHECKING:
    from auditor.run.cost import Shape


def estimate(options: Any, shape: Shape, earlier: Mapping[str, Any]) -> tuple[int, int, float, str]:
    from auditor.evidence.kinds.local_explanations.options import LocalExplanationsOptions

    queries, n = shape.sample(options.queries)
    local = LocalExplanationsOptions(methods=options.methods, k=options.k, kernelshap=options.kernelshap,
                                     lime=options.lime, greedy=options.greedy, search=options.search,
                                     optimum_max_subsets=0)  # confidence judges no optimum
    earlier_local = earlier.get("local_explanations")
    ran = set(earlier_local.methods) if earlier_local is not None else set()
    fresh = [m for m in options.methods if m not in ran]  # methods whose first runs local_explanations did not make
    reused = len(fresh) < len(options.methods)
    first = local_rows(local, fresh, shape, n, [options.k], shared=False) if fresh else 0.0
    rerun_methods = [m for m in options.methods if not registry.method(m).explainer.deterministic]
    rerun = options.rerun_fraction * local_rows(local, rerun_methods, shape, n, [options.k], shared=False)
    # each set and its complement under the held-out and the robustness rows (the estimate's target and signal)
    heldout = n * len(options.methods) * 2 * (options.heldout_rows + options.robustness_rows)
    rows = queries * (first + rerun + n * len(options.methods) + heldout)
    fits = queries * (options.rerun_fraction * fit_seconds(rerun_methods, local, shape.features)
                      + fit_seconds(fresh, local, shape.features))
    ranked = options.rerun_fraction * local_rows(local, rerun_methods, shape, n, [options.k], shared=True)
    if fresh:
        ranked += local_rows(local, fresh, shape, n, [options.k], shared=True)
    fits += PAIR_SECONDS * queries * ranked / max(n, 1.0) * shape.pairs()  # masked rankings' tau
    stepped = options.rerun_fraction * step_rows(local, rerun_methods, shape, n, [options.k])
    fits += steps_saving(queries * (stepped + (step_rows(local, fresh, shape, n, [options.k]) if fresh else 0.0)),
                         shape)
    return queries, int(rows), building(rows, shape) + fits, (
        f"{queries} queries, {len(options.methods)} explainers rerun for stability"
        + ("; first runs shared with local_explanations" if reused else ""))
