"""The approver's sign-off (issue 34, item 5): `auditor approve` signs a decision over a run's bundle, `verify` shows
it, and every way of misusing it is refused or fails: a tampered or copied approval, the tool's own key, an unsigned
or changed run, a second decision.

One signed run per module (`signed`, from test_signing); every test approves its own copy, except the register test,
which approves the run `auditor report` recorded and removes the approval afterwards."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from auditor.cli import app
from tests.conftest import PASS, _copy

runner = CliRunner()
AS = "Jane Roe, Head of Model Risk"


@pytest.fixture(scope="module")
def approver(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The approver's own identity (another key and certificate than the tool's)."""
    folder = tmp_path_factory.mktemp("approver") / "keys"
    result = runner.invoke(app, ["keygen", "--out", str(folder), "--passphrase-env", "TEST_KEY_PASS", "--name",
                                 "Jane Roe", "--organisation", "Example Bank"], env={"TEST_KEY_PASS": PASS})
    assert result.exit_code == 0, result.output
    return folder


TOOL_KEYS: dict[str, Path] = {}


@pytest.fixture(autouse=True)
def _tool_keys(signed: dict[str, Path]) -> None:
    TOOL_KEYS["keys"] = signed["keys"]


def approve(run: Path, key: Path, *args: str, name: str = AS, env: dict[str, str | None] | None = None):
    """`auditor approve` with the tool's keys of the session's signed run, to verify it first as `verify` would."""
    keys = TOOL_KEYS["keys"]
    result = runner.invoke(app, ["approve", str(run), "--as", name, "--key", str(key), "--passphrase-env",
                                 "TEST_KEY_PASS", "--pubkey", str(keys / "bundle-ed25519.pub.pem"), "--trust",
                                 str(keys / "signer-cert.pem"), *args],
                           env={"TEST_KEY_PASS": PASS} if env is None else env)
    assert "Traceback" not in result.output, result.output
    return result


def verify(signed: dict[str, Path], run: Path, *trust: Path) -> tuple[int, str]:
    keys = signed["keys"]
    extra = [arg for path in trust for arg in ("--approver-trust", str(path))]
    result = runner.invoke(app, ["verify", str(run), "--trust", str(keys / "signer-cert.pem"), "--pubkey",
                                 str(keys / "bundle-ed25519.pub.pem"), *extra])
    assert "Traceback" not in result.output, result.output
    lines = result.output.splitlines()
    assert all(re.match(r"(OK  |FAIL|SKIP) \S", line) for line in lines[:-1]), result.output
    assert lines[-1].startswith("verdict: "), result.output
    return result.exit_code, result.output


def _one_error_line(result) -> str:
    assert result.exit_code == 2, result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


def _envelope(run: Path) -> dict:
    return json.loads((run / "approval.dsse.json").read_text())


def _statement(run: Path) -> dict:
    return json.loads(base64.b64decode(_envelope(run)["payload"]))


