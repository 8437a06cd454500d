"""The validation of report.pdf's signature: PAdES B-B (the certificate checked at `--at`, the signature covering the
entire file) or B-LTA (pyHanko's AdES long-term validation as of `--at`, offline, at the time the signature's
timestamp vouches for; the later revisions may only add validation data and timestamps)."""

from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
from dataclasses import dataclass
from io import BytesIO
from typing import Any

from auditor.trust.certificates import quiet_pyhanko, to_asn1
from auditor.trust.pdf_revisions import later_revision_problem, pdf_reader
from auditor.trust.timestamps import describe_utc
from auditor.trust.verdict import Verdict


def check_pdf_signature(data: bytes, trusted: list[Any], *, certificate_sha256: Any = None,
                        at: dt.datetime | None = None) -> list[Verdict]:
    """The PDF's certifying signature: intact, trusted by one of `trusted`, no changes, made with the certificate
    whose sha256 the bundle's predicate states (when given). Without trusted time it must cover the entire file;
    with it (PAdES B-LTA) it is validated as of `at` at the time its timestamp vouches for, and the revisions after
    it may only add validation data and timestamps (`auditor.trust.pdf_revisions`)."""
    from pyhanko.pdf_utils.reader import PdfFileReader

    name = "report.pdf (signature)"
    with quiet_pyhanko():
        try:
            reader = PdfFileReader(BytesIO(data), strict=False)
            signatures = reader.embedded_regular_signatures
            stamps = reader.embedded_timestamp_signatures
        except Exception as exc:
            return [Verdict(False, name, f"unreadable PDF ({type(exc).__name__})")]
    if len(signatures) != 1:
        return [Verdict(False, name, f"expected one signature, found {len(signatures)}")]
    if stamps or _has_signature_timestamp(signatures[0]):
        return _check_pdf_lta(data, trusted, certificate_sha256=certificate_sha256, at=at)
    return [_check_pdf_plain(signatures[0], trusted, certificate_sha256=certificate_sha256, at=at)]


def _has_signature_timestamp(signature: Any) -> bool:
    from pyhanko.sign.validation.generic_cms import extract_tst_data_iter

    try:
        return any(True for _ in extract_tst_data_iter(signature.signer_info, signed=False))
    except Exception:
        return False


def _check_pdf_plain(signature: Any, trusted: list[Any], *, certificate_sha256: Any,
                     at: dt.datetime | None) -> Verdict:
    """A signature without trusted time (PAdES B-B): its certificate is checked at `at` (now by default)."""
    from pyhanko.sign.validation import validate_pdf_signature
    from pyhanko.sign.validation.status import SignatureCoverageLevel
    from pyhanko_certvalidator import ValidationContext

    name = "report.pdf (signature)"
    roots = [to_asn1(cert) for cert in trusted]
    context = ValidationContext(trust_roots=roots, allow_fetching=False, revocation_mode="soft-fail", moment=at)
    with quiet_pyhanko():
        try:
            # the signature must cover the entire file (below), so no later revision exists to analyse: pyHanko's
            # difference analysis reads every object of an amended file again and took 18-100 s on the demo's
            status = validate_pdf_signature(signature, context, skip_diff=True)
        except Exception as exc:
            return Verdict(False, name, f"validation failed ({type(exc).__name__}: {str(exc)[:80]})")
    problems = []
    if not status.intact or not status.valid:
        problems.append("signature not intact (the signed bytes changed)")
    if status.coverage != SignatureCoverageLevel.ENTIRE_FILE:
        problems.append("does not cover the entire file (bytes added after signing)")
    if status.docmdp_ok is False:
        problems.append("changes after certification")
    if not trusted:
        problems.append("signer not checked: no --trust certificate given")
    elif not status.trusted:
        problems.append("signer not trusted by the --trust certificates (or its certificate is not valid "
                        f"{'at --at' if at else 'today'}: without a timestamp nothing proves when it signed)")
    problems += _named_certificate(status.signing_cert, certificate_sha256)
    subject = status.signing_cert.subject.human_friendly
    if problems:
        return Verdict(False, name, "; ".join(problems) + f" (signer {subject})")
    named = ", the certificate the predicate names" if certificate_sha256 is not None else ""
    return Verdict(True, name, f"intact, trusted ({subject}{named}), covers the entire file, certified no-changes; "
                               "no trusted time (signed without a TSA)")


