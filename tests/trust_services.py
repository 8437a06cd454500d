"""A test PKI and its trust services on loopback, for the signing tests (trusted time, long-term validation).

`TrustServices` makes a root CA ("Auditor Test Root CA", RSA 2048, made with `cryptography`), a time-stamping
authority issued by it, an OCSP responder (the root itself, or a delegated responder certificate) and a CRL, and
serves them over real HTTP from a thread (http.server.ThreadingHTTPServer on 127.0.0.1, port 0):

    POST /tsa                 RFC 3161 (application/timestamp-query -> application/timestamp-reply)
    POST /tsa/wrong-nonce     a valid token whose nonce is not the request's
    POST /tsa/wrong-digest    a valid token for another message imprint
    POST /tsa/untrusted       a token signed by a TSA of a second, unrelated CA
    POST /tsa/error           HTTP 500
    POST /tsa/garbage         200 application/timestamp-reply with random bytes
    POST /tsa/rejection       a TimeStampResp with PKIStatus rejection
    POST /ocsp (GET /ocsp/<base64 request>)   RFC 6960 OCSP: good, revoked after revoke(cert), unknown otherwise
    GET  /crl                 the root's CRL (DER), with the revoked serials
    GET  /ca.crt              the root certificate (DER), the certificates' caIssuers

    with TrustServices() as services:
        cert, key = services.issue_signer("Report signer", not_before=..., not_after=...)
        services.write_pkcs12(path, cert, key, b"passphrase")
        ... sign with timestamp_url=services.url_tsa ...
        services.revoke(cert)

Every request is counted in `services.hits` (path -> count), so a test can tell that a service was asked.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import os
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from asn1crypto import core as asn1_core
from asn1crypto import keys as asn1_keys
from asn1crypto import ocsp as asn1_ocsp
from asn1crypto import tsp
from asn1crypto import x509 as asn1_x509
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509 import ocsp
from cryptography.x509.oid import AuthorityInformationAccessOID, ExtendedKeyUsageOID, NameOID

ROOT_NAME = "Auditor Test Root CA"
ORGANISATION = "Auditor Test PKI"
TSA_QUERY = "application/timestamp-query"
TSA_REPLY = "application/timestamp-reply"
LYING_TSA = ("wrong-nonce", "wrong-digest", "untrusted", "error", "garbage", "rejection")
MAX_BODY = 1 << 20
# OCSP responses and CRLs say they were issued this long before they were asked for, as real responders backdate
# theirs: a response made a second after the TSA's time (a loaded test machine) is otherwise "too recent" for the
# signing time it vouches for, and trusted-time signing fails at random
ISSUED_BEFORE = dt.timedelta(seconds=60)


def now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def new_rsa_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def to_asn1_cert(cert: x509.Certificate) -> asn1_x509.Certificate:
    """The asn1crypto form pyHanko and its certificate validator take."""
    return asn1_x509.Certificate.load(cert.public_bytes(serialization.Encoding.DER))


def to_asn1_key(key: rsa.RSAPrivateKey) -> asn1_keys.PrivateKeyInfo:
    return asn1_keys.PrivateKeyInfo.load(key.private_bytes(serialization.Encoding.DER,
                                                           serialization.PrivateFormat.PKCS8,
                                                           serialization.NoEncryption()))


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name),
                      x509.NameAttribute(NameOID.ORGANIZATION_NAME, ORGANISATION)])


ROOT_YEARS = 30  # the roots outlive every certificate they issue, as real ones do (20-25 years), so that a test
# can move the clock a decade ahead and still find the root valid


def _make_ca(common_name: str, key: rsa.RSAPrivateKey, parent: _Issuer | None = None,
             urls: dict[str, str] | None = None) -> x509.Certificate:
    """A root (self-signed, `parent` None) or an intermediate CA issued by `parent` (path length 0, with AIA and
    CRL pointers to its parent's services when `urls` is given)."""
    start = now() - dt.timedelta(days=1)
    years = ROOT_YEARS - (5 if parent else 0)
    builder = (x509.CertificateBuilder()
               .subject_name(_name(common_name)).issuer_name(parent.cert.subject if parent else _name(common_name))
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(start).not_valid_after(start + dt.timedelta(days=365 * years))
               .add_extension(x509.BasicConstraints(ca=True, path_length=0 if parent else None), critical=True)
               .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                                            data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                            crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
               .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False))
    if parent is not None:
        builder = builder.add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(parent.key.public_key()),
                                        critical=False)
        if urls:
            builder = _with_pointers(builder, urls)
    return builder.sign(parent.key if parent else key, hashes.SHA256())


