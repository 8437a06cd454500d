"""Matplotlib figures as deterministic SVG text: same data ⇒ same bytes (fixed hash salt, no date).

Text stays text (`svg.fonttype = none`): searchable, accessible, and escaped by matplotlib's SVG writer, which
matters because feature names come from untrusted files. Mathtext is off (`text.parse_math`): a feature named
`$x$` is drawn as written, and one named `$\\frac$` no longer stops the figure from rendering. Every text of a
figure (tick labels, titles, legends, annotations) goes through `auditor.core.display.shown` once, in `to_svg`: a name's
bidi overrides and invisible characters show as ⟨U+202E⟩, mixed-script letters are marked, long names are cut.

Numbers drawn inside figures follow matplotlib's tick labels, with its minus sign (`fmt`, `fmt_value`, `fmt_share`,
`fmt_positions`: 3 significant figures, feature values as the data holds them, shares as %, rank positions with one
decimal); captions and every other text print numbers with `auditor.core.numbers`.
A figure of the evidence (`auditor.evidence.base.Figure`: a chart's name and its data) is drawn by `draw`, when a
document is rendered, and labelled for screen readers by `label_svg`: `role="img"`, an `aria-label`, and
`<title>`/`<desc>` elements.
"""

from __future__ import annotations

import hashlib
import html
import io
import json
import math
import re
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.cm import ScalarMappable
from matplotlib.colors import Normalize
from matplotlib.layout_engine import ConstrainedLayoutEngine
from matplotlib.patches import Patch
from matplotlib.text import Text
from matplotlib.ticker import Formatter, FuncFormatter, MaxNLocator, PercentFormatter

from auditor.core.display import shown
from auditor.core.errors import InputError, shorten
from auditor.evidence.base import Figure
from auditor.evidence.figures import (  # also this module's names: measuring code builds a figure's data with them
    MINUS,
    HeatPanel,
    LevelPanel,
    StepPanel,
    cell_limit,
    decode,
    fmt,
    fmt_signed,
    fmt_value,
)

if TYPE_CHECKING:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.typing import RcKeyType

# Figures are made at the size they print: a function's `figsize` is the box its figure fills on the page (inches;
# `to_svg` fits the drawing into it), and print-layout.css shows a figure at its own size, never scaled down, so a
# font size here is the size on paper. No text is smaller than MIN_FONT (tests/test_print_quality.py measures it).
PRINT_WIDTH = 7.0  # inches: the A4 portrait page's 182 mm text width, less a little
MIN_FONT = 7.0  # points
_STYLE: dict[RcKeyType, object] = {
    "svg.hashsalt": "auditor",
    "svg.fonttype": "none",
    "font.family": "DejaVu Sans",
    "font.size": 8,
    "xtick.labelsize": 7.5,
    "ytick.labelsize": 7.5,
    "legend.fontsize": 7.5,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.titlesize": 8.5,
    "text.parse_math": False,  # untrusted names: no mathtext, `$` is a dollar sign
}
_COLOR = "#2f5d8a"
_UP, _DOWN = "#b2182b", "#2166ac"  # pushes up / down: the red and blue of the heatmaps' RdBu scale
_GREY = "#999999"
_FADED = "#c4c4c4"  # what a chart shows but the judged figures leave out


def fmt_share(x: float) -> str:
    """A share as a percentage with one decimal (27.6%)."""
    return f"{round(100 * float(x), 1) + 0.0:.1f}%".replace("-", MINUS)  # + 0.0: no "−0.0%"


def fmt_positions(x: float) -> str:
    """Rank positions with one decimal and a sign (+3.0, −0.5)."""
    value = round(float(x), 1) + 0.0  # + 0.0 turns −0.0 into 0.0
    return "0.0" if value == 0 else f"{value:+.1f}".replace("-", MINUS)


def label_svg(svg: str, title: str, description: str) -> str:
    """The SVG labelled for assistive technology: `role="img"`, `aria-label` (the title), `aria-describedby` the
    `<desc>` (one sentence), `<title>` as the first child. Idempotent; the text is XML-escaped (untrusted names).
    The id is a hash of the content, so the same figure gets the same bytes."""
    if not svg.startswith("<svg") or 'role="img"' in svg[: svg.index(">")]:
        return svg
    ident = "desc-" + hashlib.sha256((title + "\0" + description + "\0" + svg).encode()).hexdigest()[:12]
    end = svg.index(">")
    title_text = html.escape(shown(title), quote=True)
    description_text = html.escape(shown(description), quote=True)
    attributes = f' role="img" aria-label="{title_text}" aria-describedby="{ident}"'
    return (svg[:end] + attributes + ">" + f"\n <title>{title_text}</title>\n <desc id=\"{ident}\">"
            + f"{description_text}</desc>" + svg[end + 1:])


PLOT_CHARS = 200  # characters of one line of text in a figure
_MULTILINE: weakref.WeakSet = weakref.WeakSet()  # texts this module writes on several lines itself


class _Shown(Formatter):
    """Tick labels through `shown`: whatever the wrapped formatter writes (names given to `set_yticks` become a
    function of a dict in matplotlib 3.11, so wrapping is the one place every label passes)."""

    def __init__(self, inner: Formatter) -> None:
        self.inner = inner

    def __call__(self, x: float, pos: int | None = None) -> str:
        return shown(self.inner(x, pos), limit=PLOT_CHARS)

    def format_ticks(self, values: list[float]) -> list[str]:
        return [shown(label, limit=PLOT_CHARS) for label in self.inner.format_ticks(values)]

    def set_locs(self, locs: list[float]) -> None:
        self.inner.set_locs(locs)

    def get_offset(self) -> str:
        return shown(self.inner.get_offset(), limit=PLOT_CHARS)