def _named_certificate(cert: Any, certificate_sha256: Any) -> list[str]:
    fingerprint = hashlib.sha256(cert.dump()).hexdigest()
    if certificate_sha256 is not None and fingerprint != certificate_sha256:
        return [f"signed with certificate {fingerprint[:16]}…, but the bundle's predicate names "
                f"{str(certificate_sha256)[:16]}…"]
    return []


def _check_pdf_lta(data: bytes, trusted: list[Any], *, certificate_sha256: Any,
                   at: dt.datetime | None) -> list[Verdict]:
    """Three lines: the signature (valid at the timestamped signing time), the trusted time, the long-term
    validation data and document timestamps."""
    name = "report.pdf (signature)"
    try:
        facts = validate_lta(data, trusted, at=at)
    except Exception as exc:
        return [Verdict(False, name, f"validation failed ({type(exc).__name__}: {str(exc)[:80]})")]
    problems = []
    if not facts.intact:
        problems.append("signature not intact (the signed bytes changed)")
    if not trusted:
        problems.append("signer not checked: no --trust certificate given")
    elif facts.problem:
        problems.append(facts.problem)
    if facts.later:
        problems.append(f"changed after signing: {facts.later}")
    problems += _named_certificate(facts.signer_cert, certificate_sha256)
    expiry = facts.signer_cert["tbs_certificate"]["validity"]["not_after"].native
    moment = at or dt.datetime.now(dt.UTC)
    since = f"; the certificate has since expired ({expiry.date().isoformat()})" if expiry < moment else ""
    named = ", the certificate the predicate names" if certificate_sha256 is not None else ""
    when = describe_utc(facts.signing_time) if facts.signing_time else "?"
    verdicts = [Verdict(False, name, "; ".join(problems) + f" (signer {facts.signer})") if problems else
                Verdict(True, name, f"intact, trusted ({facts.signer}{named}), certified no-changes; valid at the "
                                    f"timestamped signing time {when}{since}")]
    if facts.signing_time is None:
        stated = facts.stated_time
        message = "the signature carries no timestamp" if stated is None else \
            f"the signature's timestamp says {describe_utc(stated)} but was not validated (the " \
            "signature failed above)"
        verdicts.append(Verdict(False, "report.pdf (trusted time)", message))
    else:
        tsa_ok = facts.tsa_trusted and facts.intact
        verdicts.append(Verdict(tsa_ok, "report.pdf (trusted time)",
                                f"signed no later than {when}, vouched for by the TSA {facts.tsa}"
                                + (" (trusted)" if tsa_ok else " (NOT trusted by the --trust certificates)")))
    certs, ocsps, crls = facts.dss
    stamps = "; ".join(f"{describe_utc(t)} by {who}" for t, who in facts.document_timestamps)
    lta_ok = bool(facts.document_timestamps) and facts.later is None and facts.ok
    verdicts.append(Verdict(lta_ok, "report.pdf (long-term validation)",
                            f"validation data embedded ({certs} certificates, {ocsps} OCSP responses, {crls} CRLs); "
                            f"document timestamp {stamps or 'missing (PAdES B-LT, not B-LTA)'}; later revisions "
                            + ("add only validation data and timestamps" if facts.later is None else
                               "change the signed document")))
    return verdicts


