"""Untrusted strings as a reader may see them: one function, `shown`, for the HTML and PDF report, the SVG figures,
the `--junit` file and the terminal. Feature names, document and query ids, the spec's texts and pack texts come
from files the auditor does not control; evidence.json keeps them verbatim, and everything that *shows* them goes
through here.

Why each rule (issue 33):
- Bidi controls (U+202E reverses the text after it: "nDCG = 0.99 PASS" reads backwards), zero-width and other
  invisible or format characters, control characters and unassigned code points are shown as `⟨U+202E⟩`, so two
  names that differ only by what cannot be seen look different, and no name can reorder the report's own text.
  `⟨` itself is shown as `⟨U+27E8⟩`, so a name cannot fake a marker.
- A word mixing scripts (Latin `sponsored` with a Cyrillic `ѕ`, U+0455) gets a marker after each letter of the
  minority script, `ѕ⟨U+0455 CYRILLIC⟩ponsored`; a word wholly made of letters that look Latin but are not (Cyrillic
  `сор`, fullwidth or mathematical letters) gets one after each letter. Latin with Chinese, Japanese or Korean
  letters is not marked: those scripts are written together and do not look alike.
- WeasyPrint lays out an unbreakable string in quadratic time (a 1,000-character feature name added 6-8 s to the
  PDF, 3,000 took 103 s, 10,000 had not finished after 25 min), and nobody reads 10,000 characters: a run of more
  than RUN_CHARS characters without a space is cut to its first RUN_KEEP, and a whole string to `limit` shown
  characters, each cut saying how long the original is (`…⟨10,000 characters⟩`). The full text is in evidence.json.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Iterator

NAME_CHARS = 120  # a feature name, document or query id, file name where it is shown
TITLE_CHARS = 160  # the report's title (cover, running header, PDF metadata)
TEXT_CHARS = 4_000  # any other string: sentences, notes, pack texts, the spec's descriptions
RUN_CHARS = 120  # a run without whitespace longer than this is cut (its first RUN_KEEP shown)
RUN_KEEP = 96

MARK = "⟨"
_ESCAPED_CATEGORIES = {"Cc", "Cf", "Co", "Cs", "Cn", "Zl", "Zp"}
# Default-ignorable and blank-looking code points outside those categories (Unicode's DerivedCoreProperties, plus
# the blank letters): combining grapheme joiner, Hangul fillers, Khmer vowels inherent, Mongolian and other
# variation selectors, braille blank, halfwidth Hangul filler.
_INVISIBLE = ((0x034F, 0x034F), (0x115F, 0x1160), (0x17B4, 0x17B5), (0x180B, 0x180F), (0x2800, 0x2800),
              (0x3164, 0x3164), (0xFE00, 0xFE0F), (0xFFA0, 0xFFA0), (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A),
              (0xE0000, 0xE0FFF))
_KEPT_IN_LINES = {"\n", "\t"}  # `lines=True` (report prose, the spec in a <pre>) keeps them
# Scripts written together with Latin that do not look like it (UTS #39 "highly restrictive" combinations).
_EAST_ASIAN = {"CJK", "HIRAGANA", "KATAKANA", "KATAKANA-HIRAGANA", "HANGUL", "BOPOMOFO", "IDEOGRAPHIC"}
_SAME_SCRIPT = {"ARABIC-INDIC": "ARABIC", "EXTENDED": "ARABIC"}  # digits named apart from their letters
# Cyrillic, Greek and Armenian letters that look like Latin ones (a whole word of them reads as Latin).
_LOOKALIKE = set("асеорхуѕіјԁһԛԝӏүАВЕКМНОРСТХЅІЈҮ" "οΑΒΕΖΗΙΚΜΝΟΡΤΥΧ" "օսոհ")
_WORD = re.compile(r"[\w\u0300-\u036f\u200c\u200d]+")  # letters, digits, marks and `_`: where scripts are compared


def shown(text: object, *, limit: int = TEXT_CHARS, lines: bool = False, run: int = RUN_CHARS) -> str:
    """`text` safe to show: invisible and control characters as ⟨U+XXXX⟩ (line breaks and tabs too, unless
    `lines`), mixed-script and lookalike letters marked, runs without whitespace longer than `run` and the whole
    cut to about `limit` characters with the original length stated. Apply it once, where the text is shown: its
    output marks again. The terminal's lines (`terminal`) keep long paths whole."""
    text = str(text)
    if lines:
        text = text.replace("\r\n", "\n")
    out: list[str] = []
    used = 0
    for match in re.finditer(r"\s+|\S+", text):
        parts = _run(match.group(), lines, run)
        for part in parts:
            if used + len(part) > limit:
                return "".join(out) + f"…⟨{len(text):,} characters⟩"
            out.append(part)
            used += len(part)
    return "".join(out)


