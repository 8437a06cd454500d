"""Every evidence kind in one table: a frozen `EvidenceKind` entry carries everything about a kind — its options
model, the metric names it can emit, the module that runs it, its cost estimator, which kinds it uses, and the facts
the cost model and the budget plan with (it audits a sample of queries, runs them in worker processes, scores mostly
masked rows, what a budget may leave out) — so the spec, the cost model, the budget and the policy engine read the
registry and never branch on a kind's name (docs/architecture.md, "A new evidence kind").

A new kind is one module (its options model, `run(ctx, options)` and optionally `check(options, data)`) plus one
entry: a line in `_builtins()` below, or `register(EvidenceKind(...))` from anywhere (a test registers a toy kind).
Importing this module loads no plugin, no numpy and no pandas (the spec imports it): an entry names its module and
its estimator, imported on first use.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from auditor.evidence.options import EvidenceOptions

if TYPE_CHECKING:
    from auditor.evidence.document import EvidenceItem

# (options, cost.Shape, the items estimated before it in this audit with their options) -> (queries, model rows,
# seconds beside the model, what drives them); "module:function" strings are imported when first called
Estimator = Callable[[Any, Any, Mapping[str, Any]], tuple[int, int, float, str]]

ALWAYS_PRESENT = ("dataset", "governance")  # the items every audit has, before the requested ones


def resolve(target: Callable[..., Any] | str) -> Callable[..., Any]:
    """A callable, or the "module:function" string naming one (imported now)."""
    if callable(target):
        return target
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)  # type: ignore[no-any-return]


@dataclass(frozen=True)
class KeyFigure:
    """A figure a kind offers the executive summary: its `metric` (value and interval read by `metric_names.read`)
    under `label`, with what the `scale` means; `order` places it among the other kinds' (most telling first).
    `share`: printed in %; `points`: a change of a share, in percentage points. `also`: other figures of the same
    fact — page 2 shows the one an applied rule judges (the key figures are the judged ones: a reader review found
    1.73 shown while the rule judged +10.7 pp), the others beside it by their `aside` name."""

    order: int
    label: str
    metric: str
    scale: str
    share: bool = False
    points: bool = False
    also: tuple[KeyFigure, ...] = ()
    aside: str = ""


@dataclass(frozen=True)
class EvidenceKind:
    """One evidence kind. `module` holds `run(ctx, options) -> EvidenceResult` and, optionally, `check(options,
    data)` (bad options for this data: InputError with `where`), imported on first use, so a worker process imports
    only the kinds whose tasks it runs."""

    name: str  # the spec key
    options: type[EvidenceOptions]
    module: str
    title: str
    description: str
    cost: Estimator | str  # model rows and seconds before the run (auditor/run/cost.py); no kind goes uncosted
    # the metric (and per-query) names it can emit, as patterns (`metric_pattern`): a policy rule naming another is
    # bad input when the packs load
    metrics: tuple[str, ...] = ()
    # kinds whose results it reads when they are requested too (`ctx.used(name)`): the engine runs them first
    uses: tuple[str, ...] = ()
    sampled: bool = False  # audits a seeded sample of queries (its `queries:` option), which a budget may shrink
    pooled: bool = False  # its queries run in the executor's worker processes when the item is long enough
    masked: bool = False  # its model rows are mostly masked rows (scored at the probe's masked speed)
    # option values a budget sets when a smaller sample of queries alone does not fit, and what they leave out
    reduced: tuple[tuple[str, Any], ...] = ()
    reduced_text: str = ""
    readme: str = ""  # what it measures, for the README's table of evidence kinds (`readme_table`; tested current)
    # a kind that audits a sample of queries: (the metric counting the audited queries, the one counting chosen
    # queries it left out or "", what it measured) — the report's scope says when the sample is not every query
    coverage: tuple[str, str, str] | None = None
    # (its result as evidence.json holds it) -> the figures it offers the executive summary, or "module:function"
    key_figures: Callable[[EvidenceItem], list[KeyFigure]] | str | None = None
    # (its metrics, the dataset's facts) -> what the report's Limitations must say about its figures, or
    # "module:function"
    limitations: Callable[[Mapping[str, float], Mapping[str, float]], list[str]] | str | None = None
    # its detections that find the audit's own tools wanting (an explainer no better than random, a surrogate that
    # does not rank like the model): Limitations lists them
    self_checks: tuple[str, ...] = ()
    # the column of its records holding each feature's share of importance (`feature` names it): the report lists
    # the features by it
    feature_shares: str | None = None
    # (its result as evidence.json holds it, its options) -> its report section (`base.Section`): a kind that
    # presents (issue 52) measures numbers and facts only, and the engine and `auditor render` present them
    section: Callable[[EvidenceItem, Any], Any] | str | None = None
    # the module holding its metrics' sentences: `PHRASES` ({metric: Phrase}, auditor/evidence/phrases.py),
    # optionally `PER_QUERY` ({per-query metric: its name in a sentence}), `UNITS` ({metric: what it counts})
    # and `about(item)` ({metric: Phrase} said of one stored result: what a figure is about, e.g. which group
    # has the largest ratio), which `auditor.report.wording` reads
    phrases: str | None = None

    def run(self, ctx: Any, options: Any) -> Any:
        """Measure, then present (issue 52): a kind with a `section` is presented from what evidence.json will hold
        — its stored form and the options it measured under — as `auditor render` presents it again."""
        result = self._module().run(ctx, options)
        if self.section is not None and result.status == "ok":
            from auditor.evidence.document import EvidenceItem

            result.options = options.model_dump(mode="json")
            result.present(self.presented(EvidenceItem.model_validate(result.to_json())))
        return result

    @property
    def check(self) -> Callable[[Any, Any], None] | None:
        return getattr(self._module(), "check", None)

    def estimator(self) -> Estimator:
        return resolve(self.cost)

    def limits(self, metrics: Mapping[str, float], dataset: Mapping[str, float]) -> list[str]:
        """What the report's Limitations says about its figures (nothing when it declares no `limitations`)."""
        return [] if self.limitations is None else list(resolve(self.limitations)(metrics, dataset))

    def figures(self, result: EvidenceItem) -> list[KeyFigure]:
        """The figures it offers the executive summary from `result` (none when it declares no `key_figures`)."""
        return [] if self.key_figures is None else list(resolve(self.key_figures)(result))

    def presented(self, item: EvidenceItem) -> Any:
        """Its report section made of `item` (a `base.Section`), under the options the item stored; None when the
        kind does not present, the item did not measure or was written before its kind presented."""
        if self.section is None or item.status != "ok" or item.options is None:
            return None
        import json  # JSON's own types: a tuple option is stored as a list

        # a file an option named is not read again, and may have moved since (`relocate`: existence not checked)
        options = self.options.model_validate_json(json.dumps(item.options), context={"relocate": {}})
        return resolve(self.section)(item, options)

    def words(self) -> tuple[Mapping[str, Callable[[float, str], str]], Mapping[str, str]]:
        """Its metrics' sentences and its per-query metrics' names (none when it declares no `phrases`)."""
        if self.phrases is None:
            return {}, {}
        module = importlib.import_module(self.phrases)
        return module.PHRASES, getattr(module, "PER_QUERY", {})

    def units(self) -> Mapping[str, str]:
        """What its metrics count where a bare number would not say it (`UNITS`, auditor/evidence/phrases.py)."""
        return {} if self.phrases is None else getattr(importlib.import_module(self.phrases), "UNITS", {})

    def words_about(self, item: EvidenceItem) -> Mapping[str, Callable[[float, str], str]]:
        """Its metrics' sentences as `item` tells them (naming what a figure is about), where its `phrases` module
        has `about`; none otherwise (the general `PHRASES` then)."""
        if self.phrases is None:
            return {}
        about = getattr(importlib.import_module(self.phrases), "about", None)
        return {} if about is None else about(item)

    def emits(self, metric: str) -> bool:
        """Whether this kind can emit `metric` (one of its `metrics` patterns matches it)."""
        return any(metric_pattern(pattern).fullmatch(metric) for pattern in self.metrics)

    def metric_examples(self) -> list[str]:
        """Its metric patterns with every alternative spelled out (placeholders kept): for nearest-name hints."""
        return [name for pattern in self.metrics for name in _expand(pattern)]

    def _module(self) -> Any:
        return importlib.import_module(self.module)


