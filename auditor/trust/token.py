"""A signing key held by a PKCS#11 token (HSM, smart card, SoftHSM2): pyHanko's PKCS11Signer signs report.pdf
there, and, when the spec names no Ed25519 bundle key, the bundle too (RSA PKCS#1 v1.5 over SHA-256). The private
key never leaves the token; only its certificate is read."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
from pathlib import Path
from typing import Any

from auditor.core.errors import InputError
from auditor.trust.certificates import load_cert, to_asn1


class TokenKey:
    """An open session on the token and the signer that uses it; close() ends the session."""

    def __init__(self, session: Any, signer: Any, certificate: Any) -> None:
        self.session = session
        self.signer = signer
        self.certificate = certificate  # cryptography x509.Certificate

    def sign(self, message: bytes) -> bytes:
        """RSA PKCS#1 v1.5 with SHA-256 over `message`, made by the token."""
        signature: bytes = asyncio.run(self.signer.async_sign_raw(message, "sha256"))
        return signature

    def public_key(self) -> Any:
        return self.certificate.public_key()

    def close(self) -> None:
        with contextlib.suppress(Exception):  # a token removed meanwhile: nothing left to release
            self.session.close()


def open_token_key(pkcs11: Any, pin_env: str, *, spec_file: Path, chain: list[Any] | None = None) -> TokenKey:
    """Open the token the spec's `signing.pkcs11` names and find its key and certificate; one InputError line per
    problem (module, token, PIN, key, certificate)."""
    from cryptography import x509

    try:
        import pkcs11 as _pkcs11  # noqa: F401 (python-pkcs11, the `pkcs11` extra)
        from pyhanko.sign.pkcs11 import PKCS11Signer, open_pkcs11_session
    except ImportError:
        raise InputError("signing with a PKCS#11 token needs python-pkcs11", file=spec_file, where="signing.pkcs11",
                         fix="pip install 'auditor[pkcs11]'") from None
    pin = os.environ.get(pin_env)
    if pin is None:
        raise InputError(f"the environment variable {pin_env} is not set", file=spec_file, where="signing.pin_env",
                         fix=f"export {pin_env} with the token's user PIN")
    where = "signing.pkcs11"
    try:
        from pyhanko.config.pkcs11 import TokenCriteria

        session = open_pkcs11_session(str(pkcs11.module), token_criteria=TokenCriteria(label=pkcs11.token),
                                      user_pin=pin)
    except Exception as exc:
        raise InputError(f"cannot open the token {pkcs11.token!r} with {Path(pkcs11.module).name}: "
                         f"{_reason(exc)}", file=spec_file, where=where,
                         fix=f"check the module path, the token label and {pin_env}") from None
    signing_cert = None
    if pkcs11.cert is not None:
        signing_cert = to_asn1(load_cert(pkcs11.cert))
    try:
        signer = PKCS11Signer(session, key_label=pkcs11.key_label, cert_label=pkcs11.cert_label or pkcs11.key_label,
                              signing_cert=signing_cert, ca_chain=[to_asn1(c) for c in chain or []])
        asn1_cert = signer.signing_cert
    except Exception as exc:
        session.close()
        raise InputError(f"no usable key {pkcs11.key_label!r} and certificate on the token {pkcs11.token!r}: "
                         f"{_reason(exc)}", file=spec_file, where=where,
                         fix="check key_label and cert_label (or give `cert:` when the token holds no certificate)"
                         ) from None
    certificate = x509.load_der_x509_certificate(asn1_cert.dump())
    return TokenKey(session, signer, certificate)


def _reason(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text[:160]


# --- making a key and its certificate on a token (`auditor keygen --pkcs11-module ...`) --------------------------

KEY_BITS = 3072


def token_keygen(options: Any, pin_env: str, *, name: str, organisation: str | None, days: int, out_dir: Path,
                 csr: bool = False, import_certificate: Path | None = None) -> dict[str, Path]:
    """On the token `options` names (module, token, key_label): an RSA-3072 key pair generated there (sensitive,
    never extractable) unless the label holds one, and then either a self-signed certificate stored beside it (same
    label and CKA_ID) and written as PEM, or (`csr`) a certificate signing request for a CA, or
    (`import_certificate`) the certificate a CA issued for that key stored on the token. Paths written, by kind."""
    import datetime as dt

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    pin = os.environ.get(pin_env)
    if pin is None:
        raise InputError(f"the environment variable {pin_env} is not set", where="--pin-env",
                         fix=f"export {pin_env} with the token's user PIN")
    with _token_session(options, pin) as session:
        private, public = _key_pair(session, options.key_label)
        out_dir.mkdir(parents=True, exist_ok=True)
        label = options.key_label
        if import_certificate is not None:
            cert = load_cert(import_certificate)
            spki = serialization.PublicFormat.SubjectPublicKeyInfo
            if cert.public_key().public_bytes(serialization.Encoding.DER, spki) != \
                    public.public_bytes(serialization.Encoding.DER, spki):
                raise InputError("this certificate is for another key than the token's", file=import_certificate,
                                 fix=f"import the certificate the CA issued for the CSR of key {label!r}")
            _store_certificate(session, private, cert)
            return {"certificate": import_certificate}

        def signed(tbs: bytes) -> bytes:
            from pkcs11 import Mechanism

            return bytes(private.sign(tbs, mechanism=Mechanism.SHA256_RSA_PKCS))

        attributes = [x509.NameAttribute(NameOID.COMMON_NAME, name)]
        if organisation:
            attributes.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, organisation))
        subject = x509.Name(attributes)
        stand_in = rsa.generate_private_key(public_exponent=65537, key_size=2048)  # cryptography needs a key to
        # build the to-be-signed bytes; the token signs them, and the stand-in's signature is thrown away
        if csr:
            request = x509.CertificateSigningRequestBuilder().subject_name(subject).sign(stand_in, hashes.SHA256())
            from asn1crypto import csr as asn1_csr

            info = asn1_csr.CertificationRequestInfo.load(request.tbs_certrequest_bytes)
            info["subject_pk_info"] = _asn1_public(public)
            der = asn1_csr.CertificationRequest({"certification_request_info": info,
                                                 "signature_algorithm": {"algorithm": "sha256_rsa"},
                                                 "signature": signed(info.dump())}).dump()
            path = out_dir / f"{label}.csr"
            path.write_bytes(x509.load_der_x509_csr(der).public_bytes(serialization.Encoding.PEM))
            return {"csr": path}
        now = dt.datetime.now(dt.UTC).replace(microsecond=0)
        built = (x509.CertificateBuilder()
                 .subject_name(subject).issuer_name(subject).public_key(public)
                 .serial_number(x509.random_serial_number())
                 .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=days))
                 .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                 .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=True, key_encipherment=False,
                                              data_encipherment=False, key_agreement=False, key_cert_sign=False,
                                              crl_sign=False, encipher_only=False, decipher_only=False), critical=True)
                 .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.EMAIL_PROTECTION]), critical=False)
                 .add_extension(x509.SubjectKeyIdentifier.from_public_key(public), critical=False)
                 .sign(stand_in, hashes.SHA256()))
        from asn1crypto import x509 as asn1_x509

        tbs = asn1_x509.TbsCertificate.load(built.tbs_certificate_bytes)
        der = asn1_x509.Certificate({"tbs_certificate": tbs, "signature_algorithm": {"algorithm": "sha256_rsa"},
                                     "signature_value": signed(tbs.dump())}).dump()
        cert = x509.load_der_x509_certificate(der)
        _store_certificate(session, private, cert)
    path = out_dir / f"{label}-cert.pem"
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return {"certificate": path}


