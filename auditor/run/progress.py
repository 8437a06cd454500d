"""Progress on stderr: rich bars on a terminal, plain lines elsewhere (CI, nohup, cron); nothing under --quiet or
when the audit runs as a library (the silent `evidence.base.Progress`).

Each evidence item opens tickers (`Progress.task`) that advance per query (or block, or boosting round). The ETA
comes from the cost model (auditor/run/cost.py) until units are done, then from the pace so far, blended by the share
done: `w × pace + (1 − w) × (estimate − elapsed)`, w = done / total. A ticker of 0 units is never drawn.
"""

from __future__ import annotations

import sys
import time
from typing import IO, Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, ProgressColumn, TextColumn, TimeElapsedColumn
from rich.progress import Progress as RichBar
from rich.text import Text

from auditor.evidence.base import Progress, Ticker

LINE_EVERY_SECONDS = 10.0  # plain lines: at least this often while units are done...
LINE_STEP = 0.1  # ...and at every tenth of the total, but...
LINE_MIN_GAP = 2.0  # ...never more often than this (fast items print their first and last line only)


def duration(seconds: float | None) -> str:
    """1h02m, 3m05s, 42s; '?' when unknown."""
    if seconds is None:
        return "?"
    seconds = max(0, round(seconds))
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    if seconds >= 60:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds}s"


class _Clock:
    """What the ETA needs: the running item's estimate and start, and the estimates of the items after it."""

    def __init__(self) -> None:
        self.item_name = ""
        self.item_estimate: float | None = None
        self.item_started = time.monotonic()
        self.later = 0.0

    def item_left(self, now: float) -> float | None:
        if self.item_estimate is None:
            return None
        return max(self.item_estimate - (now - self.item_started), 0.0)


class _Unit(Ticker):
    """A ticker with its own count and ETA; the drawing is the subclass's."""

    def __init__(self, clock: _Clock, description: str, total: int, *, overall: bool) -> None:
        self.clock, self.description, self.total, self.overall = clock, description, total, overall
        self.done = 0
        self.started = time.monotonic()
        self.closed = False

    def eta(self, now: float | None = None) -> float | None:
        now = time.monotonic() if now is None else now
        if self.overall:  # the whole audit: what is left of this item by the cost model, and the items after it
            left = self.clock.item_left(now)
            return None if left is None else left + self.clock.later
        model = self.clock.item_left(now)
        if self.done <= 0:
            return model
        pace = (now - self.started) / self.done * (self.total - self.done)
        if model is None:
            return pace
        share = self.done / self.total
        return share * pace + (1 - share) * model

    def advance(self, n: int = 1) -> None:
        self.done = min(self.total, self.done + n)

    def close(self) -> None:
        self.closed = True


class _EtaColumn(ProgressColumn):
    def render(self, task: Any) -> Text:
        unit = task.fields.get("unit")
        if unit is None or task.finished:
            return Text("")
        return Text(f"ETA {duration(unit.eta())}", style="progress.remaining")


class RichProgress(Progress):
    """One bar per ticker, drawn on stderr so stdout stays clean for the report path."""

    def __init__(self, console: Console | None = None) -> None:
        self._clock = _Clock()
        self._bar = RichBar(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                            TimeElapsedColumn(), _EtaColumn(), console=console or Console(stderr=True),
                            transient=False)

    def __enter__(self) -> RichProgress:
        self._bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._bar.stop()

    def item(self, name: str, seconds: float | None, *, later: float = 0.0) -> None:
        self._clock.item_name, self._clock.item_estimate = name, seconds
        self._clock.item_started, self._clock.later = time.monotonic(), later

    def task(self, description: str, total: int, *, overall: bool = False) -> Ticker:
        if total <= 0:
            return Ticker()
        bar = self._bar
        unit = _Unit(self._clock, description, total, overall=overall)
        task_id = bar.add_task(description, total=total, unit=unit)

        class _Drawn(Ticker):
            def advance(self, n: int = 1) -> None:
                unit.advance(n)
                bar.update(task_id, completed=unit.done)

            def close(self) -> None:
                unit.close()
                bar.update(task_id, completed=total)

        return _Drawn()


class LineProgress(Progress):
    """Plain lines on stderr when it is not a terminal: the item, what is done of what, elapsed and ETA; a line
    when a ticker opens, at least every LINE_EVERY_SECONDS and at each tenth while it runs, and when it ends."""

    def __init__(self, stream: IO[str] | None = None) -> None:
        self._clock = _Clock()
        self._stream = stream
        self._audit_started = time.monotonic()

    def __enter__(self) -> LineProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def item(self, name: str, seconds: float | None, *, later: float = 0.0) -> None:
        self._clock.item_name, self._clock.item_estimate = name, seconds
        self._clock.item_started, self._clock.later = time.monotonic(), later

    def _write(self, text: str) -> None:
        stream = self._stream or sys.stderr
        stream.write(f"[{duration(time.monotonic() - self._audit_started)}] {text}\n")
        stream.flush()

    def task(self, description: str, total: int, *, overall: bool = False) -> Ticker:
        if total <= 0:
            return Ticker()
        unit = _Unit(self._clock, description, total, overall=overall)
        prefix = "" if overall or not self._clock.item_name else f"{self._clock.item_name}: "
        write = self._write

        class _Lines(Ticker):
            last_time = time.monotonic()
            last_share = 0.0

            def line(self, *, final: bool = False) -> None:
                now = time.monotonic()
                done = f"{unit.done}/{unit.total} ({unit.done / unit.total:.0%})"
                if final:
                    write(f"{prefix}{description} {done} done in {duration(now - unit.started)}")
                else:
                    write(f"{prefix}{description} {done}, {duration(now - unit.started)} elapsed, "
                          f"ETA {duration(unit.eta(now))}")
                self.last_time, self.last_share = now, unit.done / unit.total

            def advance(self, n: int = 1) -> None:
                if unit.closed:
                    return
                unit.advance(n)
                now = time.monotonic()
                gap = now - self.last_time
                stepped = unit.done / unit.total - self.last_share >= LINE_STEP
                if unit.done < unit.total and (gap >= LINE_EVERY_SECONDS or (stepped and gap >= LINE_MIN_GAP)):
                    self.line()

            def close(self) -> None:
                if unit.closed:
                    return
                unit.done = unit.total
                unit.close()
                self.line(final=True)

        ticker = _Lines()
        ticker.line()
        return ticker


def for_terminal(stream: Any = None) -> RichProgress | LineProgress:
    """Bars when stderr is a terminal, plain lines otherwise."""
    stream = stream or sys.stderr
    return RichProgress() if getattr(stream, "isatty", lambda: False)() else LineProgress()
