"""Signing a run folder (in its temporary folder, before the rename): report.pdf's PAdES signature, then the bundle
over every file, the signed PDF included (by its certified revision, which later revisions extend)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from auditor.trust.bundle import write_bundle
from auditor.trust.keys import SigningMaterial
from auditor.trust.layout import REPORT_PDF, run_pdfs
from auditor.trust.pdf_revisions import certified_length
from auditor.trust.pdf_sign import sign_pdf


def sign_run(run_dir: Path, material: SigningMaterial, inputs: list[tuple[str, Path]],
             predicate: dict[str, Any], *, approver: str | None = None) -> None:
    """Sign report.pdf in place (if present; its status awaits `approver`'s decision) and the run's other PDF
    documents (dsa-audit.pdf, ll144-summary.pdf: certified as they are, issue 56), then write the bundle over
    everything; the token's session, if any, is closed after."""
    try:
        certified: dict[str, int] = {}
        for pdf in run_pdfs(run_dir):
            signed = sign_pdf(pdf.read_bytes(), material, approver=approver, form=pdf.name == REPORT_PDF)
            pdf.write_bytes(signed)
            certified[pdf.name] = certified_length(signed)
        write_bundle(run_dir, material, inputs, {**predicate, "signer": material.details}, certified=certified)
    finally:
        material.close()
