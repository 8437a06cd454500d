"""The claims of a transparency statement: the marker each claim sentence carries, the bands that put a measured
value into words, and the judging of a claim against the evidence (docs/disclose.md).

A claim is an HTML comment beside the sentence that makes it, holding one JSON object:

    <!-- claim: {"weight": "genre_match", "is": "most"} -->
    <!-- claim: {"order": ["genre_match", "price_in_range", "avg_review"]} -->

Invisible in the rendered Markdown or HTML, kept when a person rewrites the words around it, and read back on the
next review by `disclosure_consistency` (its `statement:` option), which judges each claim on the metric behind it:
it holds when the metric's 95% interval lies inside the claimed band, is false when the interval lies wholly
outside it, and is uncertain otherwise. `auditor disclose` writes the markers; this module owns their format.
"""

from __future__ import annotations

import bisect
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from auditor.core.errors import InputError
from auditor.core.feature_names import metric_name
from auditor.core.files import MAX_YAML_BYTES, read_bytes
from auditor.core.metric_names import Reading, read
from auditor.core.numbers import figure, held, percent, points, with_interval

Kind = Literal["order", "weight", "direction", "paid", "own"]
Status = Literal["holds", "false", "uncertain", "unchecked"]
INF = math.inf

# Each kind's bands: [low, high) of the value its metric measures, most telling first. docs/disclose.md explains why.
BANDS: dict[str, dict[str, tuple[float, float]]] = {
    # share of the within-query importance (`global_importance.within_share.<f>`)
    "weight": {"most": (0.20, INF), "a lot": (0.10, 0.20), "less": (0.03, 0.10), "little": (-INF, 0.03)},
    # within-query correlation of a feature's value with the surrogate's effect of it (`surrogate.direction.<f>`)
    "direction": {"up": (0.5, INF), "mixed": (-0.5, 0.5), "down": (-INF, -0.5)},
    # positions a document owes on average to a paid parameter (`influence.<f>.rank_shift.mean`)
    "paid": {"large": (1.0, INF), "small": (0.1, 1.0), "none": (-INF, 0.1)},
    # share of the attention the own-product flag itself gives own products (`exposure.own.counterfactual.share_change`)
    "own": {"favoured": (0.01, INF), "neutral": (-0.01, 0.01), "disfavoured": (-INF, -0.01)},
}
KINDS: tuple[Kind, ...] = ("order", "weight", "direction", "paid", "own")
MARKER = "claim:"
MAX_CLAIMS = 500
MAX_CLAIM_CHARS = 10_000
MAX_ORDER = 200
MAX_DIGITS = 100  # a number in a claim (none belongs there): Python refuses ints over 4,300 digits with a ValueError
HTML_SUFFIXES = (".html", ".htm", ".xhtml")  # a statement with any other suffix is read as Markdown (or text)
# A comment that was meant as a claim but does not start with `claim:` (`Claim:`, `claim {`, `claims:`): refused,
# since it would otherwise be skipped as a plain comment and its claim never checked.
_NEAR_MARKER = re.compile(r"(?i)claims?\s*[:=]?\s*\{")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
_TICKS = re.compile(r"`+")
_BLANK_LINE = re.compile(r"\n[ \t]*\n")
FIX = 'write a claim as <!-- claim: {"weight": "feature", "is": "most"} --> (docs/disclose.md, "Claims")'


