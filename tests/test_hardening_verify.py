"""`auditor verify` against an adversary (issue 33): duplicate JSON keys, entries of the run folder that are not
listed regular files, names that would print a forged line, folder walks that overflowed, malformed bundles that
crashed verify (exit 3), paths a forged bundle names outside the run folder.

One signed run per module (`signed`, from test_signing); every test tampers with its own copy."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from auditor.cli import app
from auditor.trust import keys as signing_keys
from auditor.trust.certificates import keyid
from auditor.trust.dsse import pae
from auditor.trust.layout import MAX_WALK_DEPTH, PAYLOAD_TYPE
from auditor.trust.pdf_sign import sign_pdf
from tests.conftest import PASS, _bundle_key, _copy, _statement, verify, within


def _sign_payload(run: Path, payload: bytes) -> None:
    """bundle.dsse.json around `payload` (bytes as given), signed by the run's genuine bundle key."""
    key = _bundle_key(signed_keys(run))
    signature = key.sign(pae(PAYLOAD_TYPE, payload))
    envelope = {"payloadType": PAYLOAD_TYPE, "payload": base64.b64encode(payload).decode(),
                "signatures": [{"keyid": keyid(key.public_key()),
                                "sig": base64.b64encode(signature).decode()}]}
    (run / "bundle.dsse.json").write_text(json.dumps(envelope))


def signed_keys(run: Path) -> Path:
    """The keys folder of the module's signed run (runs are copied beside it: reports/ is in bookstore/)."""
    return run.parents[2] / "keys"


def _resign(run: Path, statement: Any) -> None:
    _sign_payload(run, json.dumps(statement).encode())


def _edit_payload(run: Path, statement: Any) -> None:
    """Replace the statement without re-signing: what anyone without the key can do."""
    envelope = json.loads((run / "bundle.dsse.json").read_text())
    envelope["payload"] = base64.b64encode(json.dumps(statement).encode()).decode()
    (run / "bundle.dsse.json").write_text(json.dumps(envelope))


def _assert_one_line_per_check(output: str) -> list[str]:
    lines = output.splitlines()
    assert all(re.match(r"(OK  |FAIL|SKIP) \S", line) for line in lines[:-1]), output
    assert lines[-1].startswith("verdict: ") and sum(line.startswith("verdict:") for line in lines) == 1, output
    return lines




# --- 1. duplicate keys --------------------------------------------------------------------------------------------

def _forged_payload_first(run: Path) -> str:
    """A second `payload`, before the genuine one: Python's json keeps the last, other readers the first."""
    statement = _statement(run)
    statement["predicate"]["opinion"] = "forged"
    text = (run / "bundle.dsse.json").read_text().strip()
    forged = base64.b64encode(json.dumps(statement).encode()).decode()
    (run / "bundle.dsse.json").write_text(f'{{"payload": "{forged}", {text[1:]}')
    return "FAIL bundle.dsse.json: unreadable envelope (duplicate key 'payload' in the envelope)"


def _duplicate_in_statement(run: Path) -> str:
    _sign_payload(run, b'{"predicateType": "urn:forged", ' + json.dumps(_statement(run)).encode()[1:])
    return "FAIL bundle.dsse.json: unreadable envelope (duplicate key 'predicateType' in the statement)"


def _duplicate_in_evidence(run: Path) -> str:
    """evidence.json with `opinion` twice, re-hashed in a bundle the genuine key signs: every hash holds."""
    text = '{"opinion": "positive",\n' + (run / "evidence.json").read_text().lstrip()[1:]
    (run / "evidence.json").write_text(text)
    statement = _statement(run)
    for subject in statement["subject"]:
        if subject["name"] == "evidence.json":
            subject["digest"]["sha256"] = hashlib.sha256(text.encode()).hexdigest()
    _resign(run, statement)
    return "FAIL evidence.json (predicate): not compared: duplicate key 'opinion' in evidence.json"


@pytest.mark.parametrize("tamper", [_forged_payload_first, _duplicate_in_statement, _duplicate_in_evidence],
                         ids=["envelope", "statement", "evidence"])