def test_approve_then_verify_shows_the_approval(signed: dict[str, Path], approver: Path) -> None:
    run = _copy(signed, "approved")
    result = approve(run, approver / "signer.p12")
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == str(run / "approval.dsse.json")
    assert f'approved: {run} by {AS} (certificate ' in result.stderr
    assert "which does not hold this run" in result.stderr  # a copy: the register knows the original only

    statement = _statement(run)
    bundle_sha256 = hashlib.sha256((run / "bundle.dsse.json").read_bytes()).hexdigest()
    assert statement["predicateType"] == "urn:auditor:approval:v1"
    assert statement["subject"] == [{"name": "bundle.dsse.json", "digest": {"sha256": bundle_sha256}}]
    predicate = statement["predicate"]
    assert predicate["decision"] == "approved" and predicate["approver"] == AS and predicate["reason"] is None
    assert predicate["approver_certificate"]["subject"] == "O=Example Bank,CN=Jane Roe"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", predicate["time"])
    evidence = json.loads((run / "evidence.json").read_text())
    assert predicate["run"]["opinion"] == evidence["opinion"]
    assert predicate["run"]["audit_title"] == evidence["audit"]["title"]
    assert predicate["run"]["evaluated_on"] == evidence["run"]["evaluated_on"]
    assert "BEGIN CERTIFICATE" in _envelope(run)["signatures"][0]["certificate"]

    code, output = verify(signed, run)
    assert code == 0, output
    when = predicate["time"].replace("T", " ").replace("Z", " UTC")
    assert (f'OK   approval: approved by "{AS}" (certificate O=Example Bank,CN=Jane Roe) on {when} (a time claimed '
            "by the approver: no trusted timestamp), covers this run's bundle") in output, output
    assert "SKIP approval (approver): identity not checked against a trusted certificate" in output
    assert output.rstrip().endswith("verdict: VERIFIED")

    code, output = verify(signed, run, signed["keys"] / "signer-cert.pem", approver / "signer-cert.pem")
    assert code == 0 and "OK   approval (approver): certificate trusted (O=Example Bank,CN=Jane Roe" in output
    code, output = verify(signed, run, signed["keys"] / "signer-cert.pem")
    assert code == 1 and "FAIL approval (approver): certificate not trusted" in output

    again = approve(run, approver / "signer.p12", "--reject", "--reason", "changed my mind")
    assert "the run has a decision already (approved by" in _one_error_line(again)
    assert _statement(run)["predicate"]["decision"] == "approved"

    # the decision inside report.pdf (issue 57, item 4): the status on every page, the cover's field signed
    assert "note: report.pdf: approved in its approval field, the status on every page filled" in result.stderr
    day = predicate["time"][:10]
    assert set(_statuses(run / "report.pdf")) == {f"Approved by {AS}, {day}"}
    assert predicate["report_pdf"]["field"] == "AuditorApproval"
    assert "OK   report.pdf (approval signature): intact, by Organization: Example Bank, Common Name: Jane Roe (the " \
        "certificate approval.dsse.json names), approved" in output, output
    assert "covers its revision, and what follows only records the approval" in output, output
    if shutil.which("pdfsig"):
        import subprocess

        listed = subprocess.run(["pdfsig", str(run / "report.pdf")], capture_output=True, text=True, timeout=60).stdout
        assert listed.count("Signature Validation: Signature is Valid.") == 2, listed
        assert "Field Name: AuditorApproval" in listed and "Jane Roe" in listed, listed
    approval = (run / "approval.dsse.json").read_bytes()
    (run / "approval.dsse.json").unlink()  # the signature inside the PDF alone is no approval
    code, output = verify(signed, run)
    assert code == 1 and "FAIL report.pdf (approval signature): report.pdf is signed in its approval field but " \
        "the run has no approval.dsse.json" in output, output
    (run / "approval.dsse.json").write_bytes(approval)
    from tests.helpers import amend_pdf_title

    amend_pdf_title(run / "report.pdf", "Amended after approval")  # a change after the approval
    code, output = verify(signed, run)
    assert code == 1 and "FAIL report.pdf (signature): changed after signing: revision 3 changes /Title" in output
    assert "FAIL report.pdf (approval signature)" in output, output


def _statuses(pdf: Path) -> list[str]:
    """The approval status each page of report.pdf shows (its status field's widget on the page)."""
    from auditor.trust.pdf_revisions import pdf_reader

    reader = pdf_reader(pdf.read_bytes())
    found = []
    for page in reader.root["/Pages"]["/Kids"]:
        widgets = [a.get_object() for a in page.get_object()["/Annots"] if "/Parent" in a.get_object()
                   and str(a.get_object()["/Parent"].get("/T")) == "AuditorStatus"]
        assert len(widgets) == 1, "one status a page"
        found.append(str(widgets[0]["/V"]))
    return found


