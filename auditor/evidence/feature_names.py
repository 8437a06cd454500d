"""Feature names in evidence options and metric names: checked against the data (nearest name as the fix) and made
into dotted-metric segments. Shared by `parameter_influence`, `exposure` and `disclosure_consistency`."""

from __future__ import annotations

import difflib
import re

from auditor.errors import InputError


def metric_name(feature: str) -> str:
    """A feature name as a dotted-metric segment: letters, digits and underscores only."""
    return re.sub(r"[^A-Za-z0-9_]+", "_", feature).strip("_") or "feature"


def check_feature_names(wanted: list[str], names: list[str], *, key: str) -> None:
    """Feature names given in options exist, each once; InputError(where=`key.index`) with the nearest name."""
    for index, name in enumerate(wanted):
        if name not in names:
            near = difflib.get_close_matches(name, names, n=1)
            raise InputError(f"'{name}' is not a feature of the data", where=f"{key}.{index}",
                             fix=f"did you mean '{near[0]}'?" if near else "use a feature name of the dataset")
        if name in wanted[:index]:
            raise InputError(f"'{name}' is listed twice", where=f"{key}.{index}", fix="keep each parameter once")
