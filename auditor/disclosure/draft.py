"""A transparency statement drafted from a run's evidence.json: the main ranking parameters in measured order with
their weight in words, the directions the surrogate reads, the effect of paid placement and the treatment of the
provider's own products — each sentence with a footnote naming the metric behind it and its value with 95%
interval, and each claim with its marker (`claims.Claim.marker`), so the statement, once edited and published, can
be checked on the next review (docs/disclose.md). Plain data for the templates (`render.py`); no wording here.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from markupsafe import Markup

from auditor.checks.claims import Claim, band_of
from auditor.core.errors import InputError
from auditor.core.feature_names import metric_segments
from auditor.core.metric_names import Reading, read
from auditor.core.numbers import figure, held, percent, points, with_interval
from auditor.evidence import REGISTRY
from auditor.evidence.document import EvidenceDocument, EvidenceItem
from auditor.inputs.feature_dictionary import is_yes_no

Unit = Literal["share", "points", "number"]
MAX_LISTED = 10  # main parameters listed one by one; the rest are counted
SAFE_METRIC = re.compile(r"[A-Za-z0-9_.@]+")  # a metric name printed as is (in a Markdown code span)


@dataclass(frozen=True)
class Footnote:
    """The measurement behind a sentence: the metric's name and its value with 95% interval, whole (`text`, as every
    number of the audit is printed: `numbers.with_interval`) and in parts for other languages' words."""

    number: int
    metric: str | Markup
    text: str
    value: str
    low: str | None
    high: str | None


@dataclass(frozen=True)
class Parameter:
    """A main parameter: its plain name, its weight band and, when the surrogate reads one, its direction."""

    feature: str
    name: str
    band: str
    note: int
    claim: Markup
    yes_no: bool = False
    direction: str | None = None
    direction_note: int = 0
    direction_claim: Markup = field(default_factory=Markup)


@dataclass(frozen=True)
class Paid:
    """A paid parameter (`parameter_influence`'s `sensitive`): positions a result owes to it and top-k changes."""

    feature: str
    name: str
    band: str
    shift: str
    note: int
    claim: Markup
    topk: str | None = None
    k: int = 10
    topk_note: int = 0


@dataclass(frozen=True)
class Own:
    """The provider's own products (`exposure`'s `own`): the share of attention their flag itself gives them."""

    feature: str
    name: str
    band: str
    change: str
    note: int
    claim: Markup


@dataclass
class Statement:
    """What the templates say, as data. `claims`: every claim the statement makes, in order."""

    run: str
    evaluated_on: str
    tool_version: str
    queries: int
    queries_note: int
    main_count: int
    main_share: str
    main_note: int
    order_claim: Markup
    parameters: list[Parameter]
    more: int
    surrogate_note: int
    paid: list[Paid]
    own: Own | None
    footnotes: list[Footnote]
    claims: list[Claim]
    left_out: list[str] = field(default_factory=list)  # what the evidence could not support, for the person drafting


class _Notes:
    """Footnotes numbered in order of first use; a metric cited twice keeps its number."""

    def __init__(self, metrics: Mapping[str, float | None]) -> None:
        self.metrics = metrics
        self.notes: list[Footnote] = []

    def cite(self, metric: str, unit: Unit = "number") -> int:
        for note in self.notes:
            if note.metric == metric:
                return note.number
        reading = read(self.metrics, metric)
        if reading is None:
            raise ValueError(f"{metric} is not in the run's evidence")  # callers check first
        number = len(self.notes) + 1
        self.notes.append(_footnote(number, metric, reading, unit))
        return number


def _footnote(number: int, metric: str, reading: Reading, unit: Unit) -> Footnote:
    low, high = held(reading.value, reading.low, reading.high)
    if unit == "points":
        value = points(reading.value)
        parts = (points(low), points(high)) if low is not None and high is not None else None
        text = value + (f" (95% interval {parts[0]} to {parts[1]})" if parts else "")
    else:
        shown = percent if unit == "share" else figure
        value = shown(reading.value)
        parts = (shown(low), shown(high)) if low is not None and high is not None else None
        text = with_interval(reading.value, reading.low, reading.high, share=unit == "share")
    return Footnote(number, Markup(metric) if SAFE_METRIC.fullmatch(metric) else metric, text, value,
                    parts[0] if parts else None, parts[1] if parts else None)


