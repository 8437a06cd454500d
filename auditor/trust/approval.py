"""The approver's sign-off (four eyes): `auditor approve` signs a decision over a run's bundle, `verify` checks it.

- `inspect_run`: the run is signed (bundle.dsse.json), every file it lists re-hashes to the listed sha256, nothing
  unlisted lies in the folder, evidence.json says what the bundle's predicate says, and it has no approval yet.
  The bundle's Ed25519 signature is not checked here (that needs the tool's public key): the approval covers the
  bundle's exact bytes, so `verify` with the genuine key tells whether what was approved is genuine.
- `load_approver`: the approver's PKCS#12 (RSA, ECDSA or Ed25519 key with its certificate).
- `write_approval`: an in-toto Statement v1 whose one subject is `bundle.dsse.json` with its sha256 (predicate
  `urn:auditor:approval:v1`: decision, approver, certificate, reason, time, the run's title, opinion and day), in a
  DSSE envelope signed by the approver's key, the certificate (PEM) in the signature entry; written as
  approval.dsse.json beside the bundle, atomically and never over an existing one. The approver's certificate must
  not be the one that signed report.pdf, nor carry its key (four eyes: two identities).
- `check_approval`: what `verify` prints about it: the signature by the certificate it carries, the subject equal
  to this run's bundle, the predicate well-formed; and the approver's certificate against `--approver-trust`.

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

from auditor.errors import InputError
from auditor.files import MAX_JSON_BYTES, MAX_SMALL_BYTES, Unreadable, read_bytes, read_regular
from auditor.trust.certificates import key_names, load_cert, quiet_pyhanko
from auditor.trust.dsse import envelope, pae, parse_envelope, sign_message, statement_bytes, verify_message
from auditor.trust.layout import APPROVAL_NAME, APPROVAL_PREDICATE_TYPE, BUNDLE_NAME, PAYLOAD_TYPE, STATEMENT_TYPE
from auditor.trust.run_folder import check_folder, check_predicate, check_subject, read_evidence
from auditor.trust.strict_json import BadJSON, json_object, strict_json
from auditor.trust.verdict import Verdict, quoted, shown

__all__ = ["APPROVAL_NAME", "APPROVAL_PREDICATE_TYPE", "check_approval", "inspect_run", "load_approver",
           "write_approval"]

DECISIONS = ("approved", "rejected")
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
        from io import BytesIO

        from pyhanko.pdf_utils.reader import PdfFileReader

        reader = PdfFileReader(BytesIO(read_regular(path, limit=MAX_JSON_BYTES, follow=False)), strict=False)
        return [s.signer_cert.public_key.dump() for s in reader.embedded_regular_signatures]
    return []


# --- the approver's key ---------------------------------------------------------------------------------------------

@dataclass
class Approver:
    key: Any
    certificate: Any  # cryptography x509.Certificate
    certificate_pem: str
    certificate_sha256: str
    subject: str


def load_approver(path: Path, passphrase: str, *, passphrase_env: str = "AUDITOR_KEY_PASS") -> Approver:
    """The approver's PKCS#12: key and certificate, valid today; one InputError line otherwise."""
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
    from cryptography.hazmat.primitives.serialization import pkcs12

    data = read_bytes(Path(path), limit=MAX_SMALL_BYTES, what="key file")
    try:
        key, cert, _extra = pkcs12.load_key_and_certificates(data, passphrase.encode("utf-8"))
    except ValueError:
        raise InputError(f"cannot open the PKCS#12 key: wrong passphrase in {passphrase_env}, or not a PKCS#12 file",
                         file=path, fix=f"check {passphrase_env} and the file") from None
    if key is None or cert is None:
        raise InputError("the PKCS#12 file holds no private key and certificate", file=path,
                         fix="export the key together with its certificate")
    if not isinstance(key, rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey | ed25519.Ed25519PrivateKey):
        raise InputError(f"the approver's key is {type(key).__name__}, not RSA, ECDSA or Ed25519", file=path,
                         fix="use an RSA key (`auditor keygen` makes RSA-3072)")
    now = dt.datetime.now(dt.UTC)
    if not cert.not_valid_before_utc <= now <= cert.not_valid_after_utc:
        raise InputError(f"the approver's certificate is not valid today (valid {cert.not_valid_before_utc:%Y-%m-%d}"
                         f" to {cert.not_valid_after_utc:%Y-%m-%d})", file=path,
                         fix="use a current certificate (`auditor keygen` makes one)")
    return Approver(key=key, certificate=cert,
                    certificate_pem=cert.public_bytes(serialization.Encoding.PEM).decode("ascii"),
                    certificate_sha256=cert.fingerprint(hashes.SHA256()).hex(),
                    subject=cert.subject.rfc4514_string())


