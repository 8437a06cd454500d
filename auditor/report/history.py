"""`auditor history`: the register as a static site for the board — a portfolio page (`index.html`: every audited
system, its last opinion, open and overdue findings, its reviews and whether the last one was approved) and a page
per system (`<system-slug>.html`: the reviews with their approvals, links to their reports and the command that
verifies them, the trends of the report's key numbers with their 95% intervals, and the findings log with every
event).

Pages are plain HTML rendered in the report's sandbox (autoescaped; every untrusted string — system names, titles,
actors, responses — through `auditor.core.display.shown`), with the report's stylesheet inline and its
Content-Security-Policy first in <head>: no script, no server, nothing fetched; figures are inline SVG. The same
register and day give the same bytes. `pages` only reads (the register, and whether each run's report is still on
disk); `write_site` writes the pages into a folder, replacing the site's own earlier pages and nothing else.
"""

from __future__ import annotations

import datetime as dt
import difflib
import math
import os
import re
import shlex
import unicodedata
from pathlib import Path
from typing import Any
from urllib.parse import quote

from auditor.core import metric_names
from auditor.core.errors import InputError
from auditor.core.files import replace_file
from auditor.core.numbers import figure, percent
from auditor.evidence.document import EvidenceDocument, as_document
from auditor.judging.policy import STATUS_ORDER as RULE_STATUSES

INDEX = "index.html"
GENERATOR = "auditor {version} history"  # the <meta name="generator"> that marks a page as the site's own
_OURS = re.compile(r'<meta name="generator" content="auditor [^"<>]{1,40} history">')
OPEN_STATUSES = ("open", "responded", "overdue")  # a finding still to fix (not remediated, not accepted)
STATUS_ORDER = ("overdue", "open", "responded", "accepted", "remediated", "merged")
SEVERITY_ORDER = ("critical", "major", "minor", "info")
EVENT_ORDER = ("opened", "reopened", "seen", "remediated", "responded", "accepted", "merged")
STATUS_CLASS = {"overdue": "fail", "open": "warn", "responded": "waived", "accepted": "skipped", "remediated": "pass",
                "merged": "skipped"}
OPINION_CLASS = {"positive": "pass", "positive with comments": "warn", "negative": "fail"}
NDCG10 = ("Ranking quality: mean nDCG@10", "ranking_quality", "ranking_quality.ndcg@10")  # as key_numbers names it
UNDECLARED = ("Share of what orders documents that the declared main parameters do not name (undeclared share)",
              "disclosure_consistency", "disclosure.undeclared_share")
VERIFY_KEYS = "--trust signer-cert.pem --pubkey bundle-ed25519.pub.pem"  # the names `auditor keygen` gives them


# --- what the pages show ---------------------------------------------------------------------------------------------


def pages(register: Any, out: Path, *, system: str | None = None, today: dt.date,
          templates: Path | None = None) -> dict[str, str]:
    """The site as {file name: HTML}: `index.html` and a page per system (only `system`'s with one). `out` is where
    the pages will be, for the relative links to each run's report; `templates` an organisation's folder, looked in
    first (`history/index.html.j2`, `history/system.html.j2`, as for the report); nothing is written."""
    from auditor import __version__

    runs = register.runs()
    systems = sorted({r["system"] for r in runs}, key=lambda s: (s.casefold(), s))
    slugs = page_names(systems)
    if system is not None:
        if system not in slugs:
            near = difflib.get_close_matches(system, systems, n=3)
            raise InputError(f"the register has no review of system '{system}'", file=register.shown,
                             fix=(f"did you mean {', '.join(repr(n) for n in near)}?" if near else
                                  "run `auditor history` without --system to see every system") +
                                 " (the system is the spec's `model.name`)")
        systems = [system]
    approvals: dict[int, list[dict[str, Any]]] = {}
    for row in register.approvals():
        if row.get("run_id") is not None:
            approvals.setdefault(row["run_id"], []).append(row)
    findings = register.findings(system=system, today=today)
    trails = {c.system: c for c in register.check(system=system, folders=False)}
    common = {"version": __version__, "generator": GENERATOR.format(version=__version__),
              "today": today.isoformat(), "register": register.shown, "index": INDEX}
    out = Path(os.path.abspath(out))
    pages_out: dict[str, str] = {}
    portfolio = []
    for name in systems:
        theirs = [r for r in runs if r["system"] == name]
        page = system_page(register, name, theirs, [f for f in findings if f["system"] == name], approvals, out)
        page["file"] = slugs[name]
        trail = trails.get(name)
        page["trail_broken"] = trail.breaks if trail is not None and trail.breaks else []
        portfolio.append(page)
        pages_out[slugs[name]] = render("history/system.html.j2", {**common, "s": page}, templates)
    index = render("history/index.html.j2", {**common, "systems": portfolio, "only": system,
                                             "n_reviews": sum(p["n_reviews"] for p in portfolio)}, templates)
    return {INDEX: index, **pages_out}


