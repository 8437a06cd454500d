"""What the documents say from the `global_importance` evidence as stored: the key figures it offers page 2 and
its Limitations sentences."""

from __future__ import annotations

import math

from auditor.core.numbers import percent
from auditor.evidence.document import EvidenceItem
from auditor.evidence.registry import KeyFigure

Result = EvidenceItem  # the kind's result as evidence.json holds it (metrics, records, ...)


MAIN_NAMED = 6  # main parameters page 2 names one by one; more are the three largest "and N more"


def key_figures(result: Result) -> list[KeyFigure]:
    records = result.records
    if not records:
        return []
    ranked = sorted(records, key=lambda r: r.get("rank", 0))
    main = result.metrics.get("global_importance.main_parameters")
    count = int(main) if isinstance(main, (int, float)) and math.isfinite(main) else 3
    # every main parameter when they are few (issue 56: page 2 named 3 of 5, leaving out the undeclared one), else
    # the largest shares and how many more
    shown = ranked[:count] if count <= MAIN_NAMED else ranked[:3]
    largest = (("" if count <= MAIN_NAMED else "largest shares: ")
               + ", ".join(f"{r['feature']} {percent(r.get('within_query.share'))}" for r in shown)
               + (f" and {count - len(shown)} more" if count > len(shown) else ""))
    return [KeyFigure(20, "Main ranking parameters (the fewest features carrying 80% of what orders documents within "
                          "a query)", "global_importance.main_parameters", largest)]
