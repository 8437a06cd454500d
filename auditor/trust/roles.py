"""Who may decide what: a roles file that maps roles (approver, risk acceptor, owner, auditor) to certificate
subjects or issuing CAs, signed under an approver root — never kept in the register, whose administrator could
edit it.

    roles.yaml                                   roles.dsse.json (auditor roles sign roles.yaml --key admin.p12)
    roles:                                       a DSSE statement urn:auditor:roles:v1 over roles.yaml's sha256,
      approver:                                  the roles as its predicate, signed by a certificate that chains to
        - subject: "O=Example Bank,CN=Jane Roe"  the roles' trusted roots (--roles-trust)
        - issuer: "O=Example Bank,CN=Approvers CA"
      risk_acceptor: [{subject: "CN=Chief Risk Officer,O=Example Bank"}]

A certificate has a role when its subject is listed, or its issuer is (a CA every member of the role gets theirs
from). Subjects are compared as RFC 4514 strings after parsing, so attribute order and spacing do not matter."""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from auditor.core.errors import InputError
from auditor.core.files import MAX_SMALL_BYTES, Unreadable, read_regular
from auditor.trust.dsse import envelope, pae, statement_bytes
from auditor.trust.identity import Identity, check_entry, parse_certificates, signature_entry, verify_entry_signature
from auditor.trust.layout import PAYLOAD_TYPE, STATEMENT_TYPE
from auditor.trust.strict_json import BadJSON, strict_json

ROLES_PREDICATE_TYPE = "urn:auditor:roles:v1"
ROLES = ("approver", "risk_acceptor", "owner", "auditor")
MAX_MEMBERS = 1_000


def normalised(name: str) -> str:
    """An RFC 4514 name in one spelling (attributes sorted, spaces trimmed): "CN=Jane Roe, O=Bank" and
    "O=Bank,CN=Jane Roe" are the same name."""
    parts = [part.strip() for part in name.replace("\\,", "\x00").split(",") if part.strip()]
    return ",".join(sorted(p.replace("\x00", "\\,") for p in parts))


def check_mapping(mapping: Any) -> dict[str, list[dict[str, str]]]:
    """The `roles:` mapping, checked: each role one of ROLES, each member one `subject:` or `issuer:` string;
    ValueError naming the first problem."""
    roles = mapping.get("roles") if isinstance(mapping, dict) else None
    if not isinstance(roles, dict) or set(mapping) - {"roles"}:
        raise ValueError("a roles file holds one key, `roles:`, mapping each role to its members")
    out: dict[str, list[dict[str, str]]] = {}
    for role, members in roles.items():
        if role not in ROLES:
            raise ValueError(f"unknown role {str(role)[:40]!r}: the roles are {', '.join(ROLES)}")
        if not isinstance(members, list) or len(members) > MAX_MEMBERS:
            raise ValueError(f"`{role}` is not a list of members (at most {MAX_MEMBERS:,})")
        for member in members:
            if not isinstance(member, dict) or len(member) != 1 or next(iter(member)) not in ("subject", "issuer") \
                    or not isinstance(next(iter(member.values())), str) or not next(iter(member.values())).strip():
                raise ValueError(f"a member of `{role}` is one `subject: NAME` or `issuer: NAME`")
        out[role] = [{key: str(value) for key, value in member.items()} for member in members]
    return out


