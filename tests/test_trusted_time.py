"""Evidence that stays verifiable: runs signed with the loopback TSA (PAdES B-LTA, bundle timestamp), a short-lived
certificate verified after it expired, signing after revocation, a lying TSA, later revisions, a SoftHSM2 key, and
independent validators (poppler's pdfsig, pyHanko's CLI)."""

from __future__ import annotations

import datetime as dt
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from auditor.cli import app
from auditor.inputs.spec import SigningSpec
from auditor.trust import timestamps as trusted_time
from auditor.trust.certificates import load_trust
from auditor.trust.keys import load_material
from auditor.trust.pdf_sign import sign_pdf
from auditor.trust.pdf_verify import check_pdf_signature
from tests.conftest import BOOKSTORE, PASS, _keygen, copy_bookstore, signature_evidence

runner = CliRunner()
NOW = dt.datetime.now(dt.UTC)


def _spec(folder: Path, signing_block: dict[str, Any]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    copy_bookstore(folder)
    spec = yaml.safe_load((BOOKSTORE / "audit.yaml").read_text())
    spec["evidence"] = signature_evidence(spec["evidence"])
    spec["output"] = {"dir": "reports", "formats": ["html", "pdf"]}
    spec["register"] = False
    spec["signing"] = signing_block
    path = folder / "audit.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


@pytest.fixture(scope="module")
def lta_run(trust_services: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A bookstore run signed with a certificate valid for two days (longer than its OCSP response's one-day window:
    past validation places the signature no earlier than the end of that window) and the loopback TSA."""
    root = tmp_path_factory.mktemp("lta")
    cert, key = trust_services.issue_signer("Short-lived audit signer", not_before=NOW - dt.timedelta(minutes=5),
                                            not_after=NOW + dt.timedelta(days=2))
    trust_services.write_pkcs12(root / "signer.p12", cert, key, PASS)
    keys = _keygen(root / "keys")
    trust_services.write_root_pem(root / "root.pem")
    spec = _spec(root / "audit", {"key": "../signer.p12", "passphrase_env": "TEST_KEY_PASS",
                                  "bundle_key": "../keys/bundle-ed25519.pem", "timestamp_url": trust_services.url_tsa,
                                  "timestamp_roots": ["../root.pem"]})
    before = trust_services.hits["/tsa"]
    result = runner.invoke(app, ["report", str(spec), "--quiet", "--fail-on", "never"], env={"TEST_KEY_PASS": PASS})
    assert result.exit_code == 0, result.output
    assert trust_services.hits["/tsa"] >= before + 3  # the signature's, the document's and the bundle's timestamps
    return {"run": Path(result.stdout.strip()).parent, "root": root / "root.pem", "keys": keys, "spec": spec}


def _verify(run: Path, trust: Path, pubkey: Path, *extra: str) -> tuple[int, str]:
    result = runner.invoke(app, ["verify", str(run), "--trust", str(trust), "--pubkey", str(pubkey), *extra])
    assert "Traceback" not in result.output, result.output
    return result.exit_code, result.output


@pytest.mark.slow
def test_a_run_signed_with_trusted_time_verifies_offline(lta_run: dict[str, Path], trust_services: Any) -> None:
    run = lta_run["run"]
    assert (run / "bundle.tsr").is_file()
    code, output = _verify(run, lta_run["root"], lta_run["keys"] / "bundle-ed25519.pub.pem")
    assert code == 0, output
    assert "OK   report.pdf (signature): intact, trusted" in output
    assert "valid at the timestamped signing time" in output
    assert "OK   report.pdf (trusted time): signed no later than" in output and "Auditor Test TSA (trusted)" in output
    assert "OK   report.pdf (long-term validation): validation data embedded" in output
    assert "OCSP responses" in output and "later revisions add only validation data" in output
    assert "OK   bundle.dsse.json (trusted time): the bundle's signature existed at" in output
    assert output.rstrip().endswith("verdict: VERIFIED")


@pytest.mark.slow
def test_after_the_certificate_expired_the_run_is_still_valid_at_signing_time(lta_run: dict[str, Path]) -> None:
    later = (NOW + dt.timedelta(days=400)).strftime("%Y-%m-%dT%H:%M:%SZ")
    code, output = _verify(lta_run["run"], lta_run["root"], lta_run["keys"] / "bundle-ed25519.pub.pem",
                           "--at", later)
    assert code == 0, output
    assert "valid at the timestamped signing time" in output and "the certificate has since expired" in output


@pytest.mark.slow
def test_a_signature_without_trusted_time_fails_once_its_certificate_expired(lta_run: dict[str, Path],
                                                                           trust_services: Any,
                                                                           tmp_path: Path) -> None:
    """The same short-lived certificate without a TSA: nothing proves when it signed, so after expiry the PDF's
    signature no longer validates — the reason trusted time exists."""
    pdf = _unsigned_pdf(lta_run["run"])
    cert, key = trust_services.issue_signer("Short-lived, no TSA", not_before=NOW - dt.timedelta(minutes=5),
                                            not_after=NOW + dt.timedelta(minutes=20))
    material = _material(tmp_path, trust_services, cert, key, timestamp=False)
    signed = sign_pdf(pdf, material)
    root = load_trust(lta_run["root"])
    assert check_pdf_signature(signed, root)[0].ok
    late = check_pdf_signature(signed, root, at=NOW + dt.timedelta(days=400))[0]
    assert not late.ok and "no trusted timestamp proves the signature was made inside that period" in late.message


@pytest.mark.slow
def test_a_revoked_certificate_does_not_sign(trust_services: Any, lta_run: dict[str, Path], tmp_path: Path) -> None:
    """With trusted time the signer's status is fetched at signing: a revoked key signs nothing (one line)."""
    from auditor.core.errors import InputError

    cert, key = trust_services.issue_signer("Revoked signer", not_before=NOW - dt.timedelta(hours=1),
                                            not_after=NOW + dt.timedelta(days=30))
    trust_services.revoke(cert, when=NOW - dt.timedelta(minutes=30))
    with pytest.raises(InputError, match="revoked"):
        sign_pdf(_unsigned_pdf(lta_run["run"]), _material(tmp_path, trust_services, cert, key))


@pytest.mark.slow
def test_revoked_after_signing_stays_valid(trust_services: Any, lta_run: dict[str, Path], tmp_path: Path) -> None:
    cert, key = trust_services.issue_signer("Later revoked", not_before=NOW - dt.timedelta(hours=1),
                                            not_after=NOW + dt.timedelta(days=30))
    signed = sign_pdf(_unsigned_pdf(lta_run["run"]), _material(tmp_path, trust_services, cert, key))
    trust_services.revoke(cert)
    verdicts = check_pdf_signature(signed, load_trust(lta_run["root"]))
    assert verdicts[0].ok, verdicts[0].message  # the OCSP response embedded at signing time said good


@pytest.mark.slow
@pytest.mark.parametrize(("kind", "words"), [
    ("wrong-nonce", "another nonce"), ("wrong-digest", "another document"),
    ("untrusted", "does not chain to a trusted root"), ("error", "HTTP 500"),
    ("garbage", "not an RFC 3161 timestamp reply"), ("rejection", "refused the request"),
])
def test_a_lying_or_failing_tsa_is_one_line_and_nothing_is_written(kind: str, words: str, lta_run: dict[str, Path],
                                                                   trust_services: Any) -> None:
    spec = lta_run["spec"]
    reports = spec.parent / "reports"
    before = sorted(p.name for p in reports.iterdir())
    result = runner.invoke(app, ["report", str(spec), "--quiet", "--fail-on", "never", "--timestamp-url",
                                 trust_services.url_lying_tsa(kind)], env={"TEST_KEY_PASS": PASS})
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and words in lines[0], result.output
    assert sorted(p.name for p in reports.iterdir()) == before  # no run folder, no temporary folder left


@pytest.mark.slow
def test_an_unreachable_tsa_is_one_line(lta_run: dict[str, Path]) -> None:
    result = runner.invoke(app, ["report", str(lta_run["spec"]), "--quiet", "--timestamp-url",
                                 "http://127.0.0.1:9/tsa"], env={"TEST_KEY_PASS": PASS})
    assert result.exit_code == 2 and "cannot reach the TSA" in result.output, result.output


@pytest.mark.slow
def test_a_later_revision_that_shows_something_is_refused(lta_run: dict[str, Path]) -> None:
    """An incremental update after the document timestamp that adds a visible annotation: pyHanko's signature
    checks still pass on the signed revision, our revision check does not."""
    from io import BytesIO

    from pyhanko.pdf_utils import generic
    from pyhanko.pdf_utils.incremental_writer import IncrementalPdfFileWriter

    writer = IncrementalPdfFileWriter(BytesIO((lta_run["run"] / "report.pdf").read_bytes()))
    page = writer.root["/Pages"]["/Kids"][0].get_object()
    note = writer.add_object(generic.DictionaryObject({
        generic.NameObject("/Type"): generic.NameObject("/Annot"),
        generic.NameObject("/Subtype"): generic.NameObject("/FreeText"),
        generic.NameObject("/Rect"): generic.ArrayObject([generic.NumberObject(v) for v in (50, 50, 300, 100)]),
        generic.NameObject("/Contents"): generic.TextStringObject("APPROVED by the regulator")}))
    annots = page.get("/Annots", generic.ArrayObject())
    annots.append(note)
    page[generic.NameObject("/Annots")] = annots
    writer.update_container(page)
    out = BytesIO()
    writer.write(out)
    verdicts = check_pdf_signature(out.getvalue(), load_trust(lta_run["root"]))
    assert not verdicts[0].ok and "changed after signing" in verdicts[0].message, verdicts[0].message
    assert not verdicts[-1].ok and "change the signed document" in verdicts[-1].message


@pytest.mark.slow
def test_pdfsig_accepts_the_signature_and_its_timestamp(lta_run: dict[str, Path], tmp_path: Path) -> None:
    """poppler validates the certifying signature and lists the document timestamp (it cannot validate
    ETSI.RFC3161 document timestamps themselves: "Unable to validate this type of signature")."""
    if shutil.which("pdfsig") is None:
        pytest.skip("poppler's pdfsig is not installed (Debian poppler-utils)")
    command = ["pdfsig"]
    if shutil.which("certutil") is not None:  # trust the test root in a throw-away NSS database
        nss = tmp_path / "nss"
        nss.mkdir()
        subprocess.run(["certutil", "-N", "-d", f"sql:{nss}", "--empty-password"], check=True)
        subprocess.run(["certutil", "-A", "-d", f"sql:{nss}", "-n", "root", "-t", "CT,C,C", "-i",
                        str(lta_run["root"])], check=True)
        command += ["-nssdir", f"sql:{nss}"]
    out = subprocess.run([*command, str(lta_run["run"] / "report.pdf")], capture_output=True, text=True,
                         timeout=120).stdout
    blocks = {block.split("Field Name: ", 1)[1].split()[0]: block for block in out.split("Signature #")[1:]}
    first = blocks.pop("AuditorCertification")
    second = "".join(block for name, block in blocks.items() if name != "AuditorApproval")  # the document timestamp
    assert "The signature form field is not signed." in blocks["AuditorApproval"], out  # awaiting the approver
    assert "Signature Validation: Signature is Valid." in first, out
    assert "Short-lived audit signer" in first and "Auditor Test TSA" in second, out
    if shutil.which("certutil") is not None:
        assert "Certificate Validation: Certificate is Trusted." in first, out


@pytest.mark.slow
def test_pyhanko_cli_agrees(lta_run: dict[str, Path]) -> None:
    cli = shutil.which("pyhanko") or str(Path(__import__("sys").executable).parent / "pyhanko")
    if not Path(cli).exists():
        pytest.skip("pyHanko's CLI (pyhanko-cli) is not installed")
    # its difference analysis walks the tagged report's structure tree once per object: minutes; our own
    # revision check stands in for it (test_a_later_revision_that_shows_something_is_refused)
    result = subprocess.run([cli, "sign", "adesverify", "--no-diff-analysis", "--trust", str(lta_run["root"]),
                             "--executive-summary", str(lta_run["run"] / "report.pdf")],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0 and "VALID" in result.stdout.upper(), result.stdout + result.stderr


@pytest.mark.slow
def test_a_softhsm_key_signs_a_run_that_verify_and_pdfsig_accept(softhsm_token: Any, trust_services: Any,
                                                                 tmp_path: Path) -> None:
    trust_services.write_root_pem(tmp_path / "root.pem")
    spec = _spec(tmp_path / "audit", {
        "pkcs11": {"module": str(softhsm_token.module), "token": softhsm_token.token_label,
                   "key_label": softhsm_token.key_label},
        "pin_env": "TEST_TOKEN_PIN", "chain": ["../root.pem"], "timestamp_url": trust_services.url_tsa,
        "timestamp_roots": ["../root.pem"]})
    result = runner.invoke(app, ["report", str(spec), "--quiet", "--fail-on", "never"],
                           env={**softhsm_token.env, "TEST_TOKEN_PIN": softhsm_token.pin})
    assert result.exit_code == 0, result.output
    run = Path(result.stdout.strip()).parent
    code, output = _verify(run, tmp_path / "root.pem", softhsm_token.cert_path)
    assert code == 0, output
    assert "RSA-2048 signature valid" in output and "Auditor Token Signer" in output
    if shutil.which("pdfsig") is not None:
        out = subprocess.run(["pdfsig", str(run / "report.pdf")], capture_output=True, text=True, timeout=120).stdout
        assert "Signature Validation: Signature is Valid." in out, out


def test_a_wrong_pin_is_one_line(softhsm_token: Any, tmp_path: Path) -> None:
    spec = _spec(tmp_path / "audit", {
        "pkcs11": {"module": str(softhsm_token.module), "token": softhsm_token.token_label,
                   "key_label": softhsm_token.key_label}, "pin_env": "TEST_TOKEN_PIN"})
    result = runner.invoke(app, ["report", str(spec), "--quiet"], env={**softhsm_token.env, "TEST_TOKEN_PIN": "0000"})
    assert result.exit_code == 2 and "cannot open the token" in result.output, result.output
    assert not (spec.parent / "reports").exists() or not any((spec.parent / "reports").iterdir())


def _sign_unchecked(pdf: bytes, cert: Any, key: Any, services: Any) -> bytes:
    """PAdES B-T by pyHanko directly, without the checks our signer makes (a signer that bypassed them)."""
    from io import BytesIO

    from pyhanko.pdf_utils.incremental_writer import IncrementalPdfFileWriter
    from pyhanko.sign import fields, signers
    from pyhanko_certvalidator.registry import SimpleCertificateStore

    from tests.trust_services import to_asn1_cert, to_asn1_key

    signer = signers.SimpleSigner(signing_cert=to_asn1_cert(cert), signing_key=to_asn1_key(key),
                                  cert_registry=SimpleCertificateStore.from_certs([to_asn1_cert(services.root_cert)]))
    meta = signers.PdfSignatureMetadata(field_name="AuditorCertification", certify=True,
                                        subfilter=fields.SigSeedSubFilter.PADES, md_algorithm="sha256")
    out = signers.sign_pdf(IncrementalPdfFileWriter(BytesIO(pdf)), meta, signer=signer,
                           timestamper=trusted_time.timestamper(services.url_tsa))
    return out.getvalue()


def _unsigned_pdf(run: Path) -> bytes:
    pdf = (run / "report.pdf").read_bytes()
    return pdf[:pdf.index(b"%%EOF") + 5] + b"\n"  # the revision before the signature


def _material(folder: Path, services: Any, cert: Any, key: Any, *, timestamp: bool = True) -> Any:
    folder.mkdir(parents=True, exist_ok=True)
    services.write_pkcs12(folder / "s.p12", cert, key, PASS)
    keys = _keygen(folder / "keys") if not (folder / "keys").exists() else folder / "keys"
    root = services.write_root_pem(folder / "root.pem")
    import os

    os.environ["TEST_KEY_PASS"] = PASS
    spec = SigningSpec(key=folder / "s.p12", bundle_key=keys / "bundle-ed25519.pem", passphrase_env="TEST_KEY_PASS",
                       timestamp_url=services.url_tsa if timestamp else None, timestamp_roots=[root])
    return load_material(spec, spec_file=folder / "audit.yaml")


@pytest.mark.slow
def test_token_check_rejects_a_token_for_other_data(lta_run: dict[str, Path]) -> None:
    token = (lta_run["run"] / "bundle.tsr").read_bytes()
    facts = trusted_time.check_token(token, b"other bytes", load_trust(lta_run["root"]))
    assert not facts.intact


@pytest.mark.slow
def test_a_removed_bundle_timestamp_is_noticed(lta_run: dict[str, Path], tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(lta_run["run"], run)
    (run / "bundle.tsr").unlink()
    code, output = _verify(run, lta_run["root"], lta_run["keys"] / "bundle-ed25519.pub.pem")
    assert code == 1 and "FAIL bundle.dsse.json (trusted time): bundle.tsr is missing" in output, output


@pytest.mark.slow
def test_a_signature_made_after_expiry_says_so(trust_services: Any, lta_run: dict[str, Path]) -> None:
    """A signer that skips our checks (pyHanko directly, no validation at signing) with a certificate that expired
    yesterday: the TSA's time proves the signature came after expiry, and verify says it in words."""
    cert, key = trust_services.issue_signer("Expired signer", not_before=NOW - dt.timedelta(days=30),
                                            not_after=NOW - dt.timedelta(days=1))
    signed = _sign_unchecked(_unsigned_pdf(lta_run["run"]), cert, key, trust_services)
    verdicts = check_pdf_signature(signed, load_trust(lta_run["root"]))
    assert not verdicts[0].ok and "expired" in verdicts[0].message, verdicts[0].message


@pytest.mark.slow
def test_inputs_root_must_be_a_folder(lta_run: dict[str, Path], tmp_path: Path) -> None:
    code, output = _verify(lta_run["run"], lta_run["root"], lta_run["keys"] / "bundle-ed25519.pub.pem",
                           "--inputs-root", str(tmp_path / "nowhere"))
    assert code == 2 and "--inputs-root" in output and "no such folder" in output, output


def test_tsa_credentials_are_not_recorded() -> None:
    assert trusted_time.without_credentials("https://user:secret@tsa.example.eu/tsr") == "https://tsa.example.eu/tsr"


@pytest.mark.slow
def test_a_revoked_signer_bypassing_our_checks_is_not_verified(trust_services: Any, lta_run: dict[str, Path]) -> None:
    """Signed by pyHanko directly (B-T, no validation data) with a revoked certificate: offline, verify cannot
    establish its status at signing and says so in words, never VERIFIED."""
    cert, key = trust_services.issue_signer("Revoked, B-T", not_before=NOW - dt.timedelta(days=3),
                                            not_after=NOW + dt.timedelta(days=30))
    trust_services.revoke(cert, when=NOW - dt.timedelta(days=1))
    signed = _sign_unchecked(_unsigned_pdf(lta_run["run"]), cert, key, trust_services)
    verdicts = check_pdf_signature(signed, load_trust(lta_run["root"]))
    assert not verdicts[0].ok and "cannot be established offline" in verdicts[0].message, verdicts[0].message
    assert not verdicts[1].ok and "not validated" in verdicts[1].message


@pytest.mark.slow
def test_the_bundle_timestamp_and_envelope_check_with_standard_tools(lta_run: dict[str, Path],
                                                                    tmp_path: Path) -> None:
    """docs/signing.md's recipes: openssl verifies bundle.tsr over the bundle's signature bytes, and the DSSE
    envelope verifies with nothing but json, base64 and cryptography."""
    import base64
    import json

    from cryptography.hazmat.primitives.serialization import load_pem_public_key

    run = lta_run["run"]
    envelope = json.loads((run / "bundle.dsse.json").read_text())
    signature = base64.b64decode(envelope["signatures"][0]["sig"])
    kind, payload = envelope["payloadType"].encode(), base64.b64decode(envelope["payload"])
    load_pem_public_key((lta_run["keys"] / "bundle-ed25519.pub.pem").read_bytes()).verify(
        signature, b"DSSEv1 %d %s %d %s" % (len(kind), kind, len(payload), payload))
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    (tmp_path / "bundle.sig").write_bytes(signature)
    ok = subprocess.run(["openssl", "ts", "-verify", "-token_in", "-in", str(run / "bundle.tsr"), "-data",
                         str(tmp_path / "bundle.sig"), "-CAfile", str(lta_run["root"])], capture_output=True, text=True)
    assert ok.returncode == 0 and "Verification: OK" in ok.stdout, ok.stdout + ok.stderr
    (tmp_path / "other.sig").write_bytes(signature[::-1])
    bad = subprocess.run(["openssl", "ts", "-verify", "-token_in", "-in", str(run / "bundle.tsr"), "-data",
                          str(tmp_path / "other.sig"), "-CAfile", str(lta_run["root"])], capture_output=True, text=True)
    assert bad.returncode != 0


@pytest.mark.slow
def test_trust_may_be_a_folder_holding_keys_beside_certificates(lta_run: dict[str, Path], tmp_path: Path) -> None:
    folder = tmp_path / "trust"
    folder.mkdir()
    shutil.copy(lta_run["root"], folder / "root.pem")
    shutil.copy(lta_run["keys"] / "bundle-ed25519.pem", folder / "bundle-ed25519.pem")  # a key, not a certificate
    code, output = _verify(lta_run["run"], folder, lta_run["keys"] / "bundle-ed25519.pub.pem")
    assert code == 0, output
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.pem").write_text("-----BEGIN PRIVATE KEY-----\n-----END PRIVATE KEY-----\n")
    code, output = _verify(lta_run["run"], empty, lta_run["keys"] / "bundle-ed25519.pub.pem")
    assert code == 2 and "no X.509 certificate in this folder" in output, output