def test_reject_needs_a_reason_and_verify_shows_it(signed: dict[str, Path], approver: Path) -> None:
    run = _copy(signed, "rejected")
    assert "--reject needs --reason" in _one_error_line(approve(run, approver / "signer.p12", "--reject"))
    assert not (run / "approval.dsse.json").exists()
    result = approve(run, approver / "signer.p12", "--reject", "--reason", 'fairness "exposure" gap too wide')
    assert result.exit_code == 0, result.output
    predicate = _statement(run)["predicate"]
    assert predicate["decision"] == "rejected" and predicate["reason"] == 'fairness "exposure" gap too wide'
    code, output = verify(signed, run)
    assert code == 0, output
    when = predicate["time"].replace("T", " ").replace("Z", " UTC")
    assert (f'OK   approval: rejected by "{AS}" (certificate O=Example Bank,CN=Jane Roe) on {when} (a time claimed '
            'by the approver: no trusted timestamp) (reason: "fairness \\"exposure\\" gap too wide"), covers') \
        in output, output
    assert set(_statuses(run / "report.pdf")) == {f"Rejected by {AS}, {predicate['time'][:10]}"}


def test_tampered_or_malformed_approval_fails(signed: dict[str, Path], approver: Path) -> None:
    run = _copy(signed, "tampered")
    assert approve(run, approver / "signer.p12", "--reject", "--reason", "no").exit_code == 0
    genuine = (run / "approval.dsse.json").read_text()
    envelope = json.loads(genuine)
    statement = json.loads(base64.b64decode(envelope["payload"]))
    statement["predicate"]["decision"] = "approved"
    envelope["payload"] = base64.b64encode(json.dumps(statement).encode()).decode()
    (run / "approval.dsse.json").write_text(json.dumps(envelope))
    code, output = verify(signed, run)
    assert code == 1 and "FAIL approval: signature invalid" in output
    assert output.splitlines()[-1] == "verdict: NOT VERIFIED (1 problem)", output

    # a second `payload` key: Python would read the last, other readers the first
    forged = genuine.replace('"payload":', f'"payload": "{envelope["payload"]}", "payload":', 1)
    (run / "approval.dsse.json").write_text(forged)
    code, output = verify(signed, run)
    assert code == 1 and "FAIL approval: malformed: duplicate key 'payload'" in output

    (run / "approval.dsse.json").write_text("{not json")
    code, output = verify(signed, run)
    assert code == 1 and "FAIL approval: malformed: approval.dsse.json is not JSON" in output


def test_approval_copied_to_another_run_fails(signed: dict[str, Path], approver: Path) -> None:
    first = _copy(signed, "first")
    assert approve(first, approver / "signer.p12").exit_code == 0
    other = _copy(signed, "other")
    bundle = other / "bundle.dsse.json"  # the same statement, validly signed, in other bytes: another bundle
    bundle.write_text(json.dumps(json.loads(bundle.read_text())))
    code, output = verify(signed, other)
    assert code == 0 and "SKIP approval: the run is not approved (no approval.dsse.json)" in output
    shutil.copy(first / "approval.dsse.json", other / "approval.dsse.json")
    code, output = verify(signed, other)
    assert code == 1, output
    assert re.search(r"FAIL approval: approved by .*: covers another run: it names bundle sha256 \w{12}…, this "
                     r"run's is \w{12}…", output), output
    assert output.splitlines()[-1] == "verdict: NOT VERIFIED (1 problem)", output


def test_the_tools_own_key_cannot_approve(signed: dict[str, Path]) -> None:
    run = _copy(signed, "self-approved")
    line = _one_error_line(approve(run, signed["keys"] / "signer.p12"))
    assert "the approver's key is the tool's signing identity" in line and "four eyes" in line
    assert not (run / "approval.dsse.json").exists()
    assert not [p for p in run.iterdir() if p.name.startswith(".approval")]


