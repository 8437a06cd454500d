"""A decision on a finding, signed by the person who makes it: a management response (`auditor findings respond`)
or a risk acceptance (`auditor findings accept`), as a DSSE statement the register keeps beside the event and that is
also written as a file, so that `auditor register rebuild` restores it and anyone can check it offline.

    {"_type": "https://in-toto.io/Statement/v1", "predicateType": "urn:auditor:decision:v1",
     "subject": [{"name": "register:catalogue-ranker", "digest": {"sha256": "<the system's trail head it saw>"}}],
     "predicate": {"decision": "responded", "finding": "catalogue-ranker/BASE-8", "system": "catalogue-ranker",
                   "owner": "...", "due": "2027-03-31", "response": "...", "after_run": "<the last run>",
                   "actor": "<certificate subject>", "time": "2026-11-29T10:00:00.123456Z",
                   "register": "<register id>", "tool": {...}}}

An acceptance carries `approver` (the actor), `until` and `reason` instead of `owner`, `due` and `response`. The
file goes into the decisions folder beside the run folders:
`decisions/<system>/<time>-<decision>-<finding key>-<digest>.dsse.json`."""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from auditor.trust.dsse import envelope, pae, statement_bytes
from auditor.trust.identity import Identity, parse_certificates, signature_entry, verify_entry_signature
from auditor.trust.layout import PAYLOAD_TYPE, STATEMENT_TYPE
from auditor.trust.strict_json import BadJSON, strict_json

DECISION_PREDICATE_TYPE = "urn:auditor:decision:v1"
KINDS = {"responded": ("owner", "due", "response"), "accepted": ("approver", "until", "reason")}
_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")


def sign_decision(identity: Identity, *, kind: str, finding: str, system: str, fields: dict[str, str], head: str,
                  register_id: str, after_run: str | None, timestamp_url: str | None = None,
                  tsa_roots: list[Any] | None = None) -> bytes:
    """The decision's envelope (bytes of the file), signed by `identity`: the actor is its certificate's subject.
    `after_run`: the system's last recorded run, after which a rebuild places it."""
    from auditor import __version__

    predicate = {"decision": kind, "finding": finding, "system": system, **{k: fields[k] for k in KINDS[kind]},
                 "after_run": after_run,
                 "actor": identity.subject,
                 "time": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),  # to order it among runs
                 "register": register_id, "tool": {"name": "auditor", "version": __version__}}
    statement = {"_type": STATEMENT_TYPE, "predicateType": DECISION_PREDICATE_TYPE, "predicate": predicate,
                 "subject": [{"name": f"register:{system}", "digest": {"sha256": head}}]}
    payload = statement_bytes(statement)
    return envelope(payload, [signature_entry(identity, pae(PAYLOAD_TYPE, payload), timestamp_url=timestamp_url,
                                              tsa_roots=tsa_roots)])


@dataclass
class Decision:
    """A decision file that verified by the certificate it carries (whom that certificate belongs to is for the
    caller to judge: roles, roots)."""

    kind: str
    finding: str
    system: str
    fields: dict[str, str]
    actor: str
    time: dt.datetime
    certificate: Any  # cryptography x509.Certificate
    entry: dict[str, Any]
    register: str  # the register id it was made in
    head: str  # the system's trail head it saw (sha256 hex)
    after_run: str | None  # the system's last run when it was made


def read_decision(data: bytes) -> Decision:
    """A decision envelope, its signature checked with the certificate it carries; ValueError naming the problem."""
    try:
        document = strict_json(data, "the decision")
    except BadJSON as exc:
        raise ValueError(f"malformed: {exc}") from None
    if not isinstance(document, dict) or document.get("payloadType") != PAYLOAD_TYPE \
            or not isinstance(document.get("signatures"), list) or len(document["signatures"]) != 1 \
            or not isinstance(document["signatures"][0], dict):
        raise ValueError("malformed: not a DSSE envelope with one signature")
    entry = document["signatures"][0]
    try:
        payload = base64.b64decode(str(document.get("payload")), validate=True)
    except binascii.Error:
        raise ValueError("malformed: the payload is not base64") from None
    verify_entry_signature(entry, pae(PAYLOAD_TYPE, payload))
    statement = strict_json(payload, "the decision's statement")
    predicate = statement.get("predicate") if isinstance(statement, dict) else None
    if not isinstance(statement, dict) or statement.get("predicateType") != DECISION_PREDICATE_TYPE \
            or not isinstance(predicate, dict) or predicate.get("decision") not in KINDS:
        raise ValueError(f"malformed: not a statement of type {DECISION_PREDICATE_TYPE}")
    kind = str(predicate["decision"])
    fields = {key: predicate.get(key) for key in KINDS[kind]}
    strings = [predicate.get("finding"), predicate.get("system"), predicate.get("actor"), *fields.values()]
    if not all(isinstance(value, str) and value for value in strings):
        raise ValueError("malformed: a field of the decision is missing")
    day = fields.get("due") or fields.get("until")
    if not _DAY.fullmatch(str(day)):
        raise ValueError("malformed: its day is not YYYY-MM-DD")
    try:
        text = str(predicate.get("time"))
        when = dt.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ" if "." in text else "%Y-%m-%dT%H:%M:%SZ") \
            .replace(tzinfo=dt.UTC)
    except ValueError:
        raise ValueError("malformed: its time is not YYYY-MM-DDTHH:MM:SS[.ffffff]Z") from None
    cert, _ = parse_certificates(entry)
    if predicate["actor"] != cert.subject.rfc4514_string() or fields.get("approver", predicate["actor"]) \
            != predicate["actor"]:
        raise ValueError("its actor is not the subject of the certificate that signed it")
    subjects = statement.get("subject")
    digest = subjects[0].get("digest") if isinstance(subjects, list) and len(subjects) == 1 \
        and isinstance(subjects[0], dict) else None
    head = digest.get("sha256") if isinstance(digest, dict) else None
    if not isinstance(head, str) or not re.fullmatch(r"[0-9a-f]{64}", head):
        raise ValueError("malformed: its subject is not the trail head it saw")
    return Decision(kind=kind, finding=str(predicate["finding"]), system=str(predicate["system"]),
                    fields={k: str(v) for k, v in fields.items()}, actor=str(predicate["actor"]), time=when,
                    certificate=cert, entry=entry, register=str(predicate.get("register") or ""), head=head,
                    after_run=str(predicate["after_run"]) if predicate.get("after_run") else None)


def file_name(decision: Decision, data: bytes) -> str:
    """Where a decision's file goes in the decisions folder: by system, then time, kind and finding."""
    safe = re.compile(r"[^A-Za-z0-9._-]+")
    key = decision.finding.split("/", 1)[-1]
    return (f"{safe.sub('_', decision.system)[:80] or '_'}/{decision.time:%Y%m%dT%H%M%S.%f}Z-{decision.kind}-"
            f"{safe.sub('_', key)[:80]}-{hashlib.sha256(data).hexdigest()[:12]}.dsse.json")


def decision_files(folder: Path) -> list[Path]:
    """Every entry named like a decision file under a decisions folder, in name order — links and entries that are
    not regular files included, for the reader to refuse by name (never skipped silently)."""
    if not folder.is_dir():
        return []
    return sorted(folder.glob("*/*.dsse.json"))
