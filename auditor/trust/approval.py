"""The approver's sign-off (four eyes): `auditor approve` signs a decision over a run's bundle, `verify` checks it.

- `inspect_run`: the run is signed (bundle.dsse.json), every file it lists re-hashes to the listed sha256, nothing
  unlisted lies in the folder, evidence.json says what the bundle's predicate says, and it has no approval yet.
  The bundle's Ed25519 signature is not checked here (that needs the tool's public key): the approval covers the
  bundle's exact bytes, so `verify` with the genuine key tells whether what was approved is genuine.
- the approver's key: a PKCS#12 file or a PKCS#11 token (`trust.identity`), never the run's signing identity.
- `write_approval`: an in-toto Statement v1 whose one subject is `bundle.dsse.json` with its sha256 (predicate
  `urn:auditor:approval:v1`: decision, approver, certificate, reason, time, the run's title, opinion and day), in a
  DSSE envelope signed by the approver's key, the certificate (PEM) in the signature entry; written as
  approval.dsse.json beside the bundle, atomically and never over an existing one. The approver's certificate must
  not be the one that signed report.pdf, nor carry its key or the bundle key (four eyes: two identities). The
  signature entry carries the approver's chain, revocation data and, with a TSA, a token over the signature.
- `check_approval`: what `verify` prints about it: the signature by the certificate it carries, the subject equal
  to this run's bundle, the predicate well-formed, its time (the TSA's, or claimed); and the approver's
  certificate against `--approver-trust` (a CA or the very certificate), chain and revocation at that time.

Everything read from the folder is strict JSON (`trust.strict_json`) and every printed string is escaped
(`trust.verdict.shown`, in `Verdict.line`). Recording the decision in the register is the command's
(`auditor.register.decisions`).
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import datetime as dt
import hashlib
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from auditor.core.errors import InputError
from auditor.core.files import MAX_JSON_BYTES, MAX_SMALL_BYTES, Unreadable, read_regular
from auditor.trust.certificates import key_names, load_cert, quiet_pyhanko
from auditor.trust.dsse import envelope, pae, parse_envelope, statement_bytes
from auditor.trust.identity import Identity, check_entry, parse_certificates, signature_entry, verify_entry_signature
from auditor.trust.layout import (
    APPROVAL_NAME,
    APPROVAL_PREDICATE_TYPE,
    BUNDLE_NAME,
    PAYLOAD_TYPE,
    PDF_FIELD,
    STATEMENT_TYPE,
)
from auditor.trust.pdf_approval import approval_state, approve_pdf, check_pdf_approval, pinned
from auditor.trust.pdf_revisions import pdf_reader
from auditor.trust.roles import Roles, normalised
from auditor.trust.run_folder import check_folder, check_predicate, check_subject, read_evidence
from auditor.trust.strict_json import BadJSON, json_object, strict_json
from auditor.trust.timestamps import describe_utc
from auditor.trust.verdict import Verdict, quoted, shown

__all__ = ["APPROVAL_NAME", "APPROVAL_PREDICATE_TYPE", "check_approval", "inspect_run", "write_approval"]

DECISIONS = ("approved", "rejected")
REPORT_PDF = "report.pdf"
MAX_APPROVER_CHARS = 200  # --as
MAX_REASON_CHARS = 2_000  # --reason
_SHA256 = re.compile(r"[0-9a-f]{64}")
_FIX_VERIFY = "run `auditor verify` on it: only a signed run that matches its bundle can be approved"


# --- the run --------------------------------------------------------------------------------------------------------

@dataclass
class RunToApprove:
    """A signed run that matches its bundle: what the approval covers and names."""

    run_dir: Path
    bundle_sha256: str  # of the bytes checked, which the approval covers
    predicate: dict[str, Any]  # the bundle's
    signer_sha256: str  # the certificate that signed report.pdf, as the predicate names it
    signer_keys: list[bytes]  # public keys (SubjectPublicKeyInfo DER, raw Ed25519) of the tool's signing identity


def inspect_run(run_dir: Path) -> RunToApprove:
    """The run folder, if it can be approved; else one InputError line (not signed, changed since signing,
    approved already)."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise InputError("no such run folder", file=run_dir, fix="give the run folder (it holds bundle.dsse.json)")
    existing = run_dir / APPROVAL_NAME
    if os.path.lexists(existing):
        raise InputError(f"the run has a decision already ({_describe_existing(existing)}); a run is signed off "
                         "once", file=existing, fix="to record another decision, move approval.dsse.json out of the "
                         "run folder first (the register keeps every decision recorded)")
    bundle = run_dir / BUNDLE_NAME
    if not os.path.lexists(bundle):
        raise InputError("the run is not signed (no bundle.dsse.json): only a signed run can be approved",
                         file=run_dir, fix="add a `signing:` block to the spec and run the audit again")
    try:
        data = read_regular(bundle, limit=MAX_SMALL_BYTES, follow=False)
        statement, _payload, _signatures = parse_envelope(data)
    except Unreadable as exc:
        raise InputError(f"bundle.dsse.json is {exc}", file=run_dir, fix=_FIX_VERIFY) from None
    except ValueError as exc:
        raise InputError(f"bundle.dsse.json is unreadable ({shown(str(exc))})", file=run_dir, fix=_FIX_VERIFY) \
            from None
    root = run_dir.resolve()
    listed: set[str] = set()
    problems = [v for v in (check_subject(s, root, listed, authentic=False) for s in statement["subject"])
                if not v.ok]
    problems += check_folder(root, listed)
    predicate = json_object(statement.get("predicate"))
    if "evidence.json" in listed:
        evidence, problem = read_evidence(root / "evidence.json")
        verdict = check_predicate(predicate, evidence) if problem is None \
            else Verdict(False, "evidence.json (predicate)", problem)
        problems += [] if verdict.ok else [verdict]
    else:
        problems.append(Verdict(False, "evidence.json", "not listed in the bundle"))
    if problems:
        first = problems[0]
        count = f"{len(problems)} problems, the first" if len(problems) > 1 else "1 problem"
        raise InputError(f"the run does not match its bundle ({count}: {shown(first.subject)}: "
                         f"{shown(first.message)})", file=run_dir, fix=_FIX_VERIFY)
    signer = json_object(predicate.get("signer"))
    signer_sha256 = signer.get("certificate_sha256")
    if not isinstance(signer_sha256, str) or not _SHA256.fullmatch(signer_sha256):
        raise InputError("the bundle names no signer certificate (signer.certificate_sha256), so the approver "
                         "cannot be told apart from the signer", file=run_dir, fix=_FIX_VERIFY)
    keys = [bytes.fromhex(k) for k in [signer.get("bundle_keyid")] if isinstance(k, str) and _SHA256.fullmatch(k)]
    if "report.pdf" in listed:
        keys += _pdf_signer_keys(root / "report.pdf")
    pem = signer.get("certificate_pem")  # the report signer's certificate, named even when there is no report.pdf
    if isinstance(pem, str):
        from cryptography import x509

        with contextlib.suppress(ValueError):
            keys += key_names(x509.load_pem_x509_certificate(pem.encode("utf-8")).public_key())
    return RunToApprove(run_dir=run_dir, bundle_sha256=hashlib.sha256(data).hexdigest(), predicate=predicate,
                        signer_sha256=signer_sha256, signer_keys=keys)


