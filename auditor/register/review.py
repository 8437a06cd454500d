"""What one audit takes from the register and gives back: the system's previous review (for "since last review"),
its findings as this review leaves them (the `review` block of evidence.json, which the report prints), and the
record of the run once its folder is written."""

from __future__ import annotations

import datetime as dt
import getpass
import os
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from auditor.core.errors import InputError
from auditor.core.urls import switched_off
from auditor.evidence.document import EvidenceDocument
from auditor.register.lifecycle import Event, review_events, state

DEFAULT_NAME = "register.sqlite"
SYSTEM_ACTOR = "auditor report"  # who records what a review shows (opened, seen, remediated; the spec's findings:)


def system_name(spec: Any) -> str:
    """The audited system: `model.name`, stable across versions; the audit's title when the spec names none."""
    return spec.model.name or spec.audit.title


def location(spec: Any, out_dir: Path, override: str | None = None) -> str | None:
    """Where the register is: `--register`, else the spec's `register:`, else register.sqlite in the output
    folder; None when switched off (`false` in the spec, `off` on the command line)."""
    chosen: Any = override if override is not None else spec.register_location
    if chosen is False or switched_off(chosen):
        return None
    if chosen is None:
        return str(Path(out_dir) / DEFAULT_NAME)
    return str(chosen)


def actor() -> str:
    """Who records an event: `$USER` (or the login name)."""
    try:
        return os.environ.get("USER") or getpass.getuser()
    except (KeyError, OSError):  # no password entry for this uid
        return f"uid {os.getuid()}"


@dataclass
class Review:
    """The register as this audit found it (or why it could not be read)."""

    system: str
    location: str | None = None  # None: no register (switched off)
    register: Any = None  # auditor.register.store.Register, when one exists already
    previous: dict[str, Any] | None = None
    known: dict[str, Any] | None = None
    error: InputError | None = None
    trail: dict[str, Any] | None = None  # the system's trail as this review saw it: register id, length, head


def open_review(location_: str | None, system: str) -> Review:
    """Read the system's previous review and findings; a register that cannot be used is kept as the error (the
    run is still written; the command ends with that error line). A register file that does not exist yet is
    made only when the run is recorded, so bad input found during the run leaves nothing behind."""
    review = Review(system=system, location=location_)
    if location_ is None:
        return review
    from auditor.register.store import Register, register_url

    url = register_url(location_)
    if url.startswith("sqlite:///") and not Path(url.removeprefix("sqlite:///")).exists():
        review.known = {}
        return review
    try:
        review.register = Register(location_, create=False)
        review.previous = review.register.previous(system)
        review.known = review.register.known(system)
        length, head = review.register.head(system)
        review.trail = {"register": review.register.setting("register_id"), "length": length, "head": head}
    except InputError as exc:
        review.register, review.error = None, exc
    except UNREADABLE as exc:  # a row no audit of ours wrote: never a reason to lose this run
        review.register, review.error = None, unreadable(location_, exc)
    return review


UNREADABLE = (ValueError, KeyError, TypeError, IndexError, zlib.error)


def unreadable(location_: str, exc: Exception) -> InputError:
    """A register whose records this auditor cannot read (edited by hand, or by a forged folder a rebuild of an
    older auditor indexed), as the one line the run ends with."""
    from auditor.core.urls import shown

    return InputError(f"the register holds a record this auditor cannot read ({type(exc).__name__}: "
                      f"{str(exc)[:120]})", file=shown(location_),
                      fix="run `auditor register check`, and rebuild the register from the run folders if it breaks")


def review_block(review: Review, document: EvidenceDocument) -> dict[str, Any] | None:
    """`review` in evidence.json: the previous review, and every finding this review shows or remediates, with its
    status, first day seen, owner, due date, response or acceptance, and its events (this review's included)."""
    if review.location is None:
        return None
    block: dict[str, Any] = {"system": review.system}
    if review.error is not None:
        block["error"] = review.error.problem
        return block
    # what the register's trail was when this review read it: a signed run pins it (auditor.register.trail)
    block["trail"] = review.trail or {"register": None, "length": 0, "head": "0" * 64}
    previous = review.previous
    block["previous"] = None if previous is None else {
        "run": previous["run_name"], "evaluated_on": previous["evaluated_on"], "opinion": previous["opinion"],
        "model_version": previous["model_version"]}
    day = document.run["evaluated_on"]
    known = review.known or {}
    try:
        added = review_events(document, known, run="this review", day=day, actor=SYSTEM_ACTOR,
                              assignments=document.assignments, waivers=document.waivers)
        today = dt.date.fromisoformat(day)
        rows = []
        for key, (seen, events) in added.items():
            history: list[Event] = (known[key][1] if key in known else []) + events
            now = state(history, today)
            rows.append({"id": f"{review.system}/{key}", "key": key, "source": seen.source, "title": seen.title,
                         "severity": seen.severity, "rules": list(seen.rules),
                         "shown_as": seen.shown_as if events[0].event != "remediated" else "", **now.to_json()})
    except UNREADABLE as exc:  # the register's history of this system cannot be read: the run goes on without it
        review.error = unreadable(review.location or "", exc)
        return {"system": review.system, "error": review.error.problem}
    block["findings"] = sorted(rows, key=lambda r: r["id"])
    counts: dict[str, int] = {}
    for row in rows:
        counts[row["status"]] = counts.get(row["status"], 0) + 1
    block["counts"] = counts
    return block


def record(review: Review, document: EvidenceDocument, run_dir: Path) -> None:
    """The run into the register, once its folder is complete (evidence.json and bundle digests from the files)."""
    if review.location is None or review.error is not None:
        return
    from auditor.core.files import sha256_file
    from auditor.register.store import Register

    register = review.register or Register(review.location)
    bundle = run_dir / "bundle.dsse.json"
    register.record(document, system=review.system, run_dir=run_dir,
                    evidence_sha256=sha256_file(run_dir / "evidence.json"),
                    bundle_sha256=sha256_file(bundle) if bundle.is_file() else None,
                    actor=SYSTEM_ACTOR)