def draft(document: EvidenceDocument, *, run: str = "") -> Statement:
    """The statement a run's evidence supports. Bad input when the run has no `global_importance` result, which
    every statement rests on."""
    ok = {name: item for name, item in document.evidence.items() if item.measured}
    if "global_importance" not in ok:
        raise InputError("the run has no global_importance result to draft the statement from", file=run or None,
                         fix="request `global_importance` in the spec and run `auditor report` again")
    metrics = _checked_metrics(ok, run)
    notes = _Notes(metrics)
    names = _checked_names(document, ok, run)
    segments = metric_segments(names)
    dictionary = document.feature_dictionary
    spec = _spec_options(document, run)
    claims: list[Claim] = []
    left_out: list[str] = []

    def plain(feature: str) -> str:
        return str(_mapping(dictionary.get(feature)).get("meaning") or feature)

    main_count = int(metrics.get("global_importance.main_parameters") or 0)
    if not 0 <= main_count <= len(names):
        raise _damaged(run, f"it counts {main_count:,} main parameters among {len(names):,} features")
    ranked = [str(r["feature"]) for r in sorted(ok["global_importance"].records, key=lambda r: r["rank"])]
    listed = [f for f in ranked[:main_count] if f in segments
              and read(metrics, f"global_importance.within_share.{segments[f]}") is not None][:MAX_LISTED]
    if len(listed) < min(main_count, MAX_LISTED):
        left_out.append(f"{min(main_count, MAX_LISTED) - len(listed)} main parameter(s) have no share metric (beyond "
                        "global_importance's `top`, or a name another feature's metric name shares): not listed")
    queries_note, main_note = notes.cite("dataset.n_queries"), notes.cite("global_importance.main_parameters")
    fidelity_ok = _surrogate_fits(ok, metrics, spec, left_out)
    parameters = []
    for feature in listed:
        share = f"global_importance.within_share.{segments[feature]}"
        value = metrics[share]
        assert value is not None  # listed only when read() found it
        weight = Claim("weight", (feature,), band_of("weight", value))
        claims.append(weight)
        unit = _mapping(dictionary.get(feature)).get("unit")
        parameter = Parameter(feature, plain(feature), str(weight.band), notes.cite(share, "share"),
                              Markup(weight.marker()), yes_no=isinstance(unit, str) and is_yes_no(unit))
        direction = f"surrogate.direction.{segments[feature]}"
        measured = metrics.get(direction)
        if fidelity_ok and measured is not None:
            turn = Claim("direction", (feature,), band_of("direction", measured))
            claims.append(turn)
            parameter = replace(parameter, direction=turn.band, direction_note=notes.cite(direction),
                                direction_claim=Markup(turn.marker()))
        parameters.append(parameter)
    order = Claim("order", tuple(listed)) if len(listed) >= 2 else None
    if order is not None:
        claims.insert(0, order)
    statement = Statement(
        run=run, evaluated_on=str(document.run.get("evaluated_on") or ""),
        tool_version=str(document.tool.get("version") or ""),
        queries=int(metrics.get("dataset.n_queries") or 0), queries_note=queries_note,
        main_count=main_count, main_share=percent(_option(spec, "global_importance", "share_for_main")),
        main_note=main_note, order_claim=Markup(order.marker()) if order is not None else Markup(""),
        parameters=parameters, more=max(main_count - len(listed), 0),
        surrogate_note=notes.cite("surrogate.fidelity.kendall.mean") if any(p.direction for p in parameters) else 0,
        paid=[], own=None, footnotes=notes.notes, claims=claims, left_out=left_out)
    if "parameter_influence" in ok:
        statement.paid = _paid(names, spec, metrics, notes, claims, plain)
    if "exposure" in ok:
        statement.own = _own(spec, metrics, notes, claims, plain)
    return statement


def _surrogate_fits(ok: Mapping[str, Any], metrics: Mapping[str, float | None], spec: Mapping[str, Any],
                    left_out: list[str]) -> bool:
    """Whether the surrogate's directions may be stated: it ran, and its fidelity interval does not lie wholly
    below its `fidelity_floor` (its own detection's criterion)."""
    if "surrogate" not in ok:
        left_out.append("no surrogate in the run: no directions (request `surrogate` to state them)")
        return False
    fidelity = read(metrics, "surrogate.fidelity.kendall.mean")
    if fidelity is None:
        return False
    floor = float(_option(spec, "surrogate", "fidelity_floor"))
    high = held(fidelity.value, fidelity.low, fidelity.high)[1]
    if (high if high is not None else fidelity.value) < floor:
        left_out.append(f"the surrogate ranks too unlike the model (Kendall tau {figure(fidelity.value)}, below "
                        f"{figure(floor)}): its directions are not stated")
        return False
    return True


def _paid(names: list[str], spec: Mapping[str, Any], metrics: Mapping[str, float | None], notes: _Notes,
          claims: list[Claim], plain: Callable[[str], str]) -> list[Paid]:
    out = []
    k = int(_option(spec, "parameter_influence", "top_k"))
    segments = metric_segments(names)
    for feature in _option(spec, "parameter_influence", "sensitive") or []:
        if feature not in segments:  # not a feature, or its metric is spelled like another's (`a b`, `a-b`)
            continue
        key = f"influence.{segments[feature]}"
        shift = read(metrics, f"{key}.rank_shift.mean")
        if shift is None:
            continue
        claim = Claim("paid", (feature,), band_of("paid", shift.value))
        claims.append(claim)
        topk = read(metrics, f"{key}.topk_changed_share")
        out.append(Paid(feature, plain(feature), str(claim.band), figure(shift.value),
                        notes.cite(f"{key}.rank_shift.mean"), Markup(claim.marker()),
                        topk=percent(topk.value) if topk is not None else None, k=k,
                        topk_note=notes.cite(f"{key}.topk_changed_share", "share") if topk is not None else 0))
    return out


