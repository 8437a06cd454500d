"""Hardening, third round (issue 55, items 1, 3 and 5): the register, `register rebuild` and the history site against
forged and careless folders, files that are not registers, what a PostgreSQL server refuses, and URLs with secrets.

Every case here failed before the fix it names: a forged folder indexed as an approved review, a bad date in one folder
that stopped every later audit (exit 3, no run folder), a link followed out of the reports folder, another
application's database adopted, a password printed."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from auditor.cli import app
from auditor.core.errors import InputError
from auditor.register.rebuild import Trust, read_recorded, rebuild
from auditor.register.store import Register
from tests.conftest import BOOKSTORE, PASS, _copy, copy_bookstore

runner = CliRunner()
SYSTEM = "catalogue-ranker"
SECRET = "hunter2-Secret"
DECLARED = ["genre_match", "price_in_range", "avg_review", "own_brand", "n_reviews", "publishing_year",
            "author_popularity"]


def _cli(*args: str, code: int | None = 0, env: dict[str, str] | None = None) -> Any:
    result = runner.invoke(app, list(args), env=env)
    assert "Traceback" not in result.output, result.output
    if code is not None:
        assert result.exit_code == code, result.output
    return result


@pytest.fixture(scope="module")
def bookstore(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bookstore's inputs and a light spec (two evidence items, HTML only) recorded in no register."""
    folder = tmp_path_factory.mktemp("bookstore")
    copy_bookstore(folder)
    spec = yaml.safe_load((BOOKSTORE / "audit.yaml").read_text())
    for key in ("signing", "findings"):
        spec.pop(key)
    spec["model"]["name"] = SYSTEM
    spec["evidence"] = [{"ranking_quality": {"cutoffs": [10]}}, {"disclosure_consistency": {"declared": DECLARED}}]
    spec["policies"] = ["starter"]
    spec["output"] = {"dir": "reports", "formats": ["html"]}
    (folder / "audit.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    return folder


@pytest.fixture(scope="module")
def one_run(bookstore: Path) -> Path:
    """One genuine, unsigned run folder."""
    result = _cli("report", str(bookstore / "audit.yaml"), "--register", "off", "--quiet", "--fail-on", "never")
    return Path(result.stdout.strip()).parent


def _report(spec: Path, register: str, *extra: str) -> Any:
    return runner.invoke(app, ["report", str(spec), "--register", register, "--quiet", "--fail-on", "never", *extra])


# --- register rebuild trusts only what verifies -------------------------------------------------------------------

def test_forged_folders_are_never_approved_reviews(signed: dict[str, Path], tmp_path: Path) -> None:
    """An unsigned run, a bundle of `{}`, and a self-signed "approval" over a made-up digest: indexed as not
    verified, no approval, and the history site gives none of them a verify command; with --refuse-unverified they
    are left out. The genuine signed run with the keys is verified."""
    reports = tmp_path / "reports"
    reports.mkdir()
    genuine = reports / "genuine"
    shutil.copytree(signed["run"], genuine)
    unsigned = reports / "unsigned"
    unsigned.mkdir()
    shutil.copy(signed["run"] / "evidence.json", unsigned / "evidence.json")
    empty_bundle = reports / "empty-bundle"
    shutil.copytree(signed["run"], empty_bundle)
    (empty_bundle / "bundle.dsse.json").write_text("{}")
    forged = reports / "forged-approval"
    shutil.copytree(signed["run"], forged)
    mallory = tmp_path / "mallory"
    _cli("keygen", "--out", str(mallory), "--passphrase-env", "TEST_KEY_PASS", "--name", "Mallory",
         env={"TEST_KEY_PASS": PASS})
    (forged / "approval.dsse.json").write_text(_forged_approval(mallory / "signer.p12"))
    keys = signed["keys"]
    trusted = ["--trust", str(keys / "signer-cert.pem"), "--pubkey", str(keys / "bundle-ed25519.pub.pem")]

    out = _cli("register", "rebuild", str(reports), *trusted, "--register", str(tmp_path / "a.sqlite"))
    assert "indexed as not verified: unsigned: unsigned" in out.stdout, out.stdout
    assert "indexed as not verified: empty-bundle: unverified:" in out.stdout
    assert "indexed as not verified: forged-approval: unverified: FAIL approval" in out.stdout, out.stdout
    assert "forged-approval/approval.dsse.json: not indexed" in out.stderr
    store = Register(tmp_path / "a.sqlite")
    assert store.approvals() == []
    states = {r["run_name"]: r["verified"] for r in store.runs()}
    assert states["genuine"] == "verified" and states["unsigned"] == "unsigned"
    assert states["empty-bundle"].startswith("unverified: ")
    store.close()
    _cli("history", "--out", str(tmp_path / "site"), "--register", str(tmp_path / "a.sqlite"))
    pages = "".join(p.read_text() for p in (tmp_path / "site").glob("*.html") if p.name != "index.html")
    assert pages.count('<pre class="verify">') == 1, "a verify command for the genuine run only"
    assert pages.count("not evidence of a review until") == 3, "the unsigned and the two forged folders are marked"

    refused = _cli("register", "rebuild", str(reports), *trusted, "--refuse-unverified", "--register",
                   str(tmp_path / "b.sqlite"))
    assert refused.stdout.startswith("2 run(s) indexed"), refused.stdout  # the genuine one and the unsigned one
    assert "left out: empty-bundle: unverified" in refused.stderr


def _forged_approval(key: Path) -> str:
    """A well-formed approval signed by Mallory over a digest no run has."""
    from auditor.trust.dsse import envelope, pae, statement_bytes
    from auditor.trust.identity import load_pkcs12_identity, signature_entry
    from auditor.trust.layout import APPROVAL_PREDICATE_TYPE, PAYLOAD_TYPE, STATEMENT_TYPE

    identity = load_pkcs12_identity(key, PASS)
    predicate = {"decision": "approved", "approver": "Board", "reason": None, "time": "2026-01-01T00:00:00Z",
                 "approver_certificate": {"subject": identity.subject, "sha256": identity.sha256},
                 "run": {"name": "x", "audit_title": "x", "opinion": "positive", "evaluated_on": "2026-01-01",
                         "signer_certificate_sha256": "0" * 64}, "tool": {"name": "auditor", "version": "0"}}
    payload = statement_bytes({"_type": STATEMENT_TYPE, "predicateType": APPROVAL_PREDICATE_TYPE,
                               "predicate": predicate,
                               "subject": [{"name": "bundle.dsse.json", "digest": {"sha256": "ab" * 32}}]})
    data = envelope(payload, [signature_entry(identity, pae(PAYLOAD_TYPE, payload))]).decode()
    identity.close()
    return data


def test_careless_folders_are_left_out_and_never_poison_later_audits(one_run: Path, bookstore: Path,
                                                                    tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    reports.mkdir()
    document = json.loads((one_run / "evidence.json").read_text())
    cases = {"bad-date": ("run", "evaluated_on", "2026-02-30"), "future": ("run", "evaluated_on", "9999-12-31"),
             "bad-start": ("run", "started_at", "yesterday"), "not-a-list": (None, "findings", {"a": 1}),
             "bad-due": (None, "assignments", [{"rule": "BASE-8", "owner": "x", "due": "soon"}])}
    for name, (block, key, value) in cases.items():
        folder = reports / name
        folder.mkdir()
        bad = json.loads(json.dumps(document))
        (bad[block] if block else bad)[key] = value
        (folder / "evidence.json").write_text(json.dumps(bad))
    linked = reports / "linked-evidence"
    linked.mkdir()
    (linked / "evidence.json").symlink_to(one_run / "evidence.json")  # a link out of the reports folder
    (reports / "linked-folder").symlink_to(one_run, target_is_directory=True)
    huge = reports / "huge"
    huge.mkdir()
    with open(huge / "evidence.json", "wb") as handle:  # sparse: 65 MiB on disk costs nothing
        handle.truncate(65 * 1024 * 1024)
    shutil.copytree(one_run, reports / "genuine")

    location = str(reports / "register.sqlite")
    done = rebuild(reports, location)
    assert [p.name for p in done.runs] == ["genuine"]
    left = "\n".join(done.left_out)
    for expected in ("bad-date: evidence.json: run.evaluated_on:", "future: evidence.json says it was evaluated on "
                     "9999-12-31, after today", "bad-start: evidence.json: run.started_at:",
                     "not-a-list: evidence.json: findings:", "bad-due: evidence.json: assignments.0.due:",
                     "linked-evidence: evidence.json is ", "huge: evidence.json is 65.0 MiB, more than the 64 MiB"):
        assert expected in left, left
    assert "linked-folder" not in left and len(done.runs) == 1, "a linked run folder is not followed"
    again = rebuild(Path(str(reports) + "/../reports"), location)  # the same folder spelled another way
    assert again.runs == [], "indexed once"

    from sqlalchemy import create_engine, text

    engine = create_engine(f"sqlite:///{location}")  # a row no audit wrote: a due day that does not exist
    with engine.begin() as connection:
        connection.execute(text("INSERT INTO finding_events (finding_id, event, on_day, at, actor, owner, due) "
                                "SELECT id, 'responded', first_seen, first_seen, 'x', 'x', '2026-02-30' FROM findings"))
    engine.dispose()
    result = _report(bookstore / "audit.yaml", location)
    assert result.exit_code == 2, result.output
    assert "the register holds a record this auditor cannot read" in result.stderr and "Traceback" not in \
        result.output
    run = Path(result.stdout.strip()).parent
    assert (run / "evidence.json").is_file() and (run / "report.html").is_file(), "the run folder is written"


# --- register files are ours or refused ---------------------------------------------------------------------------

def test_files_that_are_not_registers_are_refused_untouched(tmp_path: Path) -> None:
    foreign = tmp_path / "app.sqlite"
    with sqlite3.connect(foreign) as connection:
        connection.execute("CREATE TABLE customers (id INTEGER, name TEXT)")
    before = foreign.read_bytes()
    with pytest.raises(InputError, match=r"not an auditor register \(it holds customers\)"):
        Register(foreign)
    assert foreign.read_bytes() == before, "another application's database is left untouched"

    unrelated = tmp_path / "notes.txt"
    unrelated.write_text("my notes")
    link = tmp_path / "register.sqlite"
    link.symlink_to(unrelated)
    with pytest.raises(InputError, match="the register is a link"):
        Register(link)
    assert unrelated.read_text() == "my notes"
    dangling = tmp_path / "out" / "register.sqlite"
    dangling.parent.mkdir()
    dangling.symlink_to(tmp_path / "elsewhere.sqlite")
    with pytest.raises(InputError, match="the register is a link"):
        Register(dangling)
    assert not (tmp_path / "elsewhere.sqlite").exists(), "no database made where a link points"

    odd = tmp_path / "odd.sqlite"
    Register(odd).close()
    with sqlite3.connect(odd) as connection:
        connection.execute("UPDATE meta SET value = 'two' WHERE key = 'schema_version'")
    with pytest.raises(InputError, match=r"schema version is not a number \('two'\)"):
        Register(odd)
    with sqlite3.connect(odd) as connection:
        connection.execute("UPDATE meta SET value = '3' WHERE key = 'schema_version'")
        connection.execute("UPDATE meta SET value = 'something else' WHERE key = 'application'")
    with pytest.raises(InputError, match="not an auditor register"):
        Register(odd)


def test_what_postgresql_cannot_keep_is_one_line_and_the_run_is_written(bookstore: Path, postgres_url: str,
                                                                         tmp_path: Path) -> None:
    """A 250-character audit period and a NUL in the title: named before anything is written, one line, exit 2,
    the run folder written. A read-only server: "refused the write", not "damaged … move the file aside"."""
    spec = yaml.safe_load((bookstore / "audit.yaml").read_text())
    spec["audit"]["period"] = "Q" * 250
    spec["output"]["dir"] = str(tmp_path / "reports")
    (tmp_path / "long.yaml").write_text(yaml.safe_dump(spec))
    copy_bookstore(tmp_path, bookstore)
    result = _report(tmp_path / "long.yaml", postgres_url)
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert "the audit's period (spec `audit.period`) is 250 characters long; the register keeps at most 200" in \
        lines[-1], result.stderr
    assert (Path(result.stdout.strip()).parent / "evidence.json").is_file()
    from auditor.register import schema
    from auditor.register.store import fitted

    with pytest.raises(InputError, match="holds a NUL character"):
        fitted(schema.runs, {"title": "a\x00b"})

    import psycopg

    server, name = postgres_url.rsplit("/", 1)
    with psycopg.connect(f"{server}/postgres", autocommit=True) as connection:
        connection.execute(f'ALTER DATABASE "{name}" SET default_transaction_read_only = on')
    spec["audit"].pop("period")
    (tmp_path / "short.yaml").write_text(yaml.safe_dump(spec))
    result = _report(tmp_path / "short.yaml", postgres_url)
    assert result.exit_code == 2 and "the register refused the write" in result.stderr, result.output
    assert "damaged" not in result.stderr


# --- secrets never printed ----------------------------------------------------------------------------------------

def test_a_register_url_with_a_password_is_never_shown(postgres_url: str, tmp_path: Path, one_run: Path) -> None:
    """The password in each form a PostgreSQL URL carries it (the server trusts local connections, so each URL
    works): no output stream and no page of the history site holds it."""
    store = Register(postgres_url)
    store.record(json.loads((one_run / "evidence.json").read_text()), system=SYSTEM, run_dir=one_run,
                 evidence_sha256="0" * 64, bundle_sha256=None, actor="test")
    store.close()
    server, database = postgres_url.rsplit("/", 1)
    forms = [f"{server.replace('auditor@', f'auditor:{SECRET}@')}/{database}", f"{postgres_url}?password={SECRET}",
             f"{postgres_url}?sslpassword={SECRET}&application_name=x"]
    for url in forms:
        outputs = [_cli(*args, code=None) for args in (
            ("findings", "list", "--register", url), ("findings", "due", "--register", url),
            ("register", "check", "--register", url), ("findings", "show", "nope/x", "--register", url),
            ("history", "--out", str(tmp_path / "site"), "--register", url))]
        for result in outputs:
            assert SECRET not in result.output, result.output
        for page in (tmp_path / "site").rglob("*"):
            if page.is_file():
                assert SECRET.encode() not in page.read_bytes(), page
    unreachable = "postgresql://auditor@127.0.0.1:9/nowhere?password=" + SECRET
    result = _cli("findings", "list", "--register", unreachable, code=2)
    assert SECRET not in result.output and "password=***" in result.output, result.output


# --- a fuzz test: rebuild over generated hostile folders -----------------------------------------------------------

_VALUES = st.one_of(st.none(), st.booleans(), st.integers(-10**20, 10**20), st.floats(allow_nan=False),
                    st.text(max_size=30), st.lists(st.integers(), max_size=3),
                    st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
                    st.sampled_from(["2026-02-30", "9999-12-31", "\x00", "\u202e", "0" * 300, "-1", "NaN"]))
_PATHS = st.sampled_from([("run", "evaluated_on"), ("run", "started_at"), ("run",), ("audit", "title"), ("opinion",),
                          ("findings",), ("findings", 0), ("findings", 0, "status"), ("findings", 0, "rule"),
                          ("detections",), ("evidence",), ("assignments",), ("waivers",), ("inputs", "model"),
                          ("spec", "sha256"), ("tool", "version"), ("schema",), ("review", "system"),
                          ("findings", 0, "finding"), ("evidence", "ranking_quality", "status")])


@settings(max_examples=40, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(changes=st.lists(st.tuples(_PATHS, _VALUES), min_size=1, max_size=3))
def test_rebuild_survives_generated_hostile_folders(one_run: Path, tmp_path_factory: pytest.TempPathFactory,
                                                    changes: list[tuple[tuple[Any, ...], Any]]) -> None:
    """Whatever a folder's evidence.json holds, a rebuild indexes it or leaves it out with one line — never an
    exception — and the register stays usable: a genuine folder recorded after it and `register check` holds."""
    document = json.loads((one_run / "evidence.json").read_text())
    for path, value in changes:
        target: Any = document
        for step in path[:-1]:
            target = target[step] if (isinstance(target, dict) and step in target) or (isinstance(target, list) and \
                isinstance(step, int) and step < len(target)) else None
            if target is None:
                break
        if isinstance(target, dict) or (isinstance(target, list) and isinstance(path[-1], int) and
                                        path[-1] < len(target)):
            target[path[-1]] = value
    reports = tmp_path_factory.mktemp("fuzz")
    (reports / "hostile").mkdir()
    (reports / "hostile" / "evidence.json").write_text(json.dumps(document))
    location = str(reports / "register.sqlite")
    try:
        done = rebuild(reports, location)
    except InputError as exc:  # bad input to the command as a whole is allowed: one line, nothing half-done
        assert exc.one_line()
        return
    assert len(done.runs) + len(done.left_out) >= 1
    shutil.copytree(one_run, reports / "zz-genuine")
    rebuild(reports, location)
    store = Register(location)
    assert any(r["run_name"] == "zz-genuine" for r in store.runs())
    store.findings(today=dt.date.today())
    assert all(result.ok for result in store.check()), [r.breaks for r in store.check()]
    store.close()
    with contextlib.suppress(ValueError):
        read_recorded(reports / "hostile", dt.date.today())


def test_the_trust_options_are_verifys(signed: dict[str, Path], tmp_path: Path) -> None:
    """`rebuild --trust/--pubkey` verify as `verify` does: a run copied next to others verifies with its keys and
    not with another's."""
    reports = tmp_path / "reports"
    reports.mkdir()
    run = _copy(signed, "for-rebuild")
    shutil.copytree(run, reports / run.name)
    other = tmp_path / "other-keys"
    _cli("keygen", "--out", str(other), "--passphrase-env", "TEST_KEY_PASS", env={"TEST_KEY_PASS": PASS})
    wrong = rebuild(reports, str(tmp_path / "wrong.sqlite"),
                    trust=Trust(trust=[other / "signer-cert.pem"], pubkey=other / "bundle-ed25519.pub.pem"))
    assert wrong.unverified and "unverified" in wrong.unverified[0]
    keys = signed["keys"]
    right = rebuild(reports, str(tmp_path / "right.sqlite"),
                    trust=Trust(trust=[keys / "signer-cert.pem"], pubkey=keys / "bundle-ed25519.pub.pem"))
    assert right.unverified == [] and len(right.runs) == 1
    assert os.path.exists(tmp_path / "right.sqlite")


def test_a_register_of_another_scheme_is_refused_and_nothing_is_made(tmp_path: Path, monkeypatch: Any) -> None:
    """`--register nope://x` made an SQLite file at ./nope:/x."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputError, match=r"not nope://"):
        Register("nope://x?password=" + SECRET)
    result = _cli("findings", "list", "--register", "ftp://user:" + SECRET + "@host/x", code=2)
    assert "not ftp://" in result.stderr and SECRET not in result.output
    assert list(tmp_path.iterdir()) == []


def test_evidence_json_is_read_strictly_by_diff(one_run: Path, tmp_path: Path) -> None:
    """A number of 5,000 digits was an uncaught ValueError (exit 3); NaN and a key twice were accepted."""
    for name, text in (("digits", '{"schema": "auditor.evidence/v1", "seed": ' + "9" * 5_000 + "}"),
                       ("nan", '{"schema": "auditor.evidence/v1", "seed": NaN}'),
                       ("twice", '{"schema": "auditor.evidence/v1", "seed": 1, "seed": 2}')):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "evidence.json").write_text(text)
        result = _cli("diff", str(one_run), str(folder), code=2)
        assert "evidence.json" in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr


@pytest.mark.slow
def test_a_tsa_or_mlflow_url_with_a_secret_is_never_shown(signed: dict[str, Path], bookstore: Path, one_run: Path,
                                                          tmp_path: Path) -> None:
    """A TSA URL with a password in its user part and a token in its query, on every command that asks a TSA (the
    port is closed: each ends in its error line); a tracking URI with a password in the environment. No stream holds
    the secret."""
    tsa = f"http://user:{SECRET}@127.0.0.1:9/tsr?token={SECRET}"
    keys = signed["keys"]
    env = {"TEST_KEY_PASS": PASS, "AUDITOR_KEY_PASS": PASS}
    spec = yaml.safe_load((signed["spec"]).read_text())
    spec["signing"] = {"key": str(keys / "signer.p12"), "passphrase_env": "TEST_KEY_PASS"}
    spec["evidence"] = [{"ranking_quality": {"cutoffs": [10]}}]
    copy_bookstore(tmp_path, bookstore)
    (tmp_path / "audit.yaml").write_text(yaml.safe_dump(spec))
    run = _copy(signed, "secret-tsa")
    commands = [
        ("report", str(tmp_path / "audit.yaml"), "--timestamp-url", tsa, "--register", "off", "--quiet"),
        ("restamp", str(run), "--timestamp-url", tsa),
        ("register", "check", "--register", str(tmp_path / "r.sqlite"), "--anchor", "--timestamp-url", tsa),
        ("approve", str(run), "--as", "A", "--key", str(keys / "signer.p12"), "--passphrase-env", "TEST_KEY_PASS",
         "--pubkey", str(keys / "bundle-ed25519.pub.pem"), "--trust", str(keys / "signer-cert.pem"),
         "--timestamp-url", tsa),
    ]
    store = Register(tmp_path / "r.sqlite")  # a register with a trail to anchor
    store.record(json.loads((one_run / "evidence.json").read_text()), system=SYSTEM, run_dir=one_run,
                 evidence_sha256="0" * 64, bundle_sha256=None, actor="test")
    store.close()
    for args in commands:
        result = _cli(*args, code=None, env=env)
        assert SECRET not in result.output, (args[0], result.output)
        assert result.exit_code != 0, (args[0], result.output)
    tracking = f"http://user:{SECRET}@127.0.0.1:9/?token={SECRET}"
    quick = yaml.safe_load((bookstore / "audit.yaml").read_text())
    quick["evidence"] = spec["evidence"]  # MLflow is asked once the run is written: what it holds does not matter
    (bookstore / "quick.yaml").write_text(yaml.safe_dump(quick))
    result = _cli("report", str(bookstore / "quick.yaml"), "--register", "off", "--quiet", "--mlflow", code=None,
                  env={"MLFLOW_TRACKING_URI": tracking, "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0"})  # no 2 s of retries
    assert SECRET not in result.output, result.output
