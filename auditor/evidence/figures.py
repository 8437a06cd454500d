"""What a figure shows, as data: the chart's name and its arguments in plain JSON, stored in evidence.json and drawn
by the report (`auditor.report.plots.draw`) when a document is rendered, so a run's report can be rendered again
from its evidence alone (`auditor render`).

Measuring code builds a `Figure` with the arguments of one of the report's charts; the arguments are encoded here
on creation (`encode`), so what the run draws is exactly what a later render decodes (`decode`): arrays keep their
dtype and shape, mappings their order, non-finite numbers their value. Decoding reads untrusted files: only the
types below, dtypes from an allow-list and shapes that match their values are accepted.

Also here, because measuring code computes them along with a figure's data: the numbers drawn inside figures
(`fmt`, `fmt_signed`, `fmt_value`, matplotlib's style with its minus sign), feature labels with units
(`axis_label`, `value_text`), the panels of the surrogate's small multiples and the cells of its pair heatmaps.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from auditor.core.errors import InputError
from auditor.inputs.feature_dictionary import is_yes_no

MINUS = "\u2212"  # the minus sign matplotlib's own tick labels use


def fmt(x: float, sig: int = 3) -> str:
    """A computed number with `sig` significant figures, without exponent between 1e-4 and 1e6; "0" for 0."""
    x = float(x)
    if not math.isfinite(x):
        return "n/a"
    if x == 0:
        return "0"
    rounded = float(f"{x:.{sig - 1}e}")  # to `sig` figures first, so 99.96 becomes 100 (not 100.0)
    magnitude = math.floor(math.log10(abs(rounded)))
    if magnitude >= 6 or magnitude < -4:
        return f"{x:.{sig - 1}e}".replace("-", MINUS)
    decimals = max(sig - 1 - magnitude, 0)
    return f"{rounded:.{decimals}f}".replace("-", MINUS)


def fmt_signed(x: float, sig: int = 3) -> str:
    """`fmt` with a + on positive numbers (contributions, pushes)."""
    text = fmt(x, sig)
    return text if text.startswith(MINUS) or text in ("0", "n/a") else "+" + text


def fmt_value(x: float) -> str:
    """A feature's value as the data holds it: whole numbers exactly (a year stays 2019), others to 3 figures."""
    x = float(x)
    if not math.isfinite(x):
        return "missing"
    if x.is_integer() and abs(x) < 1e9:
        return str(int(x)).replace("-", MINUS)
    return fmt(x)


def axis_label(name: str, unit: str | None) -> str:
    """A feature's name with its unit from the feature dictionary: "price (EUR)"; yes/no features keep the name."""
    if not unit or is_yes_no(unit):
        return name
    return f"{name}, {unit}" if "(" in unit else f"{name} ({unit})"


def value_text(name: str, value: float, unit: str | None) -> str:
    """"name = value" as shap's waterfall labels a row; yes/no features read "sponsored = yes"."""
    if is_yes_no(unit) and float(value) in (0.0, 1.0):
        return f"{name} = {'yes' if value else 'no'}"
    return f"{name} = {fmt_value(value)}"


# --- panels of the surrogate's small multiples ------------------------------------------------------------------

@dataclass(frozen=True)
class StepPanel:
    """An effect over a feature with many values, as drawn: the step curve (`values` over `edges`, len(edges) - 1
    values; the outer bins end at the data's range) over a histogram of the audited documents' values (`counts` over
    `hist_edges`), on a symlog axis with `linthresh` when the values are heavy-tailed and non-negative (else None).
    Made by `StepPanel.of` from the documents' values, so evidence.json keeps a histogram, not every document."""

    title: str
    edges: np.ndarray
    values: np.ndarray
    hist_edges: np.ndarray
    counts: np.ndarray
    linthresh: float | None = None

    @classmethod
    def of(cls, title: str, cuts: np.ndarray, values: np.ndarray, data: np.ndarray) -> StepPanel:
        """The panel of an effect with `cuts` and a value per bin (len(cuts) + 1) over the documents' `data`."""
        data = np.asarray(data, dtype=float)
        finite = data[np.isfinite(data)]
        edges = _step_edges(np.asarray(cuts, dtype=float), finite)
        linthresh = None
        if _skewed(finite):
            linthresh = max(float(np.percentile(finite, 50)), 1.0)
            positive = finite[finite > 0]
            hist_edges = np.unique(np.concatenate([[min(0.0, edges[0])], np.geomspace(
                positive.min() if positive.size else 1.0, edges[-1] + 1e-9, 25)]))
        else:
            hist_edges = np.linspace(edges[0], edges[-1], 26)
        counts, _ = np.histogram(finite, bins=hist_edges)
        return cls(title, edges, np.asarray(values, dtype=float), hist_edges, counts, linthresh)


