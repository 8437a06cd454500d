"""Signing: keygen, a signed run (PAdES PDF + DSSE bundle), `auditor verify`, and tampering of each kind."""

from __future__ import annotations

import base64
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from auditor.cli import app
from tests.conftest import PASS, _bundle_key, _copy, _keygen, _statement, verify

runner = CliRunner()


def test_keygen_writes_private_files_and_never_overwrites(signed: dict[str, Path]) -> None:
    keys = signed["keys"]
    assert (keys / "signer.p12").stat().st_mode & 0o077 == 0
    assert (keys / "bundle-ed25519.pem").read_bytes().startswith(b"-----BEGIN ENCRYPTED PRIVATE KEY-----")
    again = runner.invoke(app, ["keygen", "--out", str(keys), "--passphrase-env", "TEST_KEY_PASS"],
                          env={"TEST_KEY_PASS": PASS})
    assert again.exit_code == 2 and "exists already" in again.output


def test_signed_run_verifies(signed: dict[str, Path]) -> None:
    run = signed["run"]
    assert {p.name for p in run.iterdir()} == {"evidence.json", "report.html", "report.pdf", "bundle.dsse.json",
                                               "inputs"}
    assert (run / "report.pdf").read_bytes().startswith(b"%PDF-1.7")  # RSA keeps PDF 1.7 (PDF/A-3)
    statement = json.loads(base64.b64decode(json.loads((run / "bundle.dsse.json").read_text())["payload"]))
    names = {s["name"]: s["annotations"] for s in statement["subject"]}
    assert {"evidence.json", "report.html", "report.pdf"} <= set(names)
    roles = {a.get("role") for a in names.values()}
    assert {"spec", "model", "dataset", "background", "policy pack starter"} <= roles
    code, output = verify(signed, run)
    assert code == 0, output
    assert "OK   report.pdf (signature): intact, trusted" in output and output.rstrip().endswith("verdict: VERIFIED")
    html = (run / "report.html").read_text()
    assert "signed by" in html.lower()
    # the report tells its reader how to check it, with the exact command and the fingerprints to compare
    assert "auditor verify . --trust signer-cert.pem --pubkey bundle-ed25519.pub.pem" in html
    predicate = statement["predicate"]["signer"]
    assert predicate["certificate_sha256"] in html and predicate["bundle_keyid"] in html


def test_edited_html_fails(signed: dict[str, Path]) -> None:
    run = _copy(signed, "html-edited")
    data = bytearray((run / "report.html").read_bytes())
    data[500] ^= 0x01
    (run / "report.html").write_bytes(bytes(data))
    code, output = verify(signed, run)
    assert code == 1 and "FAIL report.html: sha256 differs" in output


def test_bytes_appended_to_pdf_fail(signed: dict[str, Path]) -> None:
    run = _copy(signed, "pdf-appended")
    with (run / "report.pdf").open("ab") as handle:
        handle.write(b"\n% appended after %%EOF\n")
    code, output = verify(signed, run)
    # the bundle pins the certified revision, which is intact; the bytes after it are no permitted revision
    assert code == 1 and "OK   report.pdf: sha256 of the certified revision" in output, output
    assert "FAIL report.pdf (signature): changed after signing: bytes added after signing that no approval signs" \
        in output, output


def test_extra_file_fails(signed: dict[str, Path]) -> None:
    run = _copy(signed, "extra-file")
    (run / "notes.txt").write_text("added later")
    code, output = verify(signed, run)
    assert code == 1 and "FAIL notes.txt: present but not listed in the bundle" in output


def test_edited_bundle_subject_fails(signed: dict[str, Path]) -> None:
    run = _copy(signed, "bundle-edited")
    envelope = json.loads((run / "bundle.dsse.json").read_text())
    statement = json.loads(base64.b64decode(envelope["payload"]))
    (run / "report.html").write_text("<p>forged</p>")
    import hashlib

    for subject in statement["subject"]:
        if subject["name"] == "report.html":
            subject["digest"]["sha256"] = hashlib.sha256(b"<p>forged</p>").hexdigest()
    envelope["payload"] = base64.b64encode(json.dumps(statement).encode()).decode()
    (run / "bundle.dsse.json").write_text(json.dumps(envelope))
    code, output = verify(signed, run)
    assert code == 1 and "FAIL bundle.dsse.json: signature does not verify" in output