def show_texts(fig: plt.Figure) -> None:
    """Every text of `fig` as `auditor.core.display.shown`, once: tick labels (each axis's formatters wrapped; shared
    axes share them), titles, axis and legend labels, annotations. Texts this module wrote on several lines keep
    their line breaks; in any other text, names included, a line break is marked like other control characters."""
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            if not isinstance(axis.get_major_formatter(), _Shown):
                axis.set_major_formatter(_Shown(axis.get_major_formatter()))
            if not isinstance(axis.get_minor_formatter(), _Shown):
                axis.set_minor_formatter(_Shown(axis.get_minor_formatter()))
    seen: set[int] = set()
    for text in fig.findobj(Text):
        if id(text) in seen:
            continue
        seen.add(id(text))
        value = text.get_text()
        if text in _MULTILINE:
            text.set_text("\n".join(shown(line, limit=PLOT_CHARS) for line in value.split("\n")))
        elif value:
            text.set_text(shown(value, limit=PLOT_CHARS))


_SIZE = re.compile(r'<svg[^>]*?width="([\d.]+)pt"[^>]*?height="([\d.]+)pt"')


def _save(fig: plt.Figure) -> str:
    buffer = io.StringIO()
    with matplotlib.rc_context(_STYLE):
        fig.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None}, bbox_inches="tight", dpi=150)
    text = buffer.getvalue()
    return text[text.index("<svg"):]


def fit(fig: plt.Figure, tight: dict | None = None) -> str:
    """The figure's SVG, shrunk until everything drawn (labels beyond the axes, a legend outside them) fits in the
    size it was made at: the SVG is then at most its `figsize`, the box it prints in. Text keeps its size; the axes
    give. Measured on the SVG itself (text extents differ between renderers)."""
    width, height = (72 * v for v in fig.get_size_inches())  # pt
    steps = _Steps(width, height)
    with matplotlib.rc_context(_STYLE):  # first fitted on the raster renderer's extents: a draw, not an SVG each
        for _ in range(6):
            if tight is not None:
                fig.tight_layout(**tight)
            box = fig.get_tightbbox(cast("FigureCanvasAgg", fig.canvas).get_renderer())  # the Agg backend (above)
            pad = 144 * matplotlib.rcParams["savefig.pad_inches"]  # the tight SVG's margin, both sides
            pad += 8  # the SVG's text runs up to ~6 pt wider than the raster extents of the same labels
            over_w, over_h = 72 * box.width + pad - width, 72 * box.height + pad - height
            if (over_w <= 0.5 and over_h <= 0.5) or not steps.shrink(fig, over_w, over_h):
                break
    steps.measured_anew()  # the SVG's extents differ from the raster's by a few pt: no secant across the two
    for _ in range(6):  # then checked, and if need be refitted, on the SVG itself
        if tight is not None:
            fig.tight_layout(**tight)
        svg = _save(fig)
        size = _SIZE.search(svg[:600])
        assert size is not None, "matplotlib's SVG states its size"
        over_w, over_h = float(size.group(1)) - width, float(size.group(2)) - height
        if over_w <= 0.5 and over_h <= 0.5:
            break
        if not steps.shrink(fig, over_w, over_h):
            break
    return svg


# pt the drawing's box shrinks per pt the figure does, before two sizes are measured: 0.66-0.81 on our charts (the
# axes give, the text does not). Taking the whole overshoot off (1.0) landed short and took four to six draws a figure.
FIRST_SLOPE = 0.8


class _Steps:
    """The figure's next size from the overshoots measured so far: the first step at `FIRST_SLOPE`, then the
    secant's (how much the box shrank per pt the figure did, read off the last two draws of one renderer, and kept
    for the next); 5% more, so that the next draw lands inside rather than just short."""

    def __init__(self, width: float, height: float) -> None:
        self.smallest = (0.35 * width, 0.6 * height)  # pt: labels and legends need some room
        self.slope = [FIRST_SLOPE, FIRST_SLOPE]  # per dimension: pt of box per pt of figure
        self.last: list[tuple[float, float] | None] = [None, None]  # per dimension: (size, overshoot) measured

    def measured_anew(self) -> None:
        """Overshoots from now on are measured another way: the slope learnt is kept, not the last measurement."""
        self.last = [None, None]

    def shrink(self, fig: plt.Figure, over_w: float, over_h: float) -> bool:
        """Take the overshoot (pt) off the figure's size, the text keeping its size. False when the figure is
        already at its smallest (nothing more to try)."""
        now = [72 * float(v) for v in fig.get_size_inches()]
        new = [self._step(axis, now[axis], over) for axis, over in enumerate((over_w, over_h))]
        fig.set_size_inches(new[0] / 72, new[1] / 72)
        return any(abs(a - b) > 72e-6 for a, b in zip(new, now, strict=True))

    def _step(self, axis: int, size: float, over: float) -> float:
        last = self.last[axis]
        if last is not None and last[0] - size > 0.5 and over > 0:  # bounded: ticks can change as it shrinks
            self.slope[axis] = min(max((last[1] - over) / (last[0] - size), 0.3), 1.0)
        self.last[axis] = (size, over)
        return max(size - max(over, 0.0) * 1.05 / self.slope[axis], self.smallest[axis])


def to_svg(fig: plt.Figure, *, tight: dict | None = None) -> str:
    """Serialise and close a figure, its texts shown (`show_texts`) first; `tight`: `tight_layout` options, applied
    after that (a marker lengthens a label); fitted to its size (`fit`); the XML prolog stripped so it can be
    inlined in HTML."""
    show_texts(fig)
    svg = fit(fig, tight)
    plt.close(fig)
    return svg


