"""A signing key held by a PKCS#11 token (HSM, smart card, SoftHSM2): pyHanko's PKCS11Signer signs report.pdf
there, and, when the spec names no Ed25519 bundle key, the bundle too (RSA PKCS#1 v1.5 over SHA-256). The private
key never leaves the token; only its certificate is read."""

from __future__ import annotations

import asyncio
import contextlib
import os
from pathlib import Path
from typing import Any

from auditor.errors import InputError
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
