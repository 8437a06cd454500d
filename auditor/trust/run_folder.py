"""A run folder against its statement: every subject re-hashed (artifacts inside the folder, inputs where the audit
read them), every entry the statement does not list refused, and what evidence.json says against the predicate.

The folder is an adversary's: the walk is bounded and follows no link, nothing but regular files is opened, every
path the statement names is refused unless it is a plain relative one, and inputs outside the folder are read only
when the statement is authenticated."""

from __future__ import annotations

import os
import stat
from pathlib import Path, PurePosixPath
from typing import Any

from auditor.core.files import MAX_JSON_BYTES, MAX_SMALL_BYTES, Unreadable, kind_of, read_regular, sha256_regular
from auditor.trust.layout import (
    APPROVAL_NAME,
    ARCHIVE,
    ARCHIVE_INDEX,
    BUNDLE_NAME,
    MAX_WALK_DEPTH,
    MAX_WALK_ENTRIES,
    TOKEN_NAME,
    is_renewal,
)
from auditor.trust.strict_json import BadJSON, json_object, strict_json
from auditor.trust.verdict import Verdict


def archived_copies(root: Path) -> dict[str, str]:
    """The bundle's input name (relative to the run folder) → its copy in the run's archive (inputs/, relative to
    the run folder), from inputs/index.json; empty when the run has none or it does not read. For the wording of the
    input lines only: the copies themselves are artifacts, hashed like every other."""
    try:
        index = strict_json(read_regular(root / ARCHIVE_INDEX, limit=MAX_SMALL_BYTES, follow=False),
                            ARCHIVE_INDEX)
    except (Unreadable, BadJSON):
        return {}
    entries = index.get("inputs") if isinstance(index, dict) else None
    return {e["from_run"]: f"{ARCHIVE}/{e['archived']}" for e in entries or []
            if isinstance(e, dict) and isinstance(e.get("from_run"), str) and isinstance(e.get("archived"), str)}


def check_subject(subject: Any, root: Path, listed: set[str], *, authentic: bool, inputs: bool = False,
                  inputs_root: Path | None = None, archived: dict[str, str] | None = None) -> Verdict:
    """One subject of the statement: its path refused, or its file re-hashed."""
    if not isinstance(subject, dict) or not isinstance(subject.get("name"), str):
        return Verdict(False, "?", "malformed subject in the bundle")
    name = subject["name"]
    digest, annotations = subject.get("digest"), subject.get("annotations", {})
    if not isinstance(digest, dict) or not isinstance(annotations, dict):
        return Verdict(False, name, "malformed subject in the bundle (digest and annotations must be objects)")
    refused = _refused_path(name)
    if refused is not None:
        return Verdict(False, name, refused)
    if annotations.get("kind", "artifact") == "input":
        role = str(annotations.get("role", "input"))
        return check_input(name, root / name, digest.get("sha256"), role, authentic=authentic, required=inputs,
                           inputs_root=inputs_root, copy=(archived or {}).get(name))
    prefix = annotations.get("certified_bytes")
    if prefix is not None and (not isinstance(prefix, int) or isinstance(prefix, bool) or prefix < 1):
        return Verdict(False, name, "malformed subject in the bundle (certified_bytes must be a positive integer)")
    return _check_artifact(name, root, digest.get("sha256"), listed, prefix=prefix)


def _refused_path(name: str) -> str | None:
    if not name:
        return "empty path in the bundle: refused"
    if "\\" in name:
        return "backslash in a path in the bundle: refused"
    if "\x00" in name:
        return "NUL in a path in the bundle: refused"
    try:
        os.fsencode(name)
    except UnicodeEncodeError:
        return "a lone surrogate in a path in the bundle (no file can have this name): refused"
    if PurePosixPath(name).is_absolute() or Path(name).is_absolute():
        return "absolute path in the bundle: refused"
    return None


