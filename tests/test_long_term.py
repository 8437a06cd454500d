"""Ten years, for real (issue 53): validity periods enforced, CA-issued signers (an intermediate, with and without
revocation pointers, in a PKCS#12 file and on a SoftHSM2 token) verified offline, and the proof of a signature
carried past its TSA's expiry — under a faked clock (time-machine moves the whole process's clock, pyHanko's and the
test PKI's included)."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from auditor.cli import app
from auditor.spec import SigningSpec
from auditor.trust.certificates import load_trust
from auditor.trust.keys import load_material
from auditor.trust.pdf_sign import sign_pdf
from auditor.trust.pdf_verify import check_pdf_signature
from tests import softhsm
from tests.conftest import PASS, _keygen

runner = CliRunner()
YEAR = dt.timedelta(days=365)
HOUR = dt.timedelta(hours=1)


def now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def _lines(verdicts: list[Any]) -> str:
    return "\n".join(v.line() for v in verdicts)


def _unsigned_pdf(signed: dict[str, Path]) -> bytes:
    pdf = (signed["run"] / "report.pdf").read_bytes()
    return pdf[:pdf.index(b"%%EOF") + 5] + b"\n"  # the revision before the signature


# --- validity periods ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("years", [-1, 6])
def test_without_trusted_time_a_signature_fails_outside_its_certificates_validity(signed: dict[str, Path],
                                                                                 years: int) -> None:
    """The self-signed `keygen` identity (valid five years), no TSA: nothing proves when it signed, so before the
    certificate existed and after it expired the PDF's signature fails, naming the validity period."""
    keys = signed["keys"]
    at = (now() + years * YEAR).strftime("%Y-%m-%d")
    result = runner.invoke(app, ["verify", str(signed["run"]), "--trust", str(keys / "signer-cert.pem"), "--pubkey",
                                 str(keys / "bundle-ed25519.pub.pem"), "--at", at])
    assert result.exit_code == 1, result.output
    line = next(x for x in result.output.splitlines() if x.startswith("FAIL report.pdf (signature)"))
    assert "the signer's certificate is not valid at" in line and "no trusted timestamp proves" in line, line
    assert "verdict: NOT VERIFIED" in result.output


# --- CA-issued signers -----------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def pki(trust_services: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Two intermediates of the test root — one whose certificates name OCSP and CRL, one whose name none — and a
    signer of each in a PKCS#12 file with its chain; the root as PEM."""
    folder = tmp_path_factory.mktemp("pki")
    out: dict[str, Any] = {"root": trust_services.write_root_pem(folder / "root.pem"), "folder": folder}
    for pointers in (True, False):
        issuer = trust_services.issue_ca(f"Issuing CA ({'with' if pointers else 'no'} revocation)", pointers=pointers)
        cert, key = trust_services.issue_signer(f"CA-issued signer ({'with' if pointers else 'no'} revocation)",
                                                not_before=now() - HOUR, not_after=now() + YEAR, issuer=issuer,
                                                pointers=pointers)
        path = trust_services.write_pkcs12(folder / f"signer-{pointers}.p12", cert, key, PASS, issuer=issuer)
        out[pointers] = {"p12": path, "issuer": issuer}
    return out


def _material(pki: dict[str, Any], trust_services: Any, pointers: bool, monkeypatch: pytest.MonkeyPatch,
              tsa: str | None = None) -> Any:
    monkeypatch.setenv("TEST_KEY_PASS", PASS)
    keys = pki["folder"] / "keys"
    if not keys.exists():
        _keygen(keys)
    spec = SigningSpec(key=pki[pointers]["p12"], passphrase_env="TEST_KEY_PASS", bundle_key=keys / "bundle-ed25519.pem",
                       timestamp_url=tsa or trust_services.url_tsa, timestamp_roots=[pki["root"]])
    return load_material(spec, spec_file=pki["folder"] / "audit.yaml")


