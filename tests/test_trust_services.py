"""The test trust services themselves (tests/trust_services.py, tests/softhsm.py), over real HTTP on 127.0.0.1 and a
real SoftHSM2 token: the TSA's tokens are valid and trusted under the test root and answer the request; each lying
TSA lies the way it says; OCSP and the CRL follow revoke(); the token's key signs and never leaves the token.
Checked with pyHanko (the signer's own validator), with cryptography and, where present, with `openssl ts -verify`."""

from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
import io
import os
import shutil
import subprocess
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from asn1crypto import cms, core, tsp
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding
from cryptography.x509 import ocsp
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from pyhanko.sign.timestamps.aiohttp_client import HTTPTimeStamper
from pyhanko.sign.timestamps.api import TimeStamper
from pyhanko.sign.timestamps.common_utils import TimestampRequestError, handle_tsp_response
from pyhanko.sign.validation import generic_cms
from pyhanko.sign.validation.status import TimestampSignatureStatus

from tests.softhsm import SoftHsmToken
from tests.trust_services import ROOT_NAME, TrustServices

DIGEST = hashlib.sha256(b"the audit report").digest()


def post(url: str, body: bytes, content_type: str) -> tuple[int, str, bytes]:
    request = urllib.request.Request(url, data=body, headers={"Content-Type": content_type})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.headers.get("Content-Type", ""), response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers.get("Content-Type", ""), error.read()


def ask_tsa(url: str, digest: bytes = DIGEST) -> tuple[int, tsp.TimeStampReq, int, str, bytes]:
    """A real RFC 3161 request (pyHanko's own request builder, with a nonce) POSTed to `url`."""
    nonce, request = TimeStamper(include_nonce=True).request_cms(digest, "sha256")
    status, content_type, body = post(url, request.dump(), "application/timestamp-query")
    return nonce, request, status, content_type, body


def tst_info(token: cms.ContentInfo) -> tsp.TSTInfo:
    return token["content"]["encap_content_info"]["content"].parsed


def validate_token(token: cms.ContentInfo, services: TrustServices, digest: bytes = DIGEST) -> TimestampSignatureStatus:
    """pyHanko's validation of a timestamp token's SignedData against `digest`, trusting only the test root."""
    kwargs = asyncio.run(generic_cms.validate_tst_signed_data(token["content"], services.validation_context(),
                                                              lambda _algorithm: digest))
    return TimestampSignatureStatus(**kwargs)


class _StatusFirst(core.Sequence):
    """TimeStampResp read for its status alone (asn1crypto's requires the token, absent on a refusal)."""

    _fields = [("status", tsp.PKIStatusInfo), ("time_stamp_token", cms.ContentInfo, {"optional": True})]  # noqa: RUF012


# --- the time-stamping authority ---------------------------------------------------------------------------------


def test_tsa_token_is_valid_trusted_and_answers_the_request(trust_services: TrustServices) -> None:
    nonce, _, status, content_type, body = ask_tsa(trust_services.url_tsa)
    assert (status, content_type) == (200, "application/timestamp-reply")
    token = handle_tsp_response(tsp.TimeStampResp.load(body), nonce)  # pyHanko's own checks: granted, same nonce
    info = tst_info(token)
    assert info["nonce"].native == nonce
    assert info["message_imprint"]["hashed_message"].native == DIGEST
    assert info["message_imprint"]["hash_algorithm"]["algorithm"].native == "sha256"
    assert abs(info["gen_time"].native - dt.datetime.now(dt.UTC)) < dt.timedelta(minutes=1)
    verdict = validate_token(token, trust_services)
    assert verdict.intact and verdict.valid and verdict.trusted
    assert verdict.signing_cert.subject.native["common_name"] == "Auditor Test TSA"
    eku = trust_services.tsa_cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage)
    assert eku.critical and list(eku.value) == [ExtendedKeyUsageOID.TIME_STAMPING]
    assert trust_services.tsa_cert.issuer == trust_services.root_cert.subject
    assert trust_services.root_cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == ROOT_NAME


def test_tsa_through_pyhankos_http_client(trust_services: TrustServices) -> None:
    before = trust_services.hits["/tsa"]
    token = asyncio.run(HTTPTimeStamper(trust_services.url_tsa).async_timestamp(DIGEST, "sha256"))
    assert validate_token(token, trust_services).trusted
    assert trust_services.hits["/tsa"] == before + 1


