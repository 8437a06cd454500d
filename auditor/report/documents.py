"""The documents an audit can give, each rendered from the run's evidence.json alone: the audit report, and the
documents regulators prescribe (`ll144-summary`: NYC Local Law 144's summary of results to post). `auditor report`
writes those `output.documents` (or `--document`) names into the run folder before it is signed; `auditor render
RUN --document NAME` draws one again from a finished run by the same path.

A document is a template under `report_templates/documents/` and a function turning the typed evidence document
into what it prints; it refuses (InputError) a run that lacks what it needs, saying what to add.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from auditor.core.errors import InputError
from auditor.evidence.document import EvidenceDocument

REPORT = "report"


@dataclass(frozen=True)
class Document:
    """One document: its name (`output.documents`, `--document`), its file stem in a run folder, the template that
    lays it out, the evidence kinds it needs, and the function giving its content from the evidence."""

    name: str
    title: str
    stem: str
    template: str
    needs: tuple[str, ...]
    content: Callable[[EvidenceDocument], Any]
    # (the options of the kinds it needs, the audit's data) -> InputError when the run could not give it, checked
    # before any evidence runs
    check: Callable[[dict[str, Any], Any], None] | None = None
    packs: tuple[str, ...] = ()  # it needs a pack whose name starts with one of these


def _ll144(document: EvidenceDocument) -> Any:
    from auditor.report.ll144 import summary_of

    return summary_of(document)


def _ll144_check(options: dict[str, Any], data: Any) -> None:
    from auditor.evidence.kinds.selection_rates.measure import outside_eeo1

    outside = outside_eeo1(options["selection_rates"], data)
    if outside:
        raise InputError("the LL144 summary reports the EEO-1 component 1 categories (6 RCNY §5-300), and these are "
                         "none of them: " + ", ".join(outside[:8]) + (f" and {len(outside) - 8} more"
                                                                       if len(outside) > 8 else ""),
                         where="evidence.selection_rates.labels",
                         fix="map each value to the EEO-1 category it stands for, or to unknown (e.g. labels: "
                             "{race: {Black: Black or African American}})")


def _dsa(document: EvidenceDocument) -> Any:
    from auditor.report.dsa_audit import report_of

    return report_of(document)


DOCUMENTS: dict[str, Document] = {
    "ll144-summary": Document(name="ll144-summary", title="NYC Local Law 144 summary of results", stem="ll144-summary",
                              template="documents/ll144-summary.html.j2", needs=("selection_rates",),
                              content=_ll144, check=_ll144_check),
    "dsa-audit": Document(name="dsa-audit", title="DSA Art. 37 audit report", stem="dsa-audit",
                          template="documents/dsa-audit.html.j2", needs=(), content=_dsa, packs=("eu-dsa-art27-34",)),
}
NAMES = (REPORT, *DOCUMENTS)


def check_requested(names: Sequence[str], items: dict[str, Any], data: Any, *, where: str,
                    packs: Sequence[str] = ()) -> None:
    """Before any evidence runs: each requested document is known, the spec asks for the evidence it needs (`items`:
    the requested kinds' options), and the data let it be given."""
    kinds = list(items)
    for index, name in enumerate(names):
        if name == REPORT:
            continue
        known = DOCUMENTS.get(name)
        if known is None:
            raise InputError(f"no document '{name}'", where=f"{where}.{index}",
                             fix=f"choose among {', '.join(NAMES)}")
        lacking = [kind for kind in known.needs if kind not in kinds]
        if lacking:
            raise InputError(f"the {known.title} needs the `{lacking[0]}` evidence, which the spec does not request",
                             where=f"{where}.{index}",
                             fix=f"add `- {lacking[0]}: {{...}}` to the spec's evidence, or leave out '{name}'")
        if known.packs and not any(p.startswith(known.packs) for p in packs):
            raise InputError(f"the {known.title} is laid out by the obligations of the {known.packs[0]} pack, which "
                             "the spec does not apply", where=f"{where}.{index}",
                             fix="add `eu-dsa-art27-34` to the spec's policies, or leave out "
                                 f"'{name}'")
        if known.check is not None:
            known.check(items, data)


def render_document(name: str, document: EvidenceDocument, *, evidence_bytes: bytes,
                    templates: Path | None = None) -> str:
    """The document as one self-contained HTML page (the report's content policy first in its head)."""
    from auditor import __version__
    from auditor.report.render import render_template, with_policy

    known = DOCUMENTS[name]
    content = known.content(document)
    if hasattr(content, "evidence_sha256"):
        content.evidence_sha256 = hashlib.sha256(evidence_bytes).hexdigest()
    return with_policy(render_template(known.template, {"s": content, "version": __version__}, templates))


def write_documents(folder: Path, names: Sequence[str], document: EvidenceDocument, *, evidence_bytes: bytes,
                    attachment: bytes, formats: Collection[str], templates: Path | None = None) -> list[str]:
    """Each requested document but the report into `folder` as `<stem>.html` and `<stem>.pdf` (per `formats`; the
    PDF carries `attachment`, the evidence as the report's PDF does): the files written, by name."""
    written = []
    for name in names:
        if name == REPORT:
            continue
        known = DOCUMENTS[name]
        html = render_document(name, document, evidence_bytes=evidence_bytes, templates=templates)
        if "html" in formats:
            (folder / f"{known.stem}.html").write_text(html, encoding="utf-8")
            written.append(f"{known.stem}.html")
        if "pdf" in formats:
            from auditor.report.pdf import fixed_date, render_pdf

            pdf = render_pdf(html, attachment=attachment, date=fixed_date(document.run.get("evaluated_on")),
                             title=known.title)
            (folder / f"{known.stem}.pdf").write_bytes(pdf)
            written.append(f"{known.stem}.pdf")
    return written
