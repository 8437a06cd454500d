"""Signing identities: `auditor keygen` makes one; `load_material` opens the one a spec's `signing` block names (a
PKCS#12 file and an Ed25519 bundle key, or a key on a PKCS#11 token) with its CA chain and the TSA to ask.

- `keygen`: an RSA-3072 key with a self-signed X.509 certificate (digitalSignature + nonRepudiation) as PKCS#12,
  and an Ed25519 key pair for the bundle. RSA, not ECDSA: an ECDSA signature makes pyHanko write a PDF 2.0 file,
  which breaks the PDF/A-3 claim.

Passphrases come from an environment variable (or a prompt in `auditor keygen`), never from the command line.
"""

from __future__ import annotations

import datetime as dt
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from auditor.core.errors import InputError
from auditor.core.files import MAX_SMALL_BYTES, read_bytes
from auditor.trust import timestamps
from auditor.trust.certificates import keyid, load_trust, to_asn1
from auditor.trust.token import TokenKey, open_token_key

KEY_FILES = {"p12": "signer.p12", "cert": "signer-cert.pem", "bundle": "bundle-ed25519.pem",
             "bundle_pub": "bundle-ed25519.pub.pem"}


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
    bundle_key: Any  # Ed25519PrivateKey, or a TokenKey
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

    def roots(self) -> list[Any]:
        """The roots the signing side trusts to build the chains it embeds: the self-signed certificates of the
        signer's chain (or the signer itself) and the TSA's roots the spec names."""
        chain = [self.certificate, *self.chain]
        return [c for c in chain if c.issuer == c.subject] + self.timestamp_roots


def load_material(signing: Any, *, spec_file: Path, timestamp_url: str | None = None) -> SigningMaterial:
    """Load the keys a spec's `signing` block names; every problem is one InputError line. `timestamp_url` (the
    CLI's --timestamp-url) wins over the spec's, which wins over $AUDITOR_TSA_URL."""
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ed25519, rsa
    from cryptography.hazmat.primitives.serialization import pkcs12
    from pyhanko.sign.signers import SimpleSigner

    url = timestamps.chosen_url(timestamp_url, signing.timestamp_url, spec_file=spec_file)  # before keys are opened
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
        signer = SimpleSigner.load_pkcs12_data(data, other_certs=[to_asn1(c) for c in chain], passphrase=secret)
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
    roots = [c for path in [*signing.timestamp_roots, *timestamps.default_roots()] for c in load_trust(Path(path))]
    details = {"subject": cert.subject.rfc4514_string(),
               "certificate_sha256": cert.fingerprint(hashes.SHA256()).hex(),
               "certificate_pem": cert.public_bytes(serialization.Encoding.PEM).decode("ascii"),
               "not_after": cert.not_valid_after_utc.date().isoformat(),
               "bundle_keyid": keyid(bundle_key.public_key())}
    if token is not None:
        details["key_store"] = f"PKCS#11 token {signing.pkcs11.token}"
    if url:
        details["timestamp_authority"] = timestamps.without_credentials(url)
    material = SigningMaterial(signer=signer, certificate=cert, bundle_key=bundle_key, key_path=signing.key,
                               bundle_key_path=signing.bundle_key, details=details, chain=chain, timestamp_url=url,
                               timestamp_roots=roots, token=token)
    if url:
        _rehearse_timestamp(material, spec_file)
    return material


def _rehearse_timestamp(material: SigningMaterial, spec_file: Path) -> None:
    """Ask the TSA once before the audit runs, so that an unreachable, lying or untrusted TSA is a one-line error
    now rather than after the evidence: its token must answer our request and chain to a root we know."""
    url = material.timestamp_url or ""
    probe = b"auditor: rehearsal before signing"
    try:
        token = timestamps.token_for(url, probe)
    except timestamps.TimestampError as exc:
        material.close()
        raise timestamps.read_error(url, exc) from None
    facts = timestamps.check_token(token, probe, material.roots())
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