def test_tsa_clock_can_be_fixed(trust_services: TrustServices) -> None:
    moment = dt.datetime(2030, 5, 17, 9, 30, tzinfo=dt.UTC)
    trust_services.fixed_time = moment
    try:
        nonce, _, _, _, body = ask_tsa(trust_services.url_tsa)
    finally:
        trust_services.fixed_time = None
    token = handle_tsp_response(tsp.TimeStampResp.load(body), nonce)
    assert tst_info(token)["gen_time"].native == moment


def test_tsa_refuses_what_is_not_a_timestamp_query(trust_services: TrustServices) -> None:
    status, _, _ = post(trust_services.url_tsa, b"\x30\x00", "application/octet-stream")
    assert status == 415
    status, content_type, body = post(trust_services.url_tsa, b"\x30\x03\x02\x01\x01", "application/timestamp-query")
    assert (status, content_type) == (200, "application/timestamp-reply")
    assert _StatusFirst.load(body)["status"]["status"].native == "rejection"
    assert _StatusFirst.load(body)["status"]["fail_info"].native == {"bad_data_format"}


def test_wrong_nonce(trust_services: TrustServices) -> None:
    nonce, _, status, _, body = ask_tsa(trust_services.url_lying_tsa("wrong-nonce"))
    response = tsp.TimeStampResp.load(body)
    token = response["time_stamp_token"]
    assert status == 200 and response["status"]["status"].native == "granted"
    assert tst_info(token)["nonce"].native == nonce + 1
    assert tst_info(token)["message_imprint"]["hashed_message"].native == DIGEST
    assert validate_token(token, trust_services).trusted  # a sound token: only the nonce betrays it
    # pyHanko refuses it; 0.38 with an AttributeError ('int' object has no attribute 'hex') where it means
    # TimestampRequestError, so a caller must not catch only TimestampRequestError.
    with pytest.raises((TimestampRequestError, AttributeError)):
        handle_tsp_response(response, nonce)
    with pytest.raises((TimestampRequestError, AttributeError)):
        asyncio.run(HTTPTimeStamper(trust_services.url_lying_tsa("wrong-nonce")).async_timestamp(DIGEST, "sha256"))


def test_wrong_digest(trust_services: TrustServices) -> None:
    nonce, _, _, _, body = ask_tsa(trust_services.url_lying_tsa("wrong-digest"))
    token = handle_tsp_response(tsp.TimeStampResp.load(body), nonce)  # the nonce is right
    assert tst_info(token)["message_imprint"]["hashed_message"].native != DIGEST
    verdict = validate_token(token, trust_services)
    # signed by the real TSA (sound signature, chain to the root), but for something else; pyHanko's `trusted`
    # needs `intact` too, so only the chain tells
    assert not verdict.intact and verdict.valid and not verdict.trusted
    assert verdict.trust_problem_indic is None and verdict.validation_path is not None


def test_untrusted_tsa(trust_services: TrustServices) -> None:
    nonce, _, _, _, body = ask_tsa(trust_services.url_lying_tsa("untrusted"))
    token = handle_tsp_response(tsp.TimeStampResp.load(body), nonce)
    assert tst_info(token)["message_imprint"]["hashed_message"].native == DIGEST
    verdict = validate_token(token, trust_services)
    assert verdict.intact and verdict.valid and not verdict.trusted
    assert verdict.signing_cert.subject.native["common_name"] == "Unrelated Test TSA"


def test_error_garbage_and_rejection(trust_services: TrustServices) -> None:
    _, _, status, _, _ = ask_tsa(trust_services.url_lying_tsa("error"))
    assert status == 500
    _, _, status, content_type, body = ask_tsa(trust_services.url_lying_tsa("garbage"))
    assert (status, content_type) == (200, "application/timestamp-reply")
    with pytest.raises(ValueError):
        tsp.TimeStampResp.load(body)["status"].native  # noqa: B018 - parsing is the point
    _, _, status, content_type, body = ask_tsa(trust_services.url_lying_tsa("rejection"))
    assert (status, content_type) == (200, "application/timestamp-reply")
    refusal = _StatusFirst.load(body)
    assert refusal["status"]["status"].native == "rejection"
    assert refusal["status"]["fail_info"].native == {"bad_request"}
    assert refusal["time_stamp_token"].native is None  # RFC 3161: no token unless granted
    # pyHanko's client gets no token from any of them (0.38: TimestampRequestError for the 500, ValueError from
    # asn1crypto for the garbage and for the rejection, whose TimeStampResp asn1crypto cannot read without a token).
    for kind in ("error", "garbage", "rejection"):
        with pytest.raises((TimestampRequestError, ValueError)):
            asyncio.run(HTTPTimeStamper(trust_services.url_lying_tsa(kind)).async_timestamp(DIGEST, "sha256"))