def test_dotdot_and_absolute_artifact_paths_are_refused(signed: dict[str, Path]) -> None:
    """Even in a validly signed bundle (here re-signed with the right key), `..` and absolute paths are refused."""
    from cryptography.hazmat.primitives import serialization

    from auditor.trust.certificates import keyid
    from auditor.trust.dsse import pae
    from auditor.trust.layout import PAYLOAD_TYPE

    run = _copy(signed, "dotdot")
    envelope = json.loads((run / "bundle.dsse.json").read_text())
    statement = json.loads(base64.b64decode(envelope["payload"]))
    statement["subject"] += [{"name": "../outside.txt", "digest": {"sha256": "0" * 64}},
                             {"name": "/etc/passwd", "digest": {"sha256": "0" * 64}}]
    payload = json.dumps(statement).encode()
    key = serialization.load_pem_private_key((signed["keys"] / "bundle-ed25519.pem").read_bytes(),
                                             password=PASS.encode())
    envelope = {"payloadType": PAYLOAD_TYPE, "payload": base64.b64encode(payload).decode(),
                "signatures": [{"keyid": keyid(key.public_key()),
                                "sig": base64.b64encode(key.sign(pae(PAYLOAD_TYPE, payload))).decode()}]}
    (run / "bundle.dsse.json").write_text(json.dumps(envelope))
    code, output = verify(signed, run)
    assert code == 1 and "OK   bundle.dsse.json" in output
    assert "FAIL ../outside.txt: `..` in an artifact path: refused" in output
    assert "FAIL /etc/passwd: absolute path in the bundle: refused" in output


def test_untrusted_certificate_fails(signed: dict[str, Path], tmp_path: Path) -> None:
    other = _keygen(tmp_path / "other")
    code, output = verify(signed, signed["run"], trust=other / "signer-cert.pem")
    assert code == 1 and "FAIL report.pdf (signature): signer not trusted" in output
    no_keys = runner.invoke(app, ["verify", str(signed["run"])])
    assert no_keys.exit_code == 1 and "no --pubkey given" in no_keys.output and "no --trust" in no_keys.output


def test_missing_or_wrong_passphrase_is_bad_input(signed: dict[str, Path]) -> None:
    spec = signed["spec"]
    missing = runner.invoke(app, ["report", str(spec), "--quiet"], env={"TEST_KEY_PASS": None})
    assert missing.exit_code == 2
    lines = missing.output.strip().splitlines()
    assert len(lines) == 1 and "TEST_KEY_PASS is not set" in lines[0] and lines[0].startswith("error:")
    wrong = runner.invoke(app, ["report", str(spec), "--quiet"], env={"TEST_KEY_PASS": "wrong"})
    assert wrong.exit_code == 2 and "wrong passphrase" in wrong.output and len(wrong.output.strip().splitlines()) == 1
    assert runner.invoke(app, ["verify", str(spec.parent / "nope")]).exit_code == 2