def bar_chart(labels: Sequence[str], values: Sequence[float], *, xlabel: str, title: str = "",
              percent: bool = False, cut: int | None = None, cut_label: str = "") -> str:
    """Horizontal bars, largest on top, each with its value at its end (`percent`: values are shares, shown as %).
    `cut`: the first `cut` bars are the ones a rule judges (the main parameters): the rest are grey, below a dashed
    line labelled `cut_label` — the chart carries the cut it is judged by."""
    with matplotlib.rc_context(_STYLE):
        height = 0.45 + 0.15 * max(len(labels), 1)
        fig, ax = plt.subplots(figsize=(6.4, height))
        positions = np.arange(len(labels))[::-1]
        colors = [_COLOR if cut is None or i < cut else _GREY for i in range(len(labels))]
        ax.barh(positions, values, color=colors)
        if cut is not None and 0 < cut < len(labels):
            line = positions[cut - 1] - 0.5
            ax.axhline(line, color="black", linewidth=0.8, linestyle=(0, (4, 2)))
            ax.annotate(cut_label, (1.0, line), xycoords=("axes fraction", "data"), xytext=(-2, 2),
                        textcoords="offset points", ha="right", va="bottom", fontsize=MIN_FONT)
        ax.set_yticks(positions, [_short(label) for label in labels])
        for y, value in zip(positions, values, strict=True):
            _bar_label(ax, value, y, fmt_share(value) if percent else fmt(value), 1.0)
        if percent:
            ax.xaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
        ax.set_xlim(0, max([*values, 1e-12]) * 1.15)
        ax.set_xlabel(xlabel)
        if title:
            ax.set_title(title)
        return to_svg(fig)


def histogram(values: np.ndarray, *, bins: int | Sequence[float], xlabel: str, ylabel: str = "queries",
              title: str = "") -> str:
    with matplotlib.rc_context(_STYLE):
        fig, ax = plt.subplots(figsize=(6.4, 1.9))
        ax.hist(values[np.isfinite(values)], bins=bins, color=_COLOR, edgecolor="white")
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        if title:
            ax.set_title(title)
        return to_svg(fig)


def _short(label: str, limit: int = 40) -> str:
    return label if len(label) <= limit else label[: limit - 1] + "…"


LINES_PER_PANEL = 8  # more lines than this in one chart cannot be told apart: the rest go to panels below


def line_chart(x: Sequence[float], series: Mapping[str, Sequence[float]], *, xlabel: str, ylabel: str,
               title: str = "") -> str:
    """One line per series (legend outside the axes so long names never cover data); at most LINES_PER_PANEL lines a
    panel, further series in panels below on the same axes' scale (small multiples)."""
    items = list(series.items())
    panels = [items[i:i + LINES_PER_PANEL] for i in range(0, len(items), LINES_PER_PANEL)] or [[]]
    with matplotlib.rc_context(_STYLE):
        rows = len(panels)
        fig, axes = plt.subplots(rows, 1, figsize=(PRINT_WIDTH, rows * max(2.15, 0.45 + 0.125 * LINES_PER_PANEL)
                                                   if rows > 1 else max(2.15, 0.45 + 0.125 * len(items))),
                                 sharex=True, sharey=True, squeeze=False)
        for row, panel in enumerate(panels):
            ax = axes[row][0]
            for i, (name, values) in enumerate(panel):
                color, marker, dashes = line_style(i)
                ax.plot(x, values, color=color, marker=marker, linestyle=dashes, linewidth=1.2, markersize=4,
                        label=_short(name))
            ax.set_xticks(list(x))
            ax.set_ylabel(ylabel)
            ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False, fontsize=7, labelspacing=0.5)
        axes[-1][0].set_xlabel(xlabel)
        if title:
            axes[0][0].set_title(title)
        return to_svg(fig)


def beeswarm(phi: np.ndarray, values: np.ndarray, names: Sequence[str], *, xlabel: str) -> str:
    """SHAP summary: one row per feature (top first), each document a dot at its φ, coloured by the feature's
    value (low blue → high red, by rank within the feature). Vertical spread by a deterministic histogram offset,
    not random jitter, so the same data gives the same picture."""
    with matplotlib.rc_context(_STYLE):
        fig, ax = plt.subplots(figsize=(6.4, 0.45 + 0.16 * len(names)))
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
        ax.axvline(0, color=_GREY, linewidth=0.8)
        ax.set_yticks(range(len(names)), [_short(n) for n in names][::-1])
        ax.set_xlabel(xlabel)
        bar = fig.colorbar(ScalarMappable(Normalize(0, 1), cmap="coolwarm"), ax=ax, ticks=[0, 1], aspect=30,
                           pad=0.02, fraction=0.04)  # as shap's summary plot: the value scale, low to high
        bar.set_ticklabels(["low", "high"])
        bar.set_label("feature value", fontsize=7.5)  # within the figure's height: the caption says it is a rank
        bar.outline.set_visible(False)
        return to_svg(fig)


