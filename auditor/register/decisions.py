"""Decisions taken on a run, recorded in the register by the command that takes them (`auditor approve`): trust code
signs and checks them, this module only files them."""

from __future__ import annotations

from pathlib import Path

from auditor.errors import InputError
from auditor.register.review import DEFAULT_NAME
from auditor.register.store import Register
from auditor.trust.approval import Approval


def open_for_run(run_dir: Path, location: str | None) -> tuple[Register | None, str | None]:
    """(Register or None, a note when there is none): `--register`, else register.sqlite beside the run folder
    (where `auditor report` records it). A missing default register is a note; any other fault is an error,
    raised before anything is written."""
    if location is not None and location.lower() in ("off", "false", "none"):
        return None, "not recorded in a register (--register off)"
    if location is None:
        default = Path(run_dir).absolute().parent / DEFAULT_NAME
        if not default.exists():
            return None, (f"no register at {default}: the decision is in approval.dsse.json only (`--register` names "
                          "another register)")
        location = str(default)
    return Register(location, create=False), None


def record_approval(register: Register, run_dir: Path, approval: Approval, bundle_sha256: str) -> str:
    """The decision into the register; a note saying where it went. A fault is an InputError saying the file was
    written all the same."""
    predicate = approval.predicate
    try:
        known = register.has_run(run_dir)
        register.record_approval(run_dir=run_dir, bundle_sha256=bundle_sha256, decision=predicate["decision"],
                                 approver=predicate["approver"], reason=predicate["reason"],
                                 statement_sha256=approval.statement_sha256)
    except InputError as exc:
        raise InputError(f"{exc.problem} (approval.dsse.json was written; the register was not updated)",
                         file=exc.file, fix=exc.fix) from None
    if known:
        return f"recorded in the register {register.shown}"
    return (f"recorded in the register {register.shown}, which does not hold this run (recorded by its bundle "
            "digest only)")
