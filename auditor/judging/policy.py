"""Policy packs: rules over evidence metrics, their findings, waivers, and the overall opinion.

A rule names one metric, the condition under which it FAILs and the one under which it WARNs, a severity, a
citation and a rationale. Results are plain data so evidence.json, the report and the CLI read the same thing.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import math
import operator
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import asdict, dataclass, replace
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar

from pydantic import Field, ValidationInfo, field_validator, model_validator

from auditor.core import metric_names
from auditor.core.errors import InputError, shorten
from auditor.core.files import MAX_YAML_BYTES, read_bytes
from auditor.core.yaml_io import parse_yaml
from auditor.core.yaml_models import StrictModel, nearest, validate_yaml
from auditor.evidence import ALWAYS_PRESENT, REGISTRY

if TYPE_CHECKING:
    from auditor.evidence.document import EvidenceDocument, FindingPart
    from auditor.inputs.spec import Assignment, Waiver

Severity = Literal["critical", "major", "minor", "info"]
Status = Literal["PASS", "WARN", "FAIL", "WAIVED", "ERROR", "UNMEASURED", "SKIPPED"]
# UNMEASURED ("not measured"): the rule would apply, but the spec did not request its evidence, or did not give what
# the evidence needs (its result's `unmeasured` reasons, or the evidence's status "unmeasured"); the message says
# what to change. SKIPPED: the rule does not apply (its pack, or its evidence, does not apply here). ERROR: the tool
# failed. FAIL: the model failed.
Opinion = Literal["positive", "positive with comments", "negative", "no policy applied"]

_OPS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "==": operator.eq,
        "!=": operator.ne}
# One way to read a run of digits (`\d+\.?\d*` had n, and `between A and B` n² splits to try before failing), so
# matching is linear; text longer than MAX_CONDITION_CHARS is refused before any pattern sees it.
_NUMBER = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
MAX_CONDITION_CHARS = 200  # `between 0.25 and 0.75` is 21
MAX_EXTENDS_DEPTH = 32  # packs extending packs (the built-in model-governance is 2 deep): bounds the recursion
MAX_NAME_CHARS = 64  # rule ids, pack names, evidence kinds: they reach every message, table and difflib
MAX_METRIC_CHARS = 200  # the longest built-in metric name is 42
_BUILTIN_NAME = re.compile(r"[a-z0-9][a-z0-9_-]*")
_CONDITION = re.compile(rf"^\s*(<=|>=|==|!=|<|>)\s*({_NUMBER})\s*$")
_BETWEEN = re.compile(rf"^\s*(between|outside)\s+({_NUMBER})\s+and\s+({_NUMBER})\s*$", re.IGNORECASE)
_SURROGATE = re.compile("[\ud800-\udfff]")


def writable_text(value: object, rule: object = None) -> object:
    """Text that UTF-8 can hold. YAML's `"\\udc80"` escape makes a lone surrogate, no character: it passed every
    check and broke writing evidence.json and the report after the whole audit had run (exit 3). Refused when the
    pack is read, so `validate` and `report` refuse it alike, before any evidence runs."""
    for text in value if isinstance(value, list) else [value]:
        found = _SURROGATE.search(text) if isinstance(text, str) else None
        if found is not None:
            code = f"{ord(found.group()):04x}"
            raise ValueError(f"{f'rule {rule}: ' if isinstance(rule, str) else ''}the text holds U+{code.upper()}, "
                             "a lone surrogate (half of a UTF-16 pair, not a character), which evidence.json and the "
                             f"report cannot hold; write the character itself, or remove the `\\u{code}` escape")
    return value


def _writable_field(value: object, info: ValidationInfo) -> object:
    """`writable_text` as a pack's field validator, naming the rule (its id is validated first)."""
    return writable_text(value, (info.data or {}).get("id") if info.field_name != "id" else None)


class Condition(StrictModel):
    """`< 0.5` and friends: the metric value compared with a number; `between 0.2 and 0.8` (bounds included)
    and `outside 0.2 and 0.8` (its negation) compare it with a closed interval."""

    op: Literal["<", "<=", ">", ">=", "==", "!=", "between", "outside"]
    value: float
    high: float | None = None

    @model_validator(mode="before")
    @classmethod
    def _from_text(cls, data: object) -> object:
        writable_text(data)
        if isinstance(data, (int, float)) and not isinstance(data, bool):
            data = str(data)
        return parse_condition(data) if isinstance(data, str) else data

    @field_validator("value", "high")
    @classmethod
    def _finite(cls, value: float | None) -> float | None:
        """A NaN threshold makes every comparison false, so its rule could never fail; ±inf is no requirement."""
        if value is not None and not math.isfinite(value):
            raise ValueError(f"a threshold must be a finite number, not {value}; write a number such as 0.5")
        return value

    @model_validator(mode="after")
    def _bounds(self) -> Condition:
        if self.op in ("between", "outside"):
            if self.high is None or self.high < self.value:
                raise ValueError(f"'{self.text()}' needs a lower bound first; write e.g. 'between 0.2 and 0.8'")
        elif self.high is not None:
            raise ValueError(f"'{self.op}' takes one number; use 'between A and B' for an interval")
        return self

    def _top(self) -> float:
        """The upper bound of `between` and `outside` (`_bounds` requires it)."""
        assert self.high is not None
        return float(self.high)

    def holds(self, value: float) -> bool:
        if self.op in ("between", "outside"):
            inside = self.value <= value <= self._top()
            return inside if self.op == "between" else not inside
        return bool(_OPS[self.op](value, self.value))

    def holds_everywhere(self, low: float, high: float) -> bool:
        """Whether the condition holds for every value in [low, high]."""
        t, op = self.value, self.op
        if op in ("<", "<="):
            return bool(_OPS[op](high, t))
        if op in (">", ">="):
            return bool(_OPS[op](low, t))
        if op == "==":
            return low == high == t
        if op == "!=":
            return not low <= t <= high
        top = self._top()
        if op == "between":
            return t <= low and high <= top
        return high < t or low > top

    def holds_somewhere(self, low: float, high: float) -> bool:
        """Whether the condition holds for some value in [low, high]."""
        t, op = self.value, self.op
        if op in ("<", "<="):
            return bool(_OPS[op](low, t))
        if op in (">", ">="):
            return bool(_OPS[op](high, t))
        if op == "==":
            return low <= t <= high
        if op == "!=":
            return not low == high == t
        top = self._top()
        if op == "between":
            return low <= top and high >= t
        return low < t or high > top

    def thresholds(self) -> list[float]:
        return [self.value] if self.high is None else [self.value, float(self.high)]

    def text(self) -> str:
        if self.op in ("between", "outside"):
            return f"{self.op} {self.value:g} and {self.high:g}"
        return f"{self.op} {self.value:g}"


