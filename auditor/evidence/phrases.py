"""What a kind's sentences about its metrics are made of: a `Phrase` takes the value and the value as printed (with
its interval, by `auditor.core.numbers`), so the sentence and the section print the same figure the same way. Each
kind's `phrases.py` holds its own (`EvidenceKind.phrases`) and, in `UNITS`, what a metric counts where a bare number
would not say it (a table cell: "47 days", not "47"); `auditor.report.wording` reads them from the entries."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

Phrase = Callable[[float, str], str]  # (value, value as printed with its interval) → sentence
# A unit in `UNITS`: the noun a count counts, singular ("day": "47 days"), or POINTS, a change of a share printed in
# percentage points with its threshold ("-0.8 pp … FAIL if > +1.0 pp", not "-0.00814" beside "+1.0 pp")
POINTS = "percentage points"


@dataclass(frozen=True)
class Stated:
    """A fact that is either stated (value 1) or not (0): its sentence, and the `word` a table cell prints for it
    ("stated", "not stated"), so a reader never sees the 1 or 0 the rule compares."""

    yes: str
    no: str
    word: str = "stated"

    def __call__(self, value: float, _: str) -> str:
        return self.yes if value >= 1 else self.no

    def short(self, value: float) -> str:
        return self.word if value >= 1 else f"not {self.word}"


def stated(yes: str, no: str, word: str = "stated") -> Stated:
    """A fact that is either stated (value 1) or not (0); `word`: what a table prints for it (signed, reported)."""
    return Stated(yes, no, word)
