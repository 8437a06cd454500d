"""The `disclosure_consistency` evidence kind's spec options and the metrics it can emit (the spec loads this)."""

from __future__ import annotations

from pydantic import Field

from auditor.core.yaml_models import InputFile
from auditor.evidence.options import EvidenceOptions


class DisclosureConsistencyOptions(EvidenceOptions):
    declared: list[str] = Field([], description="The parameters the business discloses, most important first "
                                                "(feature names).")
    share_for_main: float = Field(0.8, gt=0, le=1, description="Main parameters = fewest features reaching this "
                                                               "share of the within-query importance.")
    min_share: float = Field(0.05, ge=0, le=1, description="A main parameter below this share of the importance "
                                                           "is not counted as influential when undeclared.")
    resamples: int = Field(200, ge=20, le=10_000, description="Bootstrap samples of queries for the stability of "
                                                              "the measured order.")
    # `exclude`: a file where this audit ran, kept out of the options evidence.json stores (its name and claims are
    # the item's facts), so a run presents again where the file no longer lies (`auditor render`)
    statement: InputFile | None = Field(None, exclude=True,
                                        description="The transparency statement the platform published (Markdown "
                                                    "or HTML, relative to the spec): each claim its `<!-- claim: ... "
                                                    "-->` markers make is checked against the evidence "
                                                    "(docs/disclose.md).")


METRICS = (  # what this kind can emit (EvidenceKind.metrics; auditor.evidence.registry.metric_pattern)
    "disclosure.{undeclared_main|undeclared_in_main|undeclared_share|declared_not_main|main_parameters"
    "|measured_on_surrogate|rank_correlation}",
    "disclosure.rank_correlation.{within_query|per_query|surrogate}",
    "disclosure.per_query.rank_correlation",
    "disclosure.per_query.rank_correlation.{mean|ci95_low|ci95_high}",
    "disclosure.undeclared_main.{ci95_low|ci95_high}",
    "disclosure.stability.{kendall|weighted_kendall|main_set_overlap}.{mean|p05}",
    "disclosure.stability.{main_set_agreement|undeclared_share}",
    "disclosure.statement.{claims|false_claims|uncertain_claims|unchecked_claims}",
)
