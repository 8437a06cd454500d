"""Matplotlib figures as deterministic SVG text: same data ⇒ same bytes (fixed hash salt, no date).

Text stays text (`svg.fonttype = none`): searchable, accessible, and escaped by matplotlib's SVG writer, which
matters because feature names come from untrusted files.
"""

from __future__ import annotations

import io
from collections.abc import Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

_STYLE = {
    "svg.hashsalt": "auditor",
    "svg.fonttype": "none",
    "font.family": "DejaVu Sans",
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.titlesize": 10,
}
_COLOR = "#2f5d8a"


def to_svg(fig: plt.Figure) -> str:
    """Serialise and close a figure; strip the XML prolog so it can be inlined in HTML."""
    buffer = io.StringIO()
    with matplotlib.rc_context(_STYLE):
        fig.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None}, bbox_inches="tight", dpi=150)
    plt.close(fig)
    text = buffer.getvalue()
    return text[text.index("<svg"):]


def bar_chart(labels: Sequence[str], values: Sequence[float], *, xlabel: str, title: str = "") -> str:
    """Horizontal bars, largest on top."""
    with matplotlib.rc_context(_STYLE):
        height = 0.6 + 0.28 * max(len(labels), 1)
        fig, ax = plt.subplots(figsize=(6.4, height))
        positions = np.arange(len(labels))[::-1]
        ax.barh(positions, values, color=_COLOR)
        ax.set_yticks(positions, [_short(label) for label in labels])
        ax.set_xlabel(xlabel)
        if title:
            ax.set_title(title)
        return to_svg(fig)


def histogram(values: np.ndarray, *, bins: int | Sequence[float], xlabel: str, ylabel: str = "queries",
              title: str = "") -> str:
    with matplotlib.rc_context(_STYLE):
        fig, ax = plt.subplots(figsize=(6.4, 2.6))
        ax.hist(values[np.isfinite(values)], bins=bins, color=_COLOR, edgecolor="white")
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        if title:
            ax.set_title(title)
        return to_svg(fig)


def _short(label: str, limit: int = 40) -> str:
    return label if len(label) <= limit else label[: limit - 1] + "…"


def line_chart(x: Sequence[float], series: dict[str, Sequence[float]], *, xlabel: str, ylabel: str,
               title: str = "") -> str:
    """One line per series (legend outside the axes so long names never cover data)."""
    with matplotlib.rc_context(_STYLE):
        fig, ax = plt.subplots(figsize=(6.4, 3.2))
        markers = "os^vD<>ph*"
        for i, (name, values) in enumerate(series.items()):
            ax.plot(x, values, marker=markers[i % len(markers)], linewidth=1.2, markersize=4, label=_short(name))
        ax.set_xticks(list(x))
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        if title:
            ax.set_title(title)
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False, fontsize=8)
        return to_svg(fig)


def beeswarm(phi: np.ndarray, values: np.ndarray, names: Sequence[str], *, xlabel: str) -> str:
    """SHAP summary: one row per feature (top first), each document a dot at its φ, coloured by the feature's
    value (low blue → high red, by rank within the feature). Vertical spread by a deterministic histogram offset,
    not random jitter, so the same data gives the same picture."""
    with matplotlib.rc_context(_STYLE):
        fig, ax = plt.subplots(figsize=(6.4, 0.6 + 0.32 * len(names)))
        for row, (column, value_column) in enumerate(zip(phi.T, values.T, strict=True)):
            y = len(names) - 1 - row
            ranks = np.argsort(np.argsort(np.nan_to_num(value_column), kind="stable"), kind="stable")
            colour = ranks / max(len(ranks) - 1, 1)
            bins = np.round((column - column.min()) / (np.ptp(column) or 1.0) * 60).astype(int)
            offset = np.zeros(len(column))
            for b in np.unique(bins):
                members = np.flatnonzero(bins == b)
                spread = (np.arange(len(members)) - (len(members) - 1) / 2) / max(len(members), 1)
                offset[members] = spread * min(0.8, 0.04 * len(members))
            ax.scatter(column, y + offset, c=colour, cmap="coolwarm", s=5, linewidths=0, vmin=0, vmax=1,
                       rasterized=True)  # thousands of dots: an embedded image, or PDF rendering takes a minute
        ax.axvline(0, color="#999999", linewidth=0.8)
        ax.set_yticks(range(len(names)), [_short(n) for n in names][::-1])
        ax.set_xlabel(xlabel)
        return to_svg(fig)


def scatter(x: np.ndarray, y: np.ndarray, *, xlabel: str, ylabel: str) -> str:
    with matplotlib.rc_context(_STYLE):
        fig, ax = plt.subplots(figsize=(6.4, 3.0))
        ax.scatter(x, y, s=6, color=_COLOR, alpha=0.6, linewidths=0, rasterized=True)
        ax.axhline(0, color="#999999", linewidth=0.8)
        ax.set_xlabel(_short(xlabel, 60))
        ax.set_ylabel(ylabel)
        return to_svg(fig)