def parse_condition(text: str) -> dict[str, str | float]:
    """`< 0.5` or `between 0.2 and 0.8` as the mapping form; overlong text is refused unread."""
    if len(text) > MAX_CONDITION_CHARS:
        raise ValueError(f"a condition is at most {MAX_CONDITION_CHARS} characters, this one has {len(text):,}; "
                         "write e.g. '< 0.5' or 'between 0.2 and 0.8'")
    match = _CONDITION.match(text)
    if match:
        return {"op": match.group(1), "value": float(match.group(2))}
    between = _BETWEEN.match(text)
    if between:
        return {"op": between.group(1).lower(), "value": float(between.group(2)), "high": float(between.group(3))}
    raise ValueError(f"'{shorten(text, 60)}' is not a condition; write e.g. '< 0.5' or 'between 0.2 and 0.8' "
                     f"(operators: {' '.join(_OPS)} between outside)")


def known_facts(value: dict[str, bool]) -> dict[str, bool]:
    """`applies_to` names only the spec's provider facts."""
    from auditor.inputs.spec import PROVIDER_FACTS

    unknown = sorted(set(value) - set(PROVIDER_FACTS))
    if unknown:
        raise ValueError(f"unknown provider fact {unknown[0]!r} in applies_to; use {', '.join(PROVIDER_FACTS)}")
    return value


class Rule(StrictModel):
    id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$", max_length=MAX_NAME_CHARS)
    title: str
    evidence: str = Field(max_length=MAX_NAME_CHARS, description="Evidence kind that produces the metric "
                                                                 "(`dataset` and `governance` are always present).")
    metric: str | None = Field(None, max_length=MAX_METRIC_CHARS,
                               description="The metric judged; leave out for a rule that only requires the evidence "
                                           "(`required: true`).")
    per_query: Condition | None = Field(None, description="Condition each query must meet; `fail_if`/`warn_if` "
                                                          "then judge the share of queries that meet it.")
    required: bool = Field(False, description="The evidence must apply: not applicable is FAIL (not requested is "
                                              "NOT MEASURED, as for any rule), "
                                              "not SKIPPED.")
    applies_to: dict[str, bool] = Field({}, description="Scope of this rule's provision beyond its pack's (e.g. "
                                                        "`{very_large_platform: true}` for DSA Art. 34).")
    fail_if: Condition | None = None
    warn_if: Condition | None = None
    severity: Severity
    citation: str
    rationale: str
    threshold_reason: str = ""
    remedy: str = Field("", description="What the model owner should do when the rule does not pass (printed in "
                                        "the executive summary as the recommended action).")
    judge_on: Literal["interval", "point"] = Field(
        "interval", description="interval (default): an estimated metric passes only when its whole 95% interval "
                                "meets the requirement and fails only when the whole interval breaks it, otherwise "
                                "WARN (inconclusive); point: judge the value alone (exact metrics).")

    @field_validator("applies_to")
    @classmethod
    def _known_facts(cls, value: dict[str, bool]) -> dict[str, bool]:
        return known_facts(value)

    _writable = field_validator("id", "title", "evidence", "metric", "citation", "rationale", "threshold_reason",
                                "remedy", mode="before")(_writable_field)

    @model_validator(mode="after")
    def _has_condition(self) -> Rule:
        if self.metric is None:
            if not self.required:
                raise ValueError("a rule needs a `metric` (or `required: true` to only require the evidence)")
            if self.fail_if or self.warn_if or self.per_query:
                raise ValueError("conditions need a `metric` to judge; add `metric:` or drop the conditions")
            return self
        if self.fail_if is None and self.warn_if is None:
            raise ValueError("a rule needs `fail_if`, `warn_if` or both")
        return self

    def requirement(self) -> str:
        """The rule's requirement as a sentence fragment (shown in findings and `auditor policies show`)."""
        if self.metric is None:
            return f"evidence '{self.evidence}' present"
        parts = [f"FAIL if {self.fail_if.text()}" if self.fail_if else "",
                 f"WARN if {self.warn_if.text()}" if self.warn_if else ""]
        text = "; ".join(part for part in parts if part)
        if self.per_query is not None:
            text = f"share of queries with value {self.per_query.text()}: {text}"
        if self.required:
            text += "; FAIL if the evidence is absent"
        return text


class Coverage(StrictModel):
    """One point of the law a pack answers (e.g. AI Act Annex IV point 2(g)): what it asks, how much of it this
    pack's audit covers and by which rules — so a reader sees what the audit does not cover, not only what passed."""

    point: str = Field(min_length=1, max_length=MAX_NAME_CHARS, description="The provision, e.g. `2(g)`.")
    asks: str = Field(min_length=1, description="What the provision asks, in short.")
    status: Literal["covered", "partly", "not covered"]
    rules: list[str] = Field([], description="The pack's rules that evidence it.")
    needs_any: list[str] = Field([], description="Evidence kinds (`exposure`) or metric names "
                                                 "(`selection.min_ratio`; "
                                                 "a prefix ending in `.` for any of a family) of which the run must "
                                                 "hold one for the point to count as covered; otherwise it is not "
                                                 "covered and says what to add.")
    note: str = Field("", description="What the audit does or leaves out for this point.")