def test_unsigned_or_changed_runs_are_refused(signed: dict[str, Path], approver: Path, tmp_path: Path) -> None:
    key = approver / "signer.p12"
    unsigned = _copy(signed, "unsigned")
    (unsigned / "bundle.dsse.json").unlink()
    assert "the run is not signed (no bundle.dsse.json)" in _one_error_line(approve(unsigned, key))

    changed = _copy(signed, "changed")
    (changed / "report.html").write_text("<p>edited after signing</p>")
    line = _one_error_line(approve(changed, key))
    assert "the run does not match its bundle (1 problem: report.html: sha256 differs" in line
    assert "auditor verify" in line

    extra = _copy(signed, "extra")
    (extra / "notes.txt").write_text("added")
    assert "notes.txt: present but not listed" in _one_error_line(approve(extra, key))

    assert "no such run folder" in _one_error_line(approve(tmp_path / "nowhere", key))
    for run in (unsigned, changed, extra):
        assert not (run / "approval.dsse.json").exists()


def test_bad_key_or_passphrase_is_one_line(signed: dict[str, Path], approver: Path) -> None:
    run = _copy(signed, "bad-key")
    line = _one_error_line(approve(run, approver / "signer.p12", env={"TEST_KEY_PASS": "wrong"}))
    assert "wrong passphrase in TEST_KEY_PASS" in line
    assert "no such key file" in _one_error_line(approve(run, approver / "missing.p12"))
    assert "--as is empty" in _one_error_line(approve(run, approver / "signer.p12", name="  "))
    # no variable (None removes one another test left set), no terminal: the prompt gets nothing
    unset = approve(run, approver / "signer.p12", env={"TEST_KEY_PASS": None})
    assert unset.exit_code == 1 and "nothing was written" in unset.output
    assert not (run / "approval.dsse.json").exists()


def test_untrusted_approver_name_prints_escaped_on_one_line(signed: dict[str, Path], approver: Path) -> None:
    run = _copy(signed, "escaped")
    name = "Jane\nOK   approval: forged\u202e"
    assert approve(run, approver / "signer.p12", name=name).exit_code == 0
    code, output = verify(signed, run)
    assert code == 0 and 'approved by "Jane⟨U+000A⟩OK   approval: forged⟨U+202E⟩"' in output
    assert "\u202e" not in output and not any(line.startswith("OK   approval: forged") for line in
                                              output.splitlines())


def test_approval_is_recorded_in_the_register(signed: dict[str, Path], approver: Path, tmp_path: Path) -> None:
    from auditor.core.files import sha256_file
    from auditor.register.store import Register

    run = _copy(signed, "registered")  # recorded, like the session's run, in the register its bundle names
    location = signed["run"].parent / "register.sqlite"
    store = Register(location)
    run_id = store.record(json.loads((run / "evidence.json").read_text()), system="registered-copy", run_dir=run,
                          evidence_sha256=sha256_file(run / "evidence.json"),
                          bundle_sha256=sha256_file(run / "bundle.dsse.json"), actor="test")
    store.close()
    unapproved = (run / "report.pdf").read_bytes()  # the decision is signed inside it too: undone below
    try:
        result = approve(run, approver / "signer.p12", "--reason", "fit for release")
        assert result.exit_code == 0, result.output
        assert f"note: recorded in the register {location}" in result.stderr
        register = Register(location)
        rows = [row for row in register.approvals() if row["run_id"] == run_id]
        register.close()
        payload = base64.b64decode(_envelope(run)["payload"])
        assert len(rows) == 1, rows
        assert rows[0]["decision"] == "approved" and rows[0]["approver"] == "O=Example Bank,CN=Jane Roe", \
            "the register names the certificate's subject, not the free text of --as"
        assert rows[0]["reason"] == "fit for release"
        assert rows[0]["bundle_sha256"] == hashlib.sha256((run / "bundle.dsse.json").read_bytes()).hexdigest()
        assert rows[0]["statement_sha256"] == hashlib.sha256(payload).hexdigest()
    finally:
        (run / "approval.dsse.json").unlink(missing_ok=True)
        (run / "report.pdf").write_bytes(unapproved)

    elsewhere = tmp_path / "moved" / run.name  # moved: the decision goes to the register its bundle names
    shutil.copytree(run, elsewhere)
    result = approve(elsewhere, approver / "signer.p12")
    assert result.exit_code == 0 and f"note: recorded in the register {location}, which does " \
        "not hold this run" in result.stderr, result.stderr
    assert (elsewhere / "approval.dsse.json").is_file()
    from auditor.register.rebuild import Trust, rebuild  # a register rebuilt from the verified folders has it too

    unverified = rebuild(elsewhere.parent, str(tmp_path / "blind.sqlite"))
    assert unverified.runs == [elsewhere] and unverified.approvals == 0, "without keys nothing counts as approved"
    assert "not indexed, the run or the approval does not verify" in unverified.left_out[0]
    keys = signed["keys"]
    trusted = Trust(trust=[keys / "signer-cert.pem"], pubkey=keys / "bundle-ed25519.pub.pem",
                    approver_trust=[approver / "signer-cert.pem"])
    assert rebuild(elsewhere.parent, str(tmp_path / "rebuilt.sqlite"), trust=trusted).runs == [elsewhere]
    rebuilt = Register(tmp_path / "rebuilt.sqlite").approvals()
    assert [(r["decision"], r["approver"], r["run_id"] is not None) for r in rebuilt] == \
        [("approved", "O=Example Bank,CN=Jane Roe", True)]

    off = _copy(signed, "register-off")
    result = approve(off, approver / "signer.p12", "--register", "off")
    assert result.exit_code == 0 and "not recorded in a register (--register off)" in result.stderr

    missing = _copy(signed, "register-missing")
    line = _one_error_line(approve(missing, approver / "signer.p12", "--register", str(tmp_path / "no.sqlite")))
    assert "no register here" in line and not (missing / "approval.dsse.json").exists()


