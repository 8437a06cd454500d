"""Evidence `governance` (always present): facts about the audit record itself (signed, retention, stated purpose,
owner, oversight, the data's source, the tool's distribution date...), so rules can address `governance.*`
(documentation and record-keeping duties). Its options are those facts, which the engine reads from the spec: the
plugin never sees the spec. `governance.days_audit_to_distribution` counts from the evaluation day (the audit's
date) to `audit.distribution_date`: the one governance figure that depends on the day the audit runs."""

from __future__ import annotations

import calendar
import datetime as dt
import re

from auditor.evidence.base import AuditContext, EvidenceResult
from auditor.evidence.kinds.governance.options import GovernanceOptions

PLACEHOLDERS = {"n/a", "na", "n.a", "none", "-", "—", "tbd", "tba", "to do", "todo", "to fill", "unknown", "?",
                "not applicable", "not stated", "xxx"}


def run(ctx: AuditContext, options: GovernanceOptions) -> EvidenceResult:
    meta = options.audit

    def stated(key: str) -> float:
        """1 for a real statement; a placeholder ("n/a", "TBD", "none", "-") states nothing (issue 56)."""
        value = str(meta.get(key) or "").strip()
        return float(bool(value) and value.casefold().strip(" .") not in PLACEHOLDERS)

    metrics = {
        "governance.signed": float(options.signed),
        "governance.purpose_stated": stated("purpose"),
        "governance.owner_stated": stated("owner"),
        "governance.period_stated": stated("period"),
        "governance.limitations_recorded": float(len(meta.get("limitations") or [])),
        "governance.baseline_present": float(options.baseline_present),
        "governance.intended_use_stated": stated("intended_use"),
        "governance.human_oversight_stated": stated("human_oversight"),
        "governance.independence_stated": stated("independence"),
        "governance.auditor_stated": stated("auditor"),
        "governance.features_described": float(options.features_described),
        "governance.data_source_stated": float(options.data_source_stated),
        "governance.data_type_stated": float(options.data_type is not None),
        "governance.distribution_date_stated": stated("distribution_date"),
    }
    distributed = meta.get("distribution_date")
    if distributed and options.evaluated_on:  # NYC LL144: the bias audit at most a year before the tool's use
        day = distributed if isinstance(distributed, dt.date) else dt.date.fromisoformat(str(distributed))
        metrics["governance.days_audit_to_distribution"] = float(
            (day - dt.date.fromisoformat(options.evaluated_on)).days)
    retention = meta.get("retention_years")
    result = EvidenceResult(name="governance", metrics=metrics,
                            summary="Dated run" + (", signed" if options.signed else ", not signed") +
                                    (f", kept {retention} years" if retention is not None else "") + ".")
    if retention is None:  # unstated is unknown, never "kept 0 years" (issue 56: not measured is not a failure)
        result.unmeasured["governance.retention_years"] = (
            "how long the run folder is kept is not stated: state in the spec the years the organisation keeps "
            "it (`audit.retention_years`)")
    else:
        metrics["governance.retention_years"] = float(retention)
    if options.evaluated_on:
        _dates(result, meta, options, dt.date.fromisoformat(options.evaluated_on))
    return result


ENGAGEMENT = "ISAE 3000 (Revised) §§ 24, 69 — the period and the date an assurance report covers"


def _dates(result: EvidenceResult, meta: dict, options: GovernanceOptions, day: dt.date) -> None:
    """The engagement's dates against the audit's day (issue 56): a review period that has not ended, data from a
    period that runs past the audit, a tool distributed before its audit — each a detection on page 2."""
    period = str(meta.get("period") or "")
    window = re.sub(r"\s*\([^()]*\)\s*$", "", str(options.data_window or ""))
    period_ends, window_ends = period_end(period), period_end(window)
    data = (f"; the data are said to come from {window}, which ends on {window_ends.isoformat()}, after it too "
            "(dataset.description.window)") if window_ends is not None and window_ends > day else ""
    if period_ends is not None and period_ends > day and meta.get("data_origin") == "synthetic" and window_ends is None:
        # simulated data from no calendar period: the rest of the period is not what the evidence misses, the whole
        # period is (a reader review: "has not ended" beside "Time window: none (simulated data)")
        result.detect("review-period-not-ended", f"No data of the review period {period} are in the evidence",
                      f"The data are synthetic and come from no calendar period: the figures show how the audited "
                      f"model ranks them on the audit's date ({day.isoformat()}), not what happened in the period "
                      f"under review ({period}, which ends on {period_ends.isoformat()}).", severity="minor",
                      citation=ENGAGEMENT, value=float((period_ends - day).days))
    elif period_ends is not None and period_ends > day:
        result.detect("review-period-not-ended", f"The review period {period} has not ended on the audit's date",
                      f"The audit is dated {day.isoformat()}, {(period_ends - day).days} days before the period it "
                      f"reviews ({period}) ends on {period_ends.isoformat()}: what happens in the rest of the period "
                      f"is not in the evidence{data}.", severity="minor", citation=ENGAGEMENT,
                      value=float((period_ends - day).days))
    elif data:
        result.detect("data-period-after-audit", f"The data's period ({window}) runs past the audit's date",
                      f"The audit is dated {day.isoformat()}{data}: the stated period is wrong, or part of the data "
                      "is not yet real.", severity="minor", citation=ENGAGEMENT,
                      value=float((window_ends - day).days) if window_ends is not None else None)
    days = result.metrics.get("governance.days_audit_to_distribution")
    if days is not None and days < 0:
        result.detect("distributed-before-audit", "The tool was in use before this audit",
                      f"audit.distribution_date is {-int(days)} days before the audit's date {day.isoformat()}: this "
                      "audit covers its use from its own date on; its use before needed an earlier audit.",
                      severity="minor", citation="NYC Local Law 144 of 2021, Admin. Code §20-871(a)(1) — no use "
                      "without a bias audit in the year before", value=days)


_QUARTER = re.compile(r"^\s*(\d{4})[-\s]?[Qq]([1-4])\s*$")
_HALF = re.compile(r"^\s*(\d{4})[-\s]?[Hh]([12])\s*$")
_MONTH = re.compile(r"^\s*(\d{4})-(\d{2})\s*$")
_YEAR = re.compile(r"^\s*(\d{4})\s*$")
_DAY = re.compile(r"(\d{4}-\d{2}-\d{2})\s*$")


def period_end(text: str) -> dt.date | None:
    """The last day of a period written as 2026, 2026-Q4, 2026-H2, 2026-11, or ending with a date ("2026-01-01 to
    2026-06-30"), a remark in parentheses after it allowed ("2026-Q4 (the period under review)"); None for anything
    else (free text is not guessed at)."""
    text = re.sub(r"\s*\([^()]*\)\s*$", "", text)
    try:
        if match := _QUARTER.match(text):
            year, month = int(match[1]), 3 * int(match[2])
        elif match := _HALF.match(text):
            year, month = int(match[1]), 6 * int(match[2])
        elif match := _MONTH.match(text):
            year, month = int(match[1]), int(match[2])
        elif match := _YEAR.match(text):
            year, month = int(match[1]), 12
        elif match := _DAY.search(text):
            return dt.date.fromisoformat(match[1])
        else:
            return None
        return dt.date(year, month, calendar.monthrange(year, month)[1])
    except ValueError:  # month 13, day 31 of February
        return None
