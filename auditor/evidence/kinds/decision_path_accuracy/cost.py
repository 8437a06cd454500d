"""What the `decision_path_accuracy` evidence will cost before it runs: queries, model rows, seconds beside the model
(auditor/run/cost.py; shared helpers in auditor/evidence/costs.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from auditor.evidence.costs import attributed
from auditor.explain import registry

if TYPE_CHECKING:
    from auditor.run.cost import Shape


def estimate(options: Any, shape: Shape, earlier: Mapping[str, Any]) -> tuple[int, int, float, str]:
    queries, _ = shape.sample(options.queries)
    local = options  # its explainer sections (kernelshap, lime...) are those of local_explanations (the registry's)
    shared = attributed(earlier.get("local_explanations"))  # explainers whose attributions are in the memo
    own = [e for e in options.explainers if e not in shared]
    rows = queries * sum(registry.EXPLAINERS[e].cost(local, shape, options.docs_per_query, 0.0, []) for e in own)
    # ground truth over every document (additivity) and the explained ones (1.7 s bookstore, 2.0 s wide data)
    extra = 1.5 + 1e-6 * shape.docs * shape.trees + 2e-7 * rows * shape.features ** 0.5
    reused = len(own) < len(options.explainers)
    return queries, int(rows), extra, (f"{queries} queries × {options.docs_per_query} documents, "
                                       f"{len(options.explainers)} explainers"
                                       + ("; attributions shared with local_explanations" if reused else ""))