class PolicyPack(StrictModel):
    pack: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]*$", max_length=MAX_NAME_CHARS)
    title: str
    version: str
    description: str = ""
    extends: list[str] = Field([], description="Packs (built-in names, or paths relative to this file that stay "
                                               "in its folder: no absolute path, `..` or link leading out) whose "
                                               "rules this pack includes; a rule with the same id here replaces "
                                               "the inherited one.")
    requires: list[str] = Field([], description="Evidence kinds the pack needs (`auditor init --policy` requests "
                                                "them); the kinds its rules name are added automatically.")
    applies_to: dict[str, bool] = Field({}, description="The providers the law binds, as facts of the spec's "
                                                        "`audit.provider` (e.g. `{gatekeeper: true}`): when a fact "
                                                        "is otherwise, every rule is not applicable.")
    rules: list[Rule] = Field([])
    covers: list[Coverage] = Field([], description="The points of the law this pack answers and how much of each "
                                                   "the audit covers (printed in the report's Scope).")

    @field_validator("applies_to")
    @classmethod
    def _known_facts(cls, value: dict[str, bool]) -> dict[str, bool]:
        return known_facts(value)

    @field_validator("extends", mode="before")
    @classmethod
    def _one_or_many(cls, value: object) -> object:
        return [value] if isinstance(value, str) else value

    _writable = field_validator("pack", "title", "version", "description", "extends", "requires",
                                mode="before")(_writable_field)

    @model_validator(mode="after")
    def _has_rules(self) -> PolicyPack:
        if not self.rules and not self.extends:
            raise ValueError("a pack needs `rules` (or `extends` another pack)")
        return self

    @field_validator("rules")
    @classmethod
    def _unique_ids(cls, rules: list[Rule]) -> list[Rule]:
        seen: set[str] = set()
        for rule in rules:
            if rule.id in seen:
                raise ValueError(f"rule id '{rule.id}' is used twice")
            seen.add(rule.id)
        return rules

    @model_validator(mode="after")
    def _covered_by_own_rules(self) -> PolicyPack:
        ids = {rule.id for rule in self.rules}
        for entry in self.covers:
            unknown = [rule for rule in entry.rules if rule not in ids]
            if unknown:
                raise ValueError(f"`covers` point {entry.point} names rule '{unknown[0]}', which is not a rule of "
                                 "this pack")
        return self


@dataclass(frozen=True)
class LoadedPack:
    pack: PolicyPack
    path: Path
    sha256: str
    parents: tuple[LoadedPack, ...] = ()  # the packs it `extends`, loaded (each with its own parents)

    def ancestors(self) -> list[LoadedPack]:
        """Every pack this one extends, directly or not, parents before children, each once (one visit a pack:
        packs that extend the same packs in a diamond would otherwise be walked once per path, 2^levels)."""
        out: list[LoadedPack] = []
        seen: set[Path] = set()

        def visit(pack: LoadedPack) -> None:
            for parent in pack.parents:
                if parent.path not in seen:
                    visit(parent)
                    seen.add(parent.path)
                    out.append(parent)

        visit(self)
        return out

    def evidence(self) -> list[str]:
        """Evidence kinds this pack (with what it extends) needs: `requires` plus every kind a rule names."""
        kinds: list[str] = []
        for loaded in [*self.ancestors(), self]:
            for name in [*loaded.pack.requires, *(rule.evidence for rule in loaded.pack.rules)]:
                if name not in kinds and name not in ALWAYS_PRESENT:
                    kinds.append(name)
        return kinds


@dataclass(frozen=True)
class Finding:
    """One rule's verdict, with what was measured, what was required and why, as a sentence too."""

    rule: str
    title: str
    pack: str
    status: Status
    severity: Severity
    metric: str
    value: float | None
    requirement: str
    citation: str
    rationale: str
    message: str
    waiver: dict[str, str] | None = None
    evidence: str = ""
    interval: tuple[float, float] | None = None  # the 95% interval the verdict was judged on
    inconclusive: bool = False  # WARN because the interval crosses a threshold
    remedy: str = ""
    threshold_reason: str = ""
    finding: str = ""  # the finding's identity: one for the rules of every pack that judge the same fact

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["interval"] = list(self.interval) if self.interval is not None else None
        return out

    @classmethod
    def of(cls, part: FindingPart) -> Finding:
        """The verdict as an evidence document records it, as a `Finding` again."""
        return cls(**{**part.model_dump(), "interval": tuple(part.interval) if part.interval else None})


def findings_of(document: EvidenceDocument) -> list[Finding]:
    """The verdicts an evidence document records, as `Finding`s again."""
    return [Finding.of(part) for part in document.findings]


_BUILTIN_FOLDER: ContextVar[Path | None] = ContextVar("builtin_packs", default=None)


@contextmanager
def builtin_packs_from(folder: Path | None) -> Iterator[None]:
    """Within the block, packs named by name are read from `folder` (a run's archived packs, `auditor report
    --from-run`) instead of the tool's own; None keeps the tool's."""
    token = _BUILTIN_FOLDER.set(folder)
    try:
        yield
    finally:
        _BUILTIN_FOLDER.reset(token)


def bundled_policies_dir() -> Path:
    override = _BUILTIN_FOLDER.get()
    if override is not None:
        return override
    here = Path(__file__).resolve().parents[1]  # auditor/
    for candidate in (here / "_bundled" / "policies", here.parent / "policies"):
        if candidate.is_dir():
            return candidate
    raise RuntimeError("the built-in policy packs are missing from this installation")


def builtin_pack_names() -> list[str]:
    return sorted(p.stem for p in bundled_policies_dir().glob("*.yaml"))


