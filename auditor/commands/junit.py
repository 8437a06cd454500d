"""A run's findings as JUnit XML, the test-report format CI systems read (Jenkins, GitLab, GitHub Actions' test
reporters): `auditor report spec.yaml --junit results.xml`.

One testsuite a run, one testcase a finding: the rules of every applied pack that judge the same fact, as the report
shows them on one card (classname the packs' ids, name the finding's identity and title, the other rules named;
its verdict the worst rule's, its text every rule's). What each status becomes (docs/ci.md says why):

- PASS: a passed testcase, the measured value in its `<system-out>`;
- FAIL: `<failure>`, its message the measured value, its text the requirement, the threshold's reason, the
  remedy, the citation and the rationale;
- WARN: `<failure>` when the run's `--fail-on` level fails on WARN (`warn`), else `<skipped>` with the same message
  (a WARN asks a reviewer to look: a skip stays visible in every CI report without failing it);
- ERROR (the rule could not be judged: its evidence failed, its metric was not computed): `<error>`;
- WAIVED: `<skipped>` with the waiver's approver, expiry and justification;
- UNMEASURED (not measured: its evidence not requested, or an input the evidence needs not given): `<skipped>` of
  type UNMEASURED, its message "NOT MEASURED (severity): …" with the spec change that would measure it;
- SKIPPED (not applicable to this provider, or its evidence does not apply): `<skipped>` with the reason.

The suite's `<properties>` carry the run folder's name, the opinion, the spec file and its sha256, the model's name
and version and the `--fail-on` level. Every string is untrusted (pack texts, the spec's names): it goes through
`display.shown` like every other place that shows one (control, bidi and invisible characters as ⟨U+XXXX⟩, long
runs cut), and any character XML 1.0 cannot hold is replaced the same way, so the file always parses.

The file is a view of the run folder's evidence.json, written after the run, replaced whole (never half-written).
Its shape is checked against the Jenkins xUnit plugin's `junit-10.xsd` (tests/junit-10.xsd).
"""

from __future__ import annotations

import datetime as dt
import json
import re
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from auditor.core.display import NAME_CHARS, TEXT_CHARS, TITLE_CHARS, shown
from auditor.core.errors import InputError
from auditor.core.files import MAX_JSON_BYTES, Unreadable, check_new_file, open_regular, read_bytes, replace_file
from auditor.evidence.document import DetectionPart, EvidenceDocument, read_document
from auditor.judging.policy import FAIL_ON_LEVELS, Finding, findings_of, group_findings, identity

Outcome = Literal["passed", "failure", "error", "skipped"]
OPTION = "--junit"

# The start of a file `--junit` may replace: empty, or XML (a BOM, a declaration, comments) whose root element is a
# JUnit report's.
_HEAD_BYTES = 4096
# (Each comment matches one way only — `(?!-->).` never crosses its end — so a head of many comments is linear.)
_JUNIT_HEAD = re.compile(rb"^(?:\xef\xbb\xbf)?\s*(?:<\?xml[^>]*\?>\s*)?(?:<!--(?:(?!-->).)*-->\s*)*<testsuites?[\s>/]",
                         re.S)

# What XML 1.0 allows (its `Char` production); `shown` already marks all the rest but one pattern keeps the
# guarantee whatever it does.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


@dataclass(frozen=True)
class RunInfo:
    """What the suite says about the run (its name, timing and `<properties>`), from evidence.json."""

    run_id: str
    title: str
    opinion: str
    spec_file: str = ""
    spec_sha256: str = ""
    model: str = ""
    model_version: str = ""
    tool_version: str = ""
    evaluated_on: str = ""
    started_at: str = ""
    seconds: float | None = None
    host: str = ""

    @classmethod
    def from_document(cls, document: EvidenceDocument, run_id: str) -> RunInfo:
        """The run as evidence.json records it; `run_id` is the run folder's name."""
        run, spec, audit = document.run, document.spec, document.audit
        model = _mapping(_mapping(spec.get("content")).get("model"))
        started = str(run.get("started_at") or "")
        return cls(run_id=run_id, title=str(audit.get("title") or "audit"), opinion=document.opinion,
                   spec_file=str(spec.get("file") or ""), spec_sha256=str(spec.get("sha256") or ""),
                   model=str(model.get("name") or ""), model_version=str(model.get("version") or ""),
                   tool_version=str(document.tool.get("version") or ""),
                   evaluated_on=str(run.get("evaluated_on") or ""), started_at=started,
                   seconds=_seconds(started, str(run.get("finished_at") or "")),
                   host=str(run.get("host") or ""))

    def properties(self, fail_on: str) -> list[tuple[str, str]]:
        """(name, value) of the suite's properties; those the run does not record are left out."""
        pairs = [("auditor.run", self.run_id), ("auditor.opinion", self.opinion), ("auditor.fail_on", fail_on),
                 ("auditor.inputs.spec", self.spec_file), ("auditor.inputs.spec.sha256", self.spec_sha256),
                 ("auditor.model", self.model), ("auditor.model.version", self.model_version),
                 ("auditor.evaluated_on", self.evaluated_on), ("auditor.version", self.tool_version)]
        return [(name, value) for name, value in pairs if value]