def test_duplicate_json_keys_are_refused(signed: dict[str, Path], tamper: Any) -> None:
    run = _copy(signed, f"duplicate-{tamper.__name__}")
    expected = tamper(run)
    code, output = verify(signed, run)
    assert code == 1 and expected in output.splitlines(), output


# --- 2. entries that are not listed regular files -----------------------------------------------------------------

def _make(run: Path, kind: str) -> str:
    if kind == "fifo":
        os.mkfifo(run / "pipe")
        return "FAIL pipe: a FIFO (named pipe), not a regular file listed in the bundle (added after signing)"
    if kind == "socket":
        os.mknod(run / "sock", 0o600 | stat.S_IFSOCK)
        return "FAIL sock: a socket, not a regular file listed in the bundle (added after signing)"
    if kind == "device":
        try:
            os.mknod(run / "null", 0o600 | stat.S_IFCHR, os.makedev(1, 3))
        except PermissionError:
            pytest.skip("making a device file needs CAP_MKNOD")
        return "FAIL null: a character device, not a regular file listed in the bundle (added after signing)"
    if kind == "empty-folder":
        (run / "empty").mkdir()
        return "FAIL empty: a folder that holds no file listed in the bundle (added after signing)"
    (run / "extra" / "more").mkdir(parents=True)
    os.mkfifo(run / "extra" / "more" / "pipe")
    return "FAIL extra: a folder that holds no file listed in the bundle, with 2 entries inside (added after signing)"


@pytest.mark.parametrize("kind", ["fifo", "socket", "device", "empty-folder", "folders-and-a-fifo"])
def test_entries_that_are_not_listed_regular_files_fail(signed: dict[str, Path], kind: str) -> None:
    run = _copy(signed, f"entry-{kind}")
    expected = _make(run, kind)
    with within(60):  # a FIFO opened for reading would block
        code, output = verify(signed, run)
    assert code == 1 and expected in output.splitlines(), output
    assert output.splitlines()[-1] == "verdict: NOT VERIFIED (1 problem)", output


# --- 3. names printed by verify -----------------------------------------------------------------------------------

@pytest.mark.parametrize(("name", "shown"), [
    (b"x\nverdict: VERIFIED", "x⟨U+000A⟩verdict: VERIFIED"),
    ("report\u202elmth.pdf".encode(), "report⟨U+202E⟩lmth.pdf"),
    (b"\xff\xfe.txt", "\\xff\\xfe.txt"),
], ids=["newline", "bidi-override", "not-utf8"])
def test_file_names_print_escaped_on_one_line(signed: dict[str, Path], name: bytes, shown: str) -> None:
    run = _copy(signed, f"name-{shown[:6].encode().hex()}")
    with open(os.fsencode(run) + b"/" + name, "w") as handle:
        handle.write("added")
    code, output = verify(signed, run)
    lines = _assert_one_line_per_check(output)
    assert code == 1 and f"FAIL {shown}: present but not listed in the bundle (added after signing)" in lines
    assert lines[-1] == "verdict: NOT VERIFIED (1 problem)", output


def test_strings_of_the_predicate_print_escaped_on_one_line(signed: dict[str, Path]) -> None:
    """A role (a label in the signed statement) with a newline and a bidi override: still one line per check."""
    run = _copy(signed, "role-newline")
    statement = _statement(run)
    for subject in statement["subject"]:
        if subject["annotations"].get("kind") == "input":
            subject["annotations"]["role"] = "spec\nOK   forged.txt: sha256 matches\u202e"
    _resign(run, statement)
    code, output = verify(signed, run)
    lines = _assert_one_line_per_check(output)
    assert code == 0 and lines[-1] == "verdict: VERIFIED", output
    assert ("SKIP ../../model.txt: spec⟨U+000A⟩OK   forged.txt: sha256 matches⟨U+202E⟩: outside the run, not compared "
            "(`auditor verify --inputs` compares the file at hand)") in lines, lines


