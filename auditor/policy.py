"""Policy packs: rules over evidence metrics, their findings, waivers, and the overall opinion.

A rule names one metric, the condition under which it FAILs and the one under which it WARNs, a severity, a
citation and a rationale. Results are plain data so evidence.json, the report and the CLI read the same thing.
"""

from __future__ import annotations

import datetime as dt
import difflib
import hashlib
import math
import operator
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from auditor.errors import InputError
from auditor.spec import StrictModel, Waiver, parse_yaml, validate_yaml

Severity = Literal["critical", "major", "minor", "info"]
Status = Literal["PASS", "WARN", "FAIL", "WAIVED", "ERROR", "SKIPPED"]
Opinion = Literal["positive", "positive with comments", "negative", "no policy applied"]

_OPS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "==": operator.eq,
        "!=": operator.ne}
_CONDITION = re.compile(r"^\s*(<=|>=|==|!=|<|>)\s*([-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?)\s*$")


class Condition(StrictModel):
    """`< 0.5` and friends: the metric value compared with a number."""

    op: Literal["<", "<=", ">", ">=", "==", "!="]
    value: float

    @model_validator(mode="before")
    @classmethod
    def _from_text(cls, data: Any) -> Any:
        if isinstance(data, str):
            match = _CONDITION.match(data)
            if not match:
                raise ValueError(f"'{data}' is not a condition; write e.g. '< 0.5' (operators: "
                                 f"{' '.join(_OPS)})")
            return {"op": match.group(1), "value": float(match.group(2))}
        return data

    def holds(self, value: float) -> bool:
        return bool(_OPS[self.op](value, self.value))

    def text(self) -> str:
        return f"{self.op} {self.value:g}"


class Rule(StrictModel):
    id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    title: str
    evidence: str = Field(description="Evidence kind that produces the metric (`dataset` for data facts).")
    metric: str
    fail_if: Condition | None = None
    warn_if: Condition | None = None
    severity: Severity
    citation: str
    rationale: str
    threshold_reason: str = ""

    @model_validator(mode="after")
    def _has_condition(self) -> Rule:
        if self.fail_if is None and self.warn_if is None:
            raise ValueError("a rule needs `fail_if`, `warn_if` or both")
        return self


class PolicyPack(StrictModel):
    pack: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]*$")
    title: str
    version: str
    description: str = ""
    rules: list[Rule] = Field(min_length=1)

    @field_validator("rules")
    @classmethod
    def _unique_ids(cls, rules: list[Rule]) -> list[Rule]:
        seen: set[str] = set()
        for rule in rules:
            if rule.id in seen:
                raise ValueError(f"rule id '{rule.id}' is used twice")
            seen.add(rule.id)
        return rules


@dataclass(frozen=True)
class LoadedPack:
    pack: PolicyPack
    path: Path
    sha256: str


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

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def bundled_policies_dir() -> Path:
    here = Path(__file__).resolve().parent
    for candidate in (here / "_bundled" / "policies", here.parent / "policies"):
        if candidate.is_dir():
            return candidate
    raise RuntimeError("the built-in policy packs are missing from this installation")


def builtin_pack_names() -> list[str]:
    return sorted(p.stem for p in bundled_policies_dir().glob("*.yaml"))


def load_pack(ref: str, *, base_dir: Path, spec_file: Path | None = None) -> LoadedPack:
    """A pack by built-in name (`starter`) or by path (relative to the spec's folder)."""
    looks_like_path = "/" in ref or ref.endswith((".yaml", ".yml"))
    path = (base_dir / ref) if looks_like_path else bundled_policies_dir() / f"{ref}.yaml"
    if not path.is_file():
        if looks_like_path:
            raise InputError(f"no policy file '{ref}'", file=spec_file, where="policies",
                             fix="check the path (relative to the spec's folder)")
        names = builtin_pack_names()
        near = difflib.get_close_matches(ref, names, n=1)
        raise InputError(f"no built-in policy pack '{ref}'", file=spec_file, where="policies",
                         fix=(f"did you mean '{near[0]}'?" if near else f"built-in packs: {', '.join(names)}"))
    text = path.read_bytes()
    raw, marks = parse_yaml(text.decode("utf-8", errors="replace"), path)
    pack = validate_yaml(PolicyPack, raw, marks, path)
    return LoadedPack(pack=pack, path=path, sha256=hashlib.sha256(text).hexdigest())


def load_packs(refs: list[str], *, base_dir: Path, spec_file: Path | None = None) -> list[LoadedPack]:
    packs = [load_pack(ref, base_dir=base_dir, spec_file=spec_file) for ref in refs]
    owner: dict[str, str] = {}
    for loaded in packs:
        for rule in loaded.pack.rules:
            if rule.id in owner:
                raise InputError(f"rule id '{rule.id}' is in both '{owner[rule.id]}' and '{loaded.pack.pack}'",
                                 file=spec_file, where="policies", fix="rename one of the rules")
            owner[rule.id] = loaded.pack.pack
    return packs


