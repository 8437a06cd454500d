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
  The folder is an adversary's: JSON is read strictly (`strict_json`: no duplicate key, no NaN, 64 levels), the
  walk is bounded and opens nothing but regular files (`_walk`, `_open_regular`), every entry that is not a listed
  regular file fails, and every printed string is escaped (`shown`). An approver's sign-off (approval.dsse.json,
  `auditor.approval`) is the one file allowed beside the listed ones, and is checked last.

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
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from io import BytesIO
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, BinaryIO

from auditor.errors import InputError
from auditor.files import MAX_JSON_BYTES, MAX_SMALL_BYTES, kind_of, read_bytes
from auditor.hashing import sha256_file

if TYPE_CHECKING:
    from auditor.token_keys import TokenKey

BUNDLE_NAME = "bundle.dsse.json"
TOKEN_NAME = "bundle.tsr"  # the RFC 3161 token over the bundle's signature (auditor.trusted_time)
APPROVAL_NAME = "approval.dsse.json"  # the approver's sign-off, written after signing (auditor/approval.py)
PAYLOAD_TYPE = "application/vnd.in-toto+json"
STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "urn:auditor:audit-run:v1"
PDF_FIELD = "AuditorCertification"
KEY_FILES = {"p12": "signer.p12", "cert": "signer-cert.pem", "bundle": "bundle-ed25519.pem",
             "bundle_pub": "bundle-ed25519.pub.pem"}
# What `verify` reads from a run folder it does not trust: a signed run is a few regular files, one level deep.
MAX_WALK_DEPTH = 32  # levels of folders walked below the run folder
MAX_WALK_ENTRIES = 100_000  # files, folders and anything else walked; also the most subjects a statement may list
MAX_JSON_DEPTH = 64  # evidence.json is 8 levels deep, the statement 5
SHOWN_CHARS = 300  # an untrusted string is cut to this many characters on a verdict line


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
    """Loaded keys: the PDF signer (pyHanko), its certificate, the bundle key (an Ed25519 key, or the token's key),
    the CA chain for long-term validation, and the TSA to ask for trusted time."""

    signer: Any
    certificate: Any  # cryptography x509.Certificate
    bundle_key: Any  # Ed25519PrivateKey, or a token_keys.TokenKey
    key_path: Path | None
    bundle_key_path: Path | None
    details: dict[str, str] = field(default_factory=dict)
    chain: list[Any] = field(default_factory=list)  # cryptography certificates above the signer's
    timestamp_url: str | None = None
    timestamp_roots: list[Any] = field(default_factory=list)
    token: Any = None  # the open PKCS#11 session, closed by close()

    def close(self) -> None:
        if self.token is not None:
            self.token.close()


def load_material(signing: Any, *, spec_file: Path, timestamp_url: str | None = None) -> SigningMaterial:
    """Load the keys a spec's `signing` block names; every problem is one InputError line. `timestamp_url` (the
    CLI's --timestamp-url) wins over the spec's, which wins over $AUDITOR_TSA_URL."""
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ed25519, rsa
    from cryptography.hazmat.primitives.serialization import pkcs12
    from pyhanko.sign.signers import SimpleSigner

    from auditor import trusted_time

    env = signing.passphrase_env
    secret = b""
    if signing.key is not None or signing.bundle_key is not None:
        passphrase = os.environ.get(env)
        if passphrase is None:
            raise InputError(f"the environment variable {env} is not set", file=spec_file,
                             where="signing.passphrase_env", fix=f"export {env} with the key's passphrase")
        secret = passphrase.encode("utf-8")
    chain = [c for path in signing.chain for c in load_trust(Path(path))]
    token = None
    if signing.pkcs11 is not None:
        from auditor.token_keys import open_token_key

        token = open_token_key(signing.pkcs11, signing.pin_env, spec_file=spec_file, chain=chain)
        signer, cert = token.signer, token.certificate
    else:
        data = _read(signing.key, spec_file)
        try:
            key, cert, extra = pkcs12.load_key_and_certificates(data, secret)
        except ValueError:
            raise InputError(f"cannot open the PKCS#12 key: wrong passphrase in {env}, or not a PKCS#12 file",
                             file=signing.key, fix=f"check {env} and the file") from None
        if key is None or cert is None:
            raise InputError("the PKCS#12 file holds no private key and certificate", file=signing.key,
                             fix="export the key together with its certificate")
        if not isinstance(key, rsa.RSAPrivateKey):
            raise InputError("the signing key is not RSA (ECDSA would turn report.pdf into PDF 2.0, not PDF/A-3)",
                             file=signing.key, fix="use an RSA key (auditor keygen makes RSA-3072)")
        chain = chain or list(extra)
        signer = SimpleSigner.load_pkcs12_data(data, other_certs=[_to_asn1(c) for c in chain], passphrase=secret)
    if not isinstance(cert.public_key(), rsa.RSAPublicKey):
        if token is not None:
            token.close()
        raise InputError("the signing key is not RSA (ECDSA would turn report.pdf into PDF 2.0, not PDF/A-3)",
                         file=spec_file, where="signing.pkcs11", fix="use an RSA key on the token")
    bundle_key: ed25519.Ed25519PrivateKey | TokenKey
    if signing.bundle_key is not None:
        try:
            loaded = serialization.load_pem_private_key(_read(signing.bundle_key, spec_file), password=secret)
        except (ValueError, TypeError):
            raise InputError(f"cannot open the bundle key: wrong passphrase in {env}, or not a PEM private key",
                             file=signing.bundle_key, fix=f"check {env} and the file") from None
        if not isinstance(loaded, ed25519.Ed25519PrivateKey):
            raise InputError("the bundle key is not an Ed25519 key", file=signing.bundle_key,
                             fix="use the bundle-ed25519.pem that `auditor keygen` writes")
        bundle_key = loaded
    else:
        assert token is not None  # the spec: without `pkcs11`, `bundle_key` is required
        bundle_key = token
    url = timestamp_url or signing.timestamp_url or trusted_time.default_url()
    roots = [c for path in [*signing.timestamp_roots, *trusted_time.default_roots()] for c in load_trust(Path(path))]
    details = {"subject": cert.subject.rfc4514_string(),
               "certificate_sha256": cert.fingerprint(hashes.SHA256()).hex(),
               "not_after": cert.not_valid_after_utc.date().isoformat(),
               "bundle_keyid": keyid(bundle_key.public_key())}
    if token is not None:
        details["key_store"] = f"PKCS#11 token {signing.pkcs11.token}"
    if url:
        details["timestamp_authority"] = trusted_time.without_credentials(url)
    material = SigningMaterial(signer=signer, certificate=cert, bundle_key=bundle_key, key_path=signing.key,
                               bundle_key_path=signing.bundle_key, details=details, chain=chain, timestamp_url=url,
                               timestamp_roots=roots, token=token)
    if url:
        _rehearse_timestamp(material, spec_file)
    return material