@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl (the command) is not installed")
@pytest.mark.parametrize(("kind", "expected"), [("", "Verification: OK"), ("wrong-nonce", "nonce mismatch"),
                                                ("wrong-digest", "message imprint mismatch"),
                                                ("untrusted", "certificate verify error"),
                                                ("rejection", "no time stamp token")])
def test_openssl_agrees(trust_services: TrustServices, tmp_path: Path, kind: str, expected: str) -> None:
    """An independent RFC 3161 implementation reads each answer the same way."""
    _, request, _, _, body = ask_tsa(trust_services.url_lying_tsa(kind) if kind else trust_services.url_tsa)
    (tmp_path / "q.der").write_bytes(request.dump())
    (tmp_path / "r.der").write_bytes(body)
    trust_services.write_root_pem(tmp_path / "root.pem")
    result = subprocess.run(["openssl", "ts", "-verify", "-queryfile", "q.der", "-in", "r.der", "-CAfile", "root.pem"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=30)
    assert expected in result.stdout + result.stderr, result.stdout + result.stderr


# --- OCSP and CRL -------------------------------------------------------------------------------------------------


def _ask_ocsp(services: TrustServices, cert: x509.Certificate) -> tuple[ocsp.OCSPResponse, bytes]:
    nonce = os.urandom(16)
    request = (ocsp.OCSPRequestBuilder().add_certificate(cert, services.root_cert, hashes.SHA1())
               .add_extension(x509.OCSPNonce(nonce), critical=False).build())
    status, content_type, body = post(services.url_ocsp, request.public_bytes(serialization.Encoding.DER),
                                      "application/ocsp-request")
    assert (status, content_type) == (200, "application/ocsp-response")
    return ocsp.load_der_ocsp_response(body), nonce


def _check_signed(response: ocsp.OCSPResponse, services: TrustServices) -> x509.Certificate:
    """The response's signature verifies with its signer's key; returns the signer (delegated, or the root)."""
    signer = response.certificates[0] if response.certificates else services.root_cert
    assert signer.issuer == services.root_cert.subject
    signer.public_key().verify(response.signature, response.tbs_response_bytes, padding.PKCS1v15(),
                               response.signature_hash_algorithm)
    return signer


def _new_signer(services: TrustServices, name: str) -> x509.Certificate:
    now = dt.datetime.now(dt.UTC)
    cert, _ = services.issue_signer(name, not_before=now - dt.timedelta(hours=1), not_after=now + dt.timedelta(days=1))
    return cert


def test_ocsp_good_then_revoked_and_the_crl(trust_services: TrustServices) -> None:
    cert = _new_signer(trust_services, "OCSP subject")
    assert {d.access_location.value for d in
            cert.extensions.get_extension_for_class(x509.AuthorityInformationAccess).value} >= {trust_services.url_ocsp}
    [point] = cert.extensions.get_extension_for_class(x509.CRLDistributionPoints).value
    assert point.full_name[0].value == trust_services.url_crl
    usage = cert.extensions.get_extension_for_class(x509.KeyUsage).value
    assert usage.digital_signature and usage.content_commitment

    response, nonce = _ask_ocsp(trust_services, cert)
    assert response.response_status == ocsp.OCSPResponseStatus.SUCCESSFUL
    assert response.certificate_status == ocsp.OCSPCertStatus.GOOD
    assert response.serial_number == cert.serial_number
    assert response.extensions.get_extension_for_class(x509.OCSPNonce).value.nonce == nonce
    responder = _check_signed(response, trust_services)
    assert ExtendedKeyUsageOID.OCSP_SIGNING in responder.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    crl = x509.load_der_x509_crl(urllib.request.urlopen(trust_services.url_crl, timeout=10).read())
    assert crl.is_signature_valid(trust_services.root_cert.public_key())
    assert crl.get_revoked_certificate_by_serial_number(cert.serial_number) is None

    trust_services.revoke(cert)
    response, _ = _ask_ocsp(trust_services, cert)
    assert response.certificate_status == ocsp.OCSPCertStatus.REVOKED
    assert response.revocation_reason == x509.ReasonFlags.key_compromise
    assert abs(response.revocation_time_utc - dt.datetime.now(dt.UTC)) < dt.timedelta(minutes=1)
    _check_signed(response, trust_services)
    crl = x509.load_der_x509_crl(urllib.request.urlopen(trust_services.url_crl, timeout=10).read())
    assert crl.is_signature_valid(trust_services.root_cert.public_key())
    assert crl.get_revoked_certificate_by_serial_number(cert.serial_number) is not None


def test_ocsp_signed_by_the_root_unknown_serials_and_other_issuers(trust_services: TrustServices) -> None:
    cert = _new_signer(trust_services, "OCSP subject, root-signed")
    trust_services.ocsp_delegated = False
    try:
        response, _ = _ask_ocsp(trust_services, cert)
    finally:
        trust_services.ocsp_delegated = True
    assert response.certificate_status == ocsp.OCSPCertStatus.GOOD and not response.certificates
    assert _check_signed(response, trust_services) == trust_services.root_cert
    assert response.responder_key_hash == x509.SubjectKeyIdentifier.from_public_key(
        trust_services.root_cert.public_key()).digest

    now = dt.datetime.now(dt.UTC)  # a certificate the root's key signed but the services never issued: unknown
    forged = (x509.CertificateBuilder().subject_name(cert.subject).issuer_name(trust_services.root_cert.subject)
              .public_key(cert.public_key()).serial_number(x509.random_serial_number())
              .not_valid_before(now).not_valid_after(now + dt.timedelta(days=1))
              .sign(trust_services.root_key, hashes.SHA256()))
    response, _ = _ask_ocsp(trust_services, forged)
    assert response.certificate_status == ocsp.OCSPCertStatus.UNKNOWN

    request = (ocsp.OCSPRequestBuilder().add_certificate(trust_services.untrusted_tsa_cert,
                                                         trust_services.untrusted_root_cert, hashes.SHA1()).build())
    _, _, body = post(trust_services.url_ocsp, request.public_bytes(serialization.Encoding.DER),
                      "application/ocsp-request")
    assert ocsp.load_der_ocsp_response(body).response_status == ocsp.OCSPResponseStatus.UNAUTHORIZED
    _, _, body = post(trust_services.url_ocsp, b"not an OCSP request", "application/ocsp-request")
    assert ocsp.load_der_ocsp_response(body).response_status == ocsp.OCSPResponseStatus.MALFORMED_REQUEST


def test_pyhanko_fetches_revocation_from_the_services(trust_services: TrustServices) -> None:
    """pyHanko's validator, fetching online in hard-fail mode, finds the signer good, then revoked."""
    from pyhanko_certvalidator import CertificateValidator
    from pyhanko_certvalidator.errors import RevokedError

    from tests.trust_services import to_asn1_cert

    cert = _new_signer(trust_services, "Fetched subject")
    context = trust_services.validation_context(allow_fetching=True, revocation_mode="hard-fail")
    asyncio.run(CertificateValidator(to_asn1_cert(cert), validation_context=context)
                .async_validate_usage({"non_repudiation"}))
    assert context.ocsps, "pyHanko fetched no OCSP response"
    trust_services.revoke(cert)
    context = trust_services.validation_context(allow_fetching=True, revocation_mode="hard-fail")
    with pytest.raises(RevokedError):
        asyncio.run(CertificateValidator(to_asn1_cert(cert), validation_context=context)
                    .async_validate_usage({"non_repudiation"}))


def test_pkcs12_and_pem_files(trust_services: TrustServices, tmp_path: Path) -> None:
    from cryptography.hazmat.primitives.serialization import pkcs12

    now = dt.datetime.now(dt.UTC)
    cert, key = trust_services.issue_signer("P12 subject", not_before=now, not_after=now + dt.timedelta(days=1))
    path = trust_services.write_pkcs12(tmp_path / "signer.p12", cert, key, "pass phrase")
    with pytest.raises(ValueError):
        pkcs12.load_key_and_certificates(path.read_bytes(), b"wrong")
    loaded_key, loaded_cert, extra = pkcs12.load_key_and_certificates(path.read_bytes(), b"pass phrase")
    assert loaded_cert == cert and extra == [trust_services.root_cert]
    assert loaded_key.public_key().public_numbers() == key.public_key().public_numbers()
    assert key.key_size == 2048
    root = x509.load_pem_x509_certificates(trust_services.write_root_pem(tmp_path / "root.pem").read_bytes())
    tsa = x509.load_pem_x509_certificates(trust_services.write_tsa_pem(tmp_path / "tsa.pem").read_bytes())
    assert root == [trust_services.root_cert] and tsa == [trust_services.tsa_cert]


# --- SoftHSM2 ----------------------------------------------------------------------------------------------------


def _tiny_pdf() -> io.BytesIO:
    from pyhanko.pdf_utils import generic
    from pyhanko.pdf_utils.writer import PdfFileWriter

    writer = PdfFileWriter()
    writer.insert_page(generic.DictionaryObject({
        generic.NameObject("/Type"): generic.NameObject("/Page"),
        generic.NameObject("/MediaBox"): generic.ArrayObject([generic.NumberObject(n) for n in (0, 0, 200, 200)])}))
    buffer = io.BytesIO()
    writer.write(buffer)
    buffer.seek(0)
    return buffer


def test_softhsm_key_signs_a_pdf_that_pyhanko_trusts(softhsm_token: SoftHsmToken,
                                                     trust_services: TrustServices) -> None:
    from pyhanko.config.pkcs11 import TokenCriteria
    from pyhanko.pdf_utils.incremental_writer import IncrementalPdfFileWriter
    from pyhanko.pdf_utils.reader import PdfFileReader
    from pyhanko.sign import signers
    from pyhanko.sign.pkcs11 import PKCS11Signer, open_pkcs11_session
    from pyhanko.sign.validation import validate_pdf_signature

    with softhsm_token.activated():
        session = open_pkcs11_session(softhsm_token.module, token_criteria=TokenCriteria(
            label=softhsm_token.token_label), user_pin=softhsm_token.pin)
        try:
            signer = PKCS11Signer(session, key_label=softhsm_token.key_label, cert_label=softhsm_token.cert_label)
            signed = signers.sign_pdf(IncrementalPdfFileWriter(_tiny_pdf()),
                                      signers.PdfSignatureMetadata(field_name="Signature"), signer=signer,
                                      timestamper=HTTPTimeStamper(trust_services.url_tsa))
        finally:
            session.close()
    status = validate_pdf_signature(PdfFileReader(signed).embedded_signatures[0],
                                    trust_services.validation_context())
    assert status.intact and status.valid and status.trusted and status.bottom_line
    assert status.signing_cert.sha256 == softhsm_token.certificate.fingerprint(hashes.SHA256())
    assert status.timestamp_validity is not None and status.timestamp_validity.trusted
    assert x509.load_pem_x509_certificate(softhsm_token.cert_path.read_bytes()) == softhsm_token.certificate


def test_softhsm_key_never_leaves_the_token(softhsm_token: SoftHsmToken) -> None:
    from pkcs11 import Attribute, KeyType, Mechanism, ObjectClass, PKCS11Error
    from pkcs11.exceptions import AttributeSensitive

    assert softhsm_token.env == {"SOFTHSM2_CONF": str(softhsm_token.conf)}
    with softhsm_token.session() as session:
        key = session.get_key(object_class=ObjectClass.PRIVATE_KEY, key_type=KeyType.RSA,
                              label=softhsm_token.key_label, id=softhsm_token.key_id)
        [cert] = list(session.get_objects({Attribute.CLASS: ObjectClass.CERTIFICATE,
                                           Attribute.LABEL: softhsm_token.key_label}))
        assert cert[Attribute.ID] == softhsm_token.key_id
        assert cert[Attribute.VALUE] == softhsm_token.certificate.public_bytes(serialization.Encoding.DER)
        assert key[Attribute.SENSITIVE] and not key[Attribute.EXTRACTABLE]
        assert key[Attribute.NEVER_EXTRACTABLE] and key[Attribute.ALWAYS_SENSITIVE] and key[Attribute.LOCAL]
        with pytest.raises(PKCS11Error):
            key[Attribute.VALUE]
        with pytest.raises(AttributeSensitive):
            key[Attribute.PRIVATE_EXPONENT]
        data = b"signed on the token"
        signature = key.sign(data, mechanism=Mechanism.SHA256_RSA_PKCS)
    softhsm_token.public_key.verify(signature, data, padding.PKCS1v15(), hashes.SHA256())
    softhsm_token.certificate.public_key().verify(signature, data, padding.PKCS1v15(), hashes.SHA256())


# --- all of it together: a PAdES B-LTA signature whose validation data comes from the services -----------------


def test_pades_b_lta_validates_offline_from_what_it_embeds(trust_services: TrustServices, tmp_path: Path) -> None:
    """Signed with a PKCS#12 key, timestamped by /tsa, OCSP responses embedded (DSS) and a document timestamp
    added: pyHanko's AdES LTA validation passes with nothing fetched, and so does validate_pdf_signature with a
    context made from the DSS in hard-fail mode."""
    from pyhanko.pdf_utils.incremental_writer import IncrementalPdfFileWriter
    from pyhanko.pdf_utils.reader import PdfFileReader
    from pyhanko.sign import fields, signers
    from pyhanko.sign.validation import DocumentSecurityStore, validate_pdf_signature
    from pyhanko.sign.validation.ades import ades_lta_validation
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

    from tests.trust_services import to_asn1_cert

    now = dt.datetime.now(dt.UTC)
    cert, key = trust_services.issue_signer("LTA signer", not_before=now - dt.timedelta(hours=1),
                                            not_after=now + dt.timedelta(days=30))
    p12 = trust_services.write_pkcs12(tmp_path / "signer.p12", cert, key, b"secret")
    signer = signers.SimpleSigner.load_pkcs12(str(p12), passphrase=b"secret")
    before = dict(trust_services.hits)
    signed = signers.sign_pdf(
        IncrementalPdfFileWriter(_tiny_pdf()),
        signers.PdfSignatureMetadata(
            field_name="Signature", subfilter=fields.SigSeedSubFilter.PADES, embed_validation_info=True,
            use_pades_lta=True,
            validation_context=trust_services.validation_context(allow_fetching=True, revocation_mode="hard-fail")),
        signer=signer, timestamper=HTTPTimeStamper(trust_services.url_tsa))
    assert trust_services.hits["/ocsp"] > before.get("/ocsp", 0)
    trust_services.revoke(cert)  # after the fact: the embedded, earlier OCSP answer is what counts offline

    reader = PdfFileReader(signed)
    assert len(reader.embedded_timestamp_signatures) == 1
    dss = DocumentSecurityStore.read_dss(reader)
    assert len(dss.ocsps) >= 2  # the signer's and the TSA's certificates
    context = dss.as_validation_context({"trust_roots": [to_asn1_cert(trust_services.root_cert)],
                                         "allow_fetching": False, "revocation_mode": "hard-fail"})
    status = validate_pdf_signature(reader.embedded_signatures[0], context, ts_validation_context=context)
    assert status.bottom_line and status.trusted and status.timestamp_validity.trusted

    rules = RevocationCheckingPolicy(ee_certificate_rule=RevocationCheckingRule.CHECK_IF_DECLARED,
                                     intermediate_ca_cert_rule=RevocationCheckingRule.CHECK_IF_DECLARED)
    policy = CertValidationPolicySpec(
        trust_manager=SimpleTrustManager.build([to_asn1_cert(trust_services.root_cert)]),
        revinfo_policy=CertRevTrustPolicy(rules, freshness=None,
                                          freshness_req_type=FreshnessReqType.MAX_DIFF_REVOCATION_VALIDATION))
    spec = PdfSignatureValidationSpec(SignatureValidationSpec(
        cert_validation_policy=policy,
        revinfo_gathering_policy=RevocationInfoGatheringSpec(online_fetching_rule=RevinfoOnlineFetchingRule.LOCAL_ONLY)))
    result = asyncio.run(ades_lta_validation(reader.embedded_signatures[0], spec,
                                             timing_info=ValidationTimingInfo.now()))
    assert result.ades_subindic.status.name == "PASSED", result.ades_subindic
