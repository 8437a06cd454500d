"""The register's trail: every run recorded, every finding event and every approval is also an entry of a hash chain
per audited system, so an edit made to the register by hand is found and named.

An entry holds the record as canonical JSON (`content`: sorted keys, compact) and `hash = sha256(prev + "\\n" +
content)`, `prev` being the hash of the system's entry before it ("0" * 64 for the first). `check` walks each chain
and compares it with the rows it stands for: an edited row (a response moved, an actor changed), a deleted one, rows
reordered, a row nobody chained (a forged approval inserted by SQL), a broken link, a run whose folder no longer has
the digests recorded. What the chain cannot see by itself is a rewrite that rehashes everything after the edit: for
that, each signed run pins the head it saw (`review.trail` in evidence.json, the bundle's predicate), and `auditor
register check --anchor` has a TSA timestamp the head — a chain rewritten before a pin or an anchor no longer reaches
it. Deleting the whole register is visible only against those."""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from auditor.register import schema as s

GENESIS = "0" * 64
RUN_FIELDS = ("system", "run_name", "title", "model_version", "evaluated_on", "started_at", "recorded_at", "opinion",
              "seed", "spec_sha256", "evidence_sha256", "bundle_sha256", "tool_version")
EVENT_FIELDS = ("finding_id", "event", "on_day", "at", "actor", "owner", "due", "response", "approver", "until",
                "reason", "signer")
APPROVAL_FIELDS = ("bundle_sha256", "decision", "approver", "reason", "at", "statement_sha256")


def canonical(record: dict[str, Any]) -> str:
    return json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def link(prev: str, content: str) -> str:
    return hashlib.sha256(f"{prev}\n{content}".encode()).hexdigest()


def _statement_sha256(statement: str | None) -> str | None:
    return hashlib.sha256(statement.encode("utf-8")).hexdigest() if statement else None


def content(kind: str, row: dict[str, Any], run_names: dict[int, str]) -> str:
    """A row of runs, finding_events or approvals as the trail keeps it."""
    if kind == "run":
        record = {key: row.get(key) for key in RUN_FIELDS}
        if row.get("verified") is not None:  # a run a rebuild indexed: what verifying its folder found
            record["verified"] = row["verified"]
    elif kind == "event":
        record = {key: row.get(key) for key in EVENT_FIELDS}
        record["run"] = run_names.get(row["run_id"]) if row.get("run_id") is not None else None
        record["statement_sha256"] = _statement_sha256(row.get("statement"))
    else:
        record = {key: row.get(key) for key in APPROVAL_FIELDS}
        record["run"] = run_names.get(row["run_id"]) if row.get("run_id") is not None else None
    return canonical({"kind": kind, **record})


def append(connection: Any, system: str, kind: str, ref: int, record: str, *, pre_chain: bool = False) -> str:
    """Add an entry at the end of `system`'s chain, in the caller's transaction (which holds the system's lock);
    returns its hash."""
    from sqlalchemy import select

    last = connection.execute(select(s.trail.c.seq, s.trail.c.hash).where(s.trail.c.system == system)
                              .order_by(s.trail.c.seq.desc()).limit(1)).first()
    seq, prev = (last[0] + 1, last[1]) if last else (1, GENESIS)
    digest = link(prev, record)
    connection.execute(s.trail.insert().values(system=system, seq=seq, kind=kind, ref=ref, content=record, prev=prev,
                                               hash=digest, pre_chain=int(pre_chain)))
    return digest


def head(connection: Any, system: str) -> tuple[int, str]:
    """(length, hash of the last entry) of a system's chain; (0, GENESIS) when it has none."""
    from sqlalchemy import select

    last = connection.execute(select(s.trail.c.seq, s.trail.c.hash).where(s.trail.c.system == system)
                              .order_by(s.trail.c.seq.desc()).limit(1)).first()
    return (int(last[0]), str(last[1])) if last else (0, GENESIS)


def system_of_run(connection: Any, run_id: int | None) -> str:
    """The system an approval belongs to: its run's; "" for a run the register does not hold."""
    from sqlalchemy import select

    if run_id is None:
        return ""
    return str(connection.execute(select(s.runs.c.system).where(s.runs.c.id == run_id)).scalar() or "")