@dataclass
class Approval:
    path: Path
    statement_sha256: str
    predicate: dict[str, Any]


def write_approval(run: RunToApprove, approver: Approver, *, name: str, decision: str, reason: str | None,
                   now: dt.datetime | None = None) -> Approval:
    """Sign the decision over the run's bundle and write approval.dsse.json into the run folder."""
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
    if approver.certificate_sha256 == run.signer_sha256 or key_names(approver.certificate.public_key()) \
            & set(run.signer_keys):
        raise InputError("the approver's key is the tool's signing identity, which signed this run: an approval "
                         "needs a second identity (four eyes)", file=run.run_dir,
                         fix="approve with the approver's own key (`auditor keygen --name \"Your Name\"` makes one)")
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
        "approver_certificate": {"subject": approver.subject, "sha256": approver.certificate_sha256},
        "reason": reason,
        "time": when.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "run": {"name": run.run_dir.resolve().name, "audit_title": audit.get("title"),
                "opinion": run.predicate.get("opinion"), "evaluated_on": run.predicate.get("evaluated_on"),
                "signer_certificate_sha256": run.signer_sha256},
        "tool": {"name": "auditor", "version": __version__},
    }
    statement = {"_type": STATEMENT_TYPE, "predicateType": APPROVAL_PREDICATE_TYPE, "predicate": predicate,
                 "subject": [{"name": BUNDLE_NAME, "digest": {"sha256": run.bundle_sha256}}]}
    payload = statement_bytes(statement)
    signature = sign_message(approver.key, pae(PAYLOAD_TYPE, payload))
    path = run.run_dir / APPROVAL_NAME
    _write_once(path, envelope(payload, [{"keyid": approver.certificate_sha256,
                                          "sig": base64.b64encode(signature).decode("ascii"),
                                          "certificate": approver.certificate_pem}]))
    return Approval(path=path, statement_sha256=hashlib.sha256(payload).hexdigest(), predicate=predicate)


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


def read_approval(path: Path) -> dict[str, Any] | None:
    """A run's decision as `Register.record_approval` takes it, from its approval.dsse.json (its signature checked
    with the certificate it carries; who that is, `verify --approver-trust` says); None when the file is no valid
    approval. For `auditor register rebuild`."""
    try:
        data = read_regular(path, limit=MAX_SMALL_BYTES, follow=False)
        parsed = _parse(data)
        payload = base64.b64decode(strict_json(data, APPROVAL_NAME)["payload"], validate=True)
    except (ValueError, OSError, BadJSON, binascii.Error):
        return None
    return {"bundle_sha256": parsed.covers, "decision": parsed.predicate["decision"],
            "approver": parsed.predicate["approver"], "reason": parsed.predicate.get("reason"),
            "statement_sha256": hashlib.sha256(payload).hexdigest()}


