"""The report checked against its own evidence (issue 56 item 3): what the pages print is resolved against
evidence.json, so a contradiction is a failing check, not something a reader finds.

The templates mark what they print with machine-readable references:
- `data-ref="metric:<kind>:<metric>"` on a printed value (and its interval): the key figures, and each finding's
  technical line (`metric = value`), Appendix A's measured values; a percentage is read as the share it prints;
- `data-subject` and `data-severity` wherever a finding's or a detection's severity is printed (summary table, cards,
  "related" notes);
- `data-count` and `data-rows-of="<id>"` on a printed number of rows: the table it counts;
- links to a section (`<a href="#id">`): the section's heading (a link marked `data-item` names something inside
  its target, e.g. a key figure's measure, and is not checked).

`check(html, document)` returns one line a problem: a printed value that is not its source's (to the digits
printed), an interval that is not its source's, one metric printed with two different intervals, one subject with
two severities, a count of rows beside a table of another length, a pointer whose words name another section,
a law said to bind the provider (wholly, in part, or not) otherwise than its applicability in evidence.json, a line
chart's caption that says its lines rise (or fall) where its data say otherwise, a code key (spec key, option,
evidence-kind name, metric key) in the reader's text outside small type or read as words in it (`key_problems`).
Measuring code does not import it; the tests run it on every kind of run they make.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from html.parser import HTMLParser

from auditor.evidence.document import EvidenceDocument

NUMBER = re.compile(r"[-−]?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?(?:%| pp\b)?")  # a share in % or in points
SECTION_TAGS = ("section", "h2", "h3")


@dataclass
class _Marked:
    """An element carrying references, with the text it printed."""

    attrs: dict[str, str]
    text: list[str] = field(default_factory=list)


@dataclass
class _Link:
    target: str
    text: list[str] = field(default_factory=list)


class _Collector(HTMLParser):
    """Every marked element's text, every internal link's words, every section's heading and its ancestors'."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.marked: list[_Marked] = []
        self.links: list[_Link] = []
        self.headings: dict[str, list[str]] = {}  # a section's id -> its heading, then its enclosing sections'
        self._open: list[tuple[str, _Marked | None, _Link | None, str]] = []  # with the element's id ("": none)
        self._sections: list[tuple[str, str | None]] = []  # the open sections: (tag, id)
        self._waiting: list[str] = []  # ids of sections (and headings) whose heading text comes next
        self._heading: list[str] | None = None
        self.rows: dict[str, int] = {}  # an element's id -> the table body rows inside it
        self.counts: list[tuple[str, str]] = []  # (the count printed, the id of what it counts)
        self._body = 0  # open <tbody> elements

    def _add(self, text: str) -> None:
        for _, marked, link, _ in self._open:
            if marked is not None:
                marked.text.append(text)
            if link is not None:
                link.text.append(text)
        if self._heading is not None:
            self._heading.append(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        given = {name: value or "" for name, value in attrs}
        if tag != "wbr":  # a line-break opportunity inside a word, not a space
            self._add(" ")  # a tag boundary separates words (a value and, after <br>, its interval)
        marked = _Marked(given) if "data-ref" in given or "data-severity" in given else None
        href = given.get("href", "")
        link = _Link(href[1:]) if tag == "a" and href.startswith("#") and "data-item" not in given else None
        if marked is not None:
            self.marked.append(marked)
        if link is not None:
            self.links.append(link)
        if tag == "section":
            self._sections.append((tag, given.get("id")))
            if given.get("id"):
                self._waiting.append(given["id"])
        if tag in ("h2", "h3") and self._heading is None:
            self._heading = []
            if given.get("id"):
                self._waiting.append(given["id"])
        if given.get("data-rows-of"):
            self.counts.append((given.get("data-count", ""), given["data-rows-of"]))
        if tag == "tbody":
            self._body += 1
        if tag == "tr" and self._body:
            for *_, element in self._open:
                if element:
                    self.rows[element] = self.rows.get(element, 0) + 1
        if tag not in VOID:
            self._open.append((tag, marked, link, given.get("id", "")))

    def handle_endtag(self, tag: str) -> None:
        self._add(" ")
        if tag in ("h2", "h3") and self._heading is not None:
            text = " ".join("".join(self._heading).split())
            enclosing = [self.headings[i][0] for _, i in reversed(self._sections) if i in self.headings]
            for waiting in self._waiting:
                self.headings.setdefault(waiting, [text, *enclosing])
            self._waiting, self._heading = [], None
        if tag == "section" and self._sections:
            self._sections.pop()
        if tag == "tbody" and self._body:
            self._body -= 1
        while self._open:
            if self._open.pop()[0] == tag:
                break

    def handle_data(self, data: str) -> None:
        self._add(data)


VOID = ("br", "img", "meta", "link", "input", "hr", "wbr", "col")


def _numbers(text: str) -> list[tuple[float, float]]:
    """Each number printed in `text` as (value, half a unit of its last printed digit); percentages and percentage
    points as shares."""
    out = []
    for token in NUMBER.findall(text):
        share = token.endswith(("%", " pp"))  # percentage points: a change of a share, as a share
        plain = token.removesuffix(" pp").rstrip("%").replace(",", "").replace("−", "-")
        mantissa, _, exponent = plain.partition("e")
        decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
        tolerance = 0.5 * 10.0 ** -decimals * (10.0 ** int(exponent) if exponent else 1.0)
        value = float(plain)
        out.append((value / 100, tolerance / 100) if share else (value, tolerance))
    return out


def _same(printed: tuple[float, float], true: float) -> bool:
    value, tolerance = printed
    return abs(value - true) <= tolerance * (1 + 1e-9) + 1e-12


def _words(text: list[str]) -> str:
    return " ".join("".join(text).split())


def check(html: str, document: EvidenceDocument) -> list[str]:
    """Every contradiction between the report's marked text and its evidence, one line each (none: consistent)."""
    collector = _Collector()
    collector.feed(html)
    collector.close()
    problems: list[str] = []
    intervals: dict[str, set[str]] = {}
    severities: dict[str, set[str]] = {}
    for marked in collector.marked:
        text = _words(marked.text)
        ref = marked.attrs.get("data-ref")
        if ref is not None:
            problems += _value_problems(ref, text, document, intervals)
        subject, severity = marked.attrs.get("data-subject"), marked.attrs.get("data-severity")
        if subject and severity:
            severities.setdefault(subject, set()).add(severity)
    problems += [f"{ref}: printed with {len(seen)} different intervals ({'; '.join(sorted(seen))})"
                 for ref, seen in intervals.items() if len(seen) > 1]
    problems += [f"{subject}: printed with {len(seen)} severities ({', '.join(sorted(seen))})"
                 for subject, seen in severities.items() if len(seen) > 1]
    for printed, element in collector.counts:
        held = collector.rows.get(element, 0)
        if str(held) != printed:
            problems.append(f"a count of {printed} rows beside “#{element}”, which holds {held}")
    for link in collector.links:
        headings = collector.headings.get(link.target)
        if headings and not _names(_words(link.text), headings):
            problems.append(f"a pointer “{_words(link.text)}” leads to the section “{headings[0]}”")
    problems += _law_problems(html, document)
    problems += _caption_problems(document)
    problems += key_problems(html, document)
    return problems


DIRECTION = re.compile(r"\b(rises|falls|neither rises nor falls)\b(?: on balance)? as\b")


def _caption_problems(document: EvidenceDocument) -> list[str]:
    """A line chart's caption that says which way its lines go ("AUC rises as K grows") against its data."""
    from auditor.core.errors import InputError
    from auditor.evidence.figures import decode, line_trend

    problems = []
    for kind, item in document.evidence.items():
        for figure in item.figures or []:
            claim = DIRECTION.search(figure.caption)
            if figure.chart != "line_chart" or claim is None:
                continue
            try:
                series = decode(figure.data.get("series"))
            except InputError:
                continue
            trend, rising, lines = line_trend(series) if isinstance(series, dict) else ("", 0, 0)
            if trend and trend != claim.group(1):
                problems.append(f"the caption of “{figure.title}” ({kind}) says it {claim.group(1)}, but {rising} of "
                                f"its {lines} lines end higher than they start: it {trend}")
    return problems


def _scope_of(text: str) -> str | None:
    """What `text` (the words after a law's title) says of the law's scope: not applicable, in part, may apply (not
    established) or applies — the most specific that the words hold."""
    if "not applicable" in text:
        return "not applicable"
    if "rules do not" in text or "applies in part" in text:
        return "in part"
    if "may apply" in text or "not established" in text:
        return "may apply"
    return "applies" if "applies" in text else None


def _law_problems(html: str, document: EvidenceDocument) -> list[str]:
    """A law said to bind the provider on one page and not (or only in part) on another: every place a law's title
    is followed by words of its scope must say what its applicability in evidence.json says."""
    text = " ".join(re.sub(r"<[^>]+>", " ", html).split()).replace("&#39;", "'").replace("&amp;", "&")
    laws = [(str(p.get("title", "")), str(p.get("applicability", "applies"))) for p in document.policies]
    laws += [(str(law.get("title", "")), str(law.get("applicability", ""))) for law in document.other_laws]
    # a law is named by its whole title, or by the part before its dash on the one-page summary
    laws += [(title.split(" — ")[0], applicability) for title, applicability in laws if " — " in title]
    titles = [title for title, _ in laws if title]
    problems = []
    for title, applicability in laws:
        if not title:
            continue
        expected = _scope_of(applicability) or "may apply"
        for at in (m.end() for m in re.finditer(re.escape(title), text)):
            window = text[at:at + 240]  # up to the next law named, or the end of the sentence
            ends = [window.find(other) for other in titles
                    if other != title and not title.startswith(other) and other in window]
            window = window[:min(ends)] if ends else window
            said = _scope_of(window.split(". ")[0])
            if said is not None and said != expected:
                problems.append(f"{title}: said to be “{said}” where evidence.json says “{applicability[:80]}”")
                break
    return problems


def _names(words: str, headings: list[str]) -> bool:
    """Whether a pointer's words name the section it leads to (or a section around it): they are in its heading,
    the heading is in them, or their last parenthesised part is ("the audit's facts (Scope)")."""
    said = words.casefold()
    named = [said, *re.findall(r"\(([^()]*)\)\s*$", said)]
    return any(n and (n in h.casefold() or h.casefold() in n) for n in named for h in headings)


def _value_problems(ref: str, text: str, document: EvidenceDocument, intervals: dict[str, set[str]]) -> list[str]:
    """A printed value (and interval) against the metric `ref` names."""
    kind, _, metric = ref.removeprefix("metric:").partition(":")
    reading = document.reading(kind, metric)
    value_text = text.split(" = ", 1)[1].split(";")[0] if " = " in text else text
    value_text = value_text.replace("95% interval", " ")
    if reading is None or not math.isfinite(reading.value):
        return [] if "—" in value_text or not NUMBER.search(value_text) else \
            [f"{ref}: prints “{value_text.strip()}”, but evidence.json holds no value for it"]
    tokens = NUMBER.findall(value_text)
    if not tokens:
        return [f"{ref}: prints no number (“{value_text.strip()[:60]}”) for the value {reading.value!r}"]
    printed = _numbers(value_text)
    problems = []
    bound = value_text.strip()[:1]
    if bound in "<>" and bound:  # "< 1e-9": a bound, not a value
        if not (reading.value < printed[0][0] if bound == "<" else reading.value > printed[0][0]):
            problems.append(f"{ref}: prints {bound} {tokens[0]} where evidence.json holds {reading.value!r}")
    elif not _same(printed[0], reading.value):
        problems.append(f"{ref}: prints {tokens[0]} where evidence.json holds {reading.value!r}")
    if " to " in value_text and len(printed) >= 3:
        shown = f"{tokens[1]} to {tokens[2]}"
        intervals.setdefault(ref, set()).add(shown)
        found = reading.interval
        if found is None:
            problems.append(f"{ref}: prints the interval “{shown}”, which evidence.json does not hold")
        elif not (_same(printed[1], min(found[0], reading.value)) and _same(printed[2], max(found[1], reading.value))):
            problems.append(f"{ref}: prints the interval “{shown}” where evidence.json holds {found[0]!r} to "
                            f"{found[1]!r}")
    return problems


# --- code keys outside small type (issue 56: "code in prose") -------------------------------------------------------

FILE_ENDINGS = ("json", "csv", "parquet", "txt", "yaml", "yml", "pdf", "html", "md", "py", "gz", "sqlite", "skops",
                "onnx", "cbm", "ubj", "pem", "p12", "tsr")
TECHNICAL_SECTIONS = ("appendix-tables",)  # Appendix B: the spec, inputs, verification and the full tables
DOTTED = re.compile(r"(?<![\w.@/-])([a-z_][a-z0-9_@]*(?:\.[a-z0-9_@]+)+)(?![\w@/-])")


@dataclass
class _KeyVocabulary:
    """What a configuring reader types and a compliance officer should not have to read: spec keys, option names,
    evidence-kind names, metric keys (and their first segments, to catch a metric pattern such as
    `ranking_quality.group`)."""

    spec_keys: set[str]
    options: set[str]
    kinds: set[str]
    metrics: set[str]
    prefixes: set[str]


def _spec_keys(model: type, prefix: str = "") -> set[str]:
    """Every dotted key of a spec model (`audit.provider.high_risk`), through nested models."""
    from pydantic import BaseModel

    keys: set[str] = set()
    for name, info in model.model_fields.items():  # type: ignore[attr-defined]
        key = f"{prefix}{info.alias or name}"
        keys.add(key)
        for inner in (info.annotation, *getattr(info.annotation, "__args__", ())):
            if isinstance(inner, type) and issubclass(inner, BaseModel):
                keys |= _spec_keys(inner, key + ".")
    return keys


def _vocabulary(document: EvidenceDocument) -> _KeyVocabulary:
    from auditor.evidence import REGISTRY
    from auditor.inputs.spec import AuditSpec

    spec_keys = {k for k in _spec_keys(AuditSpec) if "." in k}
    kinds = set(REGISTRY) | set(document.evidence)
    options = {name for kind in REGISTRY.values() for name in kind.options.model_fields}
    metrics = {m for item in document.evidence.values() for m in item.metrics}
    metrics |= {f.metric for f in document.findings if re.fullmatch(r"[a-z_][\w@.]*", f.metric or "")}
    prefixes = {m.split(".")[0] for m in metrics} | kinds
    return _KeyVocabulary(spec_keys, options, kinds, metrics, prefixes)


class _Prose(HTMLParser):
    """The report's reader text, a section at a time: not what is set in small type for the technical reader
    (`.key`, `<small>`), not hashes, preformatted text or Appendix B; and the words set as code in it."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.texts: list[tuple[str, str]] = []  # (section id, text)
        self.codes: list[tuple[str, str]] = []  # (section id, a <code> element's text)
        self._sections: list[str] = []
        self._stack: list[tuple[str, bool, bool]] = []  # (tag, hidden, code)

    def _hidden(self) -> bool:
        return any(hidden for _, hidden, _ in self._stack) or bool(set(self._sections) & set(TECHNICAL_SECTIONS))

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        classes = (dict(attrs).get("class") or "").split()
        if tag == "section":
            self._sections.append(dict(attrs).get("id") or "")
        if tag in VOID:
            return
        # small type, code listings, and the cost table (the spec's items by key: a record for the technical reader)
        hidden = tag in ("small", "pre", "style", "script", "svg") or bool({"key", "hash", "cost"} & set(classes))
        self._stack.append((tag, hidden, tag == "code"))
        if tag == "code" and not self._hidden():
            self.codes.append((self._section(), ""))

    def handle_endtag(self, tag: str) -> None:
        if tag == "section" and self._sections:
            self._sections.pop()
        while self._stack:
            if self._stack.pop()[0] == tag:
                break

    def handle_data(self, data: str) -> None:
        if self._hidden():
            return
        self.texts.append((self._section(), data))
        if any(code for *_, code in self._stack) and self.codes:
            section, text = self.codes[-1]
            self.codes[-1] = (section, text + data)

    def _section(self) -> str:
        return self._sections[-1] if self._sections else ""


def key_problems(html: str, document: EvidenceDocument) -> list[str]:
    """Code keys a compliance officer would read: a spec key, metric key or evidence-kind name in the report's text
    outside small type, and a spec option set as code in a sentence (`declared`); the key belongs in small type
    beside words that say it (`<code class="key">`, the findings' technical line), or in Appendix B."""
    words = _vocabulary(document)
    prose = _Prose()
    prose.feed(html)
    prose.close()
    found: dict[tuple[str, str], None] = {}
    for section, text in prose.texts:
        for token in DOTTED.findall(text):
            token = token.rstrip(".")
            if token.rsplit(".", 1)[-1] in FILE_ENDINGS:
                continue
            if token in words.spec_keys or token in words.metrics or token.split(".")[0] in words.prefixes:
                found[(section, token)] = None
        for kind in words.kinds:
            if "_" in kind and re.search(rf"(?<![\w.]){re.escape(kind)}(?!\w|\.\w)", text):
                found[(section, kind)] = None
    for section, code in prose.codes:
        if code.strip() in words.options | words.kinds:
            found[(section, code.strip())] = None
    problems = [f"a code key “{key}” in the reader's text (section “{section or 'none'}”): say it in words, with the "
                f"key in small type if the spec's editor needs it" for section, key in found]
    return problems + _keys_as_words(html)


SMALL_KEY = re.compile(r'<code class="key">([^<]*)</code>(?!\)|, <code class="key">)([^<]{0,40})')


def _keys_as_words(html: str) -> list[str]:
    """A key in small type is a reference beside the words that say it: it closes a parenthesis ("not stated
    (audit.qualifications)", "(global_importance, parameter_influence)"); a key the sentence reads as words
    ("(audit.provider.high_risk not stated)", "update declared in the spec") is code in prose all the same."""
    reader = html.split('<section id="appendix-tables"')[0]
    return [f"the key “{key}” is read as words (“{key}{after.rstrip()}”): say it in words and give the key in "
            f"parentheses after them" for key, after in SMALL_KEY.findall(reader)]
