"""`auditor disclose`: the statement drafted from a run's evidence, in one language and format (docs/disclose.md)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from auditor.disclosure.draft import Statement, draft
from auditor.disclosure.render import Format, render_statement
from auditor.disclosure.source import chosen_run


@dataclass(frozen=True)
class Drafted:
    text: str
    run: Path
    statement: Statement
    notes: list[str]  # for the person drafting: the run chosen, what the evidence could not support


def disclose(spec: Path, *, run: Path | None = None, language: str = "en", fmt: Format = "md") -> Drafted:
    document, folder, note = chosen_run(spec, run)
    statement = draft(document, run=folder.name)
    text = render_statement(statement, language=language, fmt=fmt)
    return Drafted(text, folder, statement, [*([note] if note else []), *statement.left_out])