@contextlib.contextmanager
def _token_session(options: Any, pin: str) -> Any:
    try:
        import pkcs11
    except ImportError:
        raise InputError("a key on a PKCS#11 token needs python-pkcs11", where="--pkcs11-module",
                         fix="pip install 'auditor[pkcs11]'") from None
    try:
        token = pkcs11.lib(str(options.module)).get_token(token_label=options.token)
        session = token.open(user_pin=pin, rw=True)
    except Exception as exc:
        raise InputError(f"cannot open the token {options.token!r} with {Path(options.module).name}: {_reason(exc)}",
                         where="--pkcs11-module", fix="check the module path, the token label and the PIN") from None
    try:
        yield session
    finally:
        session.close()


def _key_pair(session: Any, label: str) -> tuple[Any, Any]:
    """The token's private key of `label` and its public key (cryptography), made on the token if absent."""
    from cryptography.hazmat.primitives import serialization
    from pkcs11 import Attribute, KeyType, Mechanism, ObjectClass
    from pkcs11.exceptions import NoSuchKey
    from pkcs11.util.rsa import encode_rsa_public_key

    try:
        private = session.get_key(object_class=ObjectClass.PRIVATE_KEY, label=label)
        public_key = session.get_key(object_class=ObjectClass.PUBLIC_KEY, label=label)
    except NoSuchKey:
        identifier = hashlib.sha256(label.encode("utf-8")).digest()[:8]
        public_key, private = session.generate_keypair(
            KeyType.RSA, KEY_BITS, id=identifier, label=label, store=True, mechanism=Mechanism.RSA_PKCS_KEY_PAIR_GEN,
            public_template={Attribute.TOKEN: True, Attribute.VERIFY: True, Attribute.ENCRYPT: False,
                             Attribute.WRAP: False},
            private_template={Attribute.TOKEN: True, Attribute.PRIVATE: True, Attribute.SENSITIVE: True,
                              Attribute.EXTRACTABLE: False, Attribute.SIGN: True, Attribute.DECRYPT: False,
                              Attribute.UNWRAP: False})
    return private, serialization.load_der_public_key(encode_rsa_public_key(public_key))


def _asn1_public(public: Any) -> Any:
    from asn1crypto import keys as asn1_keys
    from cryptography.hazmat.primitives import serialization

    return asn1_keys.PublicKeyInfo.load(public.public_bytes(serialization.Encoding.DER,
                                                            serialization.PublicFormat.SubjectPublicKeyInfo))


def _store_certificate(session: Any, private: Any, cert: Any) -> None:
    """`cert` on the token as a CKO_CERTIFICATE with the key's label and CKA_ID (replacing one of that label)."""
    from asn1crypto.core import Integer
    from cryptography.hazmat.primitives import serialization
    from pkcs11 import Attribute, CertificateType, ObjectClass

    label = private.label
    for old in session.get_objects({Attribute.CLASS: ObjectClass.CERTIFICATE, Attribute.LABEL: label}):
        old.destroy()
    session.create_object({
        Attribute.CLASS: ObjectClass.CERTIFICATE, Attribute.CERTIFICATE_TYPE: CertificateType.X_509,
        Attribute.TOKEN: True, Attribute.PRIVATE: False, Attribute.LABEL: label, Attribute.ID: private.id,
        Attribute.VALUE: cert.public_bytes(serialization.Encoding.DER), Attribute.SUBJECT: cert.subject.public_bytes(),
        Attribute.ISSUER: cert.issuer.public_bytes(), Attribute.SERIAL_NUMBER: Integer(cert.serial_number).dump()})
