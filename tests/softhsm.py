"""A SoftHSM2 token for a test session: a real PKCS#11 module (Debian's softhsm2) with an RSA key made on it.

    token = create_token(folder)                        # softhsm2.conf + token dir in `folder`, key pair on the token
    cert, _ = services.issue_signer("Token signer", public_key=token.public_key, not_before=..., not_after=...)
    token.store_certificate(cert)                       # CKO_CERTIFICATE, same label and CKA_ID; writes token.cert_path
    with token.activated():                             # SOFTHSM2_CONF in os.environ
        session = pyhanko.sign.pkcs11.open_pkcs11_session(token.module, token_criteria=TokenCriteria(label=...),
                                                          user_pin=token.pin)

The private key is generated ON the token (CKA_SENSITIVE, not CKA_EXTRACTABLE): nothing outside the token ever sees
it. SoftHSM2 reads SOFTHSM2_CONF once, when the module is initialised (C_Initialize) in a process, so the variable
must be set before a process first loads the module: `token.env` for a subprocess (or CliRunner's env=...),
`token.activated()` in this one. python-pkcs11 keeps one initialised module per path per process (pkcs11.lib);
create_token re-initialises it when it was initialised for another configuration.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

NOT_INSTALLED = "softhsm2 not installed (Debian softhsm2)"
MODULE_CANDIDATES = ("/usr/lib/softhsm/libsofthsm2.so", "/usr/lib/x86_64-linux-gnu/softhsm/libsofthsm2.so")

TOKEN_LABEL = "auditor-test"
USER_PIN = "123456"
SO_PIN = "12345678"
KEY_LABEL = "report-signer"
KEY_ID = b"\xa1\x7e\x57"

_initialised_for: dict[str, str | None] = {}  # module path -> SOFTHSM2_CONF it was C_Initialize'd with here


def module_path() -> str | None:
    """SoftHSM2's PKCS#11 module, or None when softhsm2 is not installed."""
    for path in (*MODULE_CANDIDATES, *sorted(glob.glob("/usr/lib/*/softhsm/libsofthsm2.so"))):
        if os.path.isfile(path):
            return path
    return None


def available() -> str | None:
    """None when a token can be made here, else the reason it cannot (for pytest.skip)."""
    if module_path() is None:
        return NOT_INSTALLED
    if shutil.which("softhsm2-util") is None:
        return "softhsm2-util not found (Debian softhsm2)"
    try:
        import pkcs11  # noqa: F401
    except ImportError:
        return "python-pkcs11 is not installed (pip install 'auditor[pkcs11]')"
    return None


@contextmanager
def environment(conf: Path | str) -> Iterator[None]:
    """os.environ["SOFTHSM2_CONF"] = conf inside the block, the previous value after."""
    before = os.environ.get("SOFTHSM2_CONF")
    os.environ["SOFTHSM2_CONF"] = str(conf)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("SOFTHSM2_CONF", None)
        else:
            os.environ["SOFTHSM2_CONF"] = before


def load_module(module: str, conf: Path | str) -> Any:
    """python-pkcs11's handle on the module, initialised for `conf` (re-initialised if it was for another one).

    Re-initialising closes every session opened on the module in this process."""
    import pkcs11

    with environment(conf):
        lib = pkcs11.lib(module)
        if _initialised_for.get(module, str(conf)) != str(conf):
            lib.reinitialize()
        _initialised_for[module] = str(conf)
    return lib


