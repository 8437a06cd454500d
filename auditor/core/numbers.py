"""Numbers as every output prints them (HTML, PDF, figures' captions, the terminal, the history site): one
formatter, so a figure that appears twice reads the same twice (0.679 in the summary is 0.679 in its section, never
0.7; 1.3% is never 1%). Only the text matplotlib draws inside a figure follows its own tick labels (`plots.fmt`).

- `figure`: three significant figures, thousands separated, an error below 1e-9 shown as exact;
- `percent`: a share as a percentage with one decimal; `points`: a change of share in percentage points;
  `signed` and `positions`: a change with its sign (rank positions to one decimal); `data_value`: a feature's value
  as the data holds it;
- `interval`: one style for every 95% interval, `0.789 to 0.845` (words, because a dash between two negative
  numbers reads as a subtraction); `with_interval`: the value and its interval, the value always inside it.
"""

from __future__ import annotations

import math
from typing import Any


def figure(value: Any, digits: int = 3) -> str:
    """Three significant figures (`digits`), integers whole with thousands separated; "—" when missing."""
    if _missing(value):
        return "—"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if math.isinf(value):
        return "infinite" if value > 0 else "minus infinite"
    if isinstance(value, int) or (float(value).is_integer() and abs(value) < 1e12):
        return f"{int(value):,}"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    if value != 0 and abs(value) < 1e-9:
        return "< 1e-9"
    if value != 0 and abs(value) < 1e-3:
        return f"{value:.2e}"
    text = f"{value:#.{digits}g}".rstrip(".")  # 0.910, not 0.91: the same digits as the figures' labels
    return "0" if float(text) == 0 else text


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def signed(value: float, digits: int = 3) -> str:
    """`figure` with its sign always written: +0.056, -0.030."""
    text = figure(value, digits)
    return text if text.startswith(("-", "—", "<")) or value == 0 else f"+{text}"


def percent(value: Any) -> str:
    """A share (0-1) as a percentage with one decimal: 25.6%; "—" when missing."""
    if _missing(value) or isinstance(value, bool) or not isinstance(value, (int, float)):
        return "—"
    text = f"{100 * value:.1f}"
    return ("0.0" if float(text) == 0 else text) + "%"


def points(value: float) -> str:
    """A change of a share in percentage points, signed: +10.7 pp."""
    text = f"{100 * value:+.1f}"
    return ("0.0" if float(text) == 0 else text) + " pp"


def positions(value: float) -> str:
    """Rank positions with one decimal and a sign: +3.0, -0.5; 0.0 unsigned."""
    text = f"{float(value):+.1f}"
    return "0.0" if float(text) == 0 else text


def data_value(value: float) -> str:
    """A feature's value as the data holds it: whole numbers exactly, without separators (a year stays 2019), others
    as `figure`; "missing" when not a finite number."""
    value = float(value)
    if not math.isfinite(value):
        return "missing"
    if value.is_integer() and abs(value) < 1e9:
        return str(int(value))
    return figure(value)


def interval(low: Any, high: Any, *, share: bool = False) -> str:
    """A 95% interval: `0.789 to 0.845` (`25.1% to 30.2%` for shares); "—" when either end is missing or not
    finite."""
    if _missing(low) or _missing(high) or not (math.isfinite(low) and math.isfinite(high)):
        return "—"
    shown = percent if share else figure
    return f"{shown(low)} to {shown(high)}"


def with_interval(value: Any, low: Any = None, high: Any = None, *, share: bool = False) -> str:
    """`0.818 (95% interval 0.789 to 0.845)`; the value alone when there is no interval. The printed interval is
    widened to hold the value when a resampled statistic's percentiles miss it, so no reader sees a point outside
    its own interval."""
    shown = percent if share else figure
    if _missing(low) or _missing(high):
        return shown(value)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        low, high = min(low, value), max(high, value)
    return f"{shown(value)} (95% interval {interval(low, high, share=share)})"


def stored(value: Any, digits: int = 6) -> float | None:
    """A computed number as evidence.json keeps it: rounded to `digits` decimals (below that it is the arithmetic's
    noise, not evidence); None when missing or not finite (JSON has no NaN)."""
    if value is None:
        return None
    value = float(value)
    return round(value, digits) if math.isfinite(value) else None


def held(value: Any, low: Any, high: Any) -> tuple[float | None, float | None]:
    """A 95% interval widened to hold its value, as `with_interval` prints it (a resampled statistic's percentiles
    may miss the value itself); (None, None) when either end is missing or not finite."""
    if low is None or high is None or not (math.isfinite(low) and math.isfinite(high)):
        return None, None
    return min(low, value), max(high, value)
