"""The validation of report.pdf's signature: PAdES B-B (the certificate checked at `--at`, the signature covering the
entire file) or B-LTA (pyHanko's AdES long-term validation as of `--at`, offline, at the time the signature's
timestamp vouches for; the later revisions may only add validation data and timestamps)."""

from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
from dataclasses import dataclass, field
from typing import Any

from auditor.trust.certificates import quiet_pyhanko, to_asn1
from auditor.trust.layout import APPROVAL_FIELD, PDF_FIELD, REPORT_PDF
from auditor.trust.pdf_revisions import certification, covered_end, later_revision_problem, pdf_reader
from auditor.trust.timestamps import describe_utc
from auditor.trust.verdict import Verdict


def check_pdf_signature(data: bytes, trusted: list[Any], *, certificate_sha256: Any = None,
                        at: dt.datetime | None = None, require_revocation: bool = False,
                        certified_bytes: int | None = None, file: str = "report.pdf") -> list[Verdict]:
    """The PDF's certifying signature: intact, trusted by one of `trusted`, no changes, made with the certificate
    whose sha256 the bundle's predicate states (when given). Without trusted time it must cover the entire file and
    its certificate be valid at `at` (default now); with it (PAdES B-LTA) it is validated at the time its timestamp
    vouches for, the chain of timestamps must reach `at`, and the revisions after it may only add validation data
    and timestamps (`auditor.trust.pdf_revisions`). `require_revocation`: a certificate whose revocation cannot be
    checked fails. `certified_bytes`: the length of the certified revision the bundle pins; the signature must end
    there. `file`: the run's PDF it is (report.pdf, or another document of the run, which holds no approval)."""
    name = f"{file} (signature)"
    with quiet_pyhanko():
        try:
            reader = pdf_reader(data)
            signatures = reader.embedded_regular_signatures
            stamps = reader.embedded_timestamp_signatures
        except Exception as exc:
            return [Verdict(False, name, f"unreadable PDF ({type(exc).__name__})")]
    certifying = [s for s in signatures if s.field_name == PDF_FIELD]
    approvals = [s for s in signatures if s.field_name == APPROVAL_FIELD and file == REPORT_PDF]
    if len(certifying) != 1 or len(approvals) > 1 or len(signatures) != len(certifying) + len(approvals):
        return [Verdict(False, name, f"expected the tool's certification and at most the approver's signature, "
                                     f"found {len(signatures)} signature{'s' if len(signatures) != 1 else ''}"
                                     + ("" if certifying else f" and none in the field {PDF_FIELD}"))]
    signature = certifying[0]
    if stamps or _has_signature_timestamp(signature):
        verdicts = _check_pdf_lta(data, trusted, certificate_sha256=certificate_sha256, at=at,
                                  require_revocation=require_revocation, file=file)
    else:
        verdicts = [_check_pdf_plain(reader, signature, trusted, certificate_sha256=certificate_sha256, at=at,
                                     require_revocation=require_revocation, file=file)]
    if certified_bytes is not None and covered_end(signature) != certified_bytes:
        verdicts[0] = Verdict(False, name, f"the bundle pins the certified revision as the first {certified_bytes:,} "
                                           f"bytes, but the signature covers {covered_end(signature):,}; "
                                           f"{verdicts[0].message}")
    return verdicts


def _has_signature_timestamp(signature: Any) -> bool:
    from pyhanko.sign.validation.generic_cms import extract_tst_data_iter

    try:
        return any(True for _ in extract_tst_data_iter(signature.signer_info, signed=False))
    except Exception:
        return False


