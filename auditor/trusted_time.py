"""Trusted time (RFC 3161) for a signed run: the client of a time-stamping authority, the bundle's timestamp, and
the long-term validation of report.pdf (PAdES B-LTA) as of a given moment.

pyHanko makes and validates the PDF's timestamps; this module adds what it leaves to its callers: a TSA client
that checks the answer (nonce, message imprint, size, time limit) with the standard library, one line per problem,
and the check that the revisions after the signature only add validation data and timestamps.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
import urllib.error
import urllib.request
from dataclasses import dataclass
from io import BytesIO
from pathlib import Path
from typing import Any

from auditor.errors import InputError

TIMEOUT_SECONDS = 20  # a TSA answers in well under a second; a hung one must not hang the audit
MAX_REPLY_BYTES = 1 << 20  # a timestamp reply is a few KB
ENV_URL = "AUDITOR_TSA_URL"
ENV_ROOTS = "AUDITOR_TSA_ROOTS"


class TimestampError(Exception):
    """The TSA could not be reached or its answer is not a valid timestamp for our request (one line)."""


def _timestamper_class() -> type:
    from pyhanko.sign.timestamps.api import TimeStamper

    class UrllibTimeStamper(TimeStamper):
        """An RFC 3161 client over HTTP(S) with the standard library: bounded in time and size, and the answer's
        message imprint checked against the request (pyHanko checks the nonce)."""

        def __init__(self, url: str) -> None:
            super().__init__(include_nonce=True)
            self.url = url

        async def async_request_tsa_response(self, req: Any) -> Any:
            return await asyncio.to_thread(self._post, req)

        def _post(self, req: Any) -> Any:
            from asn1crypto import tsp

            request = urllib.request.Request(self.url, data=req.dump(), method="POST", headers={
                "Content-Type": "application/timestamp-query", "Accept": "application/timestamp-reply"})
            try:
                with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as reply:
                    body = reply.read(MAX_REPLY_BYTES + 1)
                    kind = reply.headers.get("Content-Type", "")
            except urllib.error.HTTPError as exc:
                raise TimestampError(f"the TSA answered HTTP {exc.code} ({exc.reason})") from None
            except (urllib.error.URLError, OSError) as exc:
                reason = getattr(exc, "reason", exc)
                raise TimestampError(f"cannot reach the TSA ({reason})") from None
            if len(body) > MAX_REPLY_BYTES:
                raise TimestampError("the TSA's answer is larger than 1 MiB: not a timestamp reply")
            if kind.split(";")[0].strip() != "application/timestamp-reply":
                raise TimestampError(f"the TSA answered {kind or 'no content type'}, not application/"
                                     "timestamp-reply")
            status = _status(body)
            if status is None:
                raise TimestampError("the TSA's answer is not an RFC 3161 timestamp reply")
            if status["status"].native not in ("granted", "granted_with_mods"):
                text = "; ".join(status["status_string"].native or []) or status["status"].native
                raise TimestampError(f"the TSA refused the request ({text})")
            try:
                response = tsp.TimeStampResp.load(body)
                response.native  # noqa: B018 (parse it all now: a malformed reply fails here, not later)
            except Exception:
                raise TimestampError("the TSA's answer is not an RFC 3161 timestamp reply") from None
            try:
                info = response["time_stamp_token"]["content"]["encap_content_info"]["content"].parsed
                imprint = info["message_imprint"]
            except Exception:
                raise TimestampError("the TSA's answer holds no timestamp token") from None
            if req["nonce"].native is not None and info["nonce"].native != req["nonce"].native:
                raise TimestampError("the TSA's answer carries another nonce than the request's (a replayed or "
                                     "forged answer)")
            if imprint.dump() != req["message_imprint"].dump():
                raise TimestampError("the TSA's token is for another document (its message imprint is not the one "
                                     "requested)")
            return response

    return UrllibTimeStamper


def _status(body: bytes) -> Any:
    """The PKIStatusInfo of a TimeStampResp, read on its own: asn1crypto's TimeStampResp requires the token, which
    RFC 3161 leaves out of a refusal."""
    from asn1crypto import core, tsp

    class StatusFirst(core.Sequence):
        _fields = [("status", tsp.PKIStatusInfo), ("time_stamp_token", core.Any, {"optional": True})]  # noqa: RUF012

    try:
        parsed = StatusFirst.load(body)
        status = parsed["status"]
        status.native  # noqa: B018
        return status
    except Exception:
        return None


def timestamper(url: str) -> Any:
    """A pyHanko TimeStamper for `url`."""
    return _timestamper_class()(url)


def token_for(url: str, data: bytes) -> bytes:
    """An RFC 3161 token (DER ContentInfo) over sha256(data), from the TSA at `url`; TimestampError otherwise."""
    from pyhanko.sign.timestamps.common_utils import TimestampRequestError

    try:
        token = asyncio.run(timestamper(url).async_timestamp(hashlib.sha256(data).digest(), "sha256"))
    except TimestampRequestError as exc:
        raise TimestampError(_plain(exc)) from None
    return token.dump()


def _plain(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    if "bad nonce" in text:
        return "the TSA's answer carries another nonce than the request's (a replayed or forged answer)"
    return text[:200]


@dataclass
class TokenFacts:
    """What a timestamp token vouches for, once checked."""

    time: dt.datetime
    tsa: str
    trusted: bool
    intact: bool
    problem: str | None = None


def check_token(token: bytes, data: bytes, trusted: list[Any], *, at: dt.datetime | None = None) -> TokenFacts:
    """An RFC 3161 token over sha256(data): intact (signature and imprint), and the TSA certificate trusted by one
    of `trusted` (cryptography certificates) at `at` (default now)."""
    from asn1crypto import cms
    from pyhanko.sign.validation.generic_cms import validate_tst_signed_data
    from pyhanko_certvalidator import ValidationContext

    from auditor.signing import _quiet_pyhanko, _to_asn1

    try:
        info = cms.ContentInfo.load(token)
        signed = info["content"]
        tst = signed["encap_content_info"]["content"].parsed
        when = tst["gen_time"].native
    except Exception:
        return TokenFacts(dt.datetime.min.replace(tzinfo=dt.UTC), "?", False, False, "not an RFC 3161 token")
    context = ValidationContext(trust_roots=[_to_asn1(c) for c in trusted], allow_fetching=False,
                                revocation_mode="soft-fail", moment=at)
    with _quiet_pyhanko():
        try:
            status = asyncio.run(validate_tst_signed_data(
                signed, context, lambda algorithm: hashlib.new(algorithm, data).digest()))
        except Exception as exc:
            return TokenFacts(when, "?", False, False, f"cannot be validated ({type(exc).__name__})")
    cert = status.get("signing_cert")
    name = cert.subject.human_friendly if cert is not None else "?"
    trust = status.get("trust_problem_indic") is None and bool(trusted)
    return TokenFacts(when, name, trust, bool(status.get("intact")) and bool(status.get("valid")))


def default_url() -> str | None:
    import os

    return os.environ.get(ENV_URL) or None


def default_roots() -> list[Path]:
    import os

    value = os.environ.get(ENV_ROOTS, "")
    return [Path(p) for p in value.split(os.pathsep) if p]


def without_credentials(url: str) -> str:
    """The URL as it may be printed and signed: a user name or password in it is left out."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    host = parts.hostname or ""
    try:
        netloc = host + (f":{parts.port}" if parts.port else "")
    except ValueError:  # a port that is not a number: the request fails with its own line
        netloc = host
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, ""))


