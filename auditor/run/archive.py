"""The run's own copy of its inputs (`inputs/` in the run folder), so that a run verifies and reruns by itself.

Editing next quarter's spec in place must not change last quarter's run: the inputs that decide an audit — the spec,
its policy packs (the built-in ones too: the tool may change), the organisation's templates, the feature dictionary
and feature-name/query files, a published statement, the baseline's evidence — are copied into the run before it is
signed, so the bundle lists them as artifacts; the model and the data too with `output.archive_inputs: all`, under
`output.archive_max_mb`. `inputs/index.json` maps each input (its role, its path as the spec names it, relative to
the spec's folder, and as the bundle names it, relative to the run folder) to its sha256 and archived copy:

    {"schema": "auditor-inputs/1", "spec": "files/audit.yaml", "mode": "decisive", "max_bytes": ...,
     "inputs": [{"role": "model", "from_spec": "model.txt", "from_run": "../../model.txt", "sha256": "…",
                 "bytes": 123, "archived": "files/model.txt" | null, "not_archived": "why" | null}, ...]}

Files keep their layout relative to the spec (under the spec folder's ancestor that holds them all), so the spec's
own relative paths find them; built-in packs go to `inputs/policies/<name>.yaml`. `rerun` stages nothing: it runs
the archived spec where it lies (read only), mapping what was not archived back to the files at hand, which must
still have the recorded sha256."""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from auditor.core.errors import InputError
from auditor.core.files import MAX_SMALL_BYTES, MiB, Unreadable, read_regular, sha256_file, sha256_regular
from auditor.trust.layout import ARCHIVE
from auditor.trust.strict_json import BadJSON, strict_json

FOLDER = ARCHIVE
INDEX = "index.json"  # in FOLDER: ARCHIVE_INDEX
SCHEMA = "auditor-inputs/1"
# the roles of the inputs that decide an audit and are small; everything else (model, data) only with mode `all`
HEAVY_ROLES = ("model", "model artifact", "model module", "dataset", "background")


@dataclass
class Archived:
    """What the archive kept and left out, for the command's notes."""

    kept: int
    left_out: list[str]


def _heavy(role: str) -> bool:
    return role in HEAVY_ROLES


