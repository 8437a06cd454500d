"""Decisions signed by the people who make them (issue 54, items 2, 3, 5, 6 and 7): responses and risk acceptances
signed with a person's own key, kept in the register and as files a rebuild restores; roles in a signed file that
must chain to its roots; four eyes that are real; one finding for one fact; what is due, and the register as CSV
and JSON.

The register holds synthetic reviews (Register.record on small evidence documents, no audit), except for the
approval tests, which need one signed run whose spec names the auditor and the approver."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from sqlalchemy import create_engine, text
from typer.testing import CliRunner

from auditor.cli import app
from auditor.evidence.document import EvidenceDocument
from auditor.register import export
from auditor.register.lifecycle import Event, review_events, state
from auditor.register.store import Register, register_url
from tests.conftest import BOOKSTORE, PASS, _keygen, copy_bookstore
from tests.helpers import document_of, rehash_trail

runner = CliRunner()
SYSTEM = "shop-ranker"
ENV = {"TEST_KEY_PASS": PASS}
METRIC = "disclosure.undeclared_main"
TODAY = dt.date.today()


def _cli(*args: str, code: int = 0) -> Any:
    result = runner.invoke(app, list(args), env=ENV)
    assert "Traceback" not in result.output, result.output
    assert result.exit_code == code, result.output
    return result


def _error(*args: str) -> str:
    """The one line a refused command prints (exit 2)."""
    result = _cli(*args, code=2)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


def _document(day: str, statuses: dict[str, str], *, identities: bool = True) -> EvidenceDocument:
    """A small evidence document: BASE-8 (pack starter) and P2B-4 (pack eu-p2b) judge one fact, P2B-8 another."""
    findings = []
    for rule, pack, metric in (("BASE-8", "starter", METRIC), ("P2B-4", "eu-p2b-art5", METRIC),
                               ("P2B-8", "eu-p2b-art5", "disclosure.undeclared_share")):
        findings.append({"rule": rule, "pack": pack, "status": statuses.get(rule, "PASS"), "title": f"rule {rule}",
                         "severity": "major", "metric": metric, "evidence": "disclosure_consistency",
                         "requirement": "FAIL if > 0", "citation": f"Art. {rule} = law", "value": 1.0})
        if identities:
            findings[-1]["finding"] = "BASE-8" if metric == METRIC else rule
    return document_of(findings=findings, evidence={"disclosure_consistency": {"metrics": {}}},
                       run={"evaluated_on": day, "started_at": f"{day}T09:00:00+00:00"}, audit={"title": "Shop"},
                       inputs={"model": {"version": "1"}}, opinion="negative", spec={"sha256": "0" * 64},
                       review={"system": SYSTEM})


# --- one fact, one finding (pure) ---------------------------------------------------------------------------------

def test_rules_of_two_packs_on_one_fact_are_one_finding() -> None:
    day = TODAY.isoformat()
    added = review_events(_document(day, {"BASE-8": "FAIL", "P2B-4": "FAIL"}), {}, run="q1", day=day, actor="me",
                          assignments=[{"rule": "P2B-4", "owner": "Team", "due": "2099-01-31", "note": "fix"}],
                          waivers=[{"rule": "BASE-8", "approver": "CRO", "expires": "2099-12-31",
                                    "justification": "one law only"}])
    assert list(added) == ["BASE-8"], "one finding, whichever rule the spec's findings: names"
    seen, events = added["BASE-8"]
    assert seen.rules == ("BASE-8", "P2B-4")
    assert [e.event for e in events] == ["opened", "responded"], "P2B-4 still fails: waiving BASE-8 accepts nothing"

    opened = Event("opened", day, "me", "q0")
    legacy = {"BASE-8": (seen, [opened]),
              "P2B-4": (seen, [opened, Event("responded", day, "x", owner="o", due="2099-01-01")])}
    again = review_events(_document(day, {"BASE-8": "FAIL", "P2B-4": "FAIL"}), legacy, run="q2", day=day, actor="me",
                          assignments=[], waivers=[])
    assert [e.event for e in again["BASE-8"][1]] == ["seen"]
    merged = again["P2B-4"][1]
    assert [e.event for e in merged] == ["merged"] and "one finding with BASE-8" in str(merged[0].reason)
    assert state(legacy["P2B-4"][1] + merged, TODAY).status == "merged", "merged, not remediated: it still fails"

    only_p2b = {"P2B-4": legacy["P2B-4"]}  # a register that knew the fact by P2B-4 keeps that key
    kept = review_events(_document(day, {"BASE-8": "FAIL", "P2B-4": "FAIL"}), only_p2b, run="q2", day=day,
                         actor="me", assignments=[], waivers=[])
    assert list(kept) == ["P2B-4"] and [e.event for e in kept["P2B-4"][1]] == ["seen"]


# --- people, roles and a register ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def people(trust_services: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Keys issued by the test PKI's CA (Jane Roe the owner and approver, the chief risk officer, Mallory with no
    role, the administrator who signs the roles) and a forger's self-made certificate carrying Jane's name."""
    folder = tmp_path_factory.mktemp("people")
    start, end = trust_services.now() - dt.timedelta(days=1), trust_services.now() + dt.timedelta(days=400)
    out = {"root": trust_services.write_root_pem(folder / "root.pem")}
    for label, name in (("jane", "Jane Roe"), ("cro", "Chief Risk Officer"), ("mallory", "Mallory"),
                        ("admin", "Roles Administrator")):
        cert, key = trust_services.issue_signer(name, not_before=start, not_after=end)
        out[label] = trust_services.write_pkcs12(folder / f"{label}.p12", cert, key, PASS)
        out[f"{label}_subject"] = cert.subject.rfc4514_string()  # type: ignore[assignment]
    from tests.trust_services import ORGANISATION

    forged = folder / "forger"
    _cli("keygen", "--out", str(forged), "--passphrase-env", "TEST_KEY_PASS", "--name", "Jane Roe",
         "--organisation", ORGANISATION)
    out["forged"] = forged / "signer.p12"
    roles = folder / "roles.yaml"
    roles.write_text(yaml.safe_dump({"roles": {
        "owner": [{"subject": str(out["jane_subject"])}],
        "approver": [{"subject": str(out["jane_subject"])}],
        "risk_acceptor": [{"subject": str(out["cro_subject"])}]}}))
    out["roles"] = folder / "roles.dsse.json"
    _cli("roles", "sign", str(roles), "--out", str(out["roles"]), "--key", str(out["admin"]), "--passphrase-env",
         "TEST_KEY_PASS")
    return out