def _with_pointers(builder: x509.CertificateBuilder, urls: dict[str, str]) -> x509.CertificateBuilder:
    """AIA (OCSP, caIssuers) and a CRL distribution point."""
    builder = builder.add_extension(x509.AuthorityInformationAccess([
        x509.AccessDescription(AuthorityInformationAccessOID.OCSP, x509.UniformResourceIdentifier(urls["ocsp"])),
        x509.AccessDescription(AuthorityInformationAccessOID.CA_ISSUERS, x509.UniformResourceIdentifier(urls["ca"]))]),
        critical=False)
    return builder.add_extension(x509.CRLDistributionPoints([x509.DistributionPoint(
        full_name=[x509.UniformResourceIdentifier(urls["crl"])], relative_name=None, reasons=None, crl_issuer=None)]),
        critical=False)


def _key_usage(*, digital_signature: bool = True, non_repudiation: bool = False) -> x509.KeyUsage:
    return x509.KeyUsage(digital_signature=digital_signature, content_commitment=non_repudiation,
                         key_encipherment=False, data_encipherment=False, key_agreement=False, key_cert_sign=False,
                         crl_sign=False, encipher_only=False, decipher_only=False)


class _Issuer:
    """A CA's certificate and key (a root, or an intermediate issued by `parent`), the leaf certificates it issues,
    and its delegated OCSP responder (made on first use)."""

    def __init__(self, common_name: str, parent: _Issuer | None = None, urls: dict[str, str] | None = None) -> None:
        self.key = new_rsa_key()
        self.parent = parent
        self.cert = _make_ca(common_name, self.key, parent, urls)
        self.responder: tuple[x509.Certificate, rsa.RSAPrivateKey] | None = None

    def chain(self) -> list[x509.Certificate]:
        """This CA's certificate and those above it, up to the root."""
        return [self.cert, *(self.parent.chain() if self.parent else [])]

    def issue(self, common_name: str, public_key: Any, *, not_before: dt.datetime, not_after: dt.datetime,
              key_usage: x509.KeyUsage, extended: list[x509.ObjectIdentifier] | None = None,
              extended_critical: bool = False, urls: dict[str, str] | None = None,
              ocsp_no_check: bool = False) -> x509.Certificate:
        builder = (x509.CertificateBuilder()
                   .subject_name(_name(common_name)).issuer_name(self.cert.subject)
                   .public_key(public_key).serial_number(x509.random_serial_number())
                   .not_valid_before(not_before).not_valid_after(not_after)
                   .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                   .add_extension(key_usage, critical=True)
                   .add_extension(x509.SubjectKeyIdentifier.from_public_key(public_key), critical=False)
                   .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(self.key.public_key()),
                                  critical=False))
        if extended:
            builder = builder.add_extension(x509.ExtendedKeyUsage(extended), critical=extended_critical)
        if ocsp_no_check:
            builder = builder.add_extension(x509.OCSPNoCheck(), critical=False)
        if urls:
            builder = _with_pointers(builder, urls)
        return builder.sign(self.key, hashes.SHA256())


