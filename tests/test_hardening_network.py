"""Issue 55, item 2: every network call has an overall deadline and an allowed scheme (the TSA, OCSP and CRL fetching,
MLflow, the Dask scheduler), tried against real servers on 127.0.0.1 — an HTTP server that trickles its answer one
byte at a time, one that declares a huge answer, one that never answers, a TCP port that accepts and stays silent —,
real FIFOs, a real Dask scheduler and MLflow's own client. Nothing of the code under test is replaced: only its
deadlines are shortened, through its module constants, so that each test takes seconds.

Each call runs in a thread the test waits for (`_ends`): code that hangs fails the test instead of the suite."""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from io import BytesIO
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import AuthorityInformationAccessOID, NameOID
from typer.testing import CliRunner

from auditor.cli import app
from auditor.core.errors import InputError
from auditor.trust import identity, timestamps
from tests.conftest import BOOKSTORE, PASS, copy_bookstore

DRIP_SECONDS = 0.2  # the trickling server's pace: far inside any per-read timeout
TSA_REPLY = "application/timestamp-reply"


def _ends(seconds: float, action: Callable[[], Any]) -> BaseException | None:
    """Run `action` in a thread and wait `seconds` for it: still running is a failure (the code under test hangs).
    Returns what it raised (None when it returned)."""
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            action()
            outcome.append(None)
        except BaseException as exc:  # handed to the test, which judges it
            outcome.append(exc)

    worker = threading.Thread(target=run, daemon=True, name="test-network-call")
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        pytest.fail(f"still waiting after {seconds} s: no overall deadline")
    return outcome[0]


# --- the servers ------------------------------------------------------------------------------------------------------

class _Handler(BaseHTTPRequestHandler):
    """/trickle: 200, then one byte of body every DRIP_SECONDS; /trickle-headers: one header line every
    DRIP_SECONDS; /huge: a declared body of 2 GiB, trickled; anything else: the request is read and never answered
    (a stalled MLflow server)."""

    stop: threading.Event

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        self._answer()

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._answer()

    def _answer(self) -> None:
        path = self.path.split("?")[0]
        with contextlib.suppress(OSError):
            if path == "/trickle-headers":
                self.wfile.write(b"HTTP/1.1 200 OK\r\n")
                self._drip(b"X-Wait: 1\r\n")
            elif path in ("/trickle", "/huge"):
                self.send_response(200)
                self.send_header("Content-Type", TSA_REPLY)
                self.send_header("Content-Length", str(1 << 31 if path == "/huge" else 100_000))
                self.end_headers()
                self._drip(b"0")
            else:
                self.stop.wait(120)

    def _drip(self, piece: bytes) -> None:
        while not self.stop.wait(DRIP_SECONDS):
            self.wfile.write(piece)
            self.wfile.flush()


@pytest.fixture(scope="module")
def slow() -> Iterator[str]:
    """The base URL of the trickling and stalling HTTP server."""
    stop = threading.Event()
    handler = type("Handler", (_Handler,), {"stop": stop})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}"
    stop.set()
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def silent_port() -> Iterator[int]:
    """A TCP port that accepts connections and never says a word (a Dask scheduler or FTP server that hangs)."""
    listener = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []

    def accept() -> None:
        with contextlib.suppress(OSError):
            while True:
                held.append(listener.accept()[0])

    threading.Thread(target=accept, daemon=True).start()
    yield listener.getsockname()[1]
    listener.close()
    for connection in held:
        connection.close()


@pytest.fixture
def fifo(tmp_path: Path) -> Iterator[Path]:
    """A FIFO nobody writes to: opening it for reading blocks for ever. Released afterwards (a writer opens it), so
    that code which did block ends."""
    path = tmp_path / "tsa.fifo"
    os.mkfifo(path)
    yield path
    with contextlib.suppress(OSError):
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))


