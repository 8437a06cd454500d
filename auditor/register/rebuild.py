"""Re-index run folders into a register: the register is an index of the evidence and of the signed decisions, which
live in files — the run folders (evidence.json, approval.dsse.json) and the decisions folder (each response and risk
acceptance, `decisions/<system>/*.dsse.json`, written by `auditor findings respond|accept`).

Everything is recorded in the order it happened — runs in the order they were evaluated, each followed by the
decisions made after it (a decision names the last run it saw) and its approval, in the order they were signed — so
findings open, get their responses and acceptances, are seen and are remediated as they did.
Each decision's signature is checked with the certificate it carries before it is indexed; one that does not verify,
or names a finding no run folder opened, is left out and named. What no file holds — an unsigned decision, recorded
where the register allowed it — cannot come back: keep the register backed up (docs/governance.md).
"""

from __future__ import annotations

import datetime as dt
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from auditor.core.errors import InputError
from auditor.register.lifecycle import Event
from auditor.register.store import Register

MAX_RUN_FOLDERS = 100_000
REBUILD_MAX_BYTES = 64 * 1024 * 1024  # an evidence.json a rebuild reads (parsed, it takes ~20 times this in memory)
DECISIONS_FOLDER = "decisions"


def system_of(document: dict[str, Any]) -> str:
    """The audited system a run belongs to: as its review recorded it, else its spec's `model.name`, else its
    title (what `auditor report` would have chosen)."""
    review = document.get("review") or {}
    if review.get("system"):
        return str(review["system"])
    spec = (document.get("spec") or {}).get("content") or {}
    name = (spec.get("model") or {}).get("name") if isinstance(spec, dict) else None
    return str(name or document["audit"]["title"])


def run_folders(folder: Path) -> list[Path]:
    """The run folders directly under `folder` (those holding an evidence.json)."""
    if not folder.is_dir():
        raise InputError("no such folder", file=folder, fix="give the folder that holds the run folders (e.g. reports)")
    found = []
    for index, entry in enumerate(sorted(folder.iterdir())):
        if index >= MAX_RUN_FOLDERS:
            raise InputError(f"more than {MAX_RUN_FOLDERS:,} entries", file=folder, fix="re-index a smaller folder")
        if entry.is_dir() and not entry.is_symlink() and not entry.name.startswith(".") and \
                (entry / "evidence.json").is_file():
            found.append(entry)
    return found


@dataclass
class Rebuilt:
    """What a rebuild indexed, and what it left out (one line each)."""

    runs: list[Path] = field(default_factory=list)
    unverified: list[str] = field(default_factory=list)  # "<run>: <why>", indexed as such
    decisions: int = 0
    approvals: int = 0
    left_out: list[str] = field(default_factory=list)


@dataclass
class Trust:
    """`verify`'s options for the folders a rebuild reads, and what to do with a folder that does not verify."""

    trust: list[Path] | None = None
    pubkey: Path | None = None
    approver_trust: list[Path] | None = None
    refuse_unverified: bool = False

    @property
    def given(self) -> bool:
        return bool(self.trust) and self.pubkey is not None


# --- what a run folder must hold to be indexed -------------------------------------------------------------------

class _Loose(BaseModel):
    model_config = ConfigDict(extra="allow")


class _Rule(_Loose):
    rule: Annotated[str, Field(min_length=1)]
    pack: str = ""
    status: Literal["PASS", "FAIL", "WARN", "ERROR", "WAIVED", "UNMEASURED", "SKIPPED"]
    title: str
    severity: str
    finding: str | None = None
    value: float | None = None
    interval: list[float | None] | None = None


class _Detection(_Loose):
    kind: Annotated[str, Field(min_length=1)]
    title: str
    severity: str
    subject: str | None = None
    evidence: str = ""
    judged_by_rules: list[str] = []
    value: float | None = None


class _Evidence(_Loose):
    status: str
    metrics: dict[str, Any] = {}


class _Assignment(_Loose):
    rule: str
    owner: str
    due: dt.date