class TrustServices:
    """The test PKI and its HTTP services. `start()`/`stop()`, or use it as a context manager.

    `fixed_time` (a timezone-aware datetime, or None for the real now) is the TSA's clock; OCSP and the CRL always
    use the real clock. `ocsp_delegated` (the default) has the OCSP responses signed by a delegated responder
    certificate (id-kp-OCSPSigning, id-pkix-ocsp-nocheck, embedded in the response); False has them signed by the
    root's own key. Both pass pyHanko's validate_pdf_signature, but pyHanko's AdES past validation
    (ades_lta_validation) finds "no revocation info ... for Auditor Test Root CA" when the root signs its OCSP
    responses itself, so the delegated responder is the default."""

    def __init__(self, *, fixed_time: dt.datetime | None = None, ocsp_delegated: bool = True) -> None:
        self.fixed_time = fixed_time
        self.clock: dt.datetime | None = None  # every service's clock (TSAs, OCSP, CRLs) when set: a faked "now"
        self._issuers: list[_Issuer] = []
        self._tsas: dict[str, tuple[x509.Certificate, rsa.RSAPrivateKey]] = {}
        self.ocsp_delegated = ocsp_delegated
        self.hits: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._issued: dict[int, x509.Certificate] = {}
        self._revoked: dict[int, tuple[dt.datetime, x509.ReasonFlags]] = {}
        self._crl_number = 0
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        # The URLs go into the certificates, so the port is taken now (bound, not yet serving).
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        host, port = self._server.server_address[:2]
        self.url_base = f"http://{host}:{port}"
        try:
            self._make_pki()
        except BaseException:
            self._server.server_close()
            raise

    def _make_pki(self) -> None:
        self._ca = _Issuer(ROOT_NAME)
        self._issuers.append(self._ca)
        self._other_ca = _Issuer("Unrelated Test Root CA")
        start = now() - dt.timedelta(hours=1)
        self.tsa_key = new_rsa_key()
        self.tsa_cert = self._track(self._ca.issue(
            "Auditor Test TSA", self.tsa_key.public_key(), not_before=start, not_after=start + dt.timedelta(days=730),
            key_usage=_key_usage(), extended=[ExtendedKeyUsageOID.TIME_STAMPING], extended_critical=True,
            urls=self._urls()))
        self.ocsp_responder_key = new_rsa_key()
        # the responder lives as long as its CA (a real one is renewed every few months: a test that moves the clock
        # years ahead stands for a responder renewed all along)
        self.ocsp_responder_cert = self._track(self._ca.issue(
            "Auditor Test OCSP Responder", self.ocsp_responder_key.public_key(), not_before=start,
            not_after=self._ca.cert.not_valid_after_utc, key_usage=_key_usage(),
            extended=[ExtendedKeyUsageOID.OCSP_SIGNING], ocsp_no_check=True))
        self.untrusted_tsa_key = new_rsa_key()
        self.untrusted_tsa_cert = self._other_ca.issue(
            "Unrelated Test TSA", self.untrusted_tsa_key.public_key(), not_before=start,
            not_after=start + dt.timedelta(days=730), key_usage=_key_usage(),
            extended=[ExtendedKeyUsageOID.TIME_STAMPING], extended_critical=True)

    # --- the PKI ---------------------------------------------------------------------------------------------------

    @property
    def root_cert(self) -> x509.Certificate:
        return self._ca.cert

    @property
    def root_key(self) -> rsa.RSAPrivateKey:
        return self._ca.key

    @property
    def untrusted_root_cert(self) -> x509.Certificate:
        return self._other_ca.cert

    @property
    def url_tsa(self) -> str:
        return f"{self.url_base}/tsa"

    @property
    def url_ocsp(self) -> str:
        return f"{self.url_base}/ocsp"

    @property
    def url_crl(self) -> str:
        return f"{self.url_base}/crl"

    def url_lying_tsa(self, kind: str) -> str:
        """The URL of a lying TSA: one of LYING_TSA (wrong-nonce, wrong-digest, untrusted, error, garbage,
        rejection)."""
        if kind not in LYING_TSA:
            raise ValueError(f"no lying TSA {kind!r}; there are {', '.join(LYING_TSA)}")
        return f"{self.url_tsa}/{kind}"

    def _urls(self, issuer: _Issuer | None = None) -> dict[str, str]:
        index = self._issuers.index(issuer) if issuer is not None else 0
        if index == 0:
            return {"ocsp": self.url_ocsp, "crl": self.url_crl, "ca": f"{self.url_base}/ca.crt"}
        return {"ocsp": self.url_ocsp, "crl": f"{self.url_crl}/{index}", "ca": f"{self.url_base}/ca/{index}.crt"}

    def now(self) -> dt.datetime:
        """The services' clock: `clock` when set, else the real time."""
        return self.clock or now()

    def issue_ca(self, name: str, *, pointers: bool = True) -> _Issuer:
        """An intermediate CA issued by the root (with OCSP and CRL pointers to the root's services, or none); it
        issues signers (`issue_signer(issuer=...)`) and its OCSP and CRL are served here too."""
        issuer = _Issuer(name, self._ca, self._urls() if pointers else None)
        self._track(issuer.cert)
        with self._lock:
            self._issuers.append(issuer)
        return issuer

    def add_tsa(self, label: str, *, not_before: dt.datetime, not_after: dt.datetime) -> str:
        """Another time-stamping authority of the root, with this certificate validity; its URL."""
        key = new_rsa_key()
        cert = self._track(self._ca.issue(f"Auditor Test TSA {label}", key.public_key(), not_before=not_before,
                                          not_after=not_after, key_usage=_key_usage(),
                                          extended=[ExtendedKeyUsageOID.TIME_STAMPING], extended_critical=True,
                                          urls=self._urls()))
        with self._lock:
            self._tsas[label] = (cert, key)
        return f"{self.url_tsa}/at/{label}"

    def tsa_certificate(self, label: str) -> x509.Certificate:
        return self._tsas[label][0]

    def _track(self, cert: x509.Certificate) -> x509.Certificate:
        with self._lock:
            self._issued[cert.serial_number] = cert
        return cert

    def issue_signer(self, name: str, *, not_before: dt.datetime, not_after: dt.datetime,
                     key: rsa.RSAPrivateKey | None = None, public_key: Any = None, issuer: _Issuer | None = None,
                     pointers: bool = True) -> tuple[x509.Certificate, rsa.RSAPrivateKey | None]:
        """A signer certificate from the root or `issuer` (an intermediate of `issue_ca`), keyUsage
        digitalSignature + nonRepudiation, with AIA OCSP and caIssuers and a CRL distribution point here (none with
        `pointers=False`). With `public_key` (a key held on a token) the certificate is issued for it and no private
        key is returned; otherwise for `key`, or a new RSA 2048 key."""
        if public_key is not None and key is not None:
            raise ValueError("give `key` or `public_key`, not both")
        if public_key is None:
            key = key or new_rsa_key()
            public_key = key.public_key()
        issuer = issuer or self._ca
        cert = self._track(issuer.issue(name, public_key, not_before=not_before, not_after=not_after,
                                        key_usage=_key_usage(non_repudiation=True),
                                        urls=self._urls(issuer) if pointers else None))
        return cert, key

    def revoke(self, cert: x509.Certificate | int, *, when: dt.datetime | None = None,
               reason: x509.ReasonFlags = x509.ReasonFlags.key_compromise) -> None:
        """From now on OCSP answers `revoked` for this certificate and the CRL lists it."""
        serial = cert if isinstance(cert, int) else cert.serial_number
        with self._lock:
            self._revoked[serial] = ((when or now()).replace(microsecond=0), reason)

    def unrevoke(self, cert: x509.Certificate | int) -> None:
        serial = cert if isinstance(cert, int) else cert.serial_number
        with self._lock:
            self._revoked.pop(serial, None)

    # --- files -------------------------------------------------------------------------------------------------------

    def write_pkcs12(self, path: Path | str, cert: x509.Certificate, key: rsa.RSAPrivateKey,
                     passphrase: bytes | str, *, name: str = "report signer", issuer: _Issuer | None = None) -> Path:
        """A PKCS#12 file with the key, its certificate and its CA chain (`issuer`'s, default the root) as
        additional certificates."""
        secret = passphrase.encode() if isinstance(passphrase, str) else passphrase
        data = pkcs12.serialize_key_and_certificates(name.encode(), key, cert, (issuer or self._ca).chain(),
                                                     serialization.BestAvailableEncryption(secret))
        path = Path(path)
        path.write_bytes(data)
        return path

    @staticmethod
    def write_cert_pem(path: Path | str, *certs: x509.Certificate) -> Path:
        path = Path(path)
        path.write_bytes(b"".join(c.public_bytes(serialization.Encoding.PEM) for c in certs))
        return path

    def write_root_pem(self, path: Path | str) -> Path:
        return self.write_cert_pem(path, self.root_cert)

    def write_tsa_pem(self, path: Path | str) -> Path:
        return self.write_cert_pem(path, self.tsa_cert)

    def validation_context(self, **options: Any) -> Any:
        """A pyHanko ValidationContext that trusts the root (options passed on, e.g. allow_fetching=True,
        revocation_mode="hard-fail")."""
        from pyhanko_certvalidator import ValidationContext

        return ValidationContext(trust_roots=[to_asn1_cert(self.root_cert)], **options)

    # --- serving -----------------------------------------------------------------------------------------------------

    def start(self) -> TrustServices:
        if self._thread is not None:
            return self
        if self._server is None:
            raise RuntimeError("these trust services were stopped; make new ones")
        self._thread = threading.Thread(target=self._server.serve_forever, name="trust-services", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is None:
            return
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(timeout=10)
            self._thread = None
        self._server.server_close()
        self._server = None

    def __enter__(self) -> TrustServices:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _count(self, path: str) -> None:
        with self._lock:
            self.hits[path] += 1

    # --- the time-stamping authority ---------------------------------------------------------------------------------

    def timestamp_response(self, body: bytes, kind: str = "") -> bytes:
        """The DER TimeStampResp to a DER TimeStampReq, from the honest TSA or a lying one."""
        from pyhanko.sign.timestamps.dummy_client import DummyTimeStamper

        try:
            req = tsp.TimeStampReq.load(body)
            imprint = req["message_imprint"]
            algorithm = imprint["hash_algorithm"]["algorithm"].native
            digest = imprint["hashed_message"].native
            nonce = req["nonce"].native
            hashlib.new(algorithm)
        except Exception:
            return _rejection("the request is not a DER TimeStampReq", "bad_data_format")
        if len(digest) != hashlib.new(algorithm).digest_size:
            return _rejection("the message imprint's length does not fit its algorithm", "bad_data_format")
        if kind == "rejection":
            return _rejection("this TSA rejects every request (test endpoint)", "bad_request")
        if kind == "wrong-nonce":
            req = _request(algorithm, digest, (nonce or 0) + 1)
        elif kind == "wrong-digest":
            req = _request(algorithm, bytes(b ^ 0xFF for b in digest), nonce)
        if kind.startswith("at/"):
            cert, key = self._tsas[kind[3:]]
            stamper = DummyTimeStamper(tsa_cert=to_asn1_cert(cert), tsa_key=to_asn1_key(key),
                                       certs_to_embed=[to_asn1_cert(self.root_cert)],
                                       fixed_dt=self.fixed_time or self.clock)
            return stamper.request_tsa_response(req).dump()
        if kind == "untrusted":
            stamper = DummyTimeStamper(tsa_cert=to_asn1_cert(self.untrusted_tsa_cert),
                                       tsa_key=to_asn1_key(self.untrusted_tsa_key),
                                       certs_to_embed=[to_asn1_cert(self.untrusted_root_cert)],
                                       fixed_dt=self.fixed_time)
        else:
            stamper = DummyTimeStamper(tsa_cert=to_asn1_cert(self.tsa_cert), tsa_key=to_asn1_key(self.tsa_key),
                                       certs_to_embed=[to_asn1_cert(self.root_cert)],
                                       fixed_dt=self.fixed_time or self.clock)
        return stamper.request_tsa_response(req).dump()

    # --- OCSP and CRL ------------------------------------------------------------------------------------------------

    def ocsp_response(self, body: bytes) -> bytes:
        """The DER OCSPResponse to a DER OCSPRequest (one certificate of the root's)."""
        try:
            request = ocsp.load_der_ocsp_request(body)
            algorithm = request.hash_algorithm
        except Exception:
            return ocsp.OCSPResponseBuilder.build_unsuccessful(ocsp.OCSPResponseStatus.MALFORMED_REQUEST).public_bytes(
                serialization.Encoding.DER)
        issuer = self._issuer_of(request.issuer_name_hash, request.issuer_key_hash, algorithm.name.replace("-", ""))
        if issuer is None:
            return ocsp.OCSPResponseBuilder.build_unsuccessful(ocsp.OCSPResponseStatus.UNAUTHORIZED).public_bytes(
                serialization.Encoding.DER)
        moment = self.now().replace(microsecond=0) - ISSUED_BEFORE
        serial = request.serial_number
        with self._lock:
            revoked = self._revoked.get(serial)
            known = serial in self._issued
        if revoked is not None:
            status, revoked_at, reason = ocsp.OCSPCertStatus.REVOKED, revoked[0], revoked[1]
        else:
            status = ocsp.OCSPCertStatus.GOOD if known else ocsp.OCSPCertStatus.UNKNOWN
            revoked_at = reason = None
        if self.ocsp_delegated:
            responder, signing_key = self._responder(issuer)
        else:
            responder, signing_key = issuer.cert, issuer.key
        return _signed_ocsp(body, responder, signing_key, moment, status.name.lower(), revoked_at, reason,
                            embed=self.ocsp_delegated)

    def _issuer_of(self, name_hash: bytes, key_hash: bytes, algorithm: str) -> _Issuer | None:
        for issuer in self._issuers:
            cert = to_asn1_cert(issuer.cert)
            if (name_hash, key_hash) == (getattr(cert.subject, algorithm, None),
                                         getattr(cert.public_key, algorithm, None)):
                return issuer
        return None

    def _responder(self, issuer: _Issuer) -> tuple[x509.Certificate, rsa.RSAPrivateKey]:
        """The issuer's delegated OCSP responder (id-kp-OCSPSigning, id-pkix-ocsp-nocheck)."""
        if issuer is self._ca:
            return self.ocsp_responder_cert, self.ocsp_responder_key
        with self._lock:
            if issuer.responder is None:
                key = new_rsa_key()
                start = issuer.cert.not_valid_before_utc
                cert = issuer.issue(f"{issuer.cert.subject.rfc4514_string()[:40]} OCSP Responder", key.public_key(),
                                    not_before=start, not_after=issuer.cert.not_valid_after_utc,
                                    key_usage=_key_usage(), extended=[ExtendedKeyUsageOID.OCSP_SIGNING],
                                    ocsp_no_check=True)
                self._issued[cert.serial_number] = cert
                issuer.responder = (cert, key)
            return issuer.responder

    def crl(self, index: int = 0) -> bytes:
        """The current CRL (DER) of the root, or of the intermediate `index` (in order of `issue_ca`)."""
        issuer = self._issuers[index]
        moment = self.now().replace(microsecond=0) - ISSUED_BEFORE
        with self._lock:
            self._crl_number += 1
            number = self._crl_number
            revoked = dict(self._revoked)
        builder = (x509.CertificateRevocationListBuilder()
                   .issuer_name(issuer.cert.subject).last_update(moment)
                   .next_update(moment + dt.timedelta(days=1))
                   .add_extension(x509.CRLNumber(number), critical=False)
                   .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer.key.public_key()),
                                  critical=False))
        for serial, (when, reason) in revoked.items():
            cert = self._issued.get(serial)
            if cert is not None and cert.issuer != issuer.cert.subject:
                continue
            entry = (x509.RevokedCertificateBuilder().serial_number(serial).revocation_date(when)
                     .add_extension(x509.CRLReason(reason), critical=False).build())
            builder = builder.add_revoked_certificate(entry)
        return builder.sign(issuer.key, hashes.SHA256()).public_bytes(serialization.Encoding.DER)