def sign_roles(mapping: Any, source: bytes, identity: Identity, *, timestamp_url: str | None = None,
               tsa_roots: list[Any] | None = None) -> bytes:
    """roles.dsse.json: the checked roles as a statement over the roles file's sha256, signed by `identity`."""
    try:
        roles = check_mapping(mapping)
    except ValueError as exc:
        raise InputError(str(exc), fix="see docs/governance.md, Roles") from None
    statement = {"_type": STATEMENT_TYPE, "predicateType": ROLES_PREDICATE_TYPE,
                 "subject": [{"name": "roles", "digest": {"sha256": hashlib.sha256(source).hexdigest()}}],
                 "predicate": {"roles": roles, "signed_by": identity.subject,
                               "time": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")}}
    payload = statement_bytes(statement)
    return envelope(payload, [signature_entry(identity, pae(PAYLOAD_TYPE, payload), timestamp_url=timestamp_url,
                                              tsa_roots=tsa_roots)])


@dataclass
class Roles:
    """A roles file that verified: who signed it and the roles."""

    roles: dict[str, list[dict[str, str]]]
    signed_by: str
    roots: list[Any]  # the certificates trusted for the roles file: every member's certificate chains to one

    def of(self, cert: Any) -> set[str]:
        """The roles a certificate (cryptography) has."""
        subject, issuer = normalised(cert.subject.rfc4514_string()), normalised(cert.issuer.rfc4514_string())
        return {role for role, members in self.roles.items()
                if any(normalised(m.get("subject", "")) == subject or normalised(m.get("issuer", "")) == issuer
                       for m in members)}

    def refuses(self, entry: dict[str, Any], role: str, *, claimed: dt.datetime,
                tsa_roots: list[Any] | None = None) -> str | None:
        """Why the signer of a signature entry may not decide as `role`, or None: the role is not theirs, or their
        certificate does not chain to the roles' trusted roots at the decision's time (a subject alone is a name
        anyone can put in a certificate of their own making)."""
        cert, _ = parse_certificates(entry)
        subject = cert.subject.rfc4514_string()
        if role not in self.of(cert):
            return f"{subject} has no role `{role}` in the roles file (signed by {self.signed_by})"
        facts = check_entry(entry, claimed=claimed, roots=self.roots, tsa_roots=tsa_roots or [])
        if not facts.identity_ok:
            return f"{subject} has the role `{role}`, but {facts.identity or 'the certificate is not trusted'}"
        return None


def load_roles(path: Path, roots: list[Any]) -> Roles:
    """A signed roles file, its signature checked and its signer's certificate validated against `roots` (the
    certificates trusted to say who has which role); one InputError line otherwise."""
    fix = "sign the roles with `auditor roles sign` by a key whose certificate chains to --roles-trust"
    try:
        document = strict_json(read_regular(Path(path), limit=MAX_SMALL_BYTES), "the roles file")
    except (Unreadable, BadJSON) as exc:
        raise InputError(f"the roles file is unreadable ({exc})", file=path, fix=fix) from None
    if not roots:
        raise InputError("no certificate to trust the roles file's signer (--roles-trust)", file=path, fix=fix)
    try:
        if not isinstance(document, dict) or document.get("payloadType") != PAYLOAD_TYPE \
                or not isinstance(document.get("signatures"), list) or len(document["signatures"]) != 1:
            raise ValueError("not a DSSE envelope with one signature")
        entry = document["signatures"][0]
        payload = base64.b64decode(str(document.get("payload")), validate=True)
        verify_entry_signature(entry, pae(PAYLOAD_TYPE, payload))
        statement = strict_json(payload, "the roles statement")
        if not isinstance(statement, dict) or statement.get("predicateType") != ROLES_PREDICATE_TYPE:
            raise ValueError(f"not a statement of type {ROLES_PREDICATE_TYPE}")
        found = statement.get("predicate")
        predicate: dict[str, Any] = found if isinstance(found, dict) else {}
        roles = check_mapping({"roles": predicate.get("roles")})
        claimed = dt.datetime.strptime(str(predicate.get("time")), "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.UTC)
    except (ValueError, KeyError, TypeError) as exc:
        raise InputError(f"the roles file does not verify: {str(exc)[:160]}", file=path, fix=fix) from None
    facts = check_entry(entry, claimed=claimed, roots=roots, tsa_roots=[])
    if facts.problems or not facts.identity_ok:
        raise InputError(f"the roles file's signer is not trusted: {'; '.join(facts.problems) or facts.identity}",
                         file=path, fix=fix)
    cert, _ = parse_certificates(entry)
    return Roles(roles=roles, signed_by=cert.subject.rfc4514_string(), roots=list(roots))