def system_page(register: Any, system: str, runs: list[dict[str, Any]], findings: list[dict[str, Any]],
                approvals: dict[int, list[dict[str, Any]]], out: Path) -> dict[str, Any]:
    """One system: its reviews (newest first), their approvals and links, the key numbers' trends and the
    findings log."""
    by_name = {r["run_name"]: {"anchor": f"review-{r['id']}", "day": r["evaluated_on"]} for r in runs}
    events_by_run: dict[str, dict[str, int]] = {}
    for f in findings:
        for e in f["state"].events:
            if e.run is not None:
                counts = events_by_run.setdefault(e.run, {})
                counts[e.event] = counts.get(e.event, 0) + 1
    reviews = []
    for run in runs:
        document = _readable(register.document(run["id"]))
        rules: dict[str, int] = {}
        for verdict in document.findings if document is not None else ():
            rules[verdict.status] = rules.get(verdict.status, 0) + 1
        reviews.append({
            "id": run["id"], "anchor": f"review-{run['id']}", "day": run["evaluated_on"],
            "model_version": run.get("model_version"), "title": run["title"], "period": run.get("period"),
            "opinion": run["opinion"], "opinion_class": OPINION_CLASS.get(run["opinion"], "skipped"),
            "approvals": [approval(a, run) for a in approvals.get(run["id"], [])],
            "run_name": run["run_name"], "run_dir": run["run_dir"], "link": report_link(run["run_dir"], out),
            "verify": verify_command(run), "bundle_sha256": run.get("bundle_sha256"),
            "indexed": run.get("verified"),  # how a rebuild found the folder (None: recorded by its own audit)
            "evidence_sha256": run["evidence_sha256"], "tool_version": run["tool_version"],
            "rules": [(s, rules[s]) for s in RULE_STATUSES if s in rules],
            "events": sorted((events_by_run.get(run["run_name"]) or {}).items(),
                             key=lambda item: (EVENT_ORDER.index(item[0]) if item[0] in EVENT_ORDER else 9, item[0])),
            "numbers": headline(document)})
    for review in reviews:
        review["approval"] = review["approvals"][-1] if review["approvals"] else {"state": "none"}
    log = sorted((finding_entry(f, by_name) for f in findings),
                 key=lambda f: (STATUS_ORDER.index(f["status"]) if f["status"] in STATUS_ORDER else 9,
                                SEVERITY_ORDER.index(f["severity"]) if f["severity"] in SEVERITY_ORDER else 9,
                                f["first_seen"], f["id"]))
    counts = {s: sum(1 for f in log if f["status"] == s) for s in STATUS_ORDER}
    last = reviews[-1]
    return {"system": system, "n_reviews": len(reviews), "reviews": reviews[::-1], "last": last,
            "first_day": reviews[0]["day"], "counts": counts,
            "open": sum(counts[s] for s in OPEN_STATUSES), "overdue": counts["overdue"],
            "trends": trends(reviews), "table": number_table(reviews), "findings": log}


def approval(row: dict[str, Any], run: dict[str, Any]) -> dict[str, Any]:
    """One decision on a review: approved or rejected, by whom, on which day; `mismatch` when it was given for
    another bundle than the one the register recorded for the run (the run folder changed since)."""
    decision = str(row.get("decision") or "")
    state = decision if decision in ("approved", "rejected") else "other"
    if run.get("bundle_sha256") and row.get("bundle_sha256") and row["bundle_sha256"] != run["bundle_sha256"]:
        state = "mismatch"
    return {"state": state, "decision": decision, "approver": row.get("approver") or "", "day": str(row["at"])[:10],
            "reason": row.get("reason"), "bundle_sha256": row.get("bundle_sha256")}