@dataclass(frozen=True)
class Claim:
    """One claim of a statement: its kind, the features it is about (order: most important first), the band it
    states (None for an order) and the line of its marker (0 when made here)."""

    kind: Kind
    features: tuple[str, ...]
    band: str | None = None
    line: int = 0

    def marker(self) -> str:
        """The claim as its marker: one line, ASCII, with `<`, `>` and `&` written as JSON escapes, so no feature
        name can end the comment or open markup in either format."""
        body: dict[str, object] = ({"order": list(self.features)} if self.kind == "order" else
                                   {self.kind: self.features[0], "is": self.band})
        text = json.dumps(body, ensure_ascii=True)
        for char, escape in (("&", "\\u0026"), ("<", "\\u003c"), (">", "\\u003e")):
            text = text.replace(char, escape)
        return f"<!-- {MARKER} {text} -->"

    def text(self) -> str:
        """The claim in words, for tables and detections."""
        names = [f"'{name}'" for name in self.features]
        if self.kind == "order":
            return "the main parameters in this order: " + " > ".join(names)
        if self.kind == "weight":
            return f"{names[0]} matters {self.band}"
        if self.kind == "direction":
            return {"up": f"a higher {names[0]} moves a result up", "down": f"a higher {names[0]} moves a result down",
                    "mixed": f"{names[0]} moves a result up or down depending on its value"}[str(self.band)]
        if self.kind == "paid":
            return f"paying through {names[0]} has {'no' if self.band == 'none' else 'a ' + str(self.band)} effect"
        return f"own products ({names[0]}) are {self.band}"


def band_text(kind: str, band: str) -> str:
    """A band's range in words: "20% or more", "0.1 to 1 positions"."""
    low, high = BANDS[kind][band]
    shown = {"weight": percent, "own": points}.get(kind, figure)
    unit = " positions" if kind == "paid" else ""
    if low == -INF:
        return f"below {shown(high)}{unit}"
    if high == INF:
        return f"{shown(low)}{unit} or more"
    return f"{shown(low)} to {shown(high)}{unit}"


def band_of(kind: str, value: float) -> str:
    """The band a measured value falls in (its point: the drafted statement's choice)."""
    return next(band for band, (low, high) in BANDS[kind].items() if low <= value < high)


def parse_claims(text: str, *, file: Path | str | None = None, markdown: bool | None = None) -> list[Claim]:
    """Every claim marker of a statement, in order; bad input (InputError naming the file and the marker's line)
    for a marker that is not a claim this module writes, or that looks like one but is not (`Claim:`, `claim {`).
    `markdown` (default: a `file` whose suffix is not HTML's): a comment inside a code block or code span is text a
    reader sees, not a comment — a claim marker there is refused, any other `<!--` there skipped. Linear in the
    text: comments are found with `find`."""
    if markdown is None:
        markdown = file is not None and Path(str(file)).suffix.lower() not in HTML_SUFFIXES
    code = _markdown_code(text) if markdown else []
    starts = [a for a, _ in code]
    claims: list[Claim] = []
    position, line = 0, 1
    while (start := text.find("<!--", position)) >= 0:
        line += text.count("\n", position, start)
        at = bisect.bisect_right(starts, start) - 1
        if at >= 0 and start < code[at][1]:  # shown as code: not a comment
            if _NEAR_MARKER.match(text[start + 4:start + 40].lstrip()):
                raise InputError("a claim marker inside a code block or code span is shown as text, not read as a "
                                 "claim", file=file, where=str(line),
                                 fix="take the marker out of the code (beside its sentence), or delete it")
            position = start + 4
            continue
        end = text.find("-->", start + 4)
        if end < 0:
            break
        body = text[start + 4:end].strip()
        if body.startswith(MARKER):
            if len(claims) >= MAX_CLAIMS:
                raise InputError(f"more than {MAX_CLAIMS} claims", file=file, where=str(line),
                                 fix="a statement of main parameters makes a few dozen claims at most")
            claims.append(_claim(body[len(MARKER):].strip(), line, file))
        elif _NEAR_MARKER.match(body):
            raise InputError(f"a comment that looks like a claim marker but does not start with '{MARKER}' "
                             f"('{body[:12]}…')", file=file, where=str(line), fix=FIX)
        line += text.count("\n", start, end)
        position = end + 3
    return claims