def _own(spec: Mapping[str, Any], metrics: Mapping[str, float | None], notes: _Notes, claims: list[Claim],
         plain: Callable[[str], str]) -> Own | None:
    metric = "exposure.own.counterfactual.share_change"
    change = read(metrics, metric)
    own = _option(spec, "exposure", "own") or {}
    if change is None or not own:
        return None
    feature = str(next(iter(own)))
    claim = Claim("own", (feature,), band_of("own", change.value))
    claims.append(claim)
    return Own(feature, plain(feature), str(claim.band), points(abs(change.value)), notes.cite(metric, "points"),
               Markup(claim.marker()))


def _mapping(value: Any) -> Mapping[str, Any]:
    """A block of evidence.json read for words only (the dictionary, the run's date): anything but a mapping is
    read as absent."""
    return value if isinstance(value, dict) else {}


def _damaged(run: str, problem: str) -> InputError:
    """Bad input: an evidence.json no audit of ours wrote (a run folder is untrusted input, docs/security.md)."""
    return InputError(f"the run's evidence.json is not as `auditor report` writes it: {problem}",
                      file=run or None, fix="draft from an untouched run folder")


def _checked_metrics(ok: Mapping[str, EvidenceItem], run: str) -> dict[str, float | None]:
    """Every metric of the ok results: a finite number or null, as `numbers.stored` writes them. An `inf` (1e309
    in the file), NaN, a string or an integer of hundreds of digits would end the draft in a traceback (no band
    holds inf) or print as a measurement."""
    metrics: dict[str, float | None] = {}
    for item in ok.values():
        for key, value in item.metrics.items():
            if value is None:
                metrics[key] = None
                continue
            number = value if isinstance(value, (int, float)) and not isinstance(value, bool) else None
            try:
                finite = number is not None and math.isfinite(number) and abs(number) <= 1e30
            except OverflowError:  # an integer past float's range
                finite = False
            if not finite:
                shown = f"an integer of {value.bit_length():,} bits" if isinstance(number, int) else \
                    repr(str(value)[:24])
                raise _damaged(run, f"the metric {str(key)[:80]!r} is {shown}, not a finite number")
            metrics[key] = float(value)
    return metrics


def _checked_names(document: EvidenceDocument, ok: Mapping[str, EvidenceItem], run: str) -> list[str]:
    """The data's feature names (a list of strings) and global_importance's records (each a feature and a rank)."""
    dataset = document.inputs.get("dataset")
    names = dataset.get("feature_names") if isinstance(dataset, dict) else None
    if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
        raise _damaged(run, "inputs.dataset.feature_names is not a list of names")
    records = ok["global_importance"].records
    if not isinstance(records, list) or not all(
            isinstance(r, dict) and isinstance(r.get("feature"), str) and isinstance(r.get("rank"), (int, float))
            and not isinstance(r.get("rank"), bool) for r in records):
        raise _damaged(run, "global_importance's records are not each a feature with its rank")
    return list(names)


# The options the draft reads: checked by their kind's options model, as a run folder's spec may be anything.
READ_OPTIONS = {"global_importance": ("share_for_main",), "surrogate": ("fidelity_floor",),
                "parameter_influence": ("top_k", "sensitive"), "exposure": ("own",)}


def _spec_options(document: EvidenceDocument, run: str = "") -> dict[str, dict[str, Any]]:
    """Each evidence item's options as the run's spec wrote them (evidence.json keeps the spec's content), those
    the draft reads validated (a `top_k` of "ten" or a `sensitive` of [[1]] is bad input, not a traceback)."""
    from pydantic import ValidationError

    content = document.spec.get("content") or {}
    out: dict[str, dict[str, Any]] = {}
    for item in content.get("evidence") or [] if isinstance(content, dict) else []:
        if isinstance(item, dict) and len(item) == 1:
            name, options = next(iter(item.items()))
            out[str(name)] = dict(options) if isinstance(options, dict) else {}
    for kind, keys in READ_OPTIONS.items():
        given = out.get(kind, {})
        for key in keys:
            if key in given:
                try:
                    given[key] = getattr(REGISTRY[kind].options.model_validate({key: given[key]}), key)
                except ValidationError:
                    raise _damaged(run, f"the option {kind}.{key} is {str(given[key])[:40]!r}") from None
    return out


def _option(spec: Mapping[str, dict[str, Any]], kind: str, key: str) -> Any:
    """An option of an evidence item as the spec gave it, else its options model's default."""
    given = spec.get(kind) or {}
    return given[key] if key in given else REGISTRY[kind].options.model_fields[key].default