def _signed_ocsp(body: bytes, responder: x509.Certificate, key: rsa.RSAPrivateKey, moment: dt.datetime, status: str,
                 revoked_at: dt.datetime | None, reason: x509.ReasonFlags | None, *, embed: bool) -> bytes:
    """A BasicOCSPResponse to `body`'s one request, produced at `moment` (cryptography's builder stamps producedAt
    with the real clock, which a test that moves the clock cannot have), signed by `responder`'s `key`."""
    request = asn1_ocsp.OCSPRequest.load(body)["tbs_request"]
    cert_id = request["request_list"][0]["req_cert"]
    if status == "revoked":
        cert_status = asn1_ocsp.CertStatus(name="revoked", value={"revocation_time": revoked_at, "revocation_reason":
                                                                  _REASONS.get(reason, "unspecified")})
    else:
        cert_status = asn1_ocsp.CertStatus(name=status, value=None)
    extensions = [e for e in request["request_extensions"] or [] if e["extn_id"].native == "nonce"]
    responder_asn1 = to_asn1_cert(responder)
    data = asn1_ocsp.ResponseData({
        "responder_id": asn1_ocsp.ResponderId(name="by_key", value=responder_asn1.public_key.sha1),
        "produced_at": moment,
        "responses": [{"cert_id": cert_id, "cert_status": cert_status, "this_update": moment,
                       "next_update": moment + dt.timedelta(days=1)}],
        "response_extensions": [{"extn_id": "nonce", "critical": False, "extn_value": e["extn_value"].native}
                                for e in extensions] or None})
    signature = key.sign(data.dump(), padding.PKCS1v15(), hashes.SHA256())
    basic = asn1_ocsp.BasicOCSPResponse({"tbs_response_data": data, "signature_algorithm": {"algorithm": "sha256_rsa"},
                                         "signature": signature, "certs": [responder_asn1] if embed else None})
    return asn1_ocsp.OCSPResponse({"response_status": "successful", "response_bytes": {
        "response_type": "basic_ocsp_response", "response": basic}}).dump()