def finding_entry(row: dict[str, Any], reviews: dict[str, dict[str, str]]) -> dict[str, Any]:
    """One finding of the log: its state on the day and its events, each with the review (anchor and day) that
    recorded it when the system's reviews include it."""
    now = row["state"]
    return {"id": row["id"], "key": row["key"], "title": row["title"], "severity": row["severity"],
            "source": row["source"], "evidence": row.get("evidence") or "", "status": now.status,
            "status_class": STATUS_CLASS.get(now.status, "skipped"), "first_seen": now.first_seen or row["first_seen"],
            "last_seen": now.last_seen, "owner": now.owner, "due": now.due, "response": now.response,
            "approver": now.approver, "until": now.until, "reason": now.reason, "remediated_in": now.remediated_in,
            "remediated": reviews.get(now.remediated_in or ""),
            "events": [{"day": e.on_day, "event": e.event, "actor": e.actor, "owner": e.owner, "due": e.due,
                        "response": e.response, "approver": e.approver, "until": e.until, "reason": e.reason,
                        "run": e.run, "review": reviews.get(e.run or ""), "signature": e.signature}
                       for e in now.events]}


def report_link(run_dir: str, out: Path) -> dict[str, str] | None:
    """The run's report.html (else report.pdf) as a link from the site's folder: a relative path when the two share
    a folder below the file system's root, else a file:// URL; None when neither file is there any more."""
    folder = Path(os.path.abspath(run_dir))
    for name in ("report.html", "report.pdf"):
        target = folder / name
        if target.is_file():
            return {"href": href(target, out), "name": name}
    return None


def href(target: Path, out: Path) -> str:
    try:
        common = Path(os.path.commonpath([target, out]))
    except ValueError:  # another drive
        return target.as_uri()
    if common == Path(common.anchor):
        return target.as_uri()
    return quote(Path(os.path.relpath(target, out)).as_posix())


def verify_command(run: dict[str, Any]) -> str | None:
    """`auditor verify` for a signed run (the register recorded its bundle); None for an unsigned one."""
    if not run.get("bundle_sha256") or str(run.get("verified") or "verified") != "verified":
        return None
    return f"auditor verify {shlex.quote(run['run_dir'])} {VERIFY_KEYS}"


def _readable(raw: Any) -> EvidenceDocument | None:
    """A review's stored evidence as the typed document; None for one no version of ours reads (the site still lists
    the review, without its numbers)."""
    try:
        return as_document(raw)
    except InputError:
        return None


def headline(document: EvidenceDocument | None) -> dict[str, dict[str, Any]]:
    """The key numbers of one review by label: mean nDCG@10, the numbers the report's executive summary shows
    (`report.summary.key_numbers`, same labels; the main parameters aside, as they name a feature each), and the
    undeclared share. Values that are missing or not finite are left out."""
    from auditor.report.summary import key_numbers

    rows: dict[str, dict[str, Any]] = {}
    if document is None:
        return rows

    def metric(kind: str, name: str) -> float | None:
        return _finite(document.metric(kind, name))

    def reading(kind: str, name: str) -> metric_names.Reading | None:
        return document.reading(kind, name)

    def add(label: str, value: Any, low: Any = None, high: Any = None, share: bool = False) -> None:
        value = _finite(value)
        if value is not None and label not in rows:
            rows[label] = {"value": value, "low": _finite(low), "high": _finite(high), "share": share}

    label, kind, stem = NDCG10
    found = reading(kind, f"{stem}.mean")
    if found is not None:
        add(label, found.value, found.low, found.high)
    for row in key_numbers(document.evidence):
        if row.get("evidence") != "global_importance":
            add(row["label"], row.get("value"), row.get("low"), row.get("high"), bool(row.get("share")))
    label, kind, name = UNDECLARED
    add(label, metric(kind, name), share=True)
    return rows