def _p12(folder: Path, key) -> Path:
    """A PKCS#12 with `key` and a self-signed certificate, as an organisation's own might be."""
    import datetime as dt

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.serialization import pkcs12
    from cryptography.x509.oid import NameOID

    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Risk Officer")])
    now = dt.datetime.now(dt.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(days=1))
            .not_valid_after(now + dt.timedelta(days=30))
            .sign(key, None if type(key).__name__.startswith("Ed") else hashes.SHA256()))
    path = folder / f"{type(key).__name__}.p12"
    path.write_bytes(pkcs12.serialize_key_and_certificates(b"officer", key, cert, None,
                                                           serialization.BestAvailableEncryption(PASS.encode())))
    return path


def test_ecdsa_and_ed25519_approver_keys(signed: dict[str, Path], tmp_path: Path) -> None:
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519

    for key in (ec.generate_private_key(ec.SECP256R1()), ed25519.Ed25519PrivateKey.generate()):
        run = _copy(signed, f"approved-{type(key).__name__}")
        result = approve(run, _p12(tmp_path, key), "--register", "off")
        assert result.exit_code == 0, result.output
        code, output = verify(signed, run)
        assert code == 0 and 'OK   approval: approved by "Jane Roe, Head of Model Risk" (certificate CN=Risk Officer)' \
            in output, output
        # a PDF signed with ECDSA or EdDSA is PDF 2.0, which the PDF/A-3 report is not: it keeps its draft status
        assert "note: report.pdf keeps its draft status: an ECDSA or Ed25519 signature" in result.stderr
        assert set(_statuses(run / "report.pdf")) == {"Draft — awaiting approval by Head of Model Risk (demo)"}
    bad = runner.invoke(app, ["verify", str(run), "--approver-trust", str(tmp_path / "none.pem")])
    assert bad.exit_code == 2 and "no such certificate" in bad.output


