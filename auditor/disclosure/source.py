"""Which run a statement is drafted from: the one named (`--run`), else the latest run of the spec as it is now —
the newest run folder in the spec's output folder whose evidence.json records this spec file's sha256. No audit is
run here: drafting reads evidence that exists (docs/disclose.md says why)."""

from __future__ import annotations

import re
from pathlib import Path

from auditor.core.errors import InputError
from auditor.core.files import sha256_file
from auditor.evidence.document import EvidenceDocument
from auditor.inputs.spec import load_spec
from auditor.run.diff import load_run
from auditor.run.engine import run_stem

MAX_FOLDERS = 10_000  # run folders looked at in the output folder
_STAMP = re.compile(r"(\d{8}T\d{6}Z)(?:-(\d+))?")


def chosen_run(spec_path: Path, run: Path | None = None) -> tuple[EvidenceDocument, Path, str | None]:
    """(evidence.json, its run folder, a note for the person drafting or None). With `run`, that run (a note when
    it was made with another version of the spec); else the latest run of this spec, bad input when it has none."""
    spec, _ = load_spec(spec_path)
    digest = sha256_file(spec_path)
    if run is not None:
        document = load_run(run, where="--run")
        recorded = document.spec.get("sha256")
        note = None if recorded == digest else (f"{run.name} was made with another version of {spec_path.name} "
                                                "(its recorded sha256 differs): the statement follows that run")
        return document, run, note
    folder = spec.output.dir
    runs = _runs(folder, run_stem(spec.audit.title))
    for candidate in runs:
        document = load_run(candidate)
        if document.spec.get("sha256") == digest:
            return document, candidate, None
    if runs:
        raise InputError(f"no run of {spec_path.name} as it is now in {folder} ({len(runs)} of earlier versions, the "
                         f"latest {runs[0].name})", file=spec_path,
                         fix=f"run `auditor report {spec_path}` first, or name a run with --run")
    raise InputError(f"no run of this spec in {folder}", file=spec_path,
                     fix=f"run `auditor report {spec_path}` first, or name a run folder with --run")


def _runs(folder: Path, stem: str) -> list[Path]:
    """Run folders of the audit titled `stem` under `folder` (holding an evidence.json), newest first."""
    if not folder.is_dir():
        return []
    found = []
    for index, entry in enumerate(folder.iterdir()):
        if index >= MAX_FOLDERS:
            break
        match = _STAMP.fullmatch(entry.name[len(stem) + 1:]) if entry.name.startswith(stem + "-") else None
        if match is not None and (entry / "evidence.json").is_file():
            found.append(((match.group(1), int(match.group(2) or 1)), entry))
    return [entry for _, entry in sorted(found, reverse=True)]
