"""Findings across reviews, as pure functions of an evidence document and a finding's events.

A finding is a fact the applied rules FAILed, WARNed or WAIVED — the rules of every pack that judge the same metric
are one finding, citing each — or a detection no applied rule judges. Its id is stable per audited system
(`catalogue-ranker/BASE-8`, `catalogue-ranker/explainer-no-better-than-random:lirme5`), so the same problem found
again next quarter is the same finding. Its status is read from its append-only events:

    opened ─► responded (owner, due date, response) ─► remediated (a later review no longer shows it)
       │            │                                      │
       └──► accepted (approver, until) ◄───────────────────┘ reopened when it comes back

A finding open or responded past its due date is *overdue*; an acceptance past its `until` no longer holds. A
finding is remediated only by a review that could have shown it (its rule judged and PASSed, or the evidence that
detects it ran); a rule SKIPPED or a pack left out says nothing about it. A register that kept two findings for
one fact (written before findings had identities) has the second *merged* into the first at the next review; so
has a detection that a rule of the applied packs judges from a later review on (a pack added, or a rule that now
reads its metric): it is still found, under the rule's finding, not remediated.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from auditor.evidence.document import EvidenceDocument, FindingPart

SHOWN_STATUSES = ("FAIL", "WARN", "WAIVED")  # rule statuses that make a finding
JUDGED = ("PASS", "WARN", "FAIL", "WAIVED")  # rule statuses of a rule that looked at its metric
STATUSES = ("open", "responded", "accepted", "overdue", "remediated", "merged")


@dataclass(frozen=True)
class Observed:
    """A finding as one review shows it."""

    key: str  # the rule id, or `<detection kind>[:<subject>]`
    source: str  # "rule" or "detection"
    title: str
    severity: str
    shown_as: str  # the rule's status, or "DETECTED"
    evidence: str = ""
    rules: tuple[str, ...] = ()  # every pack's rule that judges this fact (a rule's finding)


@dataclass(frozen=True)
class Event:
    """One line of a finding's history (the register's `finding_events` row, without its ids)."""

    event: str  # opened, seen, responded, accepted, remediated, reopened, merged
    on_day: str
    actor: str
    run: str | None = None  # the review's run folder name, for events a review made
    owner: str | None = None
    due: str | None = None
    response: str | None = None
    approver: str | None = None
    until: str | None = None
    reason: str | None = None
    signature: str | None = None  # a decision's: "signed" (by `actor`, the certificate's subject) or "unsigned"

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v is not None}

    def columns(self) -> dict[str, Any]:
        """The register row's columns this event fills (a run and a signature are kept otherwise)."""
        return {k: v for k, v in self.to_json().items() if k not in ("run", "signature")}


@dataclass
class State:
    """Where a finding stands after its events, on a given day."""

    status: str = "open"
    first_seen: str = ""
    last_seen: str = ""
    owner: str | None = None
    due: str | None = None
    response: str | None = None
    approver: str | None = None
    until: str | None = None
    reason: str | None = None
    remediated_in: str | None = None
    events: list[Event] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        out = {k: v for k, v in self.__dict__.items() if v is not None and k != "events"}
        out["events"] = [e.to_json() for e in self.events]
        return out


def finding_key(detection: Mapping[str, Any]) -> str:
    """A detection's key as a mapping holds it (`DetectionPart.key` of the typed document)."""
    subject = detection.get("subject") or ""
    return f"{detection['kind']}:{subject}" if subject else str(detection["kind"])


def identity_of(finding: Mapping[str, Any]) -> str:
    """A rule's finding as a mapping holds it: its identity (`FindingPart.identity` of the typed document)."""
    return str(finding.get("finding") or finding["rule"])


def observed(document: EvidenceDocument, known: Iterable[str] = ()) -> list[Observed]:
    """The findings an evidence document shows: rules FAILed, WARNed or WAIVED — the rules of several packs that
    judge the same fact as one finding, worst verdict first — and detections no rule judges. A fact whose rules
    include one the register already knows a finding by keeps that finding's key (`known`), so adding or dropping
    a pack does not open a new finding for the same fact."""
    rank = {status: i for i, status in enumerate(("FAIL", "WARN", "WAIVED"))}
    severity = {s: i for i, s in enumerate(("critical", "major", "minor", "info"))}
    groups: dict[str, list[FindingPart]] = {}
    for f in document.findings:
        groups.setdefault(f.identity, []).append(f)
    known = set(known)
    out = []
    for key, rules in groups.items():
        shown = sorted((f for f in rules if f.status in SHOWN_STATUSES),
                       key=lambda f: (rank[f.status], severity.get(f.severity, 9), f.rule))
        if not shown:
            continue
        ids = sorted(f.rule for f in rules)
        chosen = key if key in known else next((r for r in ids if r in known), key)
        head = shown[0]
        out.append(Observed(chosen, "rule", head.title, head.severity, head.status, rules=tuple(ids)))
    seen = {o.key for o in out}
    for d in document.detections:
        if not d.judged_by_rules and d.key not in seen:
            seen.add(d.key)
            out.append(Observed(d.key, "detection", d.title, d.severity, "DETECTED", d.evidence))
    return out