def _markdown_code(text: str) -> list[tuple[int, int]]:
    """The (start, end) offsets of a Markdown text's fenced code blocks and code spans, in order. A code span opens
    at an unescaped run of backticks and closes at the next run of the same length in its paragraph; an HTML
    comment that starts first is not searched for backticks (CommonMark: whichever starts first wins)."""
    ranges: list[tuple[int, int]] = []
    offset, fence, opened = 0, "", 0
    outside: list[tuple[int, int]] = []  # the stretches between fenced blocks
    for raw in text.splitlines(keepends=True):
        found = _FENCE.match(raw.rstrip("\r\n"))
        if not fence and found and not (found.group(1)[0] == "`" and "`" in found.group(2)):
            fence, opened = found.group(1), offset
        elif fence and found and found.group(1)[0] == fence[0] and len(found.group(1)) >= len(fence) \
                and not found.group(2).strip():
            ranges.append((opened, offset + len(raw)))
            fence = ""
        offset += len(raw)
    if fence:
        ranges.append((opened, len(text)))
    previous = 0
    for start, end in ranges:
        outside.append((previous, start))
        previous = end
    outside.append((previous, len(text)))
    for start, end in outside:
        ranges.extend(_code_spans(text, start, end))
    return sorted(ranges)


def _code_spans(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """The code spans of `text[start:end]` (no fenced block in it); the closing run found by bisecting each length's
    runs, so a text of many unmatched backticks stays fast."""
    runs = [(m.start(), m.end()) for m in _TICKS.finditer(text, start, end)]
    by_length: dict[int, list[int]] = {}
    for a, b in runs:
        by_length.setdefault(b - a, []).append(a)
    paragraphs = [m.start() for m in _BLANK_LINE.finditer(text, start, end)]
    spans: list[tuple[int, int]] = []
    position, index = start, 0
    while index < len(runs):
        a, b = runs[index]
        comment = text.find("<!--", position, a)
        if comment >= 0:  # a comment starts before the backticks: they may be inside it
            close = text.find("-->", comment + 4, end)
            if close < 0:
                break
            position = close + 3
            while index < len(runs) and runs[index][0] < position:
                index += 1
            continue
        if _escaped(text, a):  # `\`` is a literal backtick; the rest of the run may open a span
            a += 1
            if a == b:
                position, index = b, index + 1
                continue
        after = bisect.bisect_right(paragraphs, a)
        limit = paragraphs[after] if after < len(paragraphs) else end
        same = by_length.get(b - a, [])
        later = bisect.bisect_right(same, a)
        if later < len(same) and same[later] < limit:
            close_end = same[later] + (b - a)
            spans.append((a, close_end))
            position = close_end
            while index < len(runs) and runs[index][0] < position:
                index += 1
        else:
            position, index = b, index + 1
    return spans


def read_statement(path: Path) -> list[Claim]:
    """The claims of a published statement file (Markdown, HTML or text; at most 1 MiB)."""
    data = read_bytes(path, limit=MAX_YAML_BYTES, what="statement")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"the statement is not UTF-8 text ({exc.reason} at byte {exc.start})", file=path,
                         fix="save the statement as UTF-8") from None
    return parse_claims(text, file=path)


