"""A person's signing identity — a key in a PKCS#12 file or on a PKCS#11 token, with its certificate and CA chain —
and the signature entry it puts in a DSSE envelope (an approval today; a response or an acceptance of a finding
tomorrow), checked the way report.pdf's signature is: chain, validity period, revocation, trusted time.

A signature entry is the DSSE `signatures` item with what a verifier needs and nobody could forge usefully (each part
is signed by someone else: the CA, the OCSP responder, the TSA):

    {"keyid": "<certificate sha256>", "sig": "<base64>", "alg": "rsa-pss-sha256", "certificate": "<PEM>",
     "chain": ["<PEM>", ...], "validation_data": {"ocsp": ["<b64 DER>"], "crls": []},
     "timestamp": "<b64 DER RFC 3161 token over the signature bytes>"}

`alg` is one of ALGORITHMS (an entry without it is RSASSA-PSS, ECDSA or Ed25519 by the key's type, as approvals
were written before); `chain`, `validation_data` and `timestamp` are optional."""

from __future__ import annotations

import base64
import binascii
import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from auditor.core.errors import InputError
from auditor.core.files import MAX_SMALL_BYTES, read_bytes
from auditor.trust import net, timestamps
from auditor.trust.certificates import quiet_pyhanko, to_asn1
from auditor.trust.dsse import sign_message, verify_message

ALGORITHMS = ("rsa-pss-sha256", "rsa-pkcs1v15-sha256", "ecdsa-sha256", "ed25519")
CLOCK_SKEW = dt.timedelta(minutes=5)  # a claimed time this far ahead of the verifier's clock is still "now"
FETCH_SECONDS = 20


@dataclass
class Identity:
    """An open signing identity; `close` releases a token's session."""

    certificate: Any  # cryptography x509.Certificate
    chain: list[Any]  # cryptography certificates above it (issuing CA first), possibly empty
    sign: Callable[[bytes], bytes]
    alg: str
    close: Callable[[], None] = lambda: None
    source: str = ""  # "PKCS#12 file x.p12", "PKCS#11 token T"
    pdf_signer: Any = None  # the same key as a pyHanko signer, for the approval signature inside report.pdf

    @property
    def subject(self) -> str:
        return str(self.certificate.subject.rfc4514_string())

    @property
    def sha256(self) -> str:
        from cryptography.hazmat.primitives import hashes

        return str(self.certificate.fingerprint(hashes.SHA256()).hex())

    @property
    def pem(self) -> str:
        from cryptography.hazmat.primitives import serialization

        return str(self.certificate.public_bytes(serialization.Encoding.PEM).decode("ascii"))


def load_pkcs12_identity(path: Path, passphrase: str, *, passphrase_env: str = "AUDITOR_KEY_PASS",
                         who: str = "the approver") -> Identity:
    """A PKCS#12 file's key, certificate (valid today) and CA chain; one InputError line otherwise."""
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
    from cryptography.hazmat.primitives.serialization import pkcs12

    data = read_bytes(Path(path), limit=MAX_SMALL_BYTES, what="key file")
    try:
        key, cert, extra = pkcs12.load_key_and_certificates(data, passphrase.encode("utf-8"))
    except ValueError:
        raise InputError(f"cannot open the PKCS#12 key: wrong passphrase in {passphrase_env}, or not a PKCS#12 file",
                         file=path, fix=f"check {passphrase_env} and the file") from None
    if key is None or cert is None:
        raise InputError("the PKCS#12 file holds no private key and certificate", file=path,
                         fix="export the key together with its certificate")
    if not isinstance(key, rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey | ed25519.Ed25519PrivateKey):
        raise InputError(f"{who}'s key is {type(key).__name__}, not RSA, ECDSA or Ed25519", file=path,
                         fix="use an RSA key (`auditor keygen` makes RSA-3072)")
    _valid_today(cert, path, who)
    alg = "rsa-pss-sha256" if isinstance(key, rsa.RSAPrivateKey) else \
        "ecdsa-sha256" if isinstance(key, ec.EllipticCurvePrivateKey) else "ed25519"
    from pyhanko.sign.signers import SimpleSigner

    with quiet_pyhanko():
        pdf_signer = SimpleSigner.load_pkcs12_data(data, other_certs=[to_asn1(c) for c in extra],
                                                   passphrase=passphrase.encode("utf-8"))
    return Identity(certificate=cert, chain=list(extra), sign=lambda message: sign_message(key, message), alg=alg,
                    source=f"PKCS#12 file {Path(path).name}", pdf_signer=pdf_signer)


