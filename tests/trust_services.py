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
from asn1crypto import tsp
from asn1crypto import x509 as asn1_x509
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
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


def _make_root(common_name: str, key: rsa.RSAPrivateKey) -> x509.Certificate:
    start = now() - dt.timedelta(days=1)
    return (x509.CertificateBuilder()
            .subject_name(_name(common_name)).issuer_name(_name(common_name))
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(start).not_valid_after(start + dt.timedelta(days=3650))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                                         data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                         crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .sign(key, hashes.SHA256()))


def _key_usage(*, digital_signature: bool = True, non_repudiation: bool = False) -> x509.KeyUsage:
    return x509.KeyUsage(digital_signature=digital_signature, content_commitment=non_repudiation,
                         key_encipherment=False, data_encipherment=False, key_agreement=False, key_cert_sign=False,
                         crl_sign=False, encipher_only=False, decipher_only=False)


class _Issuer:
    """A CA's certificate and key, and the leaf certificates it issues."""

    def __init__(self, common_name: str) -> None:
        self.key = new_rsa_key()
        self.cert = _make_root(common_name, self.key)

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
            builder = builder.add_extension(x509.AuthorityInformationAccess([
                x509.AccessDescription(AuthorityInformationAccessOID.OCSP,
                                       x509.UniformResourceIdentifier(urls["ocsp"])),
                x509.AccessDescription(AuthorityInformationAccessOID.CA_ISSUERS,
                                       x509.UniformResourceIdentifier(urls["ca"]))]), critical=False)
            builder = builder.add_extension(x509.CRLDistributionPoints([x509.DistributionPoint(
                full_name=[x509.UniformResourceIdentifier(urls["crl"])], relative_name=None, reasons=None,
                crl_issuer=None)]), critical=False)
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
        self._other_ca = _Issuer("Unrelated Test Root CA")
        start = now() - dt.timedelta(hours=1)
        self.tsa_key = new_rsa_key()
        self.tsa_cert = self._track(self._ca.issue(
            "Auditor Test TSA", self.tsa_key.public_key(), not_before=start, not_after=start + dt.timedelta(days=730),
            key_usage=_key_usage(), extended=[ExtendedKeyUsageOID.TIME_STAMPING], extended_critical=True,
            urls=self._urls()))
        self.ocsp_responder_key = new_rsa_key()
        self.ocsp_responder_cert = self._track(self._ca.issue(
            "Auditor Test OCSP Responder", self.ocsp_responder_key.public_key(), not_before=start,
            not_after=start + dt.timedelta(days=730), key_usage=_key_usage(),
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

    def _urls(self) -> dict[str, str]:
        return {"ocsp": self.url_ocsp, "crl": self.url_crl, "ca": f"{self.url_base}/ca.crt"}

    def _track(self, cert: x509.Certificate) -> x509.Certificate:
        with self._lock:
            self._issued[cert.serial_number] = cert
        return cert

    def issue_signer(self, name: str, *, not_before: dt.datetime, not_after: dt.datetime,
                     key: rsa.RSAPrivateKey | None = None,
                     public_key: Any = None) -> tuple[x509.Certificate, rsa.RSAPrivateKey | None]:
        """A signer certificate from the root (keyUsage digitalSignature + nonRepudiation, AIA OCSP and caIssuers
        here, CRL distribution point here). With `public_key` (a key held on a token) the certificate is issued
        for it and no private key is returned; otherwise for `key`, or a new RSA 2048 key."""
        if public_key is not None and key is not None:
            raise ValueError("give `key` or `public_key`, not both")
        if public_key is None:
            key = key or new_rsa_key()
            public_key = key.public_key()
        cert = self._track(self._ca.issue(name, public_key, not_before=not_before, not_after=not_after,
                                          key_usage=_key_usage(non_repudiation=True), urls=self._urls()))
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
                     passphrase: bytes | str, *, name: str = "report signer") -> Path:
        """A PKCS#12 file with the key, its certificate and the root as an additional certificate."""
        secret = passphrase.encode() if isinstance(passphrase, str) else passphrase
        data = pkcs12.serialize_key_and_certificates(name.encode(), key, cert, [self.root_cert],
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
        if kind == "untrusted":
            stamper = DummyTimeStamper(tsa_cert=to_asn1_cert(self.untrusted_tsa_cert),
                                       tsa_key=to_asn1_key(self.untrusted_tsa_key),
                                       certs_to_embed=[to_asn1_cert(self.untrusted_root_cert)],
                                       fixed_dt=self.fixed_time)
        else:
            stamper = DummyTimeStamper(tsa_cert=to_asn1_cert(self.tsa_cert), tsa_key=to_asn1_key(self.tsa_key),
                                       certs_to_embed=[to_asn1_cert(self.root_cert)], fixed_dt=self.fixed_time)
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
        root = to_asn1_cert(self.root_cert)
        name_hash = getattr(root.subject, algorithm.name.replace("-", ""), None)
        key_hash = getattr(root.public_key, algorithm.name.replace("-", ""), None)
        if (request.issuer_name_hash, request.issuer_key_hash) != (name_hash, key_hash):
            return ocsp.OCSPResponseBuilder.build_unsuccessful(ocsp.OCSPResponseStatus.UNAUTHORIZED).public_bytes(
                serialization.Encoding.DER)
        moment = now().replace(microsecond=0) - ISSUED_BEFORE
        serial = request.serial_number
        with self._lock:
            revoked = self._revoked.get(serial)
            known = serial in self._issued
        if revoked is not None:
            status, revoked_at, reason = ocsp.OCSPCertStatus.REVOKED, revoked[0], revoked[1]
        else:
            status = ocsp.OCSPCertStatus.GOOD if known else ocsp.OCSPCertStatus.UNKNOWN
            revoked_at = reason = None
        builder = ocsp.OCSPResponseBuilder().add_response_by_hash(
            issuer_name_hash=request.issuer_name_hash, issuer_key_hash=request.issuer_key_hash, serial_number=serial,
            algorithm=algorithm, cert_status=status, this_update=moment, next_update=moment + dt.timedelta(days=1),
            revocation_time=revoked_at, revocation_reason=reason)
        if self.ocsp_delegated:
            builder = builder.responder_id(ocsp.OCSPResponderEncoding.HASH, self.ocsp_responder_cert)
            builder = builder.certificates([self.ocsp_responder_cert])
            signing_key = self.ocsp_responder_key
        else:
            builder = builder.responder_id(ocsp.OCSPResponderEncoding.HASH, self.root_cert)
            signing_key = self.root_key
        try:
            nonce = request.extensions.get_extension_for_class(x509.OCSPNonce)
            builder = builder.add_extension(nonce.value, critical=False)
        except x509.ExtensionNotFound:
            pass
        return builder.sign(signing_key, hashes.SHA256()).public_bytes(serialization.Encoding.DER)

    def crl(self) -> bytes:
        """The root's current CRL (DER)."""
        moment = now().replace(microsecond=0) - ISSUED_BEFORE
        with self._lock:
            self._crl_number += 1
            number = self._crl_number
            revoked = dict(self._revoked)
        builder = (x509.CertificateRevocationListBuilder()
                   .issuer_name(self.root_cert.subject).last_update(moment)
                   .next_update(moment + dt.timedelta(days=1))
                   .add_extension(x509.CRLNumber(number), critical=False)
                   .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(self.root_key.public_key()),
                                  critical=False))
        for serial, (when, reason) in revoked.items():
            entry = (x509.RevokedCertificateBuilder().serial_number(serial).revocation_date(when)
                     .add_extension(x509.CRLReason(reason), critical=False).build())
            builder = builder.add_revoked_certificate(entry)
        return builder.sign(self.root_key, hashes.SHA256()).public_bytes(serialization.Encoding.DER)


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
                if path == "/tsa" or (path.startswith("/tsa/") and path[5:] in LYING_TSA):
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
                if path == "/crl":
                    self._send(200, "application/pkix-crl", services.crl())
                elif path == "/ca.crt":
                    self._send(200, "application/pkix-cert",
                               services.root_cert.public_bytes(serialization.Encoding.DER))
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
