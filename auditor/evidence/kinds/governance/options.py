"""The `governance` evidence kind's spec options and the metrics it can emit (the spec loads this)."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from auditor.evidence.options import EvidenceOptions

METRICS = (  # what this kind can emit (EvidenceKind.metrics; auditor.evidence.registry.metric_pattern)
    "governance.{signed|retention_years|purpose_stated|owner_stated|period_stated|limitations_recorded"
    "|baseline_present|intended_use_stated|human_oversight_stated|independence_stated|auditor_stated"
    "|features_described|data_source_stated|data_type_stated|distribution_date_stated|days_audit_to_distribution}",
)


class GovernanceOptions(EvidenceOptions):
    audit: dict[str, Any] = Field(default_factory=dict, description="The spec's `audit:` block, as data.")
    signed: bool = Field(False, description="The spec has `signing:`.")
    baseline_present: bool = Field(False, description="The spec names a `baseline:` run, or the register holds a "
                                                      "previous review of the system.")
    features_described: bool = Field(False, description="The spec has `features:` or a `feature_dictionary:`.")
    data_source_stated: bool = Field(False, description="The spec's `dataset.description.frame` says where the data "
                                                        "come from.")
    data_type: str | None = Field(None, description="The spec's `dataset.description.data_type`: historical or test "
                                                    "data (6 RCNY §5-302).")
    evaluated_on: str | None = Field(None, description="The evaluation day (YYYY-MM-DD): the audit's date.")
    data_window: str | None = Field(None, description="The spec's `dataset.description.window`: the period the "
                                                      "data come from.")