def test_malformed_approvals_fail_without_crashing(signed: dict[str, Path], approver: Path) -> None:
    """Validly signed by the approver but wrong in shape, or wrong in the envelope: a FAIL line each, never exit 3."""
    from auditor.trust import dsse, identity
    from auditor.trust.layout import PAYLOAD_TYPE

    run = _copy(signed, "malformed")
    assert approve(run, approver / "signer.p12", "--register", "off").exit_code == 0
    genuine = _envelope(run)
    key = identity.load_pkcs12_identity(approver / "signer.p12", PASS)

    def signed_as(statement: object) -> dict:
        payload = json.dumps(statement).encode()
        sig = key.sign(dsse.pae(PAYLOAD_TYPE, payload))
        return {**genuine, "payload": base64.b64encode(payload).decode(),
                "signatures": [{**genuine["signatures"][0], "sig": base64.b64encode(sig).decode()}]}

    statement = _statement(run)
    other_cert = (signed["keys"] / "signer-cert.pem").read_text()
    cases = {
        "not an object": [1, 2],
        "no signatures": {**genuine, "signatures": []},
        "certificate not PEM": {**genuine, "signatures": [{**genuine["signatures"][0], "certificate": "x"}]},
        "another certificate": {**genuine, "signatures": [{**genuine["signatures"][0], "certificate": other_cert}]},
        "payload not base64": {**genuine, "payload": "%%%"},
        "subject renamed": signed_as({**statement, "subject": [{**statement["subject"][0], "name": "report.pdf"}]}),
        "two subjects": signed_as({**statement, "subject": statement["subject"] * 2}),
        "decision unknown": signed_as({**statement, "predicate": {**statement["predicate"], "decision": "maybe"}}),
        "no predicate": signed_as({**statement, "predicate": None}),
        "time not UTC": signed_as({**statement, "predicate": {**statement["predicate"], "time": "yesterday"}}),
        "certificate not named": signed_as({**statement, "predicate": {**statement["predicate"],
                                                                        "approver_certificate": {"sha256": "0"}}}),
        "opinion changed": signed_as({**statement, "predicate": {**statement["predicate"],
                                                                  "run": {**statement["predicate"]["run"],
                                                                          "opinion": "clean"}}}),
        "rejected without reason": signed_as({**statement, "predicate": {**statement["predicate"],
                                                                          "decision": "rejected"}}),
    }
    expected = {"another certificate": "signature invalid", "certificate not named": "another approver certificate",
                "opinion changed": "states another opinion than this run's bundle"}
    for case, envelope in cases.items():
        (run / "approval.dsse.json").write_text(json.dumps(envelope))
        code, output = verify(signed, run)
        assert code == 1, (case, output)
        assert re.search(r"^FAIL approval: .*" + re.escape(expected.get(case, "malformed: ")), output, re.M), \
            (case, output)


def test_the_tools_own_key_in_a_new_certificate_cannot_approve_a_run_without_a_pdf(signed: dict[str, Path],
                                                                                    tmp_path: Path) -> None:
    """Issue 55: with no report.pdf in the run, the tool's RSA signing key wrapped in a fresh certificate was taken
    for an approver. The bundle's predicate names the signer's certificate, so its key is known either way; a
    hand-made approval with that key fails verify too."""
    from cryptography.hazmat.primitives.serialization import pkcs12

    run = _copy(signed, "no-pdf-own-key")
    key, _cert, _ = pkcs12.load_key_and_certificates((signed["keys"] / "signer.p12").read_bytes(), PASS.encode())
    wrapped = _p12(tmp_path, key)
    line = _one_error_line(approve(run, wrapped))
    assert "the approver's key is the tool's signing identity" in line, line


def test_a_run_that_does_not_verify_is_not_approved(signed: dict[str, Path], approver: Path) -> None:
    """`approve` runs verify's checks with the tool's keys: a run whose bundle verifies by hash but whose PDF
    signature is not trusted by the given --trust is refused, naming the first failed check."""
    run = _copy(signed, "not-verified")
    result = runner.invoke(app, ["approve", str(run), "--as", AS, "--key", str(approver / "signer.p12"),
                                 "--passphrase-env", "TEST_KEY_PASS", "--pubkey",
                                 str(signed["keys"] / "bundle-ed25519.pub.pem"), "--trust",
                                 str(approver / "signer-cert.pem")], env={"TEST_KEY_PASS": PASS})
    line = _one_error_line(result)
    assert "the run does not verify" in line and "report.pdf (signature)" in line, line
    assert not (run / "approval.dsse.json").exists()