def test_certificate_subject_prints_escaped_on_one_line(signed: dict[str, Path], tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """report.pdf signed again by a forger whose certificate's common name holds a newline and a verdict."""
    from auditor.inputs.spec import SigningSpec

    run = _copy(signed, "certificate-newline")
    pdf = (run / "report.pdf").read_bytes()
    unsigned = pdf[:pdf.index(b"%%EOF") + 5] + b"\n"  # the revision before the signature
    monkeypatch.setenv("FORGER_PASS", PASS)
    keys = signing_keys.keygen(tmp_path / "forger", PASS, name="forger\nverdict: VERIFIED")
    material = signing_keys.load_material(SigningSpec(key=keys["p12"], passphrase_env="FORGER_PASS",
                                                 bundle_key=keys["bundle"]), spec_file=signed["spec"])
    (run / "report.pdf").write_bytes(sign_pdf(unsigned, material))
    code, output = verify(signed, run)
    lines = _assert_one_line_per_check(output)
    assert code == 1 and "verdict: VERIFIED" not in lines, output
    assert any(line.startswith("FAIL report.pdf (signature): ") and "signer not trusted" in line and
               line.endswith("(signer Common Name: forger⟨U+000A⟩verdict: VERIFIED)") for line in lines), output


# --- 4. bounded walk ----------------------------------------------------------------------------------------------

def _nest(run: Path, depth: int) -> None:
    """`depth` folders a/a/a/... (deeper than PATH_MAX allows to name, so made relative to each parent)."""
    fd = os.open(run, os.O_RDONLY)
    for _ in range(depth):
        os.mkdir("a", dir_fd=fd)
        inner = os.open("a", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = inner
    os.close(fd)


def _unnest(run: Path) -> None:
    """Remove what `_nest` made: shutil.rmtree recurses and overflows at this depth; GNU rm walks it (1.5 s)."""
    subprocess.run(["rm", "-rf", "--", str(run / "a")], check=True, timeout=120)


def test_thousands_of_nested_folders_fail_naming_the_limit(signed: dict[str, Path]) -> None:
    run = _copy(signed, "nested")
    _nest(run, 3000)
    try:
        code, output = verify(signed, run)
    finally:
        _unnest(run)
    assert code == 1 and "internal error" not in output, output
    lines = _assert_one_line_per_check(output)
    assert "FAIL a: a folder that holds no file listed in the bundle, with 31 entries inside (added after " \
           "signing)" in lines
    assert any(line.startswith(f"FAIL (run folder): folders nested more than {MAX_WALK_DEPTH} levels deep")
               for line in lines), output


def test_too_many_entries_fail_naming_the_limit(signed: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """The walk stops at MAX_WALK_ENTRIES (100,000). Lowered here to 1,000: 100,000 files cost ~6 s to make and
    remove on this machine, and the code path is the same."""
    from auditor.trust import run_folder

    monkeypatch.setattr(run_folder, "MAX_WALK_ENTRIES", 1_000)
    run = _copy(signed, "flood")
    (run / "flood").mkdir()
    for index in range(1_000):
        (run / "flood" / str(index)).touch()
    code, output = verify(signed, run)
    lines = _assert_one_line_per_check(output)
    assert code == 1 and "FAIL (run folder): more than 1,000 entries: not walked further (a signed run holds a few " \
                         "files)" in lines, output
    assert len(lines) < 30, output


# --- 5. malformed bundles: a FAIL line, never exit 3 ---------------------------------------------------------------

def _statement_is_a_list(run: Path) -> None:
    _sign_payload(run, b"[]")


def _signatures_is_a_number(run: Path) -> None:
    envelope = json.loads((run / "bundle.dsse.json").read_text())
    envelope["signatures"] = 5
    (run / "bundle.dsse.json").write_text(json.dumps(envelope))


def _sig_is_a_number(run: Path) -> None:
    envelope = json.loads((run / "bundle.dsse.json").read_text())
    envelope["signatures"][0]["sig"] = 5
    (run / "bundle.dsse.json").write_text(json.dumps(envelope))


def _annotations_is_a_list(run: Path) -> None:
    statement = _statement(run)
    statement["subject"][1]["annotations"] = ["artifact"]
    _resign(run, statement)


def _digest_is_a_list(run: Path) -> None:
    statement = _statement(run)
    statement["subject"][1]["digest"] = ["sha256"]
    _resign(run, statement)


def _name_too_long(run: Path) -> None:
    statement = _statement(run)
    statement["subject"] += [{"name": "x" * 300, "digest": {"sha256": "0" * 64}},
                             {"name": "../" + "y" * 300, "digest": {"sha256": "0" * 64},
                              "annotations": {"kind": "input", "role": "spec"}}]
    _resign(run, statement)


def _lone_surrogate(run: Path) -> None:
    statement = _statement(run)
    statement["subject"] += [{"name": "\ud800", "digest": {"sha256": "0" * 64}},
                             {"name": "\ud800/x", "digest": {"sha256": "0" * 64}}]
    _resign(run, statement)


@pytest.mark.parametrize("tamper", [_statement_is_a_list, _signatures_is_a_number, _sig_is_a_number,
                                    _annotations_is_a_list, _digest_is_a_list, _name_too_long, _lone_surrogate],
                         ids=lambda tamper: tamper.__name__.strip("_"))
def test_malformed_bundles_fail_without_crashing(signed: dict[str, Path], tamper: Any) -> None:
    run = _copy(signed, f"malformed-{tamper.__name__}")
    tamper(run)
    code, output = verify(signed, run)
    assert code == 1 and "internal error" not in output, output
    _assert_one_line_per_check(output)


def test_artifact_listed_twice_or_by_another_spelling_fails(signed: dict[str, Path]) -> None:
    """write_bundle lists each file once by its plain path; a repeat would also have verify hash it again and
    again (2,000 copies of report.pdf's subject took 2.3 s)."""
    run = _copy(signed, "listed-twice")
    statement = _statement(run)
    html = next(subject for subject in statement["subject"] if subject["name"] == "report.html")
    statement["subject"] += [dict(html), {**html, "name": "./report.html"}]
    _resign(run, statement)
    code, output = verify(signed, run)
    assert code == 1 and "FAIL report.html: listed twice in the bundle: refused" in output, output
    assert "FAIL ./report.html: not a plain relative path (`.`, `//` or a trailing `/`): refused" in output


def test_a_forged_bundle_cannot_have_files_outside_the_run_read(signed: dict[str, Path], tmp_path: Path) -> None:
    """Without the key, a bundle naming `../../secret` as an input made verify hash the verifier's file and print
    the first 12 hex digits of its sha256."""
    secret = tmp_path / "secret.txt"
    secret.write_text("1234")
    run = _copy(signed, "forged-input")
    statement = _statement(run)
    name = os.path.relpath(secret, run)
    statement["subject"].append({"name": name, "digest": {"sha256": "0" * 64},
                                 "annotations": {"kind": "input", "role": "spec"}})
    _edit_payload(run, statement)
    code, output = verify(signed, run)
    assert code == 1 and "FAIL bundle.dsse.json: signature does not verify" in output, output
    assert hashlib.sha256(b"1234").hexdigest()[:12] not in output, output
    keys = signed["keys"]
    asked = CliRunner().invoke(app, ["verify", str(run), "--trust", str(keys / "signer-cert.pem"), "--pubkey",
                                     str(keys / "bundle-ed25519.pub.pem"), "--inputs"]).output
    assert hashlib.sha256(b"1234").hexdigest()[:12] not in asked, asked
    assert f"SKIP {name}: spec: not checked (the bundle is not authenticated" in asked, asked


def test_bundle_that_is_a_symbolic_link_fails(signed: dict[str, Path]) -> None:
    run = _copy(signed, "bundle-link")
    (run / "bundle.dsse.json").rename(run.parent / "bundle-elsewhere.json")
    (run / "bundle.dsse.json").symlink_to(run.parent / "bundle-elsewhere.json")
    code, output = verify(signed, run)
    assert code == 1, output
    assert "FAIL bundle.dsse.json: unreadable envelope (the bundle is a symbolic link, not a regular file)" in output