# the requestable kinds and the two every audit has; mutated in place by `register`, so a reference taken earlier
# (auditor.evidence.REGISTRY) sees a kind registered later
KINDS: dict[str, EvidenceKind] = {}
ALWAYS: dict[str, EvidenceKind] = {}
_changes = [0]


def register(kind: EvidenceKind, *, always: bool = False) -> EvidenceKind:
    """Add a kind (ValueError if its name is taken): the spec, the cost model, the budget and the packs' metric
    check see it from now on."""
    if kind.name in KINDS or kind.name in ALWAYS:
        raise ValueError(f"evidence kind {kind.name!r} is registered already")
    (ALWAYS if always else KINDS)[kind.name] = kind
    _changes[0] += 1
    return kind


def unregister(name: str) -> None:
    """Remove a kind registered with `register` (tests' toy kinds)."""
    KINDS.pop(name, None)
    _changes[0] += 1


def version() -> int:
    """Changes since import: the spec rebuilds its tagged union of items when this moves."""
    return _changes[0]


def readme_table() -> str:
    """The README's table of the evidence kinds a spec can request, from their entries (tests keep README.md equal)."""
    lines = ["| evidence | what it measures |", "| --- | --- |"]
    lines += [f"| `{kind.name}` | {kind.readme or kind.description} |" for kind in KINDS.values()]
    return "\n".join(lines) + "\n"