def terminal(text: object, *, lines: bool = False) -> str:
    """Text for the terminal: escaped and marked like the report (an ESC would be a terminal control sequence, a
    newline a forged line unless `lines`), long paths whole: error lines shorten what they quote themselves."""
    return shown(text, limit=8 * TEXT_CHARS, run=8 * TEXT_CHARS, lines=lines)


def _run(piece: str, lines: bool, run: int = RUN_CHARS) -> list[str]:
    """One run of whitespace or of other characters, marked; a run shown longer than `run` (markers count)
    keeps its first RUN_KEEP/RUN_CHARS of it and says how long it is."""
    parts = list(_marked(piece[:run + 1], lines))
    if piece.isspace() or (len(piece) <= run and sum(map(len, parts)) <= run):
        return parts
    keep = run * RUN_KEEP // RUN_CHARS
    kept, size = [], 0
    for part in parts:
        if size + len(part) > keep:
            break
        kept.append(part)
        size += len(part)
    return [*kept, f"…⟨{len(piece):,} characters⟩"]


def flagged(text: str) -> list[tuple[int, str, str]]:
    """(position from 1, character, why) of every character `shown` marks: "invisible", or the script of a letter
    that mixes scripts or only looks Latin. For the feature dictionary, which lists them by code point."""
    marks = _script_marks(text)
    out = []
    for i, char in enumerate(text):
        if _invisible(char, lines=False):
            out.append((i + 1, char, "invisible or control"))
        elif i in marks:
            out.append((i + 1, char, marks[i]))
    return out


def code_point(char: str) -> str:
    """"U+0455 CYRILLIC SMALL LETTER DZE" (the name left out when Unicode gives none)."""
    name = unicodedata.name(char, "")
    return f"U+{ord(char):04X}" + (f" {name}" if name else "")


def _marked(piece: str, lines: bool) -> Iterator[str]:
    """The characters of one run (or whitespace) with their markers."""
    marks = _script_marks(piece)
    for i, char in enumerate(piece):
        if char == MARK or _invisible(char, lines):
            yield f"⟨U+{ord(char):04X}⟩"
        elif i in marks:
            yield f"{char}⟨U+{ord(char):04X} {marks[i]}⟩"
        else:
            yield char


def _invisible(char: str, lines: bool) -> bool:
    if lines and char in _KEPT_IN_LINES:
        return False
    code = ord(char)
    if code < 0x7F:
        return code < 0x20
    return unicodedata.category(char) in _ESCAPED_CATEGORIES or any(lo <= code <= hi for lo, hi in _INVISIBLE)


def _script(char: str) -> str | None:
    """The script of a letter (or non-ASCII digit) as the first word of its Unicode name: LATIN, CYRILLIC, GREEK,
    MATHEMATICAL, FULLWIDTH...; None for other characters and East Asian letters (never marked)."""
    if char.isascii():
        return "LATIN" if char.isalpha() else None
    category = unicodedata.category(char)
    if category[0] != "L" and category != "Nd":
        return None
    word = unicodedata.name(char, "UNNAMED").split(" ")[0]
    return None if word in _EAST_ASIAN else _SAME_SCRIPT.get(word, word)


def _script_marks(text: str) -> dict[int, str]:
    """{position: script} of the letters to mark: in a word of several scripts, those outside its main script
    (the one with most letters; Latin on a tie); in a word of one non-Latin script whose letters all look Latin,
    every letter."""
    marks: dict[int, str] = {}
    for word in _WORD.finditer(text):
        scripts = {word.start() + i: s for i, c in enumerate(word.group()) if (s := _script(c)) is not None}
        counts = Counter(scripts.values())
        if len(counts) > 1:
            main = max(counts, key=lambda s: (counts[s], s == "LATIN", s))
            marks.update({i: s for i, s in scripts.items() if s != main})
        elif counts and "LATIN" not in counts and all(_looks_latin(text[i]) for i in scripts):
            marks.update(scripts)
    return marks


def _looks_latin(char: str) -> bool:
    """A letter that reads as a Latin one: a known lookalike, or one whose compatibility form is ASCII (fullwidth,
    mathematical, Kelvin sign...)."""
    return char in _LOOKALIKE or unicodedata.normalize("NFKC", char).isascii()