@dataclass
class LtaFacts:
    """What the AdES long-term validation of report.pdf's signature found, in plain terms."""

    ok: bool
    intact: bool
    trusted: bool
    signer: str
    signer_cert: Any  # asn1crypto certificate
    problem: str | None
    signing_time: dt.datetime | None  # the time the signature timestamp vouches for
    tsa: str | None
    tsa_trusted: bool
    document_timestamps: list[tuple[dt.datetime, str]]
    dss: tuple[int, int, int]  # certificates, OCSP responses, CRLs embedded
    later: str | None  # why the later revisions are more than LTA updates
    stated_time: dt.datetime | None = None  # what the signature's token says, validated or not


SUBINDICATIONS = {  # ETSI EN 319 102-1 sub-indications, in words for the verify line
    "REVOKED": "the signer's certificate was revoked before the signing time",
    "REVOKED_NO_POE": "the signer's certificate was revoked, and nothing proves the signature existed before",
    "EXPIRED": "the signer's certificate had expired at the signing time",
    "OUT_OF_BOUNDS_NO_POE": "the signer's certificate is expired or not yet valid, and no timestamp proves the "
                            "signature was made while it was valid",
    "OUT_OF_BOUNDS_NOT_REVOKED": "the signer's certificate was not valid at the signing time",
    "NOT_YET_VALID": "the signer's certificate was not yet valid at the signing time",
    "NO_POE": "no timestamp proves when the signature was made",
    "NO_CERTIFICATE_CHAIN_FOUND": "the signer's or the TSA's certificate does not chain to a --trust certificate",
    "CERTIFICATE_CHAIN_GENERAL_FAILURE": "the signer's or the TSA's certificate chain cannot be validated (is the "
                                         "TSA's root among the --trust certificates?)",
    "TRY_LATER": "revocation data for the signing time is missing",
    "HASH_FAILURE": "the signed bytes changed",
    "SIG_CRYPTO_FAILURE": "the signature value does not verify",
}


def _token_time(signature: Any) -> dt.datetime | None:
    """The time the signature's own timestamp token states (read, not validated: for the wording only)."""
    from pyhanko.sign.validation.generic_cms import extract_tst_data_iter

    try:
        token = next(extract_tst_data_iter(signature.signer_info, signed=False))
        when: dt.datetime = token["encap_content_info"]["content"].parsed["gen_time"].native
    except Exception:
        return None
    return when


def _plain_reason(cert: Any, status: Any, stamp: Any, stated: dt.datetime | None, revinfo: int) -> str | None:
    """The reason a reader needs, from the facts rather than the AdES sub-indication: a signature the TSA dates
    after the certificate's expiry or revocation, or before its start; an untrusted TSA."""
    validity = cert["tbs_certificate"]["validity"]
    not_before, not_after = validity["not_before"].native, validity["not_after"].native
    when = stamp.timestamp if stamp is not None else stated
    if when is not None and when > not_after:
        return (f"the signature was made after the signer's certificate expired: the TSA dates it "
                f"{describe_utc(when)}, the certificate ended {describe_utc(not_after)}")
    if when is not None and when < not_before:
        return f"the signature was made before the signer's certificate was valid ({describe_utc(not_before)})"
    revoked = getattr(getattr(status, "revocation_details", None), "revocation_date", None)
    if revoked is not None and (when is None or revoked <= when):
        return (f"the signer's certificate was revoked on {describe_utc(revoked)}"
                + (f", before the signing time {describe_utc(when)}" if when is not None else ""))
    if stamp is not None and not stamp.trusted:
        return "the TSA's certificate does not chain to a --trust certificate"
    extensions = {ext["extn_id"].native for ext in cert["tbs_certificate"]["extensions"]}
    if revinfo == 0 and extensions & {"authority_information_access", "crl_distribution_points"}:
        return ("no revocation data is embedded for the signer's certificate, which names a responder: its status "
                "at the signing time cannot be established offline (signed without long-term validation data)")
    return None


