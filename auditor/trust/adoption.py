"""A document the audited provider adopts, signed by the provider's own person: the audit implementation report
(DSA Art. 37(6)) the tool drafts. A DSSE statement over the document's files, signed with that person's key (never
the tool's), written beside them as `adoption.dsse.json`; `check_adoption` verifies it offline.

    {"_type": "https://in-toto.io/Statement/v1", "predicateType": "urn:auditor:adoption:v1",
     "subject": [{"name": "implementation-report.html", "digest": {"sha256": "..."}}, ...],
     "predicate": {"document": "implementation-report", "system": "...", "audit_run": "...",
                   "adopted_by": "<certificate subject>", "time": "...Z", "tool": {...}}}
"""

from __future__ import annotations

import datetime as dt
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from auditor.trust.dsse import envelope, pae, parse_envelope, statement_bytes
from auditor.trust.identity import Identity, parse_certificates, signature_entry, verify_entry_signature
from auditor.trust.layout import PAYLOAD_TYPE, STATEMENT_TYPE

ADOPTION_PREDICATE_TYPE = "urn:auditor:adoption:v1"
ADOPTION_FILE = "adoption.dsse.json"


def sign_adoption(identity: Identity, folder: Path, files: list[str], *, document: str, system: str,
                  audit_run: str, timestamp_url: str | None = None, tsa_roots: list[Any] | None = None) -> bytes:
    """The adoption's envelope over `files` of `folder`, signed by `identity` (the adopter is its subject)."""
    from auditor import __version__

    subject = [{"name": name, "digest": {"sha256": hashlib.sha256((folder / name).read_bytes()).hexdigest()}}
               for name in files]
    predicate = {"document": document, "system": system, "audit_run": audit_run, "adopted_by": identity.subject,
                 "time": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                 "tool": {"name": "auditor", "version": __version__}}
    payload = statement_bytes({"_type": STATEMENT_TYPE, "predicateType": ADOPTION_PREDICATE_TYPE,
                               "subject": subject, "predicate": predicate})
    return envelope(payload, [signature_entry(identity, pae(PAYLOAD_TYPE, payload), timestamp_url=timestamp_url,
                                              tsa_roots=tsa_roots)])


@dataclass(frozen=True)
class Adoption:
    """An adoption that verified: who adopted which files, when."""

    adopted_by: str
    time: str
    files: tuple[str, ...]


def check_adoption(folder: Path) -> Adoption:
    """`folder`'s adoption statement verified: its signature by the certificate it carries, and every file it names
    unchanged. ValueError naming the first problem."""
    statement, payload, signatures = parse_envelope((folder / ADOPTION_FILE).read_bytes())
    if statement.get("predicateType") != ADOPTION_PREDICATE_TYPE or len(signatures) != 1 or \
            not isinstance(signatures[0], dict):
        raise ValueError("not an adoption statement (one signature, predicate urn:auditor:adoption:v1)")
    entry = signatures[0]
    verify_entry_signature(entry, pae(PAYLOAD_TYPE, payload))
    cert, _ = parse_certificates(entry)
    predicate = statement["predicate"]
    subject = cert.subject.rfc4514_string()
    if predicate.get("adopted_by") != subject:
        raise ValueError(f"the statement names {predicate.get('adopted_by')!r} but is signed by {subject!r}")
    for item in statement["subject"]:
        name = item.get("name") if isinstance(item, dict) else None
        digest = item.get("digest") if isinstance(item, dict) else None
        if not isinstance(name, str) or Path(name).name != name or name in ("", ".", "..") or \
                not isinstance(digest, dict):
            raise ValueError("a subject is not a file of the folder with its digest")
        path = folder / name
        if not path.is_file() or hashlib.sha256(path.read_bytes()).hexdigest() != digest.get("sha256"):
            raise ValueError(f"{name} is not the file that was adopted (changed or missing)")
    return Adoption(adopted_by=subject, time=str(predicate.get("time")),
                    files=tuple(str(i["name"]) for i in statement.get("subject", [])))