def _step_edges(cuts: np.ndarray, data: np.ndarray) -> np.ndarray:
    """Bin edges for drawing a table over (-inf, c₁], …, (c_m, +inf): the outer bins end at the data's range."""
    finite = data[np.isfinite(data)]
    low = min(float(finite.min()) if finite.size else cuts[0], float(cuts[0]))
    high = max(float(finite.max()) if finite.size else cuts[-1], float(cuts[-1]))
    pad = 0.05 * ((high - low) or 1.0)
    return np.concatenate([[low - (pad if low == cuts[0] else 0.0)], cuts, [high + (pad if high == cuts[-1] else 0.0)]])


def _skewed(data: np.ndarray) -> bool:
    finite = data[np.isfinite(data)]
    return bool(finite.size and finite.min() >= 0 and finite.max() > 20 * max(np.percentile(finite, 90), 1e-12))


@dataclass(frozen=True)
class LevelPanel:
    """An effect over a feature with a few values (yes/no): one bar per value, with the share of documents."""

    title: str
    levels: Sequence[str]
    values: Sequence[float]
    shares: Sequence[float]


@dataclass(frozen=True)
class HeatAxis:
    """One feature of a pair effect: its label (with unit), the audited documents' values, and whether the values
    0/1 mean no/yes (from the feature dictionary)."""

    label: str
    data: np.ndarray
    yes_no: bool = False


def _display_bins(values: np.ndarray, yes_no: bool, most: int) -> tuple[np.ndarray, int, list[float], list[str]]:
    """Cells for one heatmap axis: one per value when there are at most `most` (labels at the cells' centres), else
    quantile bins of the documents' values, [e₀, e₁], (e₁, e₂], … (labels at the cells' edges, in feature units).
    Returns each document's cell (−1 for missing values), the cell count, tick positions and labels."""
    values = np.asarray(values, dtype=float)
    finite = np.isfinite(values)
    distinct = np.unique(values[finite])
    cell = np.full(len(values), -1)
    if len(distinct) <= most:
        cell[finite] = np.searchsorted(distinct, values[finite])
        names = {0.0: "no", 1.0: "yes"} if yes_no else {}
        return cell, max(len(distinct), 1), [i + 0.5 for i in range(len(distinct))], [
            names.get(float(v), fmt_value(v)) for v in distinct]
    edges = np.unique(np.quantile(values[finite], np.linspace(0, 1, most + 1)))
    cell[finite] = np.searchsorted(edges[1:-1], values[finite], side="left")
    return cell, len(edges) - 1, [float(i) for i in range(len(edges))], [fmt_value(e) for e in edges]


@dataclass(frozen=True)
class HeatPanel:
    """One pair effect as `pair_heatmaps` draws it: the mean effect per cell (x cells × y cells; NaN where no document
    falls), the axes' labels and their ticks (positions and texts, in the features' units)."""

    title: str
    x_label: str
    y_label: str
    means: np.ndarray
    x_ticks: list[float]
    x_texts: list[str]
    y_ticks: list[float]
    y_texts: list[str]


def pair_cells(panels: Sequence[tuple[str, HeatAxis, HeatAxis, np.ndarray]], *, most: int = 6) -> list[HeatPanel]:
    """The cells `pair_heatmaps` draws, per panel (title, x axis, y axis, the effect of every audited document):
    at most `most` × `most`; `cell_limit` of them gives a colour scale to share between figures."""
    grids = []
    for title, x_axis, y_axis, effect in panels:
        x_cell, nx, x_ticks, x_labels = _display_bins(x_axis.data, x_axis.yes_no, most)
        y_cell, ny, y_ticks, y_labels = _display_bins(y_axis.data, y_axis.yes_no, most)
        inside = (x_cell >= 0) & (y_cell >= 0)
        flat = x_cell[inside] * ny + y_cell[inside]
        total = np.bincount(flat, weights=np.asarray(effect, dtype=float)[inside], minlength=nx * ny)
        count = np.bincount(flat, minlength=nx * ny)
        means = np.where(count == 0, np.nan, np.divide(total, np.maximum(count, 1))).reshape(nx, ny)
        grids.append(HeatPanel(title, x_axis.label, y_axis.label, means, x_ticks, x_labels, y_ticks, y_labels))
    return grids


def cell_limit(grids: Sequence[HeatPanel]) -> float:
    """The largest |cell mean| of these panels: the end of a colour scale centred on 0."""
    return max([float(np.nanmax(np.abs(g.means))) for g in grids if np.isfinite(g.means).any()] + [1e-12])


PANELS = {kind.__name__: kind for kind in (StepPanel, LevelPanel, HeatPanel)}


# --- the codec ---------------------------------------------------------------------------------------------------

