"""What a rule measured, as a sentence a compliance officer reads without the metric's key: "1 main ranking
parameter (sales_rank_log) orders the results but is not declared" instead of "disclosure.undeclared_main = 1".
The key stays beside it in small type for the technical reader (the findings' cards); a metric no kind words
(an organisation's own pack) reads "<rule title>: measured <value>".

Each kind says its own metrics (its `phrases.py`, named by its registry entry); a phrase takes the value already
formatted by `auditor.core.numbers`, so the sentence and the section print the same figure the same way.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from auditor.core.numbers import figure, percent, points, with_interval
from auditor.core.words import counted
from auditor.evidence.phrases import POINTS, Phrase, Stated

if TYPE_CHECKING:
    from auditor.evidence.document import EvidenceItem
    from auditor.evidence.registry import EvidenceKind


def phrases() -> dict[str, Phrase]:
    """Every kind's sentences for the metrics its rules judge (each kind's `phrases.py`, named by its entry)."""
    return _words()[0]


def per_query_names() -> dict[str, str]:
    """A per-query metric's name in a sentence ("80.0% of queries have an nDCG@10 >= 0.5"), from the kinds."""
    return _words()[1]


def units() -> dict[str, str]:
    """What a metric counts where a bare number would not say it ("day"), or POINTS, from the kinds' `UNITS`."""
    return _words()[2]


def _words() -> tuple[dict[str, Phrase], dict[str, str], dict[str, str]]:
    from auditor.evidence import ALWAYS, REGISTRY
    from auditor.evidence.registry import version

    if _WORDS and _WORDS[0][0] == version():
        return _WORDS[0][1]
    said: dict[str, Phrase] = {}
    named: dict[str, str] = {}
    counts: dict[str, str] = {}
    kinds: list[EvidenceKind] = [*ALWAYS.values(), *REGISTRY.values()]
    for kind in kinds:
        sentences, names = kind.words()
        said.update(sentences)
        named.update(names)
        counts.update(kind.units())
    _WORDS[:] = [(version(), (said, named, counts))]
    return said, named, counts


_WORDS: list[tuple[int, tuple[dict[str, Phrase], dict[str, str], dict[str, str]]]] = []  # per registry version


DATASET_FACTS = {  # the Scope's dataset facts in words (a fact not listed shows its key)
    "dataset.n_queries": "queries",
    "dataset.n_docs": "documents",
    "dataset.n_features": "features",
    "dataset.docs_per_query.min": "fewest documents in a query",
    "dataset.docs_per_query.mean": "documents per query (mean)",
    "dataset.docs_per_query.max": "most documents in a query",
    "dataset.missing_values": "missing values",
    "dataset.all_zero_label_queries": "queries with no relevant document",
    "dataset.all_zero_label_queries_share": "queries with no relevant document (share of all)",
    "dataset.single_doc_queries": "queries with one document",
    "dataset.single_doc_queries_share": "queries with one document (share of all)",
    "dataset.single_label_queries": "queries of 2+ documents all with one label",
    "dataset.single_label_queries_share": "queries all with one label (share of those of 2+ documents)",
    "dataset.tied_score_queries": "queries of 2+ documents all scored alike",
    "dataset.tied_score_queries_share": "queries all scored alike (share of those of 2+ documents)",
    "dataset.tied_docs_share": "share of a query's documents scored like another (mean)",
    "dataset.population.n_queries": "queries in the whole dataset (before sampling)",
    "dataset.population.n_docs": "documents in the whole dataset (before sampling)",
}
SHARES = re.compile(r"(share|fraction)$|_share\b")
THRESHOLD = re.compile(r"(?<=[<>=] )(-?\d+(?:\.\d+)?)\b")  # a number a rule compares with ("FAIL if > 365")


def is_share(metric: str, value: float) -> bool:
    """Whether `metric` is a share, printed in % wherever it appears (named `…share`, `…fraction`, `…_share…`)."""
    return bool(SHARES.search(metric.removesuffix(".mean"))) and 0 <= value <= 1