def write_archive(run_dir: Path, spec_path: Path, inputs: list[tuple[str, Path]], *, mode: str, max_mb: float,
                  builtin_packs: Path) -> Archived:
    """Copy the inputs into `run_dir`/inputs and write its index. `inputs`: (role, path) as the bundle lists them
    (`engine.input_files`); `builtin_packs`: the tool's policy folder (those packs are named, not pathed)."""
    spec_dir = spec_path.parent.resolve()
    max_bytes = int(max_mb * MiB)
    folder = run_dir / FOLDER
    resolved = [(role, Path(path).resolve()) for role, path in inputs]
    kept = [(role, path) for role, path in resolved if mode == "all" or not _heavy(role)]
    depth = max((_ups(os.path.relpath(path, spec_dir)) for _, path in kept if not _builtin(path, builtin_packs)),
                default=0)
    anchor = spec_dir.parents[depth - 1] if depth else spec_dir
    entries, total, left_out = [], 0, []
    for role, path in resolved:
        size = path.stat().st_size
        digest = sha256_file(path, what=role)
        entry: dict[str, Any] = {"role": role, "from_spec": Path(os.path.relpath(path, spec_dir)).as_posix(),
                                 "from_run": Path(os.path.relpath(path, run_dir.resolve())).as_posix(),
                                 "sha256": digest, "bytes": size, "archived": None, "not_archived": None}
        if mode != "all" and _heavy(role):
            entry["not_archived"] = "the model and the data are kept only with `output.archive_inputs: all`"
        elif total + size > max_bytes:
            entry["not_archived"] = f"over `output.archive_max_mb` ({max_mb:g} MiB)"
            left_out.append(f"{role} {path.name} ({size / MiB:,.1f} MiB)")
        else:
            target = PurePosixPath("policies", path.name) if _builtin(path, builtin_packs) else \
                PurePosixPath("files", Path(os.path.relpath(path, anchor)).as_posix())
            destination = folder / target
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, destination)
            if sha256_file(destination) != digest:  # changed while it was copied: what the audit read is unknown
                raise InputError(f"the {role} changed while the run archived it", file=path,
                                 fix="run the audit again when the file no longer changes")
            entry["archived"], total = target.as_posix(), total + size
        entries.append(entry)
    spec_entry = next(e for e in entries if e["role"] == "spec")
    index = {"schema": SCHEMA, "spec": spec_entry["archived"], "mode": mode, "max_bytes": max_bytes,
             "inputs": entries}
    folder.mkdir(exist_ok=True)
    (folder / INDEX).write_text(json.dumps(index, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return Archived(sum(1 for e in entries if e["archived"]), left_out)


def _ups(relative: str) -> int:
    parts = PurePosixPath(Path(relative).as_posix()).parts
    return len(parts) - len(tuple(p for p in parts if p != ".."))


def _builtin(path: Path, builtin_packs: Path) -> bool:
    return path.parent == builtin_packs.resolve()


# --- reading it back ---------------------------------------------------------------------------------------------

def read_index(run_dir: Path) -> dict[str, Any] | None:
    """The run's inputs/index.json, strictly parsed and checked for shape; None when the run has no archive;
    InputError when it is malformed."""
    path = run_dir / FOLDER / INDEX
    if not os.path.lexists(path):
        return None
    try:
        index = strict_json(read_regular(path, limit=MAX_SMALL_BYTES, follow=False), "inputs/index.json")
    except (Unreadable, BadJSON) as exc:
        raise InputError(f"inputs/index.json is unreadable ({exc})", file=run_dir,
                         fix="run `auditor verify` on the run") from None
    if not isinstance(index, dict) or index.get("schema") != SCHEMA or not isinstance(index.get("inputs"), list) \
            or not all(isinstance(e, dict) and isinstance(e.get("role"), str) and isinstance(e.get("sha256"), str)
                       for e in index["inputs"]):
        raise InputError(f"inputs/index.json is not an archive index ({SCHEMA})", file=run_dir,
                         fix="run `auditor verify` on the run")
    for entry in index["inputs"]:
        for key in ("archived", "from_spec", "from_run"):
            value = entry.get(key)
            if value is not None and (not isinstance(value, str) or _escapes(value, allow_up=key != "archived")):
                raise InputError(f"inputs/index.json names an unsafe path ({str(value)[:80]!r})", file=run_dir,
                                 fix="run `auditor verify` on the run")
    return index


def _escapes(value: str, *, allow_up: bool) -> bool:
    pure = PurePosixPath(value)
    return not value or "\x00" in value or "\\" in value or (pure.is_absolute() and not allow_up) or \
        (".." in pure.parts and not allow_up)


@dataclass
class Rerun:
    """How to run an archived audit again: the archived spec, the paths to read instead of others, the folder of
    the built-in packs as archived, and notes for the reader."""

    spec: Path
    relocate: dict[Path, Path]
    packs: Path | None
    notes: list[str]


def plan_rerun(run_dir: Path) -> Rerun:
    """What `auditor report --from-run` reads: every archived copy checked against its recorded sha256; an input that
    was not archived is read where the run found it, if it still has the recorded sha256; one InputError otherwise."""
    run_dir = Path(run_dir).resolve()
    index = read_index(run_dir)
    if index is None:
        raise InputError("the run holds no archive of its inputs (inputs/index.json)", file=run_dir,
                         fix="rerun a run written by an auditor that archives its inputs, or its spec directly")
    root = run_dir / FOLDER
    spec_rel = index.get("spec")
    if not isinstance(spec_rel, str):
        raise InputError("the run did not archive its spec", file=run_dir, fix="rerun its spec directly")
    spec = root / spec_rel
    relocate: dict[Path, Path] = {}
    notes = []
    for entry in index["inputs"]:
        original = (run_dir / entry["from_run"]).resolve() if entry.get("from_run") else None
        if entry.get("archived"):
            copy = root / entry["archived"]
            try:
                if sha256_regular(copy, follow=False) != entry["sha256"]:
                    raise InputError(f"the archived {entry['role']} differs from what the run recorded", file=copy,
                                     fix="run `auditor verify` on the run: it was changed after the audit")
            except Unreadable as exc:
                raise InputError(f"the archived {entry['role']} is {exc}", file=copy,
                                 fix="run `auditor verify` on the run") from None
            if original is not None:
                relocate[original] = copy
            continue
        staged = (spec.parent / entry["from_spec"]).resolve() if entry.get("from_spec") else None
        found = original if original is not None and original.is_file() else None
        if found is None or sha256_file(found) != entry["sha256"]:
            state = "is missing" if found is None else "has changed since the run"
            raise InputError(f"the {entry['role']} was not archived ({entry.get('not_archived') or 'left out'}), and "
                             f"{entry['from_run']} {state}", file=run_dir,
                             fix="put the file the run read back at that path, or archive the model and the data "
                                 "with `output.archive_inputs: all`")
        if staged is not None:
            relocate[staged] = found
        notes.append(f"{entry['role']} read from {entry['from_run']} (not archived; its sha256 matches the run's)")
    packs = root / "policies" if (root / "policies").is_dir() else None
    return Rerun(spec=spec, relocate=relocate, packs=packs, notes=notes)