def describe_utc(moment: dt.datetime) -> str:
    return moment.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def read_error(url: str, exc: TimestampError) -> InputError:
    return InputError(f"no timestamp from {url}: {exc}", where="signing.timestamp_url",
                      fix="check the TSA's URL and that it is reachable, or remove timestamp_url to sign without "
                          "trusted time")


def pdf_reader(data: bytes) -> Any:
    from pyhanko.pdf_utils.reader import PdfFileReader

    return PdfFileReader(BytesIO(data), strict=False)


# --- the revisions after the signature ------------------------------------------------------------------------------

LATER_CATALOG_KEYS = {"/DSS", "/AcroForm", "/Extensions"}  # what LTA updates may change in the catalog
LATER_INFO_KEYS = {"/ModDate", "/Producer"}
LATER_ACROFORM_KEYS = {"/Fields", "/SigFlags"}


def later_revision_problem(reader: Any, signed_revision: int) -> str | None:
    """Why the revisions after `signed_revision` are more than long-term-validation updates (validation data in the
    DSS, document timestamps in invisible signature fields, the XMP and Info dates), or None.

    pyHanko's difference analysis says the same, but walks the whole structure tree once per object of an object
    stream: minutes on a tagged report. This check reads only the objects the later revisions touch."""
    from pyhanko.pdf_utils import generic

    xrefs = reader.xrefs
    for revision in range(signed_revision + 1, xrefs.total_revisions):
        old, new = reader.get_historical_resolver(revision - 1), reader.get_historical_resolver(revision)
        roles = _roles(new)
        for ref in xrefs.explicit_refs_in_revision(revision):
            if xrefs.get_introducing_revision(ref) >= revision:
                continue  # a new object matters only where a changed object points to it (checked below)
            before, after = old.get_object(ref), new.get_object(ref)
            role = roles.get((ref.idnum, ref.generation), "")
            if isinstance(after, generic.StreamObject):
                if role != "metadata":
                    return f"revision {revision} changes a stream of the signed document (object {ref.idnum})"
                continue
            if isinstance(after, generic.ArrayObject) and isinstance(before, generic.ArrayObject):
                if role == "contents" or list(after[:len(before)]) != list(before):
                    return f"revision {revision} changes an array of the signed document (object {ref.idnum})"
                if role == "annots":
                    problem = _new_annotations(after[len(before):], revision)
                    if problem:
                        return problem
                continue
            if not isinstance(after, generic.DictionaryObject) or not isinstance(before, generic.DictionaryObject):
                return f"revision {revision} replaces object {ref.idnum} of the signed document"
            changed = {k for k in set(after) | set(before) if after.get(k) != before.get(k)}
            allowed = {"catalog": LATER_CATALOG_KEYS, "info": LATER_INFO_KEYS, "acroform": LATER_ACROFORM_KEYS,
                       "dss": set(after) | set(before), "page": {"/Annots"}}.get(role, set())
            if changed - allowed:
                return (f"revision {revision} changes {', '.join(sorted(changed - allowed))} of object {ref.idnum} "
                        f"({role or 'not validation data'})")
            if role == "page" and "/Annots" in changed:
                old_annots = list(before.get("/Annots", generic.ArrayObject()))
                new_annots = list(after["/Annots"].get_object())
                if new_annots[:len(old_annots)] != old_annots:
                    return f"revision {revision} removes or reorders annotations of a page"
                problem = _new_annotations(new_annots[len(old_annots):], revision)
                if problem:
                    return problem
    return None