@dataclass
class TokenOptions:
    """Where a person's key is on a PKCS#11 token (the command's options; the spec's `signing.pkcs11` for the
    tool's key)."""

    module: Path
    token: str
    key_label: str
    cert_label: str | None = None
    cert: Path | None = None


def open_token_identity(options: TokenOptions, pin_env: str, *, who: str = "the approver") -> Identity:
    """A key on a PKCS#11 token (RSA PKCS#1 v1.5 over SHA-256, made by the token), its certificate from the token
    or `cert`; one InputError line per problem."""
    from auditor.trust.token import open_token_key

    key = open_token_key(options, pin_env, spec_file=Path(options.module), chain=None)
    try:
        _valid_today(key.certificate, Path(options.module), who)
    except InputError:
        key.close()
        raise
    return Identity(certificate=key.certificate, chain=[], sign=key.sign, alg="rsa-pkcs1v15-sha256",
                    close=key.close, source=f"PKCS#11 token {options.token}", pdf_signer=key.signer)


def _valid_today(cert: Any, path: Path, who: str) -> None:
    now = dt.datetime.now(dt.UTC)
    if not cert.not_valid_before_utc <= now <= cert.not_valid_after_utc:
        raise InputError(f"{who}'s certificate is not valid today (valid {cert.not_valid_before_utc:%Y-%m-%d} to "
                         f"{cert.not_valid_after_utc:%Y-%m-%d})", file=path,
                         fix="use a current certificate (`auditor keygen` makes one)")


# --- writing an entry --------------------------------------------------------------------------------------------

def signature_entry(identity: Identity, message: bytes, *, timestamp_url: str | None = None,
                    tsa_roots: list[Any] | None = None) -> dict[str, Any]:
    """The DSSE signature entry of `message` (the PAE) by `identity`: its certificate and chain, the revocation data
    of every certificate that names a source (fetched now; a failure is one InputError line), and with a TSA a token
    over the signature bytes that chains to `tsa_roots`."""
    from cryptography.hazmat.primitives import serialization

    signature = identity.sign(message)
    entry: dict[str, Any] = {"keyid": identity.sha256, "sig": base64.b64encode(signature).decode("ascii"),
                             "alg": identity.alg, "certificate": identity.pem}
    if identity.chain:
        entry["chain"] = [c.public_bytes(serialization.Encoding.PEM).decode("ascii") for c in identity.chain]
    revocation = _collect_revocation(identity)
    if revocation:
        entry["validation_data"] = revocation
    if timestamp_url:
        try:
            token = timestamps.token_for(timestamp_url, signature)
        except timestamps.TimestampError as exc:
            raise timestamps.read_error(timestamp_url, exc) from None
        facts = timestamps.check_token(token, signature, tsa_roots or [])
        if not facts.intact or not facts.trusted:
            raise InputError(f"the TSA at {timestamps.without_credentials(timestamp_url)} signs with a certificate "
                             f"({facts.tsa}) that does not chain to a trusted root", where="--timestamp-url",
                             fix="name the TSA's root certificate (AUDITOR_TSA_ROOTS)")
        entry["timestamp"] = base64.b64encode(token).decode("ascii")
    return entry


def _collect_revocation(identity: Identity) -> dict[str, list[str]]:
    """OCSP responses and CRLs for the certificate and its chain, when any of them names a source; fetched now, over
    http(s) only and all within FETCH_SECONDS (`net.fetchers`: a responder that trickles its answer is cut off)."""
    import asyncio

    from pyhanko_certvalidator import CertificateValidator, ValidationContext

    certs = [to_asn1(c) for c in [identity.certificate, *identity.chain]]
    if not any(c.ocsp_urls or c.crl_distribution_points for c in certs):
        return {}
    roots = [c for c in certs if c.self_signed != "no"] or certs[-1:]
    context = ValidationContext(trust_roots=roots, other_certs=certs, allow_fetching=True,
                                revocation_mode="hard-fail", fetcher_backend=net.fetchers(FETCH_SECONDS))
    validation = CertificateValidator(certs[0], validation_context=context)
    with quiet_pyhanko():
        try:
            asyncio.run(asyncio.wait_for(validation.async_validate_usage(key_usage=set()),  # type: ignore[no-untyped-call]
                                         FETCH_SECONDS + 1))
        except Exception as exc:
            if isinstance(exc, TimeoutError):
                text = f"no complete answer within {FETCH_SECONDS} s"
            else:
                text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise InputError(f"the revocation status of your certificate cannot be established now from "
                             f"{_services(certs)}: {text[:160]}",
                             fix="check that its OCSP responder or CRL is reachable, and that it is not revoked") \
                from None
    return {"ocsp": [base64.b64encode(o.dump()).decode("ascii") for o in context.ocsps],
            "crls": [base64.b64encode(c.dump()).decode("ascii") for c in context.crls]}


