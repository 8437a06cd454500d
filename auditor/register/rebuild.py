"""Re-index run folders into a register: the register is an index of the evidence, which lives in the run folders.

Each run folder's evidence.json is recorded as `auditor report` would have recorded it, oldest evaluation first, so
findings open, are seen and are remediated in the order the reviews happened. What only the register held —
responses and acceptances recorded with `auditor findings respond|accept` — is not in the folders: keep the register
backed up (docs/governance.md). Approvals are: each run's approval.dsse.json is indexed with it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from auditor.diff import load_run
from auditor.errors import InputError
from auditor.register.store import Register

MAX_RUN_FOLDERS = 100_000


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


def rebuild(folder: Path, location: str) -> list[Path]:
    """Record every run folder under `folder` that the register lacks. Returns the folders added, in order."""
    register = Register(location)
    pending = []
    for run in run_folders(Path(folder)):
        if register.has_run(run):
            continue
        document = load_run(run)
        if "run" not in document or "evaluated_on" not in document["run"]:
            raise InputError("evidence.json has no evaluation day", file=run / "evidence.json",
                             fix="re-index only run folders written by `auditor report`")
        pending.append((document["run"]["evaluated_on"], document["run"].get("started_at", ""), run, document))
    pending.sort(key=lambda item: (item[0], item[1], item[2].name))
    from auditor.files import sha256_file
    from auditor.trust.approval import APPROVAL_NAME, read_approval

    for _, _, run, document in pending:
        bundle = run / "bundle.dsse.json"
        register.record(document, system=system_of(document), run_dir=run,
                        evidence_sha256=sha256_file(run / "evidence.json"),
                        bundle_sha256=sha256_file(bundle) if bundle.is_file() else None,
                        actor="auditor register rebuild")
        decision = read_approval(run / APPROVAL_NAME) if (run / APPROVAL_NAME).is_file() else None
        if decision is not None:  # the approver's sign-off kept beside the run
            register.record_approval(run_dir=run, **decision)
    return [item[2] for item in pending]
