"""What a kind's sentences about its metrics are made of: a `Phrase` takes the value and the value as printed (with
its interval, by `auditor.core.numbers`), so the sentence and the section print the same figure the same way. Each
kind's `phrases.py` holds its own (`EvidenceKind.phrases`); `auditor.report.wording` reads them from the entries."""

from __future__ import annotations

from collections.abc import Callable

Phrase = Callable[[float, str], str]  # (value, value as printed with its interval) → sentence


def stated(yes: str, no: str) -> Phrase:
    """A fact that is either stated (value 1) or not (0)."""
    return lambda v, _: yes if v >= 1 else no