def scatter(x: np.ndarray, y: np.ndarray, *, xlabel: str, ylabel: str, yes_no: bool = False) -> str:
    """y against x; when x takes at most 6 values (a yes/no feature), one strip per value, the dots spread
    sideways by a fixed pseudo-random offset (same data, same picture) so they do not pile up on one line."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    levels = np.unique(x[np.isfinite(x)])
    with matplotlib.rc_context(_STYLE):
        fig, ax = plt.subplots(figsize=(6.4, 2.0))
        if 0 < len(levels) <= 6:
            inside = np.isfinite(x)
            where = np.searchsorted(levels, x[inside]) + np.random.default_rng(0).uniform(-0.3, 0.3, inside.sum())
            ax.scatter(where, y[inside], s=6, color=_COLOR, alpha=0.5, linewidths=0, rasterized=True)
            names = {0.0: "no", 1.0: "yes"} if yes_no else {}
            ax.set_xticks(range(len(levels)), [names.get(float(v), fmt_value(v)) for v in levels])
            ax.set_xlim(-0.6, len(levels) - 0.4)
        else:
            ax.scatter(x, y, s=6, color=_COLOR, alpha=0.6, linewidths=0, rasterized=True)
        ax.axhline(0, color=_GREY, linewidth=0.8)
        ax.set_xlabel(_short(xlabel, 60))
        ax.set_ylabel(ylabel)
        return to_svg(fig)


def line_style(i: int) -> tuple[Any, str, str]:
    """(colour, marker, line style) of the i-th line: no two of the first 40 alike (tab20's colours; a second
    style after 20), so a chart of 16 explainers repeats no colour."""
    markers = "os^vD<>ph*"
    return plt.get_cmap("tab20")(i % 20), markers[i % len(markers)], "-" if (i // 20) % 2 == 0 else "--"


def decision_plot(phi: np.ndarray, base: float, names: Sequence[str], labels: Sequence[str], *,
                  xlabel: str) -> str:
    """One line per document (the caller keeps a few: lines beyond five are hard to tell apart): from the base value,
    add each feature's φ (features ordered as given, most important last, at the top) and end at the document's
    score. Where lines cross, the order changes. Each line has its own colour and marker, named in the legend."""
    with matplotlib.rc_context(_STYLE):
        fig, ax = plt.subplots(figsize=(PRINT_WIDTH, 0.5 + 0.15 * len(names)))
        steps = np.arange(len(names) + 1)
        markers = "os^vD<>ph*"
        for i, (row, label) in enumerate(zip(phi, labels, strict=True)):
            path = base + np.concatenate([[0.0], np.cumsum(row)])
            ax.plot(path, steps, linewidth=1.3, marker=markers[i % len(markers)], markersize=3.5,
                    label=_short(label, 34), color=plt.get_cmap("tab10")(i % 10))
        ax.set_yticks(steps[1:], [_short(n) for n in names])
        ax.set_xlabel(xlabel)
        ax.axvline(base, color=_GREY, linewidth=0.8)
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False, fontsize=7.5,
                  title="documents by rank", title_fontsize=7.5, alignment="left")
        return to_svg(fig)


def waterfall(labels: Sequence[str], contributions: Sequence[float] | np.ndarray, *, base: float, score: float,
              base_label: str, score_label: str, xlabel: str, positions: Sequence[float] | np.ndarray | None = None,
              positions_label: str = "", reference: tuple[str, float] | None = None) -> str:
    """shap's waterfall for one document: rows top to bottom as given (largest first, "other features" last); the
    path starts at `base` under the bottom row, each bar moves it by its contribution (red up, blue down), and it
    ends at `score` above the top row. `reference` (label, score) draws a dashed line, e.g. the runner-up's score.
    With `positions`, a second panel on the same rows: the rank positions each row is worth to the document (the
    caller defines them)."""
    values = np.asarray(contributions, dtype=float)
    n = len(values)
    rows = np.arange(n, 0, -1)  # first row at the top; row 0 (bottom) and n + 1 (top) hold base and score
    ends = base + np.cumsum(values[::-1])[::-1]  # each row's end: base + its contribution and those below it
    starts = ends - values
    with matplotlib.rc_context(_STYLE):
        panels = 2 if positions is not None else 1
        fig, axes = plt.subplots(1, panels, figsize=(PRINT_WIDTH, 0.5 + 0.15 * (n + 2)), sharey=True, squeeze=False,
                                 gridspec_kw={"width_ratios": [3, 2][:panels], "wspace": 0.08})
        ax = axes[0, 0]
        ax.barh(rows, values, left=starts, color=[_UP if v > 0 else _DOWN for v in values], height=0.62)
        for y, value, end in zip(rows, values, ends, strict=True):
            _bar_label(ax, end, float(y), fmt_signed(value), value, color=_UP if value > 0 else _DOWN)
        for y in rows[:-1]:  # connectors: each bar starts where the one below it ends
            ax.plot([starts[n - y]] * 2, [y - 0.31, y - 0.69], color=_GREY, linewidth=0.6, linestyle=":")
        ax.plot([base, base], [0, rows[-1] - 0.31], color=_GREY, linewidth=0.6, linestyle=":")
        ax.plot([score, score], [rows[0] + 0.31, n + 1], color=_GREY, linewidth=0.6, linestyle=":")
        ax.plot([base], [0], marker="o", color=_GREY, markersize=5)
        ax.plot([score], [n + 1], marker="D", color="black", markersize=5)
        _bar_label(ax, base, 0, fmt(base), 1.0, offset=6)
        _bar_label(ax, score, n + 1, fmt(score), 1.0, offset=6)
        points = [*starts, *ends, base, score]
        if reference is not None:
            label, value = reference
            ax.axvline(value, color="black", linewidth=0.8, linestyle="--", zorder=0.5)
            ax.annotate(f"{label} {fmt(value)}", (value, n + 1.45), xytext=(-3, 0), textcoords="offset points",
                        ha="right", va="center", fontsize=7)
            points.append(value)
        low, high = min(points), max(points)
        pad = 0.3 * (high - low or 1.0)
        ax.set_xlim(low - pad, high + pad)
        ax.set_yticks([0, *rows, n + 1], [base_label, *[_short(label, 44) for label in labels], score_label])
        ax.set_ylim(-0.6, n + 1.8)
        ax.set_xlabel(xlabel)
        ax.set_title("score contributions", fontsize=8.5)
        if positions is not None:
            shift = np.asarray(positions, dtype=float)
            right = axes[0, 1]
            right.barh(rows, shift, color=[_UP if v > 0 else _DOWN if v < 0 else _GREY for v in shift], height=0.62)
            for y, value in zip(rows, shift, strict=True):
                _bar_label(right, value, float(y), fmt_positions(value), value)
            widest = max(float(np.max(np.abs(shift))), 1.0)
            right.axvline(0, color=_GREY, linewidth=0.8)
            right.set_xlim(-1.4 * widest if np.any(shift < 0) else -0.2 * widest, 1.4 * widest)
            right.xaxis.set_major_locator(MaxNLocator(nbins=4, integer=True))
            right.tick_params(axis="y", left=False)
            right.set_xlabel(positions_label)
            right.set_title("rank positions", fontsize=8.5)
        return to_svg(fig)


def _bar_label(ax: plt.Axes, x: float, y: float, text: str, sign: float, *, color: str = "black",
               offset: float = 3) -> None:
    """A value beside the end of a bar: right of it when the bar points right (or is empty), left otherwise."""
    right = sign >= 0
    ax.annotate(text, (x, y), xytext=(offset if right else -offset, 0), textcoords="offset points", va="center",
                ha="left" if right else "right", fontsize=7, color=color, zorder=3,
                bbox={"facecolor": "white", "edgecolor": "none", "pad": 0.4, "alpha": 0.85})  # over any line


def pair_bars(panels: Sequence[tuple[str, Sequence[str], Sequence[float]]], *, xlabel: str, up_label: str,
              down_label: str) -> str:
    """Signed horizontal bars, one panel per pair (title, row labels top to bottom, values): positive values (red)
    push the first document above the second, negative ones (blue) pull the second up; each value at its bar."""
    heights = [len(labels) for _, labels, _ in panels]
    with matplotlib.rc_context(_STYLE):
        fig, axes = plt.subplots(len(panels), 1, figsize=(PRINT_WIDTH, 0.6 + sum(0.15 * h + 0.4 for h in heights)),
                                 squeeze=False, gridspec_kw={"height_ratios": heights or [1]})
        for ax, (title, labels, given) in zip(axes[:, 0], panels, strict=True):
            values = np.asarray(given, dtype=float)
            rows = np.arange(len(values))[::-1]
            ax.barh(rows, values, color=[_UP if v > 0 else _DOWN for v in values], height=0.62)
            widest = max(float(np.max(np.abs(values), initial=0.0)), 1e-12)
            for y, value in zip(rows, values, strict=True):
                _bar_label(ax, value, y, fmt_signed(value), value)
            ax.axvline(0, color=_GREY, linewidth=0.8)
            ax.set_xlim(-1.5 * widest, 1.5 * widest)
            ax.set_yticks(rows, [_short(label, 52) for label in labels], fontsize=7.5)
            ax.set_title(title, fontsize=8.5, loc="left")
            ax.set_xlabel(xlabel)
        axes[0, 0].legend(handles=[Patch(color=_UP, label=up_label), Patch(color=_DOWN, label=down_label)],
                          loc="lower left", bbox_to_anchor=(0.0, 1.12), ncol=2, frameon=False, fontsize=7.5)
        return to_svg(fig, tight={"h_pad": 1.0})


def listwise_bars(names: Sequence[str], series: dict[str, tuple[Sequence[float], Sequence[float]]], *,
                  xlabel: str) -> str:
    """Signed horizontal bars of listwise attributions, one group of bars per feature (top to bottom in the given
    order), one bar per explainer (`series`: label → (values, 95% half-widths)), each with an error bar where the
    half-width is above 0 and its value at its end. Small: one query's summary."""
    labels = list(series)
    colors = [_COLOR, "#d08c2b", _GREY][:len(labels)]
    with matplotlib.rc_context(_STYLE):
        fig, ax = plt.subplots(figsize=(6.4, 0.65 + 0.14 * max(len(names), 1) * max(len(labels), 1)))
        height = 0.8 / max(len(labels), 1)
        rows = np.arange(len(names))[::-1].astype(float)
        widest = 1e-12
        for i, (label, (given, given_half)) in enumerate(series.items()):
            values, half = np.asarray(given, dtype=float), np.asarray(given_half, dtype=float)
            y = rows + 0.4 - height * (i + 0.5)
            ax.barh(y, values, height=height * 0.9, color=colors[i % len(colors)], label=label,
                    xerr=np.where(half > 0, half, np.nan), error_kw={"elinewidth": 0.8, "capsize": 2})
            widest = max(widest, float(np.max(np.abs(values) + half, initial=0.0)))
            for yy, value, h in zip(y, values, half, strict=True):
                _bar_label(ax, value + (h if value >= 0 else -h), yy, fmt_signed(value), value)
        ax.axvline(0, color=_GREY, linewidth=0.8)
        lowest = min(float(np.min(np.asarray(v, dtype=float) - np.asarray(h, dtype=float), initial=0.0))
                     for v, h in series.values())
        ax.set_xlim(1.45 * lowest - 0.12 * widest, 1.45 * widest)
        ax.set_yticks(rows, [_short(name) for name in names], fontsize=7.5)
        ax.set_xlabel(xlabel)
        if len(labels) > 1:
            ax.legend(loc="lower right", frameon=False, fontsize=7)
        return to_svg(fig, tight={})