def metrics_table() -> str:
    """docs/metrics.md's table of kinds: each kind's metric prefixes and the metric names it declares (its `metrics`
    patterns, `{a|b}` one of the alternatives, `{name}` any one segment), every kind a spec has, the two always
    present first (tests keep the file equal)."""
    lines = ["| evidence kind | metric prefix | names it can emit |", "| --- | --- | --- |"]
    for kind in [*ALWAYS.values(), *KINDS.values()]:
        prefixes = dict.fromkeys(pattern.split(".", 1)[0] + "." for pattern in kind.metrics)
        name = f"`{kind.name}`" + (" (always present)" if kind.name in ALWAYS else "")
        names = "<br>".join(f"`{pattern}`".replace("|", "\\|") for pattern in kind.metrics)  # `|` splits cells
        lines.append(f"| {name} | {', '.join(f'`{p}`' for p in prefixes)} | {names} |")
    return "\n".join(lines) + "\n"


def _builtins() -> None:
    from auditor.evidence.kinds import ALWAYS_BUILTIN, BUILTIN

    for name in BUILTIN:
        register(importlib.import_module(f"auditor.evidence.kinds.{name}").ENTRY, always=name in ALWAYS_BUILTIN)


def metric_pattern(pattern: str) -> re.Pattern[str]:
    """A declared metric name as a regular expression: `{a|b.c}` is one of the alternatives (which may nest),
    `{name}` any one dotted segment (a k, a method, a feature, a group value), the rest literal. E.g.
    `local.{method}.{validity|completeness}.mean` or `ranking_quality.{ndcg@{k}|map}.mean`."""
    return re.compile(_regex(pattern))


def _regex(pattern: str) -> str:
    out, i = [], 0
    while i < len(pattern):
        if pattern[i] != "{":
            out.append(re.escape(pattern[i]))
            i += 1
            continue
        end = _closing(pattern, i)
        options = _split(pattern[i + 1:end])
        out.append("[^.]+" if len(options) == 1 and "{" not in options[0] else
                   "(?:" + "|".join(_regex(o) for o in options) + ")")
        i = end + 1
    return "".join(out)


def _expand(pattern: str) -> list[str]:
    start = pattern.find("{")
    if start < 0:
        return [pattern]
    end = _closing(pattern, start)
    options = _split(pattern[start + 1:end])
    heads = [pattern[start:end + 1]] if len(options) == 1 and "{" not in options[0] else \
        [name for option in options for name in _expand(option)]
    return [pattern[:start] + head + tail for head in heads for tail in _expand(pattern[end + 1:])]


def _closing(pattern: str, start: int) -> int:
    depth = 0
    for i in range(start, len(pattern)):
        depth += {"{": 1, "}": -1}.get(pattern[i], 0)
        if depth == 0:
            return i
    raise ValueError(f"unbalanced braces in metric pattern {pattern!r}")


def _split(inner: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for char in inner:
        depth += {"{": 1, "}": -1}.get(char, 0)
        if char == "|" and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    return [*parts, current]


_builtins()