class DeclaresMetrics(Protocol):
    """An evidence kind as `check_metrics` asks it (`auditor.evidence.registry.EvidenceKind`)."""

    def emits(self, metric: str) -> bool: ...

    def metric_examples(self) -> list[str]: ...


def check_metrics(packs: list[LoadedPack], plugins: Mapping[str, DeclaresMetrics], requested: set[str]) -> None:
    """A rule naming a metric that its evidence kind cannot emit is bad input when the packs load, not an ERROR
    finding after the whole audit ran: one line with the pack file, the rule id and the closest names the kind
    declares. `plugins` maps kind → plugin (`emits`, `metric_examples`: auditor.evidence.registry.EvidenceKind);
    rules on kinds that are not `requested` are SKIPPED at evaluation and not checked here."""
    for loaded in packs:
        for rule in loaded.pack.rules:
            plugin = plugins.get(rule.evidence)
            if rule.metric is None or rule.evidence not in requested or plugin is None or plugin.emits(rule.metric):
                continue
            near = nearest(rule.metric, plugin.metric_examples(), n=3, cutoff=0.4)
            raise InputError(f"rule {rule.id} names the metric '{rule.metric}', which '{rule.evidence}' does not "
                             "emit", file=loaded.path,
                             fix=f"closest: {', '.join(near)}" if near else
                                 f"see docs/metrics.md for the metrics of '{rule.evidence}'")


def load_pack(ref: str, *, base_dir: Path, spec_file: Path | None = None, where: str = "policies",
              _loaded: dict[Path, LoadedPack] | None = None) -> LoadedPack:
    """A pack by built-in name (`starter`) or by path (relative to `base_dir`, the folder of the file naming it),
    with the packs it `extends` loaded too (a cycle is bad input). The spec and the command line may name any
    path; a pack's own `extends` stays inside that pack's folder (`_locate`)."""
    return _load(ref, base_dir, named_by=spec_file, where=where, chain=(), loaded={} if _loaded is None else _loaded)


def _load(ref: str, base_dir: Path, *, named_by: Path | None, where: str, chain: tuple[Path, ...],
          loaded: dict[Path, LoadedPack]) -> LoadedPack:
    """One pack and its parents, each file read once (`loaded`, by resolved path), at most MAX_EXTENDS_DEPTH deep."""
    path = _locate(ref, base_dir, confined=bool(chain), named_by=named_by, where=where)  # chain: an `extends`
    resolved = path.resolve()
    if resolved in chain:
        cycle = " -> ".join(p.stem for p in (*chain, resolved))
        raise InputError(f"packs extend each other in a cycle ({cycle})", file=named_by, where=where,
                         fix="remove one of the `extends` entries")
    if resolved in loaded:
        return loaded[resolved]
    if len(chain) > MAX_EXTENDS_DEPTH:
        raise InputError(f"packs extend packs more than {MAX_EXTENDS_DEPTH} levels deep", file=named_by, where=where,
                         fix="extend the pack with the rules instead of the packs between")
    text = read_bytes(path, limit=MAX_YAML_BYTES, what="policy pack")
    try:
        decoded = text.decode("utf-8")
    except UnicodeDecodeError:  # not a pack: none of its bytes may reach the message
        raise InputError("the policy pack is not UTF-8 text", file=path,
                         fix="give a YAML pack saved as UTF-8") from None
    raw, marks = parse_yaml(decoded, path)
    pack = validate_yaml(PolicyPack, raw, marks, path)
    parents = []
    for index, parent in enumerate(pack.extends):
        line, column = marks.get(("extends", index)) or marks.get(("extends",)) or (0, 0)
        parents.append(_load(parent, path.parent, named_by=path, where=f"{line}:{column}", chain=(*chain, resolved),
                             loaded=loaded))
    loaded[resolved] = LoadedPack(pack=pack, path=path, sha256=hashlib.sha256(text).hexdigest(),
                                  parents=tuple(parents))
    return loaded[resolved]


def _locate(ref: str, base_dir: Path, *, confined: bool, named_by: Path | None, where: str) -> Path:
    """The file a pack reference names. `confined` (a pack's `extends`, untrusted): relative, without `..`, and
    inside `base_dir` once links are followed, so a pack cannot have the auditor read (and quote) other files."""
    if "/" not in ref and not ref.endswith((".yaml", ".yml")):
        path = bundled_policies_dir() / f"{ref}.yaml"
        if _BUILTIN_NAME.fullmatch(ref) and path.is_file():
            return path
        names = builtin_pack_names()
        near = nearest(ref, names, cutoff=0.6)
        raise InputError(f"no built-in policy pack '{shorten(ref, 60)}'", file=named_by, where=where,
                         fix=(f"did you mean '{near[0]}'?" if near else f"built-in packs: {', '.join(names)}"))
    if confined and not _inside(ref, base_dir):
        raise InputError(f"extends '{shorten(ref, 80)}', which is outside this pack's folder", file=named_by,
                         where=where, fix="name a built-in pack, or a file in this pack's folder by a relative path "
                                          "without '..' (copy it there rather than link to it)")
    path = base_dir / ref
    try:
        found = path.exists()
    except (OSError, ValueError):  # a NUL byte, a name longer than the file system allows
        found = False
    if not found:
        raise InputError(f"no policy file '{shorten(ref, 80)}'", file=named_by, where=where,
                         fix=f"check the path (relative to {'this file' if confined else 'the spec'}'s folder)")
    return path


def _inside(ref: str, folder: Path) -> bool:
    """Whether `ref` is a relative path without `..` whose file, links followed, is inside `folder`."""
    relative = PurePosixPath(ref)
    if relative.is_absolute() or ".." in relative.parts:
        return False
    try:
        return (folder / relative).resolve().is_relative_to(folder.resolve())
    except (OSError, ValueError, RuntimeError):  # a NUL byte, a loop of links: refused as well (fail closed)
        return False