def _describe_existing(path: Path) -> str:
    """"approved by "X" on D", read without trusting it (the line only names what is there)."""
    try:
        statement = strict_json(base64.b64decode(strict_json(read_regular(path, limit=MAX_SMALL_BYTES, follow=False),
                                                             "approval")["payload"], validate=True), "statement")
        predicate = statement["predicate"]
        return f"{predicate['decision']} by {quoted(predicate['approver'])} on {str(predicate['time'])[:10]}"
    except (Unreadable, ValueError, KeyError, TypeError):
        return "approval.dsse.json is present"


def _pdf_signer_keys(path: Path) -> list[bytes]:
    """The public key (SubjectPublicKeyInfo DER) of report.pdf's signing certificate: the same key in a new
    certificate is the same identity. The signature itself is `verify`'s to judge; an unreadable PDF adds no key
    (its sha256 matched the bundle, so it is the PDF the tool signed)."""

    with quiet_pyhanko(), contextlib.suppress(Exception):
        reader = pdf_reader(read_regular(path, limit=MAX_JSON_BYTES, follow=False))
        return [s.signer_cert.public_key.dump() for s in reader.embedded_regular_signatures
                if s.field_name == PDF_FIELD]
    return []


# --- writing ------------------------------------------------------------------------------------------------------

@dataclass
class Approval:
    path: Path
    statement_sha256: str
    predicate: dict[str, Any]
    in_pdf: str  # what became of report.pdf: the decision signed inside it, or why it keeps its draft status