def _check_pdf_plain(reader: Any, signature: Any, trusted: list[Any], *, certificate_sha256: Any,
                     at: dt.datetime | None, require_revocation: bool = False, file: str = "report.pdf") -> Verdict:
    """A signature without trusted time (PAdES B-B): its certificate is checked at `at` (now by default). Nothing
    proves when it was made, so outside its certificate's validity it fails, the certificate being trusted as a root
    (a self-signed one, which certificate path validation does not date) or not."""
    from pyhanko.sign.validation import validate_pdf_signature
    from pyhanko.sign.validation.status import SignatureCoverageLevel
    from pyhanko_certvalidator import ValidationContext

    name = f"{file} (signature)"
    roots = [to_asn1(cert) for cert in trusted]
    context = ValidationContext(trust_roots=roots, allow_fetching=False, revocation_mode="soft-fail", moment=at)
    with quiet_pyhanko():
        try:
            # what follows the certified revision is analysed by `later_revision_problem`: pyHanko's difference
            # analysis reads every object of an amended file again and took 18-100 s on the demo's
            status = validate_pdf_signature(signature, context, skip_diff=True)
            later = None if status.coverage == SignatureCoverageLevel.ENTIRE_FILE else \
                _after_certification(reader, signature)
        except Exception as exc:
            return Verdict(False, name, f"validation failed ({type(exc).__name__}: {str(exc)[:80]})")
    problems = []
    if not status.intact or not status.valid:
        problems.append("signature not intact (the signed bytes changed)")
    outside = _outside_validity(status.signing_cert, at)
    if outside:
        problems.append(outside)
    if status.coverage < SignatureCoverageLevel.ENTIRE_REVISION:
        problems.append("does not cover its whole revision")
    elif later is not None:
        problems.append(f"changed after signing: {later}")
    if status.docmdp_ok is False:
        problems.append("changes after certification")
    if not trusted:
        problems.append("signer not checked: no --trust certificate given")
    elif not status.trusted and not outside:
        problems.append("signer not trusted by the --trust certificates (or a certificate of its chain is not valid "
                        f"{'at --at' if at else 'today'}: without a timestamp nothing proves when it signed)")
    if require_revocation:
        problems.append("revocation not checked: a signature without trusted time embeds no revocation data "
                        "(--require-revocation)")
    problems += _named_certificate(status.signing_cert, certificate_sha256)
    subject = status.signing_cert.subject.human_friendly
    if problems:
        return Verdict(False, name, "; ".join(problems) + f" (signer {subject})")
    named = ", the certificate the predicate names" if certificate_sha256 is not None else ""
    after = "covers the entire file" if status.coverage == SignatureCoverageLevel.ENTIRE_FILE else \
        "covers its revision, and what follows only records the approval"
    return Verdict(True, name, f"intact, trusted ({subject}{named}), {after}, {certified_as(reader)}; no trusted "
                               "time (signed without a TSA)")


def _after_certification(reader: Any, signature: Any) -> str | None:
    """Without trusted time, the one thing that may follow the certified revision: the approval's revision, its
    signature covering the rest of the file. Why not, or None."""
    from pyhanko.sign.validation.status import SignatureCoverageLevel

    problem = later_revision_problem(reader, signature.signed_revision)
    if problem is not None:
        return problem
    approval = next((s for s in reader.embedded_regular_signatures if s.field_name == APPROVAL_FIELD), None)
    if approval is None:
        return "bytes added after signing that no approval signs"
    if approval.evaluate_signature_coverage() != SignatureCoverageLevel.ENTIRE_FILE:
        return "bytes added after the approval's signature"
    return None


def certified_as(reader: Any) -> str:
    """What the certification allows after it (its DocMDP permission), in words."""
    from pyhanko.sign.fields import MDPPerm

    try:
        permission = reader.root["/Perms"]["/DocMDP"]["/Reference"][0]["/TransformParams"].get("/P", 2)
        level = MDPPerm(int(permission))
    except (KeyError, IndexError, TypeError, ValueError):
        return "certified (its permissions unreadable)"
    return {MDPPerm.NO_CHANGES: "certified no-changes", MDPPerm.FILL_FORMS: "certified: filling its form and signing "
            "only", MDPPerm.ANNOTATE: "certified: forms, signatures and annotations"}[level]


def _outside_validity(cert: Any, at: dt.datetime | None) -> str | None:
    """Why a certificate (asn1crypto) is not valid at `at` (default now), or None."""
    validity = cert["tbs_certificate"]["validity"]
    start, end = validity["not_before"].native, validity["not_after"].native
    moment = at or dt.datetime.now(dt.UTC)
    if start <= moment <= end:
        return None
    return (f"the signer's certificate is not valid {'at' if at else 'on'} {describe_utc(moment)} (valid "
            f"{describe_utc(start)} to {describe_utc(end)}), and no trusted timestamp proves the signature was made "
            "inside that period")


def _named_certificate(cert: Any, certificate_sha256: Any) -> list[str]:
    fingerprint = hashlib.sha256(cert.dump()).hexdigest()
    if certificate_sha256 is not None and fingerprint != certificate_sha256:
        return [f"signed with certificate {fingerprint[:16]}…, but the bundle's predicate names "
                f"{str(certificate_sha256)[:16]}…"]
    return []