def _check_artifact(name: str, root: Path, expected: Any, listed: set[str], *, prefix: int | None = None) -> Verdict:
    """A file of the run folder: listed once, by its plain relative path, a regular file (not a link) inside. With
    `prefix` (report.pdf's certified revision) only its first bytes are pinned: the revisions a signed PDF may gain
    later (validation data, document timestamps) are judged by the PDF's own checks."""
    pure = PurePosixPath(name)
    if ".." in pure.parts:
        return Verdict(False, name, "`..` in an artifact path: refused")
    if pure.as_posix() != name:
        return Verdict(False, name, "not a plain relative path (`.`, `//` or a trailing `/`): refused")
    if name in listed:
        return Verdict(False, name, "listed twice in the bundle: refused")
    listed.add(name)
    path = root / pure
    try:
        inside = Path(os.path.realpath(path.parent)).is_relative_to(root)
    except (OSError, ValueError):
        inside = False
    if not inside:
        return Verdict(False, name, "its folder is a link out of the run folder, or unreadable: refused")
    try:
        actual = sha256_regular(path, follow=False, prefix=prefix)
    except Unreadable as exc:
        if exc.missing:
            return Verdict(False, name, "listed in the bundle but missing from the run folder")
        return Verdict(False, name, f"listed in the bundle, but {exc}")
    verdict = _compare(name, actual, expected)
    if prefix is not None:
        verdict.message = verdict.message.replace("sha256", f"sha256 of the certified revision (its first {prefix:,} "
                                                            "bytes)", 1)
    return verdict


def check_input(name: str, path: Path, expected: Any, role: str, *, authentic: bool, required: bool = False,
                inputs_root: Path | None = None, copy: str | None = None) -> Verdict:
    """An input the audit read, outside the run folder. A run verifies by what it holds: without `required`
    (`verify --inputs`) the file outside is not read at all — a SKIP naming the run's own copy (`copy`, under
    inputs/) when it archived one. With it: looked for at its recorded path (`path`, relative to the run folder),
    then under `inputs_root` (by that path without its leading `../`, then by its file name), and re-hashed where
    first found (a regular file, links followed), a changed or missing file failing. Read only when the bundle is
    authenticated (a forged bundle could name any file of the verifier's and have a prefix of its hash printed)."""
    kept = f"; the run keeps its own copy, {copy}" if copy else ""
    if not required:
        return Verdict(True, name, f"{role}: outside the run, not compared{kept} (`auditor verify --inputs` compares "
                                   "the file at hand)", skipped=True)
    if not authentic:
        return Verdict(True, name, f"{role}: not checked (the bundle is not authenticated, so paths it names "
                                   "outside the run folder are not read)", skipped=True)
    for candidate, under_root in input_places(name, path, inputs_root):
        where = f" (found under --inputs-root: {candidate})" if under_root else ""
        try:
            actual = sha256_regular(candidate, follow=True)
        except Unreadable as exc:
            if exc.missing:
                continue
            return Verdict(False, name, f"{role}: {exc}{where}")
        verdict = _compare(name, actual, expected)
        changed = "" if verdict.ok else f"{kept.replace('; the run keeps', '; the run kept')}"
        verdict.message = f"{role}: {verdict.message}{where}{changed}"
        return verdict
    if inputs_root is None:
        return Verdict(False, name, f"{role}: not found at {name}: cannot be checked (give --inputs-root DIR if the "
                                    f"inputs were moved){kept}")
    folder = "" if os.path.isdir(inputs_root) else " (which is not a folder)"
    return Verdict(False, name, f"{role}: not found at {name} or under --inputs-root {inputs_root}{folder}: cannot "
                                f"be checked{kept}")


def input_places(name: str, path: Path, inputs_root: Path | None) -> list[tuple[Path, bool]]:
    """Where `verify` looks for the input recorded as `name`, in order, each with whether it is under
    `inputs_root`: the recorded path; then `inputs_root` / the name without its leading `..` parts, and
    `inputs_root` / its file name. A name that would still climb out of `inputs_root` (a `..` further on) is not
    looked for there."""
    places = [(path, False)]
    if inputs_root is None:
        return places
    parts = list(PurePosixPath(name).parts)
    while parts and parts[0] == "..":
        parts.pop(0)
    for relative in (parts, parts[-1:]):
        if not relative or ".." in relative:
            continue
        candidate = Path(inputs_root, *relative)
        if all(candidate != seen for seen, _ in places):
            places.append((candidate, True))
    return places


def _compare(name: str, actual: str, expected: Any) -> Verdict:
    if not isinstance(expected, str):
        return Verdict(False, name, "no sha256 in the bundle")
    if actual == expected:
        return Verdict(True, name, "sha256 matches")
    return Verdict(False, name, f"sha256 differs (file changed since signing): {actual[:12]}… ≠ {expected[:12]}…")