def requirement_text(requirement: str, metric: str, value: float | None) -> str:
    """A rule's requirement in its measured value's unit: "WARN if > 30.0%" beside 1.2%, not "> 0.3" (issue 56);
    "FAIL if > 365 days" beside 47 days, "FAIL if not stated" beside "stated" (a reader review: bare numbers)."""
    if value is None or not math.isfinite(value):
        return requirement
    unit, phrase = units().get(metric), phrases().get(metric)
    if unit == POINTS:  # "+10.7 pp … WARN if > 1.0 pp", not "> 0.01"
        return thresholds_in_points(requirement)
    if isinstance(phrase, Stated):
        return re.sub(r"(?<=if )< 1\b", f"not {phrase.word}", requirement)
    if unit is not None:
        return THRESHOLD.sub(lambda m: _count(float(m.group(1)), unit), requirement)
    return thresholds_in_percent(requirement) if is_share(metric, value) else requirement


def _count(value: float, noun: str) -> str:
    """A count with its noun ("47 days", "1 impact ratio"); a fraction of one with the plural ("2.5 days")."""
    if float(value).is_integer():
        return counted(int(value), noun)
    return f"{figure(value)} {counted(2, noun).split(' ', 1)[1]}"


def cell_text(metric: str, value: float, interval: tuple[float, float] | None) -> str | None:
    """The value as a table cell prints it where its metric has a unit: "stated", "47 days", "-0.8 pp (-1.5 pp to
    -0.2 pp)", each end with its unit as the consistency checker reads it; None for a plain number or share (the
    caller's one style)."""
    phrase, unit = phrases().get(metric), units().get(metric)
    if isinstance(phrase, Stated):
        return phrase.short(value)
    if unit == POINTS:
        low = points(min(interval[0], value)) if interval else ""
        return points(value) + (f" ({low} to {points(max(interval[1], value))})" if interval else "")
    if unit is not None and not interval:
        return _count(value, unit)
    return None


def thresholds_in_points(requirement: str) -> str:
    """"WARN if > 0.01" as "WARN if > +1.0 pp", for a change of a share."""
    return THRESHOLD.sub(lambda m: points(float(m.group(1))), requirement)


def thresholds_in_percent(requirement: str) -> str:
    """"WARN if > 0.35" as "WARN if > 35.0%"."""
    return re.sub(r"(?<=[<>=] )(\d+(?:\.\d+)?)\b", lambda m: percent(float(m.group(1))), requirement)


def value_text(metric: str, value: float, interval: tuple[float, float] | None) -> str:
    """The value with its interval in the document's one style: a share in %, a change of share in pp."""
    if units().get(metric) == POINTS:
        return points(value) + (f" (95% interval {points(interval[0])} to {points(interval[1])})" if interval else "")
    low, high = interval if interval else (None, None)
    return with_interval(value, low, high, share=is_share(metric, value))


def phrase_of(metric: str, evidence: str = "", item: EvidenceItem | None = None) -> Phrase | None:
    """The sentence for `metric`: as the stored result `item` of kind `evidence` tells it where its kind names what
    the figure is about (a reader review: "the most favoured group gets 1.40 times …" named no group), else the
    kind's general phrase; None when no kind words it."""
    if item is not None:
        from auditor.evidence import ALWAYS, REGISTRY

        kind = REGISTRY.get(evidence) or ALWAYS.get(evidence)
        about = kind.words_about(item).get(metric) if kind is not None else None
        if about is not None:
            return about
    return phrases().get(metric)


def measured_sentence(finding: Any, *, with_interval: bool = True, item: EvidenceItem | None = None) -> str:
    """The finding's measured value as a sentence (capitalised, no full stop); its message when it judged no
    value (evidence present, not requested, failed, not applicable). Without its interval: `fact`. `item`: the
    finding's evidence as stored, for a sentence that names what the figure is about."""
    if finding.value is None:
        return _without_value(finding)
    interval = finding.interval if with_interval else None
    if finding.requirement.startswith("share of queries"):
        condition = finding.requirement.split(":", 1)[0].removeprefix("share of queries with value").strip()
        name = per_query_names().get(finding.metric, "the measured value")
        text = f"{percent(finding.value)} of queries have {name} {condition}"
        if interval:
            text += f" (95% interval {percent(interval[0])} to {percent(interval[1])})"
        return _capital(text)
    phrase = phrase_of(finding.metric, finding.evidence, item)
    shown = value_text(finding.metric, finding.value, interval)
    if phrase is None:
        return f"{finding.title.rstrip('.')}: measured {shown}"
    return _capital(phrase(finding.value, shown))


