"""Signing and verifying run folders: keys, the PAdES signature of report.pdf, the DSSE bundle, `verify`.

- `keygen`: an RSA-3072 key with a self-signed X.509 certificate (digitalSignature + nonRepudiation) as PKCS#12,
  and an Ed25519 key pair for the bundle. RSA, not ECDSA: an ECDSA signature makes pyHanko write a PDF 2.0 file,
  which breaks the PDF/A-3 claim.
- `sign_pdf`: PAdES B-B, certifying, no changes allowed (DocMDP), invisible field.
- `write_bundle`: `bundle.dsse.json`, a DSSE envelope around an in-toto Statement v1 that lists every artifact of
  the run folder and every input (spec, policy packs, model, data) with its sha256; Ed25519 over the DSSE PAE.
- `verify_run`: the envelope signature (by the key the predicate names), every subject re-hashed, unsafe and
  unlisted paths, the predicate against evidence.json, the PDF signature (intact, trusted, covering the entire
  file, by the certificate the predicate names) and the evidence.json attached to the PDF against the folder's.
  One verdict line per artifact; pyHanko's own log (tracebacks of a failed path validation) stays off the terminal.

Passphrases come from an environment variable (or a prompt in `auditor keygen`), never from the command line.
"""

from __future__ import annotations

import base64
import contextlib
import datetime as dt
import hashlib
import json
import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from io import BytesIO
from pathlib import Path, PurePosixPath
from typing import Any

from auditor.errors import InputError
from auditor.files import MAX_JSON_BYTES, MAX_SMALL_BYTES, read_bytes
from auditor.hashing import sha256_file

BUNDLE_NAME = "bundle.dsse.json"
PAYLOAD_TYPE = "application/vnd.in-toto+json"
STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "urn:auditor:audit-run:v1"
PDF_FIELD = "AuditorCertification"
KEY_FILES = {"p12": "signer.p12", "cert": "signer-cert.pem", "bundle": "bundle-ed25519.pem",
             "bundle_pub": "bundle-ed25519.pub.pem"}


# --- keys ---------------------------------------------------------------------------------------------------------