def outcome(finding: Finding, fail_on: str) -> Outcome:
    """What a finding is in JUnit's terms, under the run's `--fail-on` level (a FAIL_ON_LEVELS key)."""
    if finding.status == "FAIL":
        return "failure"
    if finding.status == "ERROR":
        return "error"
    if finding.status == "WARN":  # a warning passes the gate but is no skip: its name says WARN
        return "failure" if "WARN" in FAIL_ON_LEVELS[fail_on] else "passed"
    if finding.status in ("WAIVED", "UNMEASURED", "SKIPPED"):
        return "skipped"
    return "passed"


def findings_in_order(findings: Sequence[Finding]) -> list[list[Finding]]:
    """The run's findings by identity (the rules of every pack that judge one fact), in the packs' order, each
    worst verdict first (`policy.group_findings`)."""
    first: dict[str, int] = {}
    for index, f in enumerate(findings):
        first.setdefault(identity(f), index)
    return sorted(group_findings(list(findings)), key=lambda group: min(first[identity(f)] for f in group))


PREFIX = {"WARN": "[WARN] ", "UNMEASURED": "[NOT MEASURED] "}  # statuses CI lists must tell apart by name


def detection_outcome(detection: DetectionPart, fail_on: str) -> Outcome:
    """A detection no applied rule judges: a failure under `--fail-on warn` when it is major or critical (the gate
    counts it: `policy.exit_code`), else a passed testcase whose name says DETECTED — never a skip."""
    return "failure" if fail_on == "warn" and detection.severity in ("critical", "major") else "passed"


def testsuites(findings: Sequence[Finding], run: RunInfo, *, fail_on: str,
               detections: Sequence[DetectionPart] = (), seconds: Mapping[str, Any] | None = None) -> ET.Element:
    """The JUnit document: `<testsuites>` holding the run's one `<testsuite>`, one testcase a finding and one a
    detection no applied rule judges; a testcase's `time` is its evidence item's seconds (`seconds`)."""
    groups = findings_in_order(findings)
    unjudged = [d for d in detections if not d.judged_by_rules]
    outcomes = [outcome(group[0], fail_on) for group in groups]
    detected = [detection_outcome(d, fail_on) for d in unjudged]
    counts = Counter(outcomes + detected)
    totals = {"tests": str(len(groups) + len(unjudged)), "failures": str(counts["failure"]),
              "errors": str(counts["error"])}
    took = seconds or {}
    timing = {"time": f"{run.seconds:.3f}"} if run.seconds is not None else {}
    root = ET.Element("testsuites", {"name": "auditor", **totals, **timing})
    suite = ET.SubElement(root, "testsuite", {
        "name": _text(run.title, TITLE_CHARS), **totals, "skipped": str(counts["skipped"]), **timing,
        **({"timestamp": _text(run.started_at, NAME_CHARS)} if run.started_at else {}),
        **({"hostname": _text(run.host, NAME_CHARS)} if run.host else {})})
    properties = ET.SubElement(suite, "properties")
    for name, value in run.properties(fail_on):
        ET.SubElement(properties, "property", name=name, value=_text(value, TEXT_CHARS))
    for group, kind in zip(groups, outcomes, strict=True):
        head = group[0]
        packs = list(dict.fromkeys(f.pack for f in group))
        also = [f.rule for f in group if f.rule != identity(head)]
        name = PREFIX.get(head.status, "") + f"{_text(identity(head), NAME_CHARS)} {_text(head.title, NAME_CHARS)}" + \
            (f" (also {_text(', '.join(also), NAME_CHARS)})" if also else "")
        case = ET.SubElement(suite, "testcase", {"classname": _text("+".join(packs), NAME_CHARS), "name": name,
                                                 **_time(took.get(head.evidence))})
        body = _text("\n".join(details(f) for f in group), TEXT_CHARS * 4 * len(group), lines=True)
        if kind == "passed":
            ET.SubElement(case, "system-out").text = body
        else:
            ET.SubElement(case, kind, message=_text(headline(head), TEXT_CHARS), type=head.status).text = body
    for detection, kind in zip(unjudged, detected, strict=True):
        evidence = detection.evidence
        case = ET.SubElement(suite, "testcase", {
            "classname": _text(f"detected.{evidence or 'audit'}", NAME_CHARS),
            "name": "[DETECTED] " + _text(detection.title, NAME_CHARS), **_time(took.get(evidence))})
        body = _text(f"DETECTED ({detection.severity}), judged by no applied rule: "
                     f"{detection.message}\nBears on: {detection.citation}\n", TEXT_CHARS * 4, lines=True)
        if kind == "passed":
            ET.SubElement(case, "system-out").text = body
        else:
            ET.SubElement(case, kind, message=_text(f"DETECTED ({detection.severity}): {detection.title}",
                                                    TEXT_CHARS),
                          type="DETECTED").text = body
    return root