_REASONS = {x509.ReasonFlags.key_compromise: "key_compromise", x509.ReasonFlags.ca_compromise: "ca_compromise",
            x509.ReasonFlags.cessation_of_operation: "cessation_of_operation",
            x509.ReasonFlags.superseded: "superseded",
            x509.ReasonFlags.affiliation_changed: "affiliation_changed"}


def _request(algorithm: str, digest: bytes, nonce: int | None) -> tsp.TimeStampReq:
    fields: dict[str, Any] = {"version": 1, "cert_req": True,
                              "message_imprint": {"hash_algorithm": {"algorithm": algorithm},
                                                  "hashed_message": digest}}
    if nonce is not None:
        fields["nonce"] = nonce
    return tsp.TimeStampReq(fields)


def _rejection(text: str, failure: str) -> bytes:
    status = tsp.PKIStatusInfo({"status": "rejection", "status_string": [text],
                                "fail_info": tsp.PKIFailureInfo({failure})})
    return _StatusOnly({"status": status}).dump()


class _StatusOnly(asn1_core.Sequence):
    """A TimeStampResp without its token (asn1crypto's TimeStampResp will not dump without one, although RFC 3161
    makes it OPTIONAL and absent when the status is not granted)."""

    _fields = [("status", tsp.PKIStatusInfo)]  # noqa: RUF012 - asn1crypto's declaration style