@pytest.fixture
def register(tmp_path: Path) -> str:
    location = tmp_path / "reports" / "register.sqlite"
    location.parent.mkdir()
    store = Register(location)
    run = tmp_path / "reports" / "shop-q1"
    run.mkdir()
    document = _document(TODAY.isoformat(), {"BASE-8": "FAIL", "P2B-4": "FAIL", "P2B-8": "WARN"})
    (run / "evidence.json").write_text(json.dumps(document.to_json()))
    from auditor.core.files import sha256_file

    store.record(document, system=SYSTEM, run_dir=run, evidence_sha256=sha256_file(run / "evidence.json"),
                 bundle_sha256=None, actor="auditor report")
    store.close()
    return str(location)


def _as(person: Path, people: dict[str, Path], *extra: str) -> list[str]:
    return ["--key", str(person), "--passphrase-env", "TEST_KEY_PASS", "--roles", str(people["roles"]),
            "--roles-trust", str(people["root"]), *extra]


def _respond(register: str, person: list[str], due: str = "2099-03-31", *extra: str) -> Any:
    return ["findings", "respond", f"{SYSTEM}/BASE-8", "--owner", "Search team", "--due", due, "--response",
            "Declare sales volume", "--register", register, *person, *extra]


def test_a_decision_needs_the_role_under_a_certificate_the_roles_roots_vouch_for(people: dict[str, Path],
                                                                                 register: str) -> None:
    shown = _cli("roles", "show", str(people["roles"]), "--roles-trust", str(people["root"])).stdout
    assert shown.startswith(f"signed by {people['admin_subject']}") and "risk_acceptor  subject" in shown

    line = _error(*_respond(register, _as(people["mallory"], people)))
    assert "has no role `owner` in the roles file" in line, line
    line = _error(*_respond(register, _as(people["forged"], people)))  # Jane's name on a certificate anyone can make
    assert "has the role `owner`, but certificate not trusted" in line, line
    line = _error("findings", "accept", f"{SYSTEM}/BASE-8", "--until", "2099-01-01", "--reason", "r", "--register",
                  register, *_as(people["jane"], people))
    assert "has no role `risk_acceptor`" in line, line
    assert not (Path(register).parent / "decisions").exists(), "nothing written for a refused decision"

    done = _cli(*_respond(register, _as(people["jane"], people)))
    assert "note: signed by" in done.stderr
    _cli("findings", "accept", f"{SYSTEM}/BASE-8", "--until", "2099-01-01", "--reason", "Terms change in January",
         "--register", register, *_as(people["cro"], people))
    files = sorted((Path(register).parent / "decisions" / SYSTEM).glob("*.dsse.json"))
    assert [f.name.split("-")[1] for f in files] == ["responded", "accepted"]
    shown = _cli("findings", "show", f"{SYSTEM}/BASE-8", "--register", register).stdout
    assert f"responded  by {people['jane_subject']} (signed)" in shown
    assert f"accepted   by {people['cro_subject']} (signed)" in shown and f"approver {people['cro_subject']}" in shown
    check = _cli("register", "check", "--register", register).stdout
    assert "2 signed decisions verified" in check, check

    line = _error(*_respond(register, ["--as", "Jane Roe"]))
    assert "a decision is signed by the person who makes it" in line
    _cli("register", "settings", "--unsigned-decisions", "allowed", "--register", register)
    _cli(*_respond(register, ["--as", "Jane Roe"]))
    assert "by Jane Roe (unsigned)" in _cli("findings", "show", f"{SYSTEM}/BASE-8", "--register", register).stdout
    line = _error(*_respond(register, _as(people["jane"], people, "--as", "Someone Else")))
    assert "a signed decision's actor is your certificate's subject" in line