def validate_lta(data: bytes, trusted: list[Any], *, at: dt.datetime | None = None) -> LtaFacts:
    """AdES long-term validation (pyHanko's ades_lta_validation) of report.pdf's signature as of `at` (default
    now), offline: only the certificates, OCSP responses and CRLs embedded in the DSS are used. Revocation data is
    accepted however old it is — the status it records is the one at the time of the timestamp that covers it."""
    from pyhanko.sign.validation.ades import ades_lta_validation
    from pyhanko.sign.validation.dss import DocumentSecurityStore
    from pyhanko.sign.validation.policy_decl import (
        PdfSignatureValidationSpec,
        RevinfoOnlineFetchingRule,
        RevocationInfoGatheringSpec,
        SignatureValidationSpec,
    )
    from pyhanko_certvalidator.context import CertValidationPolicySpec
    from pyhanko_certvalidator.ltv.types import ValidationTimingInfo
    from pyhanko_certvalidator.policy_decl import (
        CertRevTrustPolicy,
        FreshnessReqType,
        RevocationCheckingPolicy,
        RevocationCheckingRule,
    )
    from pyhanko_certvalidator.registry import SimpleTrustManager

    moment = at or dt.datetime.now(dt.UTC)
    rule = RevocationCheckingRule.CHECK_IF_DECLARED
    policy = CertValidationPolicySpec(
        trust_manager=SimpleTrustManager.build(trust_roots=[to_asn1(c) for c in trusted]),
        revinfo_policy=CertRevTrustPolicy(RevocationCheckingPolicy(ee_certificate_rule=rule,
                                                                   intermediate_ca_cert_rule=rule),
                                          freshness=dt.timedelta(days=365 * 100),
                                          freshness_req_type=FreshnessReqType.MAX_DIFF_REVOCATION_VALIDATION))
    spec = PdfSignatureValidationSpec(SignatureValidationSpec(
        cert_validation_policy=policy,
        revinfo_gathering_policy=RevocationInfoGatheringSpec(online_fetching_rule=RevinfoOnlineFetchingRule.LOCAL_ONLY)),
        diff_policy=None)  # the later revisions: later_revision_problem
    reader = pdf_reader(data)
    signature = next(s for s in reader.embedded_regular_signatures)
    with quiet_pyhanko():
        result = asyncio.run(ades_lta_validation(signature, spec, timing_info=ValidationTimingInfo(
            moment, moment, point_in_time_validation=False)))
    status = result.api_status
    stamp = status.timestamp_validity if status is not None else None
    stamps = []
    for ts in reader.embedded_timestamp_signatures:
        info = ts.signed_data["encap_content_info"]["content"].parsed
        stamps.append((info["gen_time"].native, ts.signer_cert.subject.human_friendly))
    indication = getattr(result.ades_subindic, "name", str(result.ades_subindic))
    ok = indication == "OK"
    cert = status.signing_cert if status is not None else signature.signer_cert
    try:
        dss = DocumentSecurityStore.read_dss(reader)
        counts = (len(list(dss.certs)), len(dss.ocsps), len(dss.crls))
    except Exception:
        counts = (0, 0, 0)
    problem = None if ok else (_plain_reason(cert, status, stamp, _token_time(signature), counts[1] + counts[2])
                               or SUBINDICATIONS.get(indication, indication.replace("_", " ").lower()))
    return LtaFacts(
        ok=ok, intact=bool(status and status.intact and status.valid), trusted=bool(status and status.trusted),
        signer=cert.subject.human_friendly, signer_cert=cert, problem=problem,
        signing_time=stamp.timestamp if stamp is not None else None,
        tsa=stamp.signing_cert.subject.human_friendly if stamp is not None else None,
        tsa_trusted=bool(stamp is not None and stamp.trusted), document_timestamps=stamps, dss=counts,
        later=later_revision_problem(reader, signature.signed_revision), stated_time=_token_time(signature))
