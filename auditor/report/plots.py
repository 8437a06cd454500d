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
        fig.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None}, bbox_inches="tight")
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
