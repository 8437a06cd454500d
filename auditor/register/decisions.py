"""Decisions taken on a run, recorded in the register by the command that takes them (`auditor approve`): trust code
signs and checks them, this module only files them."""

from __future__ import annotations

import os
from pathlib import Path

from auditor.core.errors import InputError
from auditor.core.urls import switched_off
from auditor.register.review import DEFAULT_NAME
from auditor.register.store import Register
from auditor.trust.approval import Approval

REGISTER_ENV = "AUDITOR_REGISTER"


def open_for_run(run_dir: Path, location: str | None,
                 recorded_in: str | None = None) -> tuple[Register | None, str | None]:
    """(Register or None, a note when there is none): `--register`, else the register the run's bundle says it was
    recorded in (`recorded_in`), else $AUDITOR_REGISTER, else register.sqlite beside the run folder. A register
    that cannot be found is a note (the decision is then in the run folder alone, and the note says so); any other
    fault is an error, raised before anything is written."""
    if switched_off(location):
        return None, "not recorded in a register (--register off)"
    if location is None:
        candidates = [c for c in (recorded_in, os.environ.get(REGISTER_ENV)) if c]
        candidates.append(str(Path(run_dir).absolute().parent / DEFAULT_NAME))
        found = next((c for c in candidates if "://" in c or Path(c).is_file()), None)
        if found is None:
            return None, (f"no register found ({', '.join(candidates)}): the decision is in approval.dsse.json "
                          "only (`--register` names the register)")
        location = found
    return Register(location, create=False), None


def record_approval(register: Register, run_dir: Path, approval: Approval, bundle_sha256: str) -> str:
    """The decision into the register; a note saying where it went. A fault is an InputError saying the file was
    written all the same."""
    predicate = approval.predicate
    try:
        known = register.has_run(run_dir)
        register.record_approval(run_dir=run_dir, bundle_sha256=bundle_sha256, decision=predicate["decision"],
                                 approver=predicate["approver_certificate"]["subject"], reason=predicate["reason"],
                                 statement_sha256=approval.statement_sha256,
                                 statement=approval.path.read_text(encoding="utf-8"))
    except InputError as exc:
        raise InputError(f"{exc.problem} (approval.dsse.json was written; the register was not updated)",
                         file=exc.file, fix=exc.fix) from None
    if known:
        return f"recorded in the register {register.shown}"
    return (f"recorded in the register {register.shown}, which does not hold this run (recorded by its bundle "
            "digest only)")
