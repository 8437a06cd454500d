"""One check of `verify` as one printed line, whatever the untrusted strings in it hold."""

from __future__ import annotations

import re
from dataclasses import dataclass

SHOWN_CHARS = 300  # an untrusted string is cut to this many characters on a verdict line


@dataclass
class Verdict:
    ok: bool
    subject: str
    message: str
    skipped: bool = False

    def line(self) -> str:
        """One printed line, whatever the subject and message hold: both may carry names and strings from the run
        folder, the bundle or a certificate, and a newline there would print a forged verdict line."""
        status = "SKIP" if self.skipped else ("OK" if self.ok else "FAIL")
        return f"{status:<4} {shown(self.subject)}: {shown(self.message, limit=2 * SHOWN_CHARS)}"


def shown(text: str, *, limit: int = SHOWN_CHARS) -> str:
    """`text` as one printable line, as the report shows untrusted strings (`auditor.core.display.shown`: controls, bidi
    and invisible characters as ⟨U+202E⟩, mixed scripts marked), a byte of a file name that is not UTF-8 as `\\xff`,
    cut to about `limit` characters."""
    from auditor.core.display import shown as display

    bytes_shown = re.sub("[\udc80-\udcff]", lambda m: f"\\x{ord(m.group()) - 0xDC00:02x}", text)
    return display(bytes_shown, limit=limit, run=limit)


def quoted(text: object, limit: int = 160) -> str:
    """An untrusted string in double quotes, its quotes and backslashes escaped (`Verdict.line` escapes the rest)."""
    text = str(text)
    cut = text[:limit] + ("…" if len(text) > limit else "")
    return '"' + cut.replace("\\", "\\\\").replace('"', '\\"') + '"'