def could_show(document: EvidenceDocument, key: str, source: str, evidence: str) -> bool:
    """Whether this review looked where the finding was: one of its rules judged its metric, or its evidence
    ran."""
    if source == "rule":
        return any(key in (f.rule, f.identity) and f.status in JUDGED for f in document.findings)
    return document.measured(evidence)


def state(events: list[Event], today: dt.date) -> State:
    """A finding's status on `today` from its events (oldest first)."""
    now = State(events=list(events))
    held = "open"  # the status an acceptance falls back to when it lapses
    for e in events:
        now.last_seen = e.on_day if e.event in ("opened", "seen", "reopened") else now.last_seen
        if e.event in ("opened", "reopened"):
            now.first_seen = now.first_seen or e.on_day
            now.status = held = "open"
            now.remediated_in = None
        elif e.event == "responded":
            now.owner, now.due, now.response = e.owner, e.due, e.response
            if now.status != "remediated":
                now.status = held = "responded"
        elif e.event == "accepted":
            now.approver, now.until, now.reason = e.approver, e.until, e.reason
            if now.status != "remediated":
                now.status = "accepted"
        elif e.event == "remediated":
            now.status, now.remediated_in = "remediated", e.run
        elif e.event == "merged":
            now.status = "merged"
    if now.status == "accepted" and now.until is not None and dt.date.fromisoformat(now.until) < today:
        now.status = held  # the acceptance lapsed
    if now.status in ("open", "responded") and now.due is not None and dt.date.fromisoformat(now.due) < today:
        now.status = "overdue"
    return now


def review_events(document: EvidenceDocument, known: dict[str, tuple[Observed, list[Event]]], *, run: str,
                  day: str, actor: str, assignments: list[dict[str, Any]], waivers: list[dict[str, Any]]
                  ) -> dict[str, tuple[Observed, list[Event]]]:
    """The events one review adds, per finding key: `known` holds the system's findings so far (how they were
    last observed, and their events). Findings this review shows are opened, seen or reopened; findings it could
    have shown but does not are remediated; the spec's `findings:` (owner, due, note) and `waivers:` are recorded as
    responses and acceptances when they differ from the last ones."""
    added: dict[str, tuple[Observed, list[Event]]] = {}
    today = dt.date.fromisoformat(day)
    shown = {o.key: o for o in observed(document, known)}
    merged = {rule: o.key for o in shown.values() for rule in o.rules if rule != o.key}
    by_rule = {rule: o.key for o in shown.values() for rule in o.rules}
    judged_now = {d.key: by_rule[rule] for d in document.detections for rule in (d.judged_by_rules or [])
                  if rule in by_rule}
    for key, seen in shown.items():
        if key not in known:
            added[key] = (seen, [Event("opened", day, actor, run)])
        else:
            was = state(known[key][1], today).status
            added[key] = (seen, [Event("reopened" if was == "remediated" else "seen", day, actor, run)])
    for key, (before, history) in known.items():
        status = state(history, today).status
        if key in shown or status in ("remediated", "merged"):
            continue
        if key in merged:  # a register that kept two findings for one fact: this one joins the other
            added[key] = (before, [Event("merged", day, actor, run, reason=f"one finding with {merged[key]}: "
                                         "their rules judge the same fact")])
        elif key in judged_now:  # still detected, now judged by a rule: the rule's finding carries it, not a fix
            added[key] = (before, [Event("merged", day, actor, run, reason=f"one finding with {judged_now[key]}: "
                                         "a rule of the applied packs now judges it")])
        elif could_show(document, key, before.source, before.evidence):
            added[key] = (before, [Event("remediated", day, actor, run)])
    finding_of = {rule: o.key for o in shown.values() for rule in o.rules}
    for a in assignments:  # the spec's `findings:` seed the responses
        key = finding_of.get(a["rule"], a["rule"])
        if key not in added and key not in known:
            continue
        history = known.get(key, (None, []))[1] + added.get(key, (None, []))[1]
        now = state(history, today)
        if (now.owner, now.due, now.response) != (a["owner"], str(a["due"]), a.get("note")):
            _append(added, known, key, Event("responded", day, actor, owner=a["owner"], due=str(a["due"]),
                                             response=a.get("note")))
    for w in waivers:  # the spec's waivers are risk acceptances
        key = finding_of.get(w["rule"], w["rule"])
        if key not in added and key not in known:
            continue
        if key in shown and shown[key].shown_as != "WAIVED":  # another law's rule on the same fact still fails:
            continue  # waiving one rule does not accept the finding
        history = known.get(key, (None, []))[1] + added.get(key, (None, []))[1]
        now = state(history, today)
        if (now.approver, now.until, now.reason) != (w["approver"], str(w["expires"]), w["justification"]):
            _append(added, known, key, Event("accepted", day, actor, approver=w["approver"], until=str(w["expires"]),
                                             reason=w["justification"]))
    return added


def _append(added: dict[str, tuple[Observed, list[Event]]], known: dict[str, tuple[Observed, list[Event]]],
            key: str, event: Event) -> None:
    if key in added:
        added[key][1].append(event)
    else:
        added[key] = (known[key][0], [event])