def test_a_roles_file_counts_only_as_signed_under_its_roots(people: dict[str, Path], tmp_path: Path,
                                                           register: str) -> None:
    edited = tmp_path / "roles.dsse.json"
    document = json.loads(people["roles"].read_text())
    document["payload"] = document["payload"][:-8] + "AAAAAAA="
    edited.write_text(json.dumps(document))
    assert "the roles file does not verify" in _error("roles", "show", str(edited), "--roles-trust",
                                                      str(people["root"]))
    stranger = _keygen(tmp_path / "stranger")
    line = _error("roles", "show", str(people["roles"]), "--roles-trust", str(stranger / "signer-cert.pem"))
    assert "the roles file's signer is not trusted" in line, line
    assert "--roles-trust" in _error(*_respond(register, ["--key", str(people["jane"]), "--passphrase-env",
                                                          "TEST_KEY_PASS", "--roles", str(people["roles"])]))


def test_past_dates_warn_and_strict_refuses(people: dict[str, Path], register: str) -> None:
    result = _cli(*_respond(register, _as(people["jane"], people), "2020-01-31"))
    assert "warning: the due date is already past (2020-01-31): recorded all the same" in result.stderr
    line = _error(*_respond(register, _as(people["jane"], people), "2020-01-31", "--strict"))
    assert "--due: the due date is already past (2020-01-31)" in line, line
    result = _cli("findings", "accept", f"{SYSTEM}/BASE-8", "--until", "2020-01-01", "--reason", "r", "--register",
                  register, *_as(people["cro"], people))
    assert "warning: the acceptance has lapsed already (2020-01-01)" in result.stderr


