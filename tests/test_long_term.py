"""Ten years, for real (issue 53): validity periods enforced, CA-issued signers (an intermediate, with and without
revocation pointers, in a PKCS#12 file and on a SoftHSM2 token) verified offline, and the proof of a signature
carried past its TSA's expiry — under a faked clock (time-machine moves the whole process's clock, pyHanko's and the
test PKI's included)."""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from auditor.cli import app
from auditor.inputs.spec import SigningSpec
from auditor.trust.certificates import load_trust
from auditor.trust.keys import load_material
from auditor.trust.pdf_sign import sign_pdf
from auditor.trust.pdf_verify import check_pdf_signature
from tests import softhsm
from tests.conftest import PASS, _keygen, copy_bookstore

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
    from auditor.inputs.spec import Pkcs11Spec

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


# --- restamp: a run carried past its first TSA's expiry ---------------------------------------------------------------

@pytest.fixture(scope="module")
def first_tsa_run(pki: dict[str, Any], trust_services: Any, two_tsas: dict[str, str],
                  tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A bookstore run (light spec) signed by the CA-issued signer with revocation pointers (valid one year) and the
    first TSA (three years)."""

    import yaml

    from tests.conftest import BOOKSTORE

    root = tmp_path_factory.mktemp("first-tsa")
    folder = root / "audit"
    folder.mkdir()
    copy_bookstore(folder)
    keys = _keygen(root / "keys")
    spec = yaml.safe_load((BOOKSTORE / "audit.yaml").read_text())
    spec["evidence"] = [{"ranking_quality": {"cutoffs": [5]}}]
    spec["output"] = {"dir": "reports", "formats": ["html", "pdf"]}
    spec["register"] = False
    spec["signing"] = {"key": str(pki[True]["p12"]), "passphrase_env": "TEST_KEY_PASS",
                       "bundle_key": "../keys/bundle-ed25519.pem", "timestamp_url": two_tsas["first"],
                       "timestamp_roots": [str(pki["root"])]}
    (folder / "audit.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    result = runner.invoke(app, ["report", str(folder / "audit.yaml"), "--quiet", "--fail-on", "never"],
                           env={"TEST_KEY_PASS": PASS})
    assert result.exit_code == 0, result.output
    return {"run": Path(result.stdout.strip()).parent, "keys": keys, "root": pki["root"]}


def _verify_cli(run: Path, keys: Path, root: Path, *extra: str) -> tuple[int, str]:
    result = runner.invoke(app, ["verify", str(run), "--trust", str(root), "--pubkey",
                                 str(keys / "bundle-ed25519.pub.pem"), *extra])
    assert "Traceback" not in result.output, result.output
    return result.exit_code, result.output


@pytest.mark.slow
def test_one_restamp_carries_a_run_past_its_first_tsas_expiry(first_tsa_run: dict[str, Path], two_tsas: dict[str, str],
                                                              tmp_path: Path) -> None:
    """Two years on (the signer's certificate expired, the first TSA's not yet), `auditor restamp` with the second
    TSA; twelve years on, the restamped run VERIFIES and its untouched copy does not, saying why for the PDF and the
    bundle. `restamp --due` lists the copy, not the restamped run."""
    import shutil

    import time_machine

    restamped, untouched = tmp_path / "restamped", tmp_path / "untouched"
    shutil.copytree(first_tsa_run["run"], restamped)
    shutil.copytree(first_tsa_run["run"], untouched)
    keys, root = first_tsa_run["keys"], first_tsa_run["root"]
    before = (restamped / "report.pdf").read_bytes()
    with time_machine.travel(now() + 2 * YEAR, tick=True):
        result = runner.invoke(app, ["restamp", str(restamped), "--timestamp-url", two_tsas["second"], "--trust",
                                     str(root)])
        assert result.exit_code == 0, result.output
        assert "report.pdf: document timestamp" in result.output and "bundle.renewal-1.json" in result.output
        due = runner.invoke(app, ["restamp", "--due", "18m", str(tmp_path)])
        assert due.exit_code == 1, due.output
        lines = {line.split(":")[0].split()[-1]: line for line in due.output.splitlines() if ":" in line}
        assert lines[str(untouched)].startswith("DUE") and lines[str(restamped)].startswith("ok"), due.output
        code, output = _verify_cli(restamped, keys, root)
        assert code == 0, output
    after = (restamped / "report.pdf").read_bytes()
    assert after.startswith(before) and len(after) > len(before)  # appended, never rewritten
    with time_machine.travel(now() + 12 * YEAR, tick=True):
        code, output = _verify_cli(restamped, keys, root)
        assert code == 0, output
        assert "renewed 1 time" in output and "report.pdf: sha256 of the certified revision" in output
        code, output = _verify_cli(untouched, keys, root)
    assert code == 1, output
    failed = [line for line in output.splitlines() if line.startswith("FAIL")]
    assert any("report.pdf (signature)" in line and "the trusted time has expired" in line for line in failed), output
    assert any("bundle.dsse.json (trusted time)" in line and "the trusted time has expired" in line
               for line in failed), output


def _append_revision(pdf: bytes, change: str) -> bytes:
    """report.pdf with one incremental update appended: a document timestamp (what restamp adds), or something else."""
    from io import BytesIO

    from pyhanko.pdf_utils import generic
    from pyhanko.pdf_utils.incremental_writer import IncrementalPdfFileWriter

    writer = IncrementalPdfFileWriter(BytesIO(pdf))
    if change == "annotation":
        page = writer.root["/Pages"]["/Kids"][0].get_object()
        annots = generic.ArrayObject([writer.add_object(generic.DictionaryObject({
            generic.NameObject("/Type"): generic.NameObject("/Annot"),
            generic.NameObject("/Subtype"): generic.NameObject("/Text"),
            generic.NameObject("/Rect"): generic.ArrayObject([generic.FloatObject(v) for v in (10, 10, 60, 60)]),
            generic.NameObject("/Contents"): generic.TextStringObject("approved!")}))])
        page[generic.NameObject("/Annots")] = annots
        writer.update_container(page)
    elif change == "title":
        info = writer.trailer["/Info"].get_object()
        info[generic.NameObject("/Title")] = generic.TextStringObject("Another report")
        writer.update_container(info)
    out = BytesIO()
    writer.write(out)
    return out.getvalue()


@pytest.mark.slow
@pytest.mark.parametrize("change", ["annotation", "title"])
def test_a_revision_of_another_kind_appended_to_the_pdf_fails(first_tsa_run: dict[str, Path], change: str,
                                                             tmp_path: Path) -> None:
    """The bundle pins the certified revision, so an appended revision keeps the pinned digest; only validation
    data and document timestamps (above) may be appended: a visible annotation or a changed title is named."""
    import shutil

    run = tmp_path / "run"
    shutil.copytree(first_tsa_run["run"], run)
    (run / "report.pdf").write_bytes(_append_revision((run / "report.pdf").read_bytes(), change))
    code, output = _verify_cli(run, first_tsa_run["keys"], first_tsa_run["root"])
    assert code == 1, output
    assert "OK   report.pdf: sha256 of the certified revision" in output
    line = next(x for x in output.splitlines() if x.startswith("FAIL report.pdf (signature)"))
    assert "changed after signing: revision" in line, line


@pytest.mark.slow
def test_a_restamp_after_the_tsa_expired_is_refused_in_one_line(first_tsa_run: dict[str, Path],
                                                                two_tsas: dict[str, str], tmp_path: Path) -> None:
    """Four years on the first TSA's certificate has expired: nothing can be renewed any more, and restamp says so
    in one line, appending nothing."""
    import shutil

    import time_machine

    run = tmp_path / "late"
    shutil.copytree(first_tsa_run["run"], run)
    before = {p: p.read_bytes() for p in run.rglob("*") if p.is_file()}
    with time_machine.travel(now() + 4 * YEAR, tick=True):
        result = runner.invoke(app, ["restamp", str(run), "--timestamp-url", two_tsas["second"], "--trust",
                                     str(first_tsa_run["root"])])
    assert result.exit_code == 2, result.output
    assert "too late to renew" in result.output and "Traceback" not in result.output, result.output
    assert len(result.output.strip().splitlines()) == 1, result.output
    assert {p: p.read_bytes() for p in run.rglob("*") if p.is_file()} == before


@pytest.mark.slow
def test_a_run_signed_without_a_tsa_gets_its_first_trusted_time(signed: dict[str, Path], trust_services: Any,
                                                                tmp_path: Path) -> None:
    """The demo's self-signed identity, no TSA: a restamp gives the PDF a document timestamp and the bundle its
    bundle.tsr, so the run verifies after the signer's certificate expired (six years on)."""
    import shutil

    import time_machine

    run = tmp_path / "run"
    shutil.copytree(signed["run"], run)
    keys = signed["keys"]
    root = trust_services.write_root_pem(tmp_path / "tsa-root.pem")
    result = runner.invoke(app, ["restamp", str(run), "--timestamp-url", trust_services.url_tsa, "--trust", str(root),
                                 "--trust", str(keys / "signer-cert.pem")])
    assert result.exit_code == 0, result.output
    assert "bundle.tsr: the bundle's first trusted time" in result.output
    args = ["verify", str(run), "--trust", str(keys / "signer-cert.pem"), "--trust", str(root), "--pubkey",
            str(keys / "bundle-ed25519.pub.pem")]
    verified = runner.invoke(app, args)
    assert verified.exit_code == 0, verified.output
    assert "OK   report.pdf (long-term validation)" in verified.output
    assert "OK   bundle.dsse.json (trusted time)" in verified.output
    with time_machine.travel(now() + 6 * YEAR, tick=True):  # the certificate expired; the default TSA's too
        late = runner.invoke(app, args)
    assert late.exit_code == 1 and "the trusted time has expired" in late.output, late.output


# --- approvals checked the same way ----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def approvers(trust_services: Any, pki: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two CA-issued approvers valid one year: one from the intermediate with revocation pointers, one from the
    intermediate without."""
    folder = tmp_path_factory.mktemp("approvers")
    out = {}
    for pointers in (True, False):
        cert, key = trust_services.issue_signer(f"Jane Roe ({'with' if pointers else 'no'} revocation)",
                                                not_before=now() - 30 * 24 * HOUR, not_after=now() + YEAR,
                                                issuer=pki[pointers]["issuer"], pointers=pointers)
        out[str(pointers)] = trust_services.write_pkcs12(folder / f"approver-{pointers}.p12", cert, key, PASS,
                                                          issuer=pki[pointers]["issuer"])
    return out


def _approve(run: Path, keys: Path, root: Path, p12: Path, *extra: str) -> Any:
    result = runner.invoke(app, ["approve", str(run), "--as", "Jane Roe, Head of Model Risk", "--key", str(p12),
                                 "--passphrase-env", "TEST_KEY_PASS", "--pubkey", str(keys / "bundle-ed25519.pub.pem"),
                                 "--trust", str(root), "--register", "off", *extra], env={"TEST_KEY_PASS": PASS})
    assert result.exit_code == 0, result.output
    return result


def _approval_lines(run: Path, root: Path, *, at: dt.datetime | None = None, require: bool = False) -> str:
    from auditor.trust.verify import verify_run

    verdicts = verify_run(run, trust=[root], approver_trust=[root], at=at, require_revocation=require)
    return "\n".join(v.line() for v in verdicts if v.subject.startswith("approval"))


@pytest.mark.slow
def test_a_ca_issued_approver_with_trusted_time_outlives_its_certificate(first_tsa_run: dict[str, Path],
                                                                         approvers: dict[str, Path],
                                                                         two_tsas: dict[str, str],
                                                                         tmp_path: Path) -> None:
    """An approver whose certificate chains to the root through an intermediate with OCSP: the approval carries
    the chain, an OCSP response fetched when approving and the second TSA's token. It verifies against the root
    (--approver-trust takes a CA), and five years on — the approver's certificate long expired — it still does,
    dated by the TSA; an approval without a token is then refused, its time only claimed."""
    import shutil

    import time_machine

    timed, claimed = tmp_path / "timed", tmp_path / "claimed"
    for run in (timed, claimed):
        shutil.copytree(first_tsa_run["run"], run)
    keys, root = first_tsa_run["keys"], first_tsa_run["root"]
    _approve(timed, keys, root, approvers["True"], "--timestamp-url", two_tsas["second"])
    _approve(claimed, keys, root, approvers["True"])
    entry = json.loads((timed / "approval.dsse.json").read_text())["signatures"][0]
    assert entry["chain"] and entry["validation_data"]["ocsp"] and entry["timestamp"]
    lines = _approval_lines(timed, root)
    assert "vouched for by the TSA" in lines and "OK   approval (approver): certificate trusted" in lines, lines
    assert "chains to a trusted certificate" in lines and "approval (revocation)" not in lines
    with time_machine.travel(now() + 5 * YEAR, tick=True):
        later = _approval_lines(timed, root)
        untimed = _approval_lines(claimed, root)
        from auditor.trust.verify import verify_run

        inside = {v.subject: v for v in verify_run(timed, trust=[root], approver_trust=[root])}
    assert later.startswith("OK   approval:") and "vouched for by the TSA" in later, later
    # the decision signed inside report.pdf after its B-LTA revisions: still the one change the certification allows
    assert inside["report.pdf (approval signature)"].ok, inside
    today = {v.subject: v for v in verify_run(timed, trust=[root], approver_trust=[root])}
    assert today["report.pdf (signature)"].ok and "what follows only records the approval" not in \
        today["report.pdf (signature)"].message, today  # B-LTA: the approval among the later revisions
    assert untimed.startswith("FAIL approval:") and "no trusted timestamp proves the signature was made inside it" in \
        untimed, untimed


@pytest.mark.slow
def test_an_approver_without_revocation_sources_is_said_so(first_tsa_run: dict[str, Path],
                                                           approvers: dict[str, Path], tmp_path: Path) -> None:
    import shutil

    run = tmp_path / "run"
    shutil.copytree(first_tsa_run["run"], run)
    _approve(run, first_tsa_run["keys"], first_tsa_run["root"], approvers["False"])
    lines = _approval_lines(run, first_tsa_run["root"])
    assert "OK   approval (approver): certificate trusted" in lines, lines
    assert "SKIP approval (revocation): not checked for" in lines and "Jane Roe (no revocation)" in lines, lines
    strict = _approval_lines(run, first_tsa_run["root"], require=True)
    assert "FAIL approval (approver): certificate not trusted" in strict, strict


@pytest.mark.slow
def test_an_approval_claiming_a_time_ahead_is_refused(first_tsa_run: dict[str, Path], approvers: dict[str, Path],
                                                      tmp_path: Path) -> None:
    """Issue 55: an approval's date was the approver's clock, unchecked. One made with the clock three months ahead
    fails today, saying so; so does one dated before the run existed."""
    import shutil

    import time_machine

    ahead, before = tmp_path / "ahead", tmp_path / "before"
    for run in (ahead, before):
        shutil.copytree(first_tsa_run["run"], run)
    with time_machine.travel(now() + dt.timedelta(days=90), tick=True):
        _approve(ahead, first_tsa_run["keys"], first_tsa_run["root"], approvers["True"])
    lines = _approval_lines(ahead, first_tsa_run["root"])
    assert lines.startswith("FAIL approval:") and "claims a time ahead of now" in lines, lines
    with time_machine.travel(now() - dt.timedelta(days=3), tick=True):
        from auditor.trust import approval, identity

        run = approval.inspect_run(before)
        signer = identity.load_pkcs12_identity(approvers["False"], PASS)  # nothing to fetch three days ago
        approval.write_approval(run, signer, name="Jane Roe", decision="approved", reason=None)
    lines = _approval_lines(before, first_tsa_run["root"])
    assert lines.startswith("FAIL approval:") and "before what it signs existed" in lines, lines
