"""bundle.dsse.json: the run's signed statement — a DSSE envelope around an in-toto Statement v1 that lists every
artifact of the run folder and every input (spec, policy packs, model, data) with its sha256, signed by the bundle key
(Ed25519 over the DSSE PAE, or RSA PKCS#1 v1.5 by a token's key) — and its RFC 3161 token (bundle.tsr); the checks
of both."""

from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import Any

from auditor.core.files import MAX_SMALL_BYTES, Unreadable, read_regular, sha256_file, sha256_regular
from auditor.trust import timestamps
from auditor.trust.certificates import keyid
from auditor.trust.dsse import envelope, pae, parse_envelope, statement_bytes, verify_message
from auditor.trust.keys import SigningMaterial
from auditor.trust.layout import BUNDLE_NAME, PAYLOAD_TYPE, PREDICATE_TYPE, STATEMENT_TYPE, TOKEN_NAME
from auditor.trust.verdict import Verdict


def write_bundle(run_dir: Path, material: SigningMaterial, inputs: list[tuple[str, Path]],
                 predicate: dict[str, Any], *, certified: dict[str, int] | None = None) -> Path:
    """Sign every file of `run_dir` (artifacts) and every input (role, path), as bundle.dsse.json in `run_dir`.

    Input paths are recorded relative to the run folder's parent's child, i.e. as seen from the final run folder
    (the temporary folder is its sibling, so relative paths are the same). `certified`: files pinned by their first
    bytes only (report.pdf's certified revision, `certified_bytes`), which may gain later PDF revisions.
    """
    subjects = []
    for path in sorted(p for p in run_dir.rglob("*") if p.is_file() and p.name != BUNDLE_NAME):
        name = path.relative_to(run_dir).as_posix()
        prefix = (certified or {}).get(name)
        annotations: dict[str, Any] = {"kind": "artifact"}
        if prefix is not None:
            annotations["certified_bytes"] = prefix
            digest = sha256_regular(path, prefix=prefix)
        else:
            digest = sha256_file(path)
        subjects.append({"name": name, "digest": {"sha256": digest}, "annotations": annotations})
    for role, path in inputs:
        relative = Path(os.path.relpath(Path(path).resolve(), run_dir.resolve())).as_posix()
        subjects.append({"name": relative, "digest": {"sha256": sha256_file(Path(path))},
                         "annotations": {"kind": "input", "role": role}})
    statement = {"_type": STATEMENT_TYPE, "subject": subjects, "predicateType": PREDICATE_TYPE,
                 "predicate": predicate}
    payload = statement_bytes(statement)
    signature = material.bundle_key.sign(pae(PAYLOAD_TYPE, payload))
    if material.timestamp_url:
        try:
            token = timestamps.token_for(material.timestamp_url, signature)
        except timestamps.TimestampError as exc:
            raise timestamps.read_error(material.timestamp_url, exc) from None
        (run_dir / TOKEN_NAME).write_bytes(token)
    out = run_dir / BUNDLE_NAME
    out.write_bytes(envelope(payload, [{"keyid": keyid(material.bundle_key.public_key()),
                                        "sig": base64.b64encode(signature).decode("ascii")}]))
    return out


def check_envelope(bundle: Path, public: Any) -> tuple[dict[str, Any] | None, Verdict]:
    """The bundle's statement and the verdict on its signature: by `public` (the --pubkey), made by the key the
    predicate names. The statement is None when the envelope cannot be read at all."""
    from cryptography.exceptions import InvalidSignature

    try:
        statement, payload, signatures = parse_envelope(read_regular(bundle, limit=MAX_SMALL_BYTES, follow=False))
    except Unreadable as exc:
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
            verify_message(public, base64.b64decode(entry["sig"], validate=True), message, rsa_padding="pkcs1v15")
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


def _key_kind(public: Any) -> str:
    from cryptography.hazmat.primitives.asymmetric import ed25519

    return "Ed25519" if isinstance(public, ed25519.Ed25519PublicKey) else f"RSA-{public.key_size}"