def _check_pdf_lta(data: bytes, trusted: list[Any], *, certificate_sha256: Any,
                   at: dt.datetime | None, require_revocation: bool = False,
                   file: str = "report.pdf") -> list[Verdict]:
    """Three or four lines: the signature (valid at the timestamped signing time), the trusted time, the revocation
    not checked (when a certificate names no source), the long-term validation data and document timestamps."""
    name = f"{file} (signature)"
    try:
        facts = validate_lta(data, trusted, at=at, require_revocation=require_revocation)
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
                Verdict(True, name, f"intact, trusted ({facts.signer}{named}), {facts.certified}; valid at the "
                                    f"timestamped signing time {when}{since}")]
    if facts.signing_time is None:
        stated = facts.stated_time
        message = "the signature carries no timestamp" if stated is None else \
            f"the signature's timestamp says {describe_utc(stated)} but was not validated (the " \
            "signature failed above)"
        verdicts.append(Verdict(False, f"{file} (trusted time)", message))
    else:
        expired = facts.newest is not None and moment > facts.newest.expires
        tsa_ok = facts.tsa_trusted and facts.intact and not expired
        verdicts.append(Verdict(tsa_ok, f"{file} (trusted time)",
                                f"signed no later than {when}, vouched for by the TSA {facts.tsa}"
                                + (" (trusted)" if facts.tsa_trusted and facts.intact else
                                   " (NOT trusted by the --trust certificates)")
                                + ("; no timestamp vouches for it any longer (see the signature line)" if expired
                                   else "")))
    if facts.unchecked_revocation:
        whose = "its certificate names" if len(facts.unchecked_revocation) == 1 else "their certificates name"
        verdicts.append(Verdict(True, f"{file} (revocation)", "not checked for "
                                f"{'; '.join(facts.unchecked_revocation)}: {whose} no OCSP responder and no CRL, so "
                                "nobody can tell whether it was revoked (`--require-revocation` makes this a failure)",
                                skipped=True))
    certs, ocsps, crls = facts.dss
    stamps = "; ".join(f"{describe_utc(t)} by {who}" for t, who in facts.document_timestamps)
    lta_ok = bool(facts.document_timestamps) and facts.later is None and facts.ok
    holds = f"; the proof holds until {describe_utc(facts.newest.expires)} (`auditor restamp` renews it before then)" \
        if facts.ok and facts.newest is not None else ""
    verdicts.append(Verdict(lta_ok, f"{file} (long-term validation)",
                            f"validation data embedded ({certs} certificates, {ocsps} OCSP responses, {crls} CRLs); "
                            f"document timestamp {stamps or 'missing (PAdES B-LT, not B-LTA)'}; later revisions "
                            + ("add only validation data and timestamps" if facts.later is None else
                               "change the signed document") + holds))
    return verdicts


@dataclass
class TrustedTime:
    """One timestamp of the chain that dates the signature: when, by whom, and until when its TSA's certificate
    vouches for it."""

    time: dt.datetime
    tsa: str
    expires: dt.datetime


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
    newest: TrustedTime | None = None  # the newest timestamp: the signature is proven until its TSA's expiry
    unchecked_revocation: list[str] = field(default_factory=list)  # certificates that name no revocation source
    certified: str = "certified"  # what the certification allows after it, in words (`certified_as`)


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


def _token_signer(signature: Any) -> Any:
    """The TSA certificate (asn1crypto) of the signature's own timestamp token, or None."""
    from pyhanko.sign.general import extract_certificate_info
    from pyhanko.sign.validation.generic_cms import extract_tst_data_iter

    try:
        token = next(extract_tst_data_iter(signature.signer_info, signed=False))
        return extract_certificate_info(token).signer_cert
    except Exception:
        return None


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


def _has_revocation_source(cert: Any) -> bool:
    """Whether a certificate names an OCSP responder or a CRL (asn1crypto certificate)."""
    try:
        return bool(cert.ocsp_urls or cert.crl_distribution_points)
    except Exception:
        return True  # unreadable extensions: let the validation judge it


