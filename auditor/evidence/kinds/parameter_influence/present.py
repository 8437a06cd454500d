"""What the documents say from the `parameter_influence` evidence as stored: the key figures it offers page 2 and
its Limitations sentences."""

from __future__ import annotations

from auditor.core.words import counted
from auditor.evidence.document import EvidenceItem
from auditor.evidence.registry import KeyFigure

Result = EvidenceItem  # the kind's result as evidence.json holds it (metrics, records, ...)


def key_figures(result: Result) -> list[KeyFigure]:
    """The figure the packs judge (issue 56: a key figure is what its rule judges): the share of queries whose top
    results change when the sensitive parameter that changes most of them is masked."""
    influence = result.metrics
    shares = sorted((k for k in influence if k.endswith(".topk_changed_share") and not k.startswith("influence.max.")
                     and influence[k] is not None), key=lambda k: -(influence[k] or 0.0))
    if not shares or influence.get("influence.max.topk_changed_share") is None:
        return []
    feature = shares[0].removeprefix("influence.").removesuffix(".topk_changed_share")
    others = f"; the largest of {counted(len(shares), 'sensitive parameter')}" if len(shares) > 1 else ""
    return [KeyFigure(40, f"Share of queries whose top results change when '{feature}' is masked",
                      "influence.max.topk_changed_share", "0 = no query's top results change" + others, share=True)]