@pytest.mark.slow
def test_a_ca_issued_signer_with_revocation_pointers_verifies_offline(signed: dict[str, Path], pki: dict[str, Any],
                                                                      trust_services: Any,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Root → intermediate → signer, OCSP and CRL pointers, the loopback TSA: every line OK from the embedded
    validation data, revocation checked (no revocation line)."""
    pdf = sign_pdf(_unsigned_pdf(signed), _material(pki, trust_services, True, monkeypatch))
    verdicts = check_pdf_signature(pdf, load_trust(pki["root"]))
    assert all(v.ok and not v.skipped for v in verdicts), _lines(verdicts)
    assert "CA-issued signer (with revocation)" in verdicts[0].message
    assert not any("revocation)" in v.subject for v in verdicts), _lines(verdicts)


@pytest.mark.slow
def test_a_ca_issued_signer_without_revocation_sources_verifies_saying_so(signed: dict[str, Path],
                                                                          pki: dict[str, Any], trust_services: Any,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """No OCSP or CRL pointer on the signer or its intermediate: the signature verifies at its trusted signing
    time with one SKIP line saying revocation was not checked, and whose; `--require-revocation` makes it fail. The
    signature line and the trusted-time line never contradict each other."""
    pdf = sign_pdf(_unsigned_pdf(signed), _material(pki, trust_services, False, monkeypatch))
    verdicts = check_pdf_signature(pdf, load_trust(pki["root"]))
    assert all(v.ok for v in verdicts), _lines(verdicts)
    skipped = [v for v in verdicts if v.skipped]
    assert len(skipped) == 1 and skipped[0].subject == "report.pdf (revocation)", _lines(verdicts)
    assert "CA-issued signer (no revocation)" in skipped[0].message and "Issuing CA (no revocation)" in \
        skipped[0].message and "--require-revocation" in skipped[0].message
    strict = check_pdf_signature(pdf, load_trust(pki["root"]), require_revocation=True)
    assert not strict[0].ok and "cannot be checked" in strict[0].message and "--require-revocation" in \
        strict[0].message, _lines(strict)
    assert not any(v.ok and not v.skipped and "revocation" in v.subject for v in strict)


@pytest.fixture(scope="module")
def ca_token(trust_services: Any, pki: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A SoftHSM2 token of its own whose key has a certificate from the intermediate without revocation sources."""
    reason = softhsm.available()
    if reason is not None:
        pytest.skip(reason)
    token = softhsm.create_token(tmp_path_factory.mktemp("ca-token"), token_label="ca-issued")
    cert, _ = trust_services.issue_signer("CA-issued token signer", public_key=token.public_key,
                                          not_before=now() - HOUR, not_after=now() + YEAR,
                                          issuer=pki[False]["issuer"], pointers=False)
    token.store_certificate(cert)
    return token


@pytest.mark.slow
def test_a_ca_issued_key_on_a_token_verifies_offline(signed: dict[str, Path], pki: dict[str, Any], ca_token: Any,
                                                     trust_services: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same without a PKCS#12 file: the key on a SoftHSM2 token, its chain named in `signing.chain`."""
    from auditor.spec import Pkcs11Spec

    chain = trust_services.write_cert_pem(pki["folder"] / "chain.pem", pki[False]["issuer"].cert,
                                          trust_services.root_cert)
    monkeypatch.setenv("TEST_TOKEN_PIN", ca_token.pin)
    with ca_token.activated():
        material = load_material(SigningSpec(
            pkcs11=Pkcs11Spec(module=ca_token.module, token=ca_token.token_label, key_label=ca_token.key_label),
            pin_env="TEST_TOKEN_PIN", chain=[chain], timestamp_url=trust_services.url_tsa,
            timestamp_roots=[pki["root"]]), spec_file=pki["folder"] / "audit.yaml")
        pdf = sign_pdf(_unsigned_pdf(signed), material)
        material.close()
    verdicts = check_pdf_signature(pdf, load_trust(pki["root"]))
    assert all(v.ok for v in verdicts), _lines(verdicts)
    assert "CA-issued token signer" in verdicts[0].message
    assert [v.subject for v in verdicts if v.skipped] == ["report.pdf (revocation)"], _lines(verdicts)


# --- the proof of a signature under a faked clock ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def two_tsas(trust_services: Any) -> dict[str, str]:
    """A first TSA whose certificate expires in three years, a second in fifteen."""
    start = now() - HOUR
    return {"first": trust_services.add_tsa("first", not_before=start, not_after=start + 3 * YEAR),
            "second": trust_services.add_tsa("second", not_before=start, not_after=start + 15 * YEAR)}


@pytest.mark.slow
def test_a_signature_is_proven_until_its_newest_timestamp_expires(signed: dict[str, Path], pki: dict[str, Any],
                                                                   trust_services: Any, two_tsas: dict[str, str],
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """With the process's clock two years ahead (the signer's one-year certificate expired), the signature still
    verifies at its timestamped signing time; twelve years ahead the first TSA's certificate has expired and nothing
    renewed the proof: the failure says so."""
    import time_machine

    pdf = sign_pdf(_unsigned_pdf(signed), _material(pki, trust_services, True, monkeypatch, two_tsas["first"]))
    roots = load_trust(pki["root"])
    with time_machine.travel(now() + 2 * YEAR, tick=True):
        later = check_pdf_signature(pdf, roots)
    assert all(v.ok for v in later), _lines(later)
    assert "the certificate has since expired" in later[0].message
    with time_machine.travel(now() + 12 * YEAR, tick=True):
        late = check_pdf_signature(pdf, roots)
    assert not late[0].ok and "the trusted time has expired" in late[0].message and "auditor restamp" in \
        late[0].message, _lines(late)


def test_the_faked_clock_reaches_the_process_and_the_services(trust_services: Any) -> None:
    """The premise of the tests above: time-machine moves the clock pyHanko and the test PKI read."""
    import time_machine

    target = now() + 5 * YEAR
    with time_machine.travel(target, tick=False):
        assert abs((dt.datetime.now(dt.UTC) - target).total_seconds()) < 1
        assert abs((trust_services.now() - target).total_seconds()) < 1
    assert os.environ.get("TZ") != "faked"
