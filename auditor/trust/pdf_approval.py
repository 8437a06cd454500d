"""The approver's decision inside report.pdf: `auditor approve` fills the status on every page and signs the cover's
approval field with the approver's own key, in one incremental update the tool's certification allows (DocMDP level
2); `verify` checks that signature and that it is the approval.dsse.json's approver who made it."""

from __future__ import annotations

import hashlib
from io import BytesIO
from typing import Any

from auditor.trust import timestamps
from auditor.trust.certificates import quiet_pyhanko
from auditor.trust.layout import APPROVAL_FIELD, PDF_FIELD
from auditor.trust.pdf_form import decided, fill_status, has_approval_form, stamp_style
from auditor.trust.pdf_revisions import covered_end, pdf_reader
from auditor.trust.verdict import Verdict


def approval_state(pdf: bytes) -> str:
    """"ready" when report.pdf carries the approval form unsigned, "signed" when its approval field is signed,
    "none" when it has no form (runs signed before it existed are certified allowing no change: their approval is
    approval.dsse.json alone) or cannot be read."""
    with quiet_pyhanko():
        try:
            reader = pdf_reader(pdf)
            if any(s.field_name == APPROVAL_FIELD for s in reader.embedded_regular_signatures):
                return "signed"
            return "ready" if has_approval_form(reader.root) else "none"
        except Exception:
            return "none"


def approve_pdf(pdf: bytes, signer: Any, *, decision: str, approver: str, day: str, reason: str | None,
                certificate_subject: str, certificate_sha256: str = "", timestamp_url: str | None = None) -> bytes:
    """report.pdf with its status filled ("Approved by …, day") and the approval field signed by `signer` (a
    pyHanko signer of the approver's key), as one incremental update."""
    from pyhanko.pdf_utils.incremental_writer import IncrementalPdfFileWriter
    from pyhanko.sign import fields, signers

    status = decided(decision, approver, day)
    writer = IncrementalPdfFileWriter(BytesIO(pdf))
    fill_status(writer, status, decision)
    lines = [_literal(status), f"Signed %(ts)s by {_literal(certificate_subject)}"]  # pyHanko fills in %(ts)s
    if certificate_sha256:
        lines.append(f"Certificate SHA-256 {certificate_sha256[:32]}…")
    if reason:
        lines.append(f"Reason: {_literal(reason)}")
    meta = signers.PdfSignatureMetadata(
        field_name=APPROVAL_FIELD, subfilter=fields.SigSeedSubFilter.PADES, md_algorithm="sha256",
        reason=f"{decision}: {reason}" if reason else decision, name=approver)
    stamper = timestamps.timestamper(timestamp_url) if timestamp_url else None
    with quiet_pyhanko():
        try:
            out = signers.PdfSigner(meta, signer, stamp_style=stamp_style("\n".join(lines)),
                                    timestamper=stamper).sign_pdf(writer)
        except timestamps.TimestampError as exc:
            raise timestamps.read_error(timestamp_url or "", exc) from None
    signed: bytes = out.getvalue()
    return signed


def _literal(text: str, width: int = 90) -> str:
    """People's words on one line of the stamp: cut to `width` characters, their `%` escaped from pyHanko's
    formatting."""
    line = " ".join(text.split())
    return (line if len(line) <= width else line[:width - 1] + "…").replace("%", "%%")


def approved_length(pdf: bytes) -> int | None:
    """Where the approval's revision ends (its signature's byte range), or None for an unapproved PDF."""
    with quiet_pyhanko():
        try:
            signature = next((s for s in pdf_reader(pdf).embedded_regular_signatures
                              if s.field_name == APPROVAL_FIELD), None)
        except Exception:
            return None
    return None if signature is None else covered_end(signature)


def pinned(pdf: bytes) -> dict[str, Any] | None:
    """What approval.dsse.json records of the approved report.pdf: the field, and the length and sha256 of the file
    up to the end of the approval's revision (later revisions may only add trusted time)."""
    length = approved_length(pdf)
    if length is None:
        return None
    return {"field": APPROVAL_FIELD, "approved_bytes": length, "sha256": hashlib.sha256(pdf[:length]).hexdigest()}


def check_pdf_approval(pdf: bytes, *, certificate_sha256: str | None, decision: str | None,
                       recorded: Any = None) -> Verdict | None:
    """The approval signature inside report.pdf, beside approval.dsse.json: intact, over a revision that only fills
    the approval form (checked with the certification, `pdf_verify`), made with the certificate the approval names
    and stating its decision. None when the PDF holds none (an approval.dsse.json alone, or a run signed before
    the form existed). `recorded`: what approval.dsse.json pins of it (`pinned`)."""
    from pyhanko.sign.validation import validate_pdf_signature
    from pyhanko.sign.validation.status import SignatureCoverageLevel
    from pyhanko_certvalidator import ValidationContext

    name = "report.pdf (approval signature)"
    with quiet_pyhanko():
        try:
            reader = pdf_reader(pdf)
            signatures = reader.embedded_regular_signatures
        except Exception as exc:
            return Verdict(False, name, f"unreadable PDF ({type(exc).__name__})")
        signature = next((s for s in signatures if s.field_name == APPROVAL_FIELD), None)
        if signature is None:
            return None
        try:
            # who the approver is, `--approver-trust` decides on approval.dsse.json's certificate; here the PDF's
            # signature must be intact and made with that very certificate
            status = validate_pdf_signature(signature, ValidationContext(trust_roots=[], allow_fetching=False),
                                            skip_diff=True)
        except Exception as exc:
            return Verdict(False, name, f"validation failed ({type(exc).__name__}: {str(exc)[:80]})")
    problems = []
    if not status.intact or not status.valid:
        problems.append("signature not intact (the signed bytes changed)")
    fingerprint = hashlib.sha256(status.signing_cert.dump()).hexdigest()
    subject = status.signing_cert.subject.human_friendly
    if certificate_sha256 is None:
        problems.append("report.pdf is signed in its approval field but the run has no approval.dsse.json")
    elif fingerprint != certificate_sha256:
        problems.append(f"signed with certificate {fingerprint[:16]}…, but approval.dsse.json names "
                        f"{certificate_sha256[:16]}…")
    stated = str(signature.sig_object.get("/Reason", ""))
    if decision is not None and not stated.startswith(decision):
        problems.append(f"its reason says {stated[:40]!r}, but approval.dsse.json records the run {decision}")
    if certificate_sha256 is not None and recorded != pinned(pdf):
        problems.append("approval.dsse.json does not pin this approved revision of report.pdf (its length and "
                        "sha256)" if recorded is not None else "approval.dsse.json records no approval inside "
                        "report.pdf")
    if status.coverage != SignatureCoverageLevel.ENTIRE_FILE and not any(
            covered_end(stamp) > covered_end(signature) for stamp in reader.embedded_timestamp_signatures):
        problems.append("bytes added after it that no document timestamp covers")
    first = next((s for s in signatures if s.field_name == PDF_FIELD), None)
    if first is not None and covered_end(first) >= covered_end(signature):
        problems.append("it does not follow the tool's certification")
    if problems:
        return Verdict(False, name, "; ".join(problems) + f" (signer {subject})")
    return Verdict(True, name, f"intact, by {subject} (the certificate approval.dsse.json names), {decision}; the "
                               "update it signs only fills the approval status and this field")

