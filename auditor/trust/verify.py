"""`auditor verify`: every check on a signed run folder, one verdict each — the bundle's signature, every file it
lists, the folder's other entries, evidence.json against the predicate, report.pdf's signature and attachment, the
bundle's trusted time, and the approver's sign-off last."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path
from typing import Any

from auditor.core.errors import InputError
from auditor.core.files import MAX_JSON_BYTES, Unreadable, read_regular, sha256_regular
from auditor.trust.approval import check_approval, load_trusted
from auditor.trust.bundle import check_envelope
from auditor.trust.certificates import load_pubkey, load_trust
from auditor.trust.layout import BUNDLE_NAME, REPORT_PDF
from auditor.trust.pdf_attachment import check_pdf_evidence
from auditor.trust.pdf_verify import check_pdf_signature
from auditor.trust.roles import Roles
from auditor.trust.run_folder import archived_copies, check_folder, check_predicate, check_subject, read_evidence
from auditor.trust.strict_json import json_object
from auditor.trust.token_chain import check_chain
from auditor.trust.verdict import Verdict, shown


def verify_run(run_dir: Path, *, trust: Path | list[Path] | None = None, pubkey: Path | None = None,
               approver_trust: list[Path] | None = None, inputs: bool = False, inputs_root: Path | None = None,
               at: dt.datetime | None = None, require_revocation: bool = False,
               roles: Roles | None = None) -> list[Verdict]:
    """Every check on a signed run folder; the run holds when every verdict is ok (skipped ones included). The
    approver's sign-off (approval.dsse.json), when present, is checked last (`auditor.trust.approval.check_approval`).

    `trust`: certificates (PEM files, possibly several in one, or folders of them) trusted for the signer and the
    time-stamping authority. `inputs`: every input the bundle names must be found and match (`inputs_root`: where
    to look besides the recorded paths). `at`: validate as of this time instead of now (the expiry of a
    certificate, years later)."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise InputError("no such run folder", file=run_dir, fix="give the folder that holds bundle.dsse.json")
    bundle = run_dir / BUNDLE_NAME
    if not os.path.lexists(bundle):
        raise InputError(f"no {BUNDLE_NAME} in this folder (the run was not signed)", file=run_dir,
                         fix="sign runs with a `signing:` block in the spec")
    if inputs_root is not None and not Path(inputs_root).is_dir():
        raise InputError("no such folder", file=inputs_root, where="--inputs-root",
                         fix="give the folder that holds the audit's inputs (model, data, packs)")
    public = load_pubkey(pubkey) if pubkey is not None else None
    trusted = load_trust(trust)
    approvers = load_trusted(approver_trust)

    statement, envelope_verdict = check_envelope(bundle, public)
    if statement is None:
        return [envelope_verdict]
    root = run_dir.resolve()
    listed: set[str] = set()
    verdicts = [envelope_verdict]
    archived = archived_copies(root)
    verdicts += [check_subject(subject, root, listed, authentic=envelope_verdict.ok, inputs=inputs,
                               inputs_root=inputs_root, archived=archived) for subject in statement["subject"]]
    verdicts += check_folder(root, listed)
    predicate = json_object(statement.get("predicate"))
    certified = {s["name"]: s["annotations"]["certified_bytes"] for s in statement["subject"]
                 if isinstance(s, dict) and isinstance(s.get("annotations"), dict)
                 and isinstance(s["annotations"].get("certified_bytes"), int)}
    verdicts += _check_contents(root, listed, predicate, trusted, at=at, require_revocation=require_revocation,
                                certified=certified)
    verdicts += check_chain(root, bundle, trusted, at=at,
                            expected=bool(json_object(predicate.get("signer")).get("timestamp_authority")))
    try:
        bundle_sha256: str | None = sha256_regular(bundle, follow=False)
    except Unreadable:
        bundle_sha256 = None
    return verdicts + check_approval(root, bundle_sha256=bundle_sha256, bundle_predicate=predicate,
                                     trusted=approvers, tsa_roots=trusted, at=at, not_before=_made(predicate),
                                     require_revocation=require_revocation, roles=roles)


def _made(predicate: dict[str, Any]) -> dt.datetime | None:
    """The earliest the run can have existed: its evaluation day's start (an approval dated before is a lie)."""
    try:
        return dt.datetime.fromisoformat(str(predicate.get("evaluated_on"))).replace(tzinfo=dt.UTC)
    except ValueError:
        return None


def _check_contents(root: Path, listed: set[str], predicate: dict[str, Any], trusted: Any, *,
                    at: dt.datetime | None = None, require_revocation: bool = False,
                    certified: dict[str, int] | None = None) -> list[Verdict]:
    """What evidence.json and the signed PDFs say, beyond their hashes: the predicate's claims, each PDF's signature
    and its attachment."""
    certified = certified or {}
    verdicts: list[Verdict] = []
    evidence = None
    if "evidence.json" in listed:
        evidence, problem = read_evidence(root / "evidence.json")
        verdicts.append(check_predicate(predicate, evidence) if problem is None
                        else Verdict(False, "evidence.json (predicate)", f"not compared: {problem}"))
    signer = json_object(predicate.get("signer"))
    # report.pdf, and the run's other PDF documents the bundle pins as certified (dsa-audit.pdf, ll144-summary.pdf)
    for name in [REPORT_PDF, *sorted(n for n in certified if n != REPORT_PDF and "/" not in n)]:
        if name not in listed:
            continue
        try:
            data = read_regular(root / name, limit=MAX_JSON_BYTES, follow=False)
        except Unreadable as exc:
            verdicts.append(Verdict(False, f"{name} (signature)", f"not checked: {exc}"))
            continue
        verdicts += check_pdf_signature(data, trusted, certificate_sha256=signer.get("certificate_sha256"), at=at,
                                        require_revocation=require_revocation, certified_bytes=certified.get(name),
                                        file=name)
        verdicts.append(check_pdf_evidence(data, evidence, file=name))
    return verdicts


def parse_moment(text: str | None) -> dt.datetime | None:
    """`--at`: an ISO 8601 time (a date alone is its midnight UTC; no zone means UTC)."""
    if text is None:
        return None
    try:
        moment = dt.datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise InputError(f"not an ISO 8601 time: {shown(text, limit=60)}", where="--at",
                         fix="write e.g. 2031-01-01 or 2031-01-01T12:00:00Z") from None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=dt.UTC)