def _issuer_path(cert: Any, pool: list[Any], trusted: list[Any]) -> list[Any]:
    """`cert` and its issuers found in `pool`, up to (not including) a trusted or self-signed certificate."""
    roots = {t.dump() for t in trusted}
    path: list[Any] = []
    current = cert
    while current is not None and current.dump() not in roots and len(path) < 10:
        path.append(current)
        if current.self_signed != "no":
            break
        current = next((c for c in pool if c.subject == current.issuer and c.dump() != current.dump()), None)
    return path


def newest_trusted_time(reader: Any) -> TrustedTime | None:
    """The newest timestamp of a signed PDF — a document timestamp, or the signature's own — read, not validated."""
    signature = certification(reader)
    stated = _token_time(signature) if signature is not None else None
    tsa = _token_signer(signature) if signature is not None else None
    chain = [(stated, tsa)] if stated is not None and tsa is not None else []
    chain += _stamps(reader)
    if not chain:
        return None
    when, cert = max(chain, key=lambda item: item[0])
    return TrustedTime(when, cert.subject.human_friendly, cert["tbs_certificate"]["validity"]["not_after"].native)


def _stamps(reader: Any) -> list[tuple[dt.datetime, Any]]:
    """(time, TSA certificate) of the document timestamps, oldest first."""
    out = []
    for ts in reader.embedded_timestamp_signatures:
        info = ts.signed_data["encap_content_info"]["content"].parsed
        out.append((info["gen_time"].native, ts.signer_cert))
    return sorted(out, key=lambda item: item[0])


def _policy(trusted: list[Any], *, require_revocation: bool) -> Any:
    """The signature validation spec: offline (the DSS only); revocation data for every certificate that names a
    source (every certificate with `require_revocation`), fresh within its own window (thisUpdate to nextUpdate):
    the past validation slides its control time back to the end of that window, which is why the data must not be
    accepted at any age."""
    from pyhanko.sign.validation.policy_decl import (
        PdfSignatureValidationSpec,
        RevinfoOnlineFetchingRule,
        RevocationInfoGatheringSpec,
        SignatureValidationSpec,
    )
    from pyhanko_certvalidator.context import CertValidationPolicySpec
    from pyhanko_certvalidator.policy_decl import (
        CertRevTrustPolicy,
        FreshnessReqType,
        RevocationCheckingPolicy,
        RevocationCheckingRule,
    )
    from pyhanko_certvalidator.registry import SimpleTrustManager

    rule = RevocationCheckingRule.CRL_OR_OCSP_REQUIRED if require_revocation else \
        RevocationCheckingRule.CHECK_IF_DECLARED
    policy = CertValidationPolicySpec(
        trust_manager=SimpleTrustManager.build(trust_roots=[to_asn1(c) for c in trusted]),
        revinfo_policy=CertRevTrustPolicy(RevocationCheckingPolicy(ee_certificate_rule=rule,
                                                                   intermediate_ca_cert_rule=rule),
                                          freshness=None,
                                          freshness_req_type=FreshnessReqType.MAX_DIFF_REVOCATION_VALIDATION))
    return PdfSignatureValidationSpec(SignatureValidationSpec(
        cert_validation_policy=policy,
        revinfo_gathering_policy=RevocationInfoGatheringSpec(online_fetching_rule=RevinfoOnlineFetchingRule.LOCAL_ONLY)),
        diff_policy=None)  # the later revisions: later_revision_problem