def _claim(body: str, line: int, file: Path | str | None) -> Claim:
    def bad(problem: str, fix: str = FIX) -> InputError:
        return InputError(problem, file=file, where=str(line), fix=fix)

    if len(body) > MAX_CLAIM_CHARS:
        raise bad(f"a claim of {len(body):,} characters")
    try:
        value = json.loads(body, parse_int=_bounded_int, object_pairs_hook=_unique_keys)
    except _Refused as exc:
        raise bad(f"the claim is not a claim this tool writes ({exc})") from None
    except (ValueError, RecursionError) as exc:  # JSONDecodeError is a ValueError
        raise bad(f"the claim is not a JSON object ({getattr(exc, 'msg', 'nested too deeply')})") from None
    if not isinstance(value, dict):
        raise bad("the claim is not a JSON object")
    kinds = [key for key in value if key in KINDS]
    if len(kinds) != 1:
        raise bad(f"a claim names exactly one of {', '.join(KINDS)}", FIX)
    kind: Kind = kinds[0]
    allowed = {kind} if kind == "order" else {kind, "is"}
    extra = sorted(set(value) - allowed)
    if extra:
        raise bad(f"unknown key '{extra[0]}' in a {kind} claim", FIX)
    if kind == "order":
        names = value["order"]
        if not (isinstance(names, list) and 2 <= len(names) <= MAX_ORDER
                and all(isinstance(n, str) and n for n in names)):
            raise bad(f"an order claim lists 2 to {MAX_ORDER} feature names, most important first")
        if len(set(names)) != len(names):
            raise bad("an order claim lists a feature twice", "keep each feature once")
        return Claim("order", tuple(names), None, line)
    feature, band = value[kind], value.get("is")
    if not isinstance(feature, str) or not feature:
        raise bad(f"a {kind} claim names one feature")
    if band not in BANDS[kind]:
        choices = ", ".join(f"'{b}'" for b in BANDS[kind])
        raise bad(f"a {kind} claim says what it is with \"is\": one of {choices}", f"write e.g. \"is\": "
                  f"\"{next(iter(BANDS[kind]))}\"")
    return Claim(kind, (feature,), str(band), line)


def metric_of(kind: str, feature: str, segments: Mapping[str, str]) -> str | None:
    """The metric a claim about `feature` is judged on; None when the feature has no metric segment of its own
    (`evidence.feature_names.metric_segments`): a paid claim about `a-b` must not be judged on `a b`'s influence,
    whose metric is spelled alike. A paid claim read without the data's names (`segments` empty) is spelled by
    `metric_name`, as `parameter_influence` spells it."""
    if kind == "own":
        return "exposure.own.counterfactual.share_change"
    segment = segments.get(feature)
    if kind == "paid" and segment is None and not segments:
        segment = metric_name(feature)
    if segment is None:
        return None
    if kind == "paid":
        return f"influence.{segment}.rank_shift.mean"
    return f"global_importance.within_share.{segment}" if kind in ("weight", "order") else \
        f"surrogate.direction.{segment}"


def _escaped(text: str, at: int) -> bool:
    """Whether the character at `at` follows an odd number of backslashes (a Markdown escape)."""
    count = 0
    while at - count > 0 and text[at - count - 1] == "\\":
        count += 1
    return count % 2 == 1


class _Refused(ValueError):
    """What a claim's JSON may not hold: a key twice, a number of hundreds of digits."""


def _bounded_int(text: str) -> int:
    """An integer of the claim's JSON, refused beyond MAX_DIGITS digits (over 4,300 Python raises a ValueError that
    no JSON error names, and no claim has a number)."""
    if len(text.lstrip("-")) > MAX_DIGITS:
        raise _Refused(f"a number of {len(text.lstrip('-')):,} digits")
    return int(text)


def _unique_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    """A JSON object whose keys are unique: with `"is"` twice, Python keeps the last and other readers the first,
    so the claim checked would not be the claim a person reads."""
    out: dict[str, object] = {}
    for key, value in pairs:
        if key in out:
            raise _Refused(f"the key '{key[:40]}' twice")
        out[key] = value
    return out


def metrics_of(claim: Claim, segments: Mapping[str, str]) -> list[str | None]:
    """The metrics a claim is judged on, one a feature (own products: the one metric)."""
    return [metric_of(claim.kind, feature, segments) for feature in claim.features]


@dataclass(frozen=True)
class Verdict:
    """A claim judged: its status, the metrics read (name and reading, None when absent) and why, in words."""

    claim: Claim
    status: Status
    readings: tuple[tuple[str, Reading | None], ...]
    why: str

    def measured(self) -> str:
        """The readings as the claims table prints them."""
        return "; ".join(f"{name} = {reading_text(self.claim.kind, reading)}" if reading is not None else
                         f"{name}: not measured" for name, reading in self.readings) or "not measured"


