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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from auditor.diff import load_run
from auditor.errors import InputError
from auditor.register.lifecycle import Event
from auditor.register.store import Register

MAX_RUN_FOLDERS = 100_000
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
    decisions: int = 0
    approvals: int = 0
    left_out: list[str] = field(default_factory=list)


def rebuild(folder: Path, location: str, decisions: Path | None = None) -> Rebuilt:
    """Record every run folder under `folder`, every approval beside them and every decision file under
    `decisions` (default: folder/decisions) that the register lacks, in the order they happened: runs in the order
    they were evaluated, each followed by the decisions and approvals made after it (a decision names the run it
    followed, an approval the run it approves), in the order they were signed."""
    from auditor.files import MAX_SMALL_BYTES, Unreadable, read_regular, sha256_file
    from auditor.trust.approval import APPROVAL_NAME, read_approval
    from auditor.trust.decision import decision_files, read_decision

    register = Register(location)
    known = register.statements()
    done = Rebuilt()
    runs: list[tuple[str, str, str, Path, dict[str, Any]]] = []
    after: dict[str | None, list[tuple[dt.datetime, str, Any]]] = {}  # run name -> what followed it
    for run in run_folders(Path(folder)):
        approval = read_approval(run / APPROVAL_NAME) if (run / APPROVAL_NAME).is_file() else None
        if approval is not None and approval["statement"] not in known:
            when = dt.datetime.strptime(approval["time"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.UTC)
            after.setdefault(run.name, []).append((when, "approval", (run, approval)))
        elif (run / APPROVAL_NAME).is_file() and approval is None:
            done.left_out.append(f"{run.name}/{APPROVAL_NAME}: its signature does not verify")
        if register.has_run(run):
            continue
        document = load_run(run)
        if "run" not in document or "evaluated_on" not in document["run"]:
            raise InputError("evidence.json has no evaluation day", file=run / "evidence.json",
                             fix="re-index only run folders written by `auditor report`")
        runs.append((document["run"]["evaluated_on"], document["run"].get("started_at", ""), run.name, run, document))
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
    for *_, run, document in runs:
        pending.append(("run", (run, document)))
        pending += [(what, item) for _, what, item in sorted(after.get(run.name, []), key=lambda e: e[0])]
    for what, item in pending:
        if what == "run":
            run, document = item
            bundle = run / "bundle.dsse.json"
            register.record(document, system=system_of(document), run_dir=run,
                            evidence_sha256=sha256_file(run / "evidence.json"),
                            bundle_sha256=sha256_file(bundle) if bundle.is_file() else None,
                            actor="auditor register rebuild")
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