def test_one_byte_flipped_inside_the_pdf_fails(signed: dict[str, Path]) -> None:
    run = _copy(signed, "pdf-flipped")
    data = bytearray((run / "report.pdf").read_bytes())
    data[len(data) // 3] ^= 0x01  # inside the signed byte range, away from the signature contents
    (run / "report.pdf").write_bytes(bytes(data))
    code, output = verify(signed, run)
    assert code == 1 and "FAIL report.pdf: sha256 of the certified revision" in output and "differs" in output
    assert "FAIL report.pdf (signature)" in output


def test_edited_evidence_fails(signed: dict[str, Path]) -> None:
    run = _copy(signed, "evidence-edited")
    evidence = json.loads((run / "evidence.json").read_text())
    evidence["opinion"] = "positive"  # a plausible forgery: same shape, different verdict
    evidence["audit"]["title"] += " (amended)"
    (run / "evidence.json").write_text(json.dumps(evidence, indent=2, sort_keys=True) + "\n")
    code, output = verify(signed, run)
    assert code == 1 and "FAIL evidence.json: sha256 differs" in output


def test_removed_file_fails(signed: dict[str, Path]) -> None:
    run = _copy(signed, "file-removed")
    (run / "report.html").unlink()
    code, output = verify(signed, run)
    assert code == 1 and "FAIL report.html: listed in the bundle but missing from the run folder" in output


def test_envelope_signed_by_another_key_fails(signed: dict[str, Path]) -> None:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from auditor.trust.dsse import pae

    run = _copy(signed, "other-key")
    envelope = json.loads((run / "bundle.dsse.json").read_text())
    forger = Ed25519PrivateKey.generate()
    message = pae(envelope["payloadType"], base64.b64decode(envelope["payload"]))
    envelope["signatures"] = [{"keyid": envelope["signatures"][0]["keyid"],
                               "sig": base64.b64encode(forger.sign(message)).decode("ascii")}]
    (run / "bundle.dsse.json").write_text(json.dumps(envelope))
    code, output = verify(signed, run)
    assert code == 1 and "signature does not verify with the given public key" in output


def test_incremental_update_to_the_pdf_fails(signed: dict[str, Path]) -> None:
    from tests.helpers import amend_pdf_title

    run = _copy(signed, "incremental")
    amend_pdf_title(run / "report.pdf", "Amended after signing")
    code, output = verify(signed, run)
    assert code == 1 and "OK   report.pdf: sha256 of the certified revision" in output, output
    assert "FAIL report.pdf (signature): changed after signing: revision 2 changes /Title of object" in output, output


# --- what verify prints, and what the predicate claims ------------------------------------------------------------

def _resign(run: Path, statement: dict, key) -> None:
    """Write bundle.dsse.json for `statement`, signed by `key` (an Ed25519 private key)."""
    from auditor.trust.certificates import keyid
    from auditor.trust.dsse import pae
    from auditor.trust.layout import PAYLOAD_TYPE

    payload = json.dumps(statement, sort_keys=True, separators=(",", ":")).encode()
    envelope = {"payloadType": PAYLOAD_TYPE, "payload": base64.b64encode(payload).decode(),
                "signatures": [{"keyid": keyid(key.public_key()),
                                "sig": base64.b64encode(key.sign(pae(PAYLOAD_TYPE, payload))).decode()}]}
    (run / "bundle.dsse.json").write_text(json.dumps(envelope))


def _rehash(statement: dict, run: Path, name: str) -> None:
    """The subject's digest of the file as it is now (report.pdf: its certified revision, as the tool pins it)."""
    import hashlib

    from auditor.trust.pdf_revisions import certified_length

    for subject in statement["subject"]:
        if subject["name"] == name:
            data = (run / name).read_bytes()
            if "certified_bytes" in subject.get("annotations", {}):
                subject["annotations"]["certified_bytes"] = certified_length(data)
                data = data[:certified_length(data)]
            subject["digest"]["sha256"] = hashlib.sha256(data).hexdigest()


def test_verify_prints_one_line_per_check_and_no_traceback(signed: dict[str, Path], tmp_path: Path) -> None:
    """The real command in its own process (pytest's log capture would hide what pyHanko logs): with a wrong
    certificate and with none, stderr stays empty and stdout holds one verdict line per check."""
    other = _keygen(tmp_path / "other") / "signer-cert.pem"
    for trust in (["--trust", str(other)], []):
        done = subprocess.run([sys.executable, "-m", "auditor", "verify", str(signed["run"]), "--pubkey",
                               str(signed["keys"] / "bundle-ed25519.pub.pem"), *trust],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 1 and done.stderr == "", done.stderr
        lines = done.stdout.strip().splitlines()
        assert all(re.match(r"(OK  |FAIL|SKIP) \S", line) for line in lines[:-1]), done.stdout
        assert lines[-1] == "verdict: NOT VERIFIED (1 problem)", done.stdout
        assert sum(line.startswith("FAIL report.pdf (signature)") for line in lines) == 1, done.stdout


def test_verify_checks_every_claim_of_the_predicate(signed: dict[str, Path]) -> None:
    code, output = verify(signed, signed["run"])
    assert code == 0, output
    assert "OK   bundle.dsse.json: Ed25519 signature valid" in output and "the key the predicate names" in output
    assert "OK   evidence.json (predicate)" in output
    assert "the certificate the predicate names" in output
    assert "OK   report.pdf (attached evidence.json): equals evidence.json" in output


def test_bundle_resigned_by_a_key_the_predicate_does_not_name(signed: dict[str, Path], tmp_path: Path) -> None:
    """A valid signature by another key (given as --pubkey) is not the signer the statement names."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    run = _copy(signed, "resigned-other-key")
    forger = Ed25519PrivateKey.generate()
    _resign(run, _statement(run), forger)
    pub = tmp_path / "forger.pub.pem"
    pub.write_bytes(forger.public_key().public_bytes(serialization.Encoding.PEM,
                                                     serialization.PublicFormat.SubjectPublicKeyInfo))
    result = runner.invoke(app, ["verify", str(run), "--trust", str(signed["keys"] / "signer-cert.pem"),
                                 "--pubkey", str(pub)])
    assert result.exit_code == 1, result.output
    assert "FAIL bundle.dsse.json: signature valid with key" in result.output
    assert "but the predicate names key" in result.output


def test_predicate_that_disagrees_with_evidence_fails(signed: dict[str, Path]) -> None:
    run = _copy(signed, "predicate-opinion")
    statement = _statement(run)
    statement["predicate"]["opinion"] = "positive" if statement["predicate"]["opinion"] != "positive" else "adverse"
    _resign(run, statement, _bundle_key(signed["keys"]))
    code, output = verify(signed, run)
    assert code == 1 and "OK   bundle.dsse.json" in output
    assert "FAIL evidence.json (predicate): the bundle's predicate states another opinion" in output


ONE_PAGE = "<!DOCTYPE html><html lang='en'><head><title>Report</title></head><body><p>The report.</p></body></html>"


def _render(run: Path, attachment: bytes) -> bytes:
    """An unsigned one-page PDF of the run's day with `attachment` as its evidence.json: where only the attachment
    matters, a page that lays out in a tenth of the time the report takes."""
    from auditor.report.pdf import fixed_date, render_pdf

    evaluated_on = json.loads((run / "evidence.json").read_text())["run"]["evaluated_on"]
    return render_pdf(ONE_PAGE, attachment=attachment, date=fixed_date(evaluated_on))


def _material(keys: Path, spec: Path):
    from auditor.inputs.spec import SigningSpec
    from auditor.trust.keys import load_material

    return load_material(SigningSpec(key=keys / "signer.p12", passphrase_env="TEST_KEY_PASS",
                                     bundle_key=keys / "bundle-ed25519.pem"), spec_file=spec)


@pytest.mark.slow
def test_pdf_signed_with_a_certificate_the_predicate_does_not_name(signed: dict[str, Path], tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """report.pdf re-signed by another identity (trusted by the verifier), the bundle re-signed by the right key
    over the new hash: only the predicate's certificate_sha256 tells."""
    from auditor.trust.pdf_attachment import attachment
    from auditor.trust.pdf_sign import sign_pdf

    monkeypatch.setenv("TEST_KEY_PASS", PASS)
    other = _keygen(tmp_path / "other")
    run = _copy(signed, "pdf-other-certificate")
    pdf = (run / "report.pdf").read_bytes()
    unsigned = pdf[:pdf.index(b"%%EOF") + len(b"%%EOF\n")]  # the PDF as rendered: its first revision, unsigned
    assert b"/ByteRange" not in unsigned and attachment(unsigned, "evidence.json") == attachment(pdf, "evidence.json")
    (run / "report.pdf").write_bytes(sign_pdf(unsigned, _material(other, signed["spec"])))
    statement = _statement(run)
    _rehash(statement, run, "report.pdf")
    _resign(run, statement, _bundle_key(signed["keys"]))
    code, output = verify(signed, run, trust=other / "signer-cert.pem")
    assert code == 1, output
    assert "OK   report.pdf: sha256 of the certified revision" in output, output
    assert "OK   report.pdf (attached evidence.json)" in output
    assert re.search(r"FAIL report.pdf \(signature\): signed with certificate \w+…, but the bundle's predicate "
                     r"names \w+…", output), output


@pytest.mark.slow
def test_pdf_whose_attached_evidence_differs_fails(signed: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """A PDF rendered with another evidence.json attached, signed by the right keys: every signature holds, the
    attachment does not match the folder's evidence.json."""
    from auditor.trust.pdf_sign import sign_pdf

    monkeypatch.setenv("TEST_KEY_PASS", PASS)
    run = _copy(signed, "pdf-attachment")
    evidence = json.loads((run / "evidence.json").read_text())
    evidence["run"] = {"evaluated_on": evidence["run"]["evaluated_on"]}
    evidence["evidence"]["ranking_quality"]["metrics"]["ranking_quality.ndcg@10.mean"] = 0.99
    (run / "report.pdf").write_bytes(sign_pdf(_render(run, json.dumps(evidence).encode()),
                                              _material(signed["keys"], signed["spec"])))
    statement = _statement(run)
    _rehash(statement, run, "report.pdf")
    _resign(run, statement, _bundle_key(signed["keys"]))
    code, output = verify(signed, run)
    assert code == 1 and "OK   report.pdf (signature): intact, trusted" in output, output
    assert ("FAIL report.pdf (attached evidence.json): differs from evidence.json at "
            "evidence.ranking_quality.metrics.ranking_quality.ndcg@10.mean") in output, output


def test_verify_refuses_a_fifo_as_a_key(signed: dict[str, Path], tmp_path: Path) -> None:
    """A named pipe given as --trust or --pubkey would block the read forever: refused as bad input."""
    import os

    pipe = tmp_path / "key.pem"
    os.mkfifo(pipe)
    for option, other in (("--trust", "--pubkey"), ("--pubkey", "--trust")):
        keys = {"--trust": signed["keys"] / "signer-cert.pem", "--pubkey": signed["keys"] / "bundle-ed25519.pub.pem"}
        result = runner.invoke(app, ["verify", str(signed["run"]), option, str(pipe), other, str(keys[other])])
        assert result.exit_code == 2 and "FIFO" in result.output and len(result.output.strip().splitlines()) == 1


@pytest.mark.slow  # a light audit with two PDFs, each signed
def test_the_run_s_other_pdf_documents_are_certified_and_verified(signed: dict[str, Path], tmp_path: Path) -> None:
    """Issue 56: a run's dsa-audit.pdf is certified as report.pdf is (without the approval form), so a regulator
    opening it sees the signature; verify checks its signature and attachment, and an edit made after signing
    fails on its own line."""
    import yaml
    from pyhanko.pdf_utils.reader import PdfFileReader

    from tests.helpers import amend_pdf_title, bookstore_under

    spec_path = bookstore_under(tmp_path, policies=["eu-dsa-art27-34"], provider={"very_large_platform": True},
                                documents=("report", "dsa-audit"))
    spec = yaml.safe_load(spec_path.read_text())
    spec["evidence"] = [item for item in spec["evidence"] if next(iter(item)) in (
        "ranking_quality", "global_importance", "disclosure_consistency")]
    spec["output"]["formats"] = ["pdf"]
    keys = signed["keys"]
    spec["signing"] = {"key": str(keys / "signer.p12"), "passphrase_env": "TEST_KEY_PASS",
                       "bundle_key": str(keys / "bundle-ed25519.pem")}
    spec_path.write_text(yaml.safe_dump(spec))
    done = runner.invoke(app, ["report", str(spec_path), "--quiet", "--fail-on", "never"],
                         env={"TEST_KEY_PASS": PASS})
    assert done.exit_code == 0, done.output
    run = Path(done.stdout.strip()).parent
    with (run / "dsa-audit.pdf").open("rb") as handle:
        reader = PdfFileReader(handle, strict=False)
        assert [s.field_name for s in reader.embedded_regular_signatures] == ["AuditorCertification"]
        assert "/AcroForm" in reader.root and all("AuditorStatus" not in str(f.get_object().get("/T"))
                                                  for f in reader.root["/AcroForm"]["/Fields"])  # no approval form
    code, output = verify(signed, run)
    assert code == 0, output
    for line in ("OK   dsa-audit.pdf (signature): intact, trusted", "OK   dsa-audit.pdf (attached evidence.json)",
                 "OK   report.pdf (signature): intact, trusted"):
        assert line in output, output
    amend_pdf_title(run / "dsa-audit.pdf", "Amended after signing")
    code, output = verify(signed, run)
    assert code == 1 and "FAIL dsa-audit.pdf (signature): changed after signing" in output, output
    assert "OK   report.pdf (signature)" in output


def test_restamp_extends_report_pdf_and_each_document_the_run_certified(signed: dict[str, Path]) -> None:
    """What `auditor restamp` appends to: report.pdf whatever it holds (its own checks say what is wrong), then each
    other PDF of the run that carries the tool's certification; a document a run signed before documents were signed
    (no certification) is left as it is."""
    import shutil

    from auditor.trust.restamp import _signed_pdfs

    run = _copy(signed, "restamp-documents")
    shutil.copy(run / "report.pdf", run / "dsa-audit.pdf")  # certified by the tool, as a signed run's documents are
    (run / "ll144-summary.pdf").write_bytes(b"%PDF-1.7\n% an unsigned document of an older run\n%%EOF\n")
    assert [p.name for p in _signed_pdfs(run)] == ["report.pdf", "dsa-audit.pdf"]
    (run / "report.pdf").unlink()
    (run / "report.pdf").symlink_to(run / "dsa-audit.pdf")  # still restamped, so its own read refuses the link
    assert [p.name for p in _signed_pdfs(run)] == ["report.pdf", "dsa-audit.pdf"]
