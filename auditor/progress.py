"""Progress bars on stderr (rich); silent under --quiet or when the audit runs as a library."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TypeVar

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
from rich.progress import Progress as RichBar

from auditor.evidence.base import Progress

T = TypeVar("T")


class RichProgress(Progress):
    """One bar per tracked loop, drawn on stderr so stdout stays clean for the report path."""

    def __init__(self) -> None:
        self._bar = RichBar(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                            TimeElapsedColumn(), console=Console(stderr=True), transient=False)

    def __enter__(self) -> RichProgress:
        self._bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._bar.stop()

    def track(self, items: Iterable[T], *, description: str, total: int | None = None) -> Iterator[T]:
        task = self._bar.add_task(description, total=total)
        for item in items:
            yield item
            self._bar.advance(task)