def write_approval(run: RunToApprove, approver: Identity, *, name: str, decision: str, reason: str | None,
                   now: dt.datetime | None = None, timestamp_url: str | None = None,
                   tsa_roots: list[Any] | None = None, roles: Roles | None = None) -> Approval:
    """Sign the decision over the run's bundle and write approval.dsse.json into the run folder: the approver's
    certificate, chain and revocation data in the signature entry, and, with a TSA, its token over the signature
    (`identity.signature_entry`)."""
    from auditor import __version__

    name, reason = name.strip(), (reason.strip() if reason is not None else None) or None
    if decision not in DECISIONS:
        raise InputError(f"unknown decision {decision!r}", fix=f"one of {', '.join(DECISIONS)}")
    if not name:
        raise InputError("--as is empty", fix='say who approves and in which role: --as "Jane Roe, Head of Model Risk"')
    if len(name) > MAX_APPROVER_CHARS or (reason is not None and len(reason) > MAX_REASON_CHARS):
        raise InputError(f"--as is limited to {MAX_APPROVER_CHARS} characters and --reason to {MAX_REASON_CHARS}",
                         fix="shorten it")
    if decision == "rejected" and reason is None:
        raise InputError("a rejection needs a reason", fix='add --reason "what must change"')
    names = key_names(approver.certificate.public_key())
    if approver.sha256 == run.signer_sha256 or (names | {hashlib.sha256(n).digest() for n in names}) \
            & set(run.signer_keys):
        raise InputError("the approver's key is the tool's signing identity, which signed this run: an approval "
                         "needs a second identity (four eyes)", file=run.run_dir,
                         fix="approve with the approver's own key (`auditor keygen --name \"Your Name\"` makes one)")
    refused = who_may_not_approve(approver.subject, run.predicate)
    if refused is not None:
        raise InputError(refused, file=run.run_dir, fix="approve with the key of the person the spec and the roles "
                         "name as the approver")
    bundle = run.run_dir / BUNDLE_NAME
    try:
        data = read_regular(bundle, limit=MAX_SMALL_BYTES, follow=False)
        same = hashlib.sha256(data).hexdigest() == run.bundle_sha256
    except Unreadable:
        same = False
    if not same:
        raise InputError("bundle.dsse.json changed while the approval was being prepared", file=run.run_dir,
                         fix=_FIX_VERIFY)
    when = (now or dt.datetime.now(dt.UTC)).astimezone(dt.UTC).replace(microsecond=0)
    audit = json_object(run.predicate.get("audit"))
    predicate = {
        "decision": decision,
        "approver": name,
        "approver_certificate": {"subject": approver.subject, "sha256": approver.sha256},
        "reason": reason,
        "time": when.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "run": {"name": run.run_dir.resolve().name, "audit_title": audit.get("title"),
                "opinion": run.predicate.get("opinion"), "evaluated_on": run.predicate.get("evaluated_on"),
                "signer_certificate_sha256": run.signer_sha256},
        "tool": {"name": "auditor", "version": __version__},
    }
    approved, in_pdf = _approved_pdf(run, approver, decision=decision, name=name, day=when.date().isoformat(),
                                     reason=reason, timestamp_url=timestamp_url)
    if approved is not None:
        predicate["report_pdf"] = pinned(approved)
    statement = {"_type": STATEMENT_TYPE, "predicateType": APPROVAL_PREDICATE_TYPE, "predicate": predicate,
                 "subject": [{"name": BUNDLE_NAME, "digest": {"sha256": run.bundle_sha256}}]}
    payload = statement_bytes(statement)
    entry = signature_entry(approver, pae(PAYLOAD_TYPE, payload), timestamp_url=timestamp_url, tsa_roots=tsa_roots)
    refused = roles.refuses(entry, "approver", claimed=when, tsa_roots=tsa_roots) if roles is not None else None
    if refused is not None:
        raise InputError(refused, where="--roles", fix="approve with the key of someone the roles file names as an "
                         "approver, whose certificate chains to --roles-trust")
    path = run.run_dir / APPROVAL_NAME
    staged = _stage(run.run_dir, approved) if approved is not None else None
    try:
        _write_once(path, envelope(payload, [entry]))
        if staged is not None:
            os.replace(staged, run.run_dir / REPORT_PDF)
            staged = None
    finally:
        if staged is not None:
            with contextlib.suppress(OSError):
                os.unlink(staged)
    return Approval(path=path, statement_sha256=hashlib.sha256(payload).hexdigest(), predicate=predicate,
                    in_pdf=in_pdf)