def check_folder(root: Path, listed: set[str]) -> list[Verdict]:
    """Every entry of the run folder that is not a listed regular file fails: a file or folder added after signing,
    a FIFO, socket, device or link (none is ever opened). An entry inside an unlisted folder is counted in that
    folder's line, not given its own."""
    entries, limit = _walk(root)
    folders = {parent.as_posix() for name in listed for parent in PurePosixPath(name).parents} - {"."}
    unlisted: dict[str, int] = {}  # name -> lstat mode, of the topmost entries nothing vouches for
    inside: dict[str, int] = {}  # unlisted folder -> entries below it
    for name, mode in sorted(entries):
        if name in listed or name == BUNDLE_NAME or (stat.S_ISDIR(mode) and name in folders) \
                or ((name in (APPROVAL_NAME, TOKEN_NAME) or is_renewal(name)) and stat.S_ISREG(mode)):  # own lines
            continue
        parent = next((up for up in map(str, PurePosixPath(name).parents) if up in unlisted), None)
        if parent is not None:
            inside[parent] = inside.get(parent, 0) + 1
        else:
            unlisted[name] = mode
    verdicts = [Verdict(False, name, _unlisted(mode, inside.get(name, 0))) for name, mode in unlisted.items()]
    if limit is not None:
        verdicts.append(Verdict(False, "(run folder)", limit))
    return verdicts


def _unlisted(mode: int, inside: int) -> str:
    if stat.S_ISREG(mode):
        return "present but not listed in the bundle (added after signing)"
    if stat.S_ISDIR(mode):
        holds = f", with {inside:,} entries inside" if inside else ""
        return f"a folder that holds no file listed in the bundle{holds} (added after signing)"
    return f"{_kind(mode)}, not a regular file listed in the bundle (added after signing)"


def _walk(root: Path) -> tuple[list[tuple[str, int]], str | None]:
    """(relative name, lstat mode) of every entry below `root`, links not followed; iterative, and stopped with the
    reason at MAX_WALK_DEPTH levels or MAX_WALK_ENTRIES entries (3,000 nested folders overflowed a recursive
    walk)."""
    entries: list[tuple[str, int]] = []
    stack: list[tuple[str, str, int]] = [(str(root), "", 1)]
    while stack:
        folder, prefix, depth = stack.pop()
        try:
            with os.scandir(folder) as scan:
                for entry in scan:
                    if len(entries) >= MAX_WALK_ENTRIES:
                        return entries, f"more than {MAX_WALK_ENTRIES:,} entries: not walked further (a signed " \
                                        "run holds a few files)"
                    mode = entry.stat(follow_symlinks=False).st_mode
                    entries.append((prefix + entry.name, mode))
                    if stat.S_ISDIR(mode) and depth >= MAX_WALK_DEPTH:
                        return entries, f"folders nested more than {MAX_WALK_DEPTH} levels deep " \
                                        f"({prefix + entry.name}): not walked further"
                    if stat.S_ISDIR(mode):
                        stack.append((entry.path, f"{prefix}{entry.name}/", depth + 1))
        except OSError as exc:
            return entries, f"cannot read the folder {prefix or '.'} ({exc.strerror or type(exc).__name__})"
    return entries, None


def read_evidence(path: Path) -> tuple[Any, str | None]:
    """The run folder's evidence.json, strictly parsed, or why it cannot be compared."""
    try:
        return strict_json(read_regular(path, limit=MAX_JSON_BYTES, follow=False), "evidence.json"), None
    except Unreadable as exc:
        return None, f"evidence.json is {exc}"
    except BadJSON as exc:
        return None, str(exc)


def check_predicate(predicate: dict[str, Any], evidence: Any) -> Verdict:
    """What the signed statement says about the run (audit, opinion, seed, day, schema) is what evidence.json
    says: the bundle vouches for these values, so they must be the run's."""
    name = "evidence.json (predicate)"
    if not isinstance(evidence, dict):
        return Verdict(False, name, "not compared: evidence.json is not a JSON object")
    run = json_object(evidence.get("run"))
    facts = {"audit": evidence.get("audit"), "opinion": evidence.get("opinion"), "seed": evidence.get("seed"),
             "evaluated_on": run.get("evaluated_on"), "evidence_schema": evidence.get("schema")}
    differ = [key for key, value in facts.items() if predicate.get(key) != value]
    if differ:
        return Verdict(False, name, f"the bundle's predicate states another {', '.join(differ)} than evidence.json")
    return Verdict(True, name, "audit, opinion, seed and evaluation day as the bundle's predicate states")


def _kind(mode: int) -> str:
    return "a symbolic link" if stat.S_ISLNK(mode) else kind_of(mode)