def test_what_is_due_by_owner_and_the_register_exported(people: dict[str, Path], register: str) -> None:
    nothing = _cli("findings", "due", "--register", register)
    assert nothing.stdout.startswith("nothing due within 14 days")
    soon = (TODAY + dt.timedelta(days=10)).isoformat()
    hostile = "=HYPERLINK(\"http://evil\")\u202e"
    _cli("findings", "respond", f"{SYSTEM}/BASE-8", "--owner", hostile, "--due", soon, "--response", "-1 + 2",
         "--register", register, *_as(people["jane"], people))
    due = _cli("findings", "due", "--within", "2w", "--register", register, code=1).stdout
    assert f"{SYSTEM}/BASE-8" in due and f"due in 10 days ({soon})" in due and "\u202e" not in due
    assert _cli("findings", "due", "--within", "9d", "--register", register).stdout.startswith("nothing due")
    data = json.loads(_cli("findings", "due", "--format", "json", "--register", register, code=1).stdout)
    assert [(d["id"], d["kind"], d["days"], d["owner"]) for d in data["due"]] == [(f"{SYSTEM}/BASE-8", "due", 10,
                                                                                    hostile)]
    line = _error("findings", "due", "--within", "soon", "--register", register)
    assert "--within: not a span" in line

    as_json = json.loads(_cli("findings", "list", "--format", "json", "--register", register).stdout)
    found = {f["id"]: f for f in as_json["findings"]}
    assert set(found) == {f"{SYSTEM}/BASE-8", f"{SYSTEM}/P2B-8"}, "BASE-8 and P2B-4 are one finding"
    base8 = found[f"{SYSTEM}/BASE-8"]
    assert base8["rules"] == ["BASE-8", "P2B-4"] and base8["citations"] == ["Art. BASE-8 = law", "Art. P2B-4 = law"]
    assert base8["owner"] == hostile and base8["trail"] == "intact"
    assert [(e["event"], e.get("signature")) for e in base8["events"]] == [("opened", None), ("responded", "signed")]
    as_csv = _cli("findings", "list", "--format", "csv", "--register", register).stdout
    header, *cells = list(csv.reader(io.StringIO(as_csv)))
    base8_cells = dict(zip(header, next(c for c in cells if c[0] == f"{SYSTEM}/BASE-8"), strict=True))
    assert base8_cells["owner"].startswith("'=HYPERLINK") and base8_cells["response"] == "'-1 + 2", \
        "no cell a spreadsheet would run"
    assert export.read_csv(as_csv) == as_json["findings"], "the CSV round-trips to the JSON"

    _sql(register, "UPDATE finding_events SET due = '2099-12-31' WHERE event = 'responded'")
    broken = _cli("findings", "list", "--format", "json", "--register", register)
    assert "BROKEN TRAIL" in broken.stderr
    assert all(f["trail"].startswith("broken: ") for f in json.loads(broken.stdout)["findings"])
    assert _cli("findings", "due", "--register", register).stdout.startswith("BROKEN TRAIL")


def _sql(location: str, *statements: str) -> None:
    engine = create_engine(register_url(location))
    with engine.begin() as connection:
        for statement in statements:
            connection.execute(text(statement))
    engine.dispose()


def test_a_rehashed_rewrite_of_a_signed_decision_is_still_found(people: dict[str, Path], register: str) -> None:
    """No pin, no anchor: a database administrator edits Jane's response and rehashes the whole trail. The trail
    is whole again, but the statement Jane signed no longer says what the row says."""
    _cli(*_respond(register, _as(people["jane"], people)))
    _sql(register, "UPDATE finding_events SET due = '2099-12-31' WHERE event = 'responded'")
    rehash_trail(register)
    result = _cli("register", "check", "--register", register, code=1)
    assert "differs from what its signer signed (due: signed '2099-03-31', the register '2099-12-31')" in \
        result.stdout, result.stdout