def _roles(resolver: Any) -> dict[tuple[int, int], str]:
    """(object number, generation) of the objects LTA updates may touch, and what each is."""
    from pyhanko.pdf_utils import generic

    roles: dict[tuple[int, int], str] = {}

    def mark(value: Any, role: str) -> None:
        if isinstance(value, generic.IndirectObject):
            roles[(value.idnum, value.generation)] = role

    trailer = resolver.trailer_view
    root = trailer.raw_get("/Root")
    mark(root, "catalog")
    catalog = root.get_object()
    if "/Info" in trailer:
        mark(trailer.raw_get("/Info"), "info")
    for key, role in (("/Metadata", "metadata"), ("/AcroForm", "acroform"), ("/DSS", "dss")):
        if key in catalog:
            mark(catalog.raw_get(key), role)
    if "/AcroForm" in catalog and "/Fields" in catalog["/AcroForm"]:
        mark(catalog["/AcroForm"].raw_get("/Fields"), "fields")
    pending = [catalog.raw_get("/Pages")]
    while pending:
        node_ref = pending.pop()
        node = node_ref.get_object()
        if node.get("/Type") == "/Pages":
            pending.extend(node.raw_get("/Kids") if not isinstance(node.raw_get("/Kids"), generic.IndirectObject)
                           else node["/Kids"])
            continue
        mark(node_ref, "page")
        if "/Annots" in node:
            mark(node.raw_get("/Annots"), "annots")
        if "/Contents" in node:
            mark(node.raw_get("/Contents"), "contents")
            contents = node["/Contents"]
            if isinstance(contents, generic.ArrayObject):
                for part in contents:
                    mark(part, "contents")
    return roles


def _new_annotations(added: list[Any], revision: int) -> str | None:
    """Annotations a later revision adds must be invisible signature (or timestamp) widgets."""
    for item in added:
        annot = item.get_object()
        field_type = annot.get("/FT") or (annot["/Parent"].get_object().get("/FT") if "/Parent" in annot else None)
        rect = [float(v) for v in annot.get("/Rect", [0, 0, 0, 0])]
        invisible = len(rect) == 4 and (rect[2] - rect[0]) * (rect[3] - rect[1]) == 0
        if annot.get("/Subtype") != "/Widget" or field_type != "/Sig" or not invisible:
            return f"revision {revision} adds a visible annotation or a field that is not a signature"
    return None


# --- long-term validation of report.pdf -----------------------------------------------------------------------------

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
        return token["encap_content_info"]["content"].parsed["gen_time"].native
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

    from auditor.signing import _quiet_pyhanko, _to_asn1

    moment = at or dt.datetime.now(dt.UTC)
    rule = RevocationCheckingRule.CHECK_IF_DECLARED
    policy = CertValidationPolicySpec(
        trust_manager=SimpleTrustManager.build(trust_roots=[_to_asn1(c) for c in trusted]),
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
    with _quiet_pyhanko():
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