def validate_lta(data: bytes, trusted: list[Any], *, at: dt.datetime | None = None,
                 require_revocation: bool = False) -> LtaFacts:
    """The long-term validation of report.pdf's signature, offline: only the certificates, OCSP responses and CRLs
    embedded in the file are used. Three parts, each one pyHanko's:

    1. the signature at its timestamped signing time (pyHanko's AdES long-term validation run as of that time: the
       validation data embedded when it was signed is fresh then, and its past validation proves the signature was
       made while the signer's certificate was valid and not revoked);
    2. the chain of timestamps, link by link: the signature's timestamp and every document timestamp each validated
       at the time of the timestamp that covers it, with the validation data the file embeds (`auditor restamp`
       adds it for the newest one before adding the next): a TSA whose certificate expired, or was revoked, before
       the next timestamp breaks the chain;
    3. the newest timestamp's TSA certificate still valid at `at` (default now): until then the file proves itself,
       after it nothing does (`auditor restamp` renews it before).

    A certificate of the signer's path that names no OCSP responder and no CRL has no revocation status anyone
    could check, and pyHanko's past validation refuses such a path: its signature is then validated at the signing
    time without revocation (pyHanko's point-in-time validation) and `unchecked_revocation` names the certificate,
    unless `require_revocation` makes it a failure."""
    from pyhanko.sign.validation.ades import ades_lta_validation
    from pyhanko.sign.validation.dss import DocumentSecurityStore
    from pyhanko_certvalidator.ltv.types import ValidationTimingInfo

    reader = pdf_reader(data)
    signature = certification(reader)
    stamps = _stamps(reader)
    stated = _token_time(signature)
    newest = newest_trusted_time(reader)
    moment = stated or (stamps[0][0] if stamps else (at or dt.datetime.now(dt.UTC)))
    with quiet_pyhanko():
        result = asyncio.run(ades_lta_validation(
            signature, _policy(trusted, require_revocation=require_revocation),
            timing_info=ValidationTimingInfo(moment, moment, point_in_time_validation=False)))
    status = result.api_status
    stamp = status.timestamp_validity if status is not None else None
    indication = getattr(result.ades_subindic, "name", str(result.ades_subindic))
    ok = indication == "OK"
    cert = status.signing_cert if status is not None else signature.signer_cert
    try:
        dss: Any = DocumentSecurityStore.read_dss(reader)
        counts = (len(list(dss.certs)), len(dss.ocsps), len(dss.crls))
        pool = [*dss.load_certs(), *signature.other_embedded_certs]
    except Exception:
        dss, counts, pool = None, (0, 0, 0), list(signature.other_embedded_certs)
    unchecked = [c.subject.human_friendly for c in _issuer_path(cert, pool, [to_asn1(t) for t in trusted])
                 if not _has_revocation_source(c)]
    problem = None
    proven, by = (stamp.timestamp, stamp.signing_cert.subject.human_friendly) if stamp is not None else (None, None)
    if stated is None and stamps:  # signed without a TSA, its first trusted time a document timestamp (restamp)
        ok, _, problem = _point_in_time(signature, trusted, stamps[0][0], dss, with_token=False)
        proven, by = stamps[0][0], stamps[0][1].subject.human_friendly
        if ok and unchecked and require_revocation:
            ok, problem = False, (f"the revocation of {', '.join(unchecked)} cannot be checked: the certificate names "
                                  "no OCSP responder and no CRL (--require-revocation)")
    elif not ok and unchecked and not require_revocation and stated is not None:
        ok, stamp, problem = _point_in_time(signature, trusted, stated, dss)
        proven, by = (stamp.timestamp, stamp.signing_cert.subject.human_friendly) if stamp is not None else (None, None)
    elif not ok:
        problem = _plain_reason(cert, status, stamp, stated, counts[1] + counts[2]) \
            or SUBINDICATIONS.get(indication, indication.replace("_", " ").lower())
        if unchecked and require_revocation:
            problem = (f"the revocation of {', '.join(unchecked)} cannot be checked: the certificate names no OCSP "
                       "responder and no CRL (--require-revocation)")
    if ok:
        problem = _broken_chain(reader, signature, trusted, dss) or _expired_proof(newest, stated, at)
        ok = problem is None
    return LtaFacts(
        ok=ok, intact=bool(status and status.intact and status.valid), trusted=bool(status and status.trusted),
        signer=cert.subject.human_friendly, signer_cert=cert, problem=problem,
        signing_time=proven, tsa=by,
        tsa_trusted=(stamp is not None and bool(stamp.trusted)) or (proven is not None and ok),
        document_timestamps=[(when, tsa.subject.human_friendly) for when, tsa in stamps], dss=counts,
        later=later_revision_problem(reader, signature.signed_revision), stated_time=stated, newest=newest,
        unchecked_revocation=unchecked if ok else [], certified=certified_as(reader))


def _context(trusted: list[Any], dss: Any, when: dt.datetime, revocation: str = "hard-fail") -> Any:
    """A pyHanko validation context at `when`, offline, with the file's DSS (certificates, OCSP, CRLs)."""
    from pyhanko_certvalidator import ValidationContext

    options: dict[str, Any] = {"trust_roots": [to_asn1(c) for c in trusted], "allow_fetching": False,
                               "revocation_mode": revocation, "moment": when}
    if dss is not None:
        return dss.as_validation_context(options)
    return ValidationContext(**options)