def _services(certs: list[Any]) -> str:
    """The revocation services the certificates name, for an error line: the first OCSP responder and CRL."""
    ocsp = next((url for c in certs for url in c.ocsp_urls), None)
    try:
        crl = next((p.url for c in certs for p in c.crl_distribution_points if p.url), None)
    except ValueError:  # a distribution point relative to its issuer: no URL to name
        crl = None
    named = [f"{what} {timestamps.without_credentials(url)[:120]}" for what, url in (("the OCSP responder", ocsp),
                                                                                   ("the CRL at", crl)) if url]
    return " or ".join(named) or "its revocation services"


# --- checking an entry ----------------------------------------------------------------------------------------------

@dataclass
class EntryFacts:
    """What a signature entry proves, in plain terms: whose signature, when, and how far it is trusted."""

    certificate: Any  # cryptography x509.Certificate
    subject: str
    sha256: str
    time: dt.datetime  # the trusted time when the entry has a valid timestamp, else the claimed time
    trusted_time: str | None  # "vouched for by the TSA …" when the time is the TSA's
    problems: list[str] = field(default_factory=list)  # any one fails the signature
    identity: str | None = None  # "trusted (…)", or why not; None when no roots were given
    identity_ok: bool = False
    unchecked_revocation: list[str] = field(default_factory=list)


def parse_certificates(entry: dict[str, Any]) -> tuple[Any, list[Any]]:
    """The entry's certificate and chain (cryptography); ValueError naming what is malformed."""
    from cryptography import x509

    try:
        cert = x509.load_pem_x509_certificate(str(entry["certificate"]).encode("utf-8"))
        chain = [x509.load_pem_x509_certificate(str(pem).encode("utf-8")) for pem in entry.get("chain") or []]
        cert.public_key(), cert.subject.rfc4514_string(), cert.not_valid_before_utc
    except Exception:
        raise ValueError("malformed: the certificate or its chain is not PEM X.509 cryptography can read") from None
    if not isinstance(entry.get("chain", []), list) or len(chain) > 10:
        raise ValueError("malformed: the chain is not a list of at most 10 certificates")
    return cert, chain


def verify_entry_signature(entry: dict[str, Any], message: bytes) -> None:
    """The entry's signature over `message` by its certificate's key, by its `alg`; ValueError naming the failure."""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric import rsa

    cert, _ = parse_certificates(entry)
    alg = entry.get("alg")
    if alg is not None and alg not in ALGORITHMS:
        raise ValueError(f"malformed: unknown algorithm {str(alg)[:40]!r}")
    public = cert.public_key()
    if alg == "rsa-pkcs1v15-sha256" and not isinstance(public, rsa.RSAPublicKey):
        raise ValueError("malformed: an RSA algorithm with a key that is not RSA")
    try:
        signature = base64.b64decode(str(entry["sig"]), validate=True)
    except (binascii.Error, KeyError):
        raise ValueError("malformed: the signature is not base64") from None
    try:
        verify_message(public, signature, message, rsa_padding="pkcs1v15" if alg == "rsa-pkcs1v15-sha256" else "pss")
    except InvalidSignature:
        raise ValueError("signature invalid: it does not verify with the certificate the entry carries (edited after "
                         "signing)") from None
    except ValueError as exc:
        raise ValueError(f"signature not checked: {exc}") from None