def keygen(out_dir: Path, passphrase: str, *, name: str = "auditor report signer", organisation: str | None = None,
           days: int = 5 * 365) -> dict[str, Path]:
    """Write a new signing identity into `out_dir`; never overwrites a file."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ed25519, rsa
    from cryptography.hazmat.primitives.serialization import pkcs12
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    if not passphrase:
        raise InputError("the passphrase is empty", fix="set a non-empty passphrase")
    paths = {key: out_dir / file for key, file in KEY_FILES.items()}
    for path in paths.values():
        if path.exists():
            raise InputError("the file exists already", file=path, fix="choose another --out folder")
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot create the folder ({exc.strerror})", file=out_dir, fix="choose another --out") \
            from None

    key = rsa.generate_private_key(public_exponent=65537, key_size=3072)
    attributes = [x509.NameAttribute(NameOID.COMMON_NAME, name)]
    if organisation:
        attributes.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, organisation))
    subject = x509.Name(attributes)
    now = dt.datetime.now(dt.UTC).replace(microsecond=0)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject).issuer_name(subject).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=True, key_encipherment=False,
                                     data_encipherment=False, key_agreement=False, key_cert_sign=False,
                                     crl_sign=False, encipher_only=False, decipher_only=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.EMAIL_PROTECTION]), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    secret = passphrase.encode("utf-8")
    p12 = pkcs12.serialize_key_and_certificates(name.encode("utf-8"), key, cert, None,
                                                serialization.BestAvailableEncryption(secret))
    bundle = ed25519.Ed25519PrivateKey.generate()
    _write_private(paths["p12"], p12)
    paths["cert"].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    _write_private(paths["bundle"], bundle.private_bytes(serialization.Encoding.PEM,
                                                         serialization.PrivateFormat.PKCS8,
                                                         serialization.BestAvailableEncryption(secret)))
    paths["bundle_pub"].write_bytes(bundle.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    return paths


def _write_private(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


@dataclass
class SigningMaterial:
    """Loaded keys: the PDF signer (pyHanko), its certificate, and the Ed25519 bundle key."""

    signer: Any
    certificate: Any  # cryptography x509.Certificate
    bundle_key: Any  # Ed25519PrivateKey
    key_path: Path
    bundle_key_path: Path
    details: dict[str, str] = field(default_factory=dict)


def load_material(signing: Any, *, spec_file: Path) -> SigningMaterial:
    """Load the keys a spec's `signing` block names; every problem is one InputError line."""
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ed25519, rsa
    from cryptography.hazmat.primitives.serialization import pkcs12
    from pyhanko.sign.signers import SimpleSigner

    env = signing.passphrase_env
    passphrase = os.environ.get(env)
    if passphrase is None:
        raise InputError(f"the environment variable {env} is not set", file=spec_file,
                         where="signing.passphrase_env", fix=f"export {env} with the key's passphrase")
    secret = passphrase.encode("utf-8")
    data = _read(signing.key, spec_file)
    try:
        key, cert, _extra = pkcs12.load_key_and_certificates(data, secret)
    except ValueError:
        raise InputError(f"cannot open the PKCS#12 key: wrong passphrase in {env}, or not a PKCS#12 file",
                         file=signing.key, fix=f"check {env} and the file") from None
    if key is None or cert is None:
        raise InputError("the PKCS#12 file holds no private key and certificate", file=signing.key,
                         fix="export the key together with its certificate")
    if not isinstance(key, rsa.RSAPrivateKey):
        raise InputError("the signing key is not RSA (ECDSA would turn report.pdf into PDF 2.0, not PDF/A-3)",
                         file=signing.key, fix="use an RSA key (auditor keygen makes RSA-3072)")
    signer = SimpleSigner.load_pkcs12_data(data, other_certs=[], passphrase=secret)
    try:
        bundle_key = serialization.load_pem_private_key(_read(signing.bundle_key, spec_file), password=secret)
    except (ValueError, TypeError):
        raise InputError(f"cannot open the bundle key: wrong passphrase in {env}, or not a PEM private key",
                         file=signing.bundle_key, fix=f"check {env} and the file") from None
    if not isinstance(bundle_key, ed25519.Ed25519PrivateKey):
        raise InputError("the bundle key is not an Ed25519 key", file=signing.bundle_key,
                         fix="use the bundle-ed25519.pem that `auditor keygen` writes")
    details = {"subject": cert.subject.rfc4514_string(),
               "certificate_sha256": cert.fingerprint(hashes.SHA256()).hex(),
               "not_after": cert.not_valid_after_utc.date().isoformat(),
               "bundle_keyid": keyid(bundle_key.public_key())}
    return SigningMaterial(signer=signer, certificate=cert, bundle_key=bundle_key, key_path=signing.key,
                           bundle_key_path=signing.bundle_key, details=details)


def _read(path: Path, spec_file: Path) -> bytes:
    try:
        return read_bytes(Path(path), limit=MAX_SMALL_BYTES, what="key file")
    except InputError as exc:
        raise InputError(exc.problem, file=path, fix=f"check `signing` in {spec_file.name}") from None


def keyid(public_key: Any) -> str:
    """sha256 of the raw Ed25519 public key, hex: the `keyid` of DSSE signatures."""
    from cryptography.hazmat.primitives import serialization

    raw = public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()


# --- PDF signature ------------------------------------------------------------------------------------------------

def sign_pdf(pdf: bytes, material: SigningMaterial) -> bytes:
    """PAdES B-B, certifying signature that allows no changes, in an invisible field."""
    from pyhanko.pdf_utils.incremental_writer import IncrementalPdfFileWriter
    from pyhanko.sign import fields, signers

    writer = IncrementalPdfFileWriter(BytesIO(pdf))
    meta = signers.PdfSignatureMetadata(
        field_name=PDF_FIELD, certify=True, docmdp_permissions=fields.MDPPerm.NO_CHANGES,
        subfilter=fields.SigSeedSubFilter.PADES, md_algorithm="sha256",
        reason="Audit report certified by auditor", name=material.details.get("subject"))
    out = signers.sign_pdf(writer, meta, signer=material.signer,
                           new_field_spec=fields.SigFieldSpec(sig_field_name=PDF_FIELD))
    return out.getvalue()


# --- DSSE bundle --------------------------------------------------------------------------------------------------

def pae(payload_type: str, payload: bytes) -> bytes:
    """DSSE v1 pre-authentication encoding."""
    kind = payload_type.encode("utf-8")
    return b"DSSEv1 %d %s %d %s" % (len(kind), kind, len(payload), payload)