DTYPES = ("float64", "float32", "int64", "int32", "bool")  # numeric arrays a figure may hold; text is a list
NON_FINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


def line_trend(series: Mapping[str, Sequence[float]]) -> tuple[str, int, int]:
    """Which way a line chart's lines go, from first point to last: ("rises" | "falls" | "neither rises nor falls",
    lines ending higher, lines with both ends) — what its caption may claim (issue 56)."""
    ends = [(float(v[0]), float(v[-1])) for v in series.values()
            if len(v) >= 2 and np.isfinite(v[0]) and np.isfinite(v[-1])]
    rising, falling = sum(b > a for a, b in ends), sum(b < a for a, b in ends)
    trend = "rises" if rising > falling else "falls" if falling > rising else "neither rises nor falls"
    return trend, rising, len(ends)


def encode(value: Any) -> Any:
    """A chart argument as plain JSON (see the module docstring): arrays as {"__array__": their values in one line of
    text, each as Python writes it back exactly ("0.1 -2.5 nan"), "dtype", "shape"} (one line, not a line a number in
    the indented evidence.json), tuples
    as {"__tuple__"}, mappings in their order as {"__dict__": [[key, value], …]}, panels as {"__panel__"}, a
    non-finite number as {"__float__": "nan"}."""
    if isinstance(value, np.ndarray):
        if value.dtype.kind in "US":
            return [encode(item) for item in value.tolist()]
        dtype = str(value.dtype)
        if dtype not in DTYPES:
            value, dtype = value.astype(float), "float64"
        return {"__array__": " ".join(_token(item) for item in value.ravel().tolist()), "dtype": dtype,
                "shape": list(value.shape)}
    if isinstance(value, np.generic):
        return encode(value.item())
    if isinstance(value, float):
        return _number(value)
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, tuple):
        return {"__tuple__": [encode(item) for item in value]}
    if isinstance(value, list):
        return [encode(item) for item in value]
    if isinstance(value, dict):
        return {"__dict__": [[encode(key), encode(item)] for key, item in value.items()]}
    if type(value) in PANELS.values():
        return {"__panel__": type(value).__name__,
                "fields": {f.name: encode(getattr(value, f.name)) for f in dataclasses.fields(value)}}
    raise TypeError(f"a figure cannot store a {type(value).__name__}")


def _token(item: bool | int | float) -> str:
    return str(int(item)) if isinstance(item, bool) else repr(item)


def _number(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return {"__float__": "nan" if math.isnan(value) else "inf" if value > 0 else "-inf"}
    return value


def decode(value: Any) -> Any:
    """The chart argument `encode` stored; anything else is bad input (`InputError`: the evidence is not ours)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, list):
        return [decode(item) for item in value]
    if not isinstance(value, dict) or len(value) == 0:
        raise _bad(value)
    if "__array__" in value:
        return _array(value)
    if set(value) == {"__float__"} and value["__float__"] in NON_FINITE:
        return NON_FINITE[value["__float__"]]
    if set(value) == {"__tuple__"} and isinstance(value["__tuple__"], list):
        return tuple(decode(item) for item in value["__tuple__"])
    if set(value) == {"__dict__"} and isinstance(value["__dict__"], list) and all(
            isinstance(pair, list) and len(pair) == 2 for pair in value["__dict__"]):
        return {_key(decode(key)): decode(item) for key, item in value["__dict__"]}
    if set(value) == {"__panel__", "fields"} and value["__panel__"] in PANELS and isinstance(value["fields"], dict):
        kind = PANELS[value["__panel__"]]
        names = {f.name for f in dataclasses.fields(kind)}
        if not set(value["fields"]) <= names:
            raise _bad(value)
        return kind(**{name: decode(item) for name, item in value["fields"].items()})
    raise _bad(value)


def _array(value: dict[str, Any]) -> np.ndarray:
    text, dtype, shape = value.get("__array__"), value.get("dtype"), value.get("shape")
    if set(value) != {"__array__", "dtype", "shape"} or dtype not in DTYPES or not isinstance(text, str) or \
            not isinstance(shape, list) or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0
                                                   for n in shape):
        raise _bad(value)
    tokens = text.split()
    if math.prod(shape) != len(tokens):
        raise _bad(value)
    try:
        numbers = [float(t) for t in tokens] if dtype.startswith("float") else [int(t) for t in tokens]
    except ValueError:
        raise _bad(value) from None
    return np.array(numbers, dtype=dtype).reshape(shape)


def _key(key: Any) -> Any:
    if isinstance(key, (list, dict, set)):
        raise _bad(key)
    return key


def _bad(value: Any) -> InputError:
    shown = repr(value)
    return InputError(f"a figure's data holds what no chart takes ({shown[:60]}{'…' if len(shown) > 60 else ''})",
                      fix="render only evidence.json files written by auditor")