def test_a_rebuild_restores_signed_decisions_and_names_a_forged_file(people: dict[str, Path], register: str,
                                                                    tmp_path: Path) -> None:
    _cli(*_respond(register, _as(people["jane"], people)))
    _cli("findings", "accept", f"{SYSTEM}/BASE-8", "--until", "2099-01-01", "--reason", "Terms change", "--register",
         register, *_as(people["cro"], people))
    before = _cli("findings", "show", f"{SYSTEM}/BASE-8", "--register", register).stdout
    reports = Path(register).parent
    decisions = sorted((reports / "decisions" / SYSTEM).glob("*.dsse.json"))
    forged = decisions[0].with_name("20991231T000000.000000Z-responded-BASE-8-forged.dsse.json")
    document = json.loads(decisions[0].read_text())
    document["payload"] = document["payload"].replace("Q", "R", 1)
    forged.write_text(json.dumps(document))
    rebuilt = str(tmp_path / "rebuilt.sqlite")
    result = _cli("register", "rebuild", str(reports), "--register", rebuilt)
    assert "1 run(s) indexed" in result.stdout and "2 signed decision(s) and 0 approval(s) restored" in result.stdout
    assert f"left out: {SYSTEM}/{forged.name}:" in result.stderr, result.stderr
    after = _cli("findings", "show", f"{SYSTEM}/BASE-8", "--register", rebuilt).stdout
    assert after.replace("auditor register rebuild", "auditor report") == before
    assert "2 signed decisions verified" in _cli("register", "check", "--register", rebuilt).stdout