def check_approval(root: Path, *, bundle_sha256: str | None, bundle_predicate: dict[str, Any],
                   trusted: list[Any] | None) -> list[Verdict]:
    """`verify`'s lines on approval.dsse.json: none (not approved, not a failure), or the decision with its
    signature and coverage, then the approver's identity against the --approver-trust certificates."""
    from cryptography.hazmat.primitives import hashes

    name = "approval"
    path = root / APPROVAL_NAME
    if not os.path.lexists(path):
        return [Verdict(True, name, "the run is not approved (no approval.dsse.json)", skipped=True)]
    try:
        parsed = _parse(read_regular(path, limit=MAX_SMALL_BYTES, follow=False))
    except Unreadable as exc:
        return [Verdict(False, name, f"approval.dsse.json is {exc}")]
    except ValueError as exc:
        return [Verdict(False, name, str(exc))]
    predicate = parsed.predicate
    who = f"{predicate['decision']} by {quoted(predicate['approver'])} (certificate {parsed.subject}) on " \
          f"{predicate['time'][:10]}"
    problems = []
    if bundle_sha256 is None:
        problems.append("not compared with this run's bundle: bundle.dsse.json is unreadable")
    elif parsed.covers != bundle_sha256:
        problems.append(f"covers another run: it names bundle sha256 {parsed.covers[:12]}…, this run's is "
                        f"{bundle_sha256[:12]}…")
    signer = json_object(bundle_predicate.get("signer"))
    if parsed.certificate_sha256 == signer.get("certificate_sha256"):
        problems.append("signed with the certificate that signed report.pdf: an approval needs a second identity")
    audit = json_object(bundle_predicate.get("audit"))
    run = json_object(predicate.get("run"))
    facts = {"audit_title": audit.get("title"), "opinion": bundle_predicate.get("opinion"),
             "evaluated_on": bundle_predicate.get("evaluated_on")}
    differ = [key for key, value in facts.items() if run.get(key) != value]
    if differ and not problems:  # covering another bundle says it already
        problems.append(f"it states another {', '.join(differ)} than this run's bundle")
    when = dt.datetime.strptime(predicate["time"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.UTC)
    if not parsed.valid[0] <= when <= parsed.valid[1]:
        problems.append("its time is outside the approver's certificate's validity")
    if problems:
        return [Verdict(False, name, f"{who}: {'; '.join(problems)}")]
    reason = f" (reason: {quoted(predicate['reason'])})" if predicate.get("reason") else ""
    verdicts = [Verdict(True, name, f"{who}{reason}, covers this run's bundle")]
    fingerprints = {c.fingerprint(hashes.SHA256()).hex() for c in trusted or []}
    identity = f"{parsed.subject}, sha256 {parsed.certificate_sha256[:16]}…"
    if not trusted:
        verdicts.append(Verdict(True, "approval (approver)", f"identity not checked against a trusted certificate "
                                f"({identity}; give --approver-trust)", skipped=True))
    elif parsed.certificate_sha256 in fingerprints:
        verdicts.append(Verdict(True, "approval (approver)", f"certificate trusted ({identity}, one of the "
                                "--approver-trust certificates)"))
    else:
        verdicts.append(Verdict(False, "approval (approver)", f"certificate not trusted ({identity} is none of the "
                                "--approver-trust certificates)"))
    return verdicts


def _parse(data: bytes) -> _Parsed:
    """The approval envelope, its signature checked with the certificate it carries, then its statement; ValueError
    naming the first thing wrong."""
    from cryptography import x509
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import hashes

    try:
        envelope = strict_json(data, "approval.dsse.json")
    except BadJSON as exc:
        raise ValueError(f"malformed: {exc}") from None
    if not isinstance(envelope, dict) or envelope.get("payloadType") != PAYLOAD_TYPE \
            or not isinstance(envelope.get("payload"), str):
        raise ValueError(f"malformed: not a DSSE envelope with payloadType {PAYLOAD_TYPE}")
    signatures = envelope.get("signatures")
    if not isinstance(signatures, list) or len(signatures) != 1 or not isinstance(signatures[0], dict) \
            or not isinstance(signatures[0].get("sig"), str) or not isinstance(signatures[0].get("certificate"), str):
        raise ValueError("malformed: expected one signature with its certificate (PEM)")
    try:
        payload = base64.b64decode(envelope["payload"], validate=True)
        signature = base64.b64decode(signatures[0]["sig"], validate=True)
    except binascii.Error:
        raise ValueError("malformed: the payload or the signature is not base64") from None
    try:
        cert = x509.load_pem_x509_certificate(signatures[0]["certificate"].encode("utf-8"))
    except (ValueError, UnicodeEncodeError):
        raise ValueError("malformed: the certificate is not a PEM X.509 certificate") from None
    try:
        public, subject_name = cert.public_key(), cert.subject.rfc4514_string()
        valid = (cert.not_valid_before_utc, cert.not_valid_after_utc)
    except Exception:  # an algorithm or a name cryptography cannot read
        raise ValueError("malformed: the certificate's key, subject or validity cannot be read") from None
    try:
        verify_message(public, signature, pae(PAYLOAD_TYPE, payload))
    except InvalidSignature:
        raise ValueError("signature invalid: it does not verify with the certificate the approval carries (edited "
                         "after signing)") from None
    except ValueError as exc:
        raise ValueError(f"signature not checked: {exc}") from None
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
                   certificate_sha256=fingerprint, subject=subject_name, valid=valid)


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
