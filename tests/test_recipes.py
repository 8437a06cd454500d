"""The shell recipes of docs/signing.md run as written (issue 53, item 6), so the docs cannot drift: trusting the
test root in an NSS database for poppler's pdfsig, and making a token's key and certificate with softhsm2-util and
`auditor keygen --pkcs11-module`. Each recipe is the fenced block after its `<!-- recipe: NAME ... -->` marker."""

from __future__ import annotations

import datetime as dt
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests import softhsm
from tests.conftest import PASS, ROOT

SIGNING_DOC = ROOT / "docs" / "signing.md"


def recipe(name: str) -> str:
    """The shell block that follows `<!-- recipe: name` in docs/signing.md, its lines' indentation removed."""
    text = SIGNING_DOC.read_text(encoding="utf-8")
    found = re.search(r"<!-- recipe: " + re.escape(name) + r"\b[^>]*-->\s*\n\s*```sh\n(.*?)\n\s*```", text, re.S)
    assert found, f"no recipe {name!r} in {SIGNING_DOC}"
    return "\n".join(line.strip() if line.strip().startswith("#") else line.removeprefix("  ")
                     for line in found.group(1).splitlines())


def run(script: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    binaries = str(Path(sys.executable).parent)  # `auditor` of this environment
    return subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=cwd, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PATH": f"{binaries}:{os.environ['PATH']}", **env})


def test_recipes_are_found() -> None:
    assert "pdfsig" in recipe("pdfsig") and "softhsm2-util --init-token" in recipe("token")


@pytest.mark.slow
def test_the_pdfsig_recipe_trusts_a_ca_issued_signature(trust_services: Any, signed: dict[str, Path],
                                                        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if shutil.which("pdfsig") is None or shutil.which("certutil") is None:
        pytest.skip("poppler's pdfsig or NSS's certutil is not installed (Debian poppler-utils, libnss3-tools)")
    from auditor.inputs.spec import SigningSpec
    from auditor.trust.keys import load_material
    from auditor.trust.pdf_sign import sign_pdf

    now = dt.datetime.now(dt.UTC)
    issuer = trust_services.issue_ca("Recipe Issuing CA")
    cert, key = trust_services.issue_signer("Recipe signer", not_before=now - dt.timedelta(hours=1),
                                            not_after=now + dt.timedelta(days=30), issuer=issuer)
    p12 = trust_services.write_pkcs12(tmp_path / "signer.p12", cert, key, PASS, issuer=issuer)
    monkeypatch.setenv("TEST_KEY_PASS", PASS)
    material = load_material(SigningSpec(key=p12, passphrase_env="TEST_KEY_PASS",
                                         bundle_key=signed["keys"] / "bundle-ed25519.pem"),
                             spec_file=tmp_path / "audit.yaml")
    pdf = (signed["run"] / "report.pdf").read_bytes()
    (tmp_path / "report.pdf").write_bytes(sign_pdf(pdf[:pdf.index(b"%%EOF") + 5] + b"\n", material))
    root = trust_services.write_root_pem(tmp_path / "root.pem")
    result = run(recipe("pdfsig"), {"ROOT": str(root), "PDF": str(tmp_path / "report.pdf")}, tmp_path)
    assert result.returncode == 0, result.stderr
    assert "Signature Validation: Signature is Valid." in result.stdout, result.stdout
    assert "Certificate Validation: Certificate is Trusted." in result.stdout, result.stdout


@pytest.mark.slow
def test_the_token_recipe_makes_a_key_that_signs_and_verifies(signed: dict[str, Path], tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The recipe on a fresh SoftHSM2 token, then its key signs report.pdf through the spec's `signing.pkcs11` and
    `verify` trusts the certificate it wrote; the private key cannot be read off the token."""
    reason = softhsm.available()
    if reason is not None:
        pytest.skip(reason)
    folder = tmp_path / "softhsm"
    (folder / "tokens").mkdir(parents=True)
    conf = folder / "softhsm2.conf"
    conf.write_text(f"directories.tokendir = {folder / 'tokens'}\nobjectstore.backend = file\nlog.level = ERROR\n"
                    "slots.removable = false\nslots.mechanisms = ALL\nlibrary.reset_on_fork = false\n")
    module = softhsm.module_path()
    assert module is not None
    result = run(recipe("token"), {"MODULE": module, "SOFTHSM2_CONF": str(conf)}, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    cert_pem = tmp_path / "keys" / "report-signer-cert.pem"
    assert cert_pem.is_file() and "certificate: keys/report-signer-cert.pem" in result.stdout, result.stdout

    from pkcs11 import Attribute, ObjectClass

    from auditor.inputs.spec import Pkcs11Spec, SigningSpec
    from auditor.trust.certificates import load_trust
    from auditor.trust.keys import load_material
    from auditor.trust.pdf_sign import sign_pdf
    from auditor.trust.pdf_verify import check_pdf_signature

    monkeypatch.setenv("AUDITOR_PKCS11_PIN", "1234")
    with softhsm.environment(conf):
        softhsm.load_module(module, conf)
        lib = softhsm.load_module(module, conf)
        with lib.get_token(token_label="audit-signing").open(user_pin="1234") as session:
            private = session.get_key(object_class=ObjectClass.PRIVATE_KEY, label="report-signer")
            assert private[Attribute.SENSITIVE] and not private[Attribute.EXTRACTABLE]
        material = load_material(SigningSpec(
            pkcs11=Pkcs11Spec(module=Path(module), token="audit-signing", key_label="report-signer"),
            pin_env="AUDITOR_PKCS11_PIN"), spec_file=tmp_path / "audit.yaml")
        pdf = (signed["run"] / "report.pdf").read_bytes()
        signed_pdf = sign_pdf(pdf[:pdf.index(b"%%EOF") + 5] + b"\n", material)
        material.close()
    verdicts = check_pdf_signature(signed_pdf, load_trust(cert_pem))
    assert verdicts[0].ok and "Report signer" in verdicts[0].message, verdicts[0].line()