def fact(finding: Any, item: EvidenceItem | None = None) -> str:
    """What a verdict found, as the title of its finding (issue 56: facts first, the requirement after): the
    measured value in its rule's words, without the interval (the card gives it); the requirement's own title when
    the rule judged no value or is a pack's own whose metric has no words here. `item`: as `measured_sentence`."""
    worded = finding.metric in phrases() or finding.requirement.startswith("share of queries")
    return (measured_sentence(finding, with_interval=False, item=item) if finding.value is not None and worded
            else finding.title)


def _without_value(finding: Any) -> str:
    """A verdict on no value, in words: the evidence was not requested, does not apply, failed or is present."""
    from auditor.evidence import REGISTRY

    plugins: dict[str, EvidenceKind] = REGISTRY  # typed here: the evidence package makes it on first use
    plugin = plugins.get(finding.evidence)
    name = plugin.title if plugin is not None else "the evidence it needs"
    message = finding.message
    if "was not requested" in message:
        return f"{name}, which this requirement needs, was not requested in the spec"
    if "does not apply" in message:
        return f"{name}, which this requirement needs, does not apply to this audit"
    if finding.status == "ERROR":
        return f"It could not be judged: {name} gave no value to judge"
    if finding.status == "PASS":
        return f"{name} is present"
    return _capital(message)


def technical(finding: Any) -> str:
    """The same measurement for the technical reader: `metric = value` and the rule's requirement; the verdict's
    own message when it judged no value."""
    if finding.value is None:
        return finding.message
    return f"{finding.metric} = {figure(finding.value, 4)}; {finding.requirement}"


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


# the evidence kinds a remedy names in parentheses after the reader's words for them: "a proxy analysis
# (`parameter_influence`)" — the key is for whoever edits the spec, the words are for the reader
_NAMED_KINDS = re.compile(r"\s*\(((?:`\w+`(?:,\s*|\s+and\s+)?)+)\)")


def remedy_for(remedy: str, ran: set[str], kinds: Collection[str]) -> str:
    """A rule's remedy in the reader's words, as this audit can follow it (a reader review: "the global_importance
    evidence help … add them to the spec's evidence" was written for the tool's operator): the evidence kinds it
    names in parentheses after its own words for them are left out, and said "not run in this audit" where this
    audit did not run them; the spec change is `remedy_setup`'s, in small type."""

    def reader(match: re.Match[str]) -> str:
        named = [kind for kind in re.findall(r"`(\w+)`", match[1]) if kind in kinds]
        if not named:
            return match[0]
        missing = [kind for kind in named if kind not in ran]
        if not missing:
            return ""
        return ", not run in this audit," if len(missing) == len(named) else " (in part not run in this audit)"

    return _NAMED_KINDS.sub(reader, remedy)


def remedy_setup(remedy: str, ran: set[str], kinds: Collection[str]) -> str:
    """The spec change a remedy needs where this audit did not run the evidence kinds it names, for whoever edits
    the spec (the report prints it in small type); "" when the remedy already says to add them or they ran."""
    named = dict.fromkeys(re.findall(r"`(\w+)`", remedy))  # in the remedy's order
    missing = [kind for kind in named if kind in kinds and kind not in ran and f"Add `{kind}`" not in remedy]
    if not missing:
        return ""
    listed = ", ".join(f"`{kind}`" for kind in missing)  # keys in parentheses after the words (consistency.py)
    them = "it" if len(missing) == 1 else "them"
    return f"To run {them}, add {them} to the spec's evidence ({listed})."