def box_plot(groups: dict[str, Sequence[float]], *, ylabel: str) -> str:
    """Distribution per group (median, quartiles, whiskers at 1.5 IQR), groups in the given order."""
    with matplotlib.rc_context(_STYLE):
        fig, ax = plt.subplots(figsize=(6.4, max(1.4, 0.45 + 0.125 * len(groups))))
        ax.boxplot([np.asarray(v, dtype=float) for v in groups.values()], orientation="horizontal", widths=0.6,
                   flierprops={"markersize": 2})
        ax.set_yticks(range(1, len(groups) + 1), [_short(n, 30) for n in groups])
        ax.invert_yaxis()
        ax.set_xlabel(ylabel)
        return to_svg(fig)


def step_curves(panels: Sequence[StepPanel | LevelPanel], *, ylabel: str, columns: int = 2) -> str:
    """Small multiples of effects, one panel a feature. A `StepPanel` is a step curve over the data's range with a
    histogram of the data drawn in grey along the bottom of the same axes (heavy-tailed non-negative features get a
    symlog axis so the bins near zero stay visible); a `LevelPanel` (a yes/no feature) is one bar per value, since a
    curve between 0 and 1 would draw values no document has. `ylabel` once, for the whole figure."""
    n = len(panels)
    rows = max(1, -(-n // columns))
    with matplotlib.rc_context(_STYLE):
        # wide rather than tall: a page is wider than it is free below a section's text
        fig, axes = plt.subplots(rows, columns, figsize=(min(1.75 * max(columns, 3), PRINT_WIDTH), 0.3 + 1.2 * rows),
                                 squeeze=False)
        for k, ax in enumerate(axes.flat):
            if k >= n:
                ax.set_visible(False)
                continue
            panel = panels[k]
            if isinstance(panel, LevelPanel):
                _level_panel(ax, panel)
            else:
                _step_panel(ax, panel)
            ax.axhline(0, color=_GREY, linewidth=0.6)
            ax.set_title(_short(panel.title, 40), fontsize=8)
            ax.tick_params(labelsize=MIN_FONT)
            ax.yaxis.set_major_locator(MaxNLocator(nbins=4))
        fig.supylabel(ylabel, fontsize=8)
        return to_svg(fig, tight={"h_pad": 0.5, "w_pad": 0.6})


def _step_panel(ax: plt.Axes, panel: StepPanel) -> None:
    values = np.asarray(panel.values, dtype=float)
    low, high = min(float(np.min(values)), 0.0), max(float(np.max(values)), 0.0)
    span = (high - low) or 1.0
    if panel.linthresh is not None:
        ax.set_xscale("symlog", linthresh=panel.linthresh)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: fmt_value(v)))  # not mathtext 10^k: it is off
    else:
        ax.xaxis.set_major_locator(MaxNLocator(nbins=4))  # four ticks: no overlap at a third of the page
    counts = np.asarray(panel.counts)
    floor = low - 0.45 * span  # the histogram lives below the curve, scaled to a third of the curve's span
    ax.stairs(floor + counts / max(counts.max(), 1) * 0.35 * span, panel.hist_edges, baseline=floor, fill=True,
              color="#d3dbe4")
    ax.stairs(values, panel.edges, color=_COLOR, linewidth=1.4, baseline=None)
    ax.set_ylim(floor, high + 0.08 * span)


