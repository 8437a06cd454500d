"""DSSE envelopes (https://github.com/secure-systems-lab/dsse) around in-toto Statement v1: the pre-authentication
encoding, a statement's canonical bytes, signing and verifying them by key type, and reading an envelope."""

from __future__ import annotations

import base64
import binascii
import json
from typing import TYPE_CHECKING, Any, Literal

from auditor.trust.layout import MAX_WALK_ENTRIES, PAYLOAD_TYPE, STATEMENT_TYPE
from auditor.trust.strict_json import strict_json

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes, PublicKeyTypes

# RSA signatures: RSASSA-PSS (an approver's key) or PKCS#1 v1.5 (what a PKCS#11 token makes for the bundle)
RsaPadding = Literal["pss", "pkcs1v15"]


def pae(payload_type: str, payload: bytes) -> bytes:
    """DSSE v1 pre-authentication encoding."""
    kind = payload_type.encode("utf-8")
    return b"DSSEv1 %d %s %d %s" % (len(kind), kind, len(payload), payload)


def statement_bytes(statement: dict[str, Any]) -> bytes:
    """The payload of an envelope: the statement as compact JSON with sorted keys, UTF-8."""
    return json.dumps(statement, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def envelope(payload: bytes, signatures: list[dict[str, str]]) -> bytes:
    """The envelope's file: payload in base64 and its signatures (each `keyid`, `sig` in base64, and what else the
    caller adds), indented JSON."""
    document = {"payloadType": PAYLOAD_TYPE, "payload": base64.b64encode(payload).decode("ascii"),
                "signatures": signatures}
    return (json.dumps(document, indent=2, sort_keys=True) + "\n").encode("utf-8")


def sign_message(key: PrivateKeyTypes, message: bytes) -> bytes:
    """RSASSA-PSS (SHA-256, MGF1 SHA-256, 32-byte salt), ECDSA with SHA-256 (DER), or Ed25519: by the key's type."""
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa

    if isinstance(key, rsa.RSAPrivateKey):
        return key.sign(message, padding.PSS(mgf=padding.MGF1(hashes.SHA256()), salt_length=padding.PSS.DIGEST_LENGTH),
                        hashes.SHA256())
    if isinstance(key, ec.EllipticCurvePrivateKey):
        return key.sign(message, ec.ECDSA(hashes.SHA256()))
    if isinstance(key, ed25519.Ed25519PrivateKey):
        return key.sign(message)
    raise ValueError(f"the key is {type(key).__name__}, not RSA, ECDSA or Ed25519")


def verify_message(public: PublicKeyTypes, signature: bytes, message: bytes, *, rsa_padding: RsaPadding = "pss") \
        -> None:
    """A signature by the public key's type (RSA with `rsa_padding`); InvalidSignature when it does not hold,
    ValueError for a key of another type."""
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa

    if isinstance(public, rsa.RSAPublicKey):
        scheme: padding.AsymmetricPadding = padding.PKCS1v15() if rsa_padding == "pkcs1v15" else \
            padding.PSS(mgf=padding.MGF1(hashes.SHA256()), salt_length=padding.PSS.DIGEST_LENGTH)
        public.verify(signature, message, scheme, hashes.SHA256())
    elif isinstance(public, ec.EllipticCurvePublicKey):
        public.verify(signature, message, ec.ECDSA(hashes.SHA256()))
    elif isinstance(public, ed25519.Ed25519PublicKey):
        public.verify(signature, message)
    else:
        raise ValueError(f"the key is {type(public).__name__}, not RSA, ECDSA or Ed25519")


def parse_envelope(data: bytes) -> tuple[dict[str, Any], bytes, list[Any]]:
    """(statement, payload bytes, signatures) of a DSSE envelope around a statement with subjects; ValueError naming
    what is wrong with its shape."""
    document = strict_json(data, "the envelope")
    if not isinstance(document, dict) or document.get("payloadType") != PAYLOAD_TYPE:
        raise ValueError(f"not a DSSE envelope with payloadType {PAYLOAD_TYPE}")
    if not isinstance(document.get("payload"), str) or not isinstance(document.get("signatures"), list):
        raise ValueError("the envelope's payload is not a string or its signatures not a list")
    try:
        payload = base64.b64decode(document["payload"], validate=True)
    except binascii.Error:
        raise ValueError("the payload is not base64") from None
    statement = strict_json(payload, "the statement")
    if not isinstance(statement, dict) or statement.get("_type") != STATEMENT_TYPE:
        raise ValueError("not an in-toto Statement v1")
    if not isinstance(statement.get("subject"), list):
        raise ValueError("the statement has no subject list")
    if len(statement["subject"]) > MAX_WALK_ENTRIES:
        raise ValueError(f"the statement lists more than {MAX_WALK_ENTRIES:,} subjects")
    signatures: list[Any] = document["signatures"]
    return statement, payload, signatures