@dataclass
class SoftHsmToken:
    """A SoftHSM2 token holding one RSA 2048 key pair (and, after store_certificate, its certificate)."""

    module: str
    folder: Path
    conf: Path
    token_label: str = TOKEN_LABEL
    pin: str = USER_PIN
    so_pin: str = SO_PIN
    key_label: str = KEY_LABEL
    key_id: bytes = KEY_ID
    public_key: Any = None  # cryptography RSAPublicKey of the key on the token
    certificate: Any = None  # cryptography Certificate, after store_certificate
    cert_path: Path | None = None  # the certificate as PEM, after store_certificate
    env: dict[str, str] = field(default_factory=dict)  # {"SOFTHSM2_CONF": ...} for a subprocess or CliRunner

    @property
    def cert_label(self) -> str:
        return self.key_label

    @contextmanager
    def activated(self) -> Iterator[SoftHsmToken]:
        """SOFTHSM2_CONF set in os.environ (and the module initialised for it) inside the block."""
        with environment(self.conf):
            load_module(self.module, self.conf)
            yield self

    @contextmanager
    def session(self, *, rw: bool = False) -> Iterator[Any]:
        """A logged-in python-pkcs11 session on the token."""
        lib = load_module(self.module, self.conf)
        with lib.get_token(token_label=self.token_label).open(user_pin=self.pin, rw=rw) as session:
            yield session

    def store_certificate(self, cert: Any, *, pem_path: Path | None = None) -> Path:
        """Put `cert` (cryptography Certificate) on the token as a CKO_CERTIFICATE with the key's label and CKA_ID,
        and write it as PEM (default: <folder>/<key_label>.pem). Returns the PEM path."""
        from cryptography.hazmat.primitives import serialization
        from pkcs11 import Attribute, CertificateType, ObjectClass

        der = cert.public_bytes(serialization.Encoding.DER)
        with self.session(rw=True) as session:
            for old in session.get_objects({Attribute.CLASS: ObjectClass.CERTIFICATE, Attribute.LABEL: self.key_label}):
                old.destroy()
            session.create_object({
                Attribute.CLASS: ObjectClass.CERTIFICATE,
                Attribute.CERTIFICATE_TYPE: CertificateType.X_509,
                Attribute.TOKEN: True,
                Attribute.PRIVATE: False,
                Attribute.VALUE: der,
                Attribute.LABEL: self.key_label,
                Attribute.ID: self.key_id,
                Attribute.SUBJECT: cert.subject.public_bytes(),
                Attribute.ISSUER: cert.issuer.public_bytes(),
                Attribute.SERIAL_NUMBER: _der_integer(cert.serial_number),
            })
        self.certificate = cert
        self.cert_path = pem_path or self.folder / f"{self.key_label}.pem"
        self.cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        return self.cert_path


def _der_integer(value: int) -> bytes:
    from asn1crypto.core import Integer

    return Integer(value).dump()


def create_token(folder: Path | str, *, token_label: str = TOKEN_LABEL, pin: str = USER_PIN, so_pin: str = SO_PIN,
                 key_label: str = KEY_LABEL, key_id: bytes = KEY_ID) -> SoftHsmToken:
    """A new token in `folder` (softhsm2.conf and tokens/), with an RSA 2048 key pair generated on it.

    Raises RuntimeError with the reason when SoftHSM2 or python-pkcs11 is missing or the token cannot be made."""
    reason = available()
    if reason is not None:
        raise RuntimeError(reason)
    from cryptography.hazmat.primitives import serialization
    from pkcs11 import Attribute, KeyType, Mechanism
    from pkcs11.util.rsa import encode_rsa_public_key

    module = module_path()
    assert module is not None
    folder = Path(folder).resolve()
    tokens = folder / "tokens"
    tokens.mkdir(parents=True, exist_ok=True)
    conf = folder / "softhsm2.conf"
    conf.write_text(f"directories.tokendir = {tokens}\nobjectstore.backend = file\nlog.level = ERROR\n"
                    "slots.removable = false\nslots.mechanisms = ALL\nlibrary.reset_on_fork = false\n")
    env = {"SOFTHSM2_CONF": str(conf)}
    try:
        subprocess.run(["softhsm2-util", "--init-token", "--free", "--label", token_label, "--pin", pin,
                        "--so-pin", so_pin], env={**os.environ, **env}, check=True, capture_output=True, text=True,
                       timeout=60)
    except subprocess.CalledProcessError as exc:
        raise RuntimeError(f"softhsm2-util --init-token failed: {(exc.stderr or exc.stdout).strip()}") from exc
    token = SoftHsmToken(module=module, folder=folder, conf=conf, token_label=token_label, pin=pin, so_pin=so_pin,
                         key_label=key_label, key_id=key_id, env=env)
    # The module may have been initialised in this process before the token existed: SoftHSM2 lists the tokens of
    # its token dir at C_Initialize, so initialise it afresh to see the new one.
    import pkcs11

    with environment(conf):
        lib = pkcs11.lib(module)
        lib.reinitialize()
        _initialised_for[module] = str(conf)
    with token.session(rw=True) as session:
        public, _private = session.generate_keypair(
            KeyType.RSA, 2048, id=key_id, label=key_label, store=True, mechanism=Mechanism.RSA_PKCS_KEY_PAIR_GEN,
            public_template={Attribute.TOKEN: True, Attribute.VERIFY: True, Attribute.ENCRYPT: False,
                             Attribute.WRAP: False},
            private_template={Attribute.TOKEN: True, Attribute.PRIVATE: True, Attribute.SENSITIVE: True,
                              Attribute.EXTRACTABLE: False, Attribute.SIGN: True, Attribute.DECRYPT: False,
                              Attribute.UNWRAP: False})
        token.public_key = serialization.load_der_public_key(encode_rsa_public_key(public))
    return token


__all__ = ["NOT_INSTALLED", "SoftHsmToken", "available", "create_token", "environment", "load_module",
           "module_path"]