# --- the TSA ----------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("path", ["/trickle", "/trickle-headers"])
def test_a_tsa_that_trickles_its_answer_is_cut_off_at_the_deadline(slow: str, path: str,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A byte every fifth of a second never trips a per-read timeout; the deadline is for the whole exchange (headers or
    body alike)."""
    monkeypatch.setattr(timestamps, "TIMEOUT_SECONDS", 1)
    started = time.monotonic()
    raised = _ends(2 + 4, lambda: timestamps.token_for(slow + path, b"evidence"))
    assert isinstance(raised, timestamps.TimestampError), raised
    assert "cannot reach the TSA (no complete answer within 1.0 s)" in str(raised), raised
    assert time.monotonic() - started >= 0.9


def test_a_tsa_answer_declared_larger_than_the_cap_is_refused_before_it_is_read(slow: str) -> None:
    """A declared 2 GiB answer is refused on its headers, at once, at the default deadline."""
    raised = _ends(5, lambda: timestamps.token_for(slow + "/huge", b"evidence"))
    assert isinstance(raised, timestamps.TimestampError), raised
    assert "larger than 1 MiB" in str(raised), raised


@pytest.mark.parametrize("kind", ["fifo", "file", "data", "ftp"])
def test_the_tsa_client_asks_http_and_https_urls_only(kind: str, fifo: Path, silent_port: int,
                                                      tmp_path: Path) -> None:
    """A file:// "TSA" (a FIFO hangs; a file would be read as the reply), data: (a reply written into the URL) and
    ftp:// are refused by the client itself, whatever called it (register check --anchor included)."""
    reply = tmp_path / "reply.tsr"
    reply.write_bytes(b"0\x03\x02\x01\x00")
    url = {"fifo": fifo.as_uri(), "file": reply.as_uri(), "data": f"data:{TSA_REPLY};base64,MAMCAQA=",
           "ftp": f"ftp://127.0.0.1:{silent_port}/tsr"}[kind]
    raised = _ends(5, lambda: timestamps.token_for(url, b"evidence"))
    assert isinstance(raised, timestamps.TimestampError), raised
    assert "not http:// or https://" in str(raised), raised


@pytest.fixture(scope="module")
def signing_spec(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bookstore's spec, signed with `auditor keygen`'s keys and no TSA of its own."""
    folder = tmp_path_factory.mktemp("signing")
    copy_bookstore(folder)
    done = CliRunner().invoke(app, ["keygen", "--out", str(folder / "keys"), "--passphrase-env", "TEST_KEY_PASS"],
                              env={"TEST_KEY_PASS": PASS})
    assert done.exit_code == 0, done.output
    spec = yaml.safe_load((BOOKSTORE / "audit.yaml").read_text())
    spec["output"] = {"dir": "reports"}
    spec["signing"] = {"key": "keys/signer.p12", "passphrase_env": "TEST_KEY_PASS",
                       "bundle_key": "keys/bundle-ed25519.pem"}
    path = folder / "audit.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


@pytest.mark.parametrize("how", ["option", "environment"])
def test_a_tsa_fifo_named_to_a_signed_audit_is_refused_in_one_line(signing_spec: Path, fifo: Path, how: str) -> None:
    """`auditor report --timestamp-url file:///…/fifo` and AUDITOR_TSA_URL=file:///…/fifo (`validate`): one line
    naming the option or the variable and the fix, exit 2, before any key is opened (it used to hang for ever)."""
    env = {**os.environ, "TEST_KEY_PASS": PASS}
    env.pop("AUDITOR_TSA_URL", None)
    if how == "option":
        args = ["report", str(signing_spec), "--quiet", "--timestamp-url", fifo.as_uri(), "--out",
                str(signing_spec.parent / "out")]
    else:
        args, env["AUDITOR_TSA_URL"] = ["validate", str(signing_spec), "--quiet"], fifo.as_uri()
    try:
        done = subprocess.run([sys.executable, "-m", "auditor", *args], capture_output=True, text=True, env=env,
                              timeout=90)
    except subprocess.TimeoutExpired:
        pytest.fail("the command still waits on the FIFO after 90 s")
    named = "--timestamp-url" if how == "option" else "AUDITOR_TSA_URL"
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [
        f"error: {named}: the TSA's URL is file:…, not http:// or https://; give the TSA's http:// or https:// URL "
        "(e.g. https://tsa.example/tsr)"], done.stderr


def test_restamp_refuses_a_tsa_url_that_is_not_http(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`auditor restamp` reads --timestamp-url, else AUDITOR_TSA_URL: each is checked where it is read."""
    monkeypatch.setenv("AUDITOR_TSA_URL", "ftp://tsa.example/tsr")
    result = CliRunner().invoke(app, ["restamp", str(tmp_path)])
    assert result.exit_code == 2, result.output
    assert result.stderr.strip() == ("error: AUDITOR_TSA_URL: the TSA's URL is ftp:…, not http:// or https://; give "
                                     "the TSA's http:// or https:// URL (e.g. https://tsa.example/tsr)")
    result = CliRunner().invoke(app, ["restamp", str(tmp_path), "--timestamp-url", str(tmp_path / "reply.tsr")])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("error: --timestamp-url: the TSA's URL is a path, not an http:// or https:// "
                                    "URL;"), result.stderr


# --- OCSP and CRLs ----------------------------------------------------------------------------------------------------

def _pki(pointer: str) -> tuple[x509.Certificate, x509.Certificate, rsa.RSAPrivateKey]:
    """A root CA and a signer it issued whose OCSP responder, CRL and issuer pointers all name `pointer`."""
    now = dt.datetime.now(dt.UTC)
    root_key, key = (rsa.generate_private_key(public_exponent=65537, key_size=2048) for _ in range(2))
    root_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Network Test Root")])
    root = (x509.CertificateBuilder().subject_name(root_name).issuer_name(root_name)
            .public_key(root_key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(days=1)).not_valid_after(now + dt.timedelta(days=30))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                                         data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                         crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
            .sign(root_key, hashes.SHA256()))
    signer = (x509.CertificateBuilder()
              .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Network Test Signer")]))
              .issuer_name(root_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
              .not_valid_before(now - dt.timedelta(hours=1)).not_valid_after(now + dt.timedelta(days=20))
              .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=True, key_encipherment=False,
                                           data_encipherment=False, key_agreement=False, key_cert_sign=False,
                                           crl_sign=False, encipher_only=False, decipher_only=False), critical=True)
              .add_extension(x509.AuthorityInformationAccess([
                  x509.AccessDescription(AuthorityInformationAccessOID.OCSP, x509.UniformResourceIdentifier(pointer)),
                  x509.AccessDescription(AuthorityInformationAccessOID.CA_ISSUERS,
                                         x509.UniformResourceIdentifier(pointer))]), critical=False)
              .add_extension(x509.CRLDistributionPoints([x509.DistributionPoint(
                  full_name=[x509.UniformResourceIdentifier(pointer)], relative_name=None, reasons=None,
                  crl_issuer=None)]), critical=False)
              .sign(root_key, hashes.SHA256()))
    return root, signer, key


def test_a_trickling_ocsp_responder_cannot_hang_a_persons_signature(slow: str,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Approvals and decisions fetch the signer's revocation data (hard-fail): a responder and CRL that trickle
    their answers end in one line naming the responder within the deadline, not never."""
    monkeypatch.setattr(identity, "FETCH_SECONDS", 1)
    root, signer, _ = _pki(slow + "/trickle")
    person = identity.Identity(certificate=signer, chain=[root], sign=lambda message: b"signature",
                               alg="rsa-pss-sha256")
    raised = _ends(2 + 5, lambda: identity.signature_entry(person, b"statement"))
    assert isinstance(raised, InputError), raised
    assert f"the revocation status of your certificate cannot be established now from the OCSP responder {slow}" \
        "/trickle or the CRL at" in str(raised), raised


def test_report_signing_goes_on_without_revocation_data_a_responder_trickles(slow: str, trust_services: Any,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """report.pdf's B-LTA signature fetches revocation data soft-fail: when the signer's responder and CRL trickle,
    the signature is made without them once the deadline has passed (pyHanko's own fetchers took 10 s a request)."""
    from pyhanko.pdf_utils import generic
    from pyhanko.pdf_utils.writer import PdfFileWriter
    from pyhanko.sign.signers import SimpleSigner
    from pyhanko_certvalidator.registry import SimpleCertificateStore

    from auditor.trust import net
    from auditor.trust.keys import SigningMaterial
    from auditor.trust.pdf_sign import sign_pdf
    from tests.trust_services import to_asn1_cert, to_asn1_key

    monkeypatch.setattr(net, "FETCH_SECONDS", 1)
    root, signer, key = _pki(slow + "/trickle")
    writer = PdfFileWriter()
    writer.insert_page(generic.DictionaryObject({
        generic.NameObject("/Type"): generic.NameObject("/Page"), generic.NameObject("/Resources"):
        generic.DictionaryObject(), generic.NameObject("/MediaBox"): generic.ArrayObject(
            [generic.NumberObject(n) for n in (0, 0, 200, 200)])}))
    unsigned = BytesIO()
    writer.write(unsigned)
    pdf_signer = SimpleSigner(signing_cert=to_asn1_cert(signer), signing_key=to_asn1_key(key),
                              cert_registry=SimpleCertificateStore.from_certs([to_asn1_cert(root)]))
    material = SigningMaterial(
        signer=pdf_signer, certificate=signer, bundle_key=None, key_path=None, bundle_key_path=None,
        details={"subject": "Network Test Signer"}, chain=[root],
        timestamp_url=trust_services.url_tsa, timestamp_roots=[trust_services.root_cert])
    signed: list[bytes] = []
    raised = _ends(2 + 8, lambda: signed.append(sign_pdf(unsigned.getvalue(), material)))
    assert raised is None, raised
    assert signed and b"/ByteRange" in signed[0]


# --- Dask -------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("address", ["inproc://192.168.1.5/4/1", "ucx://127.0.0.1:8786", "ws://127.0.0.1:8786",
                                     "file:///tmp/scheduler.json", "http://127.0.0.1:8786", "tcp://"])
def test_a_dask_scheduler_address_other_than_tcp_or_tls_is_refused(address: str) -> None:
    pytest.importorskip("distributed")
    from auditor.evidence.executor import make_executor

    raised = _ends(10, lambda: make_executor("dask", 1, address))
    assert isinstance(raised, InputError), raised
    assert raised.where == "executor.address (--scheduler)" and "is not tcp:// or tls://" in raised.problem, raised


def test_a_dask_scheduler_that_never_answers_is_given_up_at_the_connect_deadline(
        silent_port: int, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("distributed")
    from auditor.evidence import executor

    monkeypatch.setattr(executor, "DASK_CONNECT_SECONDS", 1)
    raised = _ends(2 + 6, lambda: executor.make_executor("dask", 1, f"tcp://127.0.0.1:{silent_port}"))
    assert isinstance(raised, OSError), raised  # the engine's one line: cannot reach the Dask scheduler


def test_a_dask_scheduler_without_workers_is_refused_instead_of_waiting_for_ever(
        monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("distributed")
    from distributed import LocalCluster

    from auditor.evidence import executor

    monkeypatch.setattr(executor, "DASK_CONNECT_SECONDS", 1)
    with LocalCluster(n_workers=0, processes=False, protocol="tcp://", host="127.0.0.1",
                      dashboard_address=None) as cluster:
        raised = _ends(2 + 8, lambda: executor.make_executor("dask", 1, cluster.scheduler_address))
    assert isinstance(raised, InputError), raised
    assert "has no worker (none joined within 1 s)" in raised.problem, raised


# --- MLflow -----------------------------------------------------------------------------------------------------------

MLFLOW_VARIABLES = ("MLFLOW_HTTP_REQUEST_TIMEOUT", "MLFLOW_HTTP_REQUEST_MAX_RETRIES",
                    "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR")


@pytest.fixture
def short_mlflow(monkeypatch: pytest.MonkeyPatch) -> None:
    """mlflow installed; our bounds at one second and no retry; none of MLflow's variables set beforehand."""
    pytest.importorskip("mlflow")
    from auditor.models import mlflow as mlflow_kind

    monkeypatch.setattr(mlflow_kind, "HTTP_BOUNDS", dict(zip(MLFLOW_VARIABLES, ("1", "0", "0"), strict=True)))
    for name in (*MLFLOW_VARIABLES, "MLFLOW_TRACKING_URI", "MLFLOW_REGISTRY_URI", "MLFLOW_RUN_ID"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.usefixtures("short_mlflow")
def test_resolving_an_mlflow_model_waits_on_our_timeout_then_restores_mlflows(slow: str, tmp_path: Path) -> None:
    """A tracking server that never answers: MLflow's own defaults wait 120 s a request and retry 7 times; with ours
    set for the call, one line naming the server within seconds, and MLflow's variables as they were after."""
    from auditor.inputs.spec import ModelSpec
    from auditor.models.mlflow import load_logged

    ref = ModelSpec(kind="mlflow", uri="models:/catalogue-ranker/1", tracking_uri=slow)
    raised = _ends(10, lambda: load_logged(ref, base_dir=tmp_path))
    assert isinstance(raised, InputError), raised
    assert raised.where == "model.uri" and f"MLflow cannot fetch models:/catalogue-ranker/1 from {slow} (" in \
        raised.problem, raised
    assert not [name for name in MLFLOW_VARIABLES if name in os.environ]


@pytest.mark.usefixtures("short_mlflow")
def test_logging_an_audit_to_mlflow_waits_on_our_timeout_too(slow: str, tmp_path: Path) -> None:
    from auditor.commands.mlflow_log import log_audit

    run = SimpleNamespace(run_dir=tmp_path, opinion="positive", findings=[], results={})
    raised = _ends(10, lambda: log_audit(run, tracking_uri=slow))
    assert isinstance(raised, InputError), raised
    assert f"cannot log the audit to MLflow at {slow} (" in raised.problem, raised
    assert not [name for name in MLFLOW_VARIABLES if name in os.environ]


@pytest.mark.usefixtures("short_mlflow")
def test_a_model_on_ftp_storage_is_refused_before_mlflow_connects(silent_port: int, tmp_path: Path) -> None:
    """MLflow's FTP client has no timeout at all: a silent server would hold the audit for ever."""
    from auditor.inputs.spec import ModelSpec
    from auditor.models.mlflow import load_logged

    ref = ModelSpec(kind="mlflow", uri=f"ftp://127.0.0.1:{silent_port}/model")
    raised = _ends(10, lambda: load_logged(ref, base_dir=tmp_path))
    assert isinstance(raised, InputError), raised
    assert raised.where == "model.uri" and "MLflow reads ftp:// storage without any timeout" in raised.problem, raised


def test_mlflows_variables_are_ours_during_a_call_and_the_persons_own_are_kept(
        monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("mlflow")
    from auditor.models.mlflow import HTTP_BOUNDS, bounded

    monkeypatch.delenv("MLFLOW_HTTP_REQUEST_TIMEOUT", raising=False)
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "5")
    monkeypatch.delenv("MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR", raising=False)
    with contextlib.suppress(RuntimeError), bounded():
        assert os.environ["MLFLOW_HTTP_REQUEST_TIMEOUT"] == HTTP_BOUNDS["MLFLOW_HTTP_REQUEST_TIMEOUT"]
        assert os.environ["MLFLOW_HTTP_REQUEST_MAX_RETRIES"] == "5"
        raise RuntimeError("a failing call")
    assert "MLFLOW_HTTP_REQUEST_TIMEOUT" not in os.environ and "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR" not in os.environ
    assert os.environ["MLFLOW_HTTP_REQUEST_MAX_RETRIES"] == "5"
