"""One error type for bad input, so the CLI can show one line and exit 2 without a traceback."""

from __future__ import annotations

from pathlib import Path


class InputError(Exception):
    """Bad input from the user: a file, a spec key, a value. The message is one line: what, where, how to fix."""

    def __init__(self, message: str, *, file: str | Path | None = None, where: str | None = None,
                 fix: str | None = None) -> None:
        self.file = str(file) if file is not None else None
        self.where = where
        self.problem = message
        self.fix = fix
        super().__init__(self.one_line())

    def one_line(self) -> str:
        parts = []
        if self.file:
            parts.append(self.file + (f":{self.where}" if self.where else ""))
        elif self.where:
            parts.append(self.where)
        text = self.problem.rstrip(".")
        if self.fix:
            text += f"; {self.fix.rstrip('.')}"
        parts.append(text)
        return ": ".join(parts).replace("\n", " ")


def shorten(text: str, most: int = 160) -> str:
    """A path or name for an error line: whole when short, else its start and end with the length between."""
    if len(text) <= most:
        return text
    return f"{text[:most // 2]}…({len(text):,} characters)…{text[-most // 2:]}"