def _level_panel(ax: plt.Axes, panel: LevelPanel) -> None:
    values = np.asarray(panel.values, dtype=float)
    positions = np.arange(len(values))
    ax.bar(positions, values, color=[_UP if v > 0 else _DOWN for v in values], width=0.55)
    low, high = min(float(values.min()), 0.0), max(float(values.max()), 0.0)
    span = (high - low) or 1.0
    for x, value, share in zip(positions, values, panel.shares, strict=True):
        ax.text(float(x), value + (0.04 if value >= 0 else -0.04) * span, fmt_signed(value), ha="center",
                va="bottom" if value >= 0 else "top", fontsize=MIN_FONT)
        ax.annotate(fmt_share(share), (x, 0), xycoords=("data", "axes fraction"), xytext=(0, -16),
                    textcoords="offset points", ha="center", va="top", fontsize=MIN_FONT,
                    color="#555555")  # under the value's name: the share of documents that have it
    ax.set_xticks(positions, [_short(level, 14) for level in panel.levels])
    ax.set_xlim(-0.7, len(values) - 0.3)
    ax.set_ylim(low - 0.4 * span, high + 0.4 * span)  # room for the value at a bar's end


def scale_extend(grids: Sequence[HeatPanel], limit: float) -> str:
    """The colour bar's ends for a scale ±`limit` over these cells: "neither" when it covers every cell, else
    "both" — arrow ends, the sign that cells past them are clipped to the end colours."""
    return "neither" if cell_limit(grids) <= limit * (1 + 1e-9) else "both"