def chain_existing(connection: Any) -> None:
    """Migration to version 2: chain what a register holds already, in the order it was recorded, each entry marked
    as recorded before the trail."""
    from sqlalchemy import select

    runs = connection.execute(select(*[s.runs.c[name] for name in ("id", *RUN_FIELDS)])).mappings().all()
    names = {r["id"]: r["run_name"] for r in runs}
    systems = {r["id"]: r["system"] for r in runs}
    finding_system = dict(connection.execute(select(s.findings.c.id, s.findings.c.system)).all())
    records = [(r["recorded_at"], 0, r["id"], r["system"], "run", dict(r)) for r in runs]
    records += [(e["at"], 1, e["id"], finding_system.get(e["finding_id"], ""), "event", dict(e))
                for e in connection.execute(select(s.events)).mappings()]
    records += [(a["at"], 2, a["id"], systems.get(a["run_id"], ""), "approval", dict(a))
                for a in connection.execute(select(s.approvals)).mappings()]
    for _, _, ref, system, kind, row in sorted(records, key=lambda r: (r[0], r[1], r[2])):
        append(connection, system, kind, ref, content(kind, row, names), pre_chain=True)


# --- checking ----------------------------------------------------------------------------------------------------

@dataclass
class SystemCheck:
    """What `check` found for one system: its chain's length and head, the first break (None: intact), and notes."""

    system: str
    length: int
    head: str
    pre_chain: int = 0
    breaks: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    pinned: int = 0  # runs whose pinned head matched
    signed: int = 0  # signed decisions and approvals whose statements verified and match their rows
    anchored: int = 0  # anchors that matched
    ledger: dict[int, str] = field(default_factory=dict)  # seq -> hash, as the trail holds them

    @property
    def ok(self) -> bool:
        return not self.breaks


def check(connection: Any, *, system: str | None = None, register_id: str = "",
          tsa_roots: list[Any] | None = None, folders: bool = True) -> list[SystemCheck]:
    """Walk every system's chain (or one) against the rows it stands for, the run folders' digests, the heads the
    signed runs pinned and the anchors."""
    from sqlalchemy import select

    runs = {r["id"]: dict(r) for r in connection.execute(select(*[c for c in s.runs.c if c.name != "evidence_gz"]))
            .mappings()}
    names = {i: r["run_name"] for i, r in runs.items()}
    rows = {"run": runs,
            "event": {e["id"]: dict(e) for e in connection.execute(select(s.events)).mappings()},
            "approval": {a["id"]: dict(a) for a in connection.execute(select(s.approvals)).mappings()}}
    entries = connection.execute(select(s.trail).order_by(s.trail.c.system, s.trail.c.seq)).mappings().all()
    by_system: dict[str, list[Any]] = {}
    for entry in entries:
        by_system.setdefault(entry["system"], []).append(entry)
    finding_system = dict(connection.execute(select(s.findings.c.id, s.findings.c.system)).all())
    chained = {(e["kind"], e["ref"]) for e in entries}
    stray: dict[str, list[str]] = {}
    for kind, table in rows.items():
        for ref, row in table.items():
            if (kind, ref) not in chained:
                owner = row.get("system") if kind == "run" else finding_system.get(row.get("finding_id"), "") \
                    if kind == "event" else runs.get(row.get("run_id"), {}).get("system", "")
                stray.setdefault(str(owner or ""), []).append(f"{_describe(kind, row, names)} is in the register but "
                                                              "not in its trail (added by hand)")
    anchors = connection.execute(select(s.anchors).order_by(s.anchors.c.id)).mappings().all()
    out = []
    for name in sorted(set(by_system) | set(stray)):
        if system is not None and name != system:
            continue
        chain = by_system.get(name, [])
        result = SystemCheck(name, len(chain), chain[-1]["hash"] if chain else GENESIS,
                             pre_chain=sum(e["pre_chain"] for e in chain),
                             ledger={e["seq"]: e["hash"] for e in chain})
        _walk(result, chain, rows, names)
        result.breaks += stray.get(name, [])
        _statements(result, [e for e in rows["event"].values() if finding_system.get(e["finding_id"]) == name],
                    [a for a in rows["approval"].values() if runs.get(a["run_id"], {}).get("system") == name],
                    register_id)
        if folders:
            _folders(result, [r for r in runs.values() if r["system"] == name], register_id)
        _anchors(result, chain, [a for a in anchors if a["system"] == name], tsa_roots or [])
        out.append(result)
    return out


def _unlike_signed(signed: dict[str, Any], row: dict[str, Any]) -> list[str]:
    """Each field whose row differs from what its signer signed, as the break's words."""
    return [f"{key}: signed {str(value)[:40]!r}, the register {str(row.get(key))[:40]!r}"
            for key, value in signed.items() if row.get(key) != value]