def _finite(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _series(reviews: list[dict[str, Any]]) -> list[str]:
    """Every key number present in at least one review, nDCG@10 first, then in the order the reviews show them."""
    labels: list[str] = []
    for review in reviews:
        labels += [label for label in review["numbers"] if label not in labels]
    return sorted(labels, key=lambda label: (label != NDCG10[0], labels.index(label)))


def trends(reviews: list[dict[str, Any]]) -> list[dict[str, str]]:
    """A figure per key number present in at least one review (reviews oldest first), drawn: title, svg, caption."""
    from auditor.evidence.base import Figure
    from auditor.report.plots import draw

    out = []
    days = [r["day"] for r in reviews]
    for index, label in enumerate(_series(reviews), 1):
        rows = [r["numbers"].get(label) for r in reviews]
        share = any(row and row["share"] for row in rows)
        text = percent if share else figure
        said = [f"{day}: {text(row['value'])}" + (f" (95% interval {text(row['low'])} to {text(row['high'])})"
                                                 if row["low"] is not None and row["high"] is not None else "")
                for day, row in zip(days, rows, strict=True) if row]
        trend = Figure(title=label, chart="trend_chart",
                       data={"labels": days, "values": [row and row["value"] for row in rows],
                             "lows": [row and row["low"] for row in rows],
                             "highs": [row and row["high"] for row in rows],
                             "ylabel": "share" if share else "value", "share": share, "gid": f"trend-{index}-points"},
                       caption="One dot per review that measured it, oldest left; the bar is its 95% interval where "
                               "the evidence gives one.",
                       description=f"{label} in {len(said)} of {len(reviews)} reviews: " + "; ".join(said) + ".")
        out.append({"title": trend.title, "svg": draw(trend), "caption": trend.caption})
    return out


def number_table(reviews: list[dict[str, Any]]) -> dict[str, Any]:
    """The key numbers as a table, a row per number and a column per review (oldest first): the figures' data."""

    rows = []
    for label in _series(reviews):
        cells = []
        for review in reviews:
            row = review["numbers"].get(label)
            if row is None:
                cells.append("—")
                continue
            text = percent if row["share"] else figure
            interval = f" ({text(row['low'])} to {text(row['high'])})" if row["low"] is not None and \
                row["high"] is not None else ""
            cells.append(text(row["value"]) + interval)
        rows.append({"label": label, "cells": cells})
    return {"days": [r["day"] for r in reviews], "rows": rows}


def page_names(systems: list[str]) -> dict[str, str]:
    """`<slug>.html` per system: lower-case ASCII letters, digits and hyphens; a name whose slug is taken (by a
    system earlier in the sorted list, or `index`) or empty gets a short hash of the name."""
    import hashlib

    out: dict[str, str] = {}
    used = {"index"}
    for name in sorted(systems):
        ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
        slug = re.sub(r"[^a-z0-9]+", "-", ascii_name.lower()).strip("-")[:60].rstrip("-")
        if not slug or slug in used:
            slug = f"{slug or 'system'}-{hashlib.sha256(name.encode('utf-8', 'surrogatepass')).hexdigest()[:8]}"
        used.add(slug)
        out[name] = f"{slug}.html"
    return out


def render(template: str, context: dict[str, Any], templates: Path | None = None) -> str:
    """A page through the report's path: the same sandbox and content policy, an organisation's templates first."""
    from auditor.report.render import render_template, with_policy

    return with_policy(render_template(template, context, templates))


# --- writing ---------------------------------------------------------------------------------------------------------


def write_site(register: Any, out: str | Path, system: str | None = None, today: dt.date | None = None,
               templates: Path | None = None) -> list[Path]:
    """Write the site into `out` (made if missing): `index.html` first, then the system pages. A page of the
    same name that an earlier `auditor history` wrote is replaced (each page whole, never half-written); a file
    of that name that it did not write is refused before anything is written; other files are left alone."""
    out = Path(out)
    if templates is not None:
        from auditor.report.render import check_templates

        check_templates(Path(templates))
    site = pages(register, out, system=system, today=today or dt.date.today(), templates=templates)
    if out.exists() and not out.is_dir():
        raise InputError("this is not a folder", file=out, fix="give --out a folder for the site")
    for name in site:
        _check_ours(out / name)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot make the folder ({exc.strerror or exc})", file=out,
                         fix="check the path and that it is writable") from None
    written = []
    for name, text in site.items():
        replace_file(out / name, text.encode("utf-8"), fix="check that the folder is writable")
        written.append(out / name)
    return written


def _check_ours(path: Path) -> None:
    if not os.path.lexists(path):
        return
    if path.is_symlink() or not path.is_file():
        raise InputError("a page of the site would replace this, which is not a regular file", file=path,
                         fix="move it away or give --out another folder")
    try:
        with path.open("rb") as handle:
            head = handle.read(4096).decode("utf-8", "replace")
    except OSError as exc:
        raise InputError(f"cannot read ({exc.strerror or exc})", file=path, fix="give --out another folder") from None
    if _OURS.search(head) is None:
        raise InputError("this file was not written by `auditor history`; it is not replaced", file=path,
                         fix="move it away or give --out another folder")

