"""The `confidence` evidence kind's registry entry (light: the spec imports it)."""

from __future__ import annotations

from auditor.evidence.kinds.confidence.options import METRICS, ConfidenceOptions
from auditor.evidence.registry import EvidenceKind

ENTRY = EvidenceKind("confidence", ConfidenceOptions, f"{__name__}.measure",
    "Explanations not to rely on", "Low-confidence flags per query and explainer, with reasons.",
    f"{__name__}.cost:estimate", metrics=METRICS,
    phrases=f"{__name__}.phrases",
    key_figures=f"{__name__}.present:key_figures", section=f"{__name__}.present:section",
    self_checks=("flags-not-validated",), sampled=True,
    pooled=True, masked=True,
    readme=(
    "each explanation's estimated reliability (out of sample: will it reproduce the ranking under "
    "masking it was not chosen on, and name the features the trees used?), flags below one half "
    "with the signals that pull it down, the estimate's AUC and calibration, the explanation to use"
    " where no attribution is reliable, attributions below the validity floor widened to the fewest"
    " of their own top features that hold, rankings too close to call listed apart, and the check "
    "that flagged ones are really worse"))