def pair_heatmaps(panels: Sequence[HeatPanel], *, colorbar: str, limit: float | None = None) -> str:
    """Pair effects as small multiples on one colour scale (so a pale panel is a small effect; `limit` its end,
    default the panels' largest |cell|, to share a scale across figures): each panel's cells (`pair_cells`: quantile
    bins of the documents' values, or one cell per value) coloured by the mean effect of the documents in them; grey
    cells hold no document. Ticks are in the features' own units. A `limit` below the largest |cell| clips those
    cells to the end colours, and the colour bar gets arrow ends to say so (`scale_extend`)."""
    grids = list(panels)
    limit = cell_limit(grids) if limit is None else limit
    columns = 1 if len(grids) == 1 else 2 if len(grids) <= 4 else 3
    rows = -(-len(grids) // columns)
    with matplotlib.rc_context(_STYLE):
        fig, axes = plt.subplots(rows, columns, figsize=({1: 3.8, 2: 5.6, 3: PRINT_WIDTH}[columns], 0.4 + 1.6 * rows),
                                 squeeze=False, layout="constrained")
        engine = fig.get_layout_engine()
        assert isinstance(engine, ConstrainedLayoutEngine)
        engine.set(h_pad=0.08, hspace=0.06)  # room between a row's ticks and the next titles
        mesh = None
        for ax, grid in zip(axes.flat, grids, strict=False):
            means = np.ma.masked_invalid(np.asarray(grid.means, dtype=float))
            x_ticks, x_labels, y_ticks, y_labels = grid.x_ticks, grid.x_texts, grid.y_ticks, grid.y_texts
            ax.set_facecolor("#e6e6e6")
            mesh = ax.pcolormesh(np.arange(means.shape[0] + 1), np.arange(means.shape[1] + 1), means.T,
                                 cmap="RdBu_r", vmin=-limit, vmax=limit, shading="flat")
            rotate = max(len(label) for label in x_labels) > 3 and len(x_labels) > 3
            ax.set_xticks(x_ticks, x_labels, rotation=45 if rotate else 0, ha="right" if rotate else "center",
                          fontsize=MIN_FONT)
            ax.set_yticks(y_ticks, y_labels, fontsize=MIN_FONT)
            ax.set_xlabel(_short(grid.x_label, 40), fontsize=7.5)
            y_label = _short(grid.y_label, 40)
            if len(y_label) > 20 and " (" in y_label:  # a unit on its own line: the label stays within its panel
                y_label = y_label.replace(" (", "\n(", 1)
            _MULTILINE.add(ax.set_ylabel(y_label, fontsize=7.5))
            _MULTILINE.add(ax.set_title(grid.title.replace(" × ", " ×\n") if len(grid.title) > 32 else grid.title,
                                        fontsize=8))  # on two lines: no overlap
            ax.spines[["top", "right"]].set_visible(True)
        for ax in list(axes.flat)[len(grids):]:
            ax.set_visible(False)
        if mesh is not None:
            fig.colorbar(mesh, ax=axes.ravel().tolist(), label=colorbar, shrink=min(0.9, 0.45 + 0.15 * rows),
                         aspect=30, extend=scale_extend(grids, limit))
        return to_svg(fig)


def share_dots(labels: Sequence[str], merit: Sequence[float], exposure: Sequence[float],
               intervals: Sequence[tuple[float, float]], counterfactual: Sequence[float] | None = None,
               few: Sequence[bool] | None = None) -> str:
    """Exposure against merit, one row per group value (top to bottom in the given order): the merit share (open
    circle), the exposure share (filled dot, red when above merit, blue when below, with its 95% interval) joined to
    it by a line, and, when measured, the exposure share with the group feature set alike for every document (grey
    diamond). Rows `few` marks (met in too few queries, left out of the judged ratios) are drawn light grey, their
    labels too. Shares on a 0–100% axis."""
    faded = list(few) if few is not None else [False] * len(labels)
    with matplotlib.rc_context(_STYLE):
        fig, ax = plt.subplots(figsize=(6.4, 0.7 + 0.3 * max(len(labels), 1)))
        rows = np.arange(len(labels))[::-1]
        for y, m, e, (low, high), pale in zip(rows, merit, exposure, intervals, faded, strict=True):
            color = _FADED if pale else _UP if e > m else _DOWN
            ax.plot([m, e], [y, y], color=color, linewidth=1.2, zorder=1)
            if math.isfinite(low) and math.isfinite(high):
                ax.plot([low, high], [y, y], color=color, linewidth=3.5, alpha=0.35, solid_capstyle="butt", zorder=1)
            ax.scatter([e], [y], color=color, s=28, zorder=3)
            ax.scatter([m], [y], facecolor="white", edgecolor=_FADED if pale else "black", s=28, zorder=3)
            _bar_label(ax, max(e, m), y, f"exposure {fmt_share(e)}, merit {fmt_share(m)}", 1.0, offset=6,
                       color=_FADED if pale else "black")
        handles = [plt.Line2D([], [], marker="o", linestyle="", markerfacecolor="white", markeredgecolor="black",
                              label="merit share")]
        # a legend entry for each colour the rows use (a reader review: blue dots under a red-only legend)
        above = [e > m for m, e, pale in zip(merit, exposure, faded, strict=True) if not pale]
        for shown_above, color, words in ((True, _UP, "exposure above merit"), (False, _DOWN, "exposure below merit")):
            if shown_above in above:
                handles.append(plt.Line2D([], [], marker="o", linestyle="", color=color,
                                          label=f"{words} (95% interval)"))
        if any(faded):
            handles.append(plt.Line2D([], [], marker="o", linestyle="", color=_FADED,
                                      label="met in too few queries (left out)"))
        if counterfactual is not None:
            ax.scatter(list(counterfactual), rows - 0.28, marker="D", color=_GREY, s=18, zorder=2)  # below the row
            handles.append(plt.Line2D([], [], marker="D", linestyle="", color=_GREY,
                                      label="exposure, group feature set alike"))
        ax.set_yticks(rows, [_short(label, 36) for label in labels])
        for tick, pale in zip(ax.get_yticklabels(), faded, strict=True):
            if pale:
                tick.set_color(_FADED)
        ax.set_ylim(-0.6, len(labels) - 0.4)
        ax.set_xlim(0, 1.0)
        ax.xaxis.set_major_formatter(PercentFormatter(1.0, decimals=0))
        ax.set_xlabel("a group's share of the attention in the queries it is met in")
        ax.legend(handles=handles, loc="lower left", bbox_to_anchor=(0.0, 1.0), ncol=2 if len(handles) > 3 else 3,
                  frameon=False, fontsize=7)
        return to_svg(fig)


def trend_chart(labels: Sequence[str], values: Sequence[float | None], lows: Sequence[float | None],
                highs: Sequence[float | None], *, ylabel: str, share: bool = False, gid: str = "points") -> str:
    """One measure across reviews, oldest left: a dot per review that has it (the line `gid` joins them: its
    markers are the points), its 95% interval as a bar where there is one, and its value beside it. `labels`
    name the reviews on the x axis (their days); a review without the measure leaves its place empty."""
    as_float = [math.nan if v is None else float(v) for v in values]
    x = np.arange(len(labels), dtype=float)
    text = fmt_share if share else fmt
    with matplotlib.rc_context(_STYLE):
        fig, ax = plt.subplots(figsize=(6.4, 2.2))
        present = [i for i, v in enumerate(as_float) if math.isfinite(v)]
        for i in present:
            low, high = lows[i], highs[i]
            if low is not None and high is not None and math.isfinite(low) and math.isfinite(high):
                ax.plot([x[i], x[i]], [low, high], color=_COLOR, alpha=0.45, linewidth=3.5, solid_capstyle="butt")
        ax.plot(x[present], [as_float[i] for i in present], color=_COLOR, marker="o", markersize=5, linewidth=1.2,
                gid=gid)
        for i in present:
            ax.annotate(text(as_float[i]), (x[i], as_float[i]), xytext=(6, 0), textcoords="offset points",
                        va="center", fontsize=7.5)
        ax.set_xticks(x, list(labels), rotation=30 if len(labels) > 6 else 0,
                      ha="right" if len(labels) > 6 else "center")
        ax.set_xlim(-0.5, len(labels) - 0.3)
        ax.margins(y=0.15)
        ax.yaxis.set_major_locator(MaxNLocator(5))
        ax.yaxis.set_major_formatter(PercentFormatter(1.0, decimals=0) if share else
                                     FuncFormatter(lambda v, _pos: fmt(v)))
        ax.set_ylabel(ylabel)
        ax.grid(axis="y", color="#e6e9ee", linewidth=0.6)
        ax.set_axisbelow(True)
        return to_svg(fig)


def frontier_chart(kendall: Sequence[float | None], pair: Sequence[bool], *, drawn: int,
                   drawn_kendall: float | None, xlabel: str, ylabel: str) -> str:
    """Fidelity against size: the surrogate cut to its k largest effects (x = k), a dot for each cut, filled for a
    main effect and hollow for a pair added at k; a dashed line at the whole surrogate's value, and a diamond where
    the effects the report draws stand (`drawn` of them, `drawn_kendall`)."""
    y = np.array([math.nan if v is None else float(v) for v in kendall])
    x = np.arange(1, len(y) + 1, dtype=float)
    pairs = np.asarray(pair, dtype=bool)
    with matplotlib.rc_context(_STYLE):
        fig, ax = plt.subplots(figsize=(6.4, 2.3))
        ax.plot(x, y, color=_COLOR, linewidth=1.0)
        ax.plot(x[~pairs], y[~pairs], linestyle="none", marker="o", markersize=3.5, color=_COLOR,
                label="a main effect added")
        if pairs.any():
            ax.plot(x[pairs], y[pairs], linestyle="none", marker="o", markersize=4, markerfacecolor="white",
                    color=_COLOR, label="a pair added")
        if len(y) and math.isfinite(y[-1]):
            ax.axhline(y[-1], color=_GREY, linewidth=0.8, linestyle=(0, (4, 2)))
            ax.annotate(f"all {len(y)} effects: {fmt(y[-1])}", (0.0, y[-1]), xycoords=("axes fraction", "data"),
                        xytext=(3, 2), textcoords="offset points", ha="left", va="bottom", fontsize=MIN_FONT,
                        color="#555555")  # at the left, where the curve is still below it
        ax.margins(y=0.12)
        if drawn_kendall is not None and math.isfinite(drawn_kendall) and drawn > 0:
            ax.plot([drawn], [drawn_kendall], linestyle="none", marker="D", markersize=6, color=_UP,
                    label=f"the {drawn} effects drawn: {fmt(drawn_kendall)}")
        ax.xaxis.set_major_locator(MaxNLocator(10, integer=True))
        ax.yaxis.set_major_locator(MaxNLocator(5))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: fmt(v)))
        ax.set_xlim(0.5, max(len(y), drawn, 1) + 0.5)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.grid(axis="y", color="#e6e9ee", linewidth=0.6)
        ax.set_axisbelow(True)
        ax.legend(loc="lower right", frameon=False, fontsize=7.5)
        return to_svg(fig)


