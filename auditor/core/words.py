"""Counts in words: `1 query`, `5 features`, never `1 queries` or `5 feature(s)`."""

from __future__ import annotations

IRREGULAR = {"query": "queries", "entry": "entries", "analysis": "analyses", "category": "categories"}


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """`n` and the noun in the number `n` asks for (thousands separated)."""
    last = noun.rsplit(" ", 1)[-1]
    form = noun if n == 1 else (plural or noun[:len(noun) - len(last)] + (IRREGULAR.get(last) or last + "s"))
    return f"{n:,} {form}"