def _statements(result: SystemCheck, events: list[dict[str, Any]], approvals: list[dict[str, Any]],
                register_id: str) -> None:
    """Each signed decision and approval the register holds: its signature verifies with the certificate it
    carries, its row says what it says (an edit the trail was rehashed over still shows here), and a decision made
    in this register saw a head the trail still has (a rewrite before it no longer does)."""
    from auditor.trust.approval import approval_record
    from auditor.trust.decision import read_decision

    heads = set(result.ledger.values()) | {GENESIS}
    for row in sorted(events, key=lambda r: r["id"]):
        if not row.get("statement"):
            continue
        what = f"the signed event '{row['event']}' of {row['finding_id']} on {row['on_day']}"
        try:
            decision = read_decision(str(row["statement"]).encode("utf-8"))
        except ValueError as exc:
            result.breaks.append(f"{what}: its statement does not verify ({str(exc)[:120]})")
            continue
        said = {"event": decision.kind, "finding_id": decision.finding, "actor": decision.actor,
                "signer": decision.actor, **decision.fields}
        differ = _unlike_signed(said, row)
        if differ:
            result.breaks.append(f"{what} differs from what its signer signed ({'; '.join(differ[:3])})")
        elif decision.register == register_id and decision.head not in heads:
            result.breaks.append(f"the trail was rewritten before {what}: its signer saw head "
                                 f"{decision.head[:16]}…, which the trail no longer has")
        else:
            result.signed += 1
    for row in sorted(approvals, key=lambda r: r["id"]):
        if not row.get("statement"):
            continue
        what = f"the approval ({row.get('decision')} by {row.get('approver')})"
        try:
            record = approval_record(str(row["statement"]).encode("utf-8"))
        except ValueError as exc:
            result.breaks.append(f"{what}: its statement does not verify ({str(exc)[:120]})")
            continue
        differ = _unlike_signed({key: record[key] for key in ("bundle_sha256", "decision", "reason",
                                                              "statement_sha256")}, row)
        if differ:
            result.breaks.append(f"{what} differs from what its approver signed ({'; '.join(differ[:3])})")
        else:
            result.signed += 1


def _describe(kind: str, row: dict[str, Any], names: dict[int, str]) -> str:
    if kind == "run":
        return f"the run {row.get('run_name')}"
    if kind == "approval":
        run = names.get(int(row["run_id"]), "?") if row.get("run_id") is not None else "a run the register lacks"
        return f"the approval ({row.get('decision')} by {row.get('approver')}) of {run}"
    return f"the event '{row.get('event')}' of {row.get('finding_id')} on {row.get('on_day')}"


def _walk(result: SystemCheck, chain: list[Any], rows: dict[str, dict[int, dict[str, Any]]],
          names: dict[int, str]) -> None:
    prev = GENESIS
    last_ref: dict[str, int] = {}
    for index, entry in enumerate(chain, start=1):
        where = f"event {entry['seq']}"
        if entry["seq"] != index:
            result.breaks.append(f"the trail breaks at {where}: entries {index} to {entry['seq'] - 1} are missing "
                                 "(deleted)")
            return
        if entry["prev"] != prev or link(entry["prev"], entry["content"]) != entry["hash"]:
            result.breaks.append(f"the trail breaks at {where}: its hash does not follow from the one before "
                                 "(edited or reordered in the trail itself)")
            return
        prev = entry["hash"]
        row = rows.get(entry["kind"], {}).get(entry["ref"])
        if row is None:
            result.breaks.append(f"the trail breaks at {where}: {_recorded(entry)} was deleted from the register")
            return
        actual = content(entry["kind"], row, names)
        if actual != entry["content"]:
            elsewhere = next((ref for ref, other in rows[entry["kind"]].items()
                              if ref != entry["ref"] and content(entry["kind"], other, names) == entry["content"]),
                             None)
            if elsewhere is not None:
                result.breaks.append(f"the trail breaks at {where}: {_recorded(entry)} now has another row's place "
                                     f"(rows reordered: it is row {elsewhere}, the trail recorded row {entry['ref']})")
            else:
                result.breaks.append(f"the trail breaks at {where}: {_recorded(entry)} was edited "
                                     f"({_differences(entry['content'], actual)})")
            return
        if entry["ref"] < last_ref.get(entry["kind"], 0):
            result.breaks.append(f"the trail breaks at {where}: {_recorded(entry)} is out of order (rows reordered)")
            return
        last_ref[entry["kind"]] = entry["ref"]


def _recorded(entry: Any) -> str:
    record = json.loads(entry["content"])
    kind = record.get("kind")
    if kind == "run":
        return f"the run {record.get('run_name')}"
    if kind == "approval":
        return f"the approval ({record.get('decision')} by {record.get('approver')}) of {record.get('run')}"
    return f"the event '{record.get('event')}' of {record.get('finding_id')} recorded {record.get('at')}"