def _time(seconds: Any) -> dict[str, str]:
    """A testcase's `time` attribute: its evidence item's wall-clock seconds, when the run recorded them."""
    return {"time": f"{float(seconds):.3f}"} if isinstance(seconds, (int, float)) and seconds >= 0 else {}


def headline(finding: Finding) -> str:
    """The one line a CI system shows for a testcase that did not pass: status, severity and what was measured."""
    line = f"{'NOT MEASURED' if finding.status == 'UNMEASURED' else finding.status} ({finding.severity}): " \
           f"{finding.message}"
    if finding.status == "WAIVED" and finding.waiver is not None:  # the message names the approver and expiry
        line += f" — {finding.waiver.get('justification', '')}"
    return line


def details(finding: Finding) -> str:
    """The testcase's text: the verdict, what was measured and required, why, what to do, and the law."""
    lines = [f"{finding.status} ({finding.severity}): {finding.pack} {finding.rule} — {finding.title}",
             f"{'Problem' if finding.status == 'ERROR' else 'Measured'}: {finding.message}",
             f"Requirement: {finding.requirement}"]
    if finding.threshold_reason.strip():
        lines.append(f"Why this threshold: {finding.threshold_reason.strip()}")
    if finding.waiver is not None:
        lines.append(f"Waiver: approved by {finding.waiver.get('approver', '?')} until "
                     f"{finding.waiver.get('expires', '?')}: {finding.waiver.get('justification', '')}")
    if finding.remedy.strip() and finding.status != "PASS":
        lines.append(f"Remedy: {finding.remedy.strip()}")
    lines.append(f"Citation: {finding.citation.strip()}")
    if finding.rationale.strip():
        lines.append(f"Rationale: {finding.rationale.strip()}")
    return "\n".join(lines) + "\n"


def to_bytes(root: ET.Element) -> bytes:
    """The document as indented UTF-8 XML with its declaration."""
    ET.indent(root)
    text: bytes = ET.tostring(root, encoding="utf-8", xml_declaration=True)
    return text + b"\n"


def check_target(path: Path) -> None:
    """Refuse a `--junit` path that cannot be written, that lies in a run folder (an added file would break
    its verification), or that holds a file no JUnit report would be (`--junit audit.yaml` replaced the spec, and
    `--junit reports/register.sqlite` the register, with XML), before the audit runs."""
    check_new_file(path, option=OPTION)
    for folder in [path.parent.absolute(), *path.parent.absolute().parents]:
        if (folder / "evidence.json").is_file() or (folder / "bundle.dsse.json").is_file():
            raise InputError(f"the file would be inside the run folder {folder}", file=path,
                             fix=f"give {OPTION} a path outside any run folder")
    _check_replaceable(path)


def _check_replaceable(path: Path) -> None:
    """A file at `path` may be replaced when its name ends in `.xml` (what CI systems collect), or when it is
    empty or a JUnit report (an XML document whose root is `<testsuites>` or `<testsuite>`, ours or another
    tool's) whatever its name; a link is replaced, never its target. Any other file — a spec, data, a model, the
    register — is someone's input, not an earlier result."""
    if path.is_symlink() or not path.is_file() or path.suffix.lower() == ".xml":
        return
    try:
        with open_regular(path, follow=False) as handle:
            head = handle.read(_HEAD_BYTES)
    except Unreadable as exc:
        raise InputError(f"cannot read the file to be replaced ({exc})", file=path,
                         fix=f"give {OPTION} a new file name") from None
    if not head.strip() or _JUNIT_HEAD.match(head):
        return
    raise InputError("the file exists and is not a JUnit report: it would be replaced", file=path,
                     fix=f"give {OPTION} a new .xml file name (or the path of an earlier JUnit file)")


def write_results(path: Path, run_dir: Path, *, fail_on: str) -> None:
    """Write the JUnit XML of the run in `run_dir` (from its evidence.json) as `path`, replacing a JUnit file there
    (checked again: the audit took time, and something else may stand there now)."""
    file = run_dir / "evidence.json"
    raw = json.loads(read_bytes(file, limit=MAX_JSON_BYTES, what="evidence.json"))
    document = read_document(raw, file=str(file))
    root = testsuites(findings_of(document), RunInfo.from_document(document, run_dir.name), fail_on=fail_on,
                      detections=document.detections, seconds=_mapping(document.run.get("seconds")))
    _check_replaceable(path)
    replace_file(path, to_bytes(root), fix=f"give {OPTION} a path in a folder you may write to")


def _text(value: object, limit: int, *, lines: bool = False) -> str:
    """An untrusted string as the XML shows it: `display.shown`, then anything XML 1.0 cannot hold marked."""
    return _NOT_XML.sub(lambda m: f"⟨U+{ord(m.group()):04X}⟩", shown(value, limit=limit, lines=lines))


def _seconds(started: str, finished: str) -> float | None:
    """The run's wall-clock seconds from its ISO 8601 start and end; None when either is missing or unreadable."""
    try:
        return max(0.0, (dt.datetime.fromisoformat(finished) - dt.datetime.fromisoformat(started)).total_seconds())
    except (TypeError, ValueError):
        return None


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}