class _Waiver(_Loose):
    rule: str
    approver: str
    expires: dt.date
    justification: str


class _RunFacts(_Loose):
    evaluated_on: dt.date
    started_at: dt.datetime
    finished_at: dt.datetime | None = None


class _Recorded(_Loose):
    """The parts of evidence.json the register reads, each checked as input: a forged or careless folder is left
    out with one line instead of poisoning the register for the audits after it."""

    schema_: str = Field(alias="schema")
    run: _RunFacts
    audit: dict[str, Any]
    opinion: str
    inputs: dict[str, Any]
    spec: dict[str, Any]
    tool: dict[str, Any]
    findings: list[_Rule] = []
    detections: list[_Detection] = []
    evidence: dict[str, _Evidence] = {}
    assignments: list[_Assignment] = []
    waivers: list[_Waiver] = []


def read_recorded(run: Path, today: dt.date) -> dict[str, Any]:
    """A run folder's evidence.json as the register may record it: a regular file (no link) under the rebuild's
    cap, strict JSON, every field the register reads of the right type, dated no later than tomorrow. ValueError
    naming the first problem."""
    from pydantic import ValidationError

    from auditor.core.files import MiB, Unreadable, read_regular
    from auditor.trust.strict_json import BadJSON, strict_json

    try:
        document = strict_json(read_regular(run / "evidence.json", limit=REBUILD_MAX_BYTES, follow=False),
                               "evidence.json")
    except Unreadable as exc:
        raise ValueError(f"evidence.json is {exc} (a rebuild reads at most {REBUILD_MAX_BYTES // MiB} MiB)") from None
    except BadJSON as exc:
        raise ValueError(f"evidence.json: {exc}") from None
    if not isinstance(document, dict):
        raise ValueError("evidence.json is not an object")
    try:
        facts = _Recorded.model_validate(document)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise ValueError(f"evidence.json: {where}: {first['msg']}") from None
    if not facts.schema_.startswith("auditor.evidence/"):
        raise ValueError(f"evidence.json is not an auditor evidence file (schema {facts.schema_[:40]!r})")
    if facts.run.evaluated_on > today + dt.timedelta(days=1):
        raise ValueError(f"evidence.json says it was evaluated on {facts.run.evaluated_on}, after today")
    if not isinstance(document["audit"].get("title"), str) or not isinstance(document["spec"].get("sha256"), str) \
            or not isinstance(document["inputs"].get("model"), dict):
        raise ValueError("evidence.json lacks the audit's title, the spec's sha256 or the model's inputs")
    return document


def verified_state(run: Path, trust: Trust) -> tuple[str, bool]:
    """What verifying a run folder found — "verified", "unsigned" or "unverified: <why>" — and whether its approval
    (when it has one) verified with it."""
    from auditor.trust.layout import BUNDLE_NAME
    from auditor.trust.verify import verify_run

    if not os.path.lexists(run / BUNDLE_NAME):
        return "unsigned", False
    if not trust.given:
        return "unverified: no --trust and --pubkey to verify it with", False
    verdicts = verify_run(run, trust=trust.trust, pubkey=trust.pubkey, approver_trust=trust.approver_trust)
    failed = [v for v in verdicts if not v.ok]
    if failed:
        return f"unverified: {failed[0].line()[:300]}", False
    approval = [v for v in verdicts if v.subject == "approval"]
    return "verified", bool(approval) and not approval[0].skipped