def _handler(services: TrustServices) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet: the tests read no access log
            pass

        def _send(self, status: int, content_type: str, data: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _body(self) -> bytes | None:
            length = int(self.headers.get("Content-Length") or 0)
            if not 0 < length <= MAX_BODY:
                self._send(400, "text/plain", b"a body of 1 byte to 1 MiB is expected\n")
                return None
            return self.rfile.read(length)

        def do_POST(self) -> None:
            path = self.path.split("?", 1)[0].rstrip("/")
            services._count(path)
            try:
                if path == "/tsa" or (path.startswith("/tsa/") and path[5:] in LYING_TSA) or \
                        (path.startswith("/tsa/at/") and path[8:] in services._tsas):
                    kind = path[5:]
                    body = self._body()
                    if body is None:
                        return
                    if kind == "error":
                        self._send(500, "text/plain", b"the TSA failed (test endpoint)\n")
                    elif kind == "garbage":
                        self._send(200, TSA_REPLY, os.urandom(256))
                    elif self.headers.get("Content-Type", "").split(";")[0].strip() != TSA_QUERY:
                        self._send(415, "text/plain", f"Content-Type {TSA_QUERY} is expected\n".encode())
                    else:
                        self._send(200, TSA_REPLY, services.timestamp_response(body, kind))
                elif path == "/ocsp":
                    body = self._body()
                    if body is not None:
                        self._send(200, "application/ocsp-response", services.ocsp_response(body))
                else:
                    self._send(404, "text/plain", b"not found\n")
            except Exception as exc:  # a bug here must show as a failed request, not a hung client
                self._send(500, "text/plain", f"{type(exc).__name__}: {exc}\n".encode())

        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            services._count(path.rstrip("/") if not path.startswith("/ocsp/") else "/ocsp")
            try:
                if path == "/crl" or (path.startswith("/crl/") and path[5:].isdigit()):
                    self._send(200, "application/pkix-crl", services.crl(int(path[5:] or 0)))
                elif path == "/ca.crt" or (path.startswith("/ca/") and path[4:-4].isdigit()):
                    index = int(path[4:-4]) if path.startswith("/ca/") else 0
                    cert = services._issuers[index].cert  # the issuer of the certificates pointing here
                    self._send(200, "application/pkix-cert", cert.public_bytes(serialization.Encoding.DER))
                elif path.startswith("/ocsp/"):
                    from urllib.parse import unquote

                    request = base64.b64decode(unquote(path[len("/ocsp/"):]))
                    self._send(200, "application/ocsp-response", services.ocsp_response(request))
                else:
                    self._send(404, "text/plain", b"not found\n")
            except Exception as exc:
                self._send(500, "text/plain", f"{type(exc).__name__}: {exc}\n".encode())

    return Handler


@contextmanager
def running(**options: Any) -> Iterator[TrustServices]:
    """`with running() as services:` — the services, stopped on leaving."""
    services = TrustServices(**options)
    try:
        yield services.start()
    finally:
        services.stop()


__all__ = ["LYING_TSA", "ROOT_NAME", "TrustServices", "running", "to_asn1_cert", "to_asn1_key"]