def load_packs(refs: list[str], *, base_dir: Path, spec_file: Path | None = None) -> list[LoadedPack]:
    """The packs a spec names, with the packs they extend placed before them (each once). A rule id defined in
    a pack and in one it extends is an override: the extending pack's rule replaces the inherited one. The same
    id in two unrelated packs, or a pack listed twice, is bad input."""
    _refuse_repeats(refs, base_dir, spec_file)
    loaded_files: dict[Path, LoadedPack] = {}
    ordered: list[LoadedPack] = []
    applied: set[Path] = set()
    direct: set[Path] = set()
    for ref in refs:
        loaded = load_pack(ref, base_dir=base_dir, spec_file=spec_file, _loaded=loaded_files)
        for ancestor in loaded.ancestors():
            if ancestor.path.resolve() not in applied:
                applied.add(ancestor.path.resolve())
                ordered.append(ancestor)
        key = loaded.path.resolve()
        if key in applied and key not in direct:
            continue  # already applied as the parent of a pack listed before it
        applied.add(key)
        direct.add(key)
        ordered.append(loaded)
    overridden: dict[Path, set[str]] = {}
    for loaded in ordered:
        own = {rule.id for rule in loaded.pack.rules}
        for ancestor in loaded.ancestors():
            overridden.setdefault(ancestor.path.resolve(), set()).update(own)
    packs = []
    for loaded in ordered:
        drop = overridden.get(loaded.path.resolve(), set())
        if drop:
            kept = [rule for rule in loaded.pack.rules if rule.id not in drop]
            loaded = LoadedPack(pack=loaded.pack.model_copy(update={"rules": kept}), path=loaded.path,
                                sha256=loaded.sha256, parents=loaded.parents)
        packs.append(loaded)
    owner: dict[str, str] = {}
    for loaded in packs:
        for rule in loaded.pack.rules:
            if rule.id in owner:
                raise InputError(f"rule id '{rule.id}' is in both '{owner[rule.id]}' and '{loaded.pack.pack}'",
                                 file=spec_file, where="policies", fix="rename one of the rules")
            owner[rule.id] = loaded.pack.pack
    return packs


def _refuse_repeats(refs: list[str], base_dir: Path, spec_file: Path | None) -> None:
    """A pack listed twice, named before any pack is read (in one pass: the same pack 1,000 times took 43 s to
    load, then blamed its first rule for being "in both 'starter' and 'starter'")."""
    first: dict[Path, int] = {}
    for index, ref in enumerate(refs):
        key = _locate(ref, base_dir, confined=False, named_by=spec_file, where="policies").resolve()
        if key in first:
            raise InputError(f"policy pack '{shorten(ref, 80)}' is listed more than once (first as "
                             f"policies.{first[key]})", file=spec_file, where=f"policies.{index}",
                             fix="list each pack once")
        first[key] = index


def check_waivers(waivers: list[Waiver], packs: list[LoadedPack], *, spec_file: Path | None = None) -> None:
    """A waiver for a rule no pack has is a typo, not a no-op: refuse it before any work is done."""
    ids = [rule.id for loaded in packs for rule in loaded.pack.rules]
    for index, waiver in enumerate(waivers):
        if waiver.rule not in ids:
            near = nearest(waiver.rule, ids, cutoff=0.5)
            raise InputError(f"waiver for unknown rule '{shorten(waiver.rule, 60)}'", file=spec_file,
                             where=f"waivers.{index}",
                             fix=(f"did you mean '{near[0]}'?" if near else "name a rule of the applied packs"))


def check_assignments(assignments: list[Assignment], packs: list[LoadedPack], *,
                      spec_file: Path | None = None) -> None:
    """An owner assigned to a rule no pack has is a typo: refuse it before any work is done."""
    ids = [rule.id for loaded in packs for rule in loaded.pack.rules]
    for index, assignment in enumerate(assignments):
        if assignment.rule not in ids:
            near = nearest(assignment.rule, ids, cutoff=0.5)
            raise InputError(f"owner assigned to unknown rule '{shorten(assignment.rule, 60)}'", file=spec_file,
                             where=f"findings.{index}",
                             fix=(f"did you mean '{near[0]}'?" if near else "name a rule of the applied packs"))


def evaluate(packs: list[LoadedPack], evidence: dict[str, Any], *, requested: set[str],
             waivers: list[Waiver], today: dt.date, provider: dict[str, bool | None] | None = None) -> list[Finding]:
    """Judge every rule. `evidence` maps evidence name → object with .status, .error and .metrics; `provider`, the
    spec's `audit.provider` facts: a pack whose `applies_to` a fact contradicts is not applicable (SKIPPED)."""
    findings = []
    for loaded in packs:
        scope = applies_to(loaded)
        for rule in loaded.pack.rules:
            outside = not_applicable({**scope, **rule.applies_to}, provider or {})
            if outside is not None:
                findings.append(_not_applicable(rule, loaded.pack.pack, outside))
                continue
            findings.append(_judge(rule, loaded.pack.pack, evidence, requested, waivers, today))
    return with_identities(findings)


def same_fact(finding: Finding) -> tuple[str, str, str]:
    """What a rule judges: its evidence, metric and (for a share of queries) the per-query condition. Rules of
    different packs with the same fact are one finding."""
    per_query = finding.requirement.split(":", 1)[0] if finding.requirement.startswith("share of queries") else ""
    return finding.evidence, finding.metric, per_query


def with_identities(findings: list[Finding]) -> list[Finding]:
    """Each finding with its identity: rules of different packs that judge the same fact are one finding, known by
    the first (in sorted order) of their ids; a pack's own rules on one fact (a warning and a failure threshold,
    say) stay apart, each its own id. The report's cards, the register, JUnit and `auditor diff` know a finding by
    its identity."""
    by_fact: dict[tuple[str, str, str], list[Finding]] = {}
    for f in findings:
        by_fact.setdefault(same_fact(f), []).append(f)
    out = []
    for f in findings:
        rules = by_fact[same_fact(f)]
        packs = [r.pack for r in rules]
        out.append(replace(f, finding=min(r.rule for r in rules) if len(set(packs)) == len(packs) else f.rule))
    return out