def _approved_pdf(run: RunToApprove, approver: Identity, *, decision: str, name: str, day: str,
                  reason: str | None, timestamp_url: str | None) -> tuple[bytes | None, str]:
    """report.pdf with the decision signed inside it (`pdf_approval`) and a sentence saying so; or None and why
    report.pdf keeps its status."""
    path = run.run_dir / REPORT_PDF
    if not os.path.lexists(path):
        return None, "the run has no report.pdf"
    try:
        pdf = read_regular(path, limit=MAX_JSON_BYTES, follow=False)
    except Unreadable as exc:
        raise InputError(f"cannot read report.pdf ({exc})", file=path, fix=_FIX_VERIFY) from None
    state = approval_state(pdf)
    if state == "signed":
        raise InputError("report.pdf is signed in its approval field already; a run is signed off once", file=path,
                         fix="keep the decision it holds")
    if state == "none":
        return None, ("report.pdf was certified allowing no change (signed before the approval field existed): "
                      "the decision is in approval.dsse.json alone")
    if approver.pdf_signer is None or not approver.alg.startswith("rsa"):
        # pyHanko marks a PDF signed with ECDSA or EdDSA as PDF 2.0 (ISO 32002), which a PDF/A-3 report is not
        return None, ("report.pdf keeps its draft status: an ECDSA or Ed25519 signature would make it a PDF 2.0 "
                      "file, which its PDF/A-3 archival form is not; the decision is in approval.dsse.json alone "
                      "(an RSA key signs inside the PDF)")
    approved = approve_pdf(pdf, approver.pdf_signer, decision=decision, approver=name, day=day, reason=reason,
                           certificate_subject=approver.subject, certificate_sha256=approver.sha256,
                           timestamp_url=timestamp_url)
    return approved, f"report.pdf: {decision} in its approval field, the status on every page filled"


def _stage(folder: Path, data: bytes) -> Path:
    """`data` in a temporary file of `folder`, flushed to disk: the approved report.pdf, renamed into place once
    approval.dsse.json is written (so a failed approval leaves report.pdf as it was)."""
    try:
        fd, tmp = tempfile.mkstemp(prefix=".report.pdf.", suffix=".tmp", dir=folder)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o644)
    except OSError as exc:
        raise InputError(f"cannot write into the run folder ({exc.strerror})", file=folder,
                         fix="check that the run folder is writable") from None
    return Path(tmp)


def _write_once(path: Path, data: bytes) -> None:
    """`data` as `path`, complete or absent: written to a temporary file beside it, then linked into place, which
    fails when `path` exists (another approval recorded meanwhile is never replaced)."""
    exists = InputError("the run has a decision already (approval.dsse.json appeared meanwhile)", file=path,
                        fix="move it out of the run folder first to record another decision")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{APPROVAL_NAME}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise InputError(f"cannot write into the run folder ({exc.strerror})", file=path.parent,
                         fix="check that the run folder is writable") from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o644)  # as the run's other files: the approval is for every reader of the run
        try:
            os.link(tmp, path)
        except FileExistsError:
            raise exists from None
        except OSError:  # a file system without hard links: the check and the rename are not one step
            if os.path.lexists(path):
                raise exists from None
            os.replace(tmp, path)
    except OSError as exc:
        raise InputError(f"cannot write approval.dsse.json ({exc.strerror})", file=path.parent,
                         fix="check that the run folder is writable") from None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
    with contextlib.suppress(OSError):  # the new name durable too
        folder = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)


# --- verify ---------------------------------------------------------------------------------------------------------

@dataclass
class _Parsed:
    predicate: dict[str, Any]
    covers: str  # the bundle sha256 it names
    certificate_sha256: str
    subject: str  # of the certificate, RFC 4514
    valid: tuple[dt.datetime, dt.datetime]  # the certificate's validity
    entry: dict[str, Any]  # the signature entry (certificate, chain, validation data, timestamp)


def read_approval(path: Path) -> dict[str, Any] | None:
    """A run's decision as `Register.record_approval` takes it, from its approval.dsse.json (its signature checked
    with the certificate it carries; who that is, `verify --approver-trust` says); None when the file is no valid
    approval. For `auditor register rebuild`."""
    try:
        return approval_record(read_regular(path, limit=MAX_SMALL_BYTES, follow=False))
    except (ValueError, OSError, Unreadable):
        return None