def check_waivers(waivers: list[Waiver], packs: list[LoadedPack], *, spec_file: Path | None = None) -> None:
    """A waiver for a rule no pack has is a typo, not a no-op: refuse it before any work is done."""
    ids = [rule.id for loaded in packs for rule in loaded.pack.rules]
    for index, waiver in enumerate(waivers):
        if waiver.rule not in ids:
            near = difflib.get_close_matches(waiver.rule, ids, n=1, cutoff=0.5)
            raise InputError(f"waiver for unknown rule '{waiver.rule}'", file=spec_file, where=f"waivers.{index}",
                             fix=(f"did you mean '{near[0]}'?" if near else "name a rule of the applied packs"))


def evaluate(packs: list[LoadedPack], evidence: dict[str, Any], *, requested: set[str],
             waivers: list[Waiver], today: dt.date) -> list[Finding]:
    """Judge every rule. `evidence` maps evidence name → object with .status, .error and .metrics."""
    findings = []
    for loaded in packs:
        for rule in loaded.pack.rules:
            findings.append(_judge(rule, loaded.pack.pack, evidence, requested, waivers, today))
    return findings


def _judge(rule: Rule, pack: str, evidence: dict[str, Any], requested: set[str], waivers: list[Waiver],
           today: dt.date) -> Finding:
    requirement = "; ".join(part for part in (
        f"FAIL if {rule.fail_if.text()}" if rule.fail_if else "",
        f"WARN if {rule.warn_if.text()}" if rule.warn_if else "") if part)

    def finding(status: Status, value: float | None, message: str, waiver: dict[str, str] | None = None) -> Finding:
        return Finding(rule=rule.id, title=rule.title, pack=pack, status=status, severity=rule.severity,
                       metric=rule.metric, value=value, requirement=requirement, citation=rule.citation,
                       rationale=rule.rationale, message=message, waiver=waiver)

    if rule.evidence not in requested:
        return finding("SKIPPED", None, f"evidence '{rule.evidence}' was not requested in the spec")
    result = evidence.get(rule.evidence)
    if result is None or result.status == "error":
        why = result.error if result is not None else "it did not run"
        return finding("ERROR", None, f"evidence '{rule.evidence}' failed: {why}")
    if result.status == "skipped":
        return finding("SKIPPED", None, f"evidence '{rule.evidence}' does not apply: {result.error}")
    if rule.metric not in result.metrics:
        near = difflib.get_close_matches(rule.metric, list(result.metrics), n=1, cutoff=0.6)
        hint = f" (did you mean '{near[0]}'?)" if near else ""
        return finding("ERROR", None, f"metric '{rule.metric}' is not produced by '{rule.evidence}'{hint}")
    value = float(result.metrics[rule.metric])
    if not math.isfinite(value):
        return finding("ERROR", None, f"{rule.metric} could not be computed (no finite value)")
    shown = f"{rule.metric} = {value:.4g}"
    if rule.fail_if and rule.fail_if.holds(value):
        waiver = _active_waiver(rule.id, waivers, today)
        if waiver is not None:
            return finding("WAIVED", value, f"{shown} fails ({rule.fail_if.text()}), waived by {waiver.approver} "
                                            f"until {waiver.expires.isoformat()}",
                           {"justification": waiver.justification, "approver": waiver.approver,
                            "expires": waiver.expires.isoformat()})
        expired = _expired_waiver(rule.id, waivers, today)
        note = f"; a waiver expired on {expired.expires.isoformat()}" if expired else ""
        return finding("FAIL", value, f"{shown}, which is {rule.fail_if.text()}{note}")
    if rule.warn_if and rule.warn_if.holds(value):
        return finding("WARN", value, f"{shown}, which is {rule.warn_if.text()}")
    return finding("PASS", value, f"{shown} meets the requirement ({requirement})")


def _active_waiver(rule_id: str, waivers: list[Waiver], today: dt.date) -> Waiver | None:
    return next((w for w in waivers if w.rule == rule_id and w.expires >= today), None)


def _expired_waiver(rule_id: str, waivers: list[Waiver], today: dt.date) -> Waiver | None:
    return next((w for w in waivers if w.rule == rule_id and w.expires < today), None)


def opinion(findings: list[Finding]) -> Opinion:
    """negative: an unwaived FAIL of critical or major severity, or evidence for a critical rule failed.
    positive with comments: any other FAIL, WARN, WAIVED or ERROR. positive: everything else passed or skipped."""
    if not findings:
        return "no policy applied"
    for f in findings:
        if (f.status == "FAIL" and f.severity in ("critical", "major")) or (f.status == "ERROR" and
                                                                            f.severity == "critical"):
            return "negative"
    if any(f.status in ("FAIL", "WARN", "WAIVED", "ERROR") for f in findings):
        return "positive with comments"
    return "positive"


FAIL_ON_LEVELS: dict[str, set[str]] = {
    "fail": {"FAIL"},
    "error": {"FAIL", "ERROR"},
    "warn": {"FAIL", "ERROR", "WARN"},
    "never": set(),
}


def exit_code(findings: list[Finding], fail_on: str) -> int:
    """0 when no finding reaches the `--fail-on` level, else 1 (2 is kept for bad input)."""
    return 1 if any(f.status in FAIL_ON_LEVELS[fail_on] for f in findings) else 0