def _broken_chain(reader: Any, signature: Any, trusted: list[Any], dss: Any) -> str | None:
    """Why the chain of timestamps breaks, or None: the signature's timestamp and each document timestamp validated
    at the time of the next one (the newest at its own time, its revocation not yet collected by anyone)."""
    from pyhanko.sign.validation import validate_pdf_timestamp
    from pyhanko.sign.validation.generic_cms import extract_tst_data_iter, validate_tst_signed_data

    stamps = sorted(reader.embedded_timestamp_signatures,
                    key=lambda s: s.signed_data["encap_content_info"]["content"].parsed["gen_time"].native)
    times = [s.signed_data["encap_content_info"]["content"].parsed["gen_time"].native for s in stamps]
    with quiet_pyhanko():
        token = next(extract_tst_data_iter(signature.signer_info, signed=False), None)
        if token is not None and times:
            signed = signature.signer_info["signature"].native
            try:
                status = asyncio.run(validate_tst_signed_data(
                    token, _context(trusted, dss, times[0]),
                    lambda algorithm: hashlib.new(algorithm, signed).digest()))
            except Exception as exc:
                status = {"trust_problem_indic": exc}
            if not status.get("intact", True) or status.get("trust_problem_indic") is not None:
                return (f"the signature's timestamp no longer validated when the document timestamp of "
                        f"{describe_utc(times[0])} covered it (its TSA's certificate expired or was revoked before)")
        for index, stamp in enumerate(stamps):
            newest = index + 1 == len(stamps)
            when = times[index] if newest else times[index + 1]
            try:
                result = validate_pdf_timestamp(stamp, _context(trusted, dss, when,
                                                                "soft-fail" if newest else "hard-fail"),
                                                skip_diff=True)
                good = result.intact and result.valid and result.trusted
            except Exception:
                good = False
            if not good:
                at = "at its own time" if newest else f"when the next one covered it ({describe_utc(when)})"
                return (f"the document timestamp of {describe_utc(times[index])} by "
                        f"{stamp.signer_cert.subject.human_friendly} does not validate {at}: its TSA's certificate "
                        "had expired or was revoked, or its validation data is missing")
    return None


def _expired_proof(newest: TrustedTime | None, stated: dt.datetime | None, at: dt.datetime | None) -> str | None:
    """Why the chain of timestamps does not reach `at` (default now): the newest TSA's certificate has expired, or
    `at` is before the signature existed."""
    moment = at or dt.datetime.now(dt.UTC)
    if stated is not None and moment < stated:
        return f"the signature did not exist yet at {describe_utc(moment)}: the TSA dates it {describe_utc(stated)}"
    if newest is not None and moment > newest.expires:
        return (f"the trusted time has expired: the newest timestamp ({describe_utc(newest.time)}, by {newest.tsa}) "
                f"is vouched for until {describe_utc(newest.expires)}, and nothing renewed it (`auditor restamp` "
                "adds a new one before then)")
    return None


def _point_in_time(signature: Any, trusted: list[Any], when: dt.datetime, dss: Any, *,
                   with_token: bool = True) -> tuple[bool, Any, str | None]:
    """The signature validated at `when` — its timestamped signing time, or, for a signature made without a TSA,
    the first document timestamp that proves it existed — with the certificates and revocation data the file
    embeds (pyHanko's point-in-time validation), where pyHanko's AdES validation cannot: a signer path whose
    certificates name no revocation source, or a signature without its own timestamp (`with_token` False). The
    chain of timestamps is checked apart (`_broken_chain`)."""
    from pyhanko.sign.validation import validate_pdf_signature

    with quiet_pyhanko():
        try:
            status = validate_pdf_signature(signature, _context(trusted, dss, when),
                                            ts_validation_context=_context(trusted, dss, when), skip_diff=True)
        except Exception as exc:
            return False, None, f"validation failed ({type(exc).__name__}: {str(exc)[:80]})"
    stamp = status.timestamp_validity
    if not (status.intact and status.valid):
        return False, stamp, "signature not intact (the signed bytes changed)"
    if not status.trusted:
        outside = _outside_validity(status.signing_cert, when)
        return False, stamp, outside or (f"the signer's certificate does not validate at {describe_utc(when)}, the "
                                         "time the file proves it signed")
    if with_token and (stamp is None or not stamp.trusted):
        return False, stamp, "the signature's timestamp does not validate"
    return True, stamp, None