CHARTS: dict[str, Callable[..., str]] = {chart.__name__: chart for chart in (
    bar_chart, histogram, line_chart, beeswarm, scatter, decision_plot, waterfall, pair_bars, listwise_bars, box_plot,
    step_curves, pair_heatmaps, share_dots, trend_chart, frontier_chart)}


LATER = "render it with the version of auditor that made the run"


def draw(figure: Figure) -> str:
    """A figure of the evidence as labelled SVG: its chart drawn from its stored data. A chart this version does not
    have, or data it does not take, is bad input (an evidence.json that is not ours, or from a later version)."""
    chart = CHARTS.get(figure.chart)
    if chart is None:
        raise InputError(f"the figure '{shorten(figure.title, 80)}' names a chart this version cannot draw "
                         f"({shorten(figure.chart, 40)})", fix=LATER)
    key = _drawing_key(figure)
    with _DRAWN_LOCK:
        svg = _DRAWN.get(key) if key is not None else None
        if svg is not None and key is not None:
            _DRAWN.move_to_end(key)
    if svg is None:
        try:
            svg = chart(**{name: decode(value) for name, value in figure.data.items()})
        except (TypeError, ValueError, IndexError, KeyError) as exc:
            raise InputError(f"the figure '{shorten(figure.title, 80)}' holds data its chart cannot draw ({exc})",
                             fix=LATER) from None
        keep_drawings([figure], [svg])
    return label_svg(svg, figure.title, figure.description or figure.caption)


# A chart is a pure function of its stored data, and fitting it to its box takes several draws (~0.15 s a figure):
# the same figure drawn again in one process — another document of the run, `auditor render`, a notebook's second
# `save()` — is taken from here. Keyed by the chart and its data; the last DRAWN_KEPT drawings are kept.
DRAWN_KEPT = 128
_DRAWN: OrderedDict[str, str] = OrderedDict()
_DRAWN_LOCK = threading.Lock()


def drawings(figures: list[Figure]) -> list[str | None]:
    """The charts of `figures` drawn, unlabelled (None where a chart or its data does not draw: `draw` says why
    when the report asks). Run by an executor's worker while an evidence item runs in the audit's process, on the
    core that item leaves idle; the audit keeps the drawings (`keep_drawings`) and the report finds them drawn."""
    out: list[str | None] = []
    for figure in figures:
        chart = CHARTS.get(figure.chart)
        try:
            out.append(None if chart is None else chart(**{name: decode(value) for name, value in figure.data.items()}))
        except (TypeError, ValueError, IndexError, KeyError):
            out.append(None)
    return out


def keep_drawings(figures: Sequence[Figure], svgs: Sequence[str | None]) -> None:
    """Keep the drawings of `figures` (`drawings`' result, or one just drawn) for `draw` to find."""
    with _DRAWN_LOCK:
        for figure, svg in zip(figures, svgs, strict=True):
            key = _drawing_key(figure)
            if svg is None or key is None:
                continue
            _DRAWN[key] = svg
            _DRAWN.move_to_end(key)
        while len(_DRAWN) > DRAWN_KEPT:
            _DRAWN.popitem(last=False)


def _drawing_key(figure: Figure) -> str | None:
    """The chart's name and its data as one digest; None when the data do not write as JSON (drawn, not kept)."""
    try:
        text = json.dumps([figure.chart, figure.data], sort_keys=True, separators=(",", ":"), allow_nan=True)
    except (TypeError, ValueError):
        return None
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def forget_drawings() -> None:
    """Draw every figure afresh from here on (a test that checks two renderings give the same bytes)."""
    with _DRAWN_LOCK:
        _DRAWN.clear()
