"""How an estimate's value and 95% interval are spelled as metric names, and read back: the one place of the
convention (`checks.estimate.Estimate.metrics` writes it; the policy engine, the diff and the summary read it here,
none of them parses suffixes itself). Light: the policy engine imports it without numpy.

`<name>.mean` (or `<name>` itself) carries the value, `<name>.ci95_low` and `<name>.ci95_high` beside it the
interval — for `<name>.mean` the interval is named from `<name>`.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

LOW, HIGH = "ci95_low", "ci95_high"


def names(name: str, *, mean: str = "mean") -> tuple[str, str, str]:
    """The value's name and its interval's: (`<name>.<mean>` or `<name>`, `<name>.ci95_low`, `<name>.ci95_high`)."""
    return (f"{name}.{mean}" if mean else name, f"{name}.{LOW}", f"{name}.{HIGH}")


def spelled(name: str, value: float, low: float, high: float, *, always: bool = False) -> dict[str, float]:
    """`name`'s value and its interval under the names `read` finds them by (`<name>.ci95_low`, or `<stem>.ci95_low`
    for `<stem>.mean`): what a plugin writes instead of spelling the names itself. The interval is left out when an
    end is not finite, unless `always` (the kinds whose evidence has always kept NaN ends)."""
    stem = name.removesuffix(".mean")
    out = {name: float(value)}
    if always or (math.isfinite(low) and math.isfinite(high)):
        out[f"{stem}.{LOW}"], out[f"{stem}.{HIGH}"] = float(low), float(high)
    return out


@dataclass(frozen=True)
class Reading:
    """A metric as an evidence item reported it: its value and, when it is an estimate, its 95% interval."""

    value: float
    low: float | None = None
    high: float | None = None

    @property
    def interval(self) -> tuple[float, float] | None:
        """The interval when both ends are finite numbers, else None (an exact metric, or too few queries)."""
        if self.low is None or self.high is None or not (math.isfinite(self.low) and math.isfinite(self.high)):
            return None
        return (float(self.low), float(self.high))


def interval_of(metrics: Mapping[str, float | None], metric: str) -> tuple[float, float] | None:
    """The interval reported for `metric`: beside `metric`, or, for `<name>.mean`, beside `<name>`; None when there
    is none (both ends must be numbers, finite or not)."""
    for stem in [metric] + ([metric.removesuffix(".mean")] if metric.endswith(".mean") else []):
        low, high = metrics.get(f"{stem}.{LOW}"), metrics.get(f"{stem}.{HIGH}")
        if low is not None and high is not None:
            return float(low), float(high)
    return None


def read(metrics: Mapping[str, float | None], metric: str) -> Reading | None:
    """`metric` as `metrics` hold it, with its interval (`interval_of`). None when the metric is absent or null."""
    value = metrics.get(metric)
    if value is None:
        return None
    found = interval_of(metrics, metric)
    return Reading(float(value)) if found is None else Reading(float(value), *found)


def estimates(metrics: Mapping[str, float | None]) -> Iterator[tuple[str, Reading]]:
    """Every `<name>.mean` metric with its interval, in name order (what a comparison of two runs looks at)."""
    for key in sorted(metrics):
        if key.endswith(".mean"):
            found = read(metrics, key)
            if found is not None and found.low is not None:
                yield key, found