def decision_plot(phi: np.ndarray, base: float, names: Sequence[str], labels: Sequence[str], *,
                  xlabel: str) -> str:
    """One line per document: from the base value, add each feature's φ (features ordered as given, most
    important last, at the top) and end at the document's score. Where lines cross, the order changes."""
    with matplotlib.rc_context(_STYLE):
        fig, ax = plt.subplots(figsize=(6.4, 0.8 + 0.3 * len(names)))
        steps = np.arange(len(names) + 1)
        for row, label in zip(phi, labels, strict=True):
            path = base + np.concatenate([[0.0], np.cumsum(row)])
            ax.plot(path, steps, linewidth=1.0, marker="o", markersize=2, label=_short(label, 30))
        ax.set_yticks(steps[1:], [_short(n) for n in names])
        ax.set_xlabel(xlabel)
        ax.axvline(base, color="#999999", linewidth=0.8)
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False, fontsize=7)
        return to_svg(fig)


def box_plot(groups: dict[str, Sequence[float]], *, ylabel: str) -> str:
    """Distribution per group (median, quartiles, whiskers at 1.5 IQR), groups in the given order."""
    with matplotlib.rc_context(_STYLE):
        fig, ax = plt.subplots(figsize=(6.4, 3.2))
        ax.boxplot([np.asarray(v, dtype=float) for v in groups.values()], orientation="horizontal", widths=0.6,
                   flierprops={"markersize": 2})
        ax.set_yticks(range(1, len(groups) + 1), [_short(n, 30) for n in groups])
        ax.invert_yaxis()
        ax.set_xlabel(ylabel)
        return to_svg(fig)


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


def step_curves(panels: Sequence[tuple[str, np.ndarray, np.ndarray, np.ndarray]], *, ylabel: str,
                columns: int = 2) -> str:
    """Small multiples of piecewise-constant effects: each panel (name, cuts, values per bin, data values) is a step
    curve over the data's range, with a histogram of the data drawn in grey along the bottom of the same axes.
    Heavy-tailed non-negative features get a symlog axis so the bins near zero stay visible."""
    n = len(panels)
    rows = max(1, -(-n // columns))
    with matplotlib.rc_context(_STYLE):
        fig, axes = plt.subplots(rows, columns, figsize=(6.4, 1.9 * rows), squeeze=False)
        for k, ax in enumerate(axes.flat):
            if k >= n:
                ax.set_visible(False)
                continue
            name, cuts, values, data = panels[k]
            data = np.asarray(data, dtype=float)
            finite = data[np.isfinite(data)]
            edges = _step_edges(np.asarray(cuts, dtype=float), finite)
            low, high = float(np.min(values)), float(np.max(values))
            span = (high - low) or 1.0
            if _skewed(finite):
                ax.set_xscale("symlog", linthresh=max(float(np.percentile(finite, 50)), 1.0))
                positive = finite[finite > 0]
                hist_edges = np.unique(np.concatenate([[min(0.0, edges[0])], np.geomspace(
                    positive.min() if positive.size else 1.0, edges[-1] + 1e-9, 25)]))
            else:
                hist_edges = np.linspace(edges[0], edges[-1], 26)
            counts, _ = np.histogram(finite, bins=hist_edges)
            floor = low - 0.45 * span  # the histogram lives below the curve, scaled to a third of the curve's span
            ax.stairs(floor + counts / max(counts.max(), 1) * 0.35 * span, hist_edges, baseline=floor, fill=True,
                      color="#d3dbe4")
            ax.stairs(values, edges, color=_COLOR, linewidth=1.4, baseline=None)
            ax.axhline(0, color="#999999", linewidth=0.6)
            ax.set_ylim(floor, high + 0.05 * span)
            ax.set_title(_short(name, 40), fontsize=9)
            ax.tick_params(labelsize=7)
            if k % columns == 0:
                ax.set_ylabel(ylabel, fontsize=8)
        fig.tight_layout(h_pad=0.6, w_pad=0.8)
        return to_svg(fig)


def heatmap(cuts_x: np.ndarray, cuts_y: np.ndarray, values: np.ndarray, *, xlabel: str, ylabel: str,
            colorbar: str) -> str:
    """A pair effect over its bins: equal-width cells (bins, not units, so heavy tails stay readable), axis ticks
    at the cuts in the features' own units, a diverging colour scale centred on 0. `values` is (x bins × y bins)."""
    def ticks(cuts: np.ndarray) -> tuple[list[float], list[str]]:
        step = max(1, -(-len(cuts) // 8))
        chosen = list(range(0, len(cuts), step))
        return [i + 1.0 for i in chosen], [f"{0.0 if abs(cuts[i]) < 1e-30 else cuts[i]:.4g}" for i in chosen]

    with matplotlib.rc_context(_STYLE):
        fig, ax = plt.subplots(figsize=(5.2, 3.8))
        limit = float(np.max(np.abs(values))) or 1.0
        mesh = ax.pcolormesh(np.arange(values.shape[0] + 1), np.arange(values.shape[1] + 1), values.T,
                             cmap="RdBu_r", vmin=-limit, vmax=limit, shading="flat")
        positions, labels = ticks(np.asarray(cuts_x))
        ax.set_xticks(positions, labels, rotation=45, ha="right", fontsize=7)
        positions, labels = ticks(np.asarray(cuts_y))
        ax.set_yticks(positions, labels, fontsize=7)
        ax.set_xlabel(_short(xlabel, 60) + " (bin edges)")
        ax.set_ylabel(_short(ylabel, 60) + " (bin edges)")
        fig.colorbar(mesh, ax=ax, label=colorbar)
        return to_svg(fig)