def check_entry(entry: dict[str, Any], *, claimed: dt.datetime, roots: list[Any] | None, tsa_roots: list[Any],
                at: dt.datetime | None = None, not_before: dt.datetime | None = None,
                require_revocation: bool = False) -> EntryFacts:
    """What a signature entry (its signature already checked: `verify_entry_signature`) proves: the time — the
    TSA's when its token validates, else the signer's claim, which must not lie ahead of `at` (default now) or
    before `not_before` (what it signs cannot be older than that) —; the certificate valid at that time and, when
    only claimed, still valid at `at` too; its identity validated against `roots` (trust anchors: a CA, or the very
    certificate) at that time, with the revocation data it carries."""
    from cryptography.hazmat.primitives import hashes

    cert, chain = parse_certificates(entry)
    moment = at or dt.datetime.now(dt.UTC)
    facts = EntryFacts(certificate=cert, subject=cert.subject.rfc4514_string(),
                       sha256=cert.fingerprint(hashes.SHA256()).hex(), time=claimed, trusted_time=None)
    token = entry.get("timestamp")
    proven = None
    if isinstance(token, str):
        try:
            signature = base64.b64decode(str(entry["sig"]), validate=True)
            raw = base64.b64decode(token, validate=True)
        except binascii.Error:
            facts.problems.append("its timestamp is not base64")
        else:
            stamp = timestamps.check_token(raw, signature, tsa_roots)
            if stamp.problem or not stamp.intact:
                why = stamp.problem or "the imprint does not match"
                facts.problems.append(f"its timestamp is not a valid token over the signature ({why})")
            elif not stamp.trusted:
                facts.problems.append(f"its timestamp is by {stamp.tsa}, which no --trust certificate vouches for")
            elif stamp.expires is not None and moment > stamp.expires:
                facts.trusted_time = None  # the TSA's word no longer holds: the claim is judged as a claim
            else:
                proven = stamp.time
                facts.trusted_time = f"vouched for by the TSA {stamp.tsa}"
    if proven is not None:
        facts.time = proven
        if abs((proven - claimed).total_seconds()) > CLOCK_SKEW.total_seconds():
            facts.problems.append(f"it claims {timestamps.describe_utc(claimed)}, but the TSA dates it "
                                  f"{timestamps.describe_utc(proven)}")
    elif claimed > moment + CLOCK_SKEW:
        facts.problems.append(f"it claims a time ahead of {'--at' if at else 'now'}: "
                              f"{timestamps.describe_utc(claimed)}")
    if not_before is not None and facts.time < not_before - CLOCK_SKEW:
        facts.problems.append(f"it is dated {timestamps.describe_utc(facts.time)}, before what it signs existed "
                              f"({timestamps.describe_utc(not_before)})")
    start, end = cert.not_valid_before_utc, cert.not_valid_after_utc
    if not start <= facts.time <= end:
        facts.problems.append(f"its time is outside the certificate's validity ({start:%Y-%m-%d} to {end:%Y-%m-%d})")
    elif proven is None and not start <= moment <= end:
        facts.problems.append(f"the certificate is not valid {'at --at' if at else 'today'} ({start:%Y-%m-%d} to "
                              f"{end:%Y-%m-%d}), and no trusted timestamp proves the signature was made inside it")
    if roots:
        _check_identity(facts, cert, chain, entry, roots, require_revocation)
    return facts


def _check_identity(facts: EntryFacts, cert: Any, chain: list[Any], entry: dict[str, Any], roots: list[Any],
                    require_revocation: bool) -> None:
    """The certificate chains to one of `roots` at the entry's time (a root may be the certificate itself), with
    the revocation data the entry carries for every certificate that names a source."""
    import asyncio

    from asn1crypto import crl, ocsp
    from cryptography.hazmat.primitives import hashes
    from pyhanko_certvalidator import CertificateValidator, ValidationContext

    anchors = {r.fingerprint(hashes.SHA256()).hex() for r in roots}
    described = f"{facts.subject}, sha256 {facts.sha256[:16]}…"
    if facts.sha256 in anchors:
        facts.identity = f"certificate trusted ({described}, one of the trusted certificates)"
        facts.identity_ok = True
        return
    found = entry.get("validation_data")
    data: dict[str, Any] = found if isinstance(found, dict) else {}
    try:
        ocsps = [ocsp.OCSPResponse.load(base64.b64decode(str(o), validate=True)) for o in data.get("ocsp", [])]
        crls = [crl.CertificateList.load(base64.b64decode(str(c), validate=True)) for c in data.get("crls", [])]
    except (binascii.Error, ValueError, TypeError):
        facts.identity = f"certificate not checked: its validation data is malformed ({described})"
        return
    context = ValidationContext(trust_roots=[to_asn1(r) for r in roots], other_certs=[to_asn1(c) for c in chain],
                                ocsps=ocsps, crls=crls, allow_fetching=False, moment=facts.time,
                                revocation_mode="require" if require_revocation else "hard-fail")
    with quiet_pyhanko():
        try:
            path = asyncio.run(CertificateValidator(to_asn1(cert), validation_context=context)  # type: ignore[no-untyped-call]
                               .async_validate_usage(key_usage=set()))
        except Exception as exc:
            text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            facts.identity = f"certificate not trusted ({described}): {text[:200]}"
            return
    facts.unchecked_revocation = [c.subject.human_friendly for c in path
                                  if c.self_signed == "no" and not (c.ocsp_urls or c.crl_distribution_points)]
    facts.identity, facts.identity_ok = f"certificate trusted ({described}, chains to a trusted certificate)", True