def reading_text(kind: str, reading: Reading) -> str:
    """A reading with its interval, in the unit of its kind (a share in %, a change of share in pp)."""
    if kind == "own":
        low, high = held(reading.value, reading.low, reading.high)
        text = points(reading.value)
        return text if low is None or high is None else f"{text} (95% interval {points(low)} to {points(high)})"
    low, high = reading.interval or (None, None)
    return with_interval(reading.value, low, high, share=kind in ("weight", "order"))


def judge(claim: Claim, metrics: Mapping[str, float | None], segments: Mapping[str, str]) -> Verdict:
    """A claim against the metrics of a run (flat: every evidence item's metrics, as their names never collide).
    `segments`: the features' metric segments (`metric_segments` of the data's feature names)."""
    names = metrics_of(claim, segments)
    readings = tuple((name or f"(no metric for '{feature}')", read(metrics, name) if name else None)
                     for name, feature in zip(names, claim.features, strict=True))
    if claim.kind == "own":
        readings = readings[:1]
    missing = [name for name, reading in readings if reading is None]
    if claim.kind == "order":
        return _judge_order(claim, readings, missing)
    if missing:
        return Verdict(claim, "unchecked", readings, f"{missing[0]} is not in this run's evidence")
    reading = readings[0][1]
    assert reading is not None  # not missing
    low, high = _span(reading)
    band_low, band_high = BANDS[claim.kind][str(claim.band)]
    measured = reading_text(claim.kind, reading)
    wanted = f"'{claim.band}' is {band_text(claim.kind, str(claim.band))}"
    if band_low <= low and high < band_high:
        return Verdict(claim, "holds", readings, f"measured {measured}, inside the band: {wanted}")
    if high < band_low or low >= band_high:
        return Verdict(claim, "false", readings, f"measured {measured}, outside the band: {wanted}")
    return Verdict(claim, "uncertain", readings, f"measured {measured}, whose interval crosses the band's edge: "
                                                f"{wanted}")


def _judge_order(claim: Claim, readings: tuple[tuple[str, Reading | None], ...], missing: list[str]) -> Verdict:
    """Each feature matters more than the next: false when the next one's interval lies wholly above its own,
    holds when its interval lies wholly above the next one's, uncertain when they overlap."""
    statuses: list[str] = []
    first_false = ""
    values = [reading for _, reading in readings]
    for a, b, fa, fb in zip(values, values[1:], claim.features, claim.features[1:], strict=False):
        if a is None or b is None:
            statuses.append("unchecked")
            continue
        (low_a, high_a), (low_b, high_b) = _span(a), _span(b)
        if low_b > high_a:
            statuses.append("false")
            first_false = first_false or (f"'{fb}' ({reading_text('order', b)}) matters more than '{fa}' "
                                          f"({reading_text('order', a)}), which the statement puts first")
        else:
            statuses.append("holds" if low_a > high_b else "uncertain")
    if "false" in statuses:
        return Verdict(claim, "false", readings, first_false)
    if missing:
        return Verdict(claim, "unchecked", readings, f"{missing[0]} is not in this run's evidence")
    if "uncertain" in statuses:
        close = statuses.count("uncertain")
        return Verdict(claim, "uncertain", readings,
                       f"{close} of {len(statuses)} neighbouring pairs have overlapping 95% intervals")
    return Verdict(claim, "holds", readings, "each parameter's 95% interval lies above the next one's")


def _span(reading: Reading) -> tuple[float, float]:
    """The reading's 95% interval widened to hold its value (`numbers.held`); the value alone without one."""
    low, high = held(reading.value, reading.low, reading.high)
    return (reading.value, reading.value) if low is None or high is None else (low, high)