def approval_record(data: bytes) -> dict[str, Any]:
    """An approval envelope as `Register.record_approval` takes it (and `time`), its signature checked with the
    certificate it carries; ValueError when it is no valid approval. For rebuilding and checking the register."""
    try:
        parsed = _parse(data)
        payload = base64.b64decode(strict_json(data, APPROVAL_NAME)["payload"], validate=True)
    except (BadJSON, binascii.Error) as exc:
        raise ValueError(f"malformed: {exc}") from None
    return {"bundle_sha256": parsed.covers, "decision": parsed.predicate["decision"], "approver": parsed.subject,
            "reason": parsed.predicate.get("reason"), "statement_sha256": hashlib.sha256(payload).hexdigest(),
            "statement": data.decode("utf-8"), "time": parsed.predicate["time"]}


def check_approval(root: Path, *, bundle_sha256: str | None, bundle_predicate: dict[str, Any],
                   trusted: list[Any] | None, tsa_roots: list[Any] | None = None, at: dt.datetime | None = None,
                   not_before: dt.datetime | None = None, require_revocation: bool = False,
                   roles: Roles | None = None) -> list[Verdict]:
    """`verify`'s lines on approval.dsse.json: none (not approved, not a failure), or the decision with its
    signature, coverage and time; then the approver's identity against the --approver-trust certificates (an
    approver's CA, or the very certificate), validated at the approval's time with the revocation data it carries;
    then, when a certificate of its chain names no revocation source, a line saying its revocation was not
    checked. The time is the TSA's when the approval carries a token (`tsa_roots`: the --trust certificates), else
    the approver's claim: then the certificate must still be valid at `at` (default now), and the claim may lie
    neither ahead of it nor before the run (`not_before`)."""
    name = "approval"
    path = root / APPROVAL_NAME
    if not os.path.lexists(path):
        inside = _pdf_approval(root, None)
        return [Verdict(True, name, "the run is not approved (no approval.dsse.json)", skipped=True),
                *([inside] if inside is not None else [])]
    try:
        parsed = _parse(read_regular(path, limit=MAX_SMALL_BYTES, follow=False))
    except Unreadable as exc:
        return [Verdict(False, name, f"approval.dsse.json is {exc}")]
    except ValueError as exc:
        return [Verdict(False, name, str(exc))]
    predicate = parsed.predicate
    claimed = dt.datetime.strptime(predicate["time"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.UTC)
    facts = check_entry(parsed.entry, claimed=claimed, roots=trusted, tsa_roots=tsa_roots or [], at=at,
                        not_before=not_before, require_revocation=require_revocation)
    when = (f"on {describe_utc(facts.time)}, {facts.trusted_time}" if facts.trusted_time else
            f"on {describe_utc(claimed)} (a time claimed by the approver: no trusted timestamp)")
    who = f"{predicate['decision']} by {quoted(predicate['approver'])} (certificate {parsed.subject}) {when}"
    problems = list(facts.problems)
    if bundle_sha256 is None:
        problems.append("not compared with this run's bundle: bundle.dsse.json is unreadable")
    elif parsed.covers != bundle_sha256:
        problems.append(f"covers another run: it names bundle sha256 {parsed.covers[:12]}…, this run's is "
                        f"{bundle_sha256[:12]}…")
    signer = json_object(bundle_predicate.get("signer"))
    if parsed.certificate_sha256 == signer.get("certificate_sha256"):
        problems.append("signed with the certificate that signed report.pdf: an approval needs a second identity")
    elif _same_key_as_signer(parsed.entry, signer):
        problems.append("signed with the key of the tool's signing identity, in another certificate: an approval "
                        "needs a second identity")
    refused = who_may_not_approve(parsed.subject, bundle_predicate)
    if refused is None and roles is not None:
        refused = roles.refuses(parsed.entry, "approver", claimed=claimed, tsa_roots=tsa_roots)
    if refused is not None:
        problems.append(refused)
    audit = json_object(bundle_predicate.get("audit"))
    run = json_object(predicate.get("run"))
    stated = {"audit_title": audit.get("title"), "opinion": bundle_predicate.get("opinion"),
              "evaluated_on": bundle_predicate.get("evaluated_on")}
    differ = [key for key, value in stated.items() if run.get(key) != value]
    if differ and not problems:  # covering another bundle says it already
        problems.append(f"it states another {', '.join(differ)} than this run's bundle")
    inside = _pdf_approval(root, parsed) if parsed.covers == bundle_sha256 else None  # another run's: said above
    if problems:
        return [Verdict(False, name, f"{who}: {'; '.join(problems)}"), *([inside] if inside is not None else [])]
    reason = f" (reason: {quoted(predicate['reason'])})" if predicate.get("reason") else ""
    verdicts = [Verdict(True, name, f"{who}{reason}, covers this run's bundle")]
    if inside is not None:
        verdicts.append(inside)
    identity = f"{parsed.subject}, sha256 {parsed.certificate_sha256[:16]}…"
    if not trusted:
        verdicts.append(Verdict(True, "approval (approver)", f"identity not checked against a trusted certificate "
                                f"({identity}; give --approver-trust)", skipped=True))
        return verdicts
    verdicts.append(Verdict(facts.identity_ok, "approval (approver)", facts.identity or "not checked"))
    if facts.identity_ok and facts.unchecked_revocation:
        whose = "its certificate names" if len(facts.unchecked_revocation) == 1 else "their certificates name"
        verdicts.append(Verdict(True, "approval (revocation)", f"not checked for "
                                f"{'; '.join(facts.unchecked_revocation)}: {whose} no OCSP responder and no CRL "
                                "(`--require-revocation` makes this a failure)", skipped=True))
    return verdicts


def who_may_not_approve(subject: str, bundle_predicate: dict[str, Any]) -> str | None:
    """Why this person may not approve this run, or None: the run's signer under another key (the same subject is
    the same person), the auditor the spec names, or someone other than the approver the spec names. (The roles
    file is asked apart: `Roles.refuses`.)"""
    me = normalised(subject)
    signer = json_object(bundle_predicate.get("signer")).get("subject")
    if isinstance(signer, str) and normalised(signer) == me:
        return (f"{subject} signed this run (with another key: the same certificate subject is the same person); an "
                "approval needs a second person")
    audit = json_object(bundle_predicate.get("audit"))
    auditor = audit.get("auditor_subject")
    if isinstance(auditor, str) and normalised(auditor) == me:
        return f"the spec names {subject} as the audit's auditor (audit.auditor_subject); the auditor cannot approve"
    approver = audit.get("approver_subject")
    if isinstance(approver, str) and normalised(approver) != me:
        return f"the spec names {approver} as the approver (audit.approver_subject), not {subject}"
    return None


def _same_key_as_signer(entry: dict[str, Any], signer: dict[str, Any]) -> bool:
    """Whether the approval's certificate carries the key of the run's signing identity: the bundle key (its id is
    the sha256 of a raw Ed25519 key, or of an RSA key's SubjectPublicKeyInfo) or the report signer's certificate's
    key (`certificate_pem`, which the predicate's signer details hold since runs name it)."""
    from cryptography import x509

    try:
        cert, _ = parse_certificates(entry)
        names = key_names(cert.public_key())
    except ValueError:
        return False
    bundle_key = signer.get("bundle_keyid")
    own = {bytes.fromhex(bundle_key)} if isinstance(bundle_key, str) and _SHA256.fullmatch(bundle_key) else set()
    pem = signer.get("certificate_pem")
    if isinstance(pem, str):
        with contextlib.suppress(ValueError):
            own |= key_names(x509.load_pem_x509_certificate(pem.encode("utf-8")).public_key())
    spki_ids = {hashlib.sha256(n).digest() for n in names}  # an RSA bundle key's id: sha256 of its SPKI DER
    return bool((names | spki_ids) & own)


def _parse(data: bytes) -> _Parsed:
    """The approval envelope, its signature checked with the certificate it carries, then its statement; ValueError
    naming the first thing wrong."""
    from cryptography.hazmat.primitives import hashes

    try:
        document = strict_json(data, "approval.dsse.json")
    except BadJSON as exc:
        raise ValueError(f"malformed: {exc}") from None
    if not isinstance(document, dict) or document.get("payloadType") != PAYLOAD_TYPE \
            or not isinstance(document.get("payload"), str):
        raise ValueError(f"malformed: not a DSSE envelope with payloadType {PAYLOAD_TYPE}")
    signatures = document.get("signatures")
    if not isinstance(signatures, list) or len(signatures) != 1 or not isinstance(signatures[0], dict) \
            or not isinstance(signatures[0].get("sig"), str) or not isinstance(signatures[0].get("certificate"), str):
        raise ValueError("malformed: expected one signature with its certificate (PEM)")
    entry = signatures[0]
    try:
        payload = base64.b64decode(document["payload"], validate=True)
    except binascii.Error:
        raise ValueError("malformed: the payload or the signature is not base64") from None
    cert, _chain = parse_certificates(entry)
    verify_entry_signature(entry, pae(PAYLOAD_TYPE, payload))
    fingerprint = cert.fingerprint(hashes.SHA256()).hex()
    try:
        statement = strict_json(payload, "the approval's statement")
    except BadJSON as exc:
        raise ValueError(f"malformed: {exc}") from None
    if not isinstance(statement, dict) or statement.get("_type") != STATEMENT_TYPE \
            or statement.get("predicateType") != APPROVAL_PREDICATE_TYPE:
        raise ValueError(f"malformed: not an in-toto Statement v1 with predicateType {APPROVAL_PREDICATE_TYPE}")
    subjects = statement.get("subject")
    subject = subjects[0] if isinstance(subjects, list) and len(subjects) == 1 else None
    digest = subject.get("digest") if isinstance(subject, dict) else None
    covers = digest.get("sha256") if isinstance(digest, dict) else None
    if not isinstance(subject, dict) or subject.get("name") != BUNDLE_NAME or not isinstance(covers, str) \
            or not _SHA256.fullmatch(covers):
        raise ValueError(f"malformed: the statement's one subject must be {BUNDLE_NAME} with its sha256")
    return _Parsed(predicate=_predicate(statement.get("predicate"), fingerprint), covers=covers,
                   certificate_sha256=fingerprint, subject=cert.subject.rfc4514_string(),
                   valid=(cert.not_valid_before_utc, cert.not_valid_after_utc), entry=entry)


def _pdf_approval(root: Path, parsed: _Parsed | None) -> Verdict | None:
    """The decision inside report.pdf against approval.dsse.json (`parsed`; None when the run has none): None when
    neither records one there."""
    path = root / REPORT_PDF
    recorded = parsed.predicate.get("report_pdf") if parsed is not None else None
    if not os.path.lexists(path):
        return None if recorded is None else Verdict(False, "report.pdf (approval signature)",
                                                     "approval.dsse.json records a signature inside report.pdf, "
                                                     "which is missing")
    try:
        pdf = read_regular(path, limit=MAX_JSON_BYTES, follow=False)
    except Unreadable as exc:
        return Verdict(False, "report.pdf (approval signature)", f"not checked: {exc}")
    verdict = check_pdf_approval(pdf, certificate_sha256=None if parsed is None else parsed.certificate_sha256,
                                 decision=None if parsed is None else parsed.predicate["decision"], recorded=recorded)
    if verdict is None and recorded is not None:
        return Verdict(False, "report.pdf (approval signature)", "approval.dsse.json records a signature inside "
                       "report.pdf, which holds none")
    return verdict


def _predicate(predicate: Any, fingerprint: str) -> dict[str, Any]:
    if not isinstance(predicate, dict):
        raise ValueError("malformed: no predicate")
    if predicate.get("decision") not in DECISIONS:
        raise ValueError(f"malformed: the decision is not one of {', '.join(DECISIONS)}")
    if not isinstance(predicate.get("approver"), str) or not predicate["approver"].strip():
        raise ValueError("malformed: no approver")
    reason = predicate.get("reason")
    if reason is not None and not isinstance(reason, str):
        raise ValueError("malformed: the reason is not a string")
    if predicate["decision"] == "rejected" and not reason:
        raise ValueError("malformed: a rejection without a reason")
    try:
        dt.datetime.strptime(str(predicate.get("time")), "%Y-%m-%dT%H:%M:%SZ")
    except ValueError:
        raise ValueError("malformed: the time is not YYYY-MM-DDTHH:MM:SSZ") from None
    named = predicate.get("approver_certificate")
    if not isinstance(named, dict) or named.get("sha256") != fingerprint:
        raise ValueError("the predicate names another approver certificate than the one that signed it")
    return predicate


def load_trusted(paths: list[Path] | None) -> list[Any]:
    """The --approver-trust certificates (PEM or DER); a bad file is bad input."""
    return [load_cert(p) for p in paths or []]