def _differences(recorded: str, actual: str) -> str:
    before, after = json.loads(recorded), json.loads(actual)
    changed = [f"{key}: {str(before.get(key))[:40]!r} → {str(after.get(key))[:40]!r}"
               for key in sorted(set(before) | set(after)) if before.get(key) != after.get(key)]
    return "; ".join(changed[:3])


def _folders(result: SystemCheck, runs: list[dict[str, Any]], register_id: str) -> None:
    """Each recorded run against its folder, where the folder is at hand: its evidence.json and bundle digests,
    and the trail head its signed bundle pinned."""
    from auditor.core.files import Unreadable, read_regular, sha256_regular
    from auditor.trust.dsse import parse_envelope
    from auditor.trust.strict_json import json_object

    missing = 0
    for run in runs:
        folder = Path(run["run_dir"])
        try:
            evidence = sha256_regular(folder / "evidence.json", follow=False)
        except Unreadable:
            missing += 1
            continue
        if evidence != run["evidence_sha256"]:
            result.breaks.append(f"the run {run['run_name']}: its folder's evidence.json is not the one recorded")
        if run["bundle_sha256"] is None:
            continue
        try:
            data = read_regular(folder / "bundle.dsse.json", limit=16 << 20, follow=False)
            statement, _, _ = parse_envelope(data)
        except (Unreadable, ValueError):
            result.breaks.append(f"the run {run['run_name']}: its bundle.dsse.json is missing or unreadable")
            continue
        if hashlib.sha256(data).hexdigest() != run["bundle_sha256"]:
            result.breaks.append(f"the run {run['run_name']}: its folder's bundle.dsse.json is not the one recorded")
        pin = json_object(json_object(statement.get("predicate")).get("register"))
        if pin:
            _pinned(result, run["run_name"], pin, register_id)
    if missing:
        result.notes.append(f"{missing} run folder{'s' if missing > 1 else ''} not found here (digests not compared)")


def _pinned(result: SystemCheck, run: str, pin: dict[str, Any], register_id: str) -> None:
    """A signed run's pin: the chain at the length it saw must have the head it saw."""
    length, head = pin.get("length"), pin.get("head")
    if length == 0:  # the run saw no trail yet (a new register): nothing to compare
        result.pinned += 1
        return
    if pin.get("register") != register_id:
        result.notes.append(f"the run {run} pinned another register ({str(pin.get('register'))[:16]}: rebuilt or "
                            "replaced since): its pin is not compared")
        return
    if not isinstance(length, int) or not isinstance(head, str):
        result.breaks.append(f"the run {run}: its bundle's register pin is malformed")
        return
    if length > result.length:
        result.breaks.append(f"the run {run} saw {length} entries, the trail now has {result.length}: entries "
                             "were deleted from the end")
        return
    if result.ledger.get(length) != head:
        result.breaks.append(f"the trail was rewritten before entry {length}: the signed run {run} saw head "
                             f"{head[:16]}…, the trail now has {str(result.ledger.get(length))[:16]}…")
        return
    result.pinned += 1


def _anchors(result: SystemCheck, chain: list[Any], anchors: list[Any], tsa_roots: list[Any]) -> None:
    from auditor.trust import timestamps

    for anchor in anchors:
        facts = timestamps.check_token(bytes(anchor["token"]), anchor_bytes(result.system, anchor["seq"],
                                                                            anchor["head"]), tsa_roots)
        when = timestamps.describe_utc(facts.time) if facts.intact else "?"
        if not facts.intact:
            result.breaks.append(f"the anchor of entry {anchor['seq']} is not a valid timestamp of that head")
        elif tsa_roots and not facts.trusted:
            result.notes.append(f"the anchor of {when} is by {facts.tsa}, which no --trust certificate vouches for")
        elif anchor["seq"] > len(chain) or chain[anchor["seq"] - 1]["hash"] != anchor["head"]:
            result.breaks.append(f"the trail was rewritten before entry {anchor['seq']}, which the TSA anchored on "
                                 f"{when}: the head no longer matches")
        else:
            result.anchored += 1


def anchor_bytes(system: str, seq: int, head: str) -> bytes:
    """What an anchor's token covers."""
    return f"auditor register trail\n{system}\n{seq}\n{head}".encode()


def anchor_file(system: str, seq: int, head: str, token: bytes) -> str:
    """An anchor as a file a register's keeper stores apart from the database (JSON)."""
    return json.dumps({"system": system, "seq": seq, "head": head,
                       "token": base64.b64encode(token).decode("ascii")}, indent=2, sort_keys=True) + "\n"
