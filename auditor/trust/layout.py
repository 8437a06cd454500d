"""What a signed run folder holds besides its artifacts, and the types of the statements signed over it."""

from __future__ import annotations

import re
from pathlib import Path

BUNDLE_NAME = "bundle.dsse.json"  # the run's signed statement (auditor.trust.bundle)
TOKEN_NAME = "bundle.tsr"  # the RFC 3161 token over the bundle's signature (auditor.trust.timestamps)
RENEWAL = re.compile(r"bundle\.renewal-([1-9][0-9]{0,4})\.json")  # its renewals (auditor.trust.token_chain)
APPROVAL_NAME = "approval.dsse.json"  # the approver's sign-off, written after signing (auditor.trust.approval)
PAYLOAD_TYPE = "application/vnd.in-toto+json"
STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "urn:auditor:audit-run:v1"
APPROVAL_PREDICATE_TYPE = "urn:auditor:approval:v1"
PDF_FIELD = "AuditorCertification"  # report.pdf's certifying signature field
APPROVAL_FIELD = "AuditorApproval"  # report.pdf's approval signature field, on the cover (auditor.trust.pdf_form)
STATUS_FIELD = "AuditorStatus"  # report.pdf's approval status, shown at the top of every page
APPROVAL_SLOT = "approval-field"  # the id of the box the cover reserves for the approval signature
ATTACHMENT = "evidence.json"  # the file attached to report.pdf (PDF/A-3)
REPORT_PDF = "report.pdf"  # the signed PDF an approval is recorded in; the run's other PDFs are certified as they are
ARCHIVE = "inputs"  # the run's own copy of its inputs (auditor.run.archive), listed in the bundle as artifacts
ARCHIVE_INDEX = "inputs/index.json"  # which input each archived file is

# What `verify` reads from a run folder it does not trust: a signed run is a few regular files, one level deep.
MAX_WALK_DEPTH = 32  # levels of folders walked below the run folder
MAX_WALK_ENTRIES = 100_000  # files, folders and anything else walked; also the most subjects a statement may list


def renewal_name(number: int) -> str:
    """The file of the bundle's `number`th timestamp renewal."""
    return f"bundle.renewal-{number}.json"


def is_renewal(name: str) -> bool:
    return RENEWAL.fullmatch(name) is not None


def run_pdfs(run_dir: Path) -> list[Path]:
    """The PDFs the tool writes at the top of a run folder and signs (report.pdf first, then the other documents:
    dsa-audit.pdf, ll144-summary.pdf), regular files only."""
    return sorted((p for p in Path(run_dir).glob("*.pdf") if p.is_file() and not p.is_symlink()),
                  key=lambda p: (p.name != REPORT_PDF, p.name))
