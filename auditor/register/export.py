"""The register's findings handed on: as JSON or CSV records with everything a finding's card shows and its history
(`auditor findings list --format json|csv`), and what is due or overdue, by owner (`auditor findings due`).

Reads what the register stores; measures nothing. A CSV cell is text a spreadsheet may take for a formula when it
begins with `=`, `+`, `-`, `@`, a tab or a carriage return (untrusted strings: titles, responses, names): such a cell
is written with a leading `'`, which `read_csv` takes off again, so the CSV round-trips to the JSON records.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
from typing import Any

from auditor.core.words import counted
from auditor.register.lifecycle import identity_of

FIELDS = ("id", "system", "title", "severity", "status", "first_seen", "last_seen", "owner", "due", "response",
          "approver", "until", "reason", "remediated_in", "rules", "citations", "trail")
CSV_FIELDS = (*FIELDS, "events")
LIST_FIELDS = ("rules", "citations")  # lists, joined by LIST_SEPARATOR in a CSV cell
LIST_SEPARATOR = " | "
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
EXPORT_SCHEMA = "auditor.findings/v1"


def rules_of(document: dict[str, Any] | None) -> dict[str, list[dict[str, str]]]:
    """Each finding identity of a run's evidence → the rules that judge it (rule, pack, citation), from the
    system's latest review."""
    out: dict[str, list[dict[str, str]]] = {}
    for f in (document or {}).get("findings", []):
        out.setdefault(identity_of(f), []).append({"rule": str(f["rule"]), "pack": str(f.get("pack", "")),
                                                   "citation": str(f.get("citation", "")).strip()})
    return out


def records(rows: list[dict[str, Any]], latest: dict[str, dict[str, Any] | None],
            trails: dict[str, str]) -> list[dict[str, Any]]:
    """One record a finding (`Register.findings` rows): its card's facts, the rules and laws that judge it (as the
    system's latest review applied them: `latest` maps system → evidence document), the system's trail (`trails`:
    "intact" or where it breaks) and every event with whether it was signed."""
    judged = {system: rules_of(document) for system, document in latest.items()}
    out = []
    for row in rows:
        now = row["state"]
        rules = judged.get(row["system"], {}).get(row["key"], [])
        out.append({"id": row["id"], "system": row["system"], "title": row["title"], "severity": row["severity"],
                    "status": now.status, "first_seen": now.first_seen, "last_seen": now.last_seen,
                    "owner": now.owner, "due": now.due, "response": now.response, "approver": now.approver,
                    "until": now.until, "reason": now.reason, "remediated_in": now.remediated_in,
                    "rules": [r["rule"] for r in rules], "citations": list(dict.fromkeys(r["citation"] for r in rules
                                                                                         if r["citation"])),
                    "trail": trails.get(row["system"], "intact"),
                    "events": [e.to_json() for e in now.events]})
    return out


def to_json(found: list[dict[str, Any]], *, register: str, today: dt.date) -> str:
    return json.dumps({"schema": EXPORT_SCHEMA, "register": register, "today": today.isoformat(),
                       "findings": found}, indent=2, ensure_ascii=False) + "\n"


def _cell(value: Any) -> str:
    text = "" if value is None else str(value)
    return "'" + text if text.startswith(FORMULA_STARTS) or text.startswith("'") else text


def to_csv(found: list[dict[str, Any]]) -> str:
    """The records as CSV (RFC 4180, a header row; lists joined, events as JSON), safe to open in a spreadsheet."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")
    writer.writerow(CSV_FIELDS)
    for record in found:
        row = [LIST_SEPARATOR.join(record[k]) if k in LIST_FIELDS else record[k] for k in FIELDS]
        writer.writerow([_cell(v) for v in row] + [_cell(json.dumps(record["events"], ensure_ascii=False))])
    return buffer.getvalue()


def read_csv(text: str) -> list[dict[str, Any]]:
    """`to_csv`'s records back (empty cells as None, lists split, events parsed): what a test or a script that
    takes the CSV on reads."""
    out = []
    for row in csv.DictReader(io.StringIO(text, newline="")):
        record: dict[str, Any] = {}
        for key in CSV_FIELDS:
            value = row[key]
            value = value[1:] if value.startswith("'") else value
            if key == "events":
                record[key] = json.loads(value)
            elif key in LIST_FIELDS:
                record[key] = value.split(LIST_SEPARATOR) if value else []
            else:
                record[key] = value if value != "" else None
        out.append(record)
    return out


# --- what is due ----------------------------------------------------------------------------------------------------

def due(rows: list[dict[str, Any]], today: dt.date, within: dt.timedelta) -> list[dict[str, Any]]:
    """What needs someone within `within` of `today`, soonest first: a remedy due or overdue (its owner), a risk
    acceptance that lapses or has lapsed (its approver). Remediated and merged findings need no one."""
    horizon = today + within
    out = []
    for row in rows:
        now = row["state"]
        if now.status in ("remediated", "merged"):
            continue
        items = []
        if now.status in ("responded", "overdue") and now.due:
            items.append(("overdue" if now.status == "overdue" else "due", now.due, now.owner))
        if now.until and now.approver:
            kind = "acceptance lapses" if now.status == "accepted" else "acceptance lapsed"
            if now.status == "accepted" or dt.date.fromisoformat(now.until) < today:
                items.append((kind, now.until, now.approver))
        for kind, day, who in items:
            when = dt.date.fromisoformat(day)
            if when <= horizon:
                out.append({"id": row["id"], "system": row["system"], "title": row["title"],
                            "severity": row["severity"], "status": now.status, "kind": kind, "date": day,
                            "days": (when - today).days, "owner": who or "no owner recorded"})
    return sorted(out, key=lambda item: (item["date"], item["id"]))


def describe(item: dict[str, Any]) -> str:
    """"overdue by 3 days (due 2026-11-26)", "due in 12 days (2026-12-11)", "acceptance lapses today (…)"."""
    days, day, kind = item["days"], item["date"], item["kind"]
    if kind == "overdue":
        return f"overdue by {counted(-days, 'day')} (due {day})"
    if kind == "acceptance lapsed":
        return f"acceptance lapsed {counted(-days, 'day')} ago ({day})"
    return f"{kind} today ({day})" if days == 0 else f"{kind} in {counted(days, 'day')} ({day})"
