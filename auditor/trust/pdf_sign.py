"""report.pdf's PAdES signature: certifying at DocMDP level 2 (filling forms and signing allowed, nothing else), in an
invisible field, over the approval form it adds in the same revision (`auditor.trust.pdf_form`); B-B, or with a TSA
B-LTA (the signature's timestamp, then the validation data in the DSS, then a document timestamp)."""

from __future__ import annotations

import re
from io import BytesIO
from typing import Any

from auditor.core.errors import InputError
from auditor.trust import net, timestamps
from auditor.trust.certificates import quiet_pyhanko, to_asn1
from auditor.trust.keys import SigningMaterial
from auditor.trust.layout import PDF_FIELD
from auditor.trust.pdf_form import add_approval_form, awaiting


def sign_pdf(pdf: bytes, material: SigningMaterial, *, approver: str | None = None, form: bool = True) -> bytes:
    """PAdES certifying signature that allows filling forms and signing only, in an invisible field, over the
    approval form (a status on every page awaiting `approver`, an empty approval signature field on the cover;
    `form=False`: a document of the run the approval is not recorded in, certified as it is): B-B, or with a TSA
    B-LTA (the signature's timestamp, then the validation data in the DSS, then a document timestamp)."""
    from pyhanko.pdf_utils.incremental_writer import IncrementalPdfFileWriter
    from pyhanko.sign import fields, signers

    writer = IncrementalPdfFileWriter(BytesIO(pdf))
    if form:
        add_approval_form(writer, awaiting(approver))
    lta: dict[str, Any] = {}
    stamper = None
    if material.timestamp_url:
        from pyhanko_certvalidator import ValidationContext

        stamper = timestamps.timestamper(material.timestamp_url)
        roots = material.roots()
        lta = {"embed_validation_info": True, "use_pades_lta": True,
               "validation_context": ValidationContext(
                   trust_roots=[to_asn1(c) for c in roots], other_certs=[to_asn1(c) for c in material.chain],
                   allow_fetching=True, revocation_mode="soft-fail",
                   # http(s) only, everything within net.FETCH_SECONDS: a responder that trickles its answer, or
                   # none, leaves the data out (soft-fail) instead of hanging the signature
                   fetcher_backend=net.fetchers())}
    meta = signers.PdfSignatureMetadata(
        field_name=PDF_FIELD, certify=True, docmdp_permissions=fields.MDPPerm.FILL_FORMS,
        subfilter=fields.SigSeedSubFilter.PADES, md_algorithm="sha256",
        reason="Audit report certified by auditor" if form else "Audit document certified by auditor",
        name=material.details.get("subject"), **lta)
    with quiet_pyhanko():
        try:
            out = signers.sign_pdf(writer, meta, signer=material.signer, timestamper=stamper,
                                   new_field_spec=fields.SigFieldSpec(sig_field_name=PDF_FIELD))
        except timestamps.TimestampError as exc:
            raise timestamps.read_error(material.timestamp_url or "", exc) from None
        except Exception as exc:
            if stamper is None:
                raise
            raise InputError(f"signing with trusted time failed: {_path_problem(exc)}", where="signing",
                             fix="check that the TSA's certificate chains to a root in signing.timestamp_roots "
                                 "(or AUDITOR_TSA_ROOTS) and the signer's to its chain") from None
    signed: bytes = out.getvalue()
    return signed


def _path_problem(exc: BaseException) -> str:
    """pyHanko's path-building error in a few words: whose certificate does not chain to a trusted root."""
    found = re.search(r'validation path for the certificate "([^"]{1,200})"', str(exc))
    if found:
        return f"the certificate of {found.group(1)} does not chain to a trusted root"
    causes: list[str] = []
    cause = exc.__cause__ or exc.__context__
    while cause is not None and len(causes) < 5:
        causes.append(str(cause))
        cause = cause.__cause__ or cause.__context__
    text = " ".join(causes).lower()
    for word, plain in (("revoked", "the signer's certificate is revoked"), ("expired", "the signer's certificate "
                        "has expired"), ("not yet valid", "the signer's certificate is not yet valid")):
        if word in text:
            return plain
    return _first_line(exc)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return (text.splitlines()[0] if text else type(exc).__name__)[:200]
