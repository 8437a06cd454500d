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
        ax.boxplot([np.asarray(v, dtype=float) for v in groups.values()], vert=False, widths=0.6,
                   flierprops={"markersize": 2})
        ax.set_yticks(range(1, len(groups) + 1), [_short(n, 30) for n in groups])
        ax.invert_yaxis()
        ax.set_xlabel(ylabel)
        return to_svg(fig)