def write_bundle(run_dir: Path, material: SigningMaterial, inputs: list[tuple[str, Path]],
                 predicate: dict[str, Any]) -> Path:
    """Sign every file of `run_dir` (artifacts) and every input (role, path), as bundle.dsse.json in `run_dir`.

    Input paths are recorded relative to the run folder's parent's child, i.e. as seen from the final run folder
    (the temporary folder is its sibling, so relative paths are the same).
    """
    subjects = []
    for path in sorted(p for p in run_dir.rglob("*") if p.is_file() and p.name != BUNDLE_NAME):
        name = path.relative_to(run_dir).as_posix()
        subjects.append({"name": name, "digest": {"sha256": sha256_file(path)},
                         "annotations": {"kind": "artifact"}})
    for role, path in inputs:
        relative = Path(os.path.relpath(Path(path).resolve(), run_dir.resolve())).as_posix()
        subjects.append({"name": relative, "digest": {"sha256": sha256_file(Path(path))},
                         "annotations": {"kind": "input", "role": role}})
    statement = {"_type": STATEMENT_TYPE, "subject": subjects, "predicateType": PREDICATE_TYPE,
                 "predicate": predicate}
    payload = json.dumps(statement, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    signature = material.bundle_key.sign(pae(PAYLOAD_TYPE, payload))
    envelope = {"payloadType": PAYLOAD_TYPE, "payload": base64.b64encode(payload).decode("ascii"),
                "signatures": [{"keyid": keyid(material.bundle_key.public_key()),
                                "sig": base64.b64encode(signature).decode("ascii")}]}
    out = run_dir / BUNDLE_NAME
    out.write_text(json.dumps(envelope, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return out


def sign_run(run_dir: Path, material: SigningMaterial, inputs: list[tuple[str, Path]],
             predicate: dict[str, Any]) -> None:
    """Sign report.pdf in place (if present), then write the bundle over everything."""
    pdf = run_dir / "report.pdf"
    if pdf.exists():
        pdf.write_bytes(sign_pdf(pdf.read_bytes(), material))
    write_bundle(run_dir, material, inputs, {**predicate, "signer": material.details})


# --- verify -------------------------------------------------------------------------------------------------------

@dataclass
class Verdict:
    ok: bool
    subject: str
    message: str
    skipped: bool = False

    def line(self) -> str:
        status = "SKIP" if self.skipped else ("OK" if self.ok else "FAIL")
        return f"{status:<4} {self.subject}: {self.message}"


def verify_run(run_dir: Path, *, trust: Path | None = None, pubkey: Path | None = None) -> list[Verdict]:
    """Every check on a signed run folder; the run holds when every verdict is ok (skipped ones included)."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise InputError("no such run folder", file=run_dir, fix="give the folder that holds bundle.dsse.json")
    bundle = run_dir / BUNDLE_NAME
    if not bundle.is_file():
        raise InputError(f"no {BUNDLE_NAME} in this folder (the run was not signed)", file=run_dir,
                         fix="sign runs with a `signing:` block in the spec")
    public = _load_pubkey(pubkey) if pubkey is not None else None
    trusted = _load_cert(trust) if trust is not None else None

    verdicts: list[Verdict] = []
    statement, envelope_verdict = _check_envelope(bundle, public)
    verdicts.append(envelope_verdict)
    if statement is None:
        return verdicts

    listed: set[str] = set()
    root = run_dir.resolve()
    for subject in statement.get("subject", []):
        verdicts.append(_check_subject(subject, root, listed))
    for path in sorted(p for p in run_dir.rglob("*") if p.is_file() or p.is_symlink()):
        name = path.relative_to(run_dir).as_posix()
        if name != BUNDLE_NAME and name not in listed:
            verdicts.append(Verdict(False, name, "present but not listed in the bundle (added after signing)"))
    predicate = statement.get("predicate") if isinstance(statement.get("predicate"), dict) else {}
    evidence = _read_json(run_dir / "evidence.json") if "evidence.json" in listed else None
    if isinstance(evidence, dict):
        verdicts.append(_check_predicate(predicate, evidence))
    pdf = run_dir / "report.pdf"
    if "report.pdf" in listed and pdf.is_file() and not pdf.is_symlink():
        try:
            data = read_bytes(pdf, limit=MAX_JSON_BYTES, what="PDF")
        except InputError as exc:
            verdicts.append(Verdict(False, "report.pdf (signature)", exc.problem))
            return verdicts
        signer = predicate.get("signer") if isinstance(predicate.get("signer"), dict) else {}
        verdicts.append(check_pdf_signature(data, trusted, certificate_sha256=signer.get("certificate_sha256")))
        verdicts.append(check_pdf_evidence(data, evidence))
    return verdicts


def _read_json(path: Path) -> Any:
    """A JSON file of the run folder, or None when it cannot be read (its own verdict says why)."""
    try:
        return json.loads(read_bytes(path, limit=MAX_JSON_BYTES, what="evidence file").decode("utf-8"))
    except (InputError, ValueError, RecursionError):
        return None


def _check_predicate(predicate: dict[str, Any], evidence: dict[str, Any]) -> Verdict:
    """What the signed statement says about the run (audit, opinion, seed, day, schema) is what evidence.json
    says: the bundle vouches for these values, so they must be the run's."""
    name = "evidence.json (predicate)"
    run = evidence.get("run") if isinstance(evidence.get("run"), dict) else {}
    facts = {"audit": evidence.get("audit"), "opinion": evidence.get("opinion"), "seed": evidence.get("seed"),
             "evaluated_on": run.get("evaluated_on"), "evidence_schema": evidence.get("schema")}
    differ = [key for key, value in facts.items() if predicate.get(key) != value]
    if differ:
        return Verdict(False, name, f"the bundle's predicate states another {', '.join(differ)} than evidence.json")
    return Verdict(True, name, "audit, opinion, seed and evaluation day as the bundle's predicate states")


def _check_envelope(bundle: Path, public: Any) -> tuple[dict[str, Any] | None, Verdict]:
    from cryptography.exceptions import InvalidSignature

    try:
        envelope = json.loads(read_bytes(bundle, limit=MAX_SMALL_BYTES, what="bundle").decode("utf-8"))
        payload = base64.b64decode(envelope["payload"], validate=True)
        signatures = envelope["signatures"]
        statement = json.loads(payload)
        if envelope["payloadType"] != PAYLOAD_TYPE or statement.get("_type") != STATEMENT_TYPE:
            raise ValueError("not an in-toto Statement v1 envelope")
        if not isinstance(statement.get("subject"), list):
            raise ValueError("the statement has no subject list")
    except InputError as exc:
        return None, Verdict(False, BUNDLE_NAME, f"unreadable envelope ({exc.problem})")
    except (OSError, ValueError, KeyError, TypeError, RecursionError) as exc:
        return None, Verdict(False, BUNDLE_NAME, f"unreadable envelope ({str(exc).splitlines()[0][:100]})")
    if public is None:
        return statement, Verdict(False, BUNDLE_NAME, "signature not checked: no --pubkey given (hashes below are "
                                                      "checked against an unauthenticated list)")
    wanted = keyid(public)
    message = pae(envelope["payloadType"], payload)
    for entry in signatures:
        if not isinstance(entry, dict) or entry.get("keyid") not in (wanted, None, ""):
            continue
        try:
            public.verify(base64.b64decode(entry.get("sig", ""), validate=True), message)
        except (InvalidSignature, ValueError):
            continue
        predicate = statement.get("predicate")
        signer = predicate.get("signer") if isinstance(predicate, dict) else None
        named = signer.get("bundle_keyid") if isinstance(signer, dict) else None
        if named != wanted:
            return statement, Verdict(False, BUNDLE_NAME, f"signature valid with key {wanted[:16]}…, but the "
                                      f"predicate names key {str(named)[:16]}… as the signer (re-signed by "
                                      "another key)")
        return statement, Verdict(True, BUNDLE_NAME, f"Ed25519 signature valid (key {wanted[:16]}…, the key the "
                                  "predicate names)")
    return statement, Verdict(False, BUNDLE_NAME, "signature does not verify with the given public key (the bundle "
                                                  "was edited or signed by another key)")


def _check_subject(subject: Any, root: Path, listed: set[str]) -> Verdict:
    if not isinstance(subject, dict) or not isinstance(subject.get("name"), str):
        return Verdict(False, "?", "malformed subject in the bundle")
    name = subject["name"]
    expected = (subject.get("digest") or {}).get("sha256")
    annotations = subject.get("annotations") or {}
    kind = annotations.get("kind", "artifact")
    pure = PurePosixPath(name)
    if "\\" in name or pure.is_absolute() or Path(name).is_absolute() or not name:
        return Verdict(False, name, "absolute path in the bundle: refused")
    if kind != "input":
        if ".." in pure.parts:
            return Verdict(False, name, "`..` in an artifact path: refused")
        listed.add(pure.as_posix())
        path = root / pure
        if not path.is_file() or path.is_symlink() or not path.resolve().is_relative_to(root):
            return Verdict(False, name, "listed in the bundle but missing from the run folder")
        return _compare(name, path, expected)
    role = annotations.get("role", "input")
    path = root / pure
    if not path.exists():
        return Verdict(True, name, f"{role}: not present (input outside the run folder; not checked)", skipped=True)
    if not path.is_file():
        return Verdict(False, name, f"{role}: not a regular file")
    verdict = _compare(name, path, expected)
    verdict.message = f"{role}: {verdict.message}"
    return verdict


def _compare(name: str, path: Path, expected: Any) -> Verdict:
    if not isinstance(expected, str):
        return Verdict(False, name, "no sha256 in the bundle")
    actual = sha256_file(path)
    if actual == expected:
        return Verdict(True, name, "sha256 matches")
    return Verdict(False, name, f"sha256 differs (file changed since signing): {actual[:12]}… ≠ {expected[:12]}…")


def check_pdf_signature(data: bytes, trusted: Any, *, certificate_sha256: Any = None) -> Verdict:
    """The PDF's certifying signature: intact, trusted against `trusted`, covering the entire file, no changes,
    made with the certificate whose sha256 the bundle's predicate states (when given)."""
    from pyhanko.pdf_utils.reader import PdfFileReader
    from pyhanko.sign.validation import validate_pdf_signature
    from pyhanko.sign.validation.status import SignatureCoverageLevel
    from pyhanko_certvalidator import ValidationContext

    name = "report.pdf (signature)"
    with _quiet_pyhanko():
        try:
            reader = PdfFileReader(BytesIO(data), strict=False)
            signatures = reader.embedded_signatures
        except Exception as exc:
            return Verdict(False, name, f"unreadable PDF ({type(exc).__name__})")
        if len(signatures) != 1:
            return Verdict(False, name, f"expected one signature, found {len(signatures)}")
        roots = [_to_asn1(trusted)] if trusted is not None else []
        context = ValidationContext(trust_roots=roots, allow_fetching=False, revocation_mode="soft-fail")
        try:
            status = validate_pdf_signature(signatures[0], context)
        except Exception as exc:
            return Verdict(False, name, f"validation failed ({type(exc).__name__}: {str(exc)[:80]})")
    problems = []
    if not status.intact or not status.valid:
        problems.append("signature not intact (the signed bytes changed)")
    if status.coverage != SignatureCoverageLevel.ENTIRE_FILE:
        problems.append("does not cover the entire file (bytes added after signing)")
    if status.docmdp_ok is False:
        problems.append("changes after certification")
    if trusted is None:
        problems.append("signer not checked: no --trust certificate given")
    elif not status.trusted:
        problems.append("signer not trusted by the --trust certificate")
    fingerprint = hashlib.sha256(status.signing_cert.dump()).hexdigest()
    if certificate_sha256 is not None and fingerprint != certificate_sha256:
        problems.append(f"signed with certificate {fingerprint[:16]}…, but the bundle's predicate names "
                        f"{str(certificate_sha256)[:16]}…")
    subject = status.signing_cert.subject.human_friendly
    if problems:
        return Verdict(False, name, "; ".join(problems) + f" (signer {subject})")
    named = ", the certificate the predicate names" if certificate_sha256 is not None else ""
    return Verdict(True, name, f"intact, trusted ({subject}{named}), covers the entire file, certified no-changes")


@contextlib.contextmanager
def _quiet_pyhanko() -> Iterator[None]:
    """pyHanko logs a failed certificate path with its traceback (~30 lines on stderr); the verdict line says it."""
    loggers = [logging.getLogger(name) for name in ("pyhanko", "pyhanko_certvalidator")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.CRITICAL + 1)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


ATTACHMENT = "evidence.json"
# What report.pdf's attached evidence.json may hold in its `run` block (engine.reproducible_document): the rest of
# that block (times, durations, host, executor) stays in the folder's copy only.
ATTACHED_RUN_KEYS = {"evaluated_on", "note"}


def check_pdf_evidence(data: bytes, evidence: Any) -> Verdict:
    """The evidence.json attached to report.pdf (PDF/A-3) equals the folder's evidence.json in every value but the
    `run` block, where it keeps only the evaluation day."""
    name = "report.pdf (attached evidence.json)"
    if not isinstance(evidence, dict):
        return Verdict(False, name, "not compared: the folder's evidence.json does not read as a JSON object")
    with _quiet_pyhanko():
        try:
            attached = json.loads(_attachment(data, ATTACHMENT).decode("utf-8"))
        except _NoAttachment as exc:
            return Verdict(False, name, str(exc))
        except (ValueError, RecursionError):
            return Verdict(False, name, "the attachment does not read as JSON")
        except Exception as exc:
            return Verdict(False, name, f"unreadable PDF ({type(exc).__name__})")
    if not isinstance(attached, dict):
        return Verdict(False, name, "the attachment is not a JSON object")
    run, attached_run = evidence.get("run"), attached.get("run")
    if not isinstance(run, dict) or not isinstance(attached_run, dict) or set(attached_run) - ATTACHED_RUN_KEYS \
            or attached_run.get("evaluated_on") != run.get("evaluated_on"):
        return Verdict(False, name, "differs from evidence.json in the run block (evaluated_on)")
    try:
        where = _first_difference({k: v for k, v in attached.items() if k != "run"},
                                  {k: v for k, v in evidence.items() if k != "run"}, "")
    except RecursionError:
        return Verdict(False, name, "not compared: the attachment is nested too deeply")
    if where is not None:
        return Verdict(False, name, f"differs from evidence.json at {where or 'the top level'}")
    return Verdict(True, name, "equals evidence.json (all but the run block's times and host)")


class _NoAttachment(Exception):
    pass


def _attachment(data: bytes, filename: str) -> bytes:
    """The one embedded file named `filename`, inflated with a size cap (a stream may be a decompression bomb)."""
    import zlib

    from pyhanko.pdf_utils.reader import PdfFileReader

    reader = PdfFileReader(BytesIO(data), strict=False)
    try:
        names = reader.root["/Names"]["/EmbeddedFiles"]["/Names"]
    except KeyError:
        raise _NoAttachment("no evidence.json attached (the PDF has no embedded files)") from None
    specs = [names[i + 1] for i in range(0, len(names) - 1, 2) if str(names[i]) == filename]
    if len(specs) != 1:
        raise _NoAttachment(f"expected one attached {filename}, found {len(specs)}")
    stream = specs[0].get_object()["/EF"]["/F"].get_object()
    filters = stream.get("/Filter")
    raw = stream.encoded_data
    if filters is None:
        body = raw
    elif str(filters) == "/FlateDecode":
        inflate = zlib.decompressobj()
        body = inflate.decompress(raw, MAX_JSON_BYTES + 1)
        if len(body) > MAX_JSON_BYTES or inflate.unconsumed_tail:
            raise _NoAttachment(f"the attached {filename} inflates beyond {MAX_JSON_BYTES >> 20} MiB")
    else:
        raise _NoAttachment(f"the attached {filename} uses an unexpected filter {str(filters)[:40]}")
    return body


def _first_difference(a: Any, b: Any, path: str) -> str | None:
    """The dotted path of the first value that differs between two parsed JSON documents, or None."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            if key not in a or key not in b:
                return f"{path}{key}"
            found = _first_difference(a[key], b[key], f"{path}{key}.")
            if found is not None:
                return found
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return path.rstrip(".") or None
        for index, (x, y) in enumerate(zip(a, b, strict=True)):
            found = _first_difference(x, y, f"{path}{index}.")
            if found is not None:
                return found
        return None
    return None if a == b and type(a) is type(b) else path.rstrip(".")


def _to_asn1(cert: Any) -> Any:
    from asn1crypto import x509 as asn1_x509
    from cryptography.hazmat.primitives import serialization

    return asn1_x509.Certificate.load(cert.public_bytes(serialization.Encoding.DER))


def _load_pubkey(path: Path) -> Any:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ed25519

    data = read_bytes(Path(path), limit=MAX_SMALL_BYTES, what="public key")  # a FIFO would block the read
    try:
        key = serialization.load_pem_public_key(data)
    except ValueError:
        raise InputError("not a PEM public key", file=path, fix="give bundle-ed25519.pub.pem from `auditor keygen`") \
            from None
    if not isinstance(key, ed25519.Ed25519PublicKey):
        raise InputError("not an Ed25519 public key", file=path, fix="give bundle-ed25519.pub.pem")
    return key


def _load_cert(path: Path) -> Any:
    from cryptography import x509

    data = read_bytes(Path(path), limit=MAX_SMALL_BYTES, what="certificate")
    try:
        return x509.load_pem_x509_certificate(data) if b"-----BEGIN" in data else x509.load_der_x509_certificate(data)
    except ValueError:
        raise InputError("not an X.509 certificate (PEM or DER)", file=path,
                         fix="give signer-cert.pem from `auditor keygen`") from None