def _rehearse_timestamp(material: SigningMaterial, spec_file: Path) -> None:
    """Ask the TSA once before the audit runs, so that an unreachable, lying or untrusted TSA is a one-line error
    now rather than after the evidence: its token must answer our request and chain to a root we know."""
    from auditor import trusted_time

    url = material.timestamp_url or ""
    probe = b"auditor: rehearsal before signing"
    try:
        token = trusted_time.token_for(url, probe)
    except trusted_time.TimestampError as exc:
        material.close()
        raise trusted_time.read_error(url, exc) from None
    facts = trusted_time.check_token(token, probe, _signing_roots(material))
    if not facts.trusted or not facts.intact:
        material.close()
        raise InputError(f"the TSA at {url} signs with a certificate ({facts.tsa}) that does not chain to a trusted "
                         "root", file=spec_file, where="signing.timestamp_roots",
                         fix="name the TSA's root certificate in signing.timestamp_roots (or AUDITOR_TSA_ROOTS)")


def _read(path: Path, spec_file: Path) -> bytes:
    try:
        return read_bytes(Path(path), limit=MAX_SMALL_BYTES, what="key file")
    except InputError as exc:
        raise InputError(exc.problem, file=path, fix=f"check `signing` in {spec_file.name}") from None


def keyid(public_key: Any) -> str:
    """The `keyid` of DSSE signatures, hex: sha256 of the raw Ed25519 public key, or of the SubjectPublicKeyInfo
    (DER) of another key (a token's RSA key)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ed25519

    if not isinstance(public_key, ed25519.Ed25519PublicKey):
        from auditor.token_keys import token_keyid

        return token_keyid(public_key)
    raw = public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()


# --- PDF signature ------------------------------------------------------------------------------------------------

def sign_pdf(pdf: bytes, material: SigningMaterial) -> bytes:
    """PAdES certifying signature that allows no changes, in an invisible field: B-B, or with a TSA B-LTA (the
    signature's timestamp, then the validation data in the DSS, then a document timestamp)."""
    from pyhanko.pdf_utils.incremental_writer import IncrementalPdfFileWriter
    from pyhanko.sign import fields, signers

    from auditor import trusted_time

    writer = IncrementalPdfFileWriter(BytesIO(pdf))
    lta: dict[str, Any] = {}
    stamper = None
    if material.timestamp_url:
        from pyhanko_certvalidator import ValidationContext

        stamper = trusted_time.timestamper(material.timestamp_url)
        roots = _signing_roots(material)
        lta = {"embed_validation_info": True, "use_pades_lta": True,
               "validation_context": ValidationContext(
                   trust_roots=[_to_asn1(c) for c in roots], other_certs=[_to_asn1(c) for c in material.chain],
                   allow_fetching=True, revocation_mode="soft-fail")}
    meta = signers.PdfSignatureMetadata(
        field_name=PDF_FIELD, certify=True, docmdp_permissions=fields.MDPPerm.NO_CHANGES,
        subfilter=fields.SigSeedSubFilter.PADES, md_algorithm="sha256",
        reason="Audit report certified by auditor", name=material.details.get("subject"), **lta)
    with _quiet_pyhanko():
        try:
            out = signers.sign_pdf(writer, meta, signer=material.signer, timestamper=stamper,
                                   new_field_spec=fields.SigFieldSpec(sig_field_name=PDF_FIELD))
        except trusted_time.TimestampError as exc:
            raise trusted_time.read_error(material.timestamp_url or "", exc) from None
        except Exception as exc:
            if stamper is None:
                raise
            raise InputError(f"signing with trusted time failed: {_path_problem(exc)}", where="signing",
                             fix="check that the TSA's certificate chains to a root in signing.timestamp_roots "
                                 "(or AUDITOR_TSA_ROOTS) and the signer's to its chain") from None
    return out.getvalue()


def _signing_roots(material: SigningMaterial) -> list[Any]:
    """The roots the signing side trusts to build the chains it embeds: the self-signed certificates of the signer's
    chain (or the signer itself) and the TSA's roots the spec names."""
    chain = [material.certificate, *material.chain]
    roots = [c for c in chain if c.issuer == c.subject]
    return roots + material.timestamp_roots


def _path_problem(exc: BaseException) -> str:
    """pyHanko's path-building error in a few words: whose certificate does not chain to a trusted root."""
    found = re.search(r'validation path for the certificate "([^"]{1,200})"', str(exc))
    if found:
        return f"the certificate of {found.group(1)} does not chain to a trusted root"
    causes: list[str] = []
    cause = exc.__cause__ or exc.__context__
    while cause is not None and len(causes) < 5:
        causes.append(str(cause))
        cause = cause.__cause__ or cause.__context__
    text = " ".join(causes).lower()
    for word, plain in (("revoked", "the signer's certificate is revoked"), ("expired", "the signer's certificate "
                        "has expired"), ("not yet valid", "the signer's certificate is not yet valid")):
        if word in text:
            return plain
    return _first_line(exc)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return (text.splitlines()[0] if text else type(exc).__name__)[:200]


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
    if material.timestamp_url:
        from auditor import trusted_time

        try:
            token = trusted_time.token_for(material.timestamp_url, signature)
        except trusted_time.TimestampError as exc:
            raise trusted_time.read_error(material.timestamp_url, exc) from None
        (run_dir / TOKEN_NAME).write_bytes(token)
    envelope = {"payloadType": PAYLOAD_TYPE, "payload": base64.b64encode(payload).decode("ascii"),
                "signatures": [{"keyid": keyid(material.bundle_key.public_key()),
                                "sig": base64.b64encode(signature).decode("ascii")}]}
    out = run_dir / BUNDLE_NAME
    out.write_text(json.dumps(envelope, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return out


def sign_run(run_dir: Path, material: SigningMaterial, inputs: list[tuple[str, Path]],
             predicate: dict[str, Any]) -> None:
    """Sign report.pdf in place (if present), then write the bundle over everything; the token's session, if any,
    is closed after."""
    try:
        pdf = run_dir / "report.pdf"
        if pdf.exists():
            pdf.write_bytes(sign_pdf(pdf.read_bytes(), material))
        write_bundle(run_dir, material, inputs, {**predicate, "signer": material.details})
    finally:
        material.close()


# --- verify -------------------------------------------------------------------------------------------------------

@dataclass
class Verdict:
    ok: bool
    subject: str
    message: str
    skipped: bool = False

    def line(self) -> str:
        """One printed line, whatever the subject and message hold: both may carry names and strings from the run
        folder, the bundle or a certificate, and a newline there would print a forged verdict line."""
        status = "SKIP" if self.skipped else ("OK" if self.ok else "FAIL")
        return f"{status:<4} {shown(self.subject)}: {shown(self.message, limit=2 * SHOWN_CHARS)}"


def shown(text: str, *, limit: int = SHOWN_CHARS) -> str:
    """`text` as one printable line, as the report shows untrusted strings (`auditor.display.shown`: controls, bidi
    and invisible characters as ⟨U+202E⟩, mixed scripts marked), a byte of a file name that is not UTF-8 as `\\xff`,
    cut to about `limit` characters."""
    from auditor.display import shown as display

    bytes_shown = re.sub("[\udc80-\udcff]", lambda m: f"\\x{ord(m.group()) - 0xDC00:02x}", text)
    return display(bytes_shown, limit=limit, run=limit)


def verify_run(run_dir: Path, *, trust: Path | list[Path] | None = None, pubkey: Path | None = None,
               approver_trust: list[Path] | None = None, inputs: bool = False, inputs_root: Path | None = None,
               at: dt.datetime | None = None) -> list[Verdict]:
    """Every check on a signed run folder; the run holds when every verdict is ok (skipped ones included). The
    approver's sign-off (approval.dsse.json), when present, is checked last (`auditor.approval.check_approval`).

    `trust`: certificates (PEM files, possibly several in one, or folders of them) trusted for the signer and the
    time-stamping authority. `inputs`: every input the bundle names must be found and match (`inputs_root`: where
    to look besides the recorded paths). `at`: validate as of this time instead of now (the expiry of a
    certificate, years later)."""
    from auditor.approval import check_approval, load_trusted

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
    public = _load_pubkey(pubkey) if pubkey is not None else None
    trusted = load_trust(trust)
    approvers = load_trusted(approver_trust)

    statement, envelope_verdict = _check_envelope(bundle, public)
    if statement is None:
        return [envelope_verdict]
    root = run_dir.resolve()
    listed: set[str] = set()
    verdicts = [envelope_verdict]
    verdicts += [_check_subject(subject, root, listed, authentic=envelope_verdict.ok, inputs=inputs,
                                inputs_root=inputs_root) for subject in statement["subject"]]
    verdicts += _check_folder(root, listed)
    predicate = json_object(statement.get("predicate"))
    verdicts += _check_contents(root, listed, predicate, trusted, at=at)
    verdicts += _check_bundle_timestamp(root, bundle, trusted, at=at,
                                        expected=bool((predicate.get("signer") or {}).get("timestamp_authority")))
    try:
        bundle_sha256: str | None = _hash_regular(bundle, follow=False)
    except _Unreadable:
        bundle_sha256 = None
    return verdicts + check_approval(root, bundle_sha256=bundle_sha256, bundle_predicate=predicate,
                                     trusted=approvers)


def _check_contents(root: Path, listed: set[str], predicate: dict[str, Any], trusted: Any, *,
                    at: dt.datetime | None = None) -> list[Verdict]:
    """What evidence.json and report.pdf say, beyond their hashes: the predicate's claims, the PDF's signature and
    its attachment."""
    verdicts: list[Verdict] = []
    evidence = None
    if "evidence.json" in listed:
        evidence, problem = _read_evidence(root / "evidence.json")
        verdicts.append(_check_predicate(predicate, evidence) if problem is None
                        else Verdict(False, "evidence.json (predicate)", f"not compared: {problem}"))
    if "report.pdf" in listed:
        try:
            data = _read_regular(root / "report.pdf", limit=MAX_JSON_BYTES)
        except _Unreadable as exc:
            return [*verdicts, Verdict(False, "report.pdf (signature)", f"not checked: {exc}")]
        signer = json_object(predicate.get("signer"))
        verdicts += check_pdf_signature(data, trusted, certificate_sha256=signer.get("certificate_sha256"), at=at)
        verdicts.append(check_pdf_evidence(data, evidence))
    return verdicts


def _check_bundle_timestamp(root: Path, bundle: Path, trusted: list[Any], *, at: dt.datetime | None = None,
                            expected: bool = False) -> list[Verdict]:
    """bundle.tsr, when the run was signed with a TSA (`expected`: the predicate names one): an RFC 3161 token over
    the bundle's signature bytes, from a TSA one of `trusted` vouches for."""
    from auditor import trusted_time

    name = f"{BUNDLE_NAME} (trusted time)"
    if not os.path.lexists(root / TOKEN_NAME):
        return [Verdict(False, name, f"{TOKEN_NAME} is missing, but the bundle says the run was signed with a TSA "
                                     "(removed after signing)")] if expected else []
    try:
        token = _read_regular(root / TOKEN_NAME, limit=MAX_SMALL_BYTES)
        _statement, _payload, signatures = _parse_envelope(_read_regular(bundle, limit=MAX_SMALL_BYTES))
        signature = base64.b64decode(signatures[0]["sig"], validate=True)
    except (_Unreadable, ValueError, KeyError, IndexError, TypeError) as exc:
        return [Verdict(False, name, f"not checked: {str(exc)[:120]}")]
    facts = trusted_time.check_token(token, signature, trusted, at=at)
    if facts.problem or not facts.intact:
        return [Verdict(False, name, f"{TOKEN_NAME} is not a valid timestamp of the bundle's signature "
                                     f"({facts.problem or 'its imprint or signature does not match'})")]
    when = trusted_time.describe_utc(facts.time)
    if not facts.trusted:
        return [Verdict(False, name, f"the bundle's signature existed at {when} says {facts.tsa}, which no --trust "
                                     "certificate vouches for")]
    return [Verdict(True, name, f"the bundle's signature existed at {when}, vouched for by the TSA {facts.tsa} "
                                "(trusted)")]


def _read_evidence(path: Path) -> tuple[Any, str | None]:
    """The run folder's evidence.json, strictly parsed, or why it cannot be compared."""
    try:
        return strict_json(_read_regular(path, limit=MAX_JSON_BYTES), "evidence.json"), None
    except _Unreadable as exc:
        return None, f"evidence.json is {exc}"
    except BadJSON as exc:
        return None, str(exc)


def _check_predicate(predicate: dict[str, Any], evidence: Any) -> Verdict:
    """What the signed statement says about the run (audit, opinion, seed, day, schema) is what evidence.json
    says: the bundle vouches for these values, so they must be the run's."""
    name = "evidence.json (predicate)"
    if not isinstance(evidence, dict):
        return Verdict(False, name, "not compared: evidence.json is not a JSON object")
    run = json_object(evidence.get("run"))
    facts = {"audit": evidence.get("audit"), "opinion": evidence.get("opinion"), "seed": evidence.get("seed"),
             "evaluated_on": run.get("evaluated_on"), "evidence_schema": evidence.get("schema")}
    differ = [key for key, value in facts.items() if predicate.get(key) != value]
    if differ:
        return Verdict(False, name, f"the bundle's predicate states another {', '.join(differ)} than evidence.json")
    return Verdict(True, name, "audit, opinion, seed and evaluation day as the bundle's predicate states")


# --- strict JSON: what verify parses from the folder ----------------------------------------------------------------

class BadJSON(ValueError):
    """JSON that verify refuses: not UTF-8, not JSON, a duplicate key, NaN or Infinity, nested too deeply."""


class _DuplicateKey(Exception):
    pass


def strict_json(data: bytes, what: str) -> Any:
    """Parse `data` refusing what parsers disagree on: with a key twice, Python's json keeps the last value and
    others the first, so a forged `payload` before the genuine one would show two readers two documents."""
    try:
        value = json.loads(data.decode("utf-8"), object_pairs_hook=_unique_keys, parse_constant=_no_constant)
    except UnicodeDecodeError:
        raise BadJSON(f"{what} is not UTF-8") from None
    except _DuplicateKey as exc:
        raise BadJSON(f"duplicate key {str(exc.args[0])[:40]!r} in {what}") from None
    except RecursionError:
        raise BadJSON(f"{what} is nested more than {MAX_JSON_DEPTH} levels deep") from None
    except json.JSONDecodeError as exc:
        raise BadJSON(f"{what} is not JSON ({exc.msg}, line {exc.lineno})") from None
    except ValueError as exc:  # NaN or Infinity
        raise BadJSON(f"{what} is not JSON ({exc})") from None
    if _too_deep(value):
        raise BadJSON(f"{what} is nested more than {MAX_JSON_DEPTH} levels deep")
    return value


def json_object(value: object) -> dict[str, Any]:
    """`value` if it is a JSON object, else an empty one: a part of an untrusted document that may be missing or of
    another type."""
    return value if isinstance(value, dict) else {}


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    value = dict(pairs)
    if len(value) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(key)
            seen.add(key)
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def _too_deep(value: Any) -> bool:
    """Whether `value` nests more than MAX_JSON_DEPTH levels (iterative: the comparisons after it recurse)."""
    stack = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict | list):
            if level > MAX_JSON_DEPTH:
                return True
            stack.extend((child, level + 1) for child in (item.values() if isinstance(item, dict) else item))
    return False


# --- reading files of the run folder: regular files only, never blocking --------------------------------------------

class _Unreadable(Exception):
    """A path verify will not read; the message says what it is ("missing", "a FIFO (named pipe)", ...)."""

    def __init__(self, message: str, *, missing: bool = False) -> None:
        super().__init__(message)
        self.missing = missing


def _kind(mode: int) -> str:
    return "a symbolic link" if stat.S_ISLNK(mode) else kind_of(mode)


def _open_regular(path: Path, *, follow: bool) -> BinaryIO:
    """`path` opened for reading only if it is a regular file: checked before opening (opening a FIFO blocks, a
    device may act) and again on the descriptor, opened non-blocking (something swapped in between)."""
    try:
        mode = os.stat(path, follow_symlinks=follow).st_mode
        if not stat.S_ISREG(mode):
            raise _Unreadable(f"{_kind(mode)}, not a regular file")
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | (0 if follow else os.O_NOFOLLOW))
    except (FileNotFoundError, NotADirectoryError):
        raise _Unreadable("missing", missing=True) from None
    except OSError as exc:
        raise _Unreadable(f"unreadable ({exc.strerror or type(exc).__name__})") from None
    except ValueError:  # a NUL, or a lone surrogate from JSON: no file can have this name
        raise _Unreadable("missing (a name no file can have)", missing=True) from None
    handle = os.fdopen(fd, "rb")
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        handle.close()
        raise _Unreadable("replaced while being read: not a regular file")
    return handle


def _read_regular(path: Path, *, limit: int) -> bytes:
    """The bytes of a regular file of the run folder (a symbolic link is refused), at most `limit` of them."""
    with _open_regular(path, follow=False) as handle:
        too_large = os.fstat(handle.fileno()).st_size > limit
        data = b"" if too_large else handle.read(limit + 1)  # + 1: the file may grow while it is read
    if too_large or len(data) > limit:
        raise _Unreadable(f"larger than the {limit >> 20} MiB allowed")
    return data


def _hash_regular(path: Path, *, follow: bool) -> str:
    digest = hashlib.sha256()
    with _open_regular(path, follow=follow) as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# --- the envelope -------------------------------------------------------------------------------------------------

def _check_envelope(bundle: Path, public: Any) -> tuple[dict[str, Any] | None, Verdict]:
    from cryptography.exceptions import InvalidSignature

    try:
        statement, payload, signatures = _parse_envelope(_read_regular(bundle, limit=MAX_SMALL_BYTES))
    except _Unreadable as exc:
        return None, Verdict(False, BUNDLE_NAME, f"unreadable envelope (the bundle is {exc})")
    except ValueError as exc:
        return None, Verdict(False, BUNDLE_NAME, f"unreadable envelope ({str(exc)[:160]})")
    if public is None:
        return statement, Verdict(False, BUNDLE_NAME, "signature not checked: no --pubkey given (hashes below are "
                                                      "checked against an unauthenticated list)")
    wanted = keyid(public)
    message = pae(PAYLOAD_TYPE, payload)
    for entry in signatures:
        if not isinstance(entry, dict) or entry.get("keyid") not in (wanted, None, "") \
                or not isinstance(entry.get("sig"), str):
            continue
        try:
            _verify_raw(public, base64.b64decode(entry["sig"], validate=True), message)
        except (InvalidSignature, ValueError):
            continue
        predicate = statement.get("predicate")
        signer = predicate.get("signer") if isinstance(predicate, dict) else None
        named = signer.get("bundle_keyid") if isinstance(signer, dict) else None
        if named != wanted:
            return statement, Verdict(False, BUNDLE_NAME, f"signature valid with key {wanted[:16]}…, but the "
                                      f"predicate names key {str(named)[:16]}… as the signer (re-signed by "
                                      "another key)")
        return statement, Verdict(True, BUNDLE_NAME, f"{_key_kind(public)} signature valid (key {wanted[:16]}…, the "
                                  "key the predicate names)")
    return statement, Verdict(False, BUNDLE_NAME, "signature does not verify with the given public key (the bundle "
                                                  "was edited or signed by another key)")


def _verify_raw(public: Any, signature: bytes, message: bytes) -> None:
    """An Ed25519 signature, or RSA PKCS#1 v1.5 over SHA-256 (a token's key); InvalidSignature otherwise."""
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ed25519, padding

    if isinstance(public, ed25519.Ed25519PublicKey):
        public.verify(signature, message)
    else:
        public.verify(signature, message, padding.PKCS1v15(), hashes.SHA256())


def _key_kind(public: Any) -> str:
    from cryptography.hazmat.primitives.asymmetric import ed25519

    return "Ed25519" if isinstance(public, ed25519.Ed25519PublicKey) else f"RSA-{public.key_size}"


def _parse_envelope(data: bytes) -> tuple[dict[str, Any], bytes, list[Any]]:
    """(statement, payload bytes, signatures) of a DSSE envelope; ValueError naming what is wrong with its shape."""
    import binascii

    envelope = strict_json(data, "the envelope")
    if not isinstance(envelope, dict) or envelope.get("payloadType") != PAYLOAD_TYPE:
        raise ValueError(f"not a DSSE envelope with payloadType {PAYLOAD_TYPE}")
    if not isinstance(envelope.get("payload"), str) or not isinstance(envelope.get("signatures"), list):
        raise ValueError("the envelope's payload is not a string or its signatures not a list")
    try:
        payload = base64.b64decode(envelope["payload"], validate=True)
    except binascii.Error:
        raise ValueError("the payload is not base64") from None
    statement = strict_json(payload, "the statement")
    if not isinstance(statement, dict) or statement.get("_type") != STATEMENT_TYPE:
        raise ValueError("not an in-toto Statement v1")
    if not isinstance(statement.get("subject"), list):
        raise ValueError("the statement has no subject list")
    if len(statement["subject"]) > MAX_WALK_ENTRIES:
        raise ValueError(f"the statement lists more than {MAX_WALK_ENTRIES:,} subjects")
    return statement, payload, envelope["signatures"]


# --- subjects and the folder ----------------------------------------------------------------------------------------

def _check_subject(subject: Any, root: Path, listed: set[str], *, authentic: bool, inputs: bool = False,
                   inputs_root: Path | None = None) -> Verdict:
    """One subject of the statement: its path refused, or its file re-hashed."""
    if not isinstance(subject, dict) or not isinstance(subject.get("name"), str):
        return Verdict(False, "?", "malformed subject in the bundle")
    name = subject["name"]
    digest, annotations = subject.get("digest"), subject.get("annotations", {})
    if not isinstance(digest, dict) or not isinstance(annotations, dict):
        return Verdict(False, name, "malformed subject in the bundle (digest and annotations must be objects)")
    refused = _refused_path(name)
    if refused is not None:
        return Verdict(False, name, refused)
    if annotations.get("kind", "artifact") == "input":
        role = str(annotations.get("role", "input"))
        return _check_input(name, root / name, digest.get("sha256"), role, authentic=authentic, required=inputs,
                            inputs_root=inputs_root)
    return _check_artifact(name, root, digest.get("sha256"), listed)


def _refused_path(name: str) -> str | None:
    if not name:
        return "empty path in the bundle: refused"
    if "\\" in name:
        return "backslash in a path in the bundle: refused"
    if "\x00" in name:
        return "NUL in a path in the bundle: refused"
    try:
        os.fsencode(name)
    except UnicodeEncodeError:
        return "a lone surrogate in a path in the bundle (no file can have this name): refused"
    if PurePosixPath(name).is_absolute() or Path(name).is_absolute():
        return "absolute path in the bundle: refused"
    return None


def _check_artifact(name: str, root: Path, expected: Any, listed: set[str]) -> Verdict:
    """A file of the run folder: listed once, by its plain relative path, a regular file (not a link) inside."""
    pure = PurePosixPath(name)
    if ".." in pure.parts:
        return Verdict(False, name, "`..` in an artifact path: refused")
    if pure.as_posix() != name:
        return Verdict(False, name, "not a plain relative path (`.`, `//` or a trailing `/`): refused")
    if name in listed:
        return Verdict(False, name, "listed twice in the bundle: refused")
    listed.add(name)
    path = root / pure
    try:
        inside = Path(os.path.realpath(path.parent)).is_relative_to(root)
    except (OSError, ValueError):
        inside = False
    if not inside:
        return Verdict(False, name, "its folder is a link out of the run folder, or unreadable: refused")
    try:
        actual = _hash_regular(path, follow=False)
    except _Unreadable as exc:
        if exc.missing:
            return Verdict(False, name, "listed in the bundle but missing from the run folder")
        return Verdict(False, name, f"listed in the bundle, but {exc}")
    return _compare(name, actual, expected)


def _check_input(name: str, path: Path, expected: Any, role: str, *, authentic: bool, required: bool = False,
                 inputs_root: Path | None = None) -> Verdict:
    """An input the audit read, outside the run folder: looked for at its recorded path (`path`, relative to the
    run folder), then under `inputs_root` (by that path without its leading `../`, then by its file name), and
    re-hashed where first found (a regular file, links followed). Read only when the bundle is authenticated (a
    forged bundle could name any file of the verifier's and have a prefix of its hash printed). Not found: a SKIP
    that says how to check it, or, when `required` (`verify --inputs`), a failure."""
    if not authentic:
        return Verdict(True, name, f"{role}: not checked (the bundle is not authenticated, so paths it names "
                                   "outside the run folder are not read)", skipped=True)
    for candidate, under_root in _input_places(name, path, inputs_root):
        where = f" (found under --inputs-root: {candidate})" if under_root else ""
        try:
            actual = _hash_regular(candidate, follow=True)
        except _Unreadable as exc:
            if exc.missing:
                continue
            return Verdict(False, name, f"{role}: {exc}{where}")
        verdict = _compare(name, actual, expected)
        verdict.message = f"{role}: {verdict.message}{where}"
        return verdict
    if not required:
        return Verdict(True, name, f"{role}: not found here (outside the run folder): not checked; `auditor verify "
                                   "--inputs --inputs-root DIR` checks it", skipped=True)
    if inputs_root is None:
        return Verdict(False, name, f"{role}: not found at {name}: cannot be checked (give --inputs-root DIR if the "
                                    "inputs were moved)")
    folder = "" if os.path.isdir(inputs_root) else " (which is not a folder)"
    return Verdict(False, name, f"{role}: not found at {name} or under --inputs-root {inputs_root}{folder}: cannot "
                                "be checked")


def _input_places(name: str, path: Path, inputs_root: Path | None) -> list[tuple[Path, bool]]:
    """Where `verify` looks for the input recorded as `name`, in order, each with whether it is under
    `inputs_root`: the recorded path; then `inputs_root` / the name without its leading `..` parts, and
    `inputs_root` / its file name. A name that would still climb out of `inputs_root` (a `..` further on) is not
    looked for there."""
    places = [(path, False)]
    if inputs_root is None:
        return places
    parts = list(PurePosixPath(name).parts)
    while parts and parts[0] == "..":
        parts.pop(0)
    for relative in (parts, parts[-1:]):
        if not relative or ".." in relative:
            continue
        candidate = Path(inputs_root, *relative)
        if all(candidate != seen for seen, _ in places):
            places.append((candidate, True))
    return places


def _compare(name: str, actual: str, expected: Any) -> Verdict:
    if not isinstance(expected, str):
        return Verdict(False, name, "no sha256 in the bundle")
    if actual == expected:
        return Verdict(True, name, "sha256 matches")
    return Verdict(False, name, f"sha256 differs (file changed since signing): {actual[:12]}… ≠ {expected[:12]}…")


def _check_folder(root: Path, listed: set[str]) -> list[Verdict]:
    """Every entry of the run folder that is not a listed regular file fails: a file or folder added after signing,
    a FIFO, socket, device or link (none is ever opened). An entry inside an unlisted folder is counted in that
    folder's line, not given its own."""
    entries, limit = _walk(root)
    folders = {parent.as_posix() for name in listed for parent in PurePosixPath(name).parents} - {"."}
    unlisted: dict[str, int] = {}  # name -> lstat mode, of the topmost entries nothing vouches for
    inside: dict[str, int] = {}  # unlisted folder -> entries below it
    for name, mode in sorted(entries):
        if name in listed or name == BUNDLE_NAME or (stat.S_ISDIR(mode) and name in folders) \
                or (name in (APPROVAL_NAME, TOKEN_NAME) and stat.S_ISREG(mode)):  # checked on their own lines
            continue
        parent = next((up for up in map(str, PurePosixPath(name).parents) if up in unlisted), None)
        if parent is not None:
            inside[parent] = inside.get(parent, 0) + 1
        else:
            unlisted[name] = mode
    verdicts = [Verdict(False, name, _unlisted(mode, inside.get(name, 0))) for name, mode in unlisted.items()]
    if limit is not None:
        verdicts.append(Verdict(False, "(run folder)", limit))
    return verdicts


def _unlisted(mode: int, inside: int) -> str:
    if stat.S_ISREG(mode):
        return "present but not listed in the bundle (added after signing)"
    if stat.S_ISDIR(mode):
        holds = f", with {inside:,} entries inside" if inside else ""
        return f"a folder that holds no file listed in the bundle{holds} (added after signing)"
    return f"{_kind(mode)}, not a regular file listed in the bundle (added after signing)"


def _walk(root: Path) -> tuple[list[tuple[str, int]], str | None]:
    """(relative name, lstat mode) of every entry below `root`, links not followed; iterative, and stopped with the
    reason at MAX_WALK_DEPTH levels or MAX_WALK_ENTRIES entries (3,000 nested folders overflowed a recursive
    walk)."""
    entries: list[tuple[str, int]] = []
    stack: list[tuple[str, str, int]] = [(str(root), "", 1)]
    while stack:
        folder, prefix, depth = stack.pop()
        try:
            with os.scandir(folder) as scan:
                for entry in scan:
                    if len(entries) >= MAX_WALK_ENTRIES:
                        return entries, f"more than {MAX_WALK_ENTRIES:,} entries: not walked further (a signed " \
                                        "run holds a few files)"
                    mode = entry.stat(follow_symlinks=False).st_mode
                    entries.append((prefix + entry.name, mode))
                    if stat.S_ISDIR(mode) and depth >= MAX_WALK_DEPTH:
                        return entries, f"folders nested more than {MAX_WALK_DEPTH} levels deep " \
                                        f"({prefix + entry.name}): not walked further"
                    if stat.S_ISDIR(mode):
                        stack.append((entry.path, f"{prefix}{entry.name}/", depth + 1))
        except OSError as exc:
            return entries, f"cannot read the folder {prefix or '.'} ({exc.strerror or type(exc).__name__})"
    return entries, None


def check_pdf_signature(data: bytes, trusted: list[Any], *, certificate_sha256: Any = None,
                        at: dt.datetime | None = None) -> list[Verdict]:
    """The PDF's certifying signature: intact, trusted by one of `trusted`, no changes, made with the certificate
    whose sha256 the bundle's predicate states (when given). Without trusted time it must cover the entire file;
    with it (PAdES B-LTA) it is validated as of `at` at the time its timestamp vouches for, and the revisions after
    it may only add validation data and timestamps (`auditor.trusted_time`)."""
    from pyhanko.pdf_utils.reader import PdfFileReader

    name = "report.pdf (signature)"
    with _quiet_pyhanko():
        try:
            reader = PdfFileReader(BytesIO(data), strict=False)
            signatures = reader.embedded_regular_signatures
            stamps = reader.embedded_timestamp_signatures
        except Exception as exc:
            return [Verdict(False, name, f"unreadable PDF ({type(exc).__name__})")]
    if len(signatures) != 1:
        return [Verdict(False, name, f"expected one signature, found {len(signatures)}")]
    if stamps or _has_signature_timestamp(signatures[0]):
        return _check_pdf_lta(data, trusted, certificate_sha256=certificate_sha256, at=at)
    return [_check_pdf_plain(signatures[0], trusted, certificate_sha256=certificate_sha256, at=at)]


def _has_signature_timestamp(signature: Any) -> bool:
    from pyhanko.sign.validation.generic_cms import extract_tst_data_iter

    try:
        return any(True for _ in extract_tst_data_iter(signature.signer_info, signed=False))
    except Exception:
        return False


def _check_pdf_plain(signature: Any, trusted: list[Any], *, certificate_sha256: Any,
                     at: dt.datetime | None) -> Verdict:
    """A signature without trusted time (PAdES B-B): its certificate is checked at `at` (now by default)."""
    from pyhanko.sign.validation import validate_pdf_signature
    from pyhanko.sign.validation.status import SignatureCoverageLevel
    from pyhanko_certvalidator import ValidationContext

    name = "report.pdf (signature)"
    roots = [_to_asn1(cert) for cert in trusted]
    context = ValidationContext(trust_roots=roots, allow_fetching=False, revocation_mode="soft-fail", moment=at)
    with _quiet_pyhanko():
        try:
            # the signature must cover the entire file (below), so no later revision exists to analyse: pyHanko's
            # difference analysis reads every object of an amended file again and took 18-100 s on the demo's
            status = validate_pdf_signature(signature, context, skip_diff=True)
        except Exception as exc:
            return Verdict(False, name, f"validation failed ({type(exc).__name__}: {str(exc)[:80]})")
    problems = []
    if not status.intact or not status.valid:
        problems.append("signature not intact (the signed bytes changed)")
    if status.coverage != SignatureCoverageLevel.ENTIRE_FILE:
        problems.append("does not cover the entire file (bytes added after signing)")
    if status.docmdp_ok is False:
        problems.append("changes after certification")
    if not trusted:
        problems.append("signer not checked: no --trust certificate given")
    elif not status.trusted:
        problems.append("signer not trusted by the --trust certificates (or its certificate is not valid "
                        f"{'at --at' if at else 'today'}: without a timestamp nothing proves when it signed)")
    problems += _named_certificate(status.signing_cert, certificate_sha256)
    subject = status.signing_cert.subject.human_friendly
    if problems:
        return Verdict(False, name, "; ".join(problems) + f" (signer {subject})")
    named = ", the certificate the predicate names" if certificate_sha256 is not None else ""
    return Verdict(True, name, f"intact, trusted ({subject}{named}), covers the entire file, certified no-changes; "
                               "no trusted time (signed without a TSA)")


def _named_certificate(cert: Any, certificate_sha256: Any) -> list[str]:
    fingerprint = hashlib.sha256(cert.dump()).hexdigest()
    if certificate_sha256 is not None and fingerprint != certificate_sha256:
        return [f"signed with certificate {fingerprint[:16]}…, but the bundle's predicate names "
                f"{str(certificate_sha256)[:16]}…"]
    return []


def _check_pdf_lta(data: bytes, trusted: list[Any], *, certificate_sha256: Any,
                   at: dt.datetime | None) -> list[Verdict]:
    """Three lines: the signature (valid at the timestamped signing time), the trusted time, the long-term
    validation data and document timestamps."""
    from auditor import trusted_time

    name = "report.pdf (signature)"
    try:
        facts = trusted_time.validate_lta(data, trusted, at=at)
    except Exception as exc:
        return [Verdict(False, name, f"validation failed ({type(exc).__name__}: {str(exc)[:80]})")]
    problems = []
    if not facts.intact:
        problems.append("signature not intact (the signed bytes changed)")
    if not trusted:
        problems.append("signer not checked: no --trust certificate given")
    elif facts.problem:
        problems.append(facts.problem)
    if facts.later:
        problems.append(f"changed after signing: {facts.later}")
    problems += _named_certificate(facts.signer_cert, certificate_sha256)
    expiry = facts.signer_cert["tbs_certificate"]["validity"]["not_after"].native
    moment = at or dt.datetime.now(dt.UTC)
    since = f"; the certificate has since expired ({expiry.date().isoformat()})" if expiry < moment else ""
    named = ", the certificate the predicate names" if certificate_sha256 is not None else ""
    when = trusted_time.describe_utc(facts.signing_time) if facts.signing_time else "?"
    verdicts = [Verdict(False, name, "; ".join(problems) + f" (signer {facts.signer})") if problems else
                Verdict(True, name, f"intact, trusted ({facts.signer}{named}), certified no-changes; valid at the "
                                    f"timestamped signing time {when}{since}")]
    if facts.signing_time is None:
        stated = facts.stated_time
        message = "the signature carries no timestamp" if stated is None else \
            f"the signature's timestamp says {trusted_time.describe_utc(stated)} but was not validated (the " \
            "signature failed above)"
        verdicts.append(Verdict(False, "report.pdf (trusted time)", message))
    else:
        tsa_ok = facts.tsa_trusted and facts.intact
        verdicts.append(Verdict(tsa_ok, "report.pdf (trusted time)",
                                f"signed no later than {when}, vouched for by the TSA {facts.tsa}"
                                + (" (trusted)" if tsa_ok else " (NOT trusted by the --trust certificates)")))
    certs, ocsps, crls = facts.dss
    stamps = "; ".join(f"{trusted_time.describe_utc(t)} by {who}" for t, who in facts.document_timestamps)
    lta_ok = bool(facts.document_timestamps) and facts.later is None and facts.ok
    verdicts.append(Verdict(lta_ok, "report.pdf (long-term validation)",
                            f"validation data embedded ({certs} certificates, {ocsps} OCSP responses, {crls} CRLs); "
                            f"document timestamp {stamps or 'missing (PAdES B-LT, not B-LTA)'}; later revisions "
                            + ("add only validation data and timestamps" if facts.later is None else
                               "change the signed document")))
    return verdicts


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
            attached = strict_json(_attachment(data, ATTACHMENT), "the attachment")
        except _NoAttachment as exc:
            return Verdict(False, name, str(exc))
        except BadJSON as exc:
            return Verdict(False, name, f"the attachment does not read as JSON ({exc})")
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
    """The bundle's public key: Ed25519 (PEM, from `auditor keygen`), or an RSA key or certificate (PEM) when a
    PKCS#11 token signed the bundle."""
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ed25519, rsa

    data = read_bytes(Path(path), limit=MAX_SMALL_BYTES, what="public key")  # a FIFO would block the read
    try:
        key = x509.load_pem_x509_certificate(data).public_key() if b"CERTIFICATE-----" in data \
            else serialization.load_pem_public_key(data)
    except ValueError:
        raise InputError("not a PEM public key", file=path, fix="give bundle-ed25519.pub.pem from `auditor keygen`") \
            from None
    if not isinstance(key, ed25519.Ed25519PublicKey | rsa.RSAPublicKey):
        raise InputError("not an Ed25519 or RSA public key", file=path, fix="give bundle-ed25519.pub.pem")
    return key


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


def load_trust(paths: Path | list[Path] | None) -> list[Any]:
    """Certificates from PEM/DER files (a PEM file may hold several) and folders of them (*.pem, *.crt, *.cer,
    *.der), as cryptography certificates; an empty list when none is given."""
    from cryptography import x509

    if paths is None:
        return []
    found: list[Any] = []
    for path in [paths] if isinstance(paths, Path) else paths:
        path = Path(path)
        files = sorted(p for p in path.iterdir() if p.suffix.lower() in {".pem", ".crt", ".cer", ".der"}
                       and p.is_file()) if path.is_dir() else [path]
        if path.is_dir() and not files:
            raise InputError("no certificate files (*.pem, *.crt, *.cer, *.der) in this folder", file=path,
                             fix="give the folder that holds the trusted certificates, or the files")
        in_folder: list[Any] = []
        for file in files:
            data = read_bytes(file, limit=MAX_SMALL_BYTES, what="certificate")
            if b"-----BEGIN" in data:
                try:
                    certs = x509.load_pem_x509_certificates(data) if b"CERTIFICATE-----" in data else []
                except ValueError:
                    certs = []
                if not certs and not path.is_dir():  # a folder may hold keys beside the certificates
                    raise InputError("no X.509 certificate in this PEM file", file=file,
                                     fix="give signer-cert.pem from `auditor keygen`, or the CA's certificate")
                in_folder += certs
            elif not path.is_dir() or file.suffix.lower() in {".der", ".cer", ".crt"}:
                in_folder.append(_load_cert(file))
        if path.is_dir() and not in_folder:
            raise InputError("no X.509 certificate in this folder", file=path,
                             fix="give the folder that holds the trusted certificates, or the files")
        found += in_folder
    return found


def _load_cert(path: Path) -> Any:
    from cryptography import x509

    data = read_bytes(Path(path), limit=MAX_SMALL_BYTES, what="certificate")
    try:
        return x509.load_pem_x509_certificate(data) if b"-----BEGIN" in data else x509.load_der_x509_certificate(data)
    except ValueError:
        raise InputError("not an X.509 certificate (PEM or DER)", file=path,
                         fix="give signer-cert.pem from `auditor keygen`") from None
