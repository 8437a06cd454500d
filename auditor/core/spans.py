"""Spans of time as people write them on a command line (`--due 90d`, `--within 2w`)."""

from __future__ import annotations

import datetime as dt

from auditor.core.errors import InputError

UNITS = {"d": 1, "w": 7, "m": 30, "y": 365}
MAX_SPAN = 100_000


def parse_span(text: str, where: str) -> dt.timedelta:
    """A span such as 14d, 6w, 18m, 2y (days, weeks, 30-day months, 365-day years); `where` names the option in
    the one-line error."""
    value = text.strip().lower()
    if len(value) < 2 or value[-1] not in UNITS or not value[:-1].isdigit() or int(value[:-1]) > MAX_SPAN:
        raise InputError(f"not a span: {value[:20]!r}", where=where, fix="write e.g. 14d, 6w, 18m or 2y")
    return dt.timedelta(days=int(value[:-1]) * UNITS[value[-1]])