def rebuild(folder: Path, location: str, decisions: Path | None = None, trust: Trust | None = None) -> Rebuilt:
    """Record every run folder under `folder`, every approval beside them and every decision file under
    `decisions` (default: folder/decisions) that the register lacks, in the order they happened: runs in the order
    they were evaluated, each followed by the decisions and approvals made after it (a decision names the run it
    followed, an approval the run it approves), in the order they were signed. Each folder is verified as `verify`
    would (`trust`): one that does not verify is indexed as unverified, without its approval (or left out, with
    `refuse_unverified`); one whose evidence.json is not what an audit writes is left out."""
    from auditor.core.files import MAX_SMALL_BYTES, Unreadable, read_regular, sha256_file
    from auditor.trust.approval import APPROVAL_NAME, read_approval
    from auditor.trust.decision import decision_files, read_decision

    trust = trust or Trust()
    register = Register(location)
    known = register.statements()
    done = Rebuilt()
    today = dt.date.today()
    runs: list[tuple[str, str, str, Path, dict[str, Any], str]] = []
    after: dict[str | None, list[tuple[dt.datetime, str, Any]]] = {}  # run name -> what followed it
    seen: set[str] = set()
    for run in run_folders(Path(folder)):
        key = str(run.resolve())
        if key in seen:
            continue
        seen.add(key)
        if register.has_run(run):
            continue
        try:
            document = read_recorded(run, today)
        except ValueError as exc:
            done.left_out.append(f"{run.name}: {str(exc)[:300]}")
            continue
        state, approved = verified_state(run, trust)
        if state.startswith("unverified") and trust.refuse_unverified:
            done.left_out.append(f"{run.name}: {state}")
            continue
        if state != "verified":
            done.unverified.append(f"{run.name}: {state}")
        approval = read_approval(run / APPROVAL_NAME) if approved else None
        if approval is not None and approval["statement"] not in known:
            when = dt.datetime.strptime(approval["time"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.UTC)
            after.setdefault(run.name, []).append((when, "approval", (run, approval)))
        elif os.path.lexists(run / APPROVAL_NAME) and not approved:
            done.left_out.append(f"{run.name}/{APPROVAL_NAME}: not indexed, the run or the approval does not "
                                 "verify" + ("" if trust.given else " (no --trust and --pubkey)"))
        runs.append((document["run"]["evaluated_on"], document["run"].get("started_at", ""), run.name, run, document,
                     state))
    for path in decision_files(Path(decisions) if decisions is not None else Path(folder) / DECISIONS_FOLDER):
        try:
            data = read_regular(path, limit=MAX_SMALL_BYTES, follow=False)
            decision = read_decision(data)
        except (Unreadable, ValueError) as exc:
            done.left_out.append(f"{path.parent.name}/{path.name}: {str(exc)[:160]}")
            continue
        if data.decode("utf-8") not in known:
            after.setdefault(decision.after_run, []).append((decision.time, "decision", (path, decision, data)))
    runs.sort(key=lambda item: item[:3])
    pending: list[tuple[str, Any]] = [(what, item) for _, what, item in sorted(
        (entry for name, entries in after.items() if name not in {r[2] for r in runs} for entry in entries),
        key=lambda entry: entry[0])]  # what followed runs recorded before this rebuild (or none)
    for *_, run, document, state in runs:
        pending.append(("run", (run, document, state)))
        pending += [(what, item) for _, what, item in sorted(after.get(run.name, []), key=lambda e: e[0])]
    for what, item in pending:
        if what == "run":
            run, document, state = item
            bundle = run / "bundle.dsse.json"
            try:
                register.record(document, system=system_of(document), run_dir=run,
                                evidence_sha256=sha256_file(run / "evidence.json"),
                                bundle_sha256=sha256_file(bundle) if bundle.is_file() else None,
                                actor="auditor register rebuild", verified=state)
            except InputError as exc:  # a value no register can keep: this folder, not the rebuild
                done.left_out.append(f"{run.name}: {exc.problem}")
                continue
            done.runs.append(run)
        elif what == "approval":
            run, approval = item
            register.record_approval(run_dir=run, **{k: v for k, v in approval.items() if k != "time"})
            done.approvals += 1
        else:
            path, decision, data = item
            try:
                register.finding(decision.finding, today=decision.time.date())
            except InputError:
                done.left_out.append(f"{path.parent.name}/{path.name}: it decides on {decision.finding}, which no "
                                     "run folder here opened")
                continue
            register.add_event(decision.finding, Event(decision.kind, decision.time.date().isoformat(),
                                                       decision.actor, **decision.fields),
                               statement=data.decode("utf-8"), signer=decision.actor)
            done.decisions += 1
    register.close()
    return done
