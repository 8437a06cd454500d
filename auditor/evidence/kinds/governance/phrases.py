"""The `governance` metrics a policy rule judges, as sentences a compliance officer reads without the
metric's key (`auditor.report.wording`: a finding's title and its measured value)."""

from __future__ import annotations

from auditor.core.words import counted
from auditor.evidence.phrases import Phrase, stated

PHRASES: dict[str, Phrase] = {
    "governance.signed": stated("the report is signed", "the report is not signed", "signed"),
    "governance.owner_stated": stated("the model owner is stated", "the model owner is not stated"),
    "governance.period_stated": stated("the period under review is stated", "the period under review is not stated"),
    "governance.purpose_stated": stated("the purpose is stated", "the purpose is not stated"),
    "governance.intended_use_stated": stated("the intended use is stated", "the intended use is not stated"),
    "governance.baseline_present": stated("the audit is compared with a previous review",
                                           "no previous review is named to compare with", "compared"),
    "governance.limitations_recorded": lambda v, _: (f"{counted(int(v), 'limitation')} recorded by the owner"
                                                     if v else "no limitation is recorded by the owner"),
    "governance.distribution_date_stated": stated("the tool's distribution date is stated",
                                                   "the tool's distribution date is not stated"),
    "governance.days_audit_to_distribution": lambda v, _: (
        f"the tool is distributed {counted(int(v), 'day')} after this audit" if v >= 0 else
        f"the tool was distributed {counted(int(-v), 'day')} before this audit"),
    "governance.data_source_stated": stated("the source of the audit's data is described",
                                             "the source of the audit's data is not described", "described"),
    "governance.data_type_stated": stated("whether the data are historical or test data is stated",
                                           "whether the data are historical or test data is not stated"),
    "governance.retention_years": lambda v, _: (f"evidence is kept for {counted(int(v), 'year')}" if v else
                                                "no retention period is stated"),
}
# what a count counts, where a table prints the number alone (Appendix A: "47 days", not "47")
UNITS: dict[str, str] = {
    "governance.limitations_recorded": "limitation",
    "governance.days_audit_to_distribution": "day",
    "governance.retention_years": "year",
}