# --- four eyes ------------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def named_run(people: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A signed run whose spec names its auditor (the chief risk officer, say) and its approver (Jane Roe) by
    certificate subject."""
    base = tmp_path_factory.mktemp("named")
    folder = base / "bookstore"
    folder.mkdir()
    copy_bookstore(folder)
    keys = _keygen(base / "keys")
    spec = yaml.safe_load((BOOKSTORE / "audit.yaml").read_text())
    spec.pop("findings")
    spec["audit"].update(auditor_subject=str(people["cro_subject"]), approver_subject=str(people["jane_subject"]))
    spec.update(evidence=[{"ranking_quality": {"cutoffs": [10]}}], policies=["starter"],
                output={"dir": "reports", "formats": ["html"]},
                signing={"key": "../keys/signer.p12", "passphrase_env": "TEST_KEY_PASS",
                         "bundle_key": "../keys/bundle-ed25519.pem"})
    (folder / "audit.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    result = _cli("report", str(folder / "audit.yaml"), "--quiet", "--fail-on", "never", "--register", "off")
    return {"run": Path(result.stdout.strip()).parent, "keys": keys}


def _approve(run: Path, keys: Path, key: Path, *extra: str) -> list[str]:
    return ["approve", str(run), "--as", "Approver", "--key", str(key), "--passphrase-env", "TEST_KEY_PASS",
            "--pubkey", str(keys / "bundle-ed25519.pub.pem"), "--trust", str(keys / "signer-cert.pem"),
            "--register", "off", *extra]


def test_four_eyes_refuse_the_signer_the_auditor_someone_else_and_a_role_missing(
        people: dict[str, Path], named_run: dict[str, Path], tmp_path: Path) -> None:
    run, keys = named_run["run"], named_run["keys"]
    same_name = _keygen(tmp_path / "same-name")  # keygen's default name: the run signer's subject, a new key
    line = _error(*_approve(run, keys, same_name / "signer.p12"))
    assert "signed this run (with another key: the same certificate subject is the same person)" in line, line
    line = _error(*_approve(run, keys, people["cro"]))
    assert "as the audit's auditor (audit.auditor_subject); the auditor cannot approve" in line, line
    line = _error(*_approve(run, keys, people["mallory"]))
    assert f"the spec names {people['jane_subject']} as the approver (audit.approver_subject)" in line, line
    line = _error(*_approve(run, keys, people["forged"], "--roles", str(people["roles"]), "--roles-trust",
                            str(people["root"])))
    assert "has the role `approver`, but certificate not trusted" in line, line
    assert not (run / "approval.dsse.json").exists()

    _cli(*_approve(run, keys, people["jane"], "--roles", str(people["roles"]), "--roles-trust", str(people["root"])))
    verified = runner.invoke(app, ["verify", str(run), "--trust", str(keys / "signer-cert.pem"), "--pubkey",
                                   str(keys / "bundle-ed25519.pub.pem"), "--approver-trust", str(people["root"]),
                                   "--roles", str(people["roles"]), "--roles-trust", str(people["root"])])
    assert verified.exit_code == 0, verified.output
    assert f"OK   approval: approved by \"Approver\" (certificate {people['jane_subject']})" in verified.output


def test_an_approval_needs_the_approver_role(people: dict[str, Path], signed: dict[str, Path]) -> None:
    """A run whose spec names no approver: with a roles file, a trusted certificate without the approver role is
    refused all the same (the chief risk officer accepts risks; she does not sign off runs)."""
    from tests.conftest import _copy

    run = _copy(signed, "roles-approval")
    line = _error(*_approve(run, signed["keys"], people["cro"], "--roles", str(people["roles"]), "--roles-trust",
                            str(people["root"])))
    assert f"{people['cro_subject']} has no role `approver` in the roles file" in line, line
    assert not (run / "approval.dsse.json").exists()


# --- hostile input (issue 55) ----------------------------------------------------------------------------------------

def test_hostile_decisions_are_one_line_or_shown_escaped(people: dict[str, Path], register: str,
                                                         tmp_path: Path) -> None:
    """A response longer than a card shows, an empty owner, an owner with a line break and a bidi override, a span
    of three hundred years, a roles file that expands aliases a billion times, a decision file that is a FIFO."""
    line = _error("findings", "respond", f"{SYSTEM}/BASE-8", "--owner", "Team", "--due", "2099-01-01", "--response",
                  "x" * 2_001, "--register", register, *_as(people["jane"], people))
    assert "--response is 2,001 characters long (at most 2,000)" in line, line
    line = _error("findings", "respond", f"{SYSTEM}/BASE-8", "--owner", "  ", "--due", "2099-01-01", "--response",
                  "r", "--register", register, *_as(people["jane"], people))
    assert "--owner is empty" in line, line
    _cli("findings", "respond", f"{SYSTEM}/BASE-8", "--owner", "Team\nFAKE LINE \u202eeman", "--due", "2099-01-01",
         "--response", "r", "--register", register, *_as(people["jane"], people))
    shown = _cli("findings", "show", f"{SYSTEM}/BASE-8", "--register", register).stdout
    assert "\u202e" not in shown and "\nFAKE LINE" not in shown and "⟨U+202E⟩" in shown, shown
    assert "not a span" in _error("findings", "due", "--within", "100001y", "--register", register)

    bomb = tmp_path / "bomb.yaml"
    bomb.write_text("a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n" for p, c in zip("abcdefgh", "bcdefghi",
                                                                                            strict=True)) +
        "roles: {owner: [{subject: 'CN=x'}]}\n")
    line = _error("roles", "sign", str(bomb), "--out", str(tmp_path / "r.dsse.json"), "--key", str(people["admin"]),
                  "--passphrase-env", "TEST_KEY_PASS")
    assert str(bomb) in line and not (tmp_path / "r.dsse.json").exists(), line
    crowd = tmp_path / "crowd.yaml"
    crowd.write_text(yaml.safe_dump({"roles": {"owner": [{"subject": f"CN={i}"} for i in range(1_001)]}}))
    line = _error("roles", "sign", str(crowd), "--out", str(tmp_path / "c.dsse.json"), "--key", str(people["admin"]),
                  "--passphrase-env", "TEST_KEY_PASS")
    assert "at most 1,000" in line, line

    reports = Path(register).parent
    fifo = reports / "decisions" / SYSTEM / "20260101T000000.000000Z-responded-BASE-8-fifo.dsse.json"
    fifo.parent.mkdir(parents=True, exist_ok=True)
    import os

    os.mkfifo(fifo)
    from tests.conftest import within

    with within(30):
        done = _cli("register", "rebuild", str(reports), "--register", str(tmp_path / "rebuilt.sqlite"))
    assert f"left out: {SYSTEM}/{fifo.name}: " in done.stderr, done.stderr
