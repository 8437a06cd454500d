"""`auditor render RUN`: a run's report drawn again from its evidence.json alone, without running anything.

The evidence is read strictly and, when the run is signed, compared with the digest its bundle lists (and the
bundle's signature checked when `--pubkey` is given) before anything is drawn: a rendering shows what the run
measured or nothing. The report is rendered as the run rendered it — figures from their stored data
(`auditor.report.plots.draw`), the spec as archived under inputs/, the signer the bundle names — so on a run of this
version the HTML is the run's own, byte for byte; `--template` renders it through an organisation's templates
instead. The result is a new folder outside the run, unsigned, with `rendered.json` saying what it was made from.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from auditor.core.errors import InputError
from auditor.core.files import MAX_JSON_BYTES, MAX_SMALL_BYTES, Unreadable, read_regular
from auditor.evidence.base import EvidenceResult
from auditor.evidence.document import EvidenceDocument, EvidenceItem, read_document

EVIDENCE = "evidence.json"
RECORD = "rendered.json"  # in the rendered folder: what it was rendered from
FORMATS = ("html", "pdf")


@dataclass
class Rendered:
    """The rendered folder and what the command says about it (one line each)."""

    folder: Path
    notes: list[str] = field(default_factory=list)


@dataclass
class LoadedRun:
    """A run folder read back for rendering: its evidence document (sections in the run's order), each item's
    result as the report reads it, the signer its bundle names (None unsigned), what was checked, and notes."""

    folder: Path
    document: EvidenceDocument
    results: dict[str, EvidenceResult]
    raw: bytes
    signer: dict[str, str] | None
    bundle: str
    notes: list[str]


def load_run(run_dir: Path, *, pubkey: Path | None = None) -> LoadedRun:
    """Read a run folder's evidence strictly, compared with its signed bundle first when it has one (its signature
    checked with `pubkey`): what `auditor render` draws and `AuditResult.load` returns."""
    run_dir = Path(run_dir)
    if not (run_dir / EVIDENCE).exists():
        raise InputError("not a run folder (no evidence.json)", file=run_dir,
                         fix="name a folder `auditor report` wrote")
    notes: list[str] = []
    raw = _read(run_dir / EVIDENCE, MAX_JSON_BYTES)
    document = _evidence(raw, run_dir)
    signer, bundle_state = _checked_against_bundle(run_dir, raw, pubkey, notes)
    document.evidence = dict(document.items())  # in the report's order, as the run held it in memory
    results = {name: presented(name, item, file=run_dir / EVIDENCE) for name, item in document.evidence.items()}
    if any(item.figures is None for item in document.evidence.values()):
        notes.append("the run's evidence.json keeps no figure data (written before figures were kept as data): "
                     "the sections say so; the run's own report shows them")
    return LoadedRun(run_dir, document, results, raw, signer, bundle_state, notes)


def presented(name: str, item: EvidenceItem, *, file: Path | None = None) -> EvidenceResult:
    """An item as the report shows it: a presenting kind's sentences, tables and figures made again from its
    stored facts by this auditor's `present` (issue 52: a corrected wording reaches a signed run's report without
    running anything; on a run this version wrote, the same); any other kind's as stored. Facts or options this
    version cannot present are one line (InputError), never a traceback."""
    from auditor.evidence import ALWAYS, REGISTRY

    result = EvidenceResult.from_item(name, item)
    kind = REGISTRY.get(name) or ALWAYS.get(name)
    try:
        section = kind.presented(item) if kind is not None else None
    except (KeyError, IndexError, TypeError, ValueError, AttributeError, ZeroDivisionError) as exc:
        raise InputError(f"the '{name}' evidence's stored facts or options are not what this auditor presents "
                         f"({type(exc).__name__}: {str(exc)[:120]})", file=file, where=f"evidence.{name}",
                         fix="render the run with the auditor version that wrote it, or run the audit again") from None
    if section is not None:
        result.present(section)
    return result


def render_run(run_dir: Path, *, out: Path | None = None, templates: Path | None = None,
               formats: tuple[str, ...] = ("html",), pubkey: Path | None = None,
               documents: tuple[str, ...] = ("report",)) -> Rendered:
    """Render `run_dir`'s documents (default its report) from its evidence into a new folder under `out` (default:
    beside the run)."""
    from auditor.report.documents import DOCUMENTS, NAMES, REPORT
    from auditor.run.engine import check_output_folder, dump_json, rename_free, reproducible_document

    if templates is not None:
        from auditor.report.render import check_templates

        check_templates(templates)
    out_dir = Path(out) if out is not None else Path(run_dir).resolve().parent
    for index, name in enumerate(documents):
        if name not in NAMES:
            raise InputError(f"no document '{name}'", where=f"--document {index + 1}",
                             fix=f"choose among {', '.join(NAMES)}")
    check_output_folder(out_dir)  # before any drawing: a wrong --out costs nothing
    run = load_run(run_dir, pubkey=pubkey)
    document, notes, raw = run.document, run.notes, run.raw
    html = html_of(run, templates=templates) if REPORT in documents else ""
    from auditor.report.documents import render_document

    pages = {name: render_document(name, document, evidence_bytes=raw, templates=templates)
             for name in documents if name != REPORT}  # each checked before anything is written
    out_dir.mkdir(parents=True, exist_ok=True)
    prefix = f".render-{os.getpid()}-"
    try:
        tmp = Path(tempfile.mkdtemp(prefix=prefix, dir=out_dir))
    except BaseException:  # stopped as the folder was made, before `tmp` held it: ours by pid
        for made in out_dir.glob(f"{prefix}*"):
            shutil.rmtree(made, ignore_errors=True)
        raise
    try:
        from auditor.report.pdf import fixed_date, render_pdf

        attached = dump_json(reproducible_document(document)).encode("utf-8")
        day = fixed_date(document.run.get("evaluated_on"))
        files = ([("report", html, str(document.audit.get("title", "Audit")))] if REPORT in documents else []) + \
            [(DOCUMENTS[name].stem, page, DOCUMENTS[name].title) for name, page in pages.items()]
        for stem, page, title in files:
            if "html" in formats:
                (tmp / f"{stem}.html").write_text(page, encoding="utf-8")
            if "pdf" in formats:
                (tmp / f"{stem}.pdf").write_bytes(render_pdf(page, attachment=attached, date=day, title=title))
        record = {"rendered_from": run_dir.resolve().name, "evidence_sha256": sha256_bytes(raw),
                  "bundle": run.bundle, "templates": str(templates or "built-in"), "documents": list(documents),
                  "signed": False, "rendered_at": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                  "notes": notes}
        (tmp / RECORD).write_text(json.dumps(record, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        final = rename_free(tmp, out_dir, f"{run_dir.resolve().name}-rendered")
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return Rendered(final, notes)


def html_of(run: LoadedRun, *, templates: Path | None = None) -> str:
    """The run's report as one HTML page, rendered from its evidence (the spec as archived, the bundle's signer)."""
    from auditor.report.render import render_html

    return render_html(run.document, run.results, spec_text=_spec_text(run.folder, run.notes), signer=run.signer,
                       timings=False, templates=templates)


def _read(path: Path, limit: int) -> bytes:
    try:
        return read_regular(path, limit=limit, follow=False)
    except Unreadable as exc:
        raise InputError(f"cannot read it: it is {exc}", file=path,
                         fix="render a run folder `auditor report` wrote, as it wrote it") from None


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _evidence(raw: bytes, run_dir: Path) -> EvidenceDocument:
    """evidence.json strictly parsed and read as the typed document (a v1 run through its adapter); one line naming
    what is wrong otherwise."""
    from auditor.trust.strict_json import BadJSON, strict_json

    try:
        document = strict_json(raw, EVIDENCE)
    except BadJSON as exc:
        raise InputError(str(exc), file=run_dir / EVIDENCE, fix="render a run folder `auditor report` wrote") from None
    missing = [key for key in ("evidence", "findings", "audit", "run") if not isinstance(
        document.get(key) if isinstance(document, dict) else None, dict if key != "findings" else list)]
    if missing or not isinstance(document["evidence"].get("dataset"), dict):
        raise InputError(f"evidence.json is not an audit's evidence (no {', '.join(missing) or 'dataset'} block)",
                         file=run_dir / EVIDENCE, fix="render a run folder `auditor report` wrote")
    return read_document(document, file=str(run_dir / EVIDENCE))


def _checked_against_bundle(run_dir: Path, raw: bytes, pubkey: Path | None,
                            notes: list[str]) -> tuple[dict[str, str] | None, str]:
    """The signer the run's bundle names, once evidence.json's digest matches the one the bundle lists (and the
    bundle's signature verifies, with `pubkey`), and what was checked; None for an unsigned run."""
    from auditor.trust.bundle import check_envelope
    from auditor.trust.dsse import parse_envelope
    from auditor.trust.layout import BUNDLE_NAME

    bundle = run_dir / BUNDLE_NAME
    if not bundle.exists():
        if pubkey is not None:
            raise InputError("the run is not signed (no bundle.dsse.json), so --pubkey has nothing to check",
                             file=run_dir, fix="leave out --pubkey for an unsigned run")
        notes.append("unsigned run: evidence.json is rendered as it is (no bundle to compare it with)")
        return None, "none: the run is not signed"
    if pubkey is not None:
        from auditor.trust.certificates import load_pubkey

        statement, verdict = check_envelope(bundle, load_pubkey(pubkey))
        if not verdict.ok:
            raise InputError(f"the run's bundle does not verify: {verdict.message}", file=bundle,
                             fix="run `auditor verify` on the run; render only a run that verifies")
    else:
        try:
            statement, _, _ = parse_envelope(_read(bundle, MAX_SMALL_BYTES))
        except ValueError as exc:
            raise InputError(f"the run's bundle is unreadable ({str(exc)[:120]})", file=bundle,
                             fix="run `auditor verify` on the run") from None
        notes.append("the bundle's signature was not checked (no --pubkey): evidence.json matches the digest it "
                     "lists; `auditor verify` checks the signatures")
    listed = [s for s in (statement or {}).get("subject", []) if isinstance(s, dict) and s.get("name") == EVIDENCE]
    digest = listed[0].get("digest", {}).get("sha256") if listed and isinstance(listed[0].get("digest"), dict) else None
    if digest != sha256_bytes(raw):
        raise InputError("evidence.json differs from the digest the run's signed bundle lists (changed after the run)"
                         if digest else "the run's bundle lists no evidence.json", file=run_dir / EVIDENCE,
                         fix="run `auditor verify` on the run; render only a run that verifies")
    state = ("signature verified with --pubkey; evidence.json has the digest it lists" if pubkey is not None else
             "evidence.json has the digest the bundle lists; the bundle's signature was not checked")
    notes.append(f"this rendering is not signed: the signed report is {run_dir / 'report.pdf'}")
    predicate = (statement or {}).get("predicate")
    signer = predicate.get("signer") if isinstance(predicate, dict) else None
    if not isinstance(signer, dict) or not all(isinstance(v, str) for v in signer.values()):
        return None, state
    return signer, state


def _spec_text(run_dir: Path, notes: list[str]) -> str:
    """The spec as the run archived it (the report's appendix prints it); a sentence when it has none."""
    from auditor.run.archive import FOLDER, read_index

    index = read_index(run_dir)
    spec = index.get("spec") if index else None
    if not isinstance(spec, str):
        notes.append("the run archived no spec: the appendix says so instead of printing it")
        return "(the spec is not archived in this run folder)"
    return _read(run_dir / FOLDER / spec, MAX_SMALL_BYTES).decode("utf-8", errors="replace")
