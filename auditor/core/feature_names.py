"""Feature names in evidence options and metric names: checked against the data (nearest name as the fix) and made
into dotted-metric segments. Shared by `parameter_influence`, `exposure` and `disclosure_consistency`."""

from __future__ import annotations

import difflib
import re

from auditor.core.errors import InputError


def metric_name(feature: str) -> str:
    """A feature name as a dotted-metric segment: letters, digits and underscores only."""
    return re.sub(r"[^A-Za-z0-9_]+", "_", feature).strip("_") or "feature"


def metric_segments(names: list[str]) -> dict[str, str]:
    """Each feature's dotted-metric segment (`metric_name`), for the features whose segment no other feature of
    `names` shares: a metric named after one of two such features (`a.b`, `a_b`) could be read as the other's, so
    neither gets one. The writers of per-feature metrics (`global_importance`, `surrogate`) and their readers (the
    statement's claims, auditor/disclosure/) name features through this one mapping."""
    segments = [metric_name(name) for name in names]
    counts: dict[str, int] = {}
    for segment in segments:
        counts[segment] = counts.get(segment, 0) + 1
    return {name: segment for name, segment in zip(names, segments, strict=True) if counts[segment] == 1}


def check_feature_names(wanted: list[str], names: list[str], *, key: str) -> None:
    """Feature names given in options exist, each once; InputError(where=`key.index`) with the nearest name."""
    for index, name in enumerate(wanted):
        if name not in names:
            near = difflib.get_close_matches(name, names, n=1)
            raise InputError(f"'{name}' is not a feature of the data", where=f"{key}.{index}",
                             fix=f"did you mean '{near[0]}'?" if near else "use a feature name of the dataset")
        if name in wanted[:index]:
            raise InputError(f"'{name}' is listed twice", where=f"{key}.{index}", fix="keep each parameter once")
