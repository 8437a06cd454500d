"""X.509 certificates and public keys read from files, the ids by which a statement names a key, and pyHanko's logging
kept off the terminal."""

from __future__ import annotations

import contextlib
import hashlib
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from auditor.core.errors import InputError
from auditor.core.files import MAX_SMALL_BYTES, read_bytes

if TYPE_CHECKING:
    from cryptography import x509
    from cryptography.hazmat.primitives.asymmetric.types import PublicKeyTypes

CERTIFICATE_SUFFIXES = {".pem", ".crt", ".cer", ".der"}


def load_cert(path: Path) -> x509.Certificate:
    """One certificate, PEM or DER; a bad file is bad input."""
    from cryptography import x509

    data = read_bytes(Path(path), limit=MAX_SMALL_BYTES, what="certificate")
    try:
        return x509.load_pem_x509_certificate(data) if b"-----BEGIN" in data else x509.load_der_x509_certificate(data)
    except ValueError:
        raise InputError("not an X.509 certificate (PEM or DER)", file=path,
                         fix="give signer-cert.pem from `auditor keygen`") from None


def load_trust(paths: Path | list[Path] | None) -> list[x509.Certificate]:
    """Certificates from PEM/DER files (a PEM file may hold several) and folders of them (*.pem, *.crt, *.cer,
    *.der); an empty list when none is given."""
    from cryptography import x509

    if paths is None:
        return []
    found: list[x509.Certificate] = []
    for path in [paths] if isinstance(paths, Path) else paths:
        path = Path(path)
        files = sorted(p for p in path.iterdir() if p.suffix.lower() in CERTIFICATE_SUFFIXES
                       and p.is_file()) if path.is_dir() else [path]
        if path.is_dir() and not files:
            raise InputError("no certificate files (*.pem, *.crt, *.cer, *.der) in this folder", file=path,
                             fix="give the folder that holds the trusted certificates, or the files")
        in_folder: list[x509.Certificate] = []
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
                in_folder.append(load_cert(file))
        if path.is_dir() and not in_folder:
            raise InputError("no X.509 certificate in this folder", file=path,
                             fix="give the folder that holds the trusted certificates, or the files")
        found += in_folder
    return found


def load_pubkey(path: Path) -> PublicKeyTypes:
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


def to_asn1(cert: x509.Certificate) -> Any:
    """A cryptography certificate as asn1crypto's, which pyHanko takes."""
    from asn1crypto import x509 as asn1_x509
    from cryptography.hazmat.primitives import serialization

    return asn1_x509.Certificate.load(cert.public_bytes(serialization.Encoding.DER))


def keyid(public_key: PublicKeyTypes) -> str:
    """The `keyid` of DSSE signatures, hex: sha256 of the raw Ed25519 public key, or of the SubjectPublicKeyInfo
    (DER) of another key (a token's RSA key)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ed25519

    if isinstance(public_key, ed25519.Ed25519PublicKey):
        raw = public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        return hashlib.sha256(raw).hexdigest()
    der = public_key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return hashlib.sha256(der).hexdigest()


def key_names(public_key: PublicKeyTypes) -> set[bytes]:
    """Every way a run's signing identity may name this key: its SubjectPublicKeyInfo (DER), and the sha256 of a
    raw Ed25519 key (its keyid, as bytes). Two identities that share a name share a key."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ed25519

    names = {public_key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)}
    if isinstance(public_key, ed25519.Ed25519PublicKey):
        raw = public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        names.add(hashlib.sha256(raw).digest())
    return names


@contextlib.contextmanager
def quiet_pyhanko() -> Iterator[None]:
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