def identity(finding: Finding) -> str:
    """A finding's identity; a rule's own id for documents written before identities."""
    return finding.finding or finding.rule


def coverage(loaded: LoadedPack, metrics: set[str], kinds: set[str],
             statuses: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """The pack's `covers` table for this run: a point that needs evidence the run does not hold (`needs_any`: a kind,
    a metric, or a metric family ending in `.`) is not covered, and says what would cover it; a point none of whose
    rules this run judged (`statuses`: each rule's status; UNMEASURED, ERROR or SKIPPED judge nothing) is "not
    measured": in the audit's scope, without a result; a covered point whose rules fail or warn says which, so
    "covered" is never read as met."""
    rows = []
    for entry in loaded.pack.covers:
        status: str = entry.status
        note = entry.note
        found = [(rule, (statuses or {}).get(rule)) for rule in entry.rules]
        if entry.needs_any and not any(need in kinds or need in metrics or
                                       (need.endswith(".") and any(m.startswith(need) for m in metrics))
                                       for need in entry.needs_any):
            status = "not covered"
            # the status says "not covered" already; the note says what is missing in words (the keys the
            # pack's `needs_any` lists are for its author, not the reader: issue 56, "code in prose")
            note = "this run holds none of the evidence it needs" + (f": {entry.note}" if entry.note else "")
        elif statuses is not None and entry.rules and status != "not covered" and \
                not any(verdict in ("PASS", "WARN", "FAIL", "WAIVED") for _, verdict in found):
            status = "not measured"  # in the audit's scope, but this run judged none of its rules
            note = ("this run judged none of its rules: " + ", ".join(f"{rule} {(verdict or 'not run').lower()}"
                                                                      for rule, verdict in found)
                    + (f" ({entry.note})" if entry.note else ""))
        elif statuses is not None and status != "not covered" and any(verdict in ("UNMEASURED", "ERROR")
                                                                     for _, verdict in found):
            # covered, but not every rule judged: the note's claim ("the published statement checked") would
            # otherwise outrun the run (a reader review, issue 56)
            unjudged = ", ".join(rule for rule, verdict in found if verdict in ("UNMEASURED", "ERROR"))
            note = (f"{entry.note}; " if entry.note else "") + f"not measured in this run: {unjudged}"
        unmet = [(rule, verdict) for rule, verdict in found if verdict in ("FAIL", "WARN")]
        if status not in ("not covered", "not measured") and unmet:
            # covered is not met (a reader review, issue 56: "2(g) covered … dated and signed" beside a failed
            # signature rule read as a pass)
            note = ((f"{note}; " if note else "") + "measured, not met: "
                    + ", ".join(f"{rule} {'fails' if verdict == 'FAIL' else 'warns'}" for rule, verdict in unmet))
        rows.append({"point": entry.point, "asks": entry.asks, "status": status, "rules": list(entry.rules),
                     "note": note})
    return rows


def applies_to(loaded: LoadedPack) -> dict[str, bool]:
    """The scope conditions of a pack and of the packs it extends."""
    merged: dict[str, bool] = {}
    for pack in [*loaded.ancestors(), loaded]:
        merged.update(pack.pack.applies_to)
    return merged


def not_applicable(scope: dict[str, bool], provider: dict[str, bool | None]) -> str | None:
    """Why a provision with this scope does not bind this provider, or None (it does, or the spec does not say)."""
    for fact, wanted in scope.items():
        if provider.get(fact) is not None and provider[fact] != wanted:
            return f"not applicable: {_is(fact, bool(provider[fact]))} (audit.provider.{fact})"
    return None


def law_scope(applied: list[LoadedPack], provider: dict[str, bool | None]) -> list[dict[str, Any]]:
    """Every law the built-in packs know, applied or not, with whether it binds this provider by the spec's facts:
    the engagement states which obligations apply rather than citing them all (a pack not applied whose law
    applies is a gap in the criteria the reader must see)."""
    names = {p.pack.pack for p in applied}
    out = []
    for name in builtin_pack_names():
        if name in names:
            continue
        loaded = load_packs([name], base_dir=bundled_policies_dir())[-1]
        scope = applies_to(loaded)
        if not scope:  # packs for every provider (starter, governance) are options, not laws
            continue
        said = applicability(loaded, provider).removesuffix(": judged as if it applied")  # nothing judged here
        reasons = [not_applicable({**scope, **rule.applies_to}, provider) for rule in loaded.pack.rules]
        outside = sorted({why.removeprefix("not applicable: ") for why in reasons if why is not None})
        if outside and not said.startswith("not applicable"):  # e.g. DSA Art. 34 binds very large platforms only
            said += (f"; {sum(why is not None for why in reasons)} of {len(reasons)} rules do not: "
                     + "; ".join(outside))
        out.append({"pack": name, "title": loaded.pack.title, "applied": False, "applicability": said})
    return out


def judged_severity(detection_severity: str, rules: list[str], findings: list[Finding]) -> str:
    """One severity per fact: a detection a rule judges takes the most severe judging rule's severity (the pack's
    judgement of the provision), so the report never rates the same fact twice."""
    order = ("critical", "major", "minor", "info")
    judging = [f.severity for f in findings if f.rule in rules]
    return min(judging, key=order.index) if judging else detection_severity


def applicability(loaded: LoadedPack, provider: dict[str, bool | None]) -> str:
    """One sentence: does the pack's law bind this provider, by the spec's facts."""
    scope = applies_to(loaded)
    if not scope:
        return "applies to every provider"
    outside = not_applicable(scope, provider)
    if outside is not None:
        return outside
    unknown = [fact for fact in scope if provider.get(fact) is None]
    if unknown:
        return (f"applicability not established (the spec does not say whether {_is(unknown[0], True)}: "
                f"audit.provider.{unknown[0]}): judged as if it applied")
    clauses = [_is(fact, wanted) for fact, wanted in scope.items()]
    shared = "the provider is "  # "the provider is an online platform and not a very large platform"
    if all(c.startswith(shared) for c in clauses):
        return "applies: " + shared + " and ".join(c.removeprefix(shared) for c in clauses)
    return "applies: " + " and ".join(clauses)


# each provider fact as words: who it is about and what it says (issue 56: the spec key is not the reader's word)
_FACTS = {"high_risk": ("the system", "high-risk under the AI Act"),
          "employment_decision_tool": ("the system", "an automated employment decision tool"),
          "gatekeeper": ("the provider", "a gatekeeper"),
          "very_large_platform": ("the provider", "a very large platform"),
          "jp_specified_platform": ("the provider", "a specified digital platform under Japan's TFDPA")}


def _is(fact: str, true: bool) -> str:
    """A provider fact as a clause: "the provider is an online platform", "the system is not high-risk …"."""
    words = fact.replace("_", " ")
    who, what = _FACTS.get(fact, ("the provider", f"{'an' if words[0] in 'aeiou' else 'a'} {words}"))
    return f"{who} is {'' if true else 'not '}{what}"


def _not_applicable(rule: Rule, pack: str, why: str) -> Finding:
    return Finding(rule=rule.id, title=rule.title, pack=pack, status="SKIPPED", severity=rule.severity,
                   metric=rule.metric or f"{rule.evidence} (present)", value=None, requirement=rule.requirement(),
                   citation=rule.citation, rationale=rule.rationale, message=why, evidence=rule.evidence,
                   remedy=rule.remedy, threshold_reason=rule.threshold_reason)


def _judge(rule: Rule, pack: str, evidence: dict[str, Any], requested: set[str], waivers: list[Waiver],
           today: dt.date) -> Finding:
    requirement = rule.requirement()
    metric = rule.metric or f"{rule.evidence} (present)"

    def finding(status: Status, value: float | None, message: str, waiver: dict[str, str] | None = None,
                interval: tuple[float, float] | None = None, inconclusive: bool = False) -> Finding:
        return Finding(rule=rule.id, title=rule.title, pack=pack, status=status, severity=rule.severity,
                       metric=metric, value=value, requirement=requirement, citation=rule.citation,
                       rationale=rule.rationale, message=message, waiver=waiver, evidence=rule.evidence,
                       interval=interval, inconclusive=inconclusive, remedy=rule.remedy,
                       threshold_reason=rule.threshold_reason)

    def failing(value: float | None, shown: str, interval: tuple[float, float] | None = None) -> Finding:
        waiver = _active_waiver(rule.id, waivers, today)
        if waiver is not None:
            return finding("WAIVED", value, f"{shown}, waived by {waiver.approver} until {waiver.expires.isoformat()}",
                           {"justification": waiver.justification, "approver": waiver.approver,
                            "expires": waiver.expires.isoformat()}, interval)
        expired = _expired_waiver(rule.id, waivers, today)
        note = f"; a waiver expired on {expired.expires.isoformat()}" if expired else ""
        return finding("FAIL", value, f"{shown}{note}", interval=interval)

    if rule.evidence not in requested:
        # the evidence in words, its spec key after them (issue 56: no code in the reader's text)
        kind = REGISTRY.get(rule.evidence)
        title = f"{kind.title} " if kind is not None else ""
        return finding("UNMEASURED", None, f"not measured: the spec does not request the evidence it needs, "
                                           f"{title}(`{rule.evidence}`)")
    result = evidence.get(rule.evidence)
    if result is None or result.status == "error":
        why = result.error if result is not None else "it did not run"
        return finding("ERROR", None, f"evidence '{rule.evidence}' failed: {why}")
    if result.status == "unmeasured":
        return finding("UNMEASURED", None, f"not measured: {result.error}")
    if result.status == "skipped":
        if rule.required:
            return failing(None, f"evidence '{rule.evidence}' is required by this rule but does not apply: "
                                 f"{result.error}")
        return finding("SKIPPED", None, f"evidence '{rule.evidence}' does not apply: {result.error}")
    if rule.metric is None:
        return finding("PASS", None, f"evidence '{rule.evidence}' is present")
    interval: tuple[float, float] | None = None
    if rule.per_query is not None:
        per_query = getattr(result, "per_query", {}) or {}
        if rule.metric not in per_query:
            near = nearest(rule.metric, list(per_query), cutoff=0.6)
            hint = f" (did you mean '{near[0]}'?)" if near else \
                (f" (per-query values: {', '.join(sorted(per_query))})" if per_query else "")
            return finding("ERROR", None, f"'{rule.evidence}' gives no per-query values of '{rule.metric}'{hint}")
        values = [float(v) for v in per_query[rule.metric].values() if v is not None and math.isfinite(float(v))]
        if not values:
            return finding("ERROR", None, f"no query has a finite value of {rule.metric}")
        meeting = sum(rule.per_query.holds(v) for v in values)
        value = meeting / len(values)
        interval = wilson_interval(meeting, len(values))
        shown = f"{value:.1%} of {len(values)} queries have {rule.metric} {rule.per_query.text()}"
    else:
        if rule.metric not in result.metrics:
            why = (getattr(result, "unmeasured", None) or {}).get(rule.metric)
            if why is not None:  # an input the spec did not give: nothing to judge, as for evidence not requested
                return finding("UNMEASURED", None, f"not measured: {why}")
            # the packs load only rules on metrics their kind can emit (`check_metrics`): one it did not emit here
            # belongs to an option the spec did not choose (a method not listed, a cutoff not asked for)
            return finding("UNMEASURED", None, f"not measured: '{rule.evidence}' as the spec sets it up does not "
                                               f"produce {rule.metric}; choose the option that measures it (see "
                                               "docs/metrics.md)")
        value = float(result.metrics[rule.metric])
        if not math.isfinite(value):
            return finding("ERROR", None, f"{rule.metric} could not be computed (no finite value)")
        interval = metric_interval(rule.metric, result.metrics)
        shown = f"{rule.metric} = {shown_value(value, rule)}"
    if rule.judge_on == "point" or interval is None:
        interval = None
        low = high = value
    else:
        low, high = min(interval[0], value), max(interval[1], value)
        interval = (low, high)
        shown += f" (95% interval {shown_value(low, rule)} to {shown_value(high, rule)})"
    for level, condition in (("FAIL", rule.fail_if), ("WARN", rule.warn_if)):
        if condition is None:
            continue
        if condition.holds_everywhere(low, high):
            text = f"{shown}, which is {condition.text()}"
            return failing(value, text, interval) if level == "FAIL" else \
                finding("WARN", value, text, interval=interval)
        if condition.holds_somewhere(low, high):
            return finding("WARN", value, f"{shown}: inconclusive — the interval crosses the threshold "
                                          f"({level} if {condition.text()})", interval=interval, inconclusive=True)
    return finding("PASS", value, f"{shown} meets the requirement ({requirement})", interval=interval)


def metric_interval(metric: str, metrics: dict[str, float]) -> tuple[float, float] | None:
    """The 95% interval an evidence item reports for `metric` (`metric_names.read`); None when there is none (an
    exact metric) or it is not finite."""
    found = metric_names.interval_of(metrics, metric)
    return found if found is not None and all(math.isfinite(end) for end in found) else None


def wilson_interval(successes: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """Wilson score interval of a share of queries (the unit of sampling)."""
    if n == 0:
        return (0.0, 1.0)
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


def shown_value(value: float, rule: Rule) -> str:
    """A value with enough significant digits to tell it from every threshold of the rule (never "0.2, which is
    < 0.2")."""
    thresholds = [t for c in (rule.fail_if, rule.warn_if, rule.per_query) if c is not None for t in c.thresholds()]
    for digits in range(4, 13):
        text = f"{value:.{digits}g}"
        if all(text != f"{t:.{digits}g}" or value == t for t in thresholds):
            return text
    return repr(value)


def _active_waiver(rule_id: str, waivers: list[Waiver], today: dt.date) -> Waiver | None:
    return next((w for w in waivers if w.rule == rule_id and w.expires >= today), None)


def _expired_waiver(rule_id: str, waivers: list[Waiver], today: dt.date) -> Waiver | None:
    return next((w for w in waivers if w.rule == rule_id and w.expires < today), None)


def opinion(findings: list[Finding], unjudged: Sequence[object] = ()) -> Opinion:
    """negative: an unwaived FAIL of critical or major severity, or evidence for a critical rule failed.
    positive with comments: any other FAIL, WARN, WAIVED or ERROR, a rule not measured (what the audit did not look
    at is a comment, never an assurance), or anything the evidence detected that no rule of the applied packs judges
    (`unjudged`). positive: everything else passed or did not apply."""
    if not findings:
        return "no policy applied"
    for f in findings:
        if (f.status == "FAIL" and f.severity in ("critical", "major")) or (f.status == "ERROR" and
                                                                            f.severity == "critical"):
            return "negative"
    if unjudged or any(f.status in ("FAIL", "WARN", "WAIVED", "ERROR", "UNMEASURED") for f in findings):
        return "positive with comments"
    return "positive"


STATUS_ORDER = ("FAIL", "ERROR", "WARN", "WAIVED", "UNMEASURED", "PASS", "SKIPPED")  # worst first
JUDGING = ("PASS", "WARN", "FAIL", "WAIVED")  # statuses of a rule that actually looked at its metric


class Judged(Protocol):
    """A detection as the opinion reads it (`auditor.evidence.base.Detection`)."""

    @property
    def judged_by(self) -> tuple[str, ...]: ...


JudgedT = TypeVar("JudgedT", bound=Judged)


def judging_rules(detection: Judged, findings: list[Finding]) -> list[str]:
    """Ids of the applied rules that judge a detection: rules on one of its `judged_by` metrics that looked at
    the value (not SKIPPED or ERROR)."""
    return [f.rule for f in findings if f.metric in detection.judged_by and f.status in JUDGING]


def unjudged(detections: list[JudgedT], findings: list[Finding]) -> list[JudgedT]:
    """Detections no applied rule judges: listed apart in the summary, and they keep the opinion from 'positive'."""
    return [d for d in detections if not judging_rules(d, findings)]


def group_findings(findings: list[Finding]) -> list[list[Finding]]:
    """Findings with the same identity (the same fact judged by rules of different packs), as one group, worst
    verdict first: the report shows one finding citing every rule."""
    order = {s: i for i, s in enumerate(STATUS_ORDER)}
    severity = {s: i for i, s in enumerate(("critical", "major", "minor", "info"))}
    groups: dict[tuple[str, str, str], list[Finding]] = {}
    for f in findings:
        groups.setdefault(same_fact(f) if not f.finding else ("", "", f.finding), []).append(f)
    out = [sorted(g, key=lambda f: (order[f.status], severity[f.severity])) for g in groups.values()]
    return sorted(out, key=lambda g: (order[g[0].status], severity[g[0].severity], g[0].rule))


FAIL_ON_LEVELS: dict[str, set[str]] = {
    "fail": {"FAIL"},
    "error": {"FAIL", "ERROR"},
    "warn": {"FAIL", "ERROR", "WARN"},
    "never": set(),
}


def exit_code(findings: list[Finding], fail_on: str, unjudged: Sequence[Any] = ()) -> int:
    """0 when no finding reaches the `--fail-on` level, else 1 (2 is kept for bad input). Under `warn`, a detection
    no applied rule judges (`unjudged`) of major or critical severity counts too: it is at least a warning."""
    if fail_on == "warn" and any(getattr(d, "severity", None) in ("critical", "major") for d in unjudged):
        return 1
    return 1 if any(f.status in FAIL_ON_LEVELS[fail_on] for f in findings) else 0
